//! Result records: one JSON line per game that ended, appended to the file
//! the operator named (`records = "FILE"`, `--records FILE`), for
//! evaluators who run many games and summarise them (`ludus report`).
//!
//! A game says where it stands through `ludus:plugin/outcome`; the session
//! keeps the latest statement as its [`Standing`] (stored with the session
//! where games are stored) and writes a [`ResultRecord`] here once the
//! verdict is final, or as `abandoned` when the session ends first. Each
//! line goes to the file in one `write` on a file opened for appending, so
//! a killed server leaves whole lines; a write that fails is logged and
//! counted and never fails the game. Why a line is written only once, even
//! across a restart: docs/design/records.md.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::config::{AfterRefusals, Clock, IllegalMovePolicy, OnTime};
use crate::locking::lock;
use crate::seal::SigningKey;

/// How a game ended, as a record says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Solved,
    Won,
    Lost,
    Draw,
    Failed,
    Abandoned,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Solved => "solved",
            Outcome::Won => "won",
            Outcome::Lost => "lost",
            Outcome::Draw => "draw",
            Outcome::Failed => "failed",
            Outcome::Abandoned => "abandoned",
        }
    }
}

/// Who holds a seat (`ludus:plugin/seats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Holder {
    /// Nobody has taken it.
    Open,
    /// A caller: a bearer token's name, a connection, or `stdio`.
    Agent,
    /// A built-in opponent, named with its strength (`chess-engine/5`).
    Builtin,
}

/// One seat of a game and who holds it, as the game last told it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Seat {
    /// The game's name for it: `white`, `p1`, `seat 0`.
    pub seat: String,
    pub kind: Holder,
    /// The caller's name, or the built-in opponent's (none: open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub player: Option<String>,
    /// This seat's result once the game is over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Outcome>,
}

/// What a game last said about itself (`outcome.tell`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Told {
    /// None while the game is under way.
    pub outcome: Option<Outcome>,
    pub parameters: Value,
    pub moves: u32,
    pub illegal_moves: u32,
    pub first_failing_move: Option<u32>,
    pub optimum: Option<u32>,
    pub figures: Value,
}

/// Where a session's current game stands, for its record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// The game's number in its session: 1, then one more for each game
    /// begun after a recorded one (a reset, a rematch).
    pub game: u32,
    pub started_at_ms: u64,
    /// Tool calls made in this game.
    pub tool_calls: u64,
    /// The game's latest statement (none: it has said nothing yet).
    pub told: Option<Told>,
    /// This game's record has been written.
    pub recorded: bool,
    /// The illegal-move policy the game is played under.
    #[serde(default)]
    pub policy: IllegalMovePolicy,
    /// Each player's refused moves since its last accepted one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub refused: std::collections::BTreeMap<String, u32>,
    /// The player who lost the game under the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forfeit: Option<String>,
    /// How often the policy fired in this game: a loss, or a random move
    /// played for a player.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fired: u32,
    /// The time per move the game is played under.
    #[serde(default, skip_serializing_if = "is_no_clock")]
    pub clock: Clock,
    /// The player whose time ran out, under a clock that makes it lose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_time: Option<String>,
    /// The player the policy has a random move due for: set by the call
    /// that fired it, taken by the same call (never stored).
    #[serde(skip)]
    pub random_due: Option<String>,
    /// When the log's last entry ran (milliseconds since the epoch): a
    /// move's think time counts from there.
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub last_logged_ms: u64,
    /// Everything that changed the session's game, in the order it ran,
    /// since the session began: its earlier games too, since a later game
    /// starts where they left the instance (`ludus verify` replays it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<Action>,
}

