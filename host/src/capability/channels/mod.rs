//! The `ludus:plugin/channels` interface: a plugin opens an
//! endpoint by *name*; the operator's config maps that name to a WebSocket
//! URL, a TCP address, an HTTP base URL or a child process. The host owns
//! every socket and process: one task per channel moves data, delivers input
//! into the session as `events.on-message` / `events.on-closed`, and
//! everything dies with the session (processes are killed).
//!
//! Opening never blocks the guest: a process is spawned at once (so a bad
//! command fails the `open`), sockets connect in the channel's task and a
//! failure arrives as `on-closed`. Sends made before the connection is up
//! are queued.

mod shared;
mod table;
mod transport;

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use tokio::sync::mpsc;

use crate::config::{ChannelLimits, Endpoint};
use crate::runtime::bindings::ludus::plugin::channels;
use crate::runtime::processes::ProcessBudget;
use crate::runtime::sandbox::{EngineRules, Sandbox};

pub use table::ChannelInfo;
pub use transport::{Inbox, Input, install_tls_provider};

/// What one plugin version may open: the operator's endpoints and limits,
/// and whether the plugin can receive input at all.
pub struct ChannelGrant {
    pub plugin: String,
    /// The server's budget of game processes.
    pub processes: Arc<ProcessBudget>,
    /// What confines them, and what this plugin's may use.
    pub sandbox: Arc<Sandbox>,
    pub engine: EngineRules,
    pub endpoints: BTreeMap<String, Endpoint>,
    pub limits: ChannelLimits,
    /// The plugin exports `events.on-message`.
    pub receives: bool,
}

/// The channels of one session.
pub struct Channels {
    grant: Arc<ChannelGrant>,
    /// The caller whose budget this session's processes count against.
    owner: String,
    table: Arc<table::Table>,
    rt: tokio::runtime::Handle,
    /// Channels opened and messages sent so far: a replay waits long for a
    /// process's lines only when the game asked it something since.
    asked: std::sync::atomic::AtomicU64,
}

impl Channels {
    pub fn new(grant: Arc<ChannelGrant>, owner: &str, rt: tokio::runtime::Handle) -> Channels {
        Channels { grant, owner: owner.to_string(), table: Arc::default(), rt, asked: Default::default() }
    }

    /// How many channels the game opened and messages it sent so far.
    pub fn asked(&self) -> u64 {
        self.asked.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The last channel id handed out.
    pub fn last_id(&self) -> u32 {
        self.table.last_id()
    }

    /// Goes on after channel id `last`: a rebuilt game numbers its
    /// channels as the game that left memory would have.
    pub fn resume_after(&self, last: u32) {
        self.table.resume_after(last);
    }

    pub fn list(&self) -> Vec<ChannelInfo> {
        self.table.list()
    }

    /// Closes one channel, as the plugin would: no `on-closed` follows.
    pub fn close(&self, channel: u32) {
        self.table.close(channel);
    }

    /// Closes every channel: the session ended. Whether any was open.
    pub fn close_all(&self) -> bool {
        self.table.close_all()
    }

    /// Opens endpoint `name`; its input goes to `inbox`.
    fn open(&self, inbox: Weak<dyn Inbox>, name: &str) -> Result<u32, String> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let grant = &self.grant;
        let p = &grant.plugin;
        if !grant.receives {
            return Err("this plugin exports no events.on-message, so it could not receive channel input".into());
        }
        let Some(endpoint) = grant.endpoints.get(name) else {
            return Err(format!(
                "channel endpoint `{name}` is not granted to plugin {p}; the operator grants it in the config as \
                 [plugins.{p}.channels.{name}] (a websocket URL, tcp address, http base URL or process)"
            ));
        };
        if let Endpoint::Disabled(_) = endpoint {
            return Err(format!(
                "channel endpoint `{name}` of plugin {p} is turned off by the operator ([plugins.{p}.channels.{name}] disabled = true)"
            ));
        }
        // A game in a shared process counts as a game, not a process.
        let in_shared = transport::shares(endpoint, &grant.engine);
        let permit = match endpoint {
            Endpoint::Process { weight, .. } if !in_shared => {
                Some(grant.processes.take(&self.owner, *weight as usize).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        let table = Arc::downgrade(&self.table);
        self.table.open(grant.limits.max_per_session, |id| {
            let (tx, rx) = mpsc::unbounded_channel();
            let link = transport::Link { inbox, table, channel: id, max: grant.limits.max_message_bytes };
            let engine = transport::Engine {
                sandbox: &grant.sandbox,
                plugin: p,
                rules: &grant.engine,
                endpoint: name,
                budget: &grant.processes,
                owner: &self.owner,
            };
            let started = match in_shared {
                true => shared::start(endpoint, &engine, rx, link, &self.rt),
                false => transport::start(endpoint, &engine, rx, link, &self.rt),
            };
            let (task, pid) = started.map_err(|e| {
                let command = match endpoint {
                    Endpoint::Process { command, .. } => command.as_str(),
                    _ => name,
                };
                format!("channel `{name}`: cannot start `{command}` (config [plugins.{p}.channels.{name}]): {e}")
            })?;
            tracing::debug!(plugin = p, channel = id, endpoint = name, "channel opened");
            let info = ChannelInfo { channel: id, endpoint: name.to_string(), kind: endpoint.kind(), pid };
            Ok(table::Open { info, outgoing: tx, task, _permit: permit })
        })
    }

    fn send(&self, channel: u32, data: String) -> Result<(), String> {
        let max = self.grant.limits.max_message_bytes;
        if data.len() > max {
            return Err(format!("message of {} bytes is over the limit of {max} ([limits] max_channel_message_bytes)", data.len()));
        }
        self.asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.table.send(channel, data)
    }
}

/// This interface's part of a store's state: the session's channels and its
/// inbox, or nothing for an instance outside any session.
#[derive(Default)]
pub struct ChannelsCtx(Option<(Arc<Channels>, Weak<dyn Inbox>)>);

impl ChannelsCtx {
    pub fn new(channels: Arc<Channels>, inbox: Weak<dyn Inbox>) -> ChannelsCtx {
        ChannelsCtx(Some((channels, inbox)))
    }
}

impl channels::Host for ChannelsCtx {
    fn open(&mut self, name: String) -> Result<u32, String> {
        match &self.0 {
            Some((channels, inbox)) => channels.open(inbox.clone(), &name),
            None => Err("channels can only be opened inside a game session".into()),
        }
    }

    fn send(&mut self, channel: u32, data: String) -> Result<(), String> {
        match &self.0 {
            Some((channels, _)) => channels.send(channel, data),
            None => Err(format!("channel {channel} is not open")),
        }
    }

    fn close(&mut self, channel: u32) {
        if let Some((channels, _)) = &self.0 {
            channels.close(channel);
        }
    }
}
