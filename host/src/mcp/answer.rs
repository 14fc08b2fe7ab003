//! A tool call's answer: one neutral result per call ([`Answer`]), written by
//! one function per wire form. `into_result` gives rmcp's result type (an
//! event stream sends it). `into_response` writes the JSON-RPC response
//! itself (stdio, and HTTP's plain JSON): the envelope is rmcp's writing of that same
//! result, and a record's structured content goes straight from the
//! component's value into the place rmcp left for it, the same bytes the
//! result would carry (`JsonOf` writes keys sorted, as serde_json's maps do;
//! a property test in `plugin::schema` compares the bytes). Building a
//! `serde_json::Value` for it, writing that out and dropping it was a third
//! of what Ludus itself spent on a `hanoi_get_state` (one-core profile).
//!
//! A result carries `resultType` from protocol 2026-07-28 on, and not
//! before (rmcp's handler leaves it out for peers of earlier versions): the
//! writers take the [`Peer`] they write for.
//!
//! The text convention (`convention`): a record's `text` field is what the
//! agent reads and its other fields are `structuredContent`; any other value
//! is its own text (a string) or its JSON.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, RequestId, ResourceContents, ServerJsonRpcMessage, ServerResult};
use serde::Serialize;
use serde_json::Value;
use wasmtime::component::Val;

use super::convention::{is_blocks, is_blocks_field, is_content_field, is_embedded_field, is_text_field};
use crate::capability::content::{block_json, block_of_val};
use crate::plugin::schema::{JsonOf, Shape};
use crate::plugin::{Plugin, ok_shape};
use crate::session::Reply;

/// Whom an answer is written for, by the protocol its request came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A client of an MCP session (stdio, or HTTP after `initialize`),
    /// which negotiated a version before 2026-07-28: no `resultType`.
    Legacy,
    /// A stateless client of 2026-07-28 or later: `resultType: "complete"`.
    Stateless,
}

impl Peer {
    /// Shapes a result as rmcp's handler does for this peer: without
    /// `resultType` for a legacy one, with the caching hints 2026-07-28
    /// requires for a stateless one.
    pub fn shape(self, result: &mut ServerResult) {
        match self {
            Peer::Legacy => result.strip_result_type_for_legacy_peer(),
            Peer::Stateless => result.fill_missing_cache_hints(),
        }
    }

    /// The same for a tool's result, which needs no caching hints.
    fn shape_call(self, mut result: CallToolResult) -> CallToolResult {
        if self == Peer::Legacy {
            result.result_type = None;
        }
        result
    }
}

/// What a call answers, in no wire form yet.
pub struct Answer {
    /// The call failed; `text` says why.
    error: bool,
    /// What the agent reads.
    text: String,
    /// `text` is a record's text (a note is appended to it) rather than the
    /// value itself (a note goes in a block of its own).
    own_text: bool,
    /// Further text blocks.
    notes: Vec<String>,
    /// A resource shown with the text: (uri, MIME type, text).
    embedded: Option<(String, String, String)>,
    /// Blocks after the text (`ludus:plugin/content`), as MCP writes them.
    blocks: Vec<Value>,
    /// The data for programs (`structuredContent`).
    data: Data,
    /// The most bytes of text and data the answer may carry.
    limit: usize,
}

enum Data {
    None,
    Json(Value),
    /// A record with the convention's text, written from the component's
    /// value when the answer is.
    Record {
        value: Val,
        plugin: Arc<Plugin>,
        tool: usize,
    },
}

impl Answer {
    /// An error for the agent. Errors often quote what they refuse; however
    /// large that was, the error stays short.
    pub fn error(text: impl Into<String>) -> Answer {
        Answer::text(true, brief(text.into()))
    }

    /// A value's JSON: pretty as the text, as is as the data (the host's own tools).
    pub fn json(value: Value) -> Answer {
        Answer { data: Data::Json(value.clone()), ..Answer::text(false, serde_json::to_string_pretty(&value).unwrap_or_default()) }
    }