/// What a move cost the model that made it, as the player's client reports
/// it (the host's `usage` argument of a move): kept in the log, summed by
/// `ludus report`. Nothing checks it: it is the client's word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// In whatever currency the client counts (US dollars, usually).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl Usage {
    /// The host's `usage` argument: an object of these three, none negative.
    pub fn from_argument(value: &Value) -> Result<Usage, String> {
        let usage: Usage = serde_json::from_value(value.clone())
            .map_err(|e| format!("`usage` is an object of `input_tokens`, `output_tokens` (whole numbers) and `cost`: {e}"))?;
        match usage.cost {
            Some(c) if !c.is_finite() || c < 0.0 => Err("`usage.cost` is a number of 0 or more".into()),
            _ => Ok(usage),
        }
    }
}

/// What a player said beside a move: its reasoning and what it cost.
#[derive(Clone, Debug, Default)]
pub struct Said {
    pub reasoning: Option<String>,
    pub usage: Option<Usage>,
}

/// One thing that ran on a game and may have changed it, in a record's
/// `actions`: a call of a tool that is not read-only (a move, a join, a
/// start), a timer that fired, or a line from one of its processes. With
/// the seed and secret they rebuild the game (`ludus verify`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Action {
    Call {
        /// The tool.
        call: String,
        /// Who called it.
        by: String,
        /// Its arguments, without the game's id and the host's own
        /// (`join_code`, `secret`, `reasoning`).
        #[serde(default)]
        args: Value,
        /// The decision number it named.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<u64>,
        /// The game refused it (an illegal move; counted, nothing made).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        refused: bool,
        /// A run after its wait ran out (the game's answer then is final).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        timed_out: bool,
        /// What the player said of the move, beside it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// What the move cost the player's model, as its client reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// When it ran: milliseconds since the game began.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
        /// How long its player thought: milliseconds since the game last
        /// changed before it (the entry before it in the log ran), which is
        /// when this decision became due.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        think_ms: Option<u64>,
        /// The host made it for `by` under the illegal-move policy (a
        /// random legal move, drawn from the game's seed).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        policy: bool,
    },
    /// The call at this place in the log (counted from 0) ran again: it
    /// was held waiting, and the game changed (or its wait ran out:
    /// `timed_out`).
    Again {
        again: usize,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        timed_out: bool,
    },
    /// The game's timer with this id fired (`host.set-timer`).
    Timer { timer: u64 },
    /// Lines came from the game's channel `input` (a process it runs), one
    /// after another: a short digest of each (`line_digest`, six hex
    /// digits a line), by which a replay keeps its process's lines in step
    /// with the log.
    Input { input: u32, lines: String },
    /// The game's channel `closed` closed.
    Closed { closed: u32 },
    /// This player's time for a move ran out, and the clock made it lose.
    OutOfTime { out_of_time: String },
    /// The game left memory (idle, a restart, another server) and was
    /// rebuilt from its stored state here (`durable.restore`): its timers
    /// and processes of before are gone, and what the restore set up goes
    /// on numbering from where they stopped.
    Rebuilt { rebuilt: bool },
}

impl Standing {
    pub fn new(started_at_ms: u64, policy: IllegalMovePolicy) -> Standing {
        Standing { game: 1, started_at_ms, policy, ..Standing::default() }
    }

    /// Takes a statement the game made in a call of `caller` (none: in an
    /// event), counting that player's refused moves by how the game's own
    /// counts moved (`moves`, `illegal_moves`). True when the policy makes
    /// the caller lose now; when it has a random move played for the
    /// caller instead, `random_due` names the caller.
    pub fn tell_in_call(&mut self, told: Told, caller: &str, now_ms: u64) -> bool {
        let game = self.game;
        let before = self.told.as_ref().map_or((0, 0), |t| (t.moves, t.illegal_moves));
        let (moves, illegal) = (told.moves, told.illegal_moves);
        self.tell(told, now_ms);
        if caller.is_empty() || self.forfeit.is_some() || self.is_final() {
            return false;
        }
        let before = if self.game == game { before } else { (0, 0) };
        if moves > before.0 {
            self.refused.remove(caller);
        }
        if illegal > before.1 {
            let refused = self.refused.entry(caller.to_string()).or_default();
            *refused += illegal - before.1;
            match self.policy.fires_at(*refused) {
                Some(AfterRefusals::Lose) => {
                    self.forfeit = Some(caller.to_string());
                    self.fired += 1;
                    return true;
                }
                Some(AfterRefusals::Random) => self.random_due = Some(caller.to_string()),
                _ => {}
            }
        }
        false
    }

