//! `ludus:plugin/client`: a game talks to the client of the current call —
//! progress, its model (sampling), its user (elicitation); and
//! `ludus:plugin/watchers`, through which it says a resource changed.
//!
//! The client is reached through [`ClientLink`], which the protocol layer
//! implements for each call, so this module speaks no MCP: it turns the
//! contract's records into JSON-RPC params and the client's JSON answer
//! back into records, and waits. Waiting blocks the guest's thread (the call
//! runs on the blocking pool from the start, `Plugin::asks_client`); the
//! time waited is credited back to the call's CPU budget (`waited`).

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::content::{block_json, block_of};
use super::host::HostCtx;
use super::link::Ask;
use crate::runtime::bindings::ludus::plugin::client::{self, ElicitReply, Message, Role, SamplingReply, SamplingRequest};
use crate::runtime::bindings::ludus::plugin::content;
use crate::runtime::bindings::ludus::plugin::watchers;

impl content::Host for HostCtx {}

impl watchers::Host for HostCtx {
    fn changed(&mut self, uri: String) {
        // No subscriber is not an error.
        let _ = self.resource_changes.send((self.plugin.to_string(), uri));
    }
}

impl client::Host for HostCtx {
    fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        if let Some(link) = &self.call.client {
            link.progress(done, total, message);
        }
    }

    fn sample(&mut self, request: SamplingRequest) -> Result<SamplingReply, String> {
        let mut params = json!({
            "messages": request.messages.iter().map(message_json).collect::<Vec<_>>(),
            "maxTokens": request.max_tokens,
        });
        if let Some(system) = request.system_prompt {
            params["systemPrompt"] = system.into();
        }
        if let Some(t) = request.temperature {
            params["temperature"] = f64::from(t).into();
        }
        let answer = self.ask(Ask::Sampling, params)?;
        let content = match &answer["content"] {
            // Newer clients may answer with several blocks: the first is the reply.
            Value::Array(blocks) => blocks.first().cloned().unwrap_or(Value::Null),
            one => one.clone(),
        };
        Ok(SamplingReply {
            role: if answer["role"] == "user" { Role::User } else { Role::Assistant },
            content: block_of(&content)
                .ok_or_else(|| format!("the client's model answered with content this host cannot read: {content}"))?,
            model: answer["model"].as_str().unwrap_or_default().to_string(),
            stop_reason: answer["stopReason"].as_str().map(str::to_string),
        })
    }

    fn elicit(&mut self, message: String, schema: String) -> Result<ElicitReply, String> {
        let schema: Value = serde_json::from_str(&schema).map_err(|e| format!("the form's schema is not JSON: {e}"))?;
        if schema["type"] != "object" || !schema["properties"].is_object() {
            return Err("the form's schema must be an object schema with `properties`".into());
        }
        let answer = self.ask(Ask::Elicitation, json!({"message": message, "requestedSchema": schema}))?;
        match answer["action"].as_str() {
            Some("accept") => Ok(ElicitReply::Accept(answer.get("content").cloned().unwrap_or_else(|| json!({})).to_string())),
            Some("decline") => Ok(ElicitReply::Decline),
            Some("cancel") => Ok(ElicitReply::Cancel),
            _ => Err(format!("the client answered the form with no known action: {answer}")),
        }
    }
}

impl HostCtx {
    /// Sends `params` to the call's client and waits for its answer.
    fn ask(&mut self, ask: Ask, params: Value) -> Result<Value, String> {
        let Some(link) = self.call.client.clone() else {
            return Err(format!("there is no client to ask: {} is only possible during a tool call", ask.capability()));
        };
        if let Some(why) = link.why_not(ask) {
            return Err(why);
        }
        let answers = link.send(ask, params)?;
        let limit = self.call.ask_limit;
        let started = Instant::now();
        let outcome = loop {
            match answers.recv_timeout(Duration::from_millis(100)) {
                Ok(answer) => break answer,
                Err(RecvTimeoutError::Disconnected) => break Err("the client went away before it answered".into()),
                Err(RecvTimeoutError::Timeout) if link.cancelled() => break Err("the call was cancelled".into()),
                Err(RecvTimeoutError::Timeout) if started.elapsed() >= limit => {
                    break Err(format!("the client did not answer within {} s", limit.as_secs()));
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        };
        self.waited += started.elapsed();
        outcome.map_err(|e| format!("{} failed: {e}", ask.method()))
    }
}

fn message_json(m: &Message) -> Value {
    json!({"role": role_name(m.role), "content": block_json(&m.content)})
}

pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}
