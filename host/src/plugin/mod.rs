//! Loading one plugin version: compile, link against the host's grants, ask
//! it to describe itself, and derive every tool (name, schemas, hints) from
//! its exports. All of this happens off the request path; a plugin that fails
//! any step is refused with a message that says which step and why.

pub mod docs;
mod error;
mod grants;
mod prompts;
pub mod schema;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, Val};

use crate::capability::channels::ChannelGrant;
use crate::capability::{self, ChannelsCtx, GuestOutput, HostCtx, HostState, Output};
use crate::config::{AfterRefusals, Config, IllegalMovePolicy, PluginLimits};
use crate::runtime::bindings::LinkedPre;
use crate::runtime::bindings::ludus::plugin::types::{PluginInfo, SessionRole, ToolHint};
use crate::runtime::{Runtime, ToolSpeed};
use docs::Docs;
pub use error::LoadError;
use prompts::read_prompts;
pub use prompts::{PromptArgument, PromptDef, PromptExports};
use schema::{Field, Shape, params_schema};

const META: &str = "ludus:plugin/meta@0.1.7";
const ACCESS: &str = "ludus:plugin/access@0.1.7";
const EVENTS: &str = "ludus:plugin/events@0.1.7";
const DURABLE: &str = "ludus:plugin/durable@0.1.7";
const PROMPTS: &str = "ludus:plugin/prompts@0.1.7";
const RESOURCES: &str = "ludus:plugin/resources@0.1.7";
const MOVES: &str = "ludus:plugin/moves@0.1.7";
/// Imports of `ludus:plugin/client`, any 0.1.x version from 0.1.4.
const CLIENT_PREFIX: &str = "ludus:plugin/client@";

/// Where a plugin version came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Builtin,
    File(std::path::PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Builtin => write!(f, "built-in"),
            Source::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// How a tool finds its instance.
#[derive(Clone, Debug, PartialEq)]
pub enum Role {
    Creates,
    /// Index into `params` of the parameter holding the session id.
    Uses(usize),
    Shared,
}

/// Who may call a tool that uses a session, or read a per-session resource
/// (`ludus:plugin/access`; the host checks it for every plugin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Audience {
    /// The session's players: its creator and the callers that joined it.
    #[default]
    Players,
    /// Anyone who names the session (a view that hides nothing).
    Spectators,
    /// Takes a seat, given the session's join code.
    Joins,
}

/// The argument a `joins` tool takes besides its own: the join code the
/// session's creator hands out. The host checks it and does not pass it on.
pub const JOIN_CODE: &str = "join_code";

/// A creating tool's parameter that seeds the new game (`host.seed`,
/// `seeds.visible`), when it has one.
pub const SEED: &str = "seed";

/// The argument a creating tool with a `seed` takes besides its own: a
/// finished game's published secret, to replay it. The host takes it out.
pub const SECRET: &str = "secret";

/// The parameter of a decision tool that names the decision a call answers.
pub const DECISION: &str = "decision";

/// The argument a move (a decision tool) takes besides its own, unless it
/// has its own of that name: why the player made it. The host keeps it
/// with the move in the game's log and record, and does not pass it on.
pub const REASONING: &str = "reasoning";

/// The longest `reasoning` the host keeps with a move (characters).
pub const MAX_REASONING: usize = 16 * 1024;

/// A move's optional `usage` argument, the host's: what the move cost the
/// player's model (tokens, cost), kept in the game's log.
pub const USAGE: &str = "usage";

/// One tool, derived from one exported function.
pub struct ToolDef {
    /// MCP name, `<prefix>_<function>`.
    pub name: String,
    /// The WIT function name.
    pub func: String,
    pub export: ComponentExportIndex,
    pub params: Vec<Field>,
    /// The function's result type (none for functions without one).
    pub result: Option<Shape>,
    pub role: Role,
    pub audience: Audience,
    pub read_only: bool,
    /// The parameter that carries the number of the decision a call
    /// answers (`ludus:plugin/decisions`): named `decision`, an integer.
    pub decision: Option<usize>,
    /// The host takes a `reasoning` argument for it (a move whose game has
    /// no parameter of that name): `REASONING`.
    pub host_reasoning: bool,
    /// The tool takes the host's `usage` (a move whose game has no
    /// parameter of that name): `USAGE`.
    pub host_usage: bool,
    pub default_wait: Duration,
    pub max_wait: Duration,
    /// How the tool presents itself to clients.
    pub listing: Listing,
    /// How its calls have run, for where the next one runs (`run_guest`).
    pub pace: ToolSpeed,
}

