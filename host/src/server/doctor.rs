//! `ludus doctor`: whether each bundled game is ready to play on this
//! machine, and what it lacks. The pure games need nothing; the ones with a
//! bundled program (the sidecars) need its interpreter, and install their
//! engine on first use.

use std::path::PathBuf;
use std::process::Command;

use crate::config::{Config, Endpoint};

use super::bundled::{BUNDLED, SIDECARS, Sidecar};

/// One game's verdict.
pub struct Verdict {
    pub game: &'static str,
    pub ready: bool,
    pub detail: String,
}

pub fn check(config: &Config) -> Vec<Verdict> {
    BUNDLED
        .iter()
        .map(|(game, _)| {
            let settings = config.plugins.get(*game);
            if settings.is_some_and(|p| p.disabled) {
                return Verdict { game, ready: false, detail: "turned off in the config (disabled = true)".into() };
            }
            match SIDECARS.iter().find(|car| car.plugin == *game) {
                None => Verdict { game, ready: true, detail: "ready (needs nothing else)".into() },
                Some(car) => match settings.and_then(|p| p.channels.get(car.endpoint)) {
                    Some(Endpoint::Disabled(_)) => {
                        Verdict { game, ready: false, detail: format!("`{}` turned off in the config", car.endpoint) }
                    }
                    Some(e) => {
                        Verdict { game, ready: true, detail: format!("uses the operator's `{}` endpoint ({})", car.endpoint, e.kind()) }
                    }
                    None => sidecar(game, car),
                },
            }
        })
        .collect()
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
        (None, _) => format!("{} installs on first use ({})", need.engine, need.size),
    };
    Verdict { game, ready: true, detail: format!("ready: {} {version}; {engine}{}", car.command, need.note) }
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
fn user_cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_are_read_from_what_the_programs_print() {
        assert_eq!(parse_version("v20.20.2"), (20, 20));
        assert_eq!(parse_version("Python 3.11.7"), (3, 11));
        assert_eq!(parse_version("nonsense"), (0, 0));
    }
}
