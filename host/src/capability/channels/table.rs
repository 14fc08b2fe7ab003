//! The open channels of one session: what each reaches, its outgoing queue and
//! the task that serves it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::Serialize;
use tokio::sync::mpsc;

use crate::sync::lock;

/// One open channel, as `ludus_sessions` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ChannelInfo {
    pub channel: u32,
    pub endpoint: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

pub struct Open {
    pub info: ChannelInfo,
    pub outgoing: mpsc::UnboundedSender<String>,
    pub task: tokio::task::AbortHandle,
}

#[derive(Default)]
pub struct Table {
    open: Mutex<HashMap<u32, Open>>,
    next: AtomicU32,
}

impl Table {
    pub fn next_id(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn len(&self) -> usize {
        lock(&self.open).len()
    }

    pub fn insert(&self, open: Open) {
        lock(&self.open).insert(open.info.channel, open);
    }

    pub fn list(&self) -> Vec<ChannelInfo> {
        let mut v: Vec<ChannelInfo> = lock(&self.open).values().map(|o| o.info.clone()).collect();
        v.sort_by_key(|c| c.channel);
        v
    }

    /// Queues one message on an open channel.
    pub fn send(&self, channel: u32, data: String) -> Result<(), String> {
        let open = lock(&self.open);
        let ch = open.get(&channel).ok_or_else(|| format!("channel {channel} is not open"))?;
        if ch.info.kind != "websocket" && ch.info.kind != "http" && data.contains(['\n', '\r']) {
            return Err("a message to a line-based channel must not contain a line break".into());
        }
        ch.outgoing.send(data).map_err(|_| format!("channel {channel} has closed"))
    }

    /// Closes one channel; no `on-closed` follows.
    pub fn close(&self, channel: u32) {
        if let Some(ch) = lock(&self.open).remove(&channel) {
            ch.task.abort();
        }
    }

    pub fn is_open(&self, channel: u32) -> bool {
        lock(&self.open).contains_key(&channel)
    }

    /// Forgets a channel whose task ended by itself; false when the plugin had
    /// already closed it.
    pub fn ended(&self, channel: u32) -> bool {
        lock(&self.open).remove(&channel).is_some()
    }

    /// Closes everything: the session ended. Aborting a task drops its child
    /// process, which kills it (`kill_on_drop`).
    pub fn close_all(&self) {
        for (_, ch) in lock(&self.open).drain() {
            ch.task.abort();
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.close_all();
    }
}
