//! Which requests the gate answers on the direct lane, and its answer to a
//! stateless client's.
//!
//! The gate answers a request itself only when rmcp's service would take
//! it as it is; everything else goes to rmcp, which refuses it with its own
//! status and text, or (a request it accepts) runs it. So the rules here
//! are a strict part of rmcp's checks, never a looser copy of them:
//! - a session's request (`answers_here`), answered through
//!   `McpSessions::answer`; its `initialize` (`opens_here`) and its
//!   notifications (`headers_taken`);
//! - a stateless 2026-07-28 tool call, `server/discover` or request that
//!   only reads (`answers_stateless`), every one the official Python SDK's
//!   default client sends, answered by `answer_stateless` (a call of a
//!   game that may ask its client something excepted: rmcp relays the
//!   question).

use http::{HeaderMap, HeaderName, StatusCode, header};
use rmcp::model::{ClientRequest, GetMeta, JsonRpcRequest, ProtocolVersion};
use tokio_util::sync::CancellationToken;

use super::events::{Answered, CallEvents, EVENT_STREAM, answered_alone};
use crate::mcp::{Direct, Ludus, Peer};
use crate::session::Caller;

const JSON: &str = "application/json";
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Whether a session's request may be answered by the gate rather than
/// by rmcp's service: its headers are taken (`headers_taken`), its
/// `_meta` names no protocol version, and it is not `server/discover`
/// (whose metadata rmcp checks).
pub fn answers_here(headers: &HeaderMap, request: &JsonRpcRequest<ClientRequest>) -> bool {
    headers_taken(headers)
        && request.request.get_meta().protocol_version().is_none()
        && !matches!(request.request, ClientRequest::DiscoverRequest(_))
}

/// Whether an `initialize` may open a session at the gate: it sends JSON
/// and accepts JSON and event streams, and its `MCP-Protocol-Version`, if
/// it names one, is the body's, known and before 2026-07-28 (rmcp refuses
/// a header that differs from the body, and checks the standard headers
/// of 2026-07-28).
pub fn opens_here(headers: &HeaderMap, request: &JsonRpcRequest<ClientRequest>) -> bool {
    let ClientRequest::InitializeRequest(init) = &request.request else { return false };
    let version = match headers.get(MCP_PROTOCOL_VERSION) {
        None => true,
        Some(_) => one(headers, &MCP_PROTOCOL_VERSION)
            .is_some_and(|v| v == init.params.protocol_version.as_str() && v < ProtocolVersion::STANDARD_HEADERS.as_str() && is_known(v)),
    };
    media_types_taken(headers) && version
}

/// Whether a session's request, notification or answer to a question is
/// sent as rmcp's service takes it without checking 2026-07-28's
/// standard headers: JSON, accepting JSON and event streams, and no
/// `MCP-Protocol-Version` from 2026-07-28 on or unknown.
pub fn headers_taken(headers: &HeaderMap) -> bool {
    let version = match headers.get(MCP_PROTOCOL_VERSION).map(|v| v.to_str()) {
        None => true,
        Some(Ok(v)) => v < ProtocolVersion::STANDARD_HEADERS.as_str() && is_known(v),
        Some(Err(_)) => false,
    };
    media_types_taken(headers) && version
}

