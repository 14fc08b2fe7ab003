//! What an engine process (a channel endpoint of kind `process`: the
//! Showdown simulator, the phase and OpenSpiel bridges, an operator's own
//! engine) may do. A game's WebAssembly is sandboxed by wasmtime; its engine
//! is a native program, so the kernel confines it instead. Each engine starts
//! with:
//!
//! - an empty environment, plus `PATH`, `LANG`, a `HOME` and `TMPDIR` of its
//!   own and what the operator grants (`[plugins.NAME.engine] env`, `pass_env`);
//! - its own scratch directory under the cache, removed when it ends;
//! - its own process group, `no_new_privs`, no core files;
//! - kernel limits: address space, CPU time, open files, file size, and
//!   processes through a cgroup's `pids.max` where one can be made (`cgroup`);
//! - Landlock (`landlock`): reads beneath the system's and its own
//!   directories, writes in its scratch directory only, no TCP unless a
//!   port is granted, no signals to processes outside it.
//!
//! The server-wide part (`Sandbox`) knows what the kernel offers; the
//! per-plugin part (`EngineRules`) what the operator granted. `Sandbox::jail`
//! puts them together for one process, before it is spawned: the child only
//! applies what was prepared (`Jail::confine`), as little as it may do
//! between fork and exec.

mod cgroup;
mod landlock;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::{BundledEngine, EngineLimits, Engines, LandlockPolicy, Sharing};

/// What one plugin's engine processes were granted, beyond their own
/// directory (the operator's `[plugins.NAME.engine]`, resolved at load).
#[derive(Debug, Clone, Default)]
pub struct EngineRules {
    pub env: Vec<(String, String)>,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub connect: Vec<u16>,
    pub limits: EngineLimits,
    /// How its games share processes, where its engine speaks tagged lines.
    pub sharing: Sharing,
}

/// One process to start: the program, its arguments and working directory.
pub struct Launch<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub cwd: Option<&'a Path>,
    pub bundled: Option<&'a BundledEngine>,
    /// The first-use install of a bundled engine: it may reach the network
    /// and write its package; nothing the game sends reaches it.
    pub installing: bool,
    /// A shared process: told so by `LUDUS_ENGINE_SHARED=1`, it tags every
    /// line with its game.
    pub shared: bool,
}

/// The environment an engine may have of the server's: what finds programs,
/// reads text and tells the time, and the settings that keep a numeric
/// library working on this processor (OpenBLAS's). Everything else is the
/// operator's to grant.
fn kept(name: &str) -> bool {
    ["PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS"].contains(&name) || name.starts_with("OPENBLAS_")
}

/// What a first-use install may have of the server's environment besides:
/// the registries and proxies it downloads through, as the user set them.
fn kept_for_install(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["pip_", "npm_config_", "uv_"].iter().any(|p| lower.starts_with(p))
        || [
            "http_proxy",
            "https_proxy",
            "no_proxy",
            "all_proxy",
            "ssl_cert_file",
            "ssl_cert_dir",
            "requests_ca_bundle",
            "node_extra_ca_certs",
        ]
        .contains(&lower.as_str())
        || name == "LUDUS_INSTALL_TIMEOUT_S"
}

/// The server's side: where scratch directories go, and what the kernel
/// offers to confine processes with.
pub struct Sandbox {
    /// This server's scratch directories: `<cache>/engines/<server pid>`.
    scratch: PathBuf,
    policy: LandlockPolicy,
    /// The kernel's Landlock ABI (0: none).
    abi: i32,
    /// A cgroup of the pids controller this server may make children in,
    /// made when the first engine starts.
    pids: std::sync::OnceLock<Option<cgroup::Parent>>,
    next: AtomicU64,
}

