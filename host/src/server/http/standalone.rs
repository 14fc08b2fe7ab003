//! A session's GET and DELETE, answered at the gate: its standalone stream
//! (list changes, resource updates), a stream resumed from the last event
//! its client saw, and the session's end.
//!
//! Sessions belong to the protocols before 2026-07-28. Both methods check,
//! in order: the `MCP-Protocol-Version` header, when there is one (text, a
//! version this server knows: 400; one from 2026-07-28 on, whose clients
//! keep no session: 405); the `Mcp-Session-Id` header (400 without one);
//! the session (404 when it is not open). A GET must accept event streams
//! (406), and counts against the caps on open streams (429, `http::conns`).
//! A GET naming an event no stream of its session sent gets an empty
//! stream: an error would have an EventSource client ask again for ever.

use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Full};
use rmcp::model::ProtocolVersion;

use super::SessionId;
use super::checks::version_header;
use super::conns::ConnRef;
use super::events::{EVENT_STREAM, event_stream};
use super::guard::refuse;
use super::mcp_sessions::McpSessionError;
use super::media::accepts;
use super::{Gate, MCP_SESSION_ID, Response, json_answer, track};
use crate::server::jsonrpc;
use crate::session::Caller;

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

impl Gate {
    /// A GET of `/mcp`: the session's standalone stream, or the rest of
    /// the stream its `Last-Event-ID` names.
    pub(super) fn check_get(&self, parts: &http::request::Parts, caller: &Caller, conn: ConnRef) -> Response {
        if !accepts(&parts.headers, EVENT_STREAM) {
            let why = "a GET of /mcp is an MCP session's event stream: send `Accept: text/event-stream`";
            return refuse(StatusCode::NOT_ACCEPTABLE, why);
        }
        let id = match self.session_named(&parts.headers) {
            Ok(id) => id,
            Err(refusal) => return refusal,
        };
        let slot = match conn.stream(self.proxies.client(conn.address(), &parts.headers), caller.token()) {
            Ok(slot) => slot,
            Err(why) => return refuse(StatusCode::TOO_MANY_REQUESTS, &why.to_string()),
        };
        let last = parts.headers.get(LAST_EVENT_ID).and_then(|v| v.to_str().ok());
        let events = match self.sessions.stream(&id, last) {
            Ok(events) => events,
            Err(McpSessionError::NoSuchEvent { .. }) => Box::pin(futures_util::stream::empty()),
            Err(McpSessionError::NotFound(_)) => return no_such_session(&id),
        };
        track(event_stream(events.take_until(self.stopping.clone().cancelled_owned())), None, slot)
    }

    /// A DELETE of `/mcp`: the session ends (200).
    pub(super) fn check_delete(&self, parts: &http::request::Parts) -> Response {
        let id = match self.session_named(&parts.headers) {
            Ok(id) => id,
            Err(refusal) => return refusal,
        };
        if !self.sessions.close(&id) {
            return no_such_session(&id);
        }
        let mut response = http::Response::new(Full::new(Bytes::new()).boxed_unsync());
        *response.status_mut() = StatusCode::OK;
        response
    }

    /// The open session a GET or DELETE names, or its refusal.
    fn session_named(&self, headers: &HeaderMap) -> Result<SessionId, Response> {
        keeps_sessions(headers)?;
        let Some(id) = headers.get(&MCP_SESSION_ID).and_then(|v| v.to_str().ok()) else {
            let why = "name the MCP session in an Mcp-Session-Id header (its initialize answer gave it)";
            return Err(refuse(StatusCode::BAD_REQUEST, why));
        };
        let id = id.into();
        if !self.sessions.is_open(&id) {
            return Err(no_such_session(&id));
        }
        Ok(id)
    }
}

/// Refuses an `MCP-Protocol-Version` that is not text, not known here, or
/// of a protocol without sessions (2026-07-28 on). Without the header, the
/// client speaks 2025-03-26.
fn keeps_sessions(headers: &HeaderMap) -> Result<(), Response> {
    let version = version_header(headers, false).map_err(|refusal| refusal.answer(None))?;
    if let Some(version) = version.filter(|v| *v >= ProtocolVersion::NO_INITIALIZE.as_str()) {
        let why = format!(
            "protocol {version} keeps no MCP sessions: there is no session stream to GET or session to DELETE; send requests with POST"
        );
        let mut refusal = refuse(StatusCode::METHOD_NOT_ALLOWED, &why);
        refusal.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
        return Err(refusal);
    }
    Ok(())
}

pub(super) fn no_such_session(id: &SessionId) -> Response {
    let reply = jsonrpc::error_reply(serde_json::Value::Null, -32600, McpSessionError::NotFound(id.clone()).to_string());
    json_answer(StatusCode::NOT_FOUND, reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(v: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("mcp-protocol-version", HeaderValue::from_static(v));
        h
    }

    #[test]
    fn only_protocols_with_sessions_get_or_delete_one() {
        assert!(keeps_sessions(&HeaderMap::new()).is_ok(), "no header: 2025-03-26");
        assert!(keeps_sessions(&version("2025-06-18")).is_ok());
        assert!(keeps_sessions(&version("2025-11-25")).is_ok());
        assert_eq!(keeps_sessions(&version("1999-01-01")).unwrap_err().status(), StatusCode::BAD_REQUEST);
        let later = keeps_sessions(&version("2026-07-28")).unwrap_err();
        assert_eq!((later.status(), later.headers()[header::ALLOW].to_str().unwrap()), (StatusCode::METHOD_NOT_ALLOWED, "POST"));
    }
}