/// How a tool presents itself, in no protocol's terms (the `mcp` layer
/// builds MCP's tool definitions from it, with an output schema from the
/// tool's result type).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Listing {
    pub title: Option<String>,
    pub description: String,
    /// JSON Schema of the arguments; a `joins` tool's has the host's `join_code`.
    pub input_schema: Arc<JsonObject>,
    pub hints: Hints,
    /// The UI resource (MCP Apps) its results can be shown in.
    pub ui_resource: Option<String>,
}

/// What a tool declares about its effects (all false when it declares nothing).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// A JSON object (a schema, arguments).
pub type JsonObject = serde_json::Map<String, Value>;

impl ToolDef {
    /// Checks and converts JSON arguments to component values, in parameter order.
    pub fn convert_args(&self, args: &serde_json::Map<String, Value>) -> Result<Vec<wasmtime::component::Val>, String> {
        schema::fields_to_vals(&self.params, args, "")
            .map(|vals| vals.into_iter().map(|(_, v)| v).collect())
            .map_err(|e| format!("{e}. `{}` takes: {}", self.name, self.describe_params()))
    }

    /// One phrase per parameter, for argument errors.
    pub fn describe_params(&self) -> String {
        let parts: Vec<String> =
            self.params.iter().map(|f| format!("`{}`{} ({})", f.json, if f.required() { "" } else { " optional" }, f.expected())).collect();
        if parts.is_empty() { "no arguments".into() } else { parts.join(", ") }
    }

    /// A creating tool's `seed` argument seeds the new session's randomness.
    pub fn seed_argument(&self, params: &[Val]) -> Option<u64> {
        if self.role != Role::Creates {
            return None;
        }
        let i = self.params.iter().position(|f| f.json == SEED)?;
        unsigned(&params[i])
    }

    /// The decision number a call of a decision tool names, if it names one.
    pub fn decision_argument(&self, params: &[Val]) -> Option<u64> {
        unsigned(&params[self.decision?])
    }
}

/// An unsigned integer argument (or an option of one), widened.
fn unsigned(v: &Val) -> Option<u64> {
    match v {
        Val::Option(Some(v)) => unsigned(v),
        Val::U64(n) => Some(*n),
        Val::U32(n) => Some(u64::from(*n)),
        Val::U16(n) => Some(u64::from(*n)),
        Val::U8(n) => Some(u64::from(*n)),
        Val::S64(n) => u64::try_from(*n).ok(),
        Val::S32(n) => u64::try_from(*n).ok(),
        _ => None,
    }
}

pub struct ResourceDef {
    pub audience: Audience,
    pub uri: String,
    pub name: String,
    pub description: String,
    pub mime_type: String,
}

/// Marks a per-session resource URI template.
const SESSION_SLOT: &str = "{session}";

impl ResourceDef {
    /// A URI template: per session (`{session}`) or with named parts of the
    /// plugin's own (`test://item/{id}`), listed as a template either way.
    pub fn is_template(&self) -> bool {
        self.uri.contains('{')
    }

    /// A concrete URI of this template when it has no `{session}`: read in
    /// the plugin's shared instance. Each part is non-empty and has no `/`.
    pub fn matches_own_template(&self, uri: &str) -> bool {
        if !self.is_template() || self.uri.contains(SESSION_SLOT) {
            return false;
        }
        let mut rest = uri;
        let mut pieces = self.uri.split('{');
        let Some(head) = pieces.next() else { return false };
        let Some(after) = rest.strip_prefix(head) else { return false };
        rest = after;
        for piece in pieces {
            let Some((_, literal)) = piece.split_once('}') else { return false };
            // The part runs to the next literal (or the end when there is none).
            let end = if literal.is_empty() { rest.len() } else { rest.find(literal).unwrap_or(usize::MAX) };
            if end == 0 || end > rest.len() || rest[..end].contains('/') {
                return false;
            }
            rest = &rest[end + literal.len()..];
        }
        rest.is_empty()
    }

    /// The session id a concrete URI names through this template, if it matches.
    pub fn session_in<'a>(&self, uri: &'a str) -> Option<&'a str> {
        let (prefix, suffix) = self.uri.split_once(SESSION_SLOT)?;
        let id = uri.strip_prefix(prefix)?.strip_suffix(suffix)?;
        (!id.is_empty() && !id.contains('/')).then_some(id)
    }
}

