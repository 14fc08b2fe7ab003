//! What a POST's protocol headers say, checked against its body before
//! anything runs, and which lifecycle the request takes: an MCP session's
//! (the protocols before 2026-07-28, and every `initialize`) or a
//! stateless client's (2026-07-28, whose requests each carry the protocol
//! version and the client's capabilities in their `_meta`).
//!
//! The checks, in order, each refusal a JSON-RPC error with the request's
//! id and status 400:
//! - `MCP-Protocol-Version`: text, and a version this server knows (an
//!   unknown one is let through when the request names its version in its
//!   `_meta`, which is then the one that counts) (-32600);
//! - an `initialize`'s header is its body's `protocolVersion` (-32600);
//! - any other request's `_meta` version and header agree (-32020, and
//!   the header must be there when the `_meta` names one); a request that
//!   names 2026-07-28 in its header, and `server/discover`, carry the
//!   `_meta` that protocol requires (-32602);
//! - from 2026-07-28 on, the standard headers (SEP-2243): `Mcp-Method`
//!   once and the body's method, `Mcp-Name` once and the body's tool or
//!   prompt name or resource URI, plain or Base64-wrapped (-32020).
//!   Ludus's tool schemas mark no argument as a header (`x-mcp-header`),
//!   so there is no `Mcp-Param-*` header to check.

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use http::{HeaderMap, HeaderName, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, GetMeta, JsonRpcRequest, ProtocolVersion, RequestId};

use super::{Response, json_answer};
use crate::server::jsonrpc;

pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// How a header value that cannot travel as it is arrives (SEP-2243).
const BASE64_START: &str = "=?base64?";
const BASE64_END: &str = "?=";

/// Which lifecycle a request takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// An MCP session's: `initialize` opens one, and every later message names it.
    Session,
    /// A stateless client's (protocol 2026-07-28): no session.
    Stateless,
}

/// A request its headers do not let through: the status, the JSON-RPC
/// error code and what is wrong.
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: i32,
    pub why: String,
}

impl Refusal {
    fn bad(code: ErrorCode, why: String) -> Refusal {
        Refusal { status: StatusCode::BAD_REQUEST, code: code.0, why }
    }

    /// The refusal as the answer to the request with `id` (none: a notification).
    pub fn answer(self, id: Option<&RequestId>) -> Response {
        json_answer(self.status, jsonrpc::error_reply(id, self.code, self.why))
    }
}

/// The request's lifecycle, once its protocol headers pass the checks above.
pub fn lifecycle(headers: &HeaderMap, message: &ClientJsonRpcMessage) -> Result<Lifecycle, Refusal> {
    let request = match message {
        ClientJsonRpcMessage::Request(request) => Some(request),
        _ => None,
    };
    let named = request.and_then(|r| r.request.get_meta().protocol_version());
    let header = version_header(headers, named.is_some())?;
    if let Some(request) = request {
        match &request.request {
            ClientRequest::InitializeRequest(init) => {
                let body = init.params.protocol_version.as_str();
                if let Some(sent) = header.filter(|sent| *sent != body) {
                    let why = format!("the MCP-Protocol-Version header ({sent}) differs from initialize's protocolVersion ({body})");
                    return Err(Refusal::bad(ErrorCode::INVALID_REQUEST, why));
                }
            }
            _ => meta_agrees(header, named.as_ref(), request)?,
        }
    }
    if header.is_some_and(|v| v >= ProtocolVersion::STANDARD_HEADERS.as_str()) {
        standard_headers(headers, message)?;
    }
    let Some(request) = request else {
        // A notification or a client's answer: the version its header names.
        return Ok(lifecycle_of(header.unwrap_or(ProtocolVersion::V_2025_03_26.as_str())));
    };
    if let ClientRequest::InitializeRequest(_) = request.request {
        // Whatever version it names: only sessions have a handshake.
        return Ok(Lifecycle::Session);
    }
    // The protocol version is one of 2026-07-28's keys: without it (a
    // session's request) there is nothing more to look for.
    if named.is_some() && request.request.get_meta().missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty() {
        return Ok(Lifecycle::Stateless);
    }
    let version = named.as_ref().map(ProtocolVersion::as_str).or(header).unwrap_or(ProtocolVersion::V_2025_03_26.as_str());
    Ok(lifecycle_of(version))
}