/// Whether a request without a session is a stateless tool call,
/// `server/discover`, or a request that only reads (the lists, a
/// resource, a prompt, a completion) that rmcp's service would take as it
/// is: the media types as above; one `MCP-Protocol-Version` of 2026-07-28
/// or later that rmcp knows, the same as the `_meta`'s, whose other
/// required key (the client's capabilities) is there too; and the standard
/// headers (SEP-2243) with exactly the body's method and, for a tool call,
/// a resource or a prompt, its name (a resource's URI), as plain text (a
/// Base64-wrapped one is left to rmcp's decoding). Ludus's tool schemas mark no argument as a header
/// (`x-mcp-header`), so no `Mcp-Param-*` header is checked by rmcp either.
pub fn answers_stateless(headers: &HeaderMap, request: &JsonRpcRequest<ClientRequest>) -> bool {
    let (method, name) = match &request.request {
        ClientRequest::CallToolRequest(call) => ("tools/call", Some(call.params.name.as_ref())),
        ClientRequest::ListToolsRequest(_) => ("tools/list", None),
        ClientRequest::DiscoverRequest(_) => ("server/discover", None),
        ClientRequest::ListPromptsRequest(_) => ("prompts/list", None),
        ClientRequest::ListResourcesRequest(_) => ("resources/list", None),
        ClientRequest::ListResourceTemplatesRequest(_) => ("resources/templates/list", None),
        ClientRequest::ReadResourceRequest(read) => ("resources/read", Some(read.params.uri.as_str())),
        ClientRequest::GetPromptRequest(get) => ("prompts/get", Some(get.params.name.as_str())),
        ClientRequest::CompleteRequest(_) => ("completion/complete", None),
        // Not `ping`: 2026-07-28 has none, and rmcp's handler says so (-32601,
        // 404); nor `subscriptions/listen`, whose stream rmcp keeps.
        _ => return false,
    };
    let Some(version) = one(headers, &MCP_PROTOCOL_VERSION) else { return false };
    let meta = request.request.get_meta();
    media_types_taken(headers)
        && version >= ProtocolVersion::STANDARD_HEADERS.as_str()
        && is_known(version)
        && meta.protocol_version().is_some_and(|v| v.as_str() == version)
        && meta.missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty()
        && one(headers, &MCP_METHOD) == Some(method)
        && name.is_none_or(|name| !name.starts_with(BASE64_WRAPPED) && one(headers, &MCP_NAME) == Some(name))
}

/// How a header value wrapped in Base64 begins (SEP-2243): rmcp decodes
/// such an `Mcp-Name` before comparing it with the body, so a body value
/// that begins so is left to it.
const BASE64_WRAPPED: &str = "=?base64?";

/// A stateless tool call, `server/discover` or request that only reads
/// (`answers_stateless`), answered as one JSON body (`resultType` and all,
/// as a 2026-07-28 client reads it), or, when it sends something before
/// its answer (progress, the log lines its `_meta` asks for), as an event
/// stream; the request back for rmcp's service when its game may ask its
/// client something, which rmcp relays. A client that goes away drops the
/// future or the stream, which cancels the call.
pub async fn answer_stateless(
    ludus: &Ludus,
    request: JsonRpcRequest<ClientRequest>,
    caller: Caller,
) -> Result<Answered, JsonRpcRequest<ClientRequest>> {
    if let ClientRequest::DiscoverRequest(_) = request.request {
        return Ok(Answered::Json(Some(Direct::Result(request.id, ludus.discovered()).into_line(Peer::Stateless))));
    }
    // No session: no log level set, no question's answer to wait for.
    const NO_SESSION: &str = "";
    if !ludus.answers_alone(NO_SESSION, &request.request) {
        if ludus.asks_its_client(&request.request) {
            return Err(request);
        }
        let events = CallEvents::of(ludus, caller, NO_SESSION, request, Peer::Stateless, CancellationToken::new());
        return Ok(Answered::Events(Box::pin(events)));
    }
    Ok(answered_alone(ludus, caller, NO_SESSION, request, Peer::Stateless, CancellationToken::new()).await)
}

/// It sends JSON and accepts both JSON and event streams, as rmcp's
/// service requires, quality weights read. An Accept header with quoted
/// strings is left to rmcp's reading.
fn media_types_taken(headers: &HeaderMap) -> bool {
    usual_media_types(headers) || media_types_read(headers)
}

/// What the SDKs' clients send, compared whole: a JSON body, and one
/// Accept of both types.
fn usual_media_types(headers: &HeaderMap) -> bool {
    const BOTH: &[u8] = b"application/json, text/event-stream";
    let mut accept = headers.get_all(header::ACCEPT).iter();
    headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes() == JSON.as_bytes())
        && accept.next().is_some_and(|v| v.as_bytes() == BOTH)
        && accept.next().is_none()
}

/// Why a POST's media types cannot be served, if they cannot: its client
/// must accept JSON and event streams (406), and send JSON (415). An Accept
/// header with quoted strings is left to rmcp's reading.
pub fn media_types_refused(headers: &HeaderMap) -> Option<(StatusCode, &'static str)> {
    if usual_media_types(headers) {
        return None;
    }
    if accepts_both(headers) == Some(false) {
        let why = "an MCP client accepts both application/json and text/event-stream: send `Accept: application/json, text/event-stream`";
        return Some((StatusCode::NOT_ACCEPTABLE, why));
    }
    if !sends_json(headers) {
        return Some((StatusCode::UNSUPPORTED_MEDIA_TYPE, "a request to /mcp is JSON: send `Content-Type: application/json`"));
    }
    None
}

