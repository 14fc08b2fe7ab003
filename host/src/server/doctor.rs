//! `ludus doctor`: whether each bundled game is ready to play on this
//! machine, and what it lacks. The pure games need nothing; the ones with a
//! bundled program (the sidecars) need its interpreter, and install their
//! engine on first use: until it is installed, the registry it comes from is
//! asked, the way the install will ask it (npm's own `npm ping`; Python's
//! HTTP client for pip's index), so that a registry out of reach or a proxy
//! certificate the machine lacks shows here rather than in a game.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::config::{Config, Endpoint};

use super::bundled::{BUNDLED, Registry, SIDECARS, Sidecar};

/// The longest a registry has to answer `ludus doctor`.
const REGISTRY_LIMIT: Duration = Duration::from_secs(20);

/// One game's verdict.
pub struct Verdict {
    pub game: &'static str,
    pub ready: bool,
    pub detail: String,
}

pub fn check(config: &Config) -> Vec<Verdict> {
    let games = BUNDLED.iter().map(|bundled| {
        let game = bundled.name;
        let settings = config.plugins.get(game);
        if settings.is_some_and(|p| p.disabled) {
            return Verdict { game, ready: false, detail: "turned off in the config (disabled = true)".into() };
        }
        match SIDECARS.iter().find(|car| car.plugin == game) {
            None => Verdict { game, ready: true, detail: "ready (needs nothing else)".into() },
            Some(car) => match settings.and_then(|p| p.channels.get(car.endpoint)) {
                Some(Endpoint::Disabled(_)) => {
                    Verdict { game, ready: false, detail: format!("`{}` turned off in the config", car.endpoint) }
                }
                Some(e) => Verdict { game, ready: true, detail: format!("uses the operator's `{}` endpoint ({})", car.endpoint, e.kind()) },
                None => sidecar(game, car),
            },
        }
    });
    games.chain(std::iter::once(sandbox(config))).collect()
}

/// What confines engine processes on this machine: not ready only where the
/// operator requires Landlock and the kernel lacks it.
fn sandbox(config: &Config) -> Verdict {
    let sandbox = crate::runtime::sandbox::Sandbox::new(None, &config.engines);
    let (said, whole) = sandbox.describe();
    let l = &config.engines.limits;
    let limits = format!(
        "; limits per engine ([engines]): {} MiB address space, {} s CPU, {} processes, {} open files, {} MiB files",
        l.memory_mb, l.cpu_s, l.processes, l.open_files, l.file_mb
    );
    let refused = sandbox.refuses().is_some();
    let note = if whole || refused { "" } else { " (engines run with what there is: [engines] landlock = \"best-effort\")" };
    Verdict { game: "sandbox", ready: !refused, detail: format!("{said}{note}{limits}") }
}

fn sidecar(game: &'static str, car: &Sidecar) -> Verdict {
    let need = &car.needs;
    let Some(version) = version_of(car.command) else {
        return Verdict { game, ready: false, detail: format!("`{}` is not on the PATH: {}", car.command, need.fix) };
    };
    if parse_version(&version) < need.min {
        return Verdict {
            game,
            ready: false,
            detail: format!("`{}` is {version}; {} {}.{} or newer is needed: {}", car.command, need.what, need.min.0, need.min.1, need.fix),
        };
    }
    let installed = Some(user_cache().join(need.installed)).filter(|p| p.exists());
    let engine = match (installed, need.installer) {
        (Some(p), _) => format!("{} installed in {}", need.engine, p.parent().map_or(p.clone(), PathBuf::from).display()),
        (None, Some(tool)) if version_of(tool).is_none() => {
            return Verdict {
                game,
                ready: false,
                detail: format!("{} is not installed yet and `{tool}` is missing to install it: {}", need.engine, need.fix),
            };
        }
        (None, _) => match registry_answers(need.registry, car.command) {
            Ok(()) => format!("{} installs on first use ({}; the registry answers)", need.engine, need.size),
            Err(why) => {
                return Verdict {
                    game,
                    ready: false,
                    detail: format!("{} is not installed yet, and its registry does not answer: {why}", need.engine),
                };
            }
        },
    };
    Verdict { game, ready: true, detail: format!("ready: {} {version}; {engine}{}", car.command, need.note) }
}