/// A loaded plugin version. Sessions hold an `Arc` to the version they started
/// on, so a reload never changes the code under a running game.
pub struct Plugin {
    pub name: String,
    pub title: String,
    pub version: String,
    pub description: String,
    pub source: Source,
    pub sha256: String,
    pub pre: InstancePre<HostState>,
    pub tools: Vec<ToolDef>,
    pub resources: Vec<ResourceDef>,
    pub on_timer: Option<ComponentExportIndex>,
    pub on_message: Option<ComponentExportIndex>,
    pub on_closed: Option<ComponentExportIndex>,
    /// The channel endpoints the operator granted, with their limits.
    pub channels: Arc<ChannelGrant>,
    /// What it was granted and why, a line each (the load line, `ludus inspect`).
    pub granted: Vec<String>,
    pub read_resource: ComponentExportIndex,
    /// `resources.read` (0.1.4): resources as text or bytes; read here
    /// rather than through `read_resource` when exported.
    pub read_body: Option<ComponentExportIndex>,
    pub prompts: Vec<PromptDef>,
    pub prompt_exports: Option<PromptExports>,
    /// The game hands over its state and is rebuilt from it
    /// (`ludus:plugin/durable`): its sessions survive a restart.
    pub durable: Option<Durable>,
    /// `moves.legal` (0.1.7): the caller's legal moves, for the
    /// illegal-move policy `then = "random"`.
    pub legal_moves: Option<ComponentExportIndex>,
    pub limits: PluginLimits,
    pub imports: Vec<String>,
    /// It imports `ludus:plugin/client`: its calls may wait for their client.
    pub asks_client: bool,
    pub loaded_at: SystemTime,
    pub runtime: Arc<Runtime>,
    /// Whether each instance maps its data segments copy-on-write rather
    /// than copying them (`runtime::MAPPED_DATA_BYTES`).
    pub maps_data: bool,
    /// How starting a session has run; and the other calls (timer and
    /// channel events, resource reads).
    pub start_pace: ToolSpeed,
    pub event_pace: ToolSpeed,
}

impl Plugin {
    /// Loads a component. Errors are complete sentences for the operator.
    pub fn load(runtime: &Arc<Runtime>, config: &Config, bytes: &[u8], source: Source) -> Result<Plugin, LoadError> {
        let component = runtime.compile(bytes).map_err(|e| LoadError::NotAComponent(format!("{e:#}")))?;
        Plugin::of_component(runtime, config, bytes, component, source)
    }

    /// A bundled game, with what `build.rs` compiled of it (`Runtime::compile_bundled`).
    pub fn load_bundled(runtime: &Arc<Runtime>, config: &Config, bytes: &[u8], precompiled: &[u8]) -> Result<Plugin, LoadError> {
        let component = runtime.compile_bundled(bytes, precompiled).map_err(|e| LoadError::NotAComponent(format!("{e:#}")))?;
        Plugin::of_component(runtime, config, bytes, component, Source::Builtin)
    }

