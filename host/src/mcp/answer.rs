//! A tool call's answer, and how it is written.
//!
//! The text convention: when the ok value is a record with a `text: string`
//! field, that field is what the agent reads and the other fields are
//! `structuredContent`; otherwise the text is the value itself (strings) or
//! its JSON. `Answer::into_result` gives rmcp's result (rmcp's service and
//! HTTP send it); `Answer::into_response` writes the JSON-RPC response
//! itself (the stdio lane), and for the common answer — a record with its
//! text — writes the structured content straight from the component's value:
//! building a `serde_json::Value` for it, writing that out and dropping it was
//! a third of what Ludus itself spent on a `hanoi_get_state` (one-core profile).

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, RequestId, ResourceContents, ServerJsonRpcMessage, ServerResult};
use serde::Serialize;
use serde_json::Value;
use wasmtime::component::Val;

use crate::plugin::schema::{Field, JsonOf, Shape};
use crate::plugin::{Plugin, is_embedded_field, is_text_field, ok_shape};
use crate::session::Reply;

pub enum Answer {
    /// Ready as rmcp's result: errors, "Done.", the host's own tools, and
    /// every value that is not a record with a text field and nothing embedded.
    Result(CallToolResult),
    /// A record with the convention's text (taken out of `value`).
    Record { text: String, value: Val, plugin: Arc<Plugin>, tool: usize },
}

/// Record fields that are content, not data.
fn content_field(f: &Field) -> bool {
    is_text_field(f) || is_embedded_field(f)
}

impl Answer {
    /// A plugin's reply under the text convention.
    pub fn of(reply: Reply) -> Answer {
        let (value, plugin, index, note) = match reply {
            Reply::Failed(e) => return Answer::Result(error_result(e)),
            Reply::Value { value, plugin, tool, note } => (value, plugin, tool, note),
        };
        let mut answer = Answer::of_value(value, plugin, index);
        if let Some(note) = note {
            answer.add_note(note);
        }
        answer
    }

    /// What the host adds for the agent goes after the game's own text.
    fn add_note(&mut self, note: String) {
        match self {
            Answer::Record { text, .. } => {
                text.push_str("\n\n");
                text.push_str(&note);
            }
            Answer::Result(r) => r.content.push(ContentBlock::text(note)),
        }
    }

    fn of_value(value: Option<Val>, plugin: Arc<Plugin>, index: usize) -> Answer {
        let tool = &plugin.tools[index];
        let (shape, value) = match (&tool.result, value) {
            (None, _) | (_, None) => return Answer::Result(done()),
            (Some(Shape::Result { err, .. }), Some(Val::Result(Err(e)))) => {
                let text = match (err.as_deref(), e) {
                    (Some(s), Some(v)) => match s.to_json(&v) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                    _ => "The game refused the call.".into(),
                };
                return Answer::Result(error_result(text));
            }
            (Some(Shape::Result { .. }), Some(Val::Result(Ok(v)))) => (ok_shape(tool.result.as_ref()), v.map(|b| *b)),
            (Some(s), Some(v)) => (Some(s), Some(v)),
        };
        let (Some(shape), Some(mut value)) = (shape, value) else { return Answer::Result(done()) };
        match take_text(shape, &mut value) {
            Some(text) => Answer::Record { text, value, plugin: plugin.clone(), tool: index },
            None => Answer::Result(render(shape, &value, &plugin)),
        }
    }

    /// As rmcp's result.
    pub fn into_result(self) -> CallToolResult {
        let (text, value, plugin, tool) = match self {
            Answer::Result(r) => return r,
            Answer::Record { text, value, plugin, tool } => (text, value, plugin, tool),
        };
        let structured = serde_json::to_value(JsonOf::omitting(record_shape(&plugin, tool), &value, content_field)).unwrap_or_default();
        if let Some(refusal) = over_limit(text.len() + json_len(&structured), &plugin) {
            return refusal;
        }
        with_structured(text, structured)
    }

