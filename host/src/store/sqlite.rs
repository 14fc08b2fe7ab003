//! The embedded store: one SQLite file (through rusqlite's bundled SQLite,
//! so nothing is needed on the machine). WAL journal with
//! `synchronous = NORMAL`: a write is in the file's log when `put` returns,
//! so it survives the server being killed; only a power cut can drop the
//! last writes (an fsync per write would make every move wait for the disk).
//! One server at a time: the file is locked while a server holds it (and
//! SQLite's own lock is held throughout, so other programs read it only
//! while no server runs).
//!
//! The file is also the index of its games (`GameIndex`): who plays each,
//! when it expires, the match it belongs to, whether its result record is
//! due, in columns and a `players` table beside each record. A server then
//! keeps nothing in memory for a game out of memory, and a million stored
//! games cost it no more than a thousand.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::group_commit::GroupCommit;
use super::{GameIndex, Lease, Record, SessionStore, StoreError};
use crate::locking::lock;
use crate::records::MatchTag;

/// The layout this build writes (`PRAGMA user_version`). 1: records and
/// states only; 2: with the index's columns and the `players` table.
const FORMAT: i64 = 2;

/// The tables a Ludus store holds.
const TABLES: [&str; 2] = ["sessions", "players"];

/// Layout 2, created where it is missing. A game's creator is in
/// `created_by`, its other players (nearly always none) in the `players`
/// table, and `others` holds them as JSON, so that a write knows without
/// reading that table whether it must change. `expires_at`: the last
/// change plus the idle timeout (ms since the epoch); `in_match`: the match
/// tag as JSON; `due`: 1 while the game's result record is due.
const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY, record TEXT NOT NULL, state BLOB NOT NULL,
        created_by TEXT NOT NULL DEFAULT '', others TEXT NOT NULL DEFAULT '',
        expires_at INTEGER NOT NULL DEFAULT 0, in_match TEXT, due INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS players (caller TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (caller, id)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS players_by_game ON players (id);
    CREATE INDEX IF NOT EXISTS sessions_by_creator ON sessions (created_by);
    CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at);
    CREATE INDEX IF NOT EXISTS sessions_in_match ON sessions (in_match, created_by) WHERE in_match IS NOT NULL;
    CREATE INDEX IF NOT EXISTS sessions_due ON sessions (id) WHERE due;";

pub struct SqliteStore {
    path: PathBuf,
    db: Mutex<Connection>,
    /// Writes on their way, together: one transaction carries the writes
    /// that came while the last was committed (`group_commit.rs`).
    writes: GroupCommit<Write, Result<(), Arc<rusqlite::Error>>>,
    /// Held open: the advisory lock that keeps a second server off this file.
    _lock: File,
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, refusing a file that is not a
    /// Ludus session store or was written by a newer Ludus: such a file is
    /// left exactly as it was.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let fail = |why: String| StoreError::Open { store: path.display().to_string(), why };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail(format!("cannot create its directory: {e}")))?;
        }
        let lock_path = path.with_extension("lock");
        let lock_file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| fail(format!("cannot open its lock file {}: {e}", lock_path.display())))?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(lock_file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(StoreError::InUse(path.display().to_string()));
        }
        let db = Connection::open(path).map_err(|e| fail(format!("cannot open it: {e}")))?;
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        check(&db, size).map_err(fail)?;
        // Exclusive locking: this server is the file's only user (the lock
        // above), so SQLite need not take and release its file locks around
        // every write (system calls on every move).
        db.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;",
        )
        .map_err(|e| fail(format!("cannot prepare it: {e}")))?;
        upgrade(&db).map_err(|e| fail(format!("cannot bring it to store format {FORMAT}: {e}")))?;
        Ok(SqliteStore { path: path.to_path_buf(), db: Mutex::new(db), writes: GroupCommit::default(), _lock: lock_file })
    }
}

/// The largest store file checked whole when a server opens it.
const QUICK_CHECK_UP_TO: u64 = 64 << 20;

