//! The battle's bookkeeping inside the component: the session's one game
//! (mode, status, what was submitted and refused, the scorecard), the checks
//! on what an agent asks for, and what each simulator or server event does
//! to the game.

use std::cell::RefCell;
use std::collections::VecDeque;

use ludus_sdk::{LogLevel, channels, host};

use crate::battle::Battle;
use crate::bot::{self, Bot};
use crate::data::to_id;
use crate::engine::{self, Evaluation, Settings};
use crate::formats::Format;
use crate::login::{self, Account};
use crate::protocol::{Event, SimReader, fields};
use crate::request::Request;
use crate::rng::Rng;

pub const DEFAULT_FORMAT: &str = "gen9randombattle";
/// Seconds between repeated challenges while the opponent is not online yet.
pub const CHALLENGE_RETRY_MS: u32 = 3_000;

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Searching,
    Challenging,
    Active,
    Finished,
    Error(String),
}

impl Status {
    pub fn label(&self) -> &'static str {
        match self {
            Status::Searching => "searching",
            Status::Challenging => "challenging",
            Status::Active => "active",
            Status::Finished => "finished",
            Status::Error(_) => "error",
        }
    }
}

// One per battle: boxing the offline variant's state would save nothing that matters.
#[allow(clippy::large_enum_variant)]
pub enum Mode {
    Offline {
        /// The caller that started it (p1).
        creator: String,
        opponent: Opponent,
        rng: Rng,
        seeds: Seeds,
        teams: Teams,
        reader: SimReader,
        /// Lines the simulator has written so far.
        received: u64,
        /// Our lines to the simulator, each with how many lines it had
        /// written when it was sent: with the seed, all a restart needs to
        /// play the battle again to where it was (the simulator and the
        /// bot are deterministic).
        sent: Vec<(u64, String)>,
        /// After a restart: those lines still to send again, each when the
        /// simulator has written as many lines as it had then.
        replay: VecDeque<(u64, String)>,
    },
    Online {
        goal: Goal,
        logged_in: bool,
        room: Option<String>,
        rqid: Option<u64>,
        /// The operator's password for this name (signs in through the `login` endpoint).
        password: Option<String>,
        /// The open `login` channel while the login server is asked.
        login: Option<u32>,
        /// After a restart of Ludus: the battle room to join again once
        /// logged in (the server sends its log and our request).
        rejoin: Option<String>,
        /// The `rqid` of the request we last answered.
        answered: Option<u64>,
        /// After a restart: the request answered before it, which the
        /// server sends again on the rejoin and which is not ours to answer
        /// twice (the server would refuse: "too late to make a different move").
        answered_before_restart: Option<u64>,
    },
}

/// Who plays p2 in an offline battle.
// One per battle: boxing the bot's view would save nothing that matters.
#[allow(clippy::large_enum_variant)]
pub enum Opponent {
    /// A built-in bot, from its own view of the battle.
    Bot { bot: Bot, view: Battle },
    /// Another agent: the creator's caller, the joiner's once seated, p2's
    /// simulator seed (its `>player` line is sent when it joins), and p2's
    /// seat while the caller at hand is the creator.
    Agent { creator: String, joiner: Option<String>, seed: String, seat: Box<Seat> },
}

/// What one agent's side of a battle holds beyond what both share: the
/// name it plays under, its view of the battle, and what it asked for.
/// The game's seat is whoever calls; p2's seat in an agent-against-agent
/// battle waits in [`Opponent::Agent`] meanwhile.
#[derive(Default)]
pub struct Seat {
    pub username: String,
    pub battle: Battle,
    /// The decision we answered (its sequence number) and with what.
    pub submitted: Option<(u64, String)>,
    /// A choice the simulator refused: (decision sequence, our action, why).
    pub rejected: Option<(u64, String, String)>,
    /// The id the agent was given; a later rename would lose it.
    pub announced: bool,
    /// A `make_move` call that submitted and waits: (decision sequence, its action).
    pub in_flight: Option<(u64, String)>,
    /// The engine's verdict on the last submitted action.
    pub scorecard: Option<Scorecard>,
    /// For the result record: decisions submitted and refused, and each
    /// scored decision's optimality in order.
    pub tally: SeatTally,
}

