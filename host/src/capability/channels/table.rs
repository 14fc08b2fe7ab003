//! The open channels of one session: what each reaches, its outgoing queue and
//! the task that serves it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::Serialize;
use tokio::sync::mpsc;

use crate::locking::lock;

/// One open channel, as `ludus_sessions` shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ChannelInfo {
    pub channel: u32,
    pub endpoint: String,
    pub kind: &'static str,
    /// Not shown to clients: a process id is the server's business.
    #[serde(skip)]
    pub pid: Option<u32>,
}

pub struct Open {
    pub info: ChannelInfo,
    pub outgoing: mpsc::UnboundedSender<String>,
    pub task: tokio::task::AbortHandle,
    /// A process's place in the server's budget, returned when the channel closes.
    pub _permit: Option<crate::runtime::processes::ProcessPermit>,
}

#[derive(Default)]
pub struct Table {
    open: Mutex<HashMap<u32, Open>>,
    next: AtomicU32,
}

impl Table {
    /// Lists a new channel, started by `start` with its id, while holding the
    /// table's lock: the channel's task cannot report its end before the
    /// channel is listed (a refused connection ends at once), and the limit
    /// is checked in the same step.
    pub fn open(&self, limit: usize, start: impl FnOnce(u32) -> Result<Open, String>) -> Result<u32, String> {
        let mut open = lock(&self.open);
        if open.len() >= limit {
            return Err(format!("this session already has {} channels open (the limit, [limits] max_channels_per_session)", open.len()));
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        open.insert(id, start(id)?);
        Ok(id)
    }

    /// The last id handed out.
    pub fn last_id(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }

    /// Goes on handing out ids after `last` (a rebuilt game's channels).
    pub fn resume_after(&self, last: u32) {
        self.next.fetch_max(last, Ordering::Relaxed);
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
    /// process, which kills it (`kill_on_drop`). Whether any was open.
    pub fn close_all(&self) -> bool {
        let mut any = false;
        for (_, ch) in lock(&self.open).drain() {
            ch.task.abort();
            any = true;
        }
        any
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        self.close_all();
    }
}
