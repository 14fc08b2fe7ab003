//! A run: the matches an evaluator sets up in a file the server reads
//! (`run = "FILE"` in the config, or `serve --run FILE`), so that agents
//! only ask for their next game (`ludus_next_game`) and play it.
//!
//! A match is N games of one game between the same players, in pairs
//! played on one deal: both games of a pair share a seed and a secret, and
//! the second is the first with the sides exchanged (between two agents,
//! the other one creates it and so takes the creator's side, colour, team
//! or deck; against a built-in opponent, the `swap` argument takes its
//! second value; a puzzle's instance is played by each player). First-move
//! and deal luck so cancel. A match of more than two agents is a round
//! robin: a match of each pair, every pairing on the same deals. Each game
//! is started when the first of its players asks for it, for its creator;
//! a game between two agents only once it is the next of both (one still
//! busy with an earlier game of the run: the other is told to wait). Each
//! game carries its match, pair and game into its record. Why:
//! docs/design/arena.md.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::plugin::{Audience, Plugin, Role, SEED};
use crate::records::MatchTag;
use crate::registry::Registry;
use crate::session::{Caller, Plan, Refusal, Reply, Seeding};

/// Why a run file cannot be played, or a game of it cannot start. The
/// texts name the file and match, and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    #[error("the run file {path} cannot be read: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("in the run file {path}: {source}")]
    Parse { path: String, source: toml::de::Error },
    #[error("in the run file {path}, match {id}: {why}")]
    Match { path: String, id: String, why: MatchError },
    #[error("the run file {path} has no [[match]]")]
    Empty { path: String },
    #[error("the game {0} is no longer loaded")]
    GameGone(String),
    #[error("{plugin} no longer has `{tool}`")]
    ToolGone { plugin: String, tool: String },
    #[error("starting game {game} of match {id}: {why}")]
    Start { id: String, game: u32, why: Refusal },
}

/// What is wrong with one `[[match]]` of a run file.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    #[error("no game `{game}` is loaded (the games are {loaded})")]
    UnknownGame { game: String, loaded: String },
    #[error("`{tool}` is not a tool that starts a {plugin} game ({tools})")]
    NotCreating { tool: String, plugin: String, tools: String },
    #[error("say which tool starts its games with `create`: {tools}")]
    WhichTool { tools: String },
    #[error("`players` names one caller (against a built-in opponent), two, or more (a round robin: each pair meets)")]
    Players,
    #[error("`players` names one caller twice")]
    OnePlayerTwice,
    #[error("`games` is 1 or more")]
    NoGames,
    #[error("`games` is {0}: its games go in pairs (sides exchanged), so it must be even")]
    OddGames(u32),
    #[error("`swap` is for a match against a built-in opponent")]
    SwapBetweenAgents,
    #[error("its arguments do not fit `{tool}`: {why}")]
    Arguments { tool: String, why: String },
}

/// The run file: its matches, in the order players meet them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    #[serde(rename = "match", default)]
    matches: Vec<MatchSpec>,
}

/// One `[[match]]` of the run file.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchSpec {
    /// Default: `match-N`, N its place in the file from 1.
    id: Option<String>,
    /// The game (plugin name).
    game: String,
    /// The tool that starts it; may be left out when the game has one.
    create: Option<String>,
    /// Callers (token names): two meet each other; one plays a built-in
    /// opponent the arguments name; more meet in a round robin.
    players: Vec<String>,
    /// Games in the match (even, when its games go in pairs).
    games: u32,
    /// The first pair's seed; pair P plays `seed + P - 1`.
    seed: u64,
    /// The starting tool's arguments.
    #[serde(default)]
    args: Map<String, Value>,
    /// Against a built-in opponent: an argument whose two values the pair's
    /// two games take (`colour = ["white", "black"]`).
    #[serde(default)]
    swap: BTreeMap<String, [Value; 2]>,
    /// The time per move its games are played under (default: the server's `clock`).
    clock: Option<crate::records::Clock>,
}