/// An offline battle's seeds: the one its creator chose (or the server
/// drew), and the whole seed, with the game's secret mixed in, from which
/// everything hidden from the creator is drawn (`ludus:plugin/seeds`).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Seeds {
    pub visible: u64,
    pub whole: u64,
}

impl Seeds {
    pub fn of_game() -> Seeds {
        Seeds { visible: ludus_sdk::seeds::visible(), whole: host::seed() }
    }
}

/// What a seat has done, for the battle's result record: its decisions
/// submitted and refused, and each scored decision's optimality.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SeatTally {
    pub counts: ludus_sdk::tally::Tally,
    pub optimality: Vec<f32>,
    /// Whether the choice last sent added its score to `optimality`: the
    /// simulator may still refuse it, and then the score goes too.
    #[serde(default)]
    last_scored: bool,
}

impl SeatTally {
    /// A choice sent to the simulator: a move made, with its optimality
    /// where the search scored it. Nothing counts once the game is over.
    pub fn sent(&mut self, optimality: Option<f32>) {
        if self.counts.ended.is_some() {
            return;
        }
        self.counts.sent(true);
        self.optimality.extend(optimality);
        self.last_scored = optimality.is_some();
    }

    /// The simulator refused the choice last sent: it counts as refused, and
    /// its score leaves the optimality list, which holds decisions made.
    pub fn refused(&mut self) {
        if self.counts.ended.is_some() {
            return;
        }
        self.counts.retract();
        if std::mem::take(&mut self.last_scored) {
            self.optimality.pop();
        }
    }
}

/// The teams an offline battle's players bring, as the agent gave them
/// (the simulator reads and checks them); none in random formats.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Teams {
    pub mine: Option<String>,
    pub theirs: Option<String>,
}

/// Longer than any legal team in either form (six Pokémon exported with
/// nicknames, EVs, IVs and notes are under 4 KB).
const TEAM_MAX_BYTES: usize = 16 * 1024;

impl Teams {
    /// The teams `format` plays with: generated in random formats, brought
    /// in the others (a bot's a copy of ours unless given; an agent's is
    /// its own, never a copy of ours, which it must not see).
    pub fn for_format(format: Format, mine: Option<String>, theirs: Option<String>, bot: bool) -> Result<Teams, String> {
        let given = |t: Option<String>, what: &str| -> Result<Option<String>, String> {
            match t.filter(|t| !t.trim().is_empty()) {
                Some(t) if t.len() > TEAM_MAX_BYTES => Err(format!("{what} is {} bytes long; a team is at most {TEAM_MAX_BYTES}", t.len())),
                t => Ok(t),
            }
        };
        let (mine, theirs) = (given(mine, "team")?, given(theirs, "opponent_team")?);
        if format.random {
            if mine.is_some() || theirs.is_some() {
                return Err(format!(
                    "{} generates its teams; leave out `team` and `opponent_team`, or choose a format where players bring \
                     teams (e.g. gen9ou)",
                    format.name
                ));
            }
            return Ok(Teams::default());
        }
        let Some(mine) = mine else {
            return Err(format!(
                "{} needs your team: give `team` in Showdown's export form (as the teambuilder exports it) or packed form",
                format.name
            ));
        };
        let theirs = if bot { Some(theirs.unwrap_or_else(|| mine.clone())) } else { theirs };
        Ok(Teams { theirs, mine: Some(mine) })
    }