    /// Takes a statement made at `now_ms`. After a recorded game a
    /// statement of play begins the next game (the call that began it is
    /// counted when it returns); a final one for the recorded game changes
    /// nothing.
    pub fn tell(&mut self, told: Told, now_ms: u64) {
        if self.recorded {
            if told.outcome.is_some() {
                return;
            }
            let log = std::mem::take(&mut self.log);
            let last_logged_ms = self.last_logged_ms;
            *self =
                Standing { game: self.game + 1, started_at_ms: now_ms, policy: self.policy, log, last_logged_ms, ..Standing::default() };
        }
        self.told = Some(told);
    }

    /// The game's latest verdict is final (solved, won, … : not playing).
    pub fn is_final(&self) -> bool {
        self.told.as_ref().is_some_and(|t| t.outcome.is_some())
    }

    /// The game has a final verdict whose record is not written yet.
    pub fn due(&self) -> bool {
        !self.recorded && self.told.as_ref().is_some_and(|t| t.outcome.is_some())
    }

    /// The game has said something and its record is not written yet (a
    /// session ending now leaves a record).
    pub fn unrecorded(&self) -> bool {
        !self.recorded && self.told.is_some()
    }
}

/// One line of the records file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// `SESSION/GAME`: unique per game.
    pub record: String,
    /// When the game ended (RFC 3339, UTC).
    pub time: String,
    pub game: String,
    pub plugin_version: String,
    #[serde(default)]
    pub parameters: Value,
    pub seed: u64,
    /// Who created the session (a connection id, or a bearer token's name).
    pub caller: String,
    /// The secret mixed into the seed (`host.seed`), published with the
    /// record so that the whole game can be replayed; none when the
    /// operator let the caller fix whole seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<u64>,
    /// The game replayed a finished one (its creator gave the secret).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
    /// Each seat's player and result, for games with seats; one caller in
    /// several seats played itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seats: Vec<Seat>,
    pub tool_calls: u64,
    pub moves: u32,
    pub illegal_moves: u32,
    pub first_failing_move: Option<u32>,
    pub optimum: Option<u32>,
    pub outcome: Outcome,
    /// How the record came about: "the game ended", or why the session
    /// ended before it did ("it expired after 120 s without calls").
    pub ended: String,
    pub duration_ms: u64,
    #[serde(default)]
    pub figures: Value,
    /// The illegal-move policy the game was played under, and whether it fired.
    #[serde(default)]
    pub illegal_move_policy: PolicyRecord,
    /// The time per move it was played under, and who ran out of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockRecord>,
    /// The match of a run the game was played in.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub in_match: Option<MatchTag>,
    /// The SHA-256 of the component build that played it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub build: String,
    /// What ran on the game since its session began, in order (`Action`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<Action>,
}

impl Action {
    /// The log entry of one line from channel `channel`.
    pub fn line(channel: u32, line: &str) -> Action {
        Action::Input { input: channel, lines: line_digest(line) }
    }

    /// Takes `next` into this entry when both are lines from one channel
    /// (a process's lines in a row are one entry); false otherwise.
    pub fn absorb(&mut self, next: &Action) -> bool {
        match (self, next) {
            (Action::Input { input, lines }, Action::Input { input: from, lines: more }) if input == from => {
                lines.push_str(more);
                true
            }
            _ => false,
        }
    }
}

/// A line's short digest in a log: the first six hex digits of its
/// SHA-256. Enough to keep a replay's lines in step with the log's (which
/// line is which), small enough for a battle's thousand lines; not a seal:
/// what a record proves is checked by playing it again.
pub fn line_digest(line: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(line.as_bytes())[..3].iter().map(|b| format!("{b:02x}")).collect()
}

