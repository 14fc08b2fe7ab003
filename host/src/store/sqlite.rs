//! The embedded store: one SQLite file (through rusqlite's bundled SQLite,
//! so nothing is needed on the machine). WAL journal with
//! `synchronous = NORMAL`: a write is in the file's log when `put` returns,
//! so it survives the server being killed; only a power cut can drop the
//! last writes (an fsync per write would make every move wait for the disk).
//! One server at a time: the file is locked while a server holds it (and
//! SQLite's own lock is held throughout, so other programs read it only
//! while no server runs).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};

use super::{Lease, Record, SessionStore, StoreError};
use crate::locking::lock;

/// The layout this build writes (`PRAGMA user_version`).
const FORMAT: i64 = 1;

pub struct SqliteStore {
    path: PathBuf,
    db: Mutex<Connection>,
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
        check(&db).map_err(fail)?;
        // Exclusive locking: this server is the file's only user (the lock
        // above), so SQLite need not take and release its file locks around
        // every write (system calls on every move).
        db.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE;
             PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, record TEXT NOT NULL, state BLOB NOT NULL);",
        )
        .map_err(|e| fail(format!("cannot prepare it: {e}")))?;
        db.pragma_update(None, "user_version", FORMAT).map_err(|e| fail(format!("cannot mark its format: {e}")))?;
        Ok(SqliteStore { path: path.to_path_buf(), db: Mutex::new(db), _lock: lock_file })
    }
}

/// Whether the file is empty or a sound Ludus store this build can read;
/// reads only.
fn check(db: &Connection) -> Result<(), String> {
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
    if tables.iter().any(|t| t != "sessions") || (format == 0 && !tables.is_empty()) {
        return Err(format!(
            "it is an SQLite database but not a Ludus session store (tables: {}); nothing in it was changed. \
             Choose another file with --store",
            tables.join(", ")
        ));
    }
    let verdict: String = db.pragma_query_value(None, "quick_check", |r| r.get(0)).map_err(not_ours)?;
    if verdict != "ok" {
        return Err(format!("it is damaged (SQLite's quick_check: {verdict}); nothing in it was changed. Move it away to start afresh"));
    }
    Ok(())
}

impl SessionStore for SqliteStore {
    fn put(&self, record: &Record, state: &[u8], _lease: Option<&Lease>) -> Result<u64, StoreError> {
        let doing = || format!("writing session {}", record.id);
        let json = serde_json::to_string(record).map_err(|e| StoreError::backend(doing(), e))?;
        let db = lock(&self.db);
        let mut put = db
            .prepare_cached(
                "INSERT INTO sessions (id, record, state) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET record = excluded.record, state = excluded.state",
            )
            .map_err(|e| StoreError::backend(doing(), e))?;
        put.execute(params![record.id, json, state]).map(|_| 0).map_err(|e| StoreError::backend(doing(), e))
    }

    fn remove(&self, id: &str) -> Result<(), StoreError> {
        let doing = || format!("removing session {id}");
        let db = lock(&self.db);
        let mut remove = db.prepare_cached("DELETE FROM sessions WHERE id = ?1").map_err(|e| StoreError::backend(doing(), e))?;
        remove.execute([id]).map(drop).map_err(|e| StoreError::backend(doing(), e))
    }

    fn records(&self) -> Result<Vec<Record>, StoreError> {
        let doing = || format!("reading the sessions in {}", self.path.display());
        let db = lock(&self.db);
        let mut all = db.prepare("SELECT id, record FROM sessions").map_err(|e| StoreError::backend(doing(), e))?;
        let rows =
            all.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).map_err(|e| StoreError::backend(doing(), e))?;
        let mut records = Vec::new();
        for row in rows {
            let (id, json) = row.map_err(|e| StoreError::backend(doing(), e))?;
            match serde_json::from_str(&json) {
                Ok(record) => records.push(record),
                Err(e) => tracing::error!(store = %self.path.display(), "session {id}'s record cannot be read ({e}); it is left out"),
            }
        }
        Ok(records)
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
            last_calls: Default::default(),
            seats: Vec::new(),
            standing: Default::default(),
            in_match: None,
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
        assert_eq!(store.records().unwrap(), vec![record("a")]);
        assert_eq!(store.state("a").unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(store.state("b").unwrap(), None);
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
