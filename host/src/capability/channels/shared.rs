//! Shared engine processes: one process serves the channels of many games.
//!
//! A process endpoint whose program speaks tagged lines (`tagged = true`;
//! the program sees `LUDUS_ENGINE_SHARED=1`) is started once per engine and
//! shard, not once per game. Each game keeps what looks like its own channel;
//! the host carries those channels over the one process:
//!
//! - to the engine, `N LINE` is a line of game `N` (a number above 0 the
//!   host chose), and `-N` says game `N` is gone: the engine frees its state;
//! - from the engine, `N LINE` is a line for game `N`, `-N REASON` ends game
//!   `N`'s channel alone (its `on-closed` says REASON), and anything else is
//!   logged, never shown to a game.
//!
//! A game joins the process of its engine with the fewest games, starting
//! another while there are fewer than `shards` or every one holds
//! `games_per_process`. A process with no game left ends at once. When one
//! ends by itself (a crash, a kill), every game it held gets `on-closed`
//! and rebuilds in a new process on its next call, as after any engine exit.
//!
//! What a shared process says on stderr is logged only: unlike a game's own
//! process, its lines may be about any of its games. The first-use install
//! runs before it, as for a process of its own, and its news reaches every
//! game waiting for it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::config::{Endpoint, Sharing};
use crate::locking::lock;
use crate::runtime::processes::{GamePermit, ProcessBudget, ProcessPermit};

use super::transport::{Engine, Link, Running, Start, log_stderr, read_line, said_last};

/// Every shared process of this server, by engine. A process-wide table:
/// engine processes are the machine's, like the cgroups that hold them.
static POOL: LazyLock<Mutex<HashMap<String, Arc<Family>>>> = LazyLock::new(Mutex::default);

/// The processes of one engine (a plugin's endpoint, as configured).
#[derive(Default)]
struct Family {
    processes: Mutex<Vec<Slot>>,
}

struct Slot {
    process: Arc<Process>,
    games: usize,
}

/// Lines the engine may say to one game before the game has taken them: a
/// process's reader never waits for a slow game, so a bound keeps an engine
/// that floods one game from holding the server's memory.
const MAX_QUEUED: usize = 10_000;

/// One game's queue in its process: what the engine said to it, and how
/// many lines of that the game has not taken yet.
struct Queue {
    tx: mpsc::UnboundedSender<Said>,
    queued: Arc<AtomicUsize>,
}

/// One shared process, as its games and its task see it.
struct Process {
    /// Each game's queue, by tag.
    members: Mutex<HashMap<u32, Queue>>,
    frames: mpsc::UnboundedSender<Frame>,
    next_tag: AtomicU32,
    pid: AtomicU64,
}

/// What goes to the process's task.
enum Frame {
    Line(u32, String),
    Leave(u32),
    /// Its last game left: end it.
    Stop,
}

/// What the process said to one game.
enum Said {
    Line(String),
    /// News from the first-use install, for clients waiting meanwhile.
    Note(String),
    Closed(String),
}

/// One game's place in a shared process: leaves it when dropped.
pub struct Member {
    family: Arc<Family>,
    process: Arc<Process>,
    tag: u32,
    said: mpsc::UnboundedReceiver<Said>,
    queued: Arc<AtomicUsize>,
    _game: GamePermit,
}

/// Starts the task that serves one game's channel over a shared process of
/// its engine (`transport::shares`). Returns the task and the process id,
/// if the engine runs yet (not while it installs).
pub fn start(
    endpoint: &Endpoint,
    engine: &Engine,
    rx: mpsc::UnboundedReceiver<String>,
    link: Link,
    rt: &tokio::runtime::Handle,
) -> std::io::Result<(tokio::task::AbortHandle, Option<u32>)> {
    let (Some(start), Endpoint::Process { command, args, weight, .. }) = (Start::of(endpoint, engine), endpoint) else {
        return Err(std::io::Error::other("only a process endpoint is shared"));
    };
    let _in_runtime = rt.enter();
    // One family per engine as configured (a reloaded plugin with another
    // command line gets processes of its own).
    let key = format!("{}/{}/{command} {args:?}/{:p}", engine.plugin, engine.endpoint, Arc::as_ptr(engine.sandbox));
    let sharing = engine.rules.sharing;
    let (member, pid) =
        join(key, sharing, engine.budget, engine.owner, *weight as usize, start, link.max).map_err(std::io::Error::other)?;
    Ok((rt.spawn(run_member(member, rx, link)).abort_handle(), pid))
}