/// One game of the run as planned, and its session once started.
#[derive(Clone)]
struct Planned {
    tag: MatchTag,
    /// Games in its match.
    of: u32,
    plugin: String,
    create: String,
    args: Map<String, Value>,
    seed: u64,
    secret: u64,
    creator: String,
    /// The other agent, who takes its seat with the join code, and the tool that takes it.
    joiner: Option<String>,
    join_tool: Option<String>,
    session: Option<String>,
    /// Its record is in the records file already (an earlier run of the server played it).
    recorded: bool,
    /// Times it was started again after it expired unplayed.
    restarts: u32,
    /// Its match's clock (none: the server's).
    clock: Option<crate::records::Clock>,
}

/// The run a server was given.
pub struct Run {
    games: tokio::sync::Mutex<Vec<Planned>>,
    /// The records file, where a game gone from the server says whether it
    /// was played (none: games are not recorded).
    records: Option<std::path::PathBuf>,
}

/// How often a run's game that expired unplayed is started again.
const MAX_RESTARTS: u32 = 3;

/// What `ludus_next_game` answers.
#[derive(Serialize, schemars::JsonSchema)]
pub struct NextGame {
    /// `play` (the game named here), `wait` (your next game's creator is
    /// still busy: ask again soon), `done` (every game of yours is over) or
    /// `none` (the run has no game for you).
    pub status: String,
    /// What to do now, in words.
    pub next: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game: Option<GameOfRun>,
    /// Your games of the run not over yet, this one included.
    pub left: usize,
}

/// A game of the run, as its player sees it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct GameOfRun {
    /// The match's id.
    #[serde(rename = "match")]
    pub in_match: String,
    /// Its pair (from 1): the two games played on one deal, sides exchanged.
    pub pair: u32,
    /// Its game in the match (from 1), of `games`.
    pub number: u32,
    pub games: u32,
    /// The game (plugin) and the session id its tools take.
    pub plugin: String,
    pub game_id: String,
    /// Who started it (its creator's side is theirs) and who joins it.
    pub creator: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joiner: Option<String>,
    /// For the joiner while its seat is open: the tool that takes it, and the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_code: Option<String>,
}

impl Run {
    /// Reads and checks a run file against the games loaded: every game,
    /// starting tool, argument and player count must fit, or the server
    /// does not start (an evaluation that would fail later fails now). The
    /// games whose records `records` holds were played by an earlier run of
    /// the server, and are not played again.
    pub fn load(path: &Path, registry: &Registry, records: Option<&Path>) -> Result<Run, ArenaError> {
        let shown = || path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ArenaError::Read { path: shown(), source })?;
        let file: RunFile = toml::from_str(&text).map_err(|source| ArenaError::Parse { path: shown(), source })?;
        let run_secret = uuid::Uuid::new_v4().as_u64_pair().0;
        let mut games = Vec::new();
        for (n, spec) in file.matches.iter().enumerate() {
            let id = spec.id.clone().unwrap_or_else(|| format!("match-{}", n + 1));
            for (pairing, spec) in round_robin(spec, &id, registry) {
                let plan = plan_match(&spec, &pairing, &id, registry, run_secret).map_err(|why| ArenaError::Match {
                    path: shown(),
                    id: pairing.clone(),
                    why,
                })?;
                games.extend(plan);
            }
        }
        if games.is_empty() {
            return Err(ArenaError::Empty { path: shown() });
        }
        let done = records.map(recorded_games).unwrap_or_default();
        for planned in &mut games {
            planned.recorded = done.contains(&(planned.tag.clone(), planned.creator.clone()));
        }
        Ok(Run { games: tokio::sync::Mutex::new(games), records: records.map(Path::to_path_buf) })
    }

    /// The caller's next game: the first of its games in the run that is not
    /// over, started now if nobody has started it yet and, between two
    /// agents, it is the other's next game too; else a later game of its
    /// own (a puzzle, a built-in opponent), or word to wait.
    pub async fn next_for(&self, registry: &Arc<Registry>, caller: &Caller) -> Result<NextGame, ArenaError> {
        let name = caller.name();
        let mut games = self.games.lock().await;
        let mine: Vec<usize> = (0..games.len()).filter(|&i| games[i].creator == name || games[i].joiner.as_deref() == Some(name)).collect();
        if mine.is_empty() {
            return Ok(NextGame {
                status: "none".into(),
                next: format!("The run has no game for you ({name}); its players are the callers its run file names."),
                game: None,
                left: 0,
            });
        }
        let mut left = mine.len();
        // A game whose creator is busy with another: whose, and which.
        let mut blocked: Option<(String, MatchTag)> = None;
        for i in mine {
            match open_state(&mut games[i], registry, self.records.as_deref()).await {
                Open::Over => left -= 1,
                Open::Started(id, code) => return Ok(play(&games[i], id, code, name, left)),
                Open::NotStarted => {
                    // Between two agents a game starts when it is the next of
                    // both: each plays its games in the run's order, so the
                    // earliest game not over can always start, and nobody
                    // waits in a game for someone busy in another.
                    if let Some(other) = games[i].other_player(name) {
                        let records = self.records.as_deref();
                        let mut next_of_both = first_open(&mut games, registry, records, name).await == Some(i);
                        next_of_both = next_of_both && first_open(&mut games, registry, records, &other).await == Some(i);
                        if !next_of_both {
                            blocked.get_or_insert((other, games[i].tag.clone()));
                            continue;
                        }
                    }
                    let (id, code) = start(registry, &games[i]).await?;
                    games[i].session = Some(id.clone());
                    return Ok(play(&games[i], id, code, name, left));
                }
            }
        }
        if let Some((other, tag)) = blocked {
            let next = format!(
                "Your next game (match {}, game {}) is against {other}, who is still playing an earlier game of the run. Ask \
                 again in a little while.",
                tag.id, tag.game
            );
            return Ok(NextGame { status: "wait".into(), next, game: None, left });
        }
        Ok(NextGame { status: "done".into(), next: "Every game of yours in the run is over.".into(), game: None, left: 0 })
    }
}