    /// The JSON-RPC response to request `id` that carries this answer.
    pub fn into_response(self, id: RequestId) -> Vec<u8> {
        let (text, value, plugin, tool) = match self {
            Answer::Result(r) => return response(r, id),
            Answer::Record { text, value, plugin, tool } => (text, value, plugin, tool),
        };
        let structured = serde_json::to_vec(&JsonOf::omitting(record_shape(&plugin, tool), &value, content_field)).unwrap_or_default();
        if let Some(refusal) = over_limit(text.len() + structured.len(), &plugin) {
            return response(refusal, id);
        }
        // rmcp writes the envelope (its field names are its business); the
        // structured content goes where it wrote a null for it. The pattern
        // cannot occur inside a string, where quotes are escaped.
        let mut line = response(with_structured(text, Value::Null), id);
        const PLACE: &[u8] = b"\"structuredContent\":null";
        match line.windows(PLACE.len()).rposition(|w| w == PLACE) {
            Some(at) => {
                let null = at + PLACE.len() - 4;
                line.splice(null..null + 4, structured);
                line
            }
            // Not where expected (rmcp writes it otherwise): set it in the
            // written response rather than keep a copy of the text for this.
            None => {
                let mut message: Value = serde_json::from_slice(&line).unwrap_or_default();
                message["result"]["structuredContent"] = serde_json::from_slice(&structured).unwrap_or_default();
                serde_json::to_vec(&message).unwrap_or_default()
            }
        }
    }
}

/// The text field of a record with the text convention, taken out of it;
/// None for any other value, and for a record with an embedded resource
/// (rendered the general way).
fn take_text(shape: &Shape, value: &mut Val) -> Option<String> {
    let (Shape::Record { fields, .. }, Val::Record(vals)) = (shape, value) else { return None };
    let embeds = fields.iter().zip(vals.iter()).any(|(f, (_, v))| is_embedded_field(f) && !matches!(v, Val::Option(None)));
    let at = fields.iter().position(is_text_field).filter(|_| !embeds)?;
    match &mut vals.get_mut(at)?.1 {
        Val::String(text) => Some(std::mem::take(text)),
        _ => None,
    }
}

fn record_shape(plugin: &Plugin, tool: usize) -> &Shape {
    ok_shape(plugin.tools[tool].result.as_ref()).expect("a record answer has a record shape")
}

/// Any value other than a record with its text: its JSON, a string's text,
/// an embedded resource.
fn render(shape: &Shape, value: &Val, plugin: &Plugin) -> CallToolResult {
    let mut json = shape.to_json(value);
    let mut text = None;
    let mut embedded = None;
    if let (Shape::Record { fields, .. }, Value::Object(obj)) = (shape, &mut json) {
        if fields.iter().any(is_text_field) {
            text = obj.remove("text").and_then(|t| t.as_str().map(str::to_string));
        }
        if fields.iter().any(is_embedded_field) {
            embedded = obj.remove("embedded").filter(|e| e.is_object()).map(|e| {
                let field = |k: &str| e[k].as_str().unwrap_or_default().to_string();
                ContentBlock::resource(ResourceContents::text(field("text"), field("uri")).with_mime_type(field("mime_type")))
            });
        }
    }
    let size = text.as_ref().map_or(0, String::len) + json_len(&json);
    if let Some(refusal) = over_limit(size, plugin) {
        return refusal;
    }
    match (shape, json) {
        (Shape::Record { .. }, obj) => {
            let text = text.unwrap_or_else(|| obj.to_string());
            let mut r = CallToolResult::success(std::iter::once(ContentBlock::text(text)).chain(embedded).collect());
            r.structured_content = Some(obj);
            r
        }
        (_, Value::String(s)) => CallToolResult::success(vec![ContentBlock::text(s)]),
        (_, other) => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }
}

fn over_limit(size: usize, plugin: &Plugin) -> Option<CallToolResult> {
    let limit = plugin.limits.max_result_bytes;
    (size > limit).then(|| error_result(format!("the game's answer is {size} bytes, over this server's limit of {limit} bytes")))
}

fn with_structured(text: String, structured: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(structured);
    r
}

fn done() -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text("Done.")])
}

/// An error for the agent. Errors often quote what they refuse; however
/// large that was, the error stays short.
pub fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(brief(text.into()))])
}

