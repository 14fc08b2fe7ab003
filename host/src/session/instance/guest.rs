//! The guest: a session's component instance and what it printed. One lock
//! (`Session::guest`) holds the instance for the length of a call into it,
//! so calls and events on one session run one at a time; a trap leaves the
//! slot dead with the reason, and every later call says it.

use wasmtime::component::Instance;
use wasmtime::{Store, Trap};

use crate::capability::{HostState, Output};
use crate::config::PluginLimits;
use crate::records::{Seat, Told};

pub(super) struct Guest {
    pub slot: Slot,
    /// The end of what the guest last said on stderr: a crash's message.
    last_stderr: String,
}

pub(super) enum Slot {
    Live(Box<Live>),
    Dead(String),
}

pub(super) struct Live {
    pub store: Store<HostState>,
    pub instance: Instance,
}

/// What a call into the guest told the host besides its result.
pub(super) struct Said {
    /// The guest asked to wait (milliseconds, 0 = the tool's default).
    pub wait: Option<u32>,
    /// `lifecycle.game-over`.
    pub over: bool,
    /// `outcome.tell`.
    pub told: Option<Told>,
    /// `seats.tell`.
    pub seats: Option<Vec<Seat>>,
    /// Who made the call (empty in an event), when the game told where it stands.
    pub caller: String,
}

impl Guest {
    /// A guest whose instance is not made yet.
    pub fn starting() -> Guest {
        Guest { slot: Slot::Dead("the session is still starting".into()), last_stderr: String::new() }
    }

    /// Why the guest is gone, if it is.
    pub fn dead(&self) -> Option<&str> {
        match &self.slot {
            Slot::Dead(why) => Some(why),
            Slot::Live(_) => None,
        }
    }

    /// Sends what the guest printed to the log, never to stdout, and keeps
    /// the end of its stderr for a crash's message.
    pub fn flush(&mut self, plugin: &str, output: &Output) {
        for (stream, out) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            let (text, dropped) = out.take();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                tracing::info!(target: "ludus::guest", plugin, stream, "{line}");
            }
            if dropped > 0 {
                tracing::warn!(target: "ludus::guest", plugin, stream, "dropped {dropped} bytes of guest output over the per-call limit");
            }
            if stream == "stderr" && !text.is_empty() {
                self.last_stderr = text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
            }
        }
    }

    /// Why a call trapped, in words for the player.
    pub fn trap_reason(&self, e: &wasmtime::Error, memory_limit_hit: bool, limits: &PluginLimits) -> String {
        if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return format!("the plugin ran past its CPU limit of {} ms for one call and was stopped", limits.call_timeout.as_millis());
        }
        if memory_limit_hit {
            return format!("the plugin ran out of memory (limit {} MiB per session)", limits.memory_bytes >> 20);
        }
        let detail = panic_message(&self.last_stderr);
        let trap = e.downcast_ref::<Trap>().map(|t| t.to_string()).unwrap_or_else(|| format!("{e:#}"));
        if detail.is_empty() { format!("the plugin crashed ({trap})") } else { format!("the plugin crashed: {detail} ({trap})") }
    }
}

/// What the guest told the host during the call just made (taken: the
/// next call starts with none).
pub(super) fn take_said(state: &mut HostState) -> Said {
    let host = &mut state.host;
    let caller = if host.told.is_some() { host.call.caller.clone() } else { String::new() };
    Said { wait: host.wait.take(), over: std::mem::take(&mut host.game_over), told: host.told.take(), seats: host.seats.take(), caller }
}

/// What a guest said on stderr as it crashed: a Python exception
/// (componentize-py prints the traceback, then panics in its Rust runtime:
/// the exception is the useful part); a Rust panic ("panicked at …:" then
/// the message); a JavaScript error (componentize-js prints the message, then
/// "Stack:" and frames, then its own abort notice); otherwise the last line.
fn panic_message(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("note: run with")).collect();
    if let Some(t) = lines.iter().rposition(|l| l.starts_with("Traceback (most recent call last)")) {
        let traceback = &lines[t + 1..];
        let traceback = &traceback[..traceback.iter().position(|l| l.contains("panicked at")).unwrap_or(traceback.len())];
        if let Some(exception) = traceback.last() {
            let frame = traceback.iter().rev().find(|l| l.starts_with("File \"")).map(|f| format!(" ({f})")).unwrap_or_default();
            return format!("{exception}{frame}");
        }
    }
    if let Some(i) = lines.iter().rposition(|l| l.contains("panicked at")) {
        let location = lines[i].split("panicked at").nth(1).unwrap_or("").trim().trim_end_matches(':');
        let message = lines[i + 1..].join(" ");
        return format!("panicked: {message} (at {location})");
    }
    if let Some(i) = lines.iter().rposition(|l| *l == "Stack:").filter(|&i| i > 0) {
        let frame = lines.get(i + 1).map(|f| format!(" (at {f})")).unwrap_or_default();
        return format!("{}{frame}", lines[i - 1]);
    }
    lines.last().map(|l| l.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::panic_message;

    #[test]
    fn crash_messages_of_each_language() {
        let rust = "thread '<unnamed>' panicked at src/lib.rs:3:5:\nboom\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(panic_message(rust), "panicked: boom (at src/lib.rs:3:5)");
        let js = "boom error\nStack:\n  fail@probe.js:15:56\n  export_tools$fail@initializer.js:486:15\nRedirecting call to abort() to mozalloc_abort\n";
        assert_eq!(panic_message(js), "boom error (at fail@probe.js:15:56)");
        let python = "Traceback (most recent call last):\n  File \"/0/probe.py\", line 39, in fail\nValueError: raised on purpose\n\
                      thread '<unnamed>' (1) panicked at runtime/src/lib.rs:1280:25:\nPython function threw an unexpected exception\n";
        assert_eq!(panic_message(python), "ValueError: raised on purpose (File \"/0/probe.py\", line 39, in fail)");
        assert_eq!(panic_message("first\nlast words\n"), "last words");
    }
}