impl Sandbox {
    pub fn new(cache: Option<&Path>, engines: &Engines) -> Arc<Sandbox> {
        let root = cache.map(|c| c.join("engines")).unwrap_or_else(|| std::env::temp_dir().join("ludus-engines"));
        remove_stale_scratch(&root);
        Arc::new(Sandbox {
            scratch: root.join(std::process::id().to_string()),
            policy: engines.landlock,
            abi: landlock::abi(),
            pids: std::sync::OnceLock::new(),
            next: AtomicU64::new(0),
        })
    }

    /// What confines engine processes here, in a sentence (the start line,
    /// `ludus doctor`); and whether that is everything the sandbox can do.
    pub fn describe(&self) -> (String, bool) {
        let mut missing = Vec::new();
        let landlock = match self.abi {
            0 => {
                missing.push("Landlock");
                "no Landlock in this kernel: files and network are not confined".to_string()
            }
            1..=3 => {
                missing.push("Landlock's network rules (ABI 4)");
                format!("Landlock ABI {} confines files; TCP is not confined (needs ABI 4)", self.abi)
            }
            n => format!("Landlock ABI {n} confines files and TCP"),
        };
        let pids = match self.pids() {
            Some(p) => format!("processes capped by a cgroup ({})", p.kind()),
            None => {
                missing.push("a cgroup for processes");
                "processes not capped (no pids cgroup could be made here)".to_string()
            }
        };
        let refusing = self.refuses().map(|why| format!("; engines are refused: {why}")).unwrap_or_default();
        (
            format!(
                "engine processes: empty environment, own directory, no_new_privs, rlimits on memory, CPU, files; {landlock}; {pids}{refusing}"
            ),
            missing.is_empty(),
        )
    }

