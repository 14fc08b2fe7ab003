//! Games out of memory: stored games not rebuilt since the server started,
//! and games that left memory while idle (`idle`). Each is rebuilt when a
//! call first names it.
//!
//! Where they are found depends on where they are kept:
//! - a store of the server's own (SQLite) is their index: nothing of a
//!   game out of memory stays in this process, so a million stored games
//!   cost the server no more memory than a thousand;
//! - with no store (`store = "memory"`), `table` keeps their records and
//!   states;
//! - a store other servers share is asked through its lease instead
//!   (`shared`), and nothing is kept here.
//!
//! None of this knows which games are live: with a store, a live game is
//! in the store too, and `Sessions` asks the live table first.

mod table;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::locking::lock;
use crate::plugin::Plugin;
use crate::records::MatchTag;
use crate::store::{GameIndex, Record, SessionStore, StoreError};
use table::DormantTable;
pub(super) use table::Kept;

pub(super) struct DormantGames {
    /// Games no store keeps.
    table: Mutex<DormantTable>,
    /// The store that indexes the games it keeps (none: no store, or one
    /// other servers share).
    store: Option<Arc<dyn SessionStore>>,
    /// The plugin versions games left memory on.
    versions: Mutex<Versions>,
}

/// What reading a game out of memory found.
pub(super) enum Found {
    /// It is not out of memory (or not of this server).
    Nowhere,
    /// It cannot go on, for this reason.
    Unreadable(String),
    /// Its record (boxed: the other answers are small) and its state.
    Game(Box<Record>, Vec<u8>),
}

impl DormantGames {
    /// `store`: the server's store, when it has one.
    pub fn new(store: Option<Arc<dyn SessionStore>>) -> DormantGames {
        let store = store.filter(|s| s.index().is_some());
        DormantGames { table: Mutex::default(), store, versions: Mutex::default() }
    }

    fn index(&self) -> Option<&dyn GameIndex> {
        self.store.as_deref().and_then(|s| s.index())
    }

    /// How many games are out of memory (with a store: how many it keeps).
    pub fn len(&self) -> u64 {
        let here = lock(&self.table).len() as u64;
        here + self.index().map(|i| i.count().unwrap_or_else(|e| warned("counting the stored games", e))).unwrap_or(0)
    }

    /// Whether game `id` may be out of memory.
    pub fn contains(&self, id: &str) -> bool {
        lock(&self.table).contains(id)
            || self.index().is_some_and(|i| i.contains(id).unwrap_or_else(|e| warned(&format!("looking up game {id}"), e)))
    }

    /// The plugin that runs game `id`, if it is out of memory.
    pub fn plugin_of(&self, id: &str) -> Option<String> {
        if let Some(d) = lock(&self.table).get(id) {
            return Some(d.plugin.to_string());
        }
        self.record(id).map(|r| r.plugin)
    }

    /// Game `id`'s record, if it is out of memory and reads.
    pub fn record(&self, id: &str) -> Option<Record> {
        {
            let table = lock(&self.table);
            if let Some(d) = table.get(id) {
                return table.kept_record(d);
            }
        }
        // The table's lock is not held while the store is read.
        match self.store.as_ref()?.record(id) {
            Ok(record) => record,
            Err(e) => warned(&format!("reading game {id} from the store"), e),
        }
    }

    /// Game `id`'s record and state, to rebuild it.
    pub fn read(&self, id: &str) -> Found {
        let kept = {
            let table = lock(&self.table);
            table.get(id).map(|d| table.kept(d))
        };
        match (kept, &self.store) {
            (Some((Some(record), state)), _) => Found::Game(Box::new(record), state),
            (Some((None, _)), _) => Found::Unreadable("what was kept of it could not be read back".into()),
            (None, None) => Found::Nowhere,
            (None, Some(store)) => match (store.record(id), store.state(id)) {
                (Ok(Some(record)), Ok(Some(state))) => Found::Game(Box::new(record), state),
                (Err(e), _) | (_, Err(e)) => Found::Unreadable(format!("its stored copy could not be read: {e}")),
                _ => Found::Nowhere,
            },
        }
    }

