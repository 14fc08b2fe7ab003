//! The host's own tools, `ludus_games` and `ludus_sessions`: their schemas
//! (made once, standard JSON Schema formats only) and their answers.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Answer, Ludus};
use crate::session::Caller;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GamesArgs {}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SessionsArgs {
    /// Only sessions of this game (plugin name, e.g. `hanoi`).
    game: Option<String>,
}

/// What `ludus_games` answers (its `outputSchema`).
#[derive(Serialize, JsonSchema)]
struct GamesOutput {
    games: Vec<crate::registry::GameStatus>,
    /// Every file of the plugins directory with its load result.
    files: Vec<crate::registry::FileStatus>,
}

/// What `ludus_sessions` answers (its `outputSchema`).
#[derive(Serialize, JsonSchema)]
struct SessionsOutput {
    /// Who this server takes you for: the caller your games belong to.
    you: You,
    count: usize,
    /// Your sessions only: the ones you created or joined.
    sessions: Vec<crate::session::SessionInfo>,
}

#[derive(Serialize, JsonSchema)]
struct You {
    /// Your caller name, as games see it.
    caller: String,
    /// How the server knows you, and how long your games stay yours.
    identity: String,
}

impl You {
    fn of(caller: &Caller) -> You {
        let identity = match caller {
            Caller::Token(_) => "a bearer token: your games stay yours across reconnects and on stateless requests",
            Caller::Stdio => "the client of this stdio server: your games stay yours when the server is started again",
            Caller::Connection(_) => {
                "this connection (its MCP session): a reconnect makes you a new caller, without these games; an operator \
                 who issues bearer tokens (`ludus token NAME`) lets a client keep its games across reconnects"
            }
            Caller::Stateless => crate::session::STATELESS_REFUSAL,
        };
        You { caller: caller.name().to_string(), identity: identity.to_string() }
    }
}

/// The host's own tools, built once (their schemas come from schemars).
pub(super) fn host_tools() -> &'static [Tool] {
    static TOOLS: std::sync::OnceLock<Vec<Tool>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(build_host_tools)
}

fn build_host_tools() -> Vec<Tool> {
    let ro = ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false);
    let tools = vec![
        Tool::new(
            "ludus_games",
            "List the loaded games: name, version, source file, status, tools, live sessions and the last load \
             error; plus every file in the plugins directory with its load result.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<GamesArgs>()
        .with_output_schema::<GamesOutput>()
        .with_title("Loaded games")
        .annotate(ro.clone()),
        Tool::new(
            "ludus_sessions",
            "List your live game sessions (the ones you created or joined): id, game, version, players and seats, the \
             join code of a game with a seat open, idle time, calls made, calls waiting, whether the game is over (then \
             also its seed and secret, which replay it), and why a session ended; and who the server takes you for.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<SessionsArgs>()
        .with_output_schema::<SessionsOutput>()
        .with_title("Live game sessions")
        .annotate(ro),
    ];
    tools.into_iter().map(portable).collect()
}

/// The tool of a server given a run: its players' next game.
pub(super) const NEXT_GAME: &str = "ludus_next_game";

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NextGameArgs {}

/// `ludus_next_game`, listed only by a server given a run.
pub(super) fn run_tool() -> &'static Tool {
    static TOOL: std::sync::OnceLock<Tool> = std::sync::OnceLock::new();
    TOOL.get_or_init(|| {
        let tool = Tool::new(
            NEXT_GAME,
            "Your next game of this server's run (the matches its operator set up): which game, its id, its match, pair \
             and number, and, when you take the other seat, the tool and join code that take it. The game is started \
             when its first player asks. Call it again once a game is over, until it says `done`.",
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<NextGameArgs>()
        .with_output_schema::<crate::arena::NextGame>()
        .with_title("Next game of the run")
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false));
        portable(tool)
    })
}

