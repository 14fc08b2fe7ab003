//! The showdown plugin: one instance is one battle. The battle's input comes
//! through a host channel — the `server` endpoint (a Showdown server's
//! WebSocket) or the `sim` endpoint (a `pokemon-showdown simulate-battle`
//! sidecar) — as `on-message` events; tools read the tracked battle and wait
//! through the host until something they need has happened.

wit_bindgen::generate!({
    world: "ludus:showdown/showdown",
    path: ["../../wit/plugin", "wit"],
    default_bindings_module: "crate::component",
    with: {
        "ludus:plugin/types@0.1.1": ludus_sdk::types,
        "ludus:plugin/host@0.1.1": ludus_sdk::host,
        "ludus:plugin/channels@0.1.1": ludus_sdk::channels,
    },
});

use std::cell::RefCell;

use exports::ludus::showdown::tools::{
    ActionInfo, ActionScore, AvailableActions, BattleStarted, BattleState, Bot as BotChoice, Guest, MoveEvaluation, MoveResult,
    Pokemon, PokemonDetails,
};
use ludus_sdk::{LogLevel, PluginInfo, ResourceInfo, ToolHint, channels, host};

use crate::battle::{Battle, Mon, status_name};
use crate::bot::{self, Bot};
use crate::rng::Rng;
use crate::data::{data, to_id};
use crate::engine::{self, Evaluation, Settings};
use crate::login::{self, Account};
use crate::protocol::{Event, SimReader, fields, server_frame};
use crate::request::{Kind, Request};

const DEFAULT_FORMAT: &str = "gen9randombattle";
const LOG_URI: &str = "showdown://battle/{session}/log";
/// Seconds between repeated challenges while the opponent is not online yet.
const CHALLENGE_RETRY_MS: u32 = 3_000;

#[derive(Debug, Clone, PartialEq)]
enum Status {
    Searching,
    Challenging,
    Active,
    Finished,
    Error(String),
}

impl Status {
    fn label(&self) -> &'static str {
        match self {
            Status::Searching => "searching",
            Status::Challenging => "challenging",
            Status::Active => "active",
            Status::Finished => "finished",
            Status::Error(_) => "error",
        }
    }
}

enum Mode {
    Offline { bot: Bot, rng: Rng, seed: u64, reader: SimReader, bot_view: Battle },
    Online {
        goal: Goal,
        logged_in: bool,
        room: Option<String>,
        rqid: Option<u64>,
        /// The operator's password for this name (signs in through the `login` endpoint).
        password: Option<String>,
        /// The open `login` channel while the login server is asked.
        login: Option<u32>,
    },
}

#[derive(Clone)]
enum Goal {
    Ladder,
    Challenge(String),
}

struct Game {
    mode: Mode,
    format: String,
    username: String,
    channel: u32,
    battle: Battle,
    status: Status,
    /// The decision we answered (its sequence number) and with what.
    submitted: Option<(u64, String)>,
    /// A choice the simulator refused: (decision sequence, our action, why).
    rejected: Option<(u64, String, String)>,
    /// The id the agent was given; a later rename would lose it.
    announced: bool,
    /// A `make_move` call that submitted and waits: (decision sequence, its action).
    in_flight: Option<(u64, String)>,
    /// The engine's verdict on the last submitted action.
    scorecard: Option<Scorecard>,
}

/// An action scored at the moment it was chosen.
struct Scorecard {
    seq: u64,
    action: String,
    evaluation: Result<Evaluation, String>,
    millis: f64,
}

thread_local! {
    static GAME: RefCell<Option<Game>> = const { RefCell::new(None) };
}

fn with_game<T>(f: impl FnOnce(&mut Game) -> Result<T, String>) -> Result<T, String> {
    GAME.with_borrow_mut(|g| match g.as_mut() {
        Some(game) => f(game),
        None => Err("this session holds no battle".into()),
    })
}

fn battle_id() -> String {
    host::session_id().unwrap_or_default()
}

struct Showdown;