/// Whether the file (of `size` bytes) is empty or a sound Ludus store this
/// build can read; reads only.
fn check(db: &Connection, size: u64) -> Result<(), String> {
    let not_ours = |e: rusqlite::Error| {
        format!("it is not a Ludus session store ({e}); nothing in it was changed. Move it away, or choose another file with --store")
    };
    let format: i64 = db.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(not_ours)?;
    if format > FORMAT {
        return Err(format!(
            "it was written by a newer Ludus (store format {format}; this build reads format {FORMAT}); nothing in it was changed. \
             Run the newer Ludus, or choose another file with --store"
        ));
    }
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(not_ours)?;
    if tables.iter().any(|t| !TABLES.contains(&t.as_str())) || (format == 0 && !tables.is_empty()) {
        return Err(format!(
            "it is an SQLite database but not a Ludus session store (tables: {}); nothing in it was changed. \
             Choose another file with --store",
            tables.join(", ")
        ));
    }
    // quick_check reads every page: 0.6 s for a million games whose pages
    // the system has cached, 15 s for ones it must read from disk. Past
    // this size a damaged page is met, and said, when a game on it is read.
    if size > QUICK_CHECK_UP_TO {
        tracing::info!("the session store is {} MiB: its pages are checked as games are read", size >> 20);
        return Ok(());
    }
    let verdict: String = db.pragma_query_value(None, "quick_check", |r| r.get(0)).map_err(not_ours)?;
    if verdict != "ok" {
        return Err(format!("it is damaged (SQLite's quick_check: {verdict}); nothing in it was changed. Move it away to start afresh"));
    }
    Ok(())
}

/// Brings a checked file to this build's layout in one transaction: a new
/// file gets the tables; a file of layout 1 gets the index's columns and
/// table, filled from each record.
fn upgrade(db: &Connection) -> rusqlite::Result<()> {
    let format: i64 = db.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if format == FORMAT {
        return Ok(());
    }
    let tx = db.unchecked_transaction()?;
    let old_sessions: bool =
        tx.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sessions'", [], |r| r.get(0))?;
    if old_sessions {
        for column in [
            "created_by TEXT NOT NULL DEFAULT ''",
            "others TEXT NOT NULL DEFAULT ''",
            "expires_at INTEGER NOT NULL DEFAULT 0",
            "in_match TEXT",
            "due INTEGER NOT NULL DEFAULT 0",
        ] {
            tx.execute_batch(&format!("ALTER TABLE sessions ADD COLUMN {column}"))?;
        }
    }
    tx.execute_batch(SCHEMA)?;
    let records: Vec<(String, String)> =
        tx.prepare("SELECT id, record FROM sessions")?.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<Result<_, _>>()?;
    for (id, json) in records {
        // A record that does not read stays as it was, for the operator: it
        // never expires, and a call on its game says why it cannot go on.
        let Ok(record) = serde_json::from_str::<Record>(&json) else {
            tx.execute("UPDATE sessions SET expires_at = ?2 WHERE id = ?1", params![id, i64::MAX])?;
            continue;
        };
        let columns = Columns::of(&record);
        tx.execute(
            "UPDATE sessions SET created_by = ?2, others = ?3, expires_at = ?4, in_match = ?5, due = ?6 WHERE id = ?1",
            params![id, record.created_by, columns.others, columns.expires_at, columns.in_match, columns.due],
        )?;
        write_players(&tx, &record.id, others(&record))?;
    }
    tx.pragma_update(None, "user_version", FORMAT)?;
    tx.commit()
}

/// What the index's columns hold of a record.
#[derive(PartialEq)]
struct Columns {
    /// Its players besides the creator, as JSON; empty when there are none.
    others: String,
    expires_at: i64,
    in_match: Option<String>,
    due: bool,
}

impl Columns {
    fn of(record: &Record) -> Columns {
        Columns {
            others: match others(record).next() {
                None => String::new(),
                Some(_) => serde_json::to_string(&others(record).collect::<Vec<_>>()).unwrap_or_default(),
            },
            expires_at: i64::try_from(expiry_column(record)).unwrap_or(i64::MAX),
            in_match: record.in_match.as_ref().map(match_key),
            due: record.standing.due(),
        }
    }
}

/// When a game expires, as its column holds it: its last change plus its
/// idle timeout, rounded up to a sixteenth of the timeout (at most a
/// minute), so that the moves of one such span leave the column, and its
/// index, as they were. A game expires at most that much late, never early.
fn expiry_column(record: &Record) -> u64 {
    let exact = record.changed_at_ms.saturating_add(record.idle_timeout_ms);
    let step = (record.idle_timeout_ms / 16).clamp(1, 60_000);
    exact.div_ceil(step).saturating_mul(step)
}

/// How a match tag is kept in its column: as its JSON, which serde writes
/// field by field in one order.
fn match_key(tag: &MatchTag) -> String {
    serde_json::to_string(tag).unwrap_or_default()
}