    /// The simulator's `>player` line for `side`: its name, seed and team,
    /// written as JSON (a team's text cannot break out of its string).
    pub fn player_line(&self, side: &str, name: &str, seed: &str) -> String {
        let team = if side == "p1" { &self.mine } else { &self.theirs };
        let mut options = serde_json::json!({"name": name, "seed": seed});
        if let Some(t) = team {
            options["team"] = t.clone().into();
        }
        format!(">player {side} {options}")
    }
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub enum Goal {
    Ladder,
    Challenge(String),
}

pub struct Game {
    pub mode: Mode,
    pub format: String,
    pub channel: u32,
    pub status: Status,
    /// The agent chose the offline battle's seed, so it may be told it
    /// (what it decides, its own team, is the agent's to know).
    pub seed_chosen: bool,
    /// The calling agent's side (p2's waits in [`Opponent::Agent`]).
    pub seat: Seat,
    /// What the simulator's sidecar is busy with before the battle can run
    /// (installing the simulator on first use), and since when (ms since the epoch).
    pub notice: Option<(String, u64)>,
}

/// Milliseconds since the epoch (WASI's clock).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Game {
    /// What an answer says while the sidecar installs the simulator: what
    /// it does and how long it has taken so far.
    pub fn installing(&self) -> Option<String> {
        let (text, since) = self.notice.as_ref()?;
        let secs = now_ms().saturating_sub(*since) / 1000;
        Some(format!("The battle simulator is not running yet ({secs} s so far): {text}."))
    }
}

/// An action scored at the moment it was chosen.
pub struct Scorecard {
    pub seq: u64,
    pub action: String,
    pub evaluation: Result<Evaluation, String>,
    pub millis: f64,
}

thread_local! {
    pub static GAME: RefCell<Option<Game>> = const { RefCell::new(None) };
}

/// The session's battle as the calling agent's seat sees it.
pub fn with_game<T>(f: impl FnOnce(&mut Game) -> Result<T, String>) -> Result<T, String> {
    ludus_sdk::with_state(&GAME, "this session holds no battle", |g| {
        let p2 = g.is_p2(&host::caller());
        if p2 {
            g.swap_seat();
        }
        let r = f(g);
        if p2 {
            g.swap_seat();
        }
        r
    })
}

pub fn battle_id() -> String {
    host::session_id().unwrap_or_default()
}

impl Game {
    /// A battle being set up: nothing submitted, refused or announced yet.
    pub fn new(mode: Mode, format: String, username: String, channel: u32, battle: Battle, status: Status) -> Game {
        Game { mode, format, channel, status, seed_chosen: false, seat: Seat { username, battle, ..Seat::default() }, notice: None }
    }
}

/// A format id as Showdown writes them (`gen9ou`), the default when none is given.
pub fn format_id(format: Option<String>) -> Result<String, String> {
    let f = format.unwrap_or_else(|| DEFAULT_FORMAT.into());
    if f.is_empty() || f.len() > 60 || !f.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err(format!("format {f:?} is not a Showdown format id (like gen9randombattle)"));
    }
    Ok(f)
}

/// A format a battle on a server can play: a random one (the server's
/// teams are generated; ours is never sent).
pub fn valid_format(format: Option<String>) -> Result<String, String> {
    let f = format_id(format)?;
    if !f.contains("random") {
        return Err(format!("format {f} needs a team; only random formats (like gen9randombattle) are supported"));
    }
    Ok(f)
}

pub fn valid_username(name: Option<String>) -> Result<String, String> {
    let name = name.unwrap_or_else(|| format!("Ludus{:06}", ludus_sdk::seeds::visible() % 1_000_000));
    let ok = !name.trim().is_empty() && name.len() <= 18 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ');
    if !ok {
        return Err(format!("username {name:?} must be 1-18 letters, digits or spaces"));
    }
    // Showdown keeps `Guest…` names for its own unnamed users and silently refuses them.
    if to_id(&name).starts_with("guest") {
        return Err(format!("username {name:?} is reserved by Showdown for guests; choose another"));
    }
    Ok(name)
}