    /// The plugin version a game of build `sha256` left memory on, while
    /// games of it are out of memory: a reload of the plugin meanwhile
    /// does not end them (a game runs on the version it started on).
    pub fn version(&self, sha256: &str) -> Option<Arc<Plugin>> {
        lock(&self.versions).by_sha.get(sha256).map(|(v, _)| v.clone())
    }

    /// A game leaves memory: `kept` (no store keeps it) is filed here,
    /// `version` is held for it, and `leave` takes it out of the live
    /// table under this table's lock, so that a call finds it in one or
    /// the other; nothing is filed when `leave` says it stayed.
    pub fn park(&self, kept: Option<(Record, Kept)>, version: Option<&Arc<Plugin>>, leave: impl FnOnce() -> bool) -> bool {
        let mut table = lock(&self.table);
        if !leave() {
            return false;
        }
        if let Some((record, kept)) = kept {
            table.insert(&record, kept);
        }
        drop(table);
        if let Some(version) = version {
            lock(&self.versions).hold(version);
        }
        true
    }

    /// Game `id` is no longer out of memory (it ended or expired);
    /// `sha256`: the build it ran, when known.
    pub fn forget(&self, id: &str, sha256: Option<&str>) {
        self.back(id, sha256, || ());
    }

    /// Game `id` of build `sha256` was rebuilt: `into_live` files it in the
    /// live table under this table's lock, and it leaves this one.
    pub fn back(&self, id: &str, sha256: Option<&str>, into_live: impl FnOnce()) {
        let mut table = lock(&self.table);
        into_live();
        table.remove(id);
        drop(table);
        if let Some(sha256) = sha256 {
            lock(&self.versions).release(sha256);
        }
    }

    /// The ids of the games out of memory `caller` plays in (with a store:
    /// of all its games `caller` plays in).
    pub fn ids_of(&self, caller: &str) -> Vec<String> {
        let mut ids = lock(&self.table).ids_where(|d| d.plays(caller));
        if let Some(index) = self.index().filter(|_| !caller.is_empty()) {
            ids.extend(index.ids_of(caller).unwrap_or_else(|e| warned(&format!("listing the games of {caller}"), e)));
        }
        ids
    }

    /// The game out of memory a run started for `creator` as `tag`.
    pub fn started_for(&self, tag: &MatchTag, creator: &str) -> Option<String> {
        let here = lock(&self.table).ids_where(|d| d.in_match.as_deref() == Some(tag) && &*d.created_by == creator).pop();
        here.or_else(|| self.index()?.started_for(tag, creator).unwrap_or_else(|e| warned("finding a match's game", e)))
    }

    /// The games idle past their timeout at `now_ms` (with a store: by its
    /// last write, so games in memory may be among them).
    pub fn expired(&self, now_ms: u64) -> Vec<String> {
        let mut ids = lock(&self.table).ids_where(|d| d.expired(now_ms));
        if let Some(index) = self.index() {
            ids.extend(index.expired(now_ms).unwrap_or_else(|e| warned("finding expired games", e)));
        }
        ids
    }

    /// The records of the games kept here (they end when the server stops).
    pub fn kept_records(&self) -> Vec<Record> {
        lock(&self.table).kept_records()
    }

    /// Lets go of what the table no longer needs (`DormantTable::tidy`).
    pub fn tidy(&self) {
        lock(&self.table).tidy();
    }
}

/// Logs a store's failure to answer; what is asked then finds nothing.
fn warned<T: Default>(doing: &str, e: StoreError) -> T {
    tracing::warn!("{doing}: {e}");
    T::default()
}

/// Plugin versions held for the games that left memory on them, by build,
/// with how many games hold each. A stored game read at start was never
/// counted; when it is rebuilt it releases one hold of its build, which may
/// let a version go early: a game that then finds its version gone ends
/// with why, as after a restart.
#[derive(Default)]
struct Versions {
    by_sha: HashMap<String, (Arc<Plugin>, usize)>,
}

impl Versions {
    fn hold(&mut self, version: &Arc<Plugin>) {
        self.by_sha.entry(version.sha256.clone()).or_insert_with(|| (version.clone(), 0)).1 += 1;
    }

    fn release(&mut self, sha256: &str) {
        if let Some((_, holds)) = self.by_sha.get_mut(sha256) {
            *holds -= 1;
            if *holds == 0 {
                self.by_sha.remove(sha256);
            }
        }
    }
}