/// JSON Schema's own formats (2020-12, "Vocabularies for Semantic Content").
const JSON_SCHEMA_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The host tools' schemas as every client takes them. schemars marks
/// integers with formats of its own (`uint`, `uint32`, `uint64`, …) that
/// validators reject as unknown; each such field's range (`minimum: 0`) says
/// the same, so the format goes. It writes an optional field as a type array
/// (`["string", "null"]`), which clients that map schemas onto a one-type
/// dialect reject (the MCP Inspector warns once per field): each becomes
/// `anyOf` branches of one type each, with the keywords of that type.
fn portable(mut tool: Tool) -> Tool {
    fn clean(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.get("format").and_then(Value::as_str).is_some_and(|f| !JSON_SCHEMA_FORMATS.contains(&f)) {
                    map.remove("format");
                }
                split_type_array(map);
                map.values_mut().for_each(clean);
            }
            Value::Array(items) => items.iter_mut().for_each(clean),
            _ => {}
        }
    }
    fn cleaned(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
        let mut value = Value::Object((**schema).clone());
        clean(&mut value);
        match value {
            Value::Object(map) => Arc::new(map),
            _ => schema.clone(),
        }
    }
    tool.input_schema = cleaned(&tool.input_schema);
    tool.output_schema = tool.output_schema.as_ref().map(cleaned);
    tool
}

/// `"type": [A, B]` → `"anyOf": [{"type": A, …}, {"type": B, …}]`, each
/// branch with the keywords that apply to its type (a string's pattern, a
/// number's bounds); an `enum` goes to the branches whose type its values have.
fn split_type_array(map: &mut JsonObject) {
    let Some(Value::Array(types)) = map.get("type").cloned() else { return };
    map.remove("type");
    let keywords_of = |t: &str| -> &'static [&'static str] {
        match t {
            "integer" | "number" => &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
            "string" => &["pattern", "minLength", "maxLength", "format"],
            "array" => &["items", "prefixItems", "minItems", "maxItems", "uniqueItems"],
            "object" => &["properties", "required", "additionalProperties", "patternProperties"],
            _ => &[],
        }
    };
    let fits = |t: &str, v: &Value| match t {
        "null" => v.is_null(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    };
    let enumerated = map.remove("enum");
    let mut moved = Vec::new();
    let branches: Vec<Value> = types
        .iter()
        .filter_map(Value::as_str)
        .map(|t| {
            let mut branch = JsonObject::new();
            branch.insert("type".into(), Value::String(t.into()));
            for k in keywords_of(t) {
                if let Some(v) = map.get(*k) {
                    branch.insert((*k).into(), v.clone());
                    moved.push(*k);
                }
            }
            if let Some(Value::Array(values)) = &enumerated {
                branch.insert("enum".into(), Value::Array(values.iter().filter(|v| fits(t, v)).cloned().collect()));
            }
            Value::Object(branch)
        })
        .collect();
    for k in moved {
        map.remove(k);
    }
    map.insert("anyOf".into(), Value::Array(branches));
}

impl Ludus {
    /// `ludus_next_game`: the caller's next game of the run.
    pub(super) async fn next_game(&self, run: &crate::arena::Run, args: &JsonObject, caller: &Caller) -> Answer {
        if let Err(e) = serde_json::from_value::<NextGameArgs>(Value::Object(args.clone())) {
            return Answer::error(format!("invalid arguments for `{NEXT_GAME}`: {e}"));
        }
        if *caller == Caller::Stateless {
            return Answer::error(crate::session::STATELESS_REFUSAL.to_string());
        }
        match run.next_for(&self.registry, caller).await {
            Ok(next) => Answer::json(serde_json::to_value(next).unwrap_or_default()),
            Err(e) => Answer::error(e.to_string()),
        }
    }

    pub(super) fn host_call(&self, name: &str, args: &JsonObject, caller: &Caller) -> Option<Answer> {
        let bad = |e: serde_json::Error| Answer::error(format!("invalid arguments for `{name}`: {e}"));
        match name {
            "ludus_games" => Some(match serde_json::from_value::<GamesArgs>(Value::Object(args.clone())) {
                Ok(_) => {
                    let (games, files) = self.registry.status();
                    Answer::json(serde_json::to_value(GamesOutput { games, files }).unwrap_or_default())
                }
                Err(e) => bad(e),
            }),
            "ludus_sessions" => Some(match serde_json::from_value::<SessionsArgs>(Value::Object(args.clone())) {
                Ok(a) => {
                    let sessions: Vec<_> = self
                        .registry
                        .sessions
                        .list_for(caller)
                        .into_iter()
                        .filter(|s| a.game.as_ref().is_none_or(|g| &s.plugin == g))
                        .collect();
                    let out = SessionsOutput { you: You::of(caller), count: sessions.len(), sessions };
                    Answer::json(serde_json::to_value(out).unwrap_or_default())
                }
                Err(e) => bad(e),
            }),
            _ => None,
        }
    }
}
