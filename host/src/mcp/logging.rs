//! MCP logging: what a game logs (`host.log`) during a call reaches the
//! calling client as `notifications/message` on that call's own stream, at
//! or above the level the client set with `logging/setLevel` (info until it
//! sets one; kept with the client, `client::Clients`). The server's own log
//! (stderr) gets every line as before.
// rmcp marks logging deprecated: a later protocol (SEP-2577) drops it, but
// the clients of 2025-11-25 and before, which Ludus serves, use it.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam};

use crate::session::LogSink;

/// Where one call of `tool` sends its game's log lines, at or above `set`
/// (the level its client set, if any); `send` delivers a notification on
/// the call's stream.
pub fn sink_for(
    set: Option<LoggingLevel>,
    tool: &str,
    send: impl Fn(LoggingMessageNotification) + Send + Sync + 'static,
) -> Option<LogSink> {
    let least = rank(set.unwrap_or(LoggingLevel::Info));
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