/// The six-digit digests of an `Action::Input`'s lines, in order.
pub fn line_digests(lines: &str) -> impl Iterator<Item = &str> {
    (0..lines.len() / 6).filter_map(move |i| lines.get(i * 6..i * 6 + 6))
}

/// One call of a game played again, with the answer its player got: a
/// step of its replay page (`ludus verify --html`).
#[derive(Clone, Debug, Serialize)]
pub struct ReplayStep {
    /// Its place in the record's log, from 1.
    pub action: usize,
    pub by: String,
    pub call: String,
    pub args: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// A held call's answer after its wait.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub again: bool,
    /// The game refused it; `answer` then says why.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refused: bool,
    /// The host made it for the player under the illegal-move policy.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_policy: bool,
    pub answer: Value,
}

/// Where a game stands in a run's match (`arena`): the match, its pair
/// (the games played on one deal, sides exchanged), and its game.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MatchTag {
    /// The match's id in the run file.
    pub id: String,
    /// The pair, from 1: its games share a seed (and secret).
    pub pair: u32,
    /// The game, from 1, of the match's games.
    pub game: u32,
}

/// A record's clock: the time per move, and the player it made lose.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClockRecord {
    #[serde(flatten)]
    pub clock: Clock,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

/// A record's illegal-move policy: the policy, how often it fired, and on whom.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyRecord {
    #[serde(flatten)]
    pub policy: IllegalMovePolicy,
    pub fired: u32,
    /// The player it made lose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_ms(n: &u64) -> bool {
    *n == 0
}

fn is_no_clock(c: &Clock) -> bool {
    c.move_ms == 0
}

/// How much of the file's end is searched for a record found due after a
/// crash (it may have been written just before it, while its session was not
/// yet marked written).
const TAIL_BYTES: u64 = 256 * 1024;

