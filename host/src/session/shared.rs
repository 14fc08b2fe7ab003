//! The session table on a store other servers share: games started
//! elsewhere are loaded when a call names them, another server's change
//! stops this server's copy and wakes the calls waiting on it, and a game
//! another server asks for is handed over. Why:
//! docs/design/several-servers.md.

use std::sync::Arc;

use super::{Session, SessionError, Sessions, build_of, ran};
use crate::locking::lock;
use crate::plugin::Plugin;
use crate::runtime::run_guest;
use crate::store::SharedStore;

impl Sessions {
    /// Another server wrote game `id` (a store shared with it): this
    /// server's copy, if it has one, is outdated. Its timers and processes
    /// stop now (the game runs there), and the calls held waiting on it
    /// wake, so they run again on the game as it is now.
    pub(super) fn changed_elsewhere(&self, id: &str, version: u64) {
        let Some(session) = lock(&self.live).by_id.get(id).cloned() else { return };
        if session.outdated_by(version) {
            session.stop_io();
            session.bump();
            // Whoever listens here (a subscriber, a call waiting again) hears of the next change too.
            if session.waits.changed.receiver_count() > 0 {
                self.rt.spawn_blocking(move || session.follow_changes(session.plugin.limits.idle_timeout));
            }
        }
    }

    /// Another server waits for game `id`, which this server holds: it is
    /// handed over once the call running on it is done (on a thread of the
    /// blocking pool, not the store's listener, which that call may need).
    pub(super) fn wanted(&self, id: &str) {
        let Some(session) = lock(&self.live).by_id.get(id).cloned() else { return };
        if session.start_hand_over() {
            self.rt.spawn_blocking(move || session.hand_over());
        }
    }

    /// The store, when other servers share it.
    pub(super) fn shared(&self) -> Option<&dyn SharedStore> {
        self.store.as_deref().and_then(|s| s.shared())
    }

    /// Builds this server's copy of game `id` from the store other servers
    /// share, when it has none (the game started elsewhere, or this copy
    /// was let go).
    pub(super) async fn load_shared(self: &Arc<Self>, id: &str, plugin: &Arc<Plugin>) {
        if lock(&self.live).by_id.contains_key(id) {
            return;
        }
        let (p, me, rt, key) = (plugin.clone(), self.clone(), self.rt.clone(), id.to_string());
        let load = move || -> Result<Option<Arc<Session>>, SessionError> {
            let shared = me.shared().expect("checked by the caller");
            let Some(stored) = shared.load(&key)? else { return Ok(None) };
            if stored.record.plugin != p.name {
                return Ok(None);
            }
            if stored.record.plugin_sha256 != p.sha256 {
                return Err(SessionError::Game(format!(
                    "it runs {}, which this server does not have; serve the same builds on every server",
                    build_of(&stored.record)
                )));
            }
            Session::revive(p, stored, me.home(), rt).map(Some)
        };
        match ran(run_guest(&plugin.start_pace, load).await) {
            Ok(Some(session)) => {
                let mut live = lock(&self.live);
                // Two calls may have loaded it at once: the first one stays.
                if !live.by_id.contains_key(&session.id()) {
                    live.insert(session);
                }
            }
            Ok(None) => {}
            Err(why) => {
                tracing::warn!(plugin = plugin.name, session = id, "a stored game cannot run here: {why}");
                lock(&self.gone).record(id, &why.to_string());
            }
        }
    }

    /// Drops this server's copy of a game other servers may still play
    /// (a shared store keeps it, and expires it by itself).
    pub(super) fn let_go(&self, id: &str, why: &str) {
        if let Some(session) = lock(&self.live).remove(id) {
            session.stop_io();
            session.hand_over();
            lock(&self.gone).record(id, why);
        }
    }
}