/// Joins a shared process of the engine `key`, starting one where the
/// sharing rules call for it. Returns the place and the process id, if the
/// engine runs yet (not while it installs).
fn join(
    key: String,
    sharing: Sharing,
    budget: &Arc<ProcessBudget>,
    owner: &str,
    weight: usize,
    start: Start,
    max: usize,
) -> Result<(Member, Option<u32>), String> {
    let game = budget.take_game(owner).map_err(|e| e.to_string())?;
    let family = lock(&POOL).entry(key).or_default().clone();
    let mut slots = lock(&family.processes);
    // The emptiest process with room, unless another shard should start.
    let fewest = slots.iter().enumerate().filter(|(_, s)| s.games < sharing.games_per_process).min_by_key(|(_, s)| s.games);
    let index = match fewest.map(|(i, s)| (i, s.games)) {
        Some((i, games)) if games == 0 || slots.len() >= sharing.shards => i,
        _ => {
            let permit = budget.take_shared(weight).map_err(|e| e.to_string())?;
            let process = spawn(start, permit, Arc::downgrade(&family), max).map_err(|e| e.to_string())?;
            slots.push(Slot { process, games: 0 });
            slots.len() - 1
        }
    };
    let slot = &mut slots[index];
    slot.games += 1;
    let process = slot.process.clone();
    drop(slots);
    let tag = process.next_tag.fetch_add(1, Ordering::Relaxed) + 1;
    let (tx, said) = mpsc::unbounded_channel();
    let queued = Arc::new(AtomicUsize::new(0));
    lock(&process.members).insert(tag, Queue { tx, queued: queued.clone() });
    let pid = Some(process.pid.load(Ordering::Relaxed) as u32).filter(|&p| p != 0);
    Ok((Member { family, process, tag, said, queued, _game: game }, pid))
}

impl Drop for Member {
    fn drop(&mut self) {
        lock(&self.process.members).remove(&self.tag);
        let _ = self.process.frames.send(Frame::Leave(self.tag));
        let mut slots = lock(&self.family.processes);
        if let Some(i) = slots.iter().position(|s| Arc::ptr_eq(&s.process, &self.process)) {
            slots[i].games -= 1;
            if slots[i].games == 0 {
                slots.swap_remove(i);
                let _ = self.process.frames.send(Frame::Stop);
            }
        }
    }
}

/// Serves one game's channel over its shared process, until either ends.
async fn run_member(mut member: Member, mut rx: mpsc::UnboundedReceiver<String>, link: Link) {
    loop {
        tokio::select! {
            said = member.said.recv() => match said {
                Some(Said::Line(line)) => {
                    member.queued.fetch_sub(1, Ordering::Relaxed);
                    if !link.message(line).await { return }
                }
                Some(Said::Note(line)) => {
                    member.queued.fetch_sub(1, Ordering::Relaxed);
                    link.note(&line);
                }
                Some(Said::Closed(why)) => return link.closed(why).await,
                None => return link.closed("the shared engine process ended".into()).await,
            },
            out = rx.recv() => match out {
                Some(data) => { let _ = member.process.frames.send(Frame::Line(member.tag, data)); }
                None => return,
            },
        }
    }
}

fn spawn(start: Start, permit: ProcessPermit, family: Weak<Family>, max: usize) -> std::io::Result<Arc<Process>> {
    let installing = start.needs_install();
    let first = start.spawn(installing, !installing)?;
    let (frames, rx) = mpsc::unbounded_channel();
    let process = Arc::new(Process {
        members: Mutex::default(),
        frames,
        next_tag: AtomicU32::new(0),
        pid: AtomicU64::new(if installing { 0 } else { u64::from(first.pid.unwrap_or(0)) }),
    });
    tokio::spawn(serve(process.clone(), first, installing.then_some(start), rx, permit, family, max));
    Ok(process)
}

/// The process's task: the install first where there is one, then the
/// engine, until it ends or its last game leaves.
async fn serve(
    process: Arc<Process>,
    first: Running,
    then: Option<Start>,
    mut frames: mpsc::UnboundedReceiver<Frame>,
    _permit: ProcessPermit,
    family: Weak<Family>,
    max: usize,
) {
    let mut running = first;
    if let Some(start) = then {
        if let Err(why) = install(&process, &mut running).await {
            return end(&process, &family, why);
        }
        running = match start.spawn(false, true) {
            Ok(next) => next,
            Err(e) => return end(&process, &family, format!("the engine is installed, but `{}` cannot start: {e}", start.command)),
        };
        process.pid.store(u64::from(running.pid.unwrap_or(0)), Ordering::Relaxed);
    }
    let why = carry(&process, &mut running, &mut frames, max).await;
    drop(running);
    if let Some(why) = why {
        end(&process, &family, why);
    }
}