pub fn open(endpoint: &str, purpose: &str) -> Result<u32, String> {
    channels::open(endpoint).map_err(|e| {
        // The built-in `sim` runs with Node.js; a missing `node` is the usual cause.
        let hint = if endpoint == "sim" && e.contains("cannot start") {
            " (offline battles run Pokémon Showdown's simulator with Node.js 18 or newer on the server's PATH: \
             install it, e.g. `apt-get install nodejs npm`, or grant your own `sim` endpoint in the config)"
        } else {
            ""
        };
        format!("{purpose} needs the `{endpoint}` endpoint: {e}{hint}")
    })
}

pub fn send(channel: u32, line: &str) {
    if let Err(e) = channels::send(channel, line) {
        ludus_sdk::log(LogLevel::Warn, &format!("send failed: {e}"));
    }
}

/// A seed for the simulator's ChaCha20 generator (`sodium,` and 32 bytes in
/// hex): unlike its 64-bit Gen 5 generator, what a battle shows of it says
/// nothing about what it will draw next.
pub fn sim_seed(rng: &mut Rng) -> String {
    let mut s = String::from("sodium,");
    for _ in 0..4 {
        s.push_str(&format!("{:016x}", rng.next_u64()));
    }
    s
}

/// Scores `action` against the other legal actions of `req`, before it is sent.
/// The move scored against its alternatives, where the engine models the
/// battle: it plays generation 9 (poke-engine with gen 9 data), so a battle
/// of another generation is not scored rather than scored wrongly.
pub fn score(battle: &Battle, req: &Request, seq: u64, action: &str, format: &str) -> Scorecard {
    let started = std::time::Instant::now();
    let evaluation = match format.strip_prefix("gen").and_then(|f| f.chars().next()) {
        Some('9') if req.positions() > 1 => engine::evaluate_positions(battle, req, Settings::default()),
        Some('9') => engine::evaluate_actions(battle, req, Settings::default()),
        Some(g) => Err(format!("the evaluation models generation 9 and this is a generation {g} battle")),
        None => Err("the evaluation models generation 9 and this format names no generation".into()),
    };
    Scorecard { seq, action: action.to_string(), evaluation, millis: started.elapsed().as_secs_f64() * 1e3 }
}

/// Whether two writings of a move name the same actions.
pub use crate::request::same_decision as same_action;

/// Sends one of our lines to the offline simulator, keeping it for a replay.
pub fn to_sim(g: &mut Game, line: &str) {
    if let Mode::Offline { received, sent, .. } = &mut g.mode {
        sent.push((*received, line.to_string()));
    }
    send(g.channel, line);
}

impl Game {
    /// The request awaiting our choice: due, and not answered yet (while
    /// our answer waits for the other side, nothing is due).
    pub fn due(&self) -> Option<&Request> {
        let answered = self.seat.submitted.as_ref().is_some_and(|(at, _)| *at == self.seat.battle.decision_seq);
        self.seat.battle.pending().filter(|_| !answered)
    }

    /// Whether the decision `at` that we answered has been played out: our
    /// next decision came or the battle ended; or, against another agent
    /// (offline or on a server), the turn left us nothing to do (a `wait`
    /// request while its side switches in), since its choice may take as
    /// long as it likes. A bot's answers come at once: wait for them.
    pub fn resolved(&self, at: u64) -> bool {
        let waiting_on_agent = !self.opponent_is_bot() && self.seat.battle.request.as_ref().is_some_and(|r| r.wait);
        self.seat.battle.decision_seq != at || self.seat.battle.over() || waiting_on_agent
    }

    /// Whether the other side is a built-in bot (which answers at once).
    pub fn opponent_is_bot(&self) -> bool {
        matches!(&self.mode, Mode::Offline { opponent: Opponent::Bot { .. }, .. })
    }

    /// Whether `caller` plays p2 of an agent-against-agent battle.
    pub fn is_p2(&self, caller: &str) -> bool {
        matches!(&self.mode, Mode::Offline { opponent: Opponent::Agent { joiner: Some(j), .. }, .. } if j == caller && !caller.is_empty())
    }