fn lifecycle_of(version: &str) -> Lifecycle {
    if version < ProtocolVersion::NO_INITIALIZE.as_str() { Lifecycle::Session } else { Lifecycle::Stateless }
}

/// The `MCP-Protocol-Version` header's version, if there is one: it must be
/// text, and known here unless the request names its version in `_meta`.
pub fn version_header(headers: &HeaderMap, named_in_meta: bool) -> Result<Option<&str>, Refusal> {
    let Some(value) = headers.get(MCP_PROTOCOL_VERSION) else { return Ok(None) };
    let Ok(version) = value.to_str() else {
        return Err(Refusal::bad(ErrorCode::INVALID_REQUEST, "the MCP-Protocol-Version header is not text".into()));
    };
    if !named_in_meta && !is_known(version) {
        let why = format!("unsupported MCP-Protocol-Version {version}; this server speaks {}", known());
        return Err(Refusal::bad(ErrorCode::INVALID_REQUEST, why));
    }
    Ok(Some(version))
}

pub fn is_known(version: &str) -> bool {
    ProtocolVersion::KNOWN_VERSIONS.iter().any(|k| k.as_str() == version)
}

/// A request's `_meta` names a version this server speaks, and agrees
/// with its header; a request that needs 2026-07-28's `_meta` (its header
/// or `_meta` names that protocol, or it is `server/discover`) has it whole.
fn meta_agrees(header: Option<&str>, named: Option<&ProtocolVersion>, request: &JsonRpcRequest<ClientRequest>) -> Result<(), Refusal> {
    let meta = request.request.get_meta();
    if let Some(named) = named
        && !is_known(named.as_str())
    {
        let why = format!("unsupported protocol version {} in the request's _meta; this server speaks {}", named.as_str(), known());
        return Err(Refusal::bad(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, why));
    }
    let modern = |v: &str| v >= ProtocolVersion::NO_INITIALIZE.as_str();
    let needs_meta = matches!(request.request, ClientRequest::DiscoverRequest(_))
        || header.is_some_and(modern)
        || named.is_some_and(|v| modern(v.as_str()));
    let missing = if needs_meta { meta.missing_required_keys(&ProtocolVersion::V_2026_07_28) } else { Vec::new() };
    if !missing.is_empty() {
        let why =
            format!("a request of protocol {} carries {} in its _meta", ProtocolVersion::V_2026_07_28.as_str(), missing.join(" and "));
        return Err(Refusal::bad(ErrorCode::INVALID_PARAMS, why));
    }
    match (named, header) {
        (Some(named), None) => {
            let why = format!("the request's _meta names protocol {}: send it in an MCP-Protocol-Version header too", named.as_str());
            Err(Refusal::bad(ErrorCode::HEADER_MISMATCH, why))
        }
        (Some(named), Some(header)) if named.as_str() != header => {
            let why = format!(
                "the MCP-Protocol-Version header ({header}) differs from the protocol the request's _meta names ({})",
                named.as_str()
            );
            Err(Refusal::bad(ErrorCode::HEADER_MISMATCH, why))
        }
        _ => Ok(()),
    }
}

/// The versions this server speaks, for a refusal's text.
fn known() -> String {
    ProtocolVersion::KNOWN_VERSIONS.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
}