    /// The plugin `component` (compiled from `bytes`) is.
    fn of_component(
        runtime: &Arc<Runtime>,
        config: &Config,
        bytes: &[u8],
        component: Component,
        source: Source,
    ) -> Result<Plugin, LoadError> {
        let imports = imports_of(&component);
        let linker = capability::linker(component.engine()).map_err(|e| LoadError::Host(format!("{e:#}")))?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            let ungranted: Vec<&str> =
                imports.iter().map(String::as_str).filter(|i| !i.starts_with("wasi:") && !i.starts_with("ludus:plugin/")).collect();
            let what = if ungranted.is_empty() { "an interface".to_string() } else { format!("`{}`", ungranted.join("`, `")) };
            LoadError::Ungranted { what, details: format!("{e:#}") }
        })?;
        let Described { info, grants, prompts } = describe(&pre)?;
        validate_plugin_name(&info.name).map_err(LoadError::Contract)?;
        let docs = match ludus_pack::package_docs(bytes) {
            Some(json) => Docs::parse(json).map_err(LoadError::Contract)?,
            None => {
                tracing::warn!(plugin = info.name, "no package-docs section: tools get generic descriptions (package with ludus-pack)");
                Docs::default()
            }
        };
        let prefix = config.plugins.get(&info.name).and_then(|p| p.prefix.clone()).unwrap_or_else(|| info.name.clone());
        validate_plugin_name(&prefix).map_err(LoadError::Contract)?;
        let sha256 = crate::runtime::sha256_hex(bytes);
        let granted = grants::of(config, &info.name, &sha256, &source);
        let mut limits = config.limits_for(&info.name, info.idle_timeout_ms);
        if !granted.table_applies {
            // The guest's environment is the operator's grant too.
            limits.env.clear();
        }
        let maps_data = runtime.maps_data(&component);
        if maps_data {
            cap_mapped_sessions(&info.name, &mut limits);
        }
        let no_renames = BTreeMap::new();
        let rename = config.plugins.get(&info.name).map_or(&no_renames, |p| &p.rename);
        let names = ToolNames { prefix: &prefix, rename };
        let tools = derive_tools(&component, &info, &docs, &names, &limits, &grants).map_err(LoadError::Contract)?;
        check_grants(&grants, &tools, &info).map_err(LoadError::Contract)?;
        // A function of an exported interface, looked up by name: every
        // interface beyond `meta` is optional.
        let export =
            |iface: &str, func: &str| component.get_export_index(None, iface).and_then(|i| component.get_export_index(Some(&i), func));
        let read_resource =
            export(META, "read-resource").ok_or_else(|| LoadError::NotAGame(format!("it does not export {META} read-resource")))?;
        let event = |name: &str| export(EVENTS, name);
        let durable = export(DURABLE, "save").zip(export(DURABLE, "restore")).map(|(save, restore)| Durable { save, restore });
        let legal_moves = export(MOVES, "legal");
        if legal_moves.is_none() && limits.illegal_moves.then == AfterRefusals::Random {
            tracing::warn!(
                plugin = info.name,
                "{} does not list legal moves (it does not export {MOVES}): its games are played under the illegal-move \
                 policy `nothing`, not `random`",
                info.name
            );
            limits.illegal_moves = IllegalMovePolicy::default();
        }
        let prompt_exports = export(PROMPTS, "get").zip(export(PROMPTS, "complete")).map(|(get, complete)| PromptExports { get, complete });
        let prompts =
            prompts.into_iter().map(|p| PromptDef { name: format!("{prefix}_{}", schema::json_name(&p.own)), ..p }).collect::<Vec<_>>();
        if let Some(p) = prompts.iter().find(|p| !valid_tool_name(&p.name)) {
            return Err(LoadError::Contract(format!("prompt name `{}` must match ^[a-z][a-z0-9_]{{0,63}}$", p.name)));
        }
        let channels = Arc::new(ChannelGrant {
            plugin: info.name.clone(),
            processes: runtime.processes.clone(),
            sandbox: runtime.sandbox.clone(),
            endpoints: granted.endpoints,
            engine: granted.engine,
            limits: config.channel_limits(),
            receives: event("on-message").is_some(),
        });
        Ok(Plugin {
            title: info.title.clone(),
            version: info.version.clone(),
            description: info.description.clone(),
            resources: info
                .resources
                .iter()
                .map(|r| ResourceDef {
                    audience: audience_of(&grants, &r.uri),
                    uri: r.uri.clone(),
                    name: r.name.clone(),
                    description: r.description.clone(),
                    mime_type: r.mime_type.clone(),
                })
                .collect(),
            name: info.name,
            source,
            sha256,
            granted: granted.said,
            pre,
            tools,
            on_timer: event("on-timer"),
            on_message: event("on-message"),
            on_closed: event("on-closed"),
            channels,
            read_resource,
            read_body: export(RESOURCES, "read"),
            prompts,
            prompt_exports,
            durable,
            legal_moves,
            limits,
            start_pace: ToolSpeed::default(),
            event_pace: ToolSpeed::default(),
            asks_client: asks_client(&component),
            imports,
            loaded_at: SystemTime::now(),
            runtime: runtime.clone(),
            maps_data,
        })
    }

    pub fn tool(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The result type of the tool exported as `func` (kebab-case, as in WIT).
    pub fn result_of(&self, func: &str) -> Option<&Shape> {
        self.tools.iter().find(|t| t.func == func).and_then(|t| t.result.as_ref())
    }

    /// Its sessions have seats another caller takes with a join code.
    pub fn has_seats(&self) -> bool {
        self.tools.iter().any(|t| t.audience == Audience::Joins)
    }
}

/// The exports of `ludus:plugin/durable`.
#[derive(Clone, Copy)]
pub struct Durable {
    pub save: ComponentExportIndex,
    pub restore: ComponentExportIndex,
}

/// A plugin whose instances map their data segments (chess: 4.4 MB of move
/// tables) takes two more memory mappings per session than the server-wide
/// cap counts on: its own cap keeps it below the kernel's map limit.
fn cap_mapped_sessions(plugin: &str, limits: &mut PluginLimits) {
    let Some((allowed, max_maps)) = crate::runtime::instances_the_kernel_allows(true) else { return };
    if allowed < limits.max_sessions {
        tracing::info!(
            plugin,
            "{plugin} maps its large data into each session (fast starts, little memory per session, more memory mappings): \
             at most {allowed} of its games in memory at once at vm.max_map_count {max_maps}"
        );
        limits.max_sessions = allowed;
    }
}