    /// Exchanges the game's seat fields with p2's waiting seat (a second
    /// exchange puts them back); nothing happens against a bot or online.
    pub fn swap_seat(&mut self) {
        if let Mode::Offline { opponent: Opponent::Agent { seat, .. }, .. } = &mut self.mode {
            std::mem::swap(&mut self.seat, seat);
        }
    }

    /// Whether an offline battle is still being played again after a restart.
    pub fn replaying(&self) -> bool {
        matches!(&self.mode, Mode::Offline { replay, .. } if !replay.is_empty())
    }
}

/// One more line from the simulator has been read: sends the replayed lines
/// now due.
pub fn simulator_wrote_a_line(g: &mut Game) {
    let channel = g.channel;
    let Mode::Offline { received, sent, replay, .. } = &mut g.mode else { return };
    *received += 1;
    while replay.front().is_some_and(|(at, _)| *at <= *received) {
        let (at, line) = replay.pop_front().unwrap_or_default();
        sent.push((at, line.clone()));
        send(channel, &line);
    }
}

/// Sends our choice for the current request.
pub fn choose(g: &mut Game, choice: &str) {
    let online = match &mut g.mode {
        Mode::Offline { .. } => None,
        Mode::Online { room: Some(room), rqid, answered, .. } => {
            *answered = *rqid;
            let rqid = rqid.map(|r| format!("|{r}")).unwrap_or_default();
            Some(format!("{room}|/choose {choice}{rqid}"))
        }
        Mode::Online { room: None, .. } => return,
    };
    match online {
        Some(line) => send(g.channel, &line),
        None => {
            let line = format!(">{} {choice}", g.seat.battle.me);
            to_sim(g, &line)
        }
    }
}

/// The battle has ended: the host is told, and closes the simulator or the
/// server connection (freeing its processes) while the battle's state and
/// protocol stay readable.
pub fn finish(g: &mut Game) {
    if g.status != Status::Finished {
        g.status = Status::Finished;
        tell_standing(g);
        tell_seats(g);
        ludus_sdk::lifecycle::game_over();
    }
}

/// Tells the host who plays each side of an offline battle (the creator p1;
/// a bot, an agent or nobody yet p2), with each side's result once it is
/// over. A battle on a server has one seat here, ours: it tells none.
pub fn tell_seats(g: &Game) {
    use ludus_sdk::outcome::Verdict;
    use ludus_sdk::seats::{Holder, Seat as Told};
    let Mode::Offline { creator, opponent, .. } = &g.mode else { return };
    let b = &g.seat.battle;
    let result = |side: &str| match (&b.winner, b.tie) {
        (_, true) => Some(Verdict::Draw),
        (Some(w), _) => Some(if b.sides.get(side).is_some_and(|s| &s.player == w) { Verdict::Won } else { Verdict::Lost }),
        _ => None,
    };
    let p2 = match opponent {
        Opponent::Bot { bot, .. } => Holder::Builtin(format!("showdown-bot/{}", format!("{bot:?}").to_lowercase())),
        Opponent::Agent { joiner: Some(j), .. } => Holder::Agent(j.clone()),
        Opponent::Agent { joiner: None, .. } => Holder::Open,
    };
    ludus_sdk::seats::tell(&[
        Told { name: "p1".into(), holder: Holder::Agent(creator.clone()), result: result("p1") },
        Told { name: "p2".into(), holder: p2, result: result("p2") },
    ]);
}