impl exports::ludus::plugin::meta::Guest for Showdown {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "showdown".into(),
            title: "Pokémon Showdown".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Pokémon Showdown battles: on a Showdown server (ladder or challenge) through the operator's \
                          `server` endpoint, or offline against a built-in bot through the `sim` endpoint (a \
                          `pokemon-showdown simulate-battle` sidecar). Start with `showdown_start_offline_battle` or \
                          `showdown_initiate_battle`, then loop `showdown_make_move` until the battle ends."
                .into(),
            tools: vec![
                ToolHint::creates("initiate-battle").title("Search the ladder for a battle").open_world().waits(60_000, 60_000),
                ToolHint::creates("challenge-user").title("Challenge a user").open_world().waits(120_000, 120_000),
                ToolHint::creates("start-offline-battle").title("Battle a built-in bot offline").waits(20_000, 60_000),
                ToolHint::uses("get-battle-state", "battle-id").title("Battle state").read_only().waits(25_000, 150_000),
                ToolHint::uses("get-available-actions", "battle-id").title("Available actions").read_only(),
                ToolHint::uses("make-move", "battle-id").title("Make a move").open_world().waits(30_000, 150_000),
                ToolHint::uses("get-pokemon-details", "battle-id").title("Pokémon details").read_only(),
                ToolHint::uses("forfeit-battle", "battle-id").title("Forfeit").destructive().open_world().waits(10_000, 30_000),
            ],
            resources: vec![ResourceInfo {
                uri: LOG_URI.into(),
                name: "battle-log".into(),
                description: "The battle's public protocol log (what a spectator sees), one line per event".into(),
                mime_type: "text/plain".into(),
            }],
            idle_timeout_ms: None,
        }
    }

    fn read_resource(uri: String) -> Result<String, String> {
        if uri.starts_with("showdown://battle/") && uri.ends_with("/log") {
            return with_game(|g| Ok(g.battle.log.join("\n")));
        }
        Err(format!("no resource {uri}"))
    }
}

fn valid_format(format: Option<String>) -> Result<String, String> {
    let f = format.unwrap_or_else(|| DEFAULT_FORMAT.into());
    if f.is_empty() || f.len() > 60 || !f.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
        return Err(format!("format {f:?} is not a Showdown format id (like gen9randombattle)"));
    }
    if !f.contains("random") {
        return Err(format!("format {f} needs a team; only random formats (like gen9randombattle) are supported"));
    }
    Ok(f)
}