impl Planned {
    /// The other agent of a game between two, as `name` sees it.
    fn other_player(&self, name: &str) -> Option<String> {
        let joiner = self.joiner.as_ref()?;
        Some(if self.creator == name { joiner.clone() } else { self.creator.clone() })
    }
}

/// Where a planned game stands.
enum Open {
    /// Recorded, over, or gone.
    Over,
    /// Under way: its session and, while a seat is open, its join code.
    Started(String, Option<String>),
    NotStarted,
}

async fn open_state(planned: &mut Planned, registry: &Arc<Registry>, records: Option<&Path>) -> Open {
    if planned.recorded {
        return Open::Over;
    }
    // Started by an earlier run of the server, and kept in its store.
    if planned.session.is_none() {
        planned.session = registry.sessions.started_for(&planned.tag, &planned.creator);
    }
    let Some(id) = planned.session.clone() else { return Open::NotStarted };
    let state = match registry.plugin(&planned.plugin) {
        Some(plugin) => registry.sessions.planned_state(&id, &plugin).await,
        None => None,
    };
    match state {
        Some((false, code)) => Open::Started(id, code),
        Some((true, _)) => Open::Over,
        // Gone: it ended, or its session expired. One that expired before
        // anyone moved is started again (a fresh game on the pair's deal).
        None if planned.restarts < MAX_RESTARTS && records.is_some_and(|r| expired_unplayed(r, &planned.tag, &planned.creator)) => {
            tracing::info!(run_match = planned.tag.id, game = planned.tag.game, "a run's game expired unplayed; it starts again");
            planned.restarts += 1;
            planned.session = None;
            Open::NotStarted
        }
        None => {
            planned.recorded = true;
            Open::Over
        }
    }
}

/// Whether the last record of the run's game `tag` by `creator` is an
/// abandoned game in which nobody moved.
fn expired_unplayed(path: &Path, tag: &MatchTag, creator: &str) -> bool {
    #[derive(Deserialize)]
    struct Line {
        #[serde(rename = "match")]
        in_match: Option<MatchTag>,
        caller: String,
        outcome: crate::records::Outcome,
        #[serde(default)]
        moves: u32,
    }
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let last = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .find(|l| l.in_match.as_ref() == Some(tag) && l.caller == creator);
    last.is_some_and(|l| l.outcome == crate::records::Outcome::Abandoned && l.moves == 0)
}