    /// The server is stopping: what its engines left (processes in their
    /// cgroups, scratch directories) goes now rather than at the next start.
    pub fn sweep(&self) {
        if let Some(pids) = self.pids.get().and_then(Option::as_ref) {
            pids.sweep();
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }

    fn pids(&self) -> Option<&cgroup::Parent> {
        self.pids.get_or_init(cgroup::Parent::make).as_ref()
    }

    /// Why no engine may start here, if the operator requires what the kernel lacks.
    pub fn refuses(&self) -> Option<String> {
        (self.policy == LandlockPolicy::Required && self.abi < 4).then(|| {
            format!(
                "[engines] landlock = \"required\", and this kernel's Landlock ABI is {} (4 or more is needed to confine TCP)",
                self.abi
            )
        })
    }

    /// Everything one process will be confined by, prepared before it is spawned.
    pub fn jail(&self, plugin: &str, rules: &EngineRules, launch: &Launch) -> std::io::Result<Jail> {
        if let Some(why) = self.refuses() {
            return Err(std::io::Error::other(why));
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let scratch = Scratch::make(&self.scratch.join(format!("{plugin}-{n}")))?;
        let env = environment(rules, launch, &scratch.0);
        let (read, write) = paths(rules, launch, &scratch.0);
        let confines = if launch.installing { landlock::Confines::Install } else { landlock::Confines::Engine };
        let connect = if launch.installing { &[][..] } else { &rules.connect[..] };
        let ruleset = landlock::ruleset(self.abi, confines, &read, &write, connect)?;
        let limits = if launch.installing { install_limits(&rules.limits) } else { rules.limits };
        let pids = self.pids().and_then(|p| p.child(&format!("{plugin}-{n}"), limits.processes));
        Ok(Jail { scratch, env, ruleset, limits, pids })
    }
}

/// A first-use install runs npm or pip, which start processes and take
/// memory of their own: it gets at least these, whatever the game's engine gets.
fn install_limits(engine: &EngineLimits) -> EngineLimits {
    EngineLimits {
        memory_mb: engine.memory_mb.max(4096),
        cpu_s: engine.cpu_s.max(900),
        processes: engine.processes.max(256),
        open_files: engine.open_files.max(4096),
        file_mb: engine.file_mb.max(1024),
    }
}

/// The engine's environment: the few variables it needs, its own home, and
/// what the operator granted; for an install, also the registries' settings.
fn environment(rules: &EngineRules, launch: &Launch, scratch: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| kept(k)).collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    let home = scratch.display().to_string();
    env.extend([("HOME".into(), home.clone()), ("TMPDIR".into(), home)]);
    if let Some(b) = launch.bundled {
        env.push(("XDG_CACHE_HOME".into(), b.user_cache.display().to_string()));
    }
    if launch.installing {
        env.extend(std::env::vars().filter(|(k, _)| kept_for_install(k)));
    }
    env.extend(rules.env.iter().cloned());
    if launch.shared {
        env.push(("LUDUS_ENGINE_SHARED".into(), "1".into()));
    }
    env
}

/// Where the engine may read, and where it may also write.
fn paths(rules: &EngineRules, launch: &Launch, scratch: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut read: Vec<PathBuf> = landlock::SYSTEM.iter().map(PathBuf::from).collect();
    read.extend(program_prefix(launch.program));
    // The program's own files: the directory of a file named by an absolute
    // argument (its script), a directory so named (a package, with the
    // `node_modules` it sits in: npm puts its dependencies beside it), and
    // the working directory the operator named.
    for arg in launch.args.iter().map(Path::new).filter(|p| p.is_absolute()) {
        if arg.is_file() {
            read.extend(arg.parent().into_iter().flat_map(with_link_targets));
        } else if arg.is_dir() {
            let modules = arg.ancestors().find(|a| a.file_name().is_some_and(|n| n == "node_modules"));
            read.push(modules.unwrap_or(arg).to_path_buf());
        }
    }
    read.extend(launch.cwd.map(Path::to_path_buf));
    read.extend(rules.read.iter().cloned());
    let mut write = vec![scratch.to_path_buf(), PathBuf::from("/dev/null")];
    write.extend(rules.write.iter().cloned());
    if let Some(b) = launch.bundled {
        read.push(b.package.clone());
        if let Some(data) = &b.data {
            // A rule names a directory that exists: made on first use.
            let _ = std::fs::create_dir_all(data);
            write.push(data.clone());
        }
        if let Some(beside) = b.package.parent().filter(|_| launch.installing) {
            // The install's lock file sits beside the package directory; a
            // rule names a directory that exists, so it is made first.
            let _ = std::fs::create_dir_all(beside);
            write.push(beside.to_path_buf());
        }
    }
    (read, write)
}

/// A program's directory, and where the links in it lead (a script's
/// helper module linked from a shared directory, as the bundled bridges' are).
fn with_link_targets(dir: &Path) -> Vec<PathBuf> {
    let links = std::fs::read_dir(dir).into_iter().flatten().flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_symlink()));
    let targets = links
        .filter_map(|e| e.path().canonicalize().ok())
        .filter_map(|t| if t.is_dir() { Some(t) } else { t.parent().map(Path::to_path_buf) });
    std::iter::once(dir.to_path_buf()).chain(targets).collect()
}

/// The installation a program belongs to: the directory above the one that
/// holds it (`/usr` for `/usr/bin/node`, a pyenv's root for its shim), both
/// as found on the PATH and with its links resolved (a venv's `python` is a
/// link into the interpreter it was made from).
fn program_prefix(program: &str) -> Vec<PathBuf> {
    let found = if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file()))
    };
    let Some(found) = found else { return Vec::new() };
    let resolved = found.canonicalize().ok();
    [Some(found), resolved].into_iter().flatten().filter_map(|p| p.parent().and_then(Path::parent).map(Path::to_path_buf)).collect()
}

/// Everything prepared for one process; `confine` applies it in the child.
pub struct Jail {
    scratch: Scratch,
    env: Vec<(String, String)>,
    ruleset: Option<std::os::fd::OwnedFd>,
    limits: EngineLimits,
    pids: Option<cgroup::Child>,
}