/// SEP-2243's headers agree with the body: `Mcp-Method` (an `initialize`
/// may leave it out), and `Mcp-Name` where the method names something.
fn standard_headers(headers: &HeaderMap, message: &ClientJsonRpcMessage) -> Result<(), Refusal> {
    let mismatch = |why: String| Refusal::bad(ErrorCode::HEADER_MISMATCH, why);
    let (method, name) = match message {
        ClientJsonRpcMessage::Request(request) => (request.request.method().to_string(), named(&request.request)),
        // rmcp's notification type does not say its method; its JSON does.
        ClientJsonRpcMessage::Notification(notification) => {
            let json = serde_json::to_value(notification).unwrap_or_default();
            (json["method"].as_str().unwrap_or_default().to_string(), None)
        }
        _ => return Ok(()),
    };
    match one(headers, &MCP_METHOD).map_err(mismatch)? {
        // The handshake may leave it out: clients send it once a version is agreed on.
        None if method == "initialize" => {}
        None => return Err(mismatch(format!("send the request's method in an Mcp-Method header (`Mcp-Method: {method}`)"))),
        Some(sent) if sent != method => {
            return Err(mismatch(format!("the Mcp-Method header ({sent}) is not the body's method ({method})")));
        }
        Some(_) => {}
    }
    let Some(name) = name else { return Ok(()) };
    let Some(sent) = one(headers, &MCP_NAME).map_err(mismatch)? else {
        return Err(mismatch(format!("a {method} request names `{name}` in an Mcp-Name header too")));
    };
    let sent = decoded(sent).ok_or_else(|| mismatch(format!("the Mcp-Name header ({sent}) is not valid Base64 of UTF-8 text")))?;
    if sent != name {
        return Err(mismatch(format!("the Mcp-Name header ({sent}) is not what the body names ({name})")));
    }
    Ok(())
}

/// What a request names for its `Mcp-Name` header: a tool, a prompt, a resource.
fn named(request: &ClientRequest) -> Option<&str> {
    match request {
        ClientRequest::CallToolRequest(call) => Some(call.params.name.as_ref()),
        ClientRequest::GetPromptRequest(get) => Some(get.params.name.as_str()),
        ClientRequest::ReadResourceRequest(read) => Some(read.params.uri.as_str()),
        #[allow(deprecated)]
        ClientRequest::SubscribeRequest(subscribe) => Some(subscribe.params.uri.as_str()),
        #[allow(deprecated)]
        ClientRequest::UnsubscribeRequest(unsubscribe) => Some(unsubscribe.params.uri.as_str()),
        _ => None,
    }
}

/// A header value as sent: Base64-wrapped (`=?base64?…?=`) or plain.
fn decoded(value: &str) -> Option<std::borrow::Cow<'_, str>> {
    let Some(inner) = value.strip_prefix(BASE64_START).and_then(|v| v.strip_suffix(BASE64_END)) else {
        return Some(value.into());
    };
    String::from_utf8(BASE64_STANDARD.decode(inner).ok()?).ok().map(Into::into)
}