/// Whether `registry` answers from here, asked as the install asks it.
fn registry_answers(registry: Registry, interpreter: &str) -> Result<(), String> {
    let mut cmd = match registry {
        Registry::Npm => {
            let mut npm = Command::new("npm");
            npm.args(["ping", "--fetch-retries=0", "--fetch-timeout=15000"]);
            npm
        }
        Registry::PyPI => {
            let probe = "import os, urllib.request\n\
                         index = os.environ.get('PIP_INDEX_URL') or 'https://pypi.org/simple'\n\
                         urllib.request.urlopen(index.rstrip('/') + '/phase-python/', timeout=15).read(1)\n";
            let mut python = Command::new(interpreter);
            python.args(["-c", probe]);
            python
        }
    };
    let what = match registry {
        Registry::Npm => "`npm ping`",
        Registry::PyPI => "the Python package index",
    };
    run_within(&mut cmd, REGISTRY_LIMIT).map_err(|why| format!("{what}: {why}"))
}

/// Runs `cmd` to its end within `limit`; its last words when it fails or
/// is stopped.
fn run_within(cmd: &mut Command, limit: Duration) -> Result<(), String> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= limit => {
                let _ = child.kill();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let last = last_words(&text);
    match status {
        Some(s) if s.success() => Ok(()),
        Some(_) => Err(if last.is_empty() { "it failed and said nothing".into() } else { last }),
        None => {
            Err(format!("no answer within {} s{}", limit.as_secs(), if last.is_empty() { String::new() } else { format!(" ({last})") }))
        }
    }
}

/// What a failing program said that explains it: its last line naming an
/// error (`FetchError: … reason: …`, `URLError: …`), else its last line.
fn last_words(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("at ")).collect();
    let telling = lines.iter().rev().find(|l| l.contains("Error:") || l.contains("reason:")).or(lines.last());
    telling.map_or(String::new(), |l| l.chars().take(400).collect())
}

/// `program --version`'s first line, if the program runs.
fn version_of(program: &str) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    let text = if out.stdout.is_empty() { out.stderr } else { out.stdout };
    Some(String::from_utf8_lossy(&text).lines().next().unwrap_or("").trim().to_string())
}

/// (major, minor) of the first version-looking word: `v20.20.2`, `Python 3.11.7`.
fn parse_version(text: &str) -> (u32, u32) {
    let word = text.split_whitespace().find(|w| w.trim_start_matches('v').starts_with(|c: char| c.is_ascii_digit())).unwrap_or("");
    let mut parts = word.trim_start_matches('v').split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Where the sidecars install their engines: the user cache, shared by every
/// server of the user (not the server's component `cache_dir`).
pub fn user_cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
}

#[cfg(test)]
mod tests {
    use super::{last_words, parse_version};

    #[test]
    fn a_failing_installer_is_quoted_by_its_error_line() {
        let npm = "npm error code ECONNREFUSED\nnpm error FetchError: request to http://127.0.0.1:9/-/ping failed, reason: connect \
                   ECONNREFUSED\nnpm error     at ClientRequest.<anonymous> (x.js:1)\nnpm error A complete log of this run can be found in: /x";
        assert!(last_words(npm).contains("reason: connect ECONNREFUSED"), "{}", last_words(npm));
        assert_eq!(last_words("one\ntwo\n"), "two");
    }

    #[test]
    fn versions_are_read_from_what_the_programs_print() {
        assert_eq!(parse_version("v20.20.2"), (20, 20));
        assert_eq!(parse_version("Python 3.11.7"), (3, 11));
        assert_eq!(parse_version("nonsense"), (0, 0));
    }
}