fn imports_of(component: &Component) -> Vec<String> {
    component.component_type().imports(component.engine()).map(|(name, _)| name.to_string()).collect()
}

/// Whether the plugin can ask its client something that blocks until the
/// client answers (`client.sample`, `client.elicit`). A plugin that imports
/// `client` only for its types (a prompt's role) or for progress does not.
fn asks_client(component: &Component) -> bool {
    use wasmtime::component::types::ComponentItem;
    let engine = component.engine();
    component.component_type().imports(engine).any(|(name, item)| {
        name.starts_with(CLIENT_PREFIX)
            && match item.ty {
                ComponentItem::ComponentInstance(instance) => instance.exports(engine).any(|(f, _)| f == "sample" || f == "elicit"),
                _ => true,
            }
    })
}

/// What a plugin grants beyond its players: (tool function or resource URI, audience).
type Grants = Vec<(String, Audience)>;

/// What a plugin says of itself at load time.
struct Described {
    info: PluginInfo,
    grants: Grants,
    /// Named as the plugin names them (`PromptDef::own`).
    prompts: Vec<PromptDef>,
}

/// Runs `meta.describe` (and `access.grants` and `prompts.offered`, if
/// exported) in a throwaway instance. (`retries`, which older plugins may
/// export, is no longer read: moves carry decision numbers.)
fn describe(pre: &InstancePre<HostState>) -> Result<Described, LoadError> {
    let game_pre = LinkedPre::new(pre.clone())
        .map_err(|e| LoadError::NotAGame(format!("it must export {META} (include ludus:plugin/game in its world): {e:#}")))?;
    let limits = Config::default().limits_for("", None);
    let out = GuestOutput::new(limits.max_output_bytes);
    let (mut store, instance) = first_instance(&game_pre, &limits, &out)?;
    let game = crate::runtime::bindings::Linked::new(&mut store, &instance).map_err(|e| LoadError::NotAGame(format!("{e:#}")))?;
    let failed = |what: &'static str, e: wasmtime::Error| {
        let (text, _) = out.take();
        LoadError::Call { what, details: format!("{e:#} {}", text.trim()) }
    };
    let info = game.ludus_plugin_meta().call_describe(&mut store).map_err(|e| failed("describe()", e))?;
    let grants = read_grants(&mut store, &instance).map_err(|e| failed("access.grants()", e))?;
    let prompts = read_prompts(&mut store, &instance).map_err(|e| failed("prompts.offered()", e))?;
    Ok(Described { info, grants, prompts })
}

/// The plugin's first instance, in a store of its own. Making it also makes
/// each module's memory image, which the kernel may refuse for a moment
/// (`runtime::is_transient`): then a few more tries, each in a fresh store.
fn first_instance(
    game_pre: &LinkedPre<HostState>,
    limits: &PluginLimits,
    out: &GuestOutput,
) -> Result<(wasmtime::Store<HostState>, Instance), LoadError> {
    let mut pauses = [10, 50, 250].into_iter();
    loop {
        // Loading: no one hears what it says changed.
        let host = HostCtx::new("(loading)", Default::default(), None, tokio::sync::broadcast::channel(1).0);
        let output = Output { stdout: out.clone(), stderr: out.clone() };
        let mut store = capability::new_store(game_pre.instance_pre().engine(), limits, host, ChannelsCtx::default(), output);
        match game_pre.instance_pre().instantiate(&mut store) {
            Ok(instance) => return Ok((store, instance)),
            Err(e) if crate::runtime::is_transient(&e) => match pauses.next() {
                Some(ms) => {
                    tracing::info!("a plugin's first instance failed for a moment ({e:#}); trying again");
                    std::thread::sleep(Duration::from_millis(ms));
                }
                None => return Err(LoadError::Start(crate::runtime::error_text(&e))),
            },
            Err(e) => return Err(LoadError::Start(crate::runtime::error_text(&e))),
        }
    }
}

/// Function `func` of interface `iface` when the plugin exports that
/// interface (a later 0.1.x one, looked up by name so that older plugins
/// keep loading); an error when the interface lacks the function.
fn optional_export(
    store: &mut wasmtime::Store<HostState>,
    instance: &wasmtime::component::Instance,
    iface: &str,
    func: &str,
) -> wasmtime::Result<Option<ComponentExportIndex>> {
    let Some(i) = instance.get_export_index(&mut *store, None, iface) else { return Ok(None) };
    match instance.get_export_index(&mut *store, Some(&i), func) {
        Some(f) => Ok(Some(f)),
        None => wasmtime::bail!("{iface} has no `{func}` function"),
    }
}