/// Whether the Accept headers take `media_type`: one of their media ranges
/// is it (any case) without a zero quality.
pub fn accepts(headers: &HeaderMap, media_type: &str) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|range| {
        let mut parts = range.split(';').map(str::trim);
        let essence = parts.next().unwrap_or_default();
        let refused = parts
            .any(|param| param.split_once('=').is_some_and(|(name, q)| name.trim().eq_ignore_ascii_case("q") && is_zero_weight(q.trim())));
        essence.eq_ignore_ascii_case(media_type) && !refused
    })
}

/// Whether a quality weight is zero as RFC 9110 writes it (`0`, `0.`,
/// `0.0` to `0.000`). A weight outside its grammar is ignored, not read as
/// zero: the client listed the type, and is served it.
fn is_zero_weight(q: &str) -> bool {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    whole == "0" && fraction.len() <= 3 && fraction.bytes().all(|b| b == b'0')
}

/// The body is JSON, by its Content-Type's media type.
fn sends_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
        essence.trim_ascii().eq_ignore_ascii_case(JSON)
    })
}

/// The media types read as rmcp's service reads them (a strict part of
/// it): a JSON body, and an Accept that takes both types (quality weights
/// read), without quoted strings (left to rmcp's reading).
fn media_types_read(headers: &HeaderMap) -> bool {
    sends_json(headers) && accepts_both(headers) == Some(true)
}

/// Whether the Accept headers take both JSON and event streams; None when
/// they hold quoted strings, which are left to rmcp's reading.
fn accepts_both(headers: &HeaderMap) -> Option<bool> {
    let quoted = headers.get_all(header::ACCEPT).iter().any(|v| v.as_bytes().contains(&b'"'));
    (!quoted).then(|| accepts(headers, JSON) && accepts(headers, EVENT_STREAM))
}

pub fn is_known(version: &str) -> bool {
    ProtocolVersion::KNOWN_VERSIONS.iter().any(|k| k.as_str() == version)
}