/// Runs the first-use install, its lines and stderr to every game waiting.
async fn install(process: &Process, running: &mut Running) -> Result<(), String> {
    let (Some(stdout), Some(stderr)) = (running.child.stdout.take(), running.child.stderr.take()) else {
        return Err("the install has no pipes".into());
    };
    let tell = |said: fn(String) -> Said, line: String| {
        for member in lock(&process.members).values() {
            member.queued.fetch_add(1, Ordering::Relaxed);
            let _ = member.tx.send(said(line.clone()));
        }
    };
    let mut out = BufReader::new(stdout);
    let mut err = tokio::io::AsyncBufReadExt::lines(BufReader::new(stderr));
    let mut buf = Vec::new();
    let mut last = String::new();
    loop {
        tokio::select! {
            line = read_line(&mut out, &mut buf, 1 << 20) => match line {
                Ok(Some(line)) => tell(Said::Line, line),
                _ => break,
            },
            line = err.next_line() => if let Ok(Some(line)) = line {
                tracing::info!(target: "ludus::sidecar", "{line}");
                if !line.trim().is_empty() {
                    last = line.chars().take(500).collect();
                    tell(Said::Note, last.clone());
                }
            },
        }
    }
    match running.child.wait().await {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("the engine's install failed ({status}); its last line on stderr: {last}")),
        Err(e) => Err(format!("the engine's install failed: {e}")),
    }
}

/// Carries tagged lines both ways. Returns why the process ended by itself,
/// or none when its last game left.
async fn carry(process: &Process, running: &mut Running, frames: &mut mpsc::UnboundedReceiver<Frame>, max: usize) -> Option<String> {
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (running.child.stdin.take(), running.child.stdout.take(), running.child.stderr.take())
    else {
        return Some("the process has no pipes".into());
    };
    let pid = running.pid.unwrap_or(0);
    let last_words = Arc::new(Mutex::new(String::new()));
    tokio::spawn(log_stderr(stderr, pid, last_words.clone(), None));
    let mut out = BufReader::new(stdout);
    let mut buf = Vec::new();
    // Room for the tag besides a game's longest line.
    let max = max + 16;
    let why = loop {
        tokio::select! {
            line = read_line(&mut out, &mut buf, max) => match line {
                Ok(Some(line)) => route(process, pid, line),
                Ok(None) => break match running.child.wait().await {
                    Ok(status) => format!("the shared engine process exited ({status})"),
                    Err(e) => format!("the shared engine process ended: {e}"),
                },
                Err(e) => break e,
            },
            frame = frames.recv() => {
                let text = match frame {
                    Some(Frame::Line(tag, data)) => format!("{tag} {data}\n"),
                    Some(Frame::Leave(tag)) => format!("-{tag}\n"),
                    Some(Frame::Stop) | None => return None,
                };
                if let Err(e) = stdin.write_all(text.as_bytes()).await {
                    break format!("writing to the shared engine process failed: {e}");
                }
                let _ = stdin.flush().await;
            },
        }
    };
    Some(format!("{why}{}", said_last(&last_words)))
}

/// One line from the engine, to the game its tag names.
fn route(process: &Process, pid: u32, line: String) {
    let (head, rest) = line.split_once(' ').unwrap_or((&line, ""));
    let (closing, digits) = match head.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, head),
    };
    let Some(tag) = digits.parse::<u32>().ok().filter(|&t| t > 0) else {
        return tracing::warn!(target: "ludus::sidecar", pid, "an untagged line from a shared engine, not shown to any game: {line}");
    };
    let mut members = lock(&process.members);
    let Some(member) = members.get(&tag) else { return };
    let flooded = !closing && member.queued.load(Ordering::Relaxed) >= MAX_QUEUED;
    if closing || flooded {
        let why = match (closing, rest.is_empty()) {
            (false, _) => format!("the engine sent this game more than {MAX_QUEUED} lines it had not taken yet"),
            (true, true) => "the engine ended this game's channel".to_string(),
            (true, false) => rest.to_string(),
        };
        let member = members.remove(&tag).expect("just found");
        let _ = member.tx.send(Said::Closed(why));
    } else {
        member.queued.fetch_add(1, Ordering::Relaxed);
        let _ = member.tx.send(Said::Line(rest.to_string()));
    }
}

/// The process ended by itself: every game it held is told, and it leaves its family.
fn end(process: &Arc<Process>, family: &Weak<Family>, why: String) {
    tracing::warn!(target: "ludus::sidecar", "a shared engine process ended with games in it: {why}");
    if let Some(family) = family.upgrade() {
        lock(&family.processes).retain(|s| !Arc::ptr_eq(&s.process, process));
    }
    for (_, member) in lock(&process.members).drain() {
        let _ = member.tx.send(Said::Closed(why.clone()));
    }
}