/// Calls `access.grants` when the plugin exports it (a 0.1.2 interface).
fn read_grants(store: &mut wasmtime::Store<HostState>, instance: &wasmtime::component::Instance) -> wasmtime::Result<Grants> {
    use wasmtime::component::Val;
    let Some(func) = optional_export(store, instance, ACCESS, "grants")? else { return Ok(Vec::new()) };
    let Some(func) = instance.get_func(&mut *store, func) else {
        wasmtime::bail!("{ACCESS} has no `grants` function");
    };
    let mut out = [Val::Bool(false)];
    func.call(&mut *store, &[], &mut out)?;
    let Val::List(items) = &out[0] else { wasmtime::bail!("grants() returned no list") };
    let mut grants = Vec::new();
    for item in items {
        let Val::Record(fields) = item else { continue };
        let (mut name, mut audience) = (None, Audience::Players);
        for (field, value) in fields {
            match (field.as_str(), value) {
                ("name", Val::String(s)) => name = Some(s.clone()),
                ("audience", Val::Enum(a)) if a == "spectators" => audience = Audience::Spectators,
                ("audience", Val::Enum(a)) if a == "joins" => audience = Audience::Joins,
                _ => {}
            }
        }
        grants.extend(name.map(|n| (n, audience)));
    }
    Ok(grants)
}

fn audience_of(grants: &Grants, name: &str) -> Audience {
    grants.iter().find(|(n, _)| n == name).map_or(Audience::Players, |(_, a)| *a)
}

/// Every grant names a tool that uses a session, or a per-session resource;
/// only a tool can take seats.
fn check_grants(grants: &Grants, tools: &[ToolDef], info: &PluginInfo) -> Result<(), String> {
    for (name, audience) in grants {
        if let Some(tool) = tools.iter().find(|t| &t.func == name) {
            if !matches!(tool.role, Role::Uses(_)) {
                return Err(format!(
                    "access.grants() opens tool `{name}`, which does not use a session (only such tools have an audience)"
                ));
            }
        } else if info.resources.iter().any(|r| &r.uri == name && r.uri.contains(SESSION_SLOT)) {
            if *audience == Audience::Joins {
                return Err(format!("access.grants(): resource `{name}` cannot take seats (only a tool can)"));
            }
        } else {
            return Err(format!("access.grants() names `{name}`, which is neither a tool nor a per-session resource of this plugin"));
        }
    }
    Ok(())
}

fn validate_plugin_name(name: &str) -> Result<(), String> {
    let ok = name.len() <= 24
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok { Ok(()) } else { Err(format!("plugin name `{name}` must match ^[a-z][a-z0-9_]{{0,23}}$")) }
}

/// Finds the exported `tools` interface: the one instance export whose name
/// is `<namespace>:<package>/tools` (with or without a version).
fn tools_interface(component: &Component) -> Result<(String, Vec<(String, wasmtime::component::types::ComponentFunc)>), String> {
    let ty = component.component_type();
    let mut found = Vec::new();
    for (name, ext) in ty.exports(component.engine()) {
        let short = name.split('@').next().unwrap_or(name);
        if short.ends_with("/tools")
            && let ComponentItem::ComponentInstance(inst) = ext.ty
        {
            let funcs = inst
                .exports(component.engine())
                .filter_map(|(f, e)| match e.ty {
                    ComponentItem::ComponentFunc(func) => Some((f.to_string(), func)),
                    _ => None,
                })
                .collect();
            found.push((name.to_string(), funcs));
        }
    }
    match found.len() {
        1 => Ok(found.pop().expect("one")),
        0 => Err("it exports no `tools` interface (add `export tools;` to its world)".into()),
        _ => Err("it exports more than one `tools` interface".into()),
    }
}

