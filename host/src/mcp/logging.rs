//! MCP logging: what a game logs (`host.log`) during a call reaches the
//! calling client as `notifications/message` on that call's own stream, at
//! or above the level the client asked for (`wanted`). The server's own log
//! (stderr) gets every line as before.
// rmcp marks logging deprecated: a later protocol (SEP-2577) drops it, but
// the clients of 2025-11-25 and before, which Ludus serves, use it.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam, ProtocolVersion, RequestMetaObject};

use crate::session::LogSink;

/// The least level of the log lines a call's client wants, or None for
/// none. A 2026-07-28 request names it in its `_meta`
/// (`io.modelcontextprotocol/logLevel`), and without it gets none (the
/// server MUST NOT send them); for a client of an earlier protocol it is
/// the level its session set with `logging/setLevel` (`session_set`, kept
/// with the client, `client::Clients`), info until it sets one.
pub fn wanted(meta: Option<&RequestMetaObject>, session_set: Option<LoggingLevel>) -> Option<LoggingLevel> {
    named(meta).unwrap_or(Some(session_set.unwrap_or(LoggingLevel::Info)))
}

/// Whether a call's client asked for log lines outright, so that the call
/// may send some before its answer: its `_meta` names a level, or (before
/// 2026-07-28) its session set one. Info by default is not asking: a
/// call answered as plain JSON drops those lines.
pub fn asked(meta: Option<&RequestMetaObject>, session_set: Option<LoggingLevel>) -> bool {
    named(meta).map_or(session_set.is_some(), |level| level.is_some())
}

/// What the request itself says of its log lines, when it decides them:
/// the level its `_meta` names, or none for a 2026-07-28 request that names
/// none. None when its session's level decides (an earlier protocol's).
fn named(meta: Option<&RequestMetaObject>) -> Option<Option<LoggingLevel>> {
    let meta = meta?;
    match meta.log_level() {
        Some(level) => Some(Some(level)),
        None => of_2026(meta).then_some(None),
    }
}

/// A request of protocol 2026-07-28 or later: its `_meta` says so. Read
/// as the text it is (versions are dates, in order as text): decoding it
/// into rmcp's type copies it, on every call of a stateless client.
fn of_2026(meta: &RequestMetaObject) -> bool {
    let version = meta.get(PROTOCOL_VERSION).and_then(serde_json::Value::as_str);
    version.is_some_and(|version| version >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Where a request's `_meta` names its protocol version (SEP-2575).
const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Where one call of `tool` sends its game's log lines, at or above
/// `wanted` (none when None); `send` delivers a notification on the call's
/// stream.
pub fn sink_for(
    wanted: Option<LoggingLevel>,
    tool: &str,
    send: impl Fn(LoggingMessageNotification) + Send + Sync + 'static,
) -> Option<LogSink> {
    let least = rank(wanted?);
    let logger = tool.to_string();
    Some(LogSink(Arc::new(move |level, message| {
        let level = mcp_level(level);
        if rank(level) >= least {
            let line = LoggingMessageNotificationParam::new(level, message.into()).with_logger(logger.clone());
            send(LoggingMessageNotification::new(line));
        }
    })))
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A game's level as MCP names it (MCP has no trace: it is debug).
fn mcp_level(level: tracing::Level) -> LoggingLevel {
    match level {
        tracing::Level::TRACE | tracing::Level::DEBUG => LoggingLevel::Debug,
        tracing::Level::INFO => LoggingLevel::Info,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::ERROR => LoggingLevel::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(value: serde_json::Value) -> RequestMetaObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_2026_request_hears_only_the_level_its_meta_names_and_an_earlier_one_its_sessions() {
        let modern = meta(serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
        let named = meta(serde_json::json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/logLevel": "warning"}));
        let older = meta(serde_json::json!({"progressToken": "p"}));
        let set = Some(LoggingLevel::Error);
        assert_eq!(wanted(Some(&modern), set), None, "MUST NOT send without a level, whatever a session set");
        assert_eq!(wanted(Some(&named), None), Some(LoggingLevel::Warning));
        assert_eq!(wanted(Some(&named), set), Some(LoggingLevel::Warning), "the request's own level wins");
        assert_eq!((wanted(Some(&older), set), wanted(None, set)), (set, set));
        assert_eq!(wanted(None, None), Some(LoggingLevel::Info), "info until a session sets a level");
        assert!(!asked(Some(&modern), set) && asked(Some(&named), None));
        assert!(asked(None, set) && !asked(None, None) && !asked(Some(&older), None));
    }
}