/// Writes one game: its row, and its players' rows where they changed.
fn write_one(db: &Connection, write: &Write) -> rusqlite::Result<()> {
    let (id, columns) = (&write.id, &write.columns);
    let known: Option<Columns> = db
        .prepare_cached("SELECT others, expires_at, in_match, due FROM sessions WHERE id = ?1")?
        .query_row([id], |r| Ok(Columns { others: r.get(0)?, expires_at: r.get(1)?, in_match: r.get(2)?, due: r.get(3)? }))
        .optional()?;
    // Most writes are moves, which leave the index's columns as they were:
    // then no index is touched (SQLite updates the indexes of the columns
    // an UPDATE sets).
    if known.as_ref() == Some(columns) {
        db.prepare_cached("UPDATE sessions SET record = ?2, state = ?3 WHERE id = ?1")?.execute(params![id, write.json, write.state])?;
        return Ok(());
    }
    db.prepare_cached(
        "INSERT INTO sessions (id, record, state, created_by, others, expires_at, in_match, due)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (id) DO UPDATE SET record = excluded.record, state = excluded.state,
             others = excluded.others, expires_at = excluded.expires_at, in_match = excluded.in_match,
             due = excluded.due",
    )?
    .execute(params![
        id,
        write.json,
        write.state,
        write.created_by,
        columns.others,
        columns.expires_at,
        columns.in_match,
        columns.due
    ])?;
    if known.map(|k| k.others).unwrap_or_default() != columns.others {
        write_players(db, id, &write.others)?;
    }
    Ok(())
}

/// A game's players besides its creator.
fn others(record: &Record) -> impl Iterator<Item = &String> {
    record.players.iter().filter(|p| **p != record.created_by)
}

/// Replaces game `id`'s rows in the `players` table with `others`, its
/// players besides the creator.
fn write_players<'a>(db: &Connection, id: &str, others: impl IntoIterator<Item = &'a String>) -> rusqlite::Result<()> {
    db.prepare_cached("DELETE FROM players WHERE id = ?1")?.execute([id])?;
    let mut add = db.prepare_cached("INSERT OR IGNORE INTO players (caller, id) VALUES (?1, ?2)")?;
    for player in others {
        add.execute([player, id])?;
    }
    Ok(())
}

impl SessionStore for SqliteStore {
    fn put(&self, record: &Record, state: &[u8], _lease: Option<&Lease>) -> Result<u64, StoreError> {
        let doing = || format!("writing session {}", record.id);
        let json = serde_json::to_string(record).map_err(|e| StoreError::backend(doing(), e))?;
        let write = Write {
            id: record.id.clone(),
            created_by: record.created_by.clone(),
            others: others(record).cloned().collect(),
            json,
            state: state.to_vec(),
            columns: Columns::of(record),
        };
        let written = self.writes.submit(write, |batch| self.commit(&batch));
        written.map(|()| 0).map_err(|e| StoreError::backend(doing(), e))
    }

    fn remove(&self, id: &str) -> Result<(), StoreError> {
        let doing = || format!("removing session {id}");
        let db = lock(&self.db);
        let remove = || -> rusqlite::Result<()> {
            let tx = db.unchecked_transaction()?;
            tx.prepare_cached("DELETE FROM sessions WHERE id = ?1")?.execute([id])?;
            tx.prepare_cached("DELETE FROM players WHERE id = ?1")?.execute([id])?;
            tx.commit()
        };
        remove().map_err(|e| StoreError::backend(doing(), e))
    }

    fn state(&self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let doing = || format!("reading session {id}");
        let db = lock(&self.db);
        let mut state = db.prepare_cached("SELECT state FROM sessions WHERE id = ?1").map_err(|e| StoreError::backend(doing(), e))?;
        state.query_row([id], |r| r.get(0)).optional().map_err(|e| StoreError::backend(doing(), e))
    }

    fn record(&self, id: &str) -> Result<Option<Record>, StoreError> {
        let doing = || format!("reading session {id}");
        let db = lock(&self.db);
        let mut read = db.prepare_cached("SELECT record FROM sessions WHERE id = ?1").map_err(|e| StoreError::backend(doing(), e))?;
        let json: Option<String> = read.query_row([id], |r| r.get(0)).optional().map_err(|e| StoreError::backend(doing(), e))?;
        drop(read);
        drop(db);
        let Some(json) = json else { return Ok(None) };
        serde_json::from_str(&json).map(Some).map_err(|e| StoreError::Unreadable { id: id.to_string(), why: e.to_string() })
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }

    fn index(&self) -> Option<&dyn GameIndex> {
        Some(self)
    }
}

/// A game's write on its way to the file, owned so that another writer's
/// batch can carry it.
struct Write {
    id: String,
    created_by: String,
    /// Its players besides the creator.
    others: Vec<String>,
    json: String,
    state: Vec<u8>,
    columns: Columns,
}

impl SqliteStore {
    /// Writes `batch` in one transaction (one commit to the log for all of
    /// them), and answers each.
    fn commit(&self, batch: &[Write]) -> Vec<Result<(), Arc<rusqlite::Error>>> {
        let db = lock(&self.db);
        let all = || -> rusqlite::Result<()> {
            let tx = db.unchecked_transaction()?;
            for write in batch {
                write_one(&tx, write)?;
            }
            tx.commit()
        };
        let answer = all().map_err(Arc::new);
        batch.iter().map(|_| answer.clone()).collect()
    }

    /// The ids one query finds (`sql`, with `args`).
    fn ids(&self, doing: &str, sql: &str, args: impl rusqlite::Params) -> Result<Vec<String>, StoreError> {
        let db = lock(&self.db);
        let found = || -> rusqlite::Result<Vec<String>> { db.prepare_cached(sql)?.query_map(args, |r| r.get(0))?.collect() };
        found().map_err(|e| StoreError::backend(doing.to_string(), e))
    }
}

impl GameIndex for SqliteStore {
    fn ids_of(&self, caller: &str) -> Result<Vec<String>, StoreError> {
        let sql = "SELECT id FROM sessions WHERE created_by = ?1 UNION SELECT id FROM players WHERE caller = ?1";
        self.ids(&format!("listing the games of {caller}"), sql, [caller])
    }

    fn started_for(&self, tag: &MatchTag, creator: &str) -> Result<Option<String>, StoreError> {
        let sql = "SELECT id FROM sessions WHERE in_match = ?1 AND created_by = ?2";
        Ok(self.ids(&format!("finding game {} of match {}", tag.game, tag.id), sql, params![match_key(tag), creator])?.pop())
    }

    fn expired(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        self.ids("finding expired games", "SELECT id FROM sessions WHERE expires_at < ?1", [now])
    }

    fn contains(&self, id: &str) -> Result<bool, StoreError> {
        let db = lock(&self.db);
        let found = || db.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?.exists([id]);
        found().map_err(|e| StoreError::backend(format!("looking up session {id}"), e))
    }

    fn due(&self) -> Result<Vec<Record>, StoreError> {
        let ids = self.ids("finding games whose records are due", "SELECT id FROM sessions WHERE due", [])?;
        let mut due = Vec::new();
        for id in ids {
            match self.record(&id) {
                Ok(record) => due.extend(record),
                Err(e) => tracing::error!(store = %self.path.display(), "{e}; its result record is not written"),
            }
        }
        Ok(due)
    }