fn derive_tools(
    component: &Component,
    info: &PluginInfo,
    docs: &Docs,
    names: &ToolNames,
    limits: &PluginLimits,
    grants: &Grants,
) -> Result<Vec<ToolDef>, String> {
    let (iface, funcs) = tools_interface(component)?;
    if let Some(unknown) = names.rename.keys().find(|r| !funcs.iter().any(|(f, _)| schema::json_name(f) == **r)) {
        let have: Vec<String> = funcs.iter().map(|(f, _)| schema::json_name(f)).collect();
        return Err(format!("rename names `{unknown}`, which is not one of its functions ({})", have.join(", ")));
    }
    if let Some(reserved) = names.rename.values().find(|n| n.starts_with("ludus_")) {
        return Err(format!("rename gives `{reserved}`: the prefix `ludus` is reserved for host tools"));
    }
    for hint in &info.tools {
        if !funcs.iter().any(|(f, _)| *f == hint.name) {
            let names: Vec<&str> = funcs.iter().map(|(f, _)| f.as_str()).collect();
            return Err(format!(
                "describe() has a hint for `{}`, which its tools interface does not export (it exports: {})",
                hint.name,
                names.join(", ")
            ));
        }
    }
    let iface_index = component.get_export_index(None, iface.as_str()).ok_or("tools interface vanished")?;
    let mut tools = Vec::new();
    for (func, ty) in funcs {
        let at = |e: String| format!("tool `{func}`: {e}");
        if ty.async_() {
            return Err(at("async functions are not supported; a guest never blocks".into()));
        }
        let fdocs = docs.func("tools", &func);
        let mut params = Vec::new();
        for (pname, pty) in ty.params() {
            let shape = Shape::from_type(&pty, docs).map_err(|e| at(format!("parameter `{pname}`: {e}")))?;
            let json = schema::json_name(pname);
            params.push(Field::new(pname, shape, fdocs.params.get(&json).cloned()));
        }
        let result = match ty.results().collect::<Vec<_>>().as_slice() {
            [] => None,
            [t] => Some(Shape::from_type(t, docs).map_err(|e| at(format!("result: {e}")))?),
            _ => return Err(at("functions with several results are not supported".into())),
        };
        let hint = info.tools.iter().find(|h| h.name == func);
        let role = match hint.map(|h| (h.role, h.session_param.as_deref())) {
            None | Some((SessionRole::None, _)) => Role::Shared,
            Some((SessionRole::Creates, _)) => Role::Creates,
            Some((SessionRole::Uses, Some(p))) => {
                let i = params
                    .iter()
                    .position(|f| f.wit == p || f.json == p)
                    .ok_or_else(|| at(format!("its hint names session parameter `{p}`, which it does not have")))?;
                // `option<string>`: left out, it names the caller's only game.
                if params[i].shape != Shape::String && params[i].shape != Shape::Option(Box::new(Shape::String)) {
                    return Err(at(format!("session parameter `{p}` must be a string (or an option of one)")));
                }
                Role::Uses(i)
            }
            Some((SessionRole::Uses, None)) => return Err(at("role `uses` needs a session-param".into())),
        };
        let name = names.of(&func);
        if !valid_tool_name(&name) {
            return Err(at(format!("tool name `{name}` must match ^[a-z][a-z0-9_]{{0,63}}$")));
        }
        let default_wait = Duration::from_millis(hint.and_then(|h| h.default_wait_ms).unwrap_or(25_000).into());
        let max_wait = Duration::from_millis(hint.and_then(|h| h.max_wait_ms).unwrap_or(25_000).into()).min(limits.max_wait);
        if let Role::Uses(i) = role {
            let doc = if params[i].required() {
                "Id of the game session to act on."
            } else {
                "Id of the game session to act on; leave it out when you have exactly one game of this kind."
            };
            params[i].doc.get_or_insert_with(|| doc.into());
        }
        let audience = audience_of(grants, &func);
        let decision = decision_param(&mut params, &role).map_err(at)?;
        let takes_seed = role == Role::Creates && params.iter().any(|f| f.json == SEED);
        if takes_seed && params.iter().any(|f| f.json == SECRET) {
            return Err(at(format!("parameter `{SECRET}` is the host's (a finished game's secret, to replay it)")));
        }
        let host_reasoning = decision.is_some() && !params.iter().any(|f| f.json == REASONING);
        let host_usage = decision.is_some() && !params.iter().any(|f| f.json == USAGE);
        let listing = listing(&func, &fdocs.summary, &params, hint, audience, takes_seed, (host_reasoning, host_usage));
        tools.push(ToolDef {
            export: component.get_export_index(Some(&iface_index), func.as_str()).ok_or_else(|| at("export index not found".into()))?,
            name,
            func,
            params,
            result,
            role,
            audience,
            read_only: hint.is_some_and(|h| h.read_only),
            decision,
            host_reasoning,
            host_usage,
            default_wait: default_wait.min(max_wait),
            max_wait,
            listing,
            pace: ToolSpeed::default(),
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tools)
}

/// How a plugin's tools are named: `<prefix>_<function>`, unless the
/// operator renamed the function (`[plugins.NAME.rename]`).
struct ToolNames<'a> {
    prefix: &'a str,
    rename: &'a BTreeMap<String, String>,
}

impl ToolNames<'_> {
    fn of(&self, func: &str) -> String {
        let own = schema::json_name(func);
        self.rename.get(&own).cloned().unwrap_or_else(|| format!("{}_{own}", self.prefix))
    }
}