impl Jail {
    /// Sets up `cmd` to start confined. What outlives the spawn (the scratch
    /// directory, the cgroup) comes back to be held while the process runs.
    pub fn confine(self, cmd: &mut tokio::process::Command) -> Confined {
        let Jail { scratch, env, ruleset, limits, pids } = self;
        cmd.env_clear().envs(env).process_group(0);
        if cmd.as_std().get_current_dir().is_none() {
            cmd.current_dir(&scratch.0);
        }
        let joins = pids.as_ref().map(cgroup::Child::joiner);
        let rlimits = rlimits(&limits);
        // SAFETY: the closure runs in the child between fork and exec, where
        // only async-signal-safe calls are sound. It makes system calls only
        // (setrlimit, prctl, write, open, landlock_add_rule,
        // landlock_restrict_self) on values prepared above; nothing
        // allocates or takes a lock.
        unsafe {
            cmd.pre_exec(move || {
                for (resource, value) in rlimits {
                    let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
                    if libc::setrlimit(resource, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(joins) = &joins {
                    joins.join()?;
                }
                if let Some(ruleset) = &ruleset {
                    landlock::restrict_self(ruleset)?;
                }
                Ok(())
            });
        }
        Confined { _scratch: scratch, pids }
    }
}

/// The kernel limits, as (resource, value) pairs for `setrlimit`.
fn rlimits(l: &EngineLimits) -> [(libc::__rlimit_resource_t, libc::rlim_t); 5] {
    [
        (libc::RLIMIT_AS, l.memory_mb.saturating_mul(1 << 20)),
        (libc::RLIMIT_CPU, l.cpu_s),
        (libc::RLIMIT_NOFILE, l.open_files),
        (libc::RLIMIT_FSIZE, l.file_mb.saturating_mul(1 << 20)),
        (libc::RLIMIT_CORE, 0),
    ]
}

/// What a running engine holds: its scratch directory and its cgroup, both
/// removed when it ends (its remaining processes are killed first).
pub struct Confined {
    _scratch: Scratch,
    pids: Option<cgroup::Child>,
}

impl Confined {
    /// Ends every process the engine started, then the engine's own group.
    pub fn end(&self, pgid: Option<u32>) {
        if let Some(pids) = &self.pids {
            pids.kill_all();
        }
        if let Some(pgid) = pgid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) {
            // SAFETY: a plain system call; the group is the engine's own
            // (`process_group(0)` made it), and it lives while any member does.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
    }
}

/// An engine's scratch directory (its `HOME`, `TMPDIR` and working directory).
struct Scratch(PathBuf);

impl Scratch {
    fn make(dir: &Path) -> std::io::Result<Scratch> {
        std::fs::create_dir_all(dir)?;
        Ok(Scratch(dir.to_path_buf()))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Scratch directories of servers that are gone (killed before they could
/// remove them): `<root>/<pid>` whose process no longer runs.
fn remove_stale_scratch(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let pid = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_keeps_only_the_allowed_environment_and_its_grants() {
        let rules = EngineRules { env: vec![("GRANTED".into(), "1".into())], ..EngineRules::default() };
        let launch = Launch { program: "true", args: &[], cwd: None, bundled: None, installing: false, shared: false };
        let env = environment(&rules, &launch, Path::new("/scratch"));
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert!(names.iter().all(|n| kept(n) || ["HOME", "TMPDIR", "GRANTED"].contains(n)), "{names:?}");
        assert!(env.contains(&("HOME".into(), "/scratch".into())));
        assert!(kept_for_install("PIP_INDEX_URL") && kept_for_install("npm_config_registry") && kept_for_install("HTTPS_PROXY"));
        assert!(!kept_for_install("AWS_SECRET_ACCESS_KEY") && !kept_for_install("PIPELINE"));
    }

    #[test]
    fn a_program_on_the_path_is_read_from_its_installation() {
        let prefixes = program_prefix("sh");
        assert!(prefixes.iter().any(|p| p == Path::new("/usr") || p == Path::new("/")), "{prefixes:?}");
        assert!(program_prefix("surely-no-such-program-here").is_empty());
    }
}
