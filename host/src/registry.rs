//! The loaded plugins and their tools. Versions are swapped atomically: a new
//! version becomes visible only after it compiled, linked, described itself
//! and passed every naming check; a failed load keeps the last good version
//! and records the error where `ludus_games` shows it.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::config::Config;
use crate::plugin::{LoadError, Plugin, Source};
use crate::runtime::Runtime;
use crate::session::Sessions;

/// Tool names that belong to the host itself.
pub const HOST_PREFIX: &str = "ludus";

struct Entry {
    active: Arc<Plugin>,
    /// The built-in version, restored when an overriding file goes away.
    builtin: Option<Arc<Plugin>>,
    error: Option<String>,
}

/// What the watcher last saw of a file in the plugins directory.
#[derive(Clone)]
pub struct FileRecord {
    pub stamp: (u64, SystemTime),
    pub sha256: String,
    /// The plugin this file provides, once it loaded.
    pub plugin: Option<String>,
    pub error: Option<String>,
}

#[derive(Default)]
struct State {
    plugins: BTreeMap<String, Entry>,
    /// Tool name → plugin name.
    tools: BTreeMap<String, String>,
    files: BTreeMap<PathBuf, FileRecord>,
    /// Tools that went away, and why (for a clearer error than "unknown tool").
    removed: HashMap<String, String>,
    fingerprint: u64,
}