fn valid_tool_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The ok type of a result, or the type itself.
pub fn ok_shape(result: Option<&Shape>) -> Option<&Shape> {
    match result {
        Some(Shape::Result { ok, .. }) => ok.as_deref(),
        other => other,
    }
}

fn listing(
    func: &str,
    summary: &Option<String>,
    params: &[Field],
    hint: Option<&ToolHint>,
    audience: Audience,
    takes_seed: bool,
    (takes_reasoning, takes_usage): (bool, bool),
) -> Listing {
    let mut input = match params_schema(params) {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    };
    if audience == Audience::Joins {
        add_join_code(&mut input);
    }
    if takes_seed {
        add_secret(&mut input);
    }
    if takes_usage {
        add_usage(&mut input);
    }
    if takes_reasoning {
        add_reasoning(&mut input);
    }
    let hints = hint.map_or(Hints::default(), |h| Hints {
        read_only: h.read_only,
        destructive: h.destructive,
        idempotent: h.idempotent,
        open_world: h.open_world,
    });
    Listing {
        title: hint.and_then(|h| h.title.clone()),
        description: summary.clone().unwrap_or_else(|| format!("Calls `{func}`.")),
        input_schema: Arc::new(input),
        hints,
        ui_resource: hint.and_then(|h| h.ui_resource.clone()),
    }
}

/// A `joins` tool asks for the session's join code besides its own parameters.
fn add_join_code(schema: &mut JsonObject) {
    let doc = "The join code the game's creator hands out (it is in the answer that started the game, and in their \
               `ludus_sessions`). Needed to take a seat, also by the creator taking the other seat itself (self-play).";
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(JOIN_CODE.into(), json!({"type": "string", "description": doc}));
    }
}

/// A creating tool that takes a `seed` also takes the host's `secret`: with
/// the seed and secret a finished game published, the same game again.
fn add_secret(schema: &mut JsonObject) {
    let doc = "To replay a finished game: the secret it published when it ended (in its last answer, `ludus_sessions` \
               and its result record), with its `seed`. Its record says it was a replay, and reports leave it out; an \
               agent you give its join code may take its other side, and is told its hidden parts are known. Leave it \
               out to play a new game.";
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(SECRET.into(), schema::u64_schema(doc));
    }
}

/// A move takes the host's `usage`, kept beside it in the record.
fn add_usage(schema: &mut JsonObject) {
    let doc = "What this move cost your model (optional), as your client reports it: kept with the move in the game's record \
               and summed by `ludus report`; other players never see it.";
    let count = |what: &str| json!({"type": "integer", "minimum": 0, "description": what});
    let usage = json!({
        "type": "object",
        "description": doc,
        "properties": {
            "input_tokens": count("Tokens the model read for this move."),
            "output_tokens": count("Tokens the model wrote for this move (its reasoning included)."),
            "cost": {"type": "number", "minimum": 0, "description": "What the move cost, in your currency (US dollars, say)."},
        },
        "additionalProperties": false,
    });
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(USAGE.into(), usage);
    }
}

/// A move takes the host's `reasoning`, kept beside it in the record.
fn add_reasoning(schema: &mut JsonObject) {
    let doc = "Why you make this move (optional): kept with it in the game's record; other players never see it.";
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert(REASONING.into(), json!({"type": "string", "maxLength": MAX_REASONING, "description": doc}));
    }
}

/// The parameter named `decision` of a tool that uses a session: the number
/// of the decision a call answers (`ludus:plugin/decisions`). It must be an
/// integer (or an option of one); the host gives it a description when the
/// plugin wrote none.
fn decision_param(params: &mut [Field], role: &Role) -> Result<Option<usize>, String> {
    let Some(i) = params.iter().position(|f| f.json == DECISION) else { return Ok(None) };
    if params[i].shape.int_kind().is_none() || !matches!(role, Role::Uses(_)) {
        return Err(format!("parameter `{DECISION}` carries a decision number: it must be an integer of a tool that uses a session"));
    }
    params[i].doc.get_or_insert_with(|| {
        "The number of the decision this call answers (`decision` in the game's state and answers). Send it whenever your \
         client may retry: a call repeated for a number already made gets that move's answer and is never made twice; a \
         number not yet due is refused. Without it the move is made as sent."
            .into()
    });
    Ok(Some(i))
}