/// Tells the host where the battle stands for its result record
/// (`outcome`), from its creator's side (p2's seat, when an agent plays
/// it, is only the creator's opponent there). Moves and refusals count
/// both agents' when two play: the host's illegal-move policy counts each
/// player's refusals from them.
pub fn tell_standing(g: &Game) {
    use ludus_sdk::outcome::{Statement, Verdict};
    use ludus_sdk::tally::json_string;
    let (creator, joiner) = match &g.mode {
        Mode::Offline { opponent: Opponent::Agent { seat, .. }, .. } if g.seat.battle.me == "p2" => (&**seat, Some(&g.seat)),
        Mode::Offline { opponent: Opponent::Agent { seat, .. }, .. } => (&g.seat, Some(&**seat)),
        _ => (&g.seat, None),
    };
    let (joined_moves, joined_illegal) = joiner.map_or((0, 0), |j| (j.tally.counts.moves, j.tally.counts.illegal));
    let b = &creator.battle;
    let me = b.my_side().map(|s| s.player.clone());
    let verdict = match (&g.status, &b.winner) {
        (Status::Error(_), _) => Verdict::Abandoned,
        _ if b.tie => Verdict::Draw,
        (_, Some(w)) if Some(w) == me.as_ref() => Verdict::Won,
        (_, Some(_)) => Verdict::Lost,
        _ => Verdict::Playing,
    };
    let opponent = match &g.mode {
        Mode::Offline { opponent: Opponent::Bot { bot, .. }, .. } => format!("{bot:?}").to_lowercase(),
        Mode::Offline { .. } => "agent".into(),
        Mode::Online { .. } => "online".into(),
    };
    let (t, counts) = (&creator.tally, &creator.tally.counts);
    let mean = match t.optimality.len() {
        0 => "null".to_string(),
        n => format!("{:.4}", t.optimality.iter().map(|&x| f64::from(x)).sum::<f64>() / n as f64),
    };
    let per_turn: Vec<String> = t.optimality.iter().map(|x| format!("{x:.4}")).collect();
    let winner = b.winner.as_deref().map_or("null".into(), json_string);
    ludus_sdk::outcome::tell(&Statement {
        verdict,
        parameters: format!("{{\"format\":{},\"opponent\":{}}}", json_string(&g.format), json_string(&opponent)),
        moves: counts.moves + joined_moves,
        illegal_moves: counts.illegal + joined_illegal,
        first_failing_move: counts.first_failing,
        optimum: None,
        figures: format!("{{\"winner\":{winner},\"turns\":{},\"optimality_mean\":{mean},\"optimality\":[{}]}}", b.turn, per_turn.join(",")),
    });
}

/// The validator's problems with a team, when the simulator's side says
/// it refused one (`[Invalid team] …`).
fn team_problems(text: &str) -> Option<&str> {
    text.strip_prefix("[Invalid team]").map(str::trim)
}

pub fn offline_event(g: &mut Game, event: Event) {
    let p2_is_agent = matches!(&g.mode, Mode::Offline { opponent: Opponent::Agent { .. }, .. });
    match event {
        Event::Notice { text } => g.notice = Some((text, now_ms())),
        // p2's own lines, when an agent plays p2: handled as its seat's.
        Event::Request { ref side, .. } | Event::Error { ref side, .. } if side == "p2" && p2_is_agent => {
            g.swap_seat();
            seat_event(g, event);
            g.swap_seat();
        }
        Event::Log { line, .. } => {
            g.seat.battle.on_log(&line);
            if let Mode::Offline { opponent, .. } = &mut g.mode {
                match opponent {
                    Opponent::Bot { view, .. } => view.on_log(&line),
                    Opponent::Agent { seat, .. } => seat.battle.on_log(&line),
                }
            }
            if g.seat.battle.over() {
                finish(g);
            }
        }
        Event::Request { side, json, .. } if side == "p2" => {
            let Mode::Offline { opponent: Opponent::Bot { bot, view }, rng, .. } = &mut g.mode else { return };
            match Request::parse(&json) {
                Ok(req) => {
                    let pick = bot::choice(*bot, &req, view, rng);
                    view.on_request(req);
                    if let Some(choice) = pick {
                        send(g.channel, &format!(">p2 {choice}"));
                    }
                }
                Err(e) => ludus_sdk::log(LogLevel::Warn, &e),
            }
        }
        Event::Error { side, text, .. } if team_problems(&text).is_some() => {
            let whose = if side == "p1" { "Your team" } else { "The opponent's team" };
            let problems = team_problems(&text).unwrap_or_default();
            g.status = Status::Error(format!("{whose} is not legal in {}: {problems}", g.format));
            channels::close(g.channel);
        }
        Event::Error { side, text, .. } if side == "p2" => {
            // An unavailable choice is followed by an updated request, which the bot answers.
            if !text.starts_with("[Unavailable choice]") {
                ludus_sdk::log(LogLevel::Warn, &format!("the bot's choice was refused: {text}"));
                send(g.channel, ">p2 default");
            }
        }
        Event::End { .. } => g.status = Status::Finished,
        event => seat_event(g, event),
    }
}