/// Longest error text sent: room for a list of legal moves, not for an
/// echo of a 4 MB argument.
const MAX_ERROR_CHARS: usize = 4000;

/// `text` cut to [`MAX_ERROR_CHARS`], saying how much was left out.
pub fn brief(mut text: String) -> String {
    if text.len() <= MAX_ERROR_CHARS {
        return text;
    }
    let mut end = MAX_ERROR_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let rest = text.len() - end;
    text.truncate(end);
    text.push_str(&format!("… ({rest} more bytes not shown)"));
    text
}

/// The response to `id` carrying `result`, as JSON.
fn response(result: CallToolResult, id: RequestId) -> Vec<u8> {
    serde_json::to_vec(&ServerJsonRpcMessage::response(ServerResult::CallToolResult(result), id)).unwrap_or_default()
}

/// The length of `value` written as JSON, counted without writing it out
/// (every call checks its arguments' and its answer's size).
pub fn json_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Source;
    use serde_json::json;

    /// Hanoi's plugin and its `get_state` tool, whose answer is a record with its text.
    fn hanoi(config: &crate::config::Config) -> (Arc<Plugin>, usize) {
        let bytes = std::fs::read(std::path::Path::new(env!("LUDUS_WASM_DIR")).join("hanoi.wasm")).unwrap();
        let runtime = crate::runtime::Runtime::new(None).unwrap();
        let plugin = Plugin::load(&runtime, config, &bytes, Source::Builtin).unwrap();
        let tool = plugin.tools.iter().position(|t| t.name == "hanoi_get_state").unwrap();
        (Arc::new(plugin), tool)
    }

    fn reply(plugin: &Arc<Plugin>, tool: usize, value: &Value) -> Reply {
        let shape = ok_shape(plugin.tools[tool].result.as_ref()).unwrap();
        let ok = shape.to_val(value, "result").unwrap();
        Reply::Value { value: Some(Val::Result(Ok(Some(Box::new(ok))))), plugin: plugin.clone(), tool, note: None }
    }

    fn snapshot(text: &str) -> Value {
        json!({"text": text, "simulator_type": "TowerOfHanoi", "state": [[3, 2, 1], [], []],
               "simulator_params": {"n": 3}, "optimal_moves": 7, "moves_made": 0, "goal_reached": false})
    }

    #[test]
    fn the_direct_response_is_the_one_rmcp_would_write() {
        let (plugin, tool) = hanoi(&Default::default());
        for text in ["Tower of Hanoi, 3 disks.\npeg 0: 3 2 1", "quotes \" and \\\\ and \"structuredContent\":null inside"] {
            let answer = Answer::of(reply(&plugin, tool, &snapshot(text)));
            assert!(matches!(answer, Answer::Record { .. }), "a record with its text takes the direct way");
            let direct: Value = serde_json::from_slice(&answer.into_response(RequestId::Number(7))).unwrap();
            let general = Answer::of(reply(&plugin, tool, &snapshot(text))).into_result();
            let rmcp =
                serde_json::to_value(ServerJsonRpcMessage::response(ServerResult::CallToolResult(general), RequestId::Number(7))).unwrap();
            assert_eq!(direct, rmcp);
            assert_eq!(direct["result"]["content"][0]["text"], text);
            assert_eq!(direct["result"]["structuredContent"]["state"], json!([[3, 2, 1], [], []]));
            assert!(direct["result"]["structuredContent"].get("text").is_none(), "the text is content, not data");
        }
    }

    #[test]
    fn an_answer_over_the_limit_is_refused_both_ways() {
        let mut config = crate::config::Config::default();
        config.limits.max_result_bytes = 100;
        let (small, tool) = hanoi(&config);
        let direct: Value =
            serde_json::from_slice(&Answer::of(reply(&small, tool, &snapshot(&"x".repeat(200)))).into_response(RequestId::Number(1)))
                .unwrap();
        assert_eq!(direct["result"]["isError"], true);
        assert!(direct["result"]["content"][0]["text"].as_str().unwrap().contains("over this server's limit of 100 bytes"), "{direct}");
        let general = Answer::of(reply(&small, tool, &snapshot(&"x".repeat(200)))).into_result();
        assert_eq!(general.is_error, Some(true));
    }
}