/// The header's value when it is there exactly once, as text.
fn one<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then(|| value.to_str().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn call(meta: serde_json::Value) -> JsonRpcRequest<ClientRequest> {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "hanoi_get_state", "arguments": {}, "_meta": meta}});
        serde_json::from_value(call).unwrap()
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    const PLAIN: [(&str, &str); 3] = [
        ("content-type", "application/json; charset=utf-8"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];

    #[test]
    fn the_gate_answers_what_rmcps_service_would_take_and_leaves_the_rest_to_it() {
        assert!(answers_here(&headers(&PLAIN), &call(json!({}))));
        assert!(answers_here(&headers(&PLAIN[..2]), &call(json!({}))), "no version: 2025-03-26");
        assert!(answers_here(&headers(&[PLAIN[0], ("accept", "text/event-stream"), ("accept", "application/json")]), &call(json!({}))));
        assert!(answers_here(&headers(&[PLAIN[0], ("accept", "application/json;q=0.9, text/event-stream;q=0.8")]), &call(json!({}))));
        let others: [&[(&str, &str)]; 7] = [
            &[("content-type", "text/plain"), PLAIN[1]],
            &[PLAIN[0], ("accept", "application/json;profile=\"x\", text/event-stream")],
            &[PLAIN[0], ("accept", "application/json")],
            &[PLAIN[0], ("accept", "application/json, text/event-stream;q=0")],
            &[PLAIN[0], PLAIN[1], ("mcp-protocol-version", "2026-07-28")],
            &[PLAIN[0], PLAIN[1], ("mcp-protocol-version", "1999-01-01")],
            &[PLAIN[1]],
        ];
        for h in others {
            assert!(!answers_here(&headers(h), &call(json!({}))), "{h:?}");
        }
        let versioned = call(json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25"}));
        assert!(!answers_here(&headers(&PLAIN), &versioned), "a version in `_meta` is rmcp's to check");
    }

    #[test]
    fn a_post_that_does_not_accept_both_types_or_send_json_is_refused_here() {
        let refused = |h: &[(&'static str, &'static str)]| media_types_refused(&headers(h)).map(|(status, _)| status.as_u16());
        assert_eq!(refused(&PLAIN), None);
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json;q=0.9, text/event-stream;q=0.5")]), None, "weights above zero");
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json")]), Some(406));
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json, text/event-stream;q=0")]), Some(406));
        assert_eq!(refused(&[PLAIN[0]]), Some(406), "no Accept at all");
        assert_eq!(refused(&[PLAIN[0], ("accept", "application/json;x=\"a\"")]), None, "quoted strings: rmcp's reading");
        assert_eq!(refused(&[("content-type", "text/plain"), PLAIN[1]]), Some(415));
        assert_eq!(refused(&[PLAIN[1]]), Some(415), "no Content-Type at all");
        assert_eq!(refused(&[("content-type", "Application/JSON ; charset=utf-8"), PLAIN[1]]), None);
    }

    const STATELESS: [(&str, &str); 5] =
        [PLAIN[0], PLAIN[1], ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "hanoi_get_state")];

    fn meta() -> serde_json::Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
    }

    #[test]
    fn a_stateless_call_is_answered_here_only_with_every_standard_header_matching_its_body() {
        assert!(answers_stateless(&headers(&STATELESS), &call(meta())));
        let ping: JsonRpcRequest<ClientRequest> = serde_json::from_value(json!({"jsonrpc": "2.0", "id": 2, "method": "ping",
            "params": {"_meta": meta()}}))
        .unwrap();
        assert!(
            !answers_stateless(&headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "ping")]), &ping),
            "rmcp refuses it"
        );
        let list: JsonRpcRequest<ClientRequest> =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta()}})).unwrap();
        assert!(answers_stateless(&headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "tools/list")]), &list));
        let discover: JsonRpcRequest<ClientRequest> =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {"_meta": meta()}})).unwrap();
        assert!(answers_stateless(&headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "server/discover")]), &discover));
        let prompts: JsonRpcRequest<ClientRequest> =
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 4, "method": "prompts/list", "params": {"_meta": meta()}})).unwrap();
        assert!(answers_stateless(&headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "prompts/list")]), &prompts));
        let read = |uri: &str| -> JsonRpcRequest<ClientRequest> {
            serde_json::from_value(json!({"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": uri, "_meta": meta()}}))
                .unwrap()
        };
        let reading =
            |name: &'static str| headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "resources/read"), ("mcp-name", name)]);
        assert!(answers_stateless(&reading("chess://game/a/fen"), &read("chess://game/a/fen")));
        assert!(!answers_stateless(&reading("chess://game/b/fen"), &read("chess://game/a/fen")), "another resource named");
        assert!(!answers_stateless(
            &headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "resources/read")]),
            &read("x://y")
        ));
        assert!(!answers_stateless(&reading("=?base64?eDovL3k=?="), &read("=?base64?eDovL3k=?=")), "rmcp decodes such a name");
        let listen: JsonRpcRequest<ClientRequest> = serde_json::from_value(
            json!({"jsonrpc": "2.0", "id": 8, "method": "subscriptions/listen", "params": {"filter": {}, "_meta": meta()}}),
        )
        .unwrap();
        assert!(!answers_stateless(&headers(&[STATELESS[0], STATELESS[1], STATELESS[2], ("mcp-method", "subscriptions/listen")]), &listen));
        let with = |replaced: (&'static str, &'static str)| {
            let mut h: Vec<_> = STATELESS.iter().copied().filter(|(n, _)| *n != replaced.0).collect();
            h.push(replaced);
            headers(&h)
        };
        let others = [
            with(("mcp-name", "hanoi_execute_move")),
            with(("mcp-name", "=?base64?aGFub2lfZ2V0X3N0YXRl?=")),
            with(("mcp-method", "tools/list")),
            with(("mcp-protocol-version", "2025-11-25")),
            with(("mcp-protocol-version", "2099-01-01")),
            headers(&STATELESS[..4]),
            headers(&[STATELESS[0], STATELESS[1], STATELESS[2], STATELESS[4]]),
            headers(&[STATELESS[0], STATELESS[1], STATELESS[2], STATELESS[3], STATELESS[4], STATELESS[4]]),
            headers(&[STATELESS[0], ("accept", "application/json"), STATELESS[2], STATELESS[3], STATELESS[4]]),
        ];
        for h in others {
            assert!(!answers_stateless(&h, &call(meta())), "{h:?}");
        }
        let unversioned = call(json!({"io.modelcontextprotocol/clientCapabilities": {}}));
        let incapable = call(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
        for body in [unversioned, incapable, call(json!({}))] {
            assert!(!answers_stateless(&headers(&STATELESS), &body), "{:?}", body.request.get_meta());
        }
    }
}