pub struct Registry {
    pub runtime: Arc<Runtime>,
    pub config: Arc<Config>,
    pub sessions: Arc<Sessions>,
    state: RwLock<State>,
    changed: broadcast::Sender<()>,
    /// True while the plugins directory's first scan runs (in the
    /// background: a first compile can take a while); see `settled`.
    scanning: tokio::sync::watch::Sender<bool>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct GameStatus {
    pub name: String,
    pub title: String,
    pub version: String,
    pub source: String,
    pub status: &'static str,
    pub tools: Vec<String>,
    /// Its games survive a restart of the server (the plugin hands the host
    /// its state, and the server keeps a store).
    pub durable: bool,
    pub live_sessions: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub struct FileStatus {
    pub file: String,
    pub sha256: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Registry {
    pub fn new(runtime: Arc<Runtime>, config: Arc<Config>, sessions: Arc<Sessions>) -> Arc<Registry> {
        let scanning = tokio::sync::watch::channel(false).0;
        Arc::new(Registry { runtime, config, sessions, state: RwLock::default(), changed: broadcast::channel(16).0, scanning })
    }

    /// The plugins directory's first scan starts, or has ended.
    pub fn set_scanning(&self, scanning: bool) {
        self.scanning.send_replace(scanning);
    }

    /// Whether the plugins directory's first scan still runs.
    pub fn scanning(&self) -> bool {
        *self.scanning.borrow()
    }

    /// Waits until the plugins directory's first scan has ended, at most
    /// `within`. A list answered before then lacks the plugins still being
    /// compiled; they follow with `list_changed`.
    pub async fn settled(&self, within: std::time::Duration) {
        let mut scanning = self.scanning.subscribe();
        let _ = tokio::time::timeout(within, scanning.wait_for(|s| !s)).await;
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Fires whenever the visible tool set or a schema changed.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.changed.subscribe()
    }

    pub fn add_builtin(&self, plugin: Plugin) -> Result<(), LoadError> {
        let plugin = Arc::new(plugin);
        let mut st = self.write();
        check_collisions(&st, &plugin)?;
        st.plugins.insert(plugin.name.clone(), Entry { active: plugin.clone(), builtin: Some(plugin), error: None });
        self.refresh(&mut st);
        Ok(())
    }

    pub fn file_record(&self, path: &Path) -> Option<FileRecord> {
        self.read().files.get(path).cloned()
    }

    pub fn files(&self) -> Vec<PathBuf> {
        self.read().files.keys().cloned().collect()
    }

    /// Installs what loading a file gave. On failure the file's last good
    /// plugin version stays active and carries the error.
    pub fn apply_file(&self, path: &Path, stamp: (u64, SystemTime), sha256: String, loaded: Result<Plugin, LoadError>) {
        let mut st = self.write();
        let previous = st.files.get(path).and_then(|r| r.plugin.clone());
        let outcome = loaded.and_then(|p| {
            let p = Arc::new(p);
            if let Some((other, _)) = st.files.iter().find(|(f, r)| *f != path && r.plugin.as_deref() == Some(&p.name)) {
                return Err(LoadError::Contract(format!("plugin `{}` is already provided by {}", p.name, other.display())));
            }
            check_collisions(&st, &p)?;
            Ok(p)
        });
        let record = match outcome {
            Ok(plugin) => {
                let name = plugin.name.clone();
                tracing::info!(plugin = name, version = plugin.version, file = %path.display(), "plugin loaded");
                for grant in &plugin.granted {
                    tracing::info!(plugin = name, "granted {grant}");
                }
                if let Some(prev) = previous.as_ref().filter(|p| **p != name) {
                    retire(&mut st, prev);
                }
                let builtin = st.plugins.get(&name).and_then(|e| e.builtin.clone());
                st.plugins.insert(name.clone(), Entry { active: plugin, builtin, error: None });
                FileRecord { stamp, sha256, plugin: Some(name), error: None }
            }
            Err(e) => {
                tracing::error!(file = %path.display(), "plugin not loaded: {e}");
                if let Some(entry) = previous.as_ref().and_then(|p| st.plugins.get_mut(p)) {
                    entry.error = Some(format!("{}: {e} (still serving the last good version)", path.display()));
                }
                FileRecord { stamp, sha256, plugin: previous, error: Some(e.to_string()) }
            }
        };
        st.files.insert(path.to_path_buf(), record);
        self.refresh(&mut st);
    }

    /// The file was touched but its contents are unchanged.
    pub fn apply_file_stamp(&self, path: &Path, stamp: (u64, SystemTime)) {
        if let Some(r) = self.write().files.get_mut(path) {
            r.stamp = stamp;
        }
    }

    /// A file left the plugins directory: its plugin goes (or falls back to the built-in).
    pub fn remove_file(&self, path: &Path) {
        let mut st = self.write();
        if let Some(name) = st.files.remove(path).and_then(|r| r.plugin) {
            tracing::info!(plugin = name, file = %path.display(), "plugin file removed");
            retire(&mut st, &name);
        }
        self.refresh(&mut st);
    }

    /// Recomputes the tool index; notifies when the visible tools changed.
    fn refresh(&self, st: &mut State) {
        let mut tools = BTreeMap::new();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for (name, entry) in &st.plugins {
            for t in &entry.active.tools {
                tools.insert(t.name.clone(), name.clone());
                // What clients see of the tool: a new version whose tools read
                // the same is no change to tell them of.
                (&t.name, serde_json::to_string(&t.listing).unwrap_or_default(), format!("{:?}", t.result)).hash(&mut hasher);
            }
        }
        for (old, plugin) in &st.tools {
            if !tools.contains_key(old) {
                st.removed.insert(old.clone(), format!("plugin `{plugin}` was unloaded"));
            }
        }
        for new in tools.keys() {
            st.removed.remove(new);
        }
        st.tools = tools;
        let fingerprint = hasher.finish();
        if fingerprint != st.fingerprint {
            st.fingerprint = fingerprint;
            let _ = self.changed.send(());
        }
    }

    /// The plugin serving a tool, or why there is none.
    pub fn find_tool(&self, name: &str) -> Result<(Arc<Plugin>, usize), String> {
        let st = self.read();
        let Some(plugin) = st.tools.get(name).and_then(|p| st.plugins.get(p)) else {
            return Err(match st.removed.get(name) {
                Some(why) => format!("tool `{name}` is gone: {why}. Call tools/list for the current tools."),
                None => format!("unknown tool `{name}`.{} Call tools/list for the current tools.", did_you_mean(name, st.tools.keys())),
            });
        };
        let plugin = plugin.active.clone();
        let index = plugin.tools.iter().position(|t| t.name == name).expect("indexed tool exists");
        Ok((plugin, index))
    }

    pub fn plugins(&self) -> Vec<Arc<Plugin>> {
        self.read().plugins.values().map(|e| e.active.clone()).collect()
    }

    pub fn plugin(&self, name: &str) -> Option<Arc<Plugin>> {
        self.read().plugins.get(name).map(|e| e.active.clone())
    }

    pub fn status(&self) -> (Vec<GameStatus>, Vec<FileStatus>) {
        let st = self.read();
        let live = self.sessions.count_by_plugin();
        let games = st
            .plugins
            .values()
            .map(|e| {
                let p = &e.active;
                GameStatus {
                    name: p.name.clone(),
                    title: p.title.clone(),
                    version: p.version.clone(),
                    source: p.source.to_string(),
                    status: if e.error.is_some() { "error (serving last good version)" } else { "ok" },
                    tools: p.tools.iter().map(|t| t.name.clone()).collect(),
                    durable: p.durable.is_some() && self.sessions.is_durable(),
                    live_sessions: live.get(&p.name).copied().unwrap_or(0),
                    last_error: e.error.clone(),
                }
            })
            .collect();
        let files = st
            .files
            .iter()
            .map(|(f, r)| FileStatus {
                file: f.display().to_string(),
                sha256: r.sha256.clone(),
                plugin: r.plugin.clone(),
                error: r.error.clone(),
            })
            .collect();
        (games, files)
    }
}

/// Takes a file-provided plugin out, restoring the built-in it overrode.
fn retire(st: &mut State, name: &str) {
    match st.plugins.get(name).and_then(|e| e.builtin.clone()) {
        Some(b) => {
            st.plugins.insert(name.to_string(), Entry { active: b.clone(), builtin: Some(b), error: None });
        }
        None => {
            st.plugins.remove(name);
        }
    }
}

/// Refuses a plugin whose tools would collide with another plugin's (never renames silently).
fn check_collisions(st: &State, p: &Plugin) -> Result<(), LoadError> {
    if p.name == HOST_PREFIX {
        return Err(LoadError::Contract(format!("the plugin name `{HOST_PREFIX}` is reserved for the host's own tools")));
    }
    for t in &p.tools {
        if t.name.starts_with(&format!("{HOST_PREFIX}_")) {
            return Err(LoadError::Contract(format!("tool `{}` uses the host's reserved prefix `{HOST_PREFIX}_`", t.name)));
        }
        if let Some(owner) = st.tools.get(&t.name).filter(|o| **o != p.name) {
            return Err(LoadError::Contract(format!(
                "tool `{}` collides with the tool of the same name from plugin `{owner}`; set another prefix in the config ([plugins.{}] prefix = \"…\")",
                t.name, p.name
            )));
        }
    }
    Ok(())
}

impl Registry {
    /// Loads a component from bytes (blocking: compiles).
    pub fn load(&self, bytes: &[u8], source: Source) -> Result<Plugin, LoadError> {
        self.served(Plugin::load(&self.runtime, &self.config, bytes, source)?)
    }

    /// Loads a bundled game, with what was compiled of it when Ludus was
    /// built (blocking: compiles where that does not load).
    pub fn load_bundled(&self, bytes: &[u8], precompiled: &[u8]) -> Result<Plugin, LoadError> {
        self.served(Plugin::load_bundled(&self.runtime, &self.config, bytes, precompiled)?)
    }

    /// `plugin`, unless the operator disabled it or serves other games.
    fn served(&self, plugin: Plugin) -> Result<Plugin, LoadError> {
        if self.config.plugins.get(&plugin.name).is_some_and(|c| c.disabled) {
            return Err(LoadError::Disabled(plugin.name));
        }
        if !self.config.serves(&plugin.name) {
            return Err(LoadError::NotServed(plugin.name));
        }
        Ok(plugin)
    }
}

/// " Did you mean `a` or `b`?" for the tools whose names come nearest to
/// `name` (an agent's typo, a tool of another prefix), or "". Edit distance
/// relative to the length, not Jaro-Winkler: that one rewards the shared
/// game prefix, so every tool of the game came near.
fn did_you_mean<'a>(name: &str, tools: impl Iterator<Item = &'a String>) -> String {
    // The part after the game's prefix: `toh_get_state` is `hanoi_get_state` renamed.
    fn action(n: &str) -> &str {
        n.split_once('_').map_or(n, |(_, rest)| rest)
    }
    let mut near: Vec<(f64, &String)> = tools
        .map(|t| {
            let same_action = action(t) == action(name) && action(name) != name;
            (if same_action { 1.0 } else { strsim::normalized_damerau_levenshtein(name, t) }, t)
        })
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let names: Vec<String> = near.iter().take(3).map(|(_, t)| format!("`{t}`")).collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => format!(" Did you mean {one}?"),
        [rest @ .., last] => format!(" Did you mean {} or {last}?", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn an_unknown_tool_is_answered_with_the_nearest_names() {
        let tools: Vec<String> =
            ["hanoi_get_state", "hanoi_reset_simulator", "hanoi_execute_move", "hanoi_execute_moves", "chess_finish_turn"]
                .map(String::from)
                .into();
        assert_eq!(did_you_mean("hanoi_getstate", tools.iter()), " Did you mean `hanoi_get_state`?");
        assert_eq!(did_you_mean("toh_get_state", tools.iter()), " Did you mean `hanoi_get_state`?");
        assert!(did_you_mean("hanoi_execute_mov", tools.iter()).contains("`hanoi_execute_move` or `hanoi_execute_moves`"));
        assert_eq!(did_you_mean("fly_to_the_moon", tools.iter()), "");
    }
}
