//! MCP logging: what a game logs (`host.log`) during a call reaches the
//! calling client as `notifications/message` on that call's own stream, at
//! or above the level the client set with `logging/setLevel` (info until it
//! sets one). The server's own log (stderr) gets every line as before.
// rmcp marks logging deprecated: a later protocol (SEP-2577) drops it, but
// the clients of 2025-11-25 and before, which Ludus serves, use it.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam};

use crate::session::{Caller, LogSink};

/// Each caller's level. A caller that set one and left keeps its entry; at
/// this many the table starts again (every client back at info) rather
/// than grow without end.
/// Read on every tool call, written only by `logging/setLevel`.
static LEVELS: LazyLock<RwLock<HashMap<String, LoggingLevel>>> = LazyLock::new(Default::default);
const MAX_CALLERS: usize = 65_536;

/// `logging/setLevel` from `caller`.
pub fn set_level(caller: &Caller, level: LoggingLevel) {
    // A stateless request has no caller to remember a level for.
    if caller.name().is_empty() {
        return;
    }
    let mut levels = LEVELS.write().unwrap_or_else(|e| e.into_inner());
    if levels.len() >= MAX_CALLERS && !levels.contains_key(caller.name()) {
        levels.clear();
    }
    levels.insert(caller.name().to_string(), level);
}

/// Where one call of `tool` by `caller` sends its game's log lines; `send`
/// delivers a notification on the call's stream.
pub fn sink_for(caller: &Caller, tool: &str, send: impl Fn(LoggingMessageNotification) + Send + Sync + 'static) -> Option<LogSink> {
    let set = LEVELS.read().unwrap_or_else(|e| e.into_inner()).get(caller.name()).copied();
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