    fn text(error: bool, text: String) -> Answer {
        Answer { error, text, own_text: false, notes: Vec::new(), embedded: None, blocks: Vec::new(), data: Data::None, limit: usize::MAX }
    }

    /// A plugin's reply under the text convention.
    pub fn of(reply: Reply) -> Answer {
        let (value, plugin, index, note) = match reply {
            // The refusal in words: the one place a call's error becomes text.
            Reply::Failed(e) => return Answer::error(e.to_string()),
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
        if self.own_text {
            self.text.push_str("\n\n");
            self.text.push_str(&note);
        } else {
            self.notes.push(note);
        }
    }

    fn of_value(value: Option<Val>, plugin: Arc<Plugin>, index: usize) -> Answer {
        let tool = &plugin.tools[index];
        let (shape, value) = match (&tool.result, value) {
            (None, _) | (_, None) => return Answer::text(false, "Done.".into()),
            (Some(Shape::Result { err, .. }), Some(Val::Result(Err(e)))) => {
                let text = match (err.as_deref(), e) {
                    (Some(s), Some(v)) => match s.to_json(&v) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                    _ => "The game refused the call.".into(),
                };
                return Answer::error(text);
            }
            (Some(Shape::Result { .. }), Some(Val::Result(Ok(v)))) => (ok_shape(tool.result.as_ref()), v.map(|b| *b)),
            (Some(s), Some(v)) => (Some(s), Some(v)),
        };
        let (Some(shape), Some(mut value)) = (shape, value) else { return Answer::text(false, "Done.".into()) };
        let limit = plugin.limits.max_result_bytes;
        if is_blocks(shape) {
            return Answer { limit, blocks: blocks_of(&value), ..Answer::text(false, String::new()) };
        }
        if !matches!(shape, Shape::Record { .. }) {
            let text = match shape.to_json(&value) {
                Value::String(s) => s,
                other => other.to_string(),
            };
            return Answer { limit, ..Answer::text(false, text) };
        }
        let embedded = take_embedded(shape, &mut value);
        let blocks = blocks_in(shape, &value);
        let (text, own_text, data) = match take_text(shape, &mut value) {
            Some(text) => (text, true, Data::Record { value, plugin, tool: index }),
            // A record without the convention's text reads as its data: its
            // JSON is made once, for both.
            None => {
                let json = serde_json::to_value(JsonOf::omitting(shape, &value, is_content_field)).unwrap_or_default();
                (json.to_string(), false, Data::Json(json))
            }
        };
        Answer { error: false, text, own_text, notes: Vec::new(), embedded, blocks, data, limit }
    }

    /// As rmcp's result type, without `resultType` (`Peer::shape_call`
    /// adds it for a 2026-07-28 peer).
    pub fn into_result(mut self) -> CallToolResult {
        let structured = match std::mem::replace(&mut self.data, Data::None) {
            Data::None => None,
            Data::Json(v) => Some(v),
            Data::Record { value, plugin, tool } => {
                Some(serde_json::to_value(JsonOf::omitting(record_shape(&plugin, tool), &value, is_content_field)).unwrap_or_default())
            }
        };
        let size = structured.as_ref().map_or(0, json_len);
        self.result(size, structured)
    }

    /// As the result `peer` reads.
    pub fn into_result_for(self, peer: Peer) -> CallToolResult {
        peer.shape_call(self.into_result())
    }

    /// The JSON-RPC response to request `id` that carries this answer, as `peer` reads it.
    pub fn into_response(self, id: RequestId, peer: Peer) -> Vec<u8> {
        let Data::Record { value, plugin, tool } = &self.data else { return response(self.into_result_for(peer), id) };
        let mut structured = Vec::with_capacity(WRITE_ROOM);
        let _ = serde_json::to_writer(&mut structured, &JsonOf::omitting(record_shape(plugin, *tool), value, is_content_field));
        let result = peer.shape_call(self.result(structured.len(), Some(Value::Null)));
        if result.is_error == Some(true) {
            return response(result, id);
        }
        // rmcp writes the envelope (its field names are its business); the
        // structured content goes where it wrote a null for it. The pattern
        // cannot occur inside a string, where quotes are escaped.
        let line = response(result, id);
        const PLACE: &[u8] = b"\"structuredContent\":null";
        match line.windows(PLACE.len()).rposition(|w| w == PLACE) {
            Some(at) => {
                let null = at + PLACE.len() - 4;
                let mut whole = Vec::with_capacity(line.len() - 4 + structured.len());
                whole.extend_from_slice(&line[..null]);
                whole.extend_from_slice(&structured);
                whole.extend_from_slice(&line[null + 4..]);
                whole
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

    /// rmcp's result with `structured` (of `data_size` bytes written), or
    /// the refusal of an answer over the limit.
    fn result(self, data_size: usize, structured: Option<Value>) -> CallToolResult {
        let size = self.text.len() + data_size + self.blocks.iter().map(json_len).sum::<usize>();
        if size > self.limit {
            return Answer::error(format!("the game's answer is {size} bytes, over this server's limit of {} bytes", self.limit))
                .into_result();
        }
        let mut content = Vec::with_capacity(1 + usize::from(self.embedded.is_some()) + self.blocks.len() + self.notes.len());
        // An answer of blocks alone has no text of its own.
        if !self.text.is_empty() || self.blocks.is_empty() {
            content.push(ContentBlock::text(self.text));
        }
        if let Some((uri, mime, text)) = self.embedded {
            content.push(ContentBlock::resource(ResourceContents::text(text, uri).with_mime_type(mime)));
        }
        content.extend(self.blocks.into_iter().filter_map(|b| serde_json::from_value(b).ok()));
        content.extend(self.notes.into_iter().map(ContentBlock::text));
        let mut r = if self.error { CallToolResult::error(content) } else { CallToolResult::success(content) };
        r.structured_content = structured;
        r
    }
}

/// The text field of a record with the text convention, taken out of it.
fn take_text(shape: &Shape, value: &mut Val) -> Option<String> {
    let (Shape::Record { fields, .. }, Val::Record(vals)) = (shape, value) else { return None };
    let at = fields.iter().position(is_text_field)?;
    match &mut vals.get_mut(at)?.1 {
        Val::String(text) => Some(std::mem::take(text)),
        _ => None,
    }
}

/// A `list<block>` value as MCP's content blocks (JSON).
fn blocks_of(value: &Val) -> Vec<Value> {
    let Val::List(items) = value else { return Vec::new() };
    items.iter().filter_map(block_of_val).map(|b| block_json(&b)).collect()
}

/// The `content` blocks of a record (left in it: its structured data omits
/// content fields anyway).
fn blocks_in(shape: &Shape, value: &Val) -> Vec<Value> {
    let (Shape::Record { fields, .. }, Val::Record(vals)) = (shape, value) else { return Vec::new() };
    let Some(at) = fields.iter().position(is_blocks_field) else { return Vec::new() };
    vals.get(at).map(|(_, v)| blocks_of(v)).unwrap_or_default()
}

/// The embedded resource of a record, taken out of it: (uri, MIME type, text).
fn take_embedded(shape: &Shape, value: &mut Val) -> Option<(String, String, String)> {
    let (Shape::Record { fields, .. }, Val::Record(vals)) = (shape, value) else { return None };
    let at = fields.iter().position(is_embedded_field)?;
    let Val::Option(Some(resource)) = std::mem::replace(&mut vals.get_mut(at)?.1, Val::Option(None)) else { return None };
    // Its fields are `uri`, `mime-type` and `text`, in that order (`is_embedded_field`).
    let Val::Record(parts) = *resource else { return None };
    let mut strings = parts.into_iter().map(|(_, v)| match v {
        Val::String(s) => s,
        _ => String::new(),
    });
    Some((strings.next()?, strings.next()?, strings.next()?))
}

fn record_shape(plugin: &Plugin, tool: usize) -> &Shape {
    ok_shape(plugin.tools[tool].result.as_ref()).expect("a record answer has a record shape")
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
    let text: usize = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.len()).sum();
    let mut line = Vec::with_capacity(WRITE_ROOM + text + text / 8);
    let _ = serde_json::to_writer(&mut line, &ServerJsonRpcMessage::response(ServerResult::CallToolResult(result), id));
    line
}

/// Room to write an answer into besides its texts (which escaping may
/// lengthen a little): grown from serde_json's default of 128 bytes, a
/// `hanoi_get_state` answer was copied four times on its way out.
const WRITE_ROOM: usize = 512;

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
        let runtime = crate::runtime::Runtime::new(None, &Default::default()).unwrap();
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
               "simulator_params": {"n": 3}, "optimal_moves": 7, "moves_made": 0, "goal_reached": false, "decision": 1})
    }

    #[test]
    fn the_direct_response_is_the_one_rmcp_would_write_byte_for_byte() {
        let (plugin, tool) = hanoi(&Default::default());
        for text in ["Tower of Hanoi, 3 disks.\npeg 0: 3 2 1", "quotes \" and \\\\ and \"structuredContent\":null inside"] {
            for peer in [Peer::Legacy, Peer::Stateless] {
                let direct = Answer::of(reply(&plugin, tool, &snapshot(text))).into_response(RequestId::Number(7), peer);
                // What rmcp's handler sends: `resultType` for a 2026-07-28 peer only.
                let mut general = ServerResult::CallToolResult(Answer::of(reply(&plugin, tool, &snapshot(text))).into_result());
                if peer == Peer::Legacy {
                    general.strip_result_type_for_legacy_peer();
                }
                let rmcp = serde_json::to_vec(&ServerJsonRpcMessage::response(general, RequestId::Number(7))).unwrap();
                assert_eq!(String::from_utf8(direct.clone()).unwrap(), String::from_utf8(rmcp).unwrap(), "{peer:?}");
                assert_eq!(direct.windows(12).any(|w| w == b"\"resultType\""), peer == Peer::Stateless);
            }
            let direct = Answer::of(reply(&plugin, tool, &snapshot(text))).into_response(RequestId::Number(7), Peer::Legacy);
            let direct: Value = serde_json::from_slice(&direct).unwrap();
            assert_eq!(direct["result"]["content"][0]["text"], text);
            assert_eq!(direct["result"]["structuredContent"]["state"], json!([[3, 2, 1], [], []]));
            assert!(direct["result"]["structuredContent"].get("text").is_none(), "the text is content, not data");
        }
    }

    #[test]
    fn a_note_follows_the_text_and_errors_stay_short() {
        let (plugin, tool) = hanoi(&Default::default());
        let Reply::Value { value, plugin, tool, .. } = reply(&plugin, tool, &snapshot("the game")) else { unreachable!() };
        let noted = Answer::of(Reply::Value { value, plugin, tool, note: Some("Join code: x.".into()) }).into_result();
        assert_eq!(noted.content[0].as_text().unwrap().text, "the game\n\nJoin code: x.");
        let error = Answer::error("y".repeat(10_000)).into_result();
        assert!(error.is_error == Some(true) && error.content[0].as_text().unwrap().text.len() < 4100);
    }

    #[test]
    fn an_answer_over_the_limit_is_refused_both_ways() {
        let mut config = crate::config::Config::default();
        config.limits.max_result_bytes = 100;
        let (small, tool) = hanoi(&config);
        let direct: Value = serde_json::from_slice(
            &Answer::of(reply(&small, tool, &snapshot(&"x".repeat(200)))).into_response(RequestId::Number(1), Peer::Legacy),
        )
        .unwrap();
        assert_eq!(direct["result"]["isError"], true);
        assert!(direct["result"]["content"][0]["text"].as_str().unwrap().contains("over this server's limit of 100 bytes"), "{direct}");
        let general = Answer::of(reply(&small, tool, &snapshot(&"x".repeat(200)))).into_result();
        assert_eq!(general.is_error, Some(true));
    }
}