/// A request or an error for the seat in the game's fields.
fn seat_event(g: &mut Game, event: Event) {
    match event {
        Event::Request { json, .. } => match Request::parse(&json) {
            Ok(req) => {
                g.seat.battle.record_request(&json);
                g.seat.battle.on_request(req);
            }
            Err(e) => ludus_sdk::log(LogLevel::Warn, &e),
        },
        Event::Error { text, .. } if team_problems(&text).is_some() => {
            let problems = team_problems(&text).unwrap_or_default();
            // The joiner's team: its join is refused and the seat stays open.
            g.seat.rejected = Some((u64::MAX, "join".into(), format!("your team is not legal in {}: {problems}", g.format)));
        }
        Event::Error { text, .. } => reject(g, text),
        _ => {}
    }
}

/// The simulator refused our choice: let the agent choose again. An
/// "[Unavailable choice]" (a trap or a disabled move revealed only by trying)
/// comes with a corrected request right after it, which the agent must see.
pub fn reject(g: &mut Game, text: String) {
    g.seat.battle.correction_due = text.starts_with("[Unavailable choice]");
    if let Some((seq, act)) = g.seat.submitted.take() {
        // The move was counted as made, and scored, when it was sent.
        g.seat.tally.refused();
        g.seat.rejected = Some((seq, act, text));
    }
}

/// The login server's answer: the signed name goes to the server.
pub fn signed(g: &mut Game, login_channel: u32, reply: &str) {
    channels::close(login_channel);
    if let Mode::Online { login, .. } = &mut g.mode {
        *login = None;
    }
    match login::assertion(reply) {
        Ok(assertion) => send(g.channel, &format!("|/trn {},0,{assertion}", g.seat.username)),
        Err(e) => g.status = Status::Error(format!("logging in as {} failed: {e}", g.seat.username)),
    }
}