/// The header's one value as text, if it is there; refused when it is
/// there twice (a proxy might route on the other) or is not text.
fn one<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(format!("the {name} header is sent twice; send it once"));
    }
    value.to_str().map(Some).map_err(|_| format!("the {name} header is not text"))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn message(body: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(body).unwrap()
    }

    fn call(meta: serde_json::Value) -> ClientJsonRpcMessage {
        message(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hanoi_get_state", "arguments": {}, "_meta": meta}}))
    }

    fn modern() -> serde_json::Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    const STATELESS: [(&str, &str); 3] =
        [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "hanoi_get_state")];

    fn refusal(h: &[(&'static str, &'static str)], m: &ClientJsonRpcMessage) -> (u16, i32, String) {
        let r = lifecycle(&headers(h), m).unwrap_err();
        (r.status.as_u16(), r.code, r.why)
    }

    #[test]
    fn sessions_are_for_the_protocols_with_a_handshake() {
        assert_eq!(lifecycle(&headers(&[]), &call(json!({}))).unwrap(), Lifecycle::Session, "no header: 2025-03-26");
        assert_eq!(lifecycle(&headers(&[("mcp-protocol-version", "2025-11-25")]), &call(json!({}))).unwrap(), Lifecycle::Session);
        assert_eq!(lifecycle(&headers(&STATELESS), &call(modern())).unwrap(), Lifecycle::Stateless);
        let init = message(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2026-07-28",
            "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}));
        assert_eq!(lifecycle(&headers(&[("mcp-protocol-version", "2026-07-28")]), &init).unwrap(), Lifecycle::Session);
        let initialized = message(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(lifecycle(&headers(&[("mcp-protocol-version", "2025-06-18")]), &initialized).unwrap(), Lifecycle::Session);
    }

    #[test]
    fn each_protocol_header_is_checked_against_the_body() {
        let (status, code, why) = refusal(&[("mcp-protocol-version", "1999-01-01")], &call(json!({})));
        assert_eq!((status, code), (400, -32600));
        assert!(why.contains("1999-01-01") && why.contains("2025-11-25"), "{why}");
        let init = message(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}));
        assert_eq!(refusal(&[("mcp-protocol-version", "2025-11-25")], &init).1, -32600);
        let (_, code, why) = refusal(&[("mcp-protocol-version", "2026-07-28"), STATELESS[1], STATELESS[2]], &call(json!({})));
        assert_eq!(code, -32602);
        assert!(why.contains("io.modelcontextprotocol/protocolVersion"), "{why}");
        assert_eq!(refusal(&[STATELESS[1], STATELESS[2]], &call(modern())).1, -32020, "a _meta version needs the header");
        assert_eq!(refusal(&[("mcp-protocol-version", "2025-11-25")], &call(modern())).1, -32020);
        let discover = message(json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {}}));
        assert_eq!(refusal(&[], &discover).1, -32602, "discover names its protocol");
    }

    #[test]
    fn the_standard_headers_name_the_bodys_method_and_name() {
        let with = |replaced: (&'static str, &'static str)| -> Vec<(&'static str, &'static str)> {
            let mut h: Vec<_> = STATELESS.iter().copied().filter(|(n, _)| *n != replaced.0).collect();
            h.push(replaced);
            h
        };
        assert!(lifecycle(&headers(&with(("mcp-name", "=?base64?aGFub2lfZ2V0X3N0YXRl?="))), &call(modern())).is_ok(), "Base64");
        let refused = [
            with(("mcp-name", "hanoi_execute_move")),
            with(("mcp-name", "=?base64?aGFub2lfZXhlY3V0ZV9tb3Zl?=")),
            with(("mcp-name", "=?base64?not base64?=")),
            with(("mcp-method", "tools/list")),
            STATELESS[..2].to_vec(),
            vec![STATELESS[0], STATELESS[2]],
            [&STATELESS[..], &[STATELESS[2]]].concat(),
        ];
        for h in refused {
            let (status, code, why) = refusal(&h, &call(modern()));
            assert_eq!((status, code), (400, -32020), "{h:?}: {why}");
        }
        let list = message(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": modern()}}));
        assert!(lifecycle(&headers(&[STATELESS[0], ("mcp-method", "tools/list")]), &list).is_ok(), "no name for a list");
        let init = message(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2026-07-28",
            "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}));
        assert_eq!(refusal(&[STATELESS[0], ("mcp-method", "tools/call")], &init).1, -32020, "a stated method must be the body's");
    }

    #[test]
    fn a_version_the_meta_names_must_be_one_this_server_speaks() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
        let h = [("mcp-protocol-version", "2099-01-01"), STATELESS[1], STATELESS[2]];
        let (status, code, why) = refusal(&h, &call(meta));
        assert_eq!((status, code), (400, -32022));
        assert!(why.contains("2099-01-01") && why.contains("2026-07-28"), "{why}");
        let incapable = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        assert_eq!(refusal(&STATELESS, &call(incapable)).1, -32602, "2026-07-28 names the client's capabilities too");
    }
}