/// The first of `who`'s games that is not over (its next game).
async fn first_open(games: &mut [Planned], registry: &Arc<Registry>, records: Option<&Path>, who: &str) -> Option<usize> {
    for (i, planned) in games.iter_mut().enumerate() {
        if planned.creator != who && planned.joiner.as_deref() != Some(who) {
            continue;
        }
        if !matches!(open_state(planned, registry, records).await, Open::Over) {
            return Some(i);
        }
    }
    None
}

/// A match of more than two agents, at a game with seats, as a match of
/// each pair (`ID/A-B`); any other as it is.
fn round_robin(spec: &MatchSpec, id: &str, registry: &Registry) -> Vec<(String, MatchSpec)> {
    let seated = registry.plugin(&spec.game).is_some_and(|p| p.has_seats());
    if spec.players.len() <= 2 || !seated {
        return vec![(id.to_string(), spec.clone())];
    }
    let mut pairings = Vec::new();
    for (i, a) in spec.players.iter().enumerate() {
        for b in &spec.players[i + 1..] {
            pairings.push((format!("{id}/{a}-{b}"), MatchSpec { players: vec![a.clone(), b.clone()], ..spec.clone() }));
        }
    }
    pairings
}

/// The (match, creator) of every record in the records file that has a match.
fn recorded_games(path: &Path) -> std::collections::HashSet<(MatchTag, String)> {
    #[derive(Deserialize)]
    struct Line {
        #[serde(rename = "match")]
        in_match: Option<MatchTag>,
        caller: String,
    }
    let Ok(text) = std::fs::read_to_string(path) else { return Default::default() };
    text.lines().filter_map(|l| serde_json::from_str::<Line>(l).ok()).filter_map(|l| Some((l.in_match?, l.caller))).collect()
}

/// The games of one match, in order; `deal` names the deals its pairs are
/// played on (a round robin's pairings share them).
fn plan_match(spec: &MatchSpec, id: &str, deal: &str, registry: &Registry, run_secret: u64) -> Result<Vec<Planned>, MatchError> {
    let plugin = registry.plugin(&spec.game).ok_or_else(|| {
        let names: Vec<String> = registry.plugins().iter().map(|p| p.name.clone()).collect();
        MatchError::UnknownGame { game: spec.game.clone(), loaded: names.join(", ") }
    })?;
    let create = creating_tool(&plugin, spec.create.as_deref())?;
    let two_sides = plugin.has_seats();
    if spec.players.is_empty() || (two_sides && spec.players.len() > 2) {
        return Err(MatchError::Players);
    }
    let distinct: std::collections::BTreeSet<&String> = spec.players.iter().collect();
    if distinct.len() != spec.players.len() {
        return Err(MatchError::OnePlayerTwice);
    }
    if spec.games == 0 {
        return Err(MatchError::NoGames);
    }
    let paired = (spec.players.len() == 2 && two_sides) || !spec.swap.is_empty();
    let puzzle_for_several = spec.players.len() >= 2 && !two_sides;
    if paired && spec.games % 2 == 1 {
        return Err(MatchError::OddGames(spec.games));
    }
    if puzzle_for_several && !spec.swap.is_empty() {
        return Err(MatchError::SwapBetweenAgents);
    }
    let mut out = Vec::new();
    for k in 0..spec.games {
        let pair = if paired { k / 2 + 1 } else { k + 1 };
        let mut args = spec.args.clone();
        for (name, values) in &spec.swap {
            args.insert(name.clone(), values[(k % 2) as usize].clone());
        }
        let seed = spec.seed.wrapping_add(u64::from(pair - 1));
        if create.params.iter().any(|f| f.json == SEED) {
            args.insert(SEED.into(), seed.into());
        }
        create.convert_args(&args).map_err(|e| MatchError::Arguments { tool: create.name.clone(), why: e.to_string() })?;
        let secret = pair_secret(run_secret, deal, pair);
        let tag = MatchTag { id: id.to_string(), pair, game: k + 1 };
        let base = Planned {
            tag,
            of: spec.games,
            plugin: plugin.name.clone(),
            create: create.name.clone(),
            args,
            seed,
            secret,
            creator: spec.players[0].clone(),
            joiner: None,
            join_tool: plugin.tools.iter().find(|t| t.audience == Audience::Joins).map(|t| t.name.clone()),
            session: None,
            recorded: false,
            restarts: 0,
            clock: spec.clock,
        };
        match (spec.players.as_slice(), two_sides) {
            ([a, b], true) => {
                let (creator, joiner) = if k % 2 == 0 { (a, b) } else { (b, a) };
                out.push(Planned { creator: creator.clone(), joiner: Some(joiner.clone()), ..base });
            }
            // A puzzle: each player plays the same instance.
            (players, false) if players.len() >= 2 => {
                out.extend(players.iter().map(|p| Planned { creator: p.clone(), ..base.clone() }));
            }
            _ => out.push(base),
        }
    }
    Ok(out)
}

