//! Processes an engine may run at once, capped by the kernel's pids
//! controller: a cgroup per engine process under one of this server's.
//! `RLIMIT_NPROC` is no substitute: it counts every process of the user
//! (the server's threads too) and does not bind root at all.
//!
//! Works on cgroup v1's `pids` hierarchy and on v2 where the server's own
//! cgroup lets it make children; elsewhere there is none, and the sandbox
//! says processes are not capped.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// This server's cgroup for its engines: `ludus-<pid>` under its own.
pub struct Parent {
    dir: PathBuf,
    v2: bool,
}

impl Parent {
    /// Makes this server's cgroup, or none where it may not.
    pub fn make() -> Option<Parent> {
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let (base, v2) = pids_hierarchy(&own)?;
        remove_stale(&base);
        let dir = base.join(format!("ludus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let parent = Parent { dir, v2 };
        if v2 {
            let _ = std::fs::write(parent.dir.join("cgroup.subtree_control"), "+pids");
        }
        // A child that cannot be made now will not be made later.
        let probe = parent.child("probe", 1)?;
        drop(probe);
        Some(parent)
    }

    pub fn kind(&self) -> &'static str {
        if self.v2 { "cgroup v2 pids.max" } else { "cgroup v1 pids.max" }
    }

    /// A cgroup for one engine process, allowing `max` processes and threads.
    pub fn child(&self, name: &str, max: u64) -> Option<Child> {
        let dir = self.dir.join(name);
        std::fs::create_dir(&dir).ok()?;
        // Made: removed again by its drop if what follows fails.
        let mut child = Child { procs: None, dir };
        std::fs::write(child.dir.join("pids.max"), max.to_string()).ok()?;
        child.procs = Some(std::fs::OpenOptions::new().write(true).open(child.dir.join("cgroup.procs")).ok()?);
        Some(child)
    }
}

impl Parent {
    /// Kills what is left in this server's engine cgroups and removes them,
    /// waiting a moment for the killed to be reaped: the server is stopping.
    pub fn sweep(&self) {
        let Ok(children) = std::fs::read_dir(&self.dir) else { return };
        children.flatten().map(|c| c.path()).filter(|c| c.is_dir()).for_each(|c| end_and_remove(&c));
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl Drop for Parent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Where the pids controller of this process's cgroup is: cgroup v1's
/// `pids` line, else v2's unified line (`0::PATH`).
fn pids_hierarchy(own: &str) -> Option<(PathBuf, bool)> {
    let root = Path::new("/sys/fs/cgroup");
    // `ID:CONTROLLERS:PATH`; a path may itself hold a colon.
    let lines = own.lines().filter_map(|l| l.split_once(':').and_then(|(_, rest)| rest.split_once(':')));
    let mut v2 = None;
    for (controllers, path) in lines {
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "pids") {
            return Some((root.join("pids").join(path), false));
        }
        if controllers.is_empty() {
            let unified = if root.join("cgroup.controllers").exists() { root.to_path_buf() } else { root.join("unified") };
            v2 = Some((unified.join(path), true));
        }
    }
    v2.filter(|(dir, _)| std::fs::read_to_string(dir.join("cgroup.controllers")).is_ok_and(|c| c.split_whitespace().any(|c| c == "pids")))
}

/// The cgroups of servers that are gone: `ludus-<pid>` whose process no
/// longer runs. What their engines left running (a server killed with
/// SIGKILL ends its engines only through their stdin's end) is killed first.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix("ludus-")).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            if let Ok(children) = std::fs::read_dir(entry.path()) {
                children.flatten().map(|c| c.path()).filter(|c| c.is_dir()).for_each(|c| end_and_remove(&c));
            }
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// One engine process's cgroup.
pub struct Child {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to write its pid into.
    procs: Option<File>,
}

impl Child {
    /// What the child runs to join, between fork and exec.
    pub fn joiner(&self) -> Joiner {
        Joiner(self.procs.as_ref().map_or(-1, AsRawFd::as_raw_fd))
    }

    /// Kills every process in the cgroup.
    pub fn kill_all(&self) {
        kill_all_in(&self.dir);
    }
}

impl Drop for Child {
    /// The cgroup goes once its processes are gone: killed ones take a
    /// moment to be reaped, so a thread waits for them rather than the caller.
    fn drop(&mut self) {
        self.kill_all();
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            for _ in 0..100 {
                std::thread::sleep(std::time::Duration::from_millis(20));
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    return;
                }
            }
        });
    }
}

/// Kills what runs in the engine cgroup `dir` and removes it once the
/// killed are reaped (half a second at most).
fn end_and_remove(dir: &Path) {
    kill_all_in(dir);
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Kills every process in the engine cgroup `dir`.
fn kill_all_in(dir: &Path) {
    let Ok(pids) = std::fs::read_to_string(dir.join("cgroup.procs")) else { return };
    for pid in pids.lines().filter_map(|p| p.trim().parse::<i32>().ok()).filter(|p| *p > 1) {
        // SAFETY: a plain system call on a process in one of this server's engine cgroups.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Joins the calling process to an engine's cgroup: safe between fork and
/// exec (a system call or two on an open file and a buffer on the stack).
#[derive(Clone, Copy)]
pub struct Joiner(i32);

impl Joiner {
    pub fn join(&self) -> std::io::Result<()> {
        if self.0 < 0 {
            return Ok(());
        }
        let mut digits = [0u8; 20];
        // SAFETY: getpid cannot fail.
        let mut pid = unsafe { libc::getpid() } as u64;
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (pid % 10) as u8;
            pid /= 10;
            if pid == 0 {
                break;
            }
        }
        let text = &digits[at..];
        // SAFETY: a write of a buffer that lives across the call, to a file this process holds open.
        let n = unsafe { libc::write(self.0, text.as_ptr().cast(), text.len()) };
        if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pids_hierarchy_is_found_in_v1_and_v2_listings() {
        let v1 = "9:name=systemd:/\n8:pids:/box\n0::/\n";
        assert_eq!(pids_hierarchy(v1), Some((PathBuf::from("/sys/fs/cgroup/pids/box"), false)));
        // A v2 line counts only where its directory has the pids controller: none here.
        assert_eq!(pids_hierarchy("0::/surely/not/a/cgroup/here\n"), None);
    }

    #[test]
    fn a_joiner_without_a_cgroup_does_nothing() {
        Joiner(-1).join().unwrap();
    }
}
