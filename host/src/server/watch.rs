//! Hot reload: watch the plugins directory with `notify`, rescan
//! periodically as a safety net, and load a file only once it is stable (same
//! size and mtime on two looks). Loading runs on a blocking thread, off the
//! request path; the registry swaps versions atomically.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::plugin::Source;
use crate::registry::Registry;

/// Time a changed file must stay unchanged before it is read.
const SETTLE: Duration = Duration::from_millis(150);
/// Rescan even without events (missed events, network filesystems).
const RESCAN: Duration = Duration::from_secs(2);

type Stamp = (u64, SystemTime);

/// Top-level, non-hidden `*.wasm` files with their size and mtime.
fn candidates(dir: &Path) -> Vec<(PathBuf, Stamp)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<_> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name.ends_with(".wasm")
        })
        .filter_map(|e| {
            let meta = std::fs::metadata(e.path()).ok()?;
            meta.is_file().then(|| (e.path(), (meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH))))
        })
        .collect();
    out.sort();
    out
}

/// Loads one file into the registry (blocking).
fn load_file(registry: &Registry, path: &Path, stamp: Stamp) {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            registry.apply_file(path, stamp, String::new(), Err(crate::plugin::LoadError::Unreadable(e.to_string())));
            return;
        }
    };
    let sha = crate::runtime::sha256_hex(&bytes);
    if registry.file_record(path).is_some_and(|r| r.sha256 == sha) {
        // Touched but not changed: remember the new stamp only.
        registry.apply_file_stamp(path, stamp);
        return;
    }
    let loaded = registry.load(&bytes, Source::File(path.to_path_buf()));
    registry.apply_file(path, stamp, sha, loaded);
}

/// One pass over the directory. With `settle`, a changed file is loaded only
/// when it looked the same on the previous pass; returns whether some file
/// is still settling.
fn scan(registry: &Registry, dir: &Path, pending: &mut HashMap<PathBuf, Stamp>, settle: bool) -> bool {
    let found = candidates(dir);
    for known in registry.files() {
        if !found.iter().any(|(p, _)| *p == known) {
            registry.remove_file(&known);
        }
    }
    pending.retain(|p, _| found.iter().any(|(f, _)| f == p));
    for (path, stamp) in found {
        if registry.file_record(&path).is_some_and(|r| r.stamp == stamp) {
            pending.remove(&path);
            continue;
        }
        if settle && pending.get(&path) != Some(&stamp) {
            pending.insert(path, stamp);
            continue;
        }
        pending.remove(&path);
        load_file(registry, &path, stamp);
    }
    !pending.is_empty()
}

/// Loads the directory once, synchronously (startup: files are complete).
pub fn initial_scan(registry: &Registry, dir: &Path) {
    scan(registry, dir, &mut HashMap::new(), false);
}

/// Watches the directory until the process ends.
pub fn spawn(registry: Arc<Registry>, dir: PathBuf) -> anyhow::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Reading the directory is itself an event (inotify's open and
        // close-without-write): waking on it made every scan schedule the
        // next, 150 ms apart, forever — a busy loop that also kept a dozen
        // idle blocking threads from ever timing out.
        // A file closed after writing is still news.
        let written = |k: &EventKind| matches!(k, EventKind::Access(AccessKind::Close(AccessMode::Write)));
        if event.is_ok_and(|e| e.kind.is_access() && !written(&e.kind)) {
            return;
        }
        let _ = tx.send(());
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    tokio::spawn(async move {
        let _watcher = watcher; // dropping it would stop the events
        let mut pending = HashMap::new();
        let mut settling = false;
        loop {
            let wait = if settling { SETTLE } else { RESCAN };
            tokio::select! {
                got = rx.recv() => {
                    if got.is_none() { return; }
                    // Debounce: let a burst of events (write, rename) finish.
                    tokio::time::sleep(SETTLE).await;
                    while rx.try_recv().is_ok() {}
                }
                () = tokio::time::sleep(wait) => {}
            }
            let (r, d, mut p) = (registry.clone(), dir.clone(), std::mem::take(&mut pending));
            let result = tokio::task::spawn_blocking(move || {
                let settling = scan(&r, &d, &mut p, true);
                (settling, p)
            })
            .await;
            match result {
                Ok((s, p)) => {
                    settling = s;
                    pending = p;
                }
                Err(e) => tracing::error!("plugin scan failed: {e}"),
            }
        }
    });
    Ok(())
}