fn valid_username(name: Option<String>) -> Result<String, String> {
    let name = name.unwrap_or_else(|| format!("Ludus{:06}", host::seed() % 1_000_000));
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

fn open(endpoint: &str, purpose: &str) -> Result<u32, String> {
    channels::open(endpoint).map_err(|e| format!("{purpose} needs the `{endpoint}` endpoint: {e}"))
}

fn send(channel: u32, line: &str) {
    if let Err(e) = channels::send(channel, line) {
        ludus_sdk::log(LogLevel::Warn, &format!("send failed: {e}"));
    }
}

/// Seeds for the simulator: four 16-bit numbers.
fn sim_seed(rng: &mut Rng) -> String {
    (0..4).map(|_| (rng.next_u64() % 65_536).to_string()).collect::<Vec<_>>().join(",")
}

fn start_online(goal: Goal, format: Option<String>, username: Option<String>) -> Result<BattleStarted, String> {
    let format = valid_format(format)?;
    let env = |key: &str| std::env::var(key).ok();
    let account = login::account(username.as_deref(), env("SHOWDOWN_USERNAME").as_deref(), env("SHOWDOWN_PASSWORD").as_deref());
    let password = account.as_ref().and_then(|a| a.password.clone());
    let username = valid_username(account.map(|a| a.username))?;
    if let Goal::Challenge(opp) = &goal {
        if to_id(opp).is_empty() || opp.len() > 18 {
            return Err(format!("opponent {opp:?} is not a Showdown user name"));
        }
    }
    let channel = open("server", "playing on a Showdown server")?;
    let status = match goal {
        Goal::Ladder => Status::Searching,
        Goal::Challenge(_) => Status::Challenging,
    };
    let mode = Mode::Online { goal, logged_in: false, room: None, rqid: None, password, login: None };
    begin(Game::new(mode, format, username, channel, Battle::default(), status))
}

impl Game {
    /// A battle being set up: nothing submitted, refused or announced yet.
    fn new(mode: Mode, format: String, username: String, channel: u32, battle: Battle, status: Status) -> Game {
        Game {
            mode,
            format,
            username,
            channel,
            battle,
            status,
            submitted: None,
            rejected: None,
            announced: false,
            in_flight: None,
            scorecard: None,
        }
    }
}

/// Makes `game` this session's battle and answers the starting tool.
fn begin(game: Game) -> Result<BattleStarted, String> {
    GAME.set(Some(game));
    started()
}

/// The starting tools' answer: final once the first decision is due (or the
/// battle failed), provisional before.
fn started() -> Result<BattleStarted, String> {
    with_game(|g| {
        if let Status::Error(e) = &g.status {
            return Err(e.clone());
        }
        let ready = g.battle.pending().is_some() || g.battle.over();
        if !ready && !host::wait_timed_out() {
            host::wait(0);
        } else {
            g.announced = true;
        }
        let opponent = g.battle.their_side().map(|s| s.player.clone()).filter(|p| !p.is_empty()).or_else(|| match &g.mode {
            Mode::Online { goal: Goal::Challenge(o), .. } => Some(o.clone()),
            _ => None,
        });
        let seed = match &g.mode {
            Mode::Offline { seed, .. } => Some(*seed),
            Mode::Online { .. } => None,
        };
        let text = if ready {
            summary(g)
        } else {
            format!(
                "Still {} as {}. Call `showdown_get_battle_state` with battle_id {} to wait for the battle to start.",
                g.status.label(),
                g.username,
                battle_id()
            )
        };
        Ok(BattleStarted {
            battle_id: battle_id(),
            status: g.status.label().into(),
            format: g.format.clone(),
            username: g.username.clone(),
            opponent,
            seed,
            text,
        })
    })
}

impl Guest for Showdown {
    fn initiate_battle(format: Option<String>, username: Option<String>) -> Result<BattleStarted, String> {
        if GAME.with_borrow(Option::is_some) {
            return started();
        }
        start_online(Goal::Ladder, format, username)
    }

    fn challenge_user(opponent: String, format: Option<String>, username: Option<String>) -> Result<BattleStarted, String> {
        if GAME.with_borrow(Option::is_some) {
            return started();
        }
        start_online(Goal::Challenge(opponent), format, username)
    }

    fn start_offline_battle(bot: Option<BotChoice>, format: Option<String>, _seed: Option<u64>) -> Result<BattleStarted, String> {
        if GAME.with_borrow(Option::is_some) {
            return started();
        }
        let format = valid_format(format)?;
        let bot = match bot.unwrap_or(BotChoice::Heuristic) {
            BotChoice::Random => Bot::Random,
            BotChoice::Heuristic => Bot::Heuristic,
            BotChoice::Search => Bot::Search,
        };
        // The host seeds this instance from the `seed` argument and reports it.
        let seed = host::seed();
        let channel = open("sim", "an offline battle")?;
        let mut rng = Rng::new(seed);
        let bot_name = match bot {
            Bot::Random => "Random Bot",
            Bot::Heuristic => "Heuristic Bot",
            Bot::Search => "Search Bot",
        };
        // Our own strings only: ids checked above, names fixed here.
        send(channel, &format!(r#">start {{"formatid":"{format}","seed":"{}"}}"#, sim_seed(&mut rng)));
        send(channel, &format!(r#">player p1 {{"name":"You","seed":"{}"}}"#, sim_seed(&mut rng)));
        send(channel, &format!(r#">player p2 {{"name":"{bot_name}","seed":"{}"}}"#, sim_seed(&mut rng)));
        let id = battle_id();
        let tag = format!("battle-{format}-offline-{}", id.get(..10).unwrap_or(&id));
        if let Err(e) = host::rename_session(&tag) {
            ludus_sdk::log(LogLevel::Warn, &format!("keeping the session id: {e}"));
        }
        let bot_view = Battle { me: "p2".into(), ..Battle::default() };
        let mode = Mode::Offline { bot, rng, seed, reader: SimReader::default(), bot_view };
        let battle = Battle { me: "p1".into(), ..Battle::default() };
        begin(Game::new(mode, format, "You".into(), channel, battle, Status::Active))
    }

    fn get_battle_state(_battle_id: String) -> Result<BattleState, String> {
        with_game(|g| {
            let unsettled = matches!(g.status, Status::Searching | Status::Challenging)
                || (g.status == Status::Active && g.battle.pending().is_none());
            if unsettled && !host::wait_timed_out() {
                host::wait(0);
            }
            g.announced = true;
            Ok(state(g))
        })
    }

    fn get_available_actions(_battle_id: String) -> Result<AvailableActions, String> {
        with_game(|g| {
            let req = g.battle.pending();
            let actions = req.map(Request::actions).unwrap_or_default();
            let slot = req.and_then(|r| r.active.first());
            let text = if actions.is_empty() {
                format!("No action is due now ({}). {}", g.status.label(), next_step(g))
            } else {
                format!(
                    "Choose one with `showdown_make_move`:\n{}",
                    actions.iter().map(|a| format!("- `{}` — {}", a.name, describe_action(req, a))).collect::<Vec<_>>().join("\n")
                )
            };
            Ok(AvailableActions {
                battle_id: battle_id(),
                actions: actions
                    .iter()
                    .map(|a| ActionInfo {
                        action: a.name.clone(),
                        kind: if a.kind == Kind::Switch { "switch".into() } else { "move".into() },
                        details: describe_action(req, a),
                    })
                    .collect(),
                force_switch: req.is_some_and(Request::must_switch),
                trapped: slot.is_some_and(|s| s.trapped),
                can_tera: slot.and_then(|s| s.can_terastallize.clone()),
                text,
            })
        })
    }

    fn make_move(_battle_id: String, action: String, reasoning: Option<String>) -> Result<MoveResult, String> {
        with_game(|g| {
            if let Status::Error(e) = &g.status {
                return Err(e.clone());
            }
            // The host re-runs a waiting call with the same arguments: finish
            // that call instead of submitting the action again for a new turn.
            if let Some((at, act)) = g.in_flight.clone().filter(|(_, act)| same_action(act, &action)) {
                return finish_move(g, at, &act, &action);
            }
            g.in_flight = None;
            if g.battle.over() {
                return Ok(move_result(g, &action, None));
            }
            let seq = g.battle.decision_seq;
            match g.submitted.clone() {
                Some((at, act)) if at == seq => {
                    if !same_action(&act, &action) {
                        return Err(format!("you already chose `{act}` this turn; wait with `showdown_get_battle_state`"));
                    }
                }
                _ => {
                    let Some(req) = g.battle.pending() else {
                        return Err(format!("no action is due now: {}", next_step(g)));
                    };
                    let Some(chosen) = req.find(&action) else {
                        return Err(format!("`{action}` is not a legal action now. {}", available_list(g)));
                    };
                    if let Some(why) = reasoning.as_deref().filter(|r| !r.is_empty()) {
                        ludus_sdk::log(LogLevel::Info, &format!("turn {}: {} because {why}", g.battle.turn, chosen.name));
                    }
                    g.scorecard = Some(score(&g.battle, req, seq, &chosen.name));
                    choose(g, &chosen.choice);
                    g.submitted = Some((seq, chosen.name.clone()));
                    g.rejected = None;
                }
            }
            g.in_flight = Some((seq, action.clone()));
            finish_move(g, seq, &action, &action)
        })
    }

    fn get_pokemon_details(_battle_id: String, pokemon_name: String, opponent: Option<bool>) -> Result<PokemonDetails, String> {
        with_game(|g| {
            let theirs = opponent.unwrap_or(false);
            let side = if theirs { g.battle.their_side() } else { g.battle.my_side() };
            let key = to_id(&pokemon_name);
            let mon = side
                .and_then(|s| s.mons.iter().find(|m| to_id(&m.name) == key || to_id(&m.species) == key))
                .ok_or_else(|| {
                    let known: Vec<String> = side.map(|s| s.mons.iter().map(|m| m.name.clone()).collect()).unwrap_or_default();
                    format!(
                        "no Pokémon {pokemon_name:?} in {} team (known: {})",
                        if theirs { "the opponent's" } else { "your" },
                        if known.is_empty() { "none yet".into() } else { known.join(", ") }
                    )
                })?;
            let species = data().species(&mon.species);
            let types = match &mon.tera {
                Some(t) => vec![t.clone()],
                None => species.map(|s| s.types.clone()).unwrap_or_default(),
            };
            let stats: Vec<u32> = if theirs {
                Vec::new()
            } else {
                g.battle
                    .request
                    .as_ref()
                    .and_then(|r| r.side.pokemon.iter().find(|p| p.name() == mon.name))
                    .map(|p| ["atk", "def", "spa", "spd", "spe"].iter().map(|k| p.stats.get(*k).copied().unwrap_or(0)).collect())
                    .unwrap_or_default()
            };
            let text = format!(
                "{} — types {}{}",
                mon_line(mon),
                types.join("/"),
                if mon.moves.is_empty() { String::new() } else { format!("; moves {}", move_names(&mon.moves)) }
            );
            Ok(PokemonDetails {
                battle_id: battle_id(),
                pokemon: pokemon(mon),
                types,
                base_stats: species.map(|s| s.base.to_vec()).unwrap_or_default(),
                stats,
                text,
            })
        })
    }

    fn forfeit_battle(_battle_id: String) -> Result<MoveResult, String> {
        with_game(|g| {
            if let Status::Error(e) = &g.status {
                return Err(e.clone());
            }
            if !g.battle.over() {
                if g.submitted.as_ref().is_none_or(|(_, a)| a != "forfeit") {
                    match &g.mode {
                        Mode::Offline { .. } => send(g.channel, ">forcelose p1"),
                        Mode::Online { room: Some(room), .. } => send(g.channel, &format!("{room}|/forfeit")),
                        Mode::Online { .. } => {
                            g.status = Status::Finished;
                            channels::close(g.channel);
                        }
                    }
                    g.submitted = Some((u64::MAX, "forfeit".into()));
                }
                if !g.battle.over() && g.status != Status::Finished && !host::wait_timed_out() {
                    host::wait(0);
                }
            }
            Ok(move_result(g, "forfeit", None))
        })
    }
}

/// A submitted move's answer: provisional while its turn is unresolved,
/// then the new state, or the simulator's refusal.
fn finish_move(g: &mut Game, at: u64, submitted: &str, action: &str) -> Result<MoveResult, String> {
    if let Some((_, _, why)) = g.rejected.clone().filter(|(seq, _, _)| *seq == at) {
        g.in_flight = None;
        g.rejected = None;
        return Err(format!("the simulator refused `{submitted}`: {why}. {}", available_list(g)));
    }
    let unresolved = g.battle.decision_seq == at && !g.battle.over() && matches!(g.status, Status::Active);
    if unresolved && !host::wait_timed_out() {
        host::wait(0);
    } else {
        g.in_flight = None;
    }
    if let Status::Error(e) = &g.status {
        return Err(e.clone());
    }
    Ok(move_result(g, action, Some(at)))
}

/// Scores `action` against the other legal actions of `req`, before it is sent.
fn score(battle: &Battle, req: &Request, seq: u64, action: &str) -> Scorecard {
    let started = std::time::Instant::now();
    let evaluation = engine::evaluate_actions(battle, req, Settings::default());
    Scorecard { seq, action: action.to_string(), evaluation, millis: started.elapsed().as_secs_f64() * 1e3 }
}

/// The scorecard of the decision `at`, for the answer; the reason when there is none.
fn evaluation(g: &Game, at: Option<u64>) -> Result<MoveEvaluation, String> {
    let card = g.scorecard.as_ref().filter(|c| Some(c.seq) == at).ok_or("no action of yours was scored")?;
    let e = card.evaluation.as_ref()?;
    let verdict = e.verdict(&card.action).ok_or("the action was not among the scored ones")?;
    let round = |x: f32| (f64::from(x) * 1000.0).round() / 1000.0;
    Ok(MoveEvaluation {
        optimality: round(verdict.optimality),
        best_action: e.best().action.clone(),
        regret: round(verdict.regret),
        rank: verdict.rank as u32,
        scores: e.actions.iter().map(|s| ActionScore { action: s.action.clone(), score: round(s.score) }).collect(),
        method: format!(
            "poke-engine expectiminimax, depth {}, worst case over the opponent's replies, mean of {} seeded guesses of its hidden sets",
            e.settings.depth, e.settings.samples
        ),
        millis: (card.millis * 10.0).round() / 10.0,
    })
}

fn same_action(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().chars().filter(|c| !c.is_whitespace()).collect::<String>();
    norm(a) == norm(b) || to_id(a) == to_id(b)
}

/// Sends our choice for the current request.
fn choose(g: &mut Game, choice: &str) {
    match &g.mode {
        Mode::Offline { .. } => send(g.channel, &format!(">p1 {choice}")),
        Mode::Online { room: Some(room), rqid, .. } => {
            let rqid = rqid.map(|r| format!("|{r}")).unwrap_or_default();
            send(g.channel, &format!("{room}|/choose {choice}{rqid}"));
        }
        Mode::Online { room: None, .. } => {}
    }
}

// ---------------------------------------------------------------- events

impl exports::ludus::plugin::events::Guest for Showdown {
    fn on_timer(_id: u64) {
        // Re-send a challenge the server refused because the opponent was not online yet.
        let _ = with_game(|g| {
            if let (Status::Challenging, Mode::Online { goal: Goal::Challenge(opp), logged_in: true, room: None, .. }) = (&g.status, &g.mode) {
                send(g.channel, &format!("|/challenge {opp}, {}", g.format));
                host::set_timer(CHALLENGE_RETRY_MS);
            }
            Ok(())
        });
    }

    fn on_message(channel: u32, data: String) {
        let _ = with_game(|g| {
            if let Mode::Online { login: Some(login), .. } = g.mode {
                if channel == login {
                    signed(g, login, &data);
                }
            }
            if channel != g.channel {
                return Ok(());
            }
            match &mut g.mode {
                Mode::Offline { reader, .. } => {
                    if let Some(event) = reader.line(&data) {
                        offline_event(g, event);
                    }
                }
                Mode::Online { .. } => {
                    for event in server_frame(&data) {
                        online_event(g, event);
                    }
                }
            }
            Ok(())
        });
    }

    fn on_closed(channel: u32, reason: String) {
        let _ = with_game(|g| {
            if channel == g.channel && !g.battle.over() && g.status != Status::Finished {
                let what = match g.mode {
                    Mode::Offline { .. } => "the battle simulator stopped",
                    Mode::Online { .. } => "the connection to the Showdown server closed",
                };
                g.status = Status::Error(format!("{what} before the battle ended: {reason}"));
            }
            Ok(())
        });
    }
}

fn offline_event(g: &mut Game, event: Event) {
    let Mode::Offline { bot, rng, bot_view, .. } = &mut g.mode else { return };
    match event {
        Event::Log { line, .. } => {
            g.battle.on_log(&line);
            bot_view.on_log(&line);
            if g.battle.over() {
                g.status = Status::Finished;
            }
        }
        Event::Request { side, json, .. } => match Request::parse(&json) {
            Ok(req) if side == "p2" => {
                let pick = bot::choose(*bot, &req, bot_view, rng);
                bot_view.on_request(req);
                if let Some(a) = pick {
                    send(g.channel, &format!(">p2 {}", a.choice));
                }
            }
            Ok(req) => g.battle.on_request(req),
            Err(e) => ludus_sdk::log(LogLevel::Warn, &e),
        },
        Event::Error { side, text, .. } if side == "p2" => {
            // An unavailable choice is followed by an updated request, which the bot answers.
            if !text.starts_with("[Unavailable choice]") {
                ludus_sdk::log(LogLevel::Warn, &format!("the bot's choice was refused: {text}"));
                send(g.channel, ">p2 default");
            }
        }
        Event::Error { text, .. } => reject(g, text),
        Event::End { .. } => g.status = Status::Finished,
        Event::Global { .. } => {}
    }
}

/// The simulator refused our choice: let the agent choose again.
fn reject(g: &mut Game, text: String) {
    if let Some((seq, act)) = g.submitted.take() {
        g.rejected = Some((seq, act, text));
    }
}

/// The login server's answer: the signed name goes to the server.
fn signed(g: &mut Game, login_channel: u32, reply: &str) {
    channels::close(login_channel);
    if let Mode::Online { login, .. } = &mut g.mode {
        *login = None;
    }
    match login::assertion(reply) {
        Ok(assertion) => send(g.channel, &format!("|/trn {},0,{assertion}", g.username)),
        Err(e) => g.status = Status::Error(format!("logging in as {} failed: {e}", g.username)),
    }
}

fn online_event(g: &mut Game, event: Event) {
    let Mode::Online { goal, logged_in, room, rqid, password, login: login_channel } = &mut g.mode else { return };
    match event {
        Event::Global { line } => {
            let f = fields(&line);
            match f.first().copied().unwrap_or("") {
                // With a `login` endpoint the login server signs the challenge; without one
                // only a `--no-security` server takes the name as it is.
                "challstr" => {
                    let account = Account { username: g.username.clone(), password: password.clone() };
                    match channels::open("login") {
                        Ok(ch) => {
                            *login_channel = Some(ch);
                            send(ch, &login::request(&account, &f[1..].join("|")));
                        }
                        Err(e) if account.password.is_some() => {
                            g.status = Status::Error(format!("signing in as {} needs the `login` endpoint: {e}", g.username));
                        }
                        Err(_) => send(g.channel, &format!("|/trn {}", g.username)),
                    }
                }
                "updateuser" => {
                    let named = f.get(2) == Some(&"1");
                    if named && to_id(f.get(1).unwrap_or(&"")) == to_id(&g.username) && !*logged_in {
                        *logged_in = true;
                        send(g.channel, "|/utm null");
                        match goal {
                            Goal::Ladder => send(g.channel, &format!("|/search {}", g.format)),
                            Goal::Challenge(opp) => {
                                send(g.channel, &format!("|/challenge {opp}, {}", g.format));
                                host::set_timer(CHALLENGE_RETRY_MS);
                            }
                        }
                    }
                }
                "nametaken" => {
                    g.status = Status::Error(format!("the server refused the name {}: {}", g.username, f.get(2).unwrap_or(&"")));
                }
                "pm" => {
                    // `|pm| FROM| TO|/challenge FORMAT|…`: a challenge to us.
                    let from = f.get(1).map(|s| s.trim_start_matches([' ', '+', '%', '@', '*', '#', '&', '~', '!', '‽'])).unwrap_or("");
                    let to = f.get(2).map(|s| to_id(s)).unwrap_or_default();
                    let msg = f.get(3).copied().unwrap_or("");
                    let from_opponent = matches!(goal, Goal::Challenge(opp) if to_id(opp) == to_id(from));
                    if to == to_id(&g.username) && from_opponent && msg.starts_with("/challenge ") && room.is_none() {
                        // Both may have challenged each other: the one with the larger id accepts.
                        if to_id(&g.username) > to_id(from) {
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
                if !g.announced && host::rename_session(&r).is_err() {
                    let _ = host::rename_session(&format!("{r}:{}", to_id(&g.username)));
                }
            }
            if room.as_deref() == Some(r.as_str()) {
                g.battle.on_log(&line);
                if g.battle.over() {
                    g.status = Status::Finished;
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
                    g.battle.on_request(req);
                }
                Err(e) => ludus_sdk::log(LogLevel::Warn, &e),
            }
        }
        Event::Error { room: r, text, .. } => {
            if room.as_deref() == Some(r.as_str()) {
                reject(g, text);
            }
        }
        Event::End { .. } => {}
    }
}

// ---------------------------------------------------------------- answers

fn pokemon(m: &Mon) -> Pokemon {
    Pokemon {
        name: m.name.clone(),
        species: m.species.clone(),
        level: m.level,
        hp_percent: m.hp_percent,
        status: m.status.clone(),
        fainted: m.fainted,
        active: m.active,
        moves: m.moves.clone(),
        item: m.item.clone().filter(|i| !i.is_empty()),
        ability: m.ability.clone(),
        tera: m.tera.clone(),
        boosts: m.boosts.iter().filter(|(_, v)| **v != 0).map(|(k, v)| format!("{k}{v:+}")).collect(),
    }
}

fn move_names(ids: &[String]) -> String {
    ids.iter().map(|id| data().move_(id).map_or(id.clone(), |m| m.name.clone())).collect::<Vec<_>>().join(", ")
}

fn mon_line(m: &Mon) -> String {
    let mut s = format!("{} (L{}) {}%", m.species, m.level, m.hp_percent);
    if m.fainted {
        s = format!("{} (L{}) fainted", m.species, m.level);
    }
    if let Some(st) = &m.status {
        s.push_str(&format!(", {}", status_name(st)));
    }
    if let Some(t) = &m.tera {
        s.push_str(&format!(", tera {t}"));
    }
    let boosts: Vec<String> = m.boosts.iter().filter(|(_, v)| **v != 0).map(|(k, v)| format!("{k} {v:+}")).collect();
    if !boosts.is_empty() {
        s.push_str(&format!(", {}", boosts.join(" ")));
    }
    s
}

/// What a move or switch does, in a line.
fn describe_action(req: Option<&Request>, a: &crate::request::Action) -> String {
    let Some(req) = req else { return String::new() };
    match a.kind {
        Kind::Switch | Kind::Team => {
            req.side.pokemon.get(a.index).map(|p| format!("{} ({})", p.details, p.condition)).unwrap_or_default()
        }
        Kind::Move => {
            let slot = req.active.first().and_then(|s| s.moves.get(a.index));
            let id = slot.map(|m| m.id.as_str()).unwrap_or("");
            let mut s = match data().move_(id) {
                Some(m) => {
                    let power = if m.base_power > 0 { format!(", power {}", m.base_power) } else { String::new() };
                    format!("{} ({} {:?}{power}, accuracy {})", m.name, m.kind, m.category, m.accuracy)
                }
                None => slot.map(|m| m.name.clone()).unwrap_or_default(),
            };
            if let Some(pp) = slot.and_then(|m| m.pp) {
                s.push_str(&format!(", {pp} PP"));
            }
            if a.name.ends_with("-tera") {
                let t = req.active.first().and_then(|s| s.can_terastallize.clone()).unwrap_or_default();
                s.push_str(&format!(", terastallizing into {t}"));
            }
            s
        }
    }
}

fn available_list(g: &Game) -> String {
    let names: Vec<String> = g.battle.pending().map(|r| r.actions().into_iter().map(|a| a.name).collect()).unwrap_or_default();
    if names.is_empty() { "No action is available now.".into() } else { format!("Available actions: {}.", names.join(", ")) }
}

fn next_step(g: &Game) -> String {
    match &g.status {
        Status::Searching => "Searching for an opponent; call `showdown_get_battle_state` to wait.".into(),
        Status::Challenging => "Waiting for the opponent to accept; call `showdown_get_battle_state` to wait.".into(),
        Status::Finished => "The battle is over.".into(),
        Status::Error(e) => format!("The battle failed: {e}"),
        Status::Active if g.battle.over() => "The battle is over.".into(),
        Status::Active if g.battle.pending().is_some() => "Your move: call `showdown_make_move` with one of the available actions.".into(),
        Status::Active => "Waiting for the opponent; call `showdown_get_battle_state` to wait.".into(),
    }
}

fn result_line(g: &Game) -> Option<String> {
    if g.battle.tie {
        return Some("The battle ended in a tie.".into());
    }
    let w = g.battle.winner.as_ref()?;
    let mine = g.battle.my_side().map(|s| s.player.as_str()) == Some(w.as_str());
    Some(format!("{w} won the battle — {}", if mine { "you won!" } else { "you lost." }))
}

/// The Markdown overview every answer carries.
fn summary(g: &Game) -> String {
    let mut out = format!("**Battle {}** — turn {} ({})\n", battle_id(), g.battle.turn, g.status.label());
    if let Some(r) = result_line(g) {
        out.push_str(&format!("\n**{r}**\n"));
    }
    if let Some(m) = g.battle.my_side().and_then(|s| s.active()) {
        out.push_str(&format!("\nYour active: {}\n", mon_line(m)));
    }
    if let Some(m) = g.battle.their_side().and_then(|s| s.active()) {
        out.push_str(&format!("Opponent's active: {}\n", mon_line(m)));
        if !m.moves.is_empty() {
            out.push_str(&format!("Its revealed moves: {}\n", move_names(&m.moves)));
        }
    }
    if let Some(side) = g.battle.my_side() {
        let bench: Vec<String> = side.mons.iter().filter(|m| !m.active).map(mon_line).collect();
        if !bench.is_empty() {
            out.push_str(&format!("Your bench: {}\n", bench.join("; ")));
        }
    }
    let events: Vec<&String> = g.battle.previous_turn.iter().chain(&g.battle.recent).collect();
    if !events.is_empty() {
        out.push_str("\nRecent events:\n");
        for e in events.iter().rev().take(14).rev() {
            out.push_str(&format!("- {e}\n"));
        }
    }
    if let Some((_, _, why)) = &g.rejected {
        out.push_str(&format!("\nYour last choice was refused: {why}\n"));
    }
    if g.battle.pending().is_some() {
        out.push_str(&format!("\n{}\n", available_list(g)));
    }
    out.push_str(&format!("\nNext: {}", next_step(g)));
    out
}

fn state(g: &Game) -> BattleState {
    let side = |s: Option<&crate::battle::SideView>| s.map(|s| s.mons.iter().map(pokemon).collect()).unwrap_or_default();
    let mut field = g.battle.fields.clone();
    for (label, s) in [("your side", g.battle.my_side()), ("opponent's side", g.battle.their_side())] {
        for c in s.map(|s| s.conditions.clone()).unwrap_or_default() {
            field.push(format!("{c} ({label})"));
        }
    }
    BattleState {
        battle_id: battle_id(),
        status: g.status.label().into(),
        awaiting_decision: g.battle.pending().is_some(),
        turn: g.battle.turn,
        time_left: g.battle.timer.clone(),
        your_team: side(g.battle.my_side()),
        opponent_team: side(g.battle.their_side()),
        weather: g.battle.weather.clone(),
        field,
        available_actions: g.battle.pending().map(|r| r.actions().into_iter().map(|a| a.name).collect()).unwrap_or_default(),
        recent_events: g.battle.previous_turn.iter().chain(&g.battle.recent).cloned().collect(),
        winner: g.battle.winner.clone(),
        text: match &g.status {
            Status::Error(e) => format!("The battle failed: {e}"),
            _ => summary(g),
        },
    }
}

fn move_result(g: &Game, action: &str, at: Option<u64>) -> MoveResult {
    let evaluation = evaluation(g, at);
    let verdict = match (&evaluation, at) {
        (Ok(e), _) => format!(
            "\nEvaluation: optimality {:.2} (rank {} of {}); the search prefers `{}`.",
            e.optimality,
            e.rank,
            e.scores.len(),
            e.best_action
        ),
        (Err(why), Some(_)) => format!("\nNot scored: {why}."),
        (Err(_), None) => String::new(),
    };
    MoveResult {
        battle_id: battle_id(),
        action: action.to_string(),
        status: g.status.label().into(),
        awaiting_decision: g.battle.pending().is_some(),
        turn: g.battle.turn,
        recent_events: g.battle.previous_turn.iter().chain(&g.battle.recent).cloned().collect(),
        winner: g.battle.winner.clone(),
        evaluation: evaluation.ok(),
        text: format!("{}{verdict}", summary(g)),
    }
}

// Exported only in the component: the native cdylib's linker rejects these symbol names.
#[cfg(target_arch = "wasm32")]
export!(Showdown);
