//! The process table, read from `/proc`: which game processes a server has
//! started and which are still alive (zombies count as gone). Shared by the
//! tests and the benchmarks.
#![allow(dead_code)]

/// What `/proc/PID/stat` says of a process: its command, state and parent.
struct Stat {
    comm: String,
    state: String,
    ppid: u32,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = text.rsplit_once(')')?;
    let comm = head.split_once('(').map_or("", |(_, c)| c).to_string();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    let ppid = fields.next()?.parse().ok()?;
    Some(Stat { comm, state, ppid })
}

/// Every process, with its stat, except zombies.
fn living() -> Vec<(u32, Stat)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .filter(|(_, s)| s.state != "Z")
        .collect()
}

/// Living processes whose command line contains `marker`: a test's scratch
/// directory is in its server's arguments and in those of the channel
/// processes it starts from its cache directory.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let cmdline = |pid: u32| String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default()).replace('\0', " ");
    living().into_iter().map(|(pid, _)| pid).filter(|&pid| cmdline(pid).contains(marker)).collect()
}

/// Living child processes of `pid` whose command (`comm`) is `command`.
pub fn children_named(pid: u32, command: &str) -> Vec<u32> {
    living().into_iter().filter(|(_, s)| s.ppid == pid && s.comm == command).map(|(p, _)| p).collect()
}

/// Living processes descended from `pid` (its game processes and theirs).
pub fn descendants(pid: u32) -> Vec<u32> {
    let all = living();
    let mut found = vec![pid];
    let mut grew = true;
    while grew {
        grew = false;
        for (p, s) in &all {
            if !found.contains(p) && found.contains(&s.ppid) {
                found.push(*p);
                grew = true;
            }
        }
    }
    found.remove(0);
    found
}