pub fn online_event(g: &mut Game, event: Event) {
    let Mode::Online { goal, logged_in, room, rqid, password, login: login_channel, rejoin, answered_before_restart, .. } = &mut g.mode
    else {
        return;
    };
    match event {
        Event::Global { line } => {
            let f = fields(&line);
            match f.first().copied().unwrap_or("") {
                // With a `login` endpoint the login server signs the challenge; without one
                // only a `--no-security` server takes the name as it is.
                "challstr" => {
                    let account = Account { username: g.seat.username.clone(), password: password.clone() };
                    match channels::open("login") {
                        Ok(ch) => {
                            *login_channel = Some(ch);
                            send(ch, &login::request(&account, &f[1..].join("|")));
                        }
                        Err(e) if account.password.is_some() => {
                            g.status = Status::Error(format!("signing in as {} needs the `login` endpoint: {e}", g.seat.username));
                        }
                        Err(_) => send(g.channel, &format!("|/trn {}", g.seat.username)),
                    }
                }
                "updateuser" => {
                    let named = f.get(2) == Some(&"1");
                    if named && to_id(f.get(1).unwrap_or(&"")) == to_id(&g.seat.username) && !*logged_in {
                        *logged_in = true;
                        send(g.channel, "|/utm null");
                        match (rejoin.take(), goal) {
                            (Some(battle), _) => send(g.channel, &format!("|/join {battle}")),
                            (None, Goal::Ladder) => send(g.channel, &format!("|/search {}", g.format)),
                            (None, Goal::Challenge(opp)) => {
                                send(g.channel, &format!("|/challenge {opp}, {}", g.format));
                                host::set_timer(CHALLENGE_RETRY_MS);
                            }
                        }
                    }
                }
                "nametaken" => {
                    g.status = Status::Error(format!("the server refused the name {}: {}", g.seat.username, f.get(2).unwrap_or(&"")));
                }
                "pm" => {
                    // `|pm| FROM| TO|/challenge FORMAT|…`: a challenge to us.
                    let from = f.get(1).map(|s| s.trim_start_matches([' ', '+', '%', '@', '*', '#', '&', '~', '!', '‽'])).unwrap_or("");
                    let to = f.get(2).map(|s| to_id(s)).unwrap_or_default();
                    let msg = f.get(3).copied().unwrap_or("");
                    let from_opponent = matches!(goal, Goal::Challenge(opp) if to_id(opp) == to_id(from));
                    if to == to_id(&g.seat.username) && from_opponent && msg.starts_with("/challenge ") && room.is_none() {
                        // Both may have challenged each other: the one with the larger id accepts.
                        if to_id(&g.seat.username) > to_id(from) {
                            send(g.channel, "|/utm null");
                            send(g.channel, &format!("|/accept {}", to_id(from)));
                        }
                    }
                }
                "popup" => ludus_sdk::log(LogLevel::Info, &format!("server: {}", f[1..].join("|"))),
                _ => {}
            }
        }
        Event::Log { room: r, line } => {
            if !r.starts_with("battle-") {
                return;
            }
            if room.is_none() && line.starts_with("|init|battle") {
                *room = Some(r.clone());
                g.status = Status::Active;
                // The battle tag is the id; a second seat in this same server gets a suffix.
                if !g.seat.announced && host::rename_session(&r).is_err() {
                    let _ = host::rename_session(&format!("{r}:{}", to_id(&g.seat.username)));
                }
            }
            if room.as_deref() == Some(r.as_str()) {
                g.seat.battle.on_log(&line);
                if g.seat.battle.over() {
                    finish(g);
                }
            }
        }
        Event::Request { room: r, json, .. } => {
            if room.as_deref() != Some(r.as_str()) {
                return;
            }
            match Request::parse(&json) {
                Ok(req) => {
                    *rqid = req.rqid;
                    let answered_already = answered_before_restart.take().is_some_and(|r| req.rqid == Some(r));
                    g.seat.battle.record_request(&json);
                    g.seat.battle.on_request(req);
                    // Resent on the rejoin: the next request is ours.
                    g.seat.battle.correction_due |= answered_already;
                }
                Err(e) => ludus_sdk::log(LogLevel::Warn, &e),
            }
        }
        Event::Error { room: r, text, .. } => {
            if room.as_deref() == Some(r.as_str()) {
                reject(g, text);
            }
        }
        Event::End { .. } | Event::Notice { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::SeatTally;

    #[test]
    fn a_refused_choice_takes_its_score_out_of_the_optimality_list() {
        let mut t = SeatTally::default();
        t.sent(Some(0.5));
        t.sent(Some(1.0));
        t.refused();
        // An unscored choice refused: the scores before it stay.
        t.sent(None);
        t.refused();
        t.sent(Some(0.25));
        assert_eq!(t.optimality, vec![0.5, 0.25]);
        assert_eq!((t.counts.moves, t.counts.illegal), (2, 2));
    }

    #[test]
    fn a_tally_saved_before_scores_were_taken_back_still_reads() {
        let saved = serde_json::json!({"counts": ludus_sdk::tally::Tally::default(), "optimality": [0.5]});
        let mut t: SeatTally = serde_json::from_value(saved).unwrap();
        t.refused();
        assert_eq!(t.optimality, vec![0.5], "a choice sent before the restart is not known to be scored");
    }
}