    fn count(&self) -> Result<u64, StoreError> {
        let db = lock(&self.db);
        let count: i64 =
            db.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0)).map_err(|e| StoreError::backend("counting the games", e))?;
        Ok(count as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str) -> Record {
        Record {
            id: id.into(),
            plugin: "hanoi".into(),
            plugin_version: "0.1.0".into(),
            plugin_sha256: "ab".into(),
            seed: 7,
            seed_chosen: false,
            secret: Some(11),
            replay: false,
            created_by: "alice".into(),
            created_at_ms: 1,
            players: vec!["alice".into()],
            join_code: None,
            over: false,
            renamed: false,
            calls: 3,
            changed_at_ms: 2,
            idle_timeout_ms: 120_000,
            ..Default::default()
        }
    }

    #[test]
    fn sessions_are_written_replaced_read_back_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let store = SqliteStore::open(&path).unwrap();
            store.put(&record("a"), b"one", None).unwrap();
            store.put(&record("a"), b"two", None).unwrap();
            store.put(&record("b"), b"", None).unwrap();
            store.remove("b").unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.record("a").unwrap(), Some(record("a")));
        assert_eq!(store.count().unwrap(), 1);
        assert_eq!(store.state("a").unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(store.state("b").unwrap(), None);
        assert!(store.contains("a").unwrap() && !store.contains("b").unwrap());
    }

    #[test]
    fn the_index_finds_games_by_player_match_expiry_and_due_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("s.db")).unwrap();
        let tag = MatchTag { id: "m1".into(), pair: 1, game: 2 };
        let mut joined = record("joined");
        joined.players.push("bob".into());
        joined.changed_at_ms = 10_000;
        let mut in_match = record("in-match");
        in_match.in_match = Some(tag.clone());
        let mut due = record("due");
        due.standing.told = Some(crate::records::Told { outcome: Some(crate::records::Outcome::Solved), ..Default::default() });
        for r in [&joined, &in_match, &due] {
            store.put(r, b"", None).unwrap();
        }
        let sorted = |mut ids: Vec<String>| {
            ids.sort();
            ids
        };
        assert_eq!(sorted(store.ids_of("alice").unwrap()), ["due", "in-match", "joined"]);
        assert_eq!(store.ids_of("bob").unwrap(), ["joined"]);
        // Bob leaves the game: its players' rows follow the record.
        joined.players.pop();
        store.put(&joined, b"", None).unwrap();
        assert!(store.ids_of("bob").unwrap().is_empty());
        assert_eq!(store.started_for(&tag, "alice").unwrap().as_deref(), Some("in-match"));
        assert_eq!(store.started_for(&tag, "bob").unwrap(), None);
        assert_eq!(store.started_for(&MatchTag { game: 3, ..tag.clone() }, "alice").unwrap(), None);
        // `record` expires at 2 + 120,000 ms, `joined` at 130,000; the
        // column rounds up to 7,500 ms (a sixteenth of the timeout).
        assert!(store.expired(120_003).unwrap().is_empty(), "no game expires early");
        assert!(store.expired(127_500).unwrap().is_empty());
        assert_eq!(sorted(store.expired(127_501).unwrap()), ["due", "in-match"]);
        assert_eq!(store.expired(135_001).unwrap().len(), 3);
        assert_eq!(store.due().unwrap(), vec![due.clone()]);
        store.remove("joined").unwrap();
        assert!(store.ids_of("alice").unwrap().iter().all(|id| id != "joined"), "a removed game's players go with it");
    }

    #[test]
    fn a_store_of_layout_1_is_indexed_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let db = Connection::open(&path).unwrap();
            db.execute_batch(
                "CREATE TABLE sessions (id TEXT PRIMARY KEY, record TEXT NOT NULL, state BLOB NOT NULL); PRAGMA user_version = 1;",
            )
            .unwrap();
            let mut shared = record("shared");
            shared.players.push("bob".into());
            for (id, json) in [("shared", serde_json::to_string(&shared).unwrap()), ("broken", "{not json".to_string())] {
                db.execute("INSERT INTO sessions VALUES (?1, ?2, ?3)", params![id, json, b"st"]).unwrap();
            }
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.ids_of("bob").unwrap(), ["shared"]);
        assert_eq!(store.state("shared").unwrap().as_deref(), Some(&b"st"[..]));
        assert_eq!(store.expired(u64::MAX / 2).unwrap(), ["shared"], "a record that does not read never expires: it is kept");
        assert!(store.contains("broken").unwrap());
        drop(store);
        let format: i64 = Connection::open(&path).unwrap().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(format, FORMAT);
    }

    #[test]
    fn a_second_server_is_kept_off_a_store_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let _first = SqliteStore::open(&path).unwrap();
        let second = SqliteStore::open(&path).err().unwrap();
        assert!(matches!(second, StoreError::InUse(_)), "{second}");
    }

    #[test]
    fn a_file_that_is_not_a_store_or_is_newer_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.db");
        std::fs::write(&junk, vec![7u8; 8192]).unwrap();
        let e = SqliteStore::open(&junk).err().unwrap().to_string();
        assert!(e.contains("junk.db") && e.contains("not a Ludus session store"), "{e}");
        assert_eq!(std::fs::read(&junk).unwrap(), vec![7u8; 8192], "the file was changed");

        let newer = dir.path().join("newer.db");
        {
            let db = Connection::open(&newer).unwrap();
            db.pragma_update(None, "user_version", FORMAT + 1).unwrap();
        }
        let before = std::fs::read(&newer).unwrap();
        let e = SqliteStore::open(&newer).err().unwrap().to_string();
        assert!(e.contains("newer Ludus"), "{e}");
        assert_eq!(std::fs::read(&newer).unwrap(), before);
    }
}
