//! A stateless client's requests (protocol 2026-07-28: no session, the
//! protocol version and the client's capabilities in each request's
//! `_meta`), answered by the gate once `http::checks` let them through:
//! - a tool call, `server/discover`, and the requests that only read (the
//!   lists, a resource, a prompt, a completion), on the direct lane, as
//!   one JSON body, or, when the call sends something before its answer
//!   (progress, the log lines its `_meta` asks for), as an event stream;
//! - `subscriptions/listen`, as the stream of what it asked to hear
//!   (`Ludus::listen`);
//! - notifications: accepted (202), nothing to act on (a stateless call
//!   is cancelled by closing its connection);
//! - any other method (`ping`, `logging/setLevel`, `resources/subscribe`:
//!   2026-07-28 has none of them): -32601, 404.
//!
//! A game that asks its client something (sampling, elicitation) during a
//! stateless call is told that it cannot: 2026-07-28 has the server ask
//! nothing while a request runs (`mcp::client`).

use bytes::Bytes;
use futures_util::StreamExt;
use http::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, JsonRpcRequest};
use tokio_util::sync::CancellationToken;

use super::conns::Answering;
use super::events::{Answered, CallEvents, Event, answered_alone};
use super::{Gate, Response, json_answer, whole};
use crate::mcp::{Direct, Ludus, Peer};
use crate::server::jsonrpc;
use crate::session::Caller;

impl Gate {
    /// A stateless client's message, answered.
    pub(super) async fn answer_stateless(&self, message: ClientJsonRpcMessage, caller: Caller, answering: Answering) -> Response {
        let request = match message {
            ClientJsonRpcMessage::Request(request) => request,
            ClientJsonRpcMessage::Notification(_) => return whole(StatusCode::ACCEPTED, "application/json", Bytes::new()),
            _ => {
                let why = "an answer to a question belongs to the MCP session that was asked; a client without a session is asked nothing";
                return json_answer(
                    StatusCode::BAD_REQUEST,
                    jsonrpc::error_reply(serde_json::Value::Null, ErrorCode::INVALID_REQUEST.0, why.into()),
                );
            }
        };
        if let ClientRequest::SubscriptionsListenRequest(listen) = &request.request {
            let listening = self.ludus.listen(request.id.clone(), &listen.params.notifications, &caller).await;
            return self.respond(Answered::Events(Box::pin(listening.map(Event::of))), None, answering);
        }
        if !offered(&request.request) {
            let why = format!("{}: no such method for a client without an MCP session (protocol 2026-07-28)", request.request.method());
            return json_answer(StatusCode::NOT_FOUND, jsonrpc::error_reply(&request.id, ErrorCode::METHOD_NOT_FOUND.0, why));
        }
        self.respond(answer(&self.ludus, request, caller).await, None, answering)
    }
}

/// The methods a stateless client may call: every one the official Python
/// SDK's default client sends.
fn offered(request: &ClientRequest) -> bool {
    matches!(
        request,
        ClientRequest::CallToolRequest(_)
            | ClientRequest::ListToolsRequest(_)
            | ClientRequest::DiscoverRequest(_)
            | ClientRequest::ListPromptsRequest(_)
            | ClientRequest::ListResourcesRequest(_)
            | ClientRequest::ListResourceTemplatesRequest(_)
            | ClientRequest::ReadResourceRequest(_)
            | ClientRequest::GetPromptRequest(_)
            | ClientRequest::CompleteRequest(_)
    )
}

/// A stateless tool call, `server/discover` or request that only reads,
/// answered as one JSON body (`resultType` and all, as a 2026-07-28 client
/// reads it), or, when it sends something before its answer (progress,
/// the log lines its `_meta` asks for), as an event stream. A client that
/// goes away drops the future or the stream, which cancels the call.
async fn answer(ludus: &Ludus, request: JsonRpcRequest<ClientRequest>, caller: Caller) -> Answered {
    if let ClientRequest::DiscoverRequest(_) = request.request {
        return Answered::Json(Some(Direct::Result(request.id, ludus.discovered()).into_line(Peer::Stateless)));
    }
    // No session: no log level set, no question's answer to wait for.
    const NO_SESSION: &str = "";
    if !ludus.answers_alone(NO_SESSION, &request.request) {
        let events = CallEvents::of(ludus, caller, NO_SESSION, request, Peer::Stateless, CancellationToken::new());
        return Answered::Events(Box::pin(events));
    }
    answered_alone(ludus, caller, NO_SESSION, request, Peer::Stateless, CancellationToken::new()).await
}
