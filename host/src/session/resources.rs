//! Resources and prompts: a game's resources read (and watched) in its
//! session's instance, everything else in the plugin's shared instance.

use std::sync::Arc;

use wasmtime::component::Val;

use super::call::rand_seed;
use super::{Body, Caller, Refusal, Run, Seeding, Session, Sessions, ran};
use crate::capability::CallInfo;
use crate::capability::content::body_of_val;
use crate::locking::lock;
use crate::plugin::{Audience, Plugin};
use crate::runtime::run_guest;

impl Sessions {
    /// The plugin's instance for session-less calls; remade after a trap.
    pub(super) fn shared_session(&self, plugin: &Arc<Plugin>) -> Result<Arc<Session>, Refusal> {
        let mut shared = lock(&self.shared);
        if let Some(s) = shared.get(&plugin.name).filter(|s| Arc::ptr_eq(&s.plugin, plugin) && s.is_dead().is_none()) {
            return Ok(s.clone());
        }
        let seeding = Seeding { seed: rand_seed(), chosen: false, secret: None, replay: false };
        let s = Session::start(plugin.clone(), format!("{}-shared", plugin.name), seeding, "", None, None, self.rt.clone())?;
        shared.insert(plugin.name.clone(), s.clone());
        Ok(s)
    }

    /// Reads a plugin resource (through `resources.read` where the plugin
    /// exports it, else `meta.read-resource`): in the named session's
    /// instance for per-session resources (for its players, or anyone when
    /// the plugin opens it to spectators), else in the shared one.
    pub async fn read_resource(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        uri: &str,
        session: Option<(&str, Audience)>,
        caller: &Caller,
    ) -> Result<Body, Refusal> {
        let session = match session {
            Some((id, audience)) => self.readable(plugin, uri, id, audience, caller).await?,
            None => self.shared_session(plugin)?,
        };
        let export = session.plugin.read_body.unwrap_or(session.plugin.read_resource);
        let uri = uri.to_string();
        // The reader is the caller: a game with seats shows each its own side.
        let info = CallInfo { caller: caller.name().to_string(), ..CallInfo::default() };
        // Under the game's lease, on a copy brought up to date (another server may have changed it).
        let call = move || session.leased(Run::Read, || session.invoke(&export, &[Val::String(uri)], 1, info, None)).and_then(|r| r);
        let inv = ran(run_guest(&plugin.event_pace, call).await)?;
        let body = |v: Option<Box<Val>>| match v.map(|b| *b) {
            Some(Val::String(s)) => Some(Body::Text(s)),
            Some(other) => body_of_val(&other),
            None => None,
        };
        match inv.value {
            Some(Val::Result(Ok(v))) => body(v).ok_or_else(|| Refusal::Plugin("the plugin gave a resource this host cannot read".into())),
            Some(Val::Result(Err(Some(e)))) => Err(Refusal::Plugin(match *e {
                Val::String(s) => s,
                _ => "the plugin refused".into(),
            })),
            _ => Err(Refusal::Plugin("the plugin gave no resource".into())),
        }
    }

    /// Runs a prompt's `get` or `complete` (`ludus:plugin/prompts`) in the
    /// plugin's shared instance.
    pub async fn prompt_call(self: &Arc<Self>, plugin: &Arc<Plugin>, complete: bool, params: Vec<Val>) -> Result<Option<Val>, Refusal> {
        let exports = plugin.prompt_exports.ok_or_else(|| Refusal::Plugin("this plugin offers no prompts".into()))?;
        let export = if complete { exports.complete } else { exports.get };
        let session = self.shared_session(plugin)?;
        let call = move || session.invoke(&export, &params, 1, CallInfo::default(), None);
        Ok(ran(run_guest(&plugin.event_pace, call).await)?.value)
    }

    async fn readable(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        uri: &str,
        id: &str,
        audience: Audience,
        caller: &Caller,
    ) -> Result<Arc<Session>, Refusal> {
        self.revive(id, plugin).await;
        let s = self.live(id, plugin, "session")?;
        if audience != Audience::Spectators && !s.is_player(caller.name()) {
            if *caller == Caller::Stateless {
                return Err(Refusal::Stateless);
            }
            return Err(Refusal::NotYours { param: "session".into(), id: id.into(), what: format!("read {uri}"), joins: None });
        }
        Ok(s)
    }

    /// Changes of the game behind a per-game resource, for a subscriber who
    /// may read it: the receiver wakes on every change of the game (here or
    /// on another server) and fails once the game has ended.
    pub async fn watch_resource(
        self: &Arc<Self>,
        plugin: &Arc<Plugin>,
        uri: &str,
        id: &str,
        audience: Audience,
        caller: &Caller,
    ) -> Result<tokio::sync::watch::Receiver<u64>, Refusal> {
        let session = self.readable(plugin, uri, id, audience, caller).await?;
        let changes = session.waits.changed.subscribe();
        let game = session.clone();
        let _ = run_guest(&session.plugin.event_pace, move || game.follow_changes(game.plugin.limits.idle_timeout)).await;
        Ok(changes)
    }
}