/// The tool that starts a match's games: the one named, or the game's only one.
fn creating_tool<'a>(plugin: &'a Plugin, named: Option<&str>) -> Result<&'a crate::plugin::ToolDef, MatchError> {
    let creating: Vec<&crate::plugin::ToolDef> = plugin.tools.iter().filter(|t| t.role == Role::Creates).collect();
    let tools = || creating.iter().map(|t| format!("`{}`", t.name)).collect::<Vec<_>>().join(", ");
    match named {
        Some(name) => creating.iter().find(|t| t.name == name).copied().ok_or_else(|| MatchError::NotCreating {
            tool: name.to_string(),
            plugin: plugin.name.clone(),
            tools: tools(),
        }),
        None => match creating.as_slice() {
            [only] => Ok(only),
            _ => Err(MatchError::WhichTool { tools: tools() }),
        },
    }
}

/// The secret a pair's games share: drawn for the run, one per pair.
fn pair_secret(run_secret: u64, id: &str, pair: u32) -> u64 {
    use sha2::Digest as _;
    let digest =
        sha2::Sha256::new().chain_update(run_secret.to_le_bytes()).chain_update(id.as_bytes()).chain_update(pair.to_le_bytes()).finalize();
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
}

/// Starts a planned game for its creator: its id, and its join code while a seat is open.
async fn start(registry: &Arc<Registry>, planned: &Planned) -> Result<(String, Option<String>), ArenaError> {
    let plugin = registry.plugin(&planned.plugin).ok_or_else(|| ArenaError::GameGone(planned.plugin.clone()))?;
    let index = plugin
        .tools
        .iter()
        .position(|t| t.name == planned.create)
        .ok_or_else(|| ArenaError::ToolGone { plugin: plugin.name.clone(), tool: planned.create.clone() })?;
    let sessions = &registry.sessions;
    let secret = (!sessions.whole_seeds_for(&planned.creator)).then_some(planned.secret);
    let seeding = Seeding { seed: planned.seed, chosen: true, secret, replay: false };
    let plan = Plan { seeding, in_match: planned.tag.clone(), clock: planned.clock };
    let creator = Caller::Token(planned.creator.clone());
    let failed = |why| ArenaError::Start { id: planned.tag.id.clone(), game: planned.tag.game, why };
    let (id, reply) = sessions.start_planned(plugin.clone(), index, &planned.args, creator, plan).await.map_err(failed)?;
    if let Reply::Failed(why) = reply {
        return Err(failed(why));
    }
    let code = sessions.planned_state(&id, &plugin).await.and_then(|(_, code)| code);
    Ok((id, code))
}

fn play(planned: &Planned, id: String, code: Option<String>, caller: &str, left: usize) -> NextGame {
    let joining = planned.joiner.as_deref() == Some(caller) && code.is_some();
    let next = match (&planned.join_tool, joining) {
        (Some(tool), true) => {
            format!("Take your seat in this {} game: call `{tool}` with its id {id} and `join_code`, then play.", planned.plugin)
        }
        _ => format!("Play this {} game: its id is {id}; ask for its state, then move.", planned.plugin),
    };
    NextGame {
        status: "play".into(),
        next,
        game: Some(GameOfRun {
            in_match: planned.tag.id.clone(),
            pair: planned.tag.pair,
            number: planned.tag.game,
            games: planned.of,
            plugin: planned.plugin.clone(),
            game_id: id,
            creator: planned.creator.clone(),
            joiner: planned.joiner.clone(),
            join_tool: planned.join_tool.clone().filter(|_| joining),
            join_code: code.filter(|_| joining),
        }),
        left,
    }
}