/// The records file cannot be opened for appending: the records layer's error.
#[derive(Debug, thiserror::Error)]
#[error("the records file {} cannot be written: {source}", path.display())]
pub struct RecordsError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The records file: appends whole lines, each sealed (signed and
/// chained to the line before it, `seal`), and counts what failed.
pub struct RecordsFile {
    path: PathBuf,
    file: Mutex<Appending>,
    /// The key each line is signed with (none: lines go unsealed).
    key: Option<SigningKey>,
    written: AtomicU64,
    failed: AtomicU64,
}

/// The open file, and its end as this server last left it: while nobody
/// else wrote since, the next line's `prev` is known without reading.
struct Appending {
    file: File,
    end: u64,
    last_digest: String,
}

impl RecordsFile {
    /// Opens (creating) `path` for appending; an error names the path and
    /// why, for the operator at start-up.
    /// Lines are signed with `key` (none: unsealed).
    pub fn open(path: &Path, key: Option<SigningKey>) -> Result<RecordsFile, RecordsError> {
        let what = |source: std::io::Error| RecordsError { path: path.to_path_buf(), source };
        let mut file = OpenOptions::new().create(true).read(true).append(true).open(path).map_err(what)?;
        let (_, torn) = tail_records(&mut file).map_err(what)?;
        // A line cut short by a crash mid-write (power loss) stays a bad line
        // of its own; the next record starts on a line of its own.
        if torn {
            file.write_all(b"\n").map_err(what)?;
        }
        // Nothing is known of the end yet: the first write reads it.
        let appending = Appending { file, end: u64::MAX, last_digest: String::new() };
        Ok(RecordsFile {
            path: path.to_path_buf(),
            file: Mutex::new(appending),
            key,
            written: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// The public half of the key its lines are signed with.
    pub fn signer(&self) -> Option<&str> {
        self.key.as_ref().map(SigningKey::public)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record as one line, in one write.
    pub fn append(&self, record: &ResultRecord) {
        self.write(record, false);
    }

    /// The same for a record found due after a crash: unless the end of the
    /// file already holds it (written just before the crash, by this server
    /// or another one sharing the file).
    pub fn append_once(&self, record: &ResultRecord) {
        self.write(record, true);
    }

    fn write(&self, record: &ResultRecord, unless_present: bool) {
        let mut open = lock(&self.file);
        // Other servers may append to the same file: the end is read and
        // written under the file's lock, so each line follows the one before.
        let _locked = FileLock::exclusive(&open.file);
        if unless_present {
            match tail_records(&mut open.file) {
                Ok((present, _)) if present.contains(&record.record) => {
                    tracing::info!(record = record.record, "the record was written before the crash");
                    return;
                }
                Ok(_) => {}
                Err(e) => return self.failure(record, &format!("reading the file's end: {e}")),
            }
        }
        let mut line = match self.line(&mut open, record) {
            Ok(line) => line,
            Err(e) => return self.failure(record, &e),
        };
        let digest = crate::seal::digest(&line);
        line.push(b'\n');
        let end = open.file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        match open.file.write_all(&line) {
            Ok(()) => {
                (open.end, open.last_digest) = (end.saturating_add(line.len() as u64), digest);
                self.written.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                open.end = u64::MAX;
                self.failure(record, &e.to_string())
            }
        }
    }

    /// `record` as its line: sealed after the file's last line, when lines are signed.
    fn line(&self, open: &mut Appending, record: &ResultRecord) -> Result<Vec<u8>, String> {
        let Some(key) = &self.key else { return serde_json::to_vec(record).map_err(|e| e.to_string()) };
        let end = open.file.metadata().map_err(|e| format!("reading the file's length: {e}"))?.len();
        if end != open.end {
            let last = last_line(&mut open.file).map_err(|e| format!("reading the file's last line: {e}"))?;
            open.last_digest = if last.is_empty() { String::new() } else { crate::seal::digest(&last) };
            open.end = end;
        }
        let value = serde_json::to_value(record).map_err(|e| e.to_string())?;
        key.seal(value, &open.last_digest)
    }

    fn failure(&self, record: &ResultRecord, why: &str) {
        let failed = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
        tracing::error!(record = record.record, failed, "a result record could not be written to {}: {why}", self.path.display());
    }

    /// Records written and records that failed since start.
    pub fn counts(&self) -> (u64, u64) {
        (self.written.load(Ordering::Relaxed), self.failed.load(Ordering::Relaxed))
    }
}

/// An exclusive `flock` on the records file while one line is appended;
/// released when dropped. Where it cannot be taken the line is written
/// anyway: a record is never lost for a lock.
/// Held with the file's mutex, which keeps the file open for its life.
struct FileLock(std::os::fd::RawFd);

impl FileLock {
    fn exclusive(file: &File) -> FileLock {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: flock takes a descriptor and changes no memory; the File
        // stays open while the lock is held (both under one mutex guard).
        unsafe { libc::flock(fd, libc::LOCK_EX) };
        FileLock(fd)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::flock(self.0, libc::LOCK_UN) };
    }
}

/// The file's last line, without its line break (empty: an empty file).
fn last_line(file: &mut File) -> std::io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let end = len.saturating_sub(1); // past its own line break
    let mut chunk = 4096u64;
    loop {
        let from = end.saturating_sub(chunk);
        file.seek(SeekFrom::Start(from))?;
        let mut tail = vec![0; (end - from) as usize];
        file.read_exact(&mut tail)?;
        if let Some(at) = tail.iter().rposition(|&b| b == b'\n') {
            return Ok(tail.split_off(at + 1));
        }
        if from == 0 {
            return Ok(tail);
        }
        chunk *= 4;
    }
}

/// The record ids in the last [`TAIL_BYTES`] of the file, and whether it
/// ends inside a line.
fn tail_records(file: &mut File) -> std::io::Result<(HashSet<String>, bool)> {
    let len = file.metadata()?.len();
    let from = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let torn = tail.last().is_some_and(|&b| b != b'\n');
    #[derive(Deserialize)]
    struct Id {
        record: String,
    }
    let ids = tail.split(|&b| b == b'\n').filter_map(|line| serde_json::from_slice::<Id>(line).ok()).map(|r| r.record).collect();
    Ok((ids, torn))
}

/// Milliseconds since the epoch as RFC 3339 in UTC, to the millisecond.
pub fn rfc3339(ms: u64) -> String {
    let (secs, millis) = ((ms / 1000) as i64, ms % 1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's days-to-civil algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_795_651_200_000), "2026-11-26T00:00:00.000Z");
    }

    #[test]
    fn a_game_after_a_recorded_one_is_the_next_game() {
        let playing = Told { outcome: None, ..Told::default() };
        let solved = Told { outcome: Some(Outcome::Solved), moves: 7, ..Told::default() };
        let mut s = Standing::new(10, IllegalMovePolicy::default());
        s.tell(playing.clone(), 20);
        assert!(!s.due() && s.unrecorded());
        s.tell(solved.clone(), 30);
        assert!(s.due());
        s.recorded = true;
        s.tell(solved, 40);
        assert_eq!((s.game, s.started_at_ms), (1, 10), "a final statement for a recorded game changes nothing");
        s.tell(playing, 50);
        assert_eq!((s.game, s.started_at_ms, s.tool_calls, s.recorded), (2, 50, 0, false));
    }

    #[test]
    fn a_process_lines_in_a_row_are_one_entry_and_every_entry_reads_back() {
        let mut log = vec![Action::line(1, "a")];
        for next in [Action::line(1, "b"), Action::line(2, "c"), Action::Timer { timer: 3 }, Action::line(1, "d")] {
            if !log.last_mut().is_some_and(|last| last.absorb(&next)) {
                log.push(next);
            }
        }
        assert_eq!(log.len(), 4, "{log:?}");
        let Action::Input { input: 1, lines } = &log[0] else { panic!("{log:?}") };
        assert_eq!(line_digests(lines).collect::<Vec<_>>(), [line_digest("a"), line_digest("b")]);
        let call = Action::Call {
            call: "hanoi_execute_move".into(),
            by: "model-a".into(),
            args: serde_json::json!({"move": [1, 0, 2]}),
            decision: Some(4),
            refused: true,
            timed_out: false,
            reasoning: Some("smallest disk first".into()),
            usage: Some(Usage { input_tokens: Some(1200), output_tokens: Some(300), cost: Some(0.004) }),
            at_ms: Some(5200),
            think_ms: Some(4100),
            policy: false,
        };
        log.extend([call, Action::Again { again: 4, timed_out: false }, Action::Closed { closed: 2 }]);
        let text = serde_json::to_string(&log).unwrap();
        assert_eq!(serde_json::from_str::<Vec<Action>>(&text).unwrap(), log, "{text}");
    }

    #[test]
    fn whole_lines_and_a_recovered_record_not_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let record = |id: &str| ResultRecord {
            record: id.into(),
            time: rfc3339(0),
            game: "hanoi".into(),
            plugin_version: "0.1.0".into(),
            parameters: serde_json::json!({"n": 3}),
            seed: 1,
            caller: "c".into(),
            secret: Some(2),
            replay: false,
            seats: Vec::new(),
            tool_calls: 2,
            moves: 7,
            illegal_moves: 0,
            first_failing_move: None,
            optimum: Some(7),
            outcome: Outcome::Solved,
            ended: "the game ended".into(),
            duration_ms: 5,
            figures: Value::Null,
            illegal_move_policy: Default::default(),
            clock: None,
            in_match: None,
            build: "ab".repeat(32),
            actions: vec![Action::Timer { timer: 1 }, Action::line(1, "|turn|2"), Action::Again { again: 0, timed_out: true }],
        };
        let file = RecordsFile::open(&path, None).unwrap();
        file.append(&record("a/1"));
        drop(file);
        // A torn last line (a crash mid-write) gets a line break of its own.
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"record\":\"tor").unwrap();
        let file = RecordsFile::open(&path, None).unwrap();
        file.append_once(&record("a/1"));
        file.append_once(&record("b/1"));
        file.append_once(&record("b/1"));
        assert_eq!(file.counts(), (1, 0));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[1].starts_with("{\"record\":\"tor") && lines[2].contains("\"b/1\""));
    }
}
