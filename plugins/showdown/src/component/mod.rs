//! The showdown plugin: one instance is one battle. The battle's input comes
//! through a host channel — the `server` endpoint (a Showdown server's
//! WebSocket) or the `sim` endpoint (a `pokemon-showdown simulate-battle`
//! sidecar) — as `on-message` events; tools read the tracked battle and wait
//! through the host until something they need has happened.

mod bindings;
mod game;
mod render;

use bindings::exports::ludus::plugin::access::{self, Audience, Grant};
use bindings::exports::ludus::plugin::{durable, events, meta, moves};
use bindings::exports::ludus::showdown::tools::{
    ActionInfo, AvailableActions, BattleStarted, BattleState, Bot as BotChoice, Guest, MoveResult, PokemonDetails,
};
use ludus_sdk::{LogLevel, PluginInfo, ResourceInfo, ToolHint, channels, host};

use crate::battle::Battle;
use crate::bot::Bot;
use crate::data::{data, to_id};
use crate::login;
use crate::protocol::{Event, SimReader, server_frame};
use crate::request::{Kind, Request};
use crate::rng::Rng;
use game::{
    CHALLENGE_RETRY_MS, GAME, Game, Goal, Mode, Opponent, Seat, Seeds, Status, Teams, battle_id, choose, finish, format_id, offline_event,
    online_event, open, same_action, score, send, signed, sim_seed, simulator_wrote_a_line, tell_seats, tell_standing, to_sim,
    valid_format, valid_username, with_game,
};
use render::{available_list, describe_action, mon_line, move_names, move_result, next_step, pokemon, state, summary, target_line};

const FORMATS_URI: &str = "showdown://formats";
const LOG_URI: &str = "showdown://battle/{session}/log";
const PROTOCOL_URI: &str = "showdown://battle/{session}/protocol";

struct Showdown;

impl meta::Guest for Showdown {
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
                ToolHint::uses("join-battle", "battle-id").title("Join an offline battle").waits(20_000, 60_000),
                ToolHint::uses("get-battle-state", "battle-id").title("Battle state").read_only().waits(25_000, 150_000),
                ToolHint::uses("get-available-actions", "battle-id").title("Available actions").read_only(),
                ToolHint::uses("make-move", "battle-id").title("Make a move").open_world().waits(30_000, 150_000),
                ToolHint::uses("get-pokemon-details", "battle-id").title("Pokémon details").read_only(),
                ToolHint::uses("forfeit-battle", "battle-id").title("Forfeit").destructive().open_world().waits(10_000, 30_000),
            ],
            resources: vec![
                ResourceInfo {
                    uri: FORMATS_URI.into(),
                    name: "formats".into(),
                    description: "Every format the simulator knows (JSON: id, name, game type, team, whether an offline battle plays it)"
                        .into(),
                    mime_type: "application/json".into(),
                },
                ResourceInfo {
                    uri: LOG_URI.into(),
                    name: "battle-log".into(),
                    description: "The battle's public protocol log (what a spectator sees), one line per event".into(),
                    mime_type: "text/plain".into(),
                },
                ResourceInfo {
                    uri: PROTOCOL_URI.into(),
                    name: "battle-protocol".into(),
                    description: "Our seat's protocol stream: the public log with each of our `|request|` messages where \
                                  it arrived, as a Showdown client receives it (replay it into @pkmn/client or any \
                                  client library)"
                        .into(),
                    mime_type: "text/plain".into(),
                },
            ],
            idle_timeout_ms: None,
        }
    }

    fn read_resource(uri: String) -> Result<String, String> {
        if uri == FORMATS_URI {
            return Ok(crate::formats::listing());
        }
        if uri.starts_with("showdown://battle/") && uri.ends_with("/log") {
            return with_game(|g| Ok(g.seat.battle.log.join("\n")));
        }
        if uri.starts_with("showdown://battle/") && uri.ends_with("/protocol") {
            return with_game(|g| Ok(g.seat.battle.protocol()));
        }
        Err(format!("no resource {uri}"))
    }
}

fn start_online(goal: Goal, format: Option<String>, username: Option<String>) -> Result<BattleStarted, String> {
    let format = valid_format(format)?;
    let account = operator_account(username.as_deref());
    let password = account.as_ref().and_then(|a| a.password.clone());
    let username = valid_username(account.map(|a| a.username))?;
    if let Goal::Challenge(opp) = &goal
        && (to_id(opp).is_empty() || opp.len() > 18)
    {
        return Err(format!("opponent {opp:?} is not a Showdown user name"));
    }
    begin(online_game(goal, format, username, password, None, None)?)
}

/// The account to play as: the name asked for, with the operator's
/// password when it is the operator's user (`SHOWDOWN_USERNAME`,
/// `SHOWDOWN_PASSWORD`); the operator's user when none is asked for.
fn operator_account(asked: Option<&str>) -> Option<login::Account> {
    let env = |key: &str| std::env::var(key).ok();
    login::account(asked, env("SHOWDOWN_USERNAME").as_deref(), env("SHOWDOWN_PASSWORD").as_deref())
}

/// A battle on the server: connects, then logs in as `username`, and then
/// searches the ladder or challenges (`goal`), or joins `battle` again (after
/// a restart of Ludus).
fn online_game(
    goal: Goal,
    format: String,
    username: String,
    password: Option<String>,
    battle: Option<String>,
    answered_before_restart: Option<u64>,
) -> Result<Game, String> {
    let channel = open("server", "playing on a Showdown server")?;
    let status = match (&battle, &goal) {
        (Some(_), _) => Status::Active,
        (None, Goal::Ladder) => Status::Searching,
        (None, Goal::Challenge(_)) => Status::Challenging,
    };
    let mode = Mode::Online {
        goal,
        logged_in: false,
        room: None,
        rqid: None,
        password,
        login: None,
        rejoin: battle,
        answered: None,
        answered_before_restart,
    };
    Ok(Game::new(mode, format, username, channel, Battle::default(), status))
}

/// Makes `game` this session's battle and answers the starting tool.
fn begin(game: Game) -> Result<BattleStarted, String> {
    tell_standing(&game);
    tell_seats(&game);
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
        // An offline battle waiting for a second agent answers at once: its
        // creator passes the id and join code on.
        let open_seat = matches!(g.mode, Mode::Offline { .. }) && g.status == Status::Challenging;
        let ready = g.due().is_some() || g.seat.battle.over() || open_seat;
        if !ready && !host::wait_timed_out() {
            host::wait(0);
        } else {
            g.seat.announced = true;
        }
        let opponent = g.seat.battle.their_side().map(|s| s.player.clone()).filter(|p| !p.is_empty()).or_else(|| match &g.mode {
            Mode::Online { goal: Goal::Challenge(o), .. } => Some(o.clone()),
            _ => None,
        });
        let seed = match &g.mode {
            Mode::Offline { seeds, .. } if g.seed_chosen => Some(seeds.visible),
            _ => None,
        };
        let text = if let Some(installing) = g.installing() {
            format!("{installing} Call `showdown_get_battle_state` with battle_id {} to wait for the battle.", battle_id())
        } else if open_seat {
            format!(
                "Waiting for another agent to take the other side: it calls `showdown_join_battle` with battle_id {} and \
                 the join code of this answer. Then call `showdown_get_battle_state` to wait for your first decision.",
                battle_id()
            )
        } else if ready {
            summary(g)
        } else {
            format!(
                "Still {} as {}. Call `showdown_get_battle_state` with battle_id {} to wait for the battle to start.",
                g.status.label(),
                g.seat.username,
                battle_id()
            )
        };
        Ok(BattleStarted {
            battle_id: battle_id(),
            status: g.status.label().into(),
            format: g.format.clone(),
            username: g.seat.username.clone(),
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

    fn start_offline_battle(
        bot: Option<BotChoice>,
        format: Option<String>,
        seed: Option<u64>,
        team: Option<String>,
        opponent_team: Option<String>,
    ) -> Result<BattleStarted, String> {
        if GAME.with_borrow(Option::is_some) {
            return started();
        }
        let format = format_id(format)?;
        let bot = match bot.unwrap_or(BotChoice::Heuristic) {
            BotChoice::Random => Some(Bot::Random),
            BotChoice::Heuristic => Some(Bot::Heuristic),
            BotChoice::Search => Some(Bot::Search),
            BotChoice::Agent => None,
        };
        let teams = Teams::for_format(crate::formats::check_offline(&format)?, team, opponent_team, bot.is_some())?;
        let p2 = match bot {
            Some(bot) => P2::Bot(bot),
            None => P2::Agent { joiner: None },
        };
        // The host seeds this instance from the `seed` argument (and the game's secret).
        let mut game = offline_game(host::caller(), p2, format, Seeds::of_game(), teams)?;
        game.seed_chosen = seed.is_some();
        let id = battle_id();
        let tag = format!("battle-{}-offline-{}", game.format, id.get(..10).unwrap_or(&id));
        if let Err(e) = host::rename_session(&tag) {
            ludus_sdk::log(LogLevel::Warn, &format!("keeping the session id: {e}"));
        }
        begin(game)
    }

    fn join_battle(_battle_id: String, team: Option<String>) -> Result<BattleStarted, String> {
        let me = host::caller();
        let joined = GAME.with_borrow_mut(|g| -> Result<bool, String> {
            let g = g.as_mut().ok_or("this session holds no battle")?;
            let format = g.format.clone();
            let Mode::Offline { opponent: Opponent::Agent { creator, joiner, seed, .. }, teams, .. } = &mut g.mode else {
                return Err("this battle has no seat for another agent (only offline battles started with `bot: agent` do)".into());
            };
            match joiner {
                Some(j) if *j == me => return Ok(true),
                Some(_) => return Err("both sides of this battle are taken".into()),
                None if *creator == me => {
                    return Err("you play p1 already, and both sides of a battle choose at the same time, so one client \
                                cannot play both: take p2 from a second client (another connection, or another token)"
                        .into());
                }
                None => {}
            }
            let Some(f) = crate::formats::get(&format) else { return Err(format!("unknown format {format}")) };
            let team = team.or_else(|| teams.theirs.clone());
            if team.is_none() && !f.random {
                return Err(format!(
                    "{} needs your team too (the creator gave no `opponent_team`): give `team` in Showdown's export form \
                     (as the teambuilder exports it) or packed form",
                    f.name
                ));
            }
            let theirs = Teams::for_format(f, team, None, false)?;
            teams.theirs = theirs.mine;
            *joiner = Some(me.clone());
            let line = teams.player_line("p2", "Player 2", &seed.clone());
            to_sim(g, &line);
            g.status = Status::Active;
            tell_seats(g);
            Ok(false)
        })?;
        if joined && let Some(why) = team_refused() {
            return Err(why);
        }
        // From here on the joiner's calls see p2's seat.
        started()
    }

    fn get_battle_state(_battle_id: String) -> Result<BattleState, String> {
        with_game(|g| {
            let unsettled = matches!(g.status, Status::Searching | Status::Challenging)
                || (g.status == Status::Active && g.due().is_none())
                || g.replaying();
            if unsettled && !host::wait_timed_out() {
                host::wait(0);
            }
            g.seat.announced = true;
            Ok(state(g))
        })
    }

    fn get_available_actions(_battle_id: String) -> Result<AvailableActions, String> {
        with_game(|g| {
            let req = g.due();
            let actions = req.map(Request::actions).unwrap_or_default();
            let slot = req.and_then(|r| r.active.first());
            let multi = req.is_some_and(|r| r.positions() > 1);
            let at = |a: &crate::request::Action| if multi { format!("position {}: ", a.position + 1) } else { String::new() };
            let details = |a: &crate::request::Action| format!("{}{}", describe_action(req, a), target_line(g, a));
            let text = if actions.is_empty() {
                format!("No action is due now ({}). {}", g.status.label(), next_step(g))
            } else {
                format!(
                    "Choose one with `showdown_make_move`:\n{}",
                    actions.iter().map(|a| format!("- {}`{}` — {}", at(a), a.name, details(a))).collect::<Vec<_>>().join("\n")
                )
            };
            Ok(AvailableActions {
                battle_id: battle_id(),
                decision: g.seat.battle.decision_seq as u32,
                actions: actions
                    .iter()
                    .map(|a| ActionInfo {
                        action: a.name.clone(),
                        kind: if a.kind == Kind::Switch { "switch".into() } else { "move".into() },
                        position: a.position as u32 + 1,
                        details: details(a),
                    })
                    .collect(),
                force_switch: req.is_some_and(Request::must_switch),
                trapped: slot.is_some_and(|s| s.trapped),
                can_tera: slot.and_then(|s| s.can_terastallize.clone()),
                text,
            })
        })
    }

    fn make_move(_battle_id: String, action: String, reasoning: Option<String>, decision: Option<u32>) -> Result<MoveResult, String> {
        let action = shown(&action);
        with_game(|g| {
            if let Status::Error(e) = &g.status {
                return Err(e.clone());
            }
            // After a restart the battle is played again up to where it was
            // before a new action is taken (or a number is checked).
            if g.replaying() && !host::wait_timed_out() {
                host::wait(0);
                return Ok(move_result(g, &action, None));
            }
            // A number already answered: the host gives that move's answer
            // (`decisions.made-already`); one not due yet is refused. The
            // decision in flight (submitted, its turn unresolved) goes on.
            let in_flight = g.seat.in_flight.as_ref().is_some_and(|(at, _)| decision.map(u64::from) == Some(*at));
            if !in_flight {
                ludus_sdk::decision::check(decision, g.seat.battle.decision_seq as u32)?;
            }
            // The host re-runs a waiting call with the same arguments (and a
            // second call for an unresolved decision cannot be a new one):
            // finish that call instead of submitting the action again.
            if let Some((at, act)) = g.seat.in_flight.clone().filter(|(_, act)| same_action(act, &action)) {
                return finish_move(g, at, &act, &action);
            }
            g.seat.in_flight = None;
            if g.seat.battle.over() {
                return Ok(move_result(g, &action, None));
            }
            let seq = g.seat.battle.decision_seq;
            match g.seat.submitted.clone() {
                Some((at, act)) if at == seq => {
                    if !same_action(&act, &action) {
                        return Err(format!("you already chose `{act}` this turn; wait with `showdown_get_battle_state`"));
                    }
                }
                _ => {
                    let Some(req) = g.seat.battle.pending() else {
                        return Err(format!("no action is due now: {}", next_step(g)));
                    };
                    let chosen = match req.decide(&action) {
                        Ok(chosen) => chosen,
                        Err(e) => {
                            let refused = format!("{e}. {}", available_list(g));
                            g.seat.tally.counts.sent(false);
                            tell_standing(g);
                            return Err(refused);
                        }
                    };
                    if let Some(why) = reasoning.as_deref().filter(|r| !r.is_empty()) {
                        ludus_sdk::log(LogLevel::Info, &format!("turn {}: {} because {why}", g.seat.battle.turn, chosen.name()));
                    }
                    let card = score(&g.seat.battle, req, seq, &chosen.name(), &g.format);
                    let optimality = card.evaluation.as_ref().ok().and_then(|e| e.verdict(&card.action)).map(|v| v.optimality);
                    g.seat.tally.sent(optimality);
                    g.seat.scorecard = Some(card);
                    tell_standing(g);
                    choose(g, &chosen.choice);
                    g.seat.submitted = Some((seq, chosen.name()));
                    g.seat.rejected = None;
                }
            }
            g.seat.in_flight = Some((seq, action.clone()));
            finish_move(g, seq, &action, &action)
        })
    }

    fn get_pokemon_details(_battle_id: String, pokemon_name: String, opponent: Option<bool>) -> Result<PokemonDetails, String> {
        with_game(|g| {
            let theirs = opponent.unwrap_or(false);
            let side = if theirs { g.seat.battle.their_side() } else { g.seat.battle.my_side() };
            let mon = side.and_then(|s| s.find(&pokemon_name)).ok_or_else(|| {
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
                g.seat
                    .battle
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
            if !g.seat.battle.over() {
                if g.seat.submitted.as_ref().is_none_or(|(_, a)| a != "forfeit") {
                    match &g.mode {
                        // Nobody joined yet: nothing has started to lose.
                        Mode::Offline { .. } if g.status == Status::Challenging => {
                            channels::close(g.channel);
                            finish(g);
                        }
                        Mode::Offline { .. } => {
                            let line = format!(">forcelose {}", g.seat.battle.me);
                            to_sim(g, &line)
                        }
                        Mode::Online { room: Some(room), .. } => send(g.channel, &format!("{room}|/forfeit")),
                        Mode::Online { .. } => {
                            g.status = Status::Finished;
                            channels::close(g.channel);
                        }
                    }
                    g.seat.submitted = Some((u64::MAX, "forfeit".into()));
                }
                if !g.seat.battle.over() && g.status != Status::Finished && !host::wait_timed_out() {
                    host::wait(0);
                }
            }
            Ok(move_result(g, "forfeit", None))
        })
    }
}

/// The simulator's validator refused the joiner's team: the seat is open
/// again (and p2's line forgotten, so that a restart does not send it).
fn team_refused() -> Option<String> {
    GAME.with_borrow_mut(|g| {
        let g = g.as_mut()?;
        let Mode::Offline { opponent: Opponent::Agent { joiner, seat, .. }, sent, .. } = &mut g.mode else { return None };
        let (_, _, why) = seat.rejected.take().filter(|(at, what, _)| *at == u64::MAX && what == "join")?;
        *joiner = None;
        sent.retain(|(_, line)| !line.starts_with(">player p2"));
        g.status = Status::Challenging;
        tell_seats(g);
        Some(why)
    })
}

/// A submitted move's answer: provisional while its turn is unresolved,
/// then the new state, or the simulator's refusal.
/// An action as errors and answers repeat it: at most 100 characters (a
/// 4 MB action must not come back as a 4 MB error).
fn shown(action: &str) -> String {
    match action.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &action[..cut]),
        None => action.to_string(),
    }
}

fn finish_move(g: &mut Game, at: u64, submitted: &str, action: &str) -> Result<MoveResult, String> {
    if let Some((_, _, why)) = g.seat.rejected.clone().filter(|(seq, _, _)| *seq == at) {
        if g.seat.battle.correction_due && !host::wait_timed_out() {
            host::wait(0);
            return Ok(move_result(g, action, Some(at)));
        }
        g.seat.in_flight = None;
        g.seat.rejected = None;
        return Err(format!("the simulator refused `{submitted}`: {why}. {}", available_list(g)));
    }
    let unresolved = !g.resolved(at) && matches!(g.status, Status::Active);
    if unresolved && !host::wait_timed_out() {
        host::wait(0);
    } else {
        g.seat.in_flight = None;
    }
    if let Status::Error(e) = &g.status {
        return Err(e.clone());
    }
    Ok(move_result(g, action, Some(at)))
}

/// Who plays p2 of a new offline battle: a bot, or an agent (the
/// creator's caller, and the joiner's once seated).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
enum P2 {
    Bot(Bot),
    Agent { joiner: Option<String> },
}

/// A new offline battle: the simulator started with seeds drawn from
/// `seeds` and the players' teams (the simulator checks them before it
/// starts). Against an agent p2's line waits for its join, and so does the
/// battle.
///
/// Everything hidden from the creator comes from the whole seed: the
/// battle's own randomness, p2's team and the bot's choices. The creator's
/// own team comes from the seed it chose, where nobody else can work it out
/// from that seed: against a bot, in a format that draws each player's team
/// on its own (a factory format draws p2's team from p1's seed, and another
/// agent could try likely seeds).
fn offline_game(creator: String, p2: P2, format: String, seeds: Seeds, teams: Teams) -> Result<Game, String> {
    let channel = open("sim", "an offline battle")?;
    let mut rng = Rng::new(seeds.whole);
    let battle_seed = sim_seed(&mut rng);
    let hidden_p1_seed = sim_seed(&mut rng);
    let p2_seed = sim_seed(&mut rng);
    let own_team_visible = matches!(p2, P2::Bot(_)) && !format.contains("factory");
    let p1_seed = if own_team_visible { sim_seed(&mut Rng::new(seeds.visible)) } else { hidden_p1_seed };
    let (p1_name, p2_name) = match p2 {
        P2::Bot(Bot::Random) => ("You", "Random Bot"),
        P2::Bot(Bot::Heuristic) => ("You", "Heuristic Bot"),
        P2::Bot(Bot::Search) => ("You", "Search Bot"),
        P2::Agent { .. } => ("Player 1", "Player 2"),
    };
    // Our own strings only: ids checked above, names fixed here.
    send(channel, &format!(r#">start {{"formatid":"{format}","seed":"{battle_seed}"}}"#));
    send(channel, &teams.player_line("p1", p1_name, &p1_seed));
    let (opponent, status) = match p2 {
        P2::Bot(bot) => {
            send(channel, &teams.player_line("p2", p2_name, &p2_seed));
            (Opponent::Bot { bot, view: Battle { me: "p2".into(), ..Battle::default() } }, Status::Active)
        }
        P2::Agent { joiner } => {
            let battle = Battle { me: "p2".into(), ..Battle::default() };
            let seat = Box::new(Seat { username: p2_name.into(), battle, ..Seat::default() });
            let status = if joiner.is_some() { Status::Active } else { Status::Challenging };
            (Opponent::Agent { creator: creator.clone(), joiner, seed: p2_seed, seat }, status)
        }
    };
    let mode = Mode::Offline {
        creator,
        opponent,
        rng,
        seeds,
        teams,
        reader: SimReader::default(),
        received: 0,
        sent: Vec::new(),
        replay: Default::default(),
    };
    let battle = Battle { me: "p1".into(), ..Battle::default() };
    Ok(Game::new(mode, format, p1_name.into(), channel, battle, status))
}

/// The join tool is open to whoever has the join code; everything else is
/// the players' (a side's team and requests are its own).
/// The illegal-move policy's random move: the caller's whole decisions
/// that are due, as `make_move` takes them.
impl moves::Guest for Showdown {
    fn legal() -> Vec<moves::LegalMove> {
        let due = with_game(|g| Ok(g.due().map(|r| r.whole_decisions(1000)).unwrap_or_default())).unwrap_or_default();
        due.into_iter()
            .map(|action| moves::LegalMove { tool: "make-move".into(), arguments: serde_json::json!({ "action": action }).to_string() })
            .collect()
    }
}

impl access::Guest for Showdown {
    fn grants() -> Vec<Grant> {
        vec![Grant { name: "join-battle".into(), audience: Audience::Joins }]
    }
}

// ---------------------------------------------------------------- durable

/// What a restart keeps of a battle. Offline: the seed and our lines to the
/// simulator; the simulator and the bot play the rest again, identically.
/// Online: who we are and where the battle is; the server has the rest.
#[derive(serde::Serialize, serde::Deserialize)]
enum Kept {
    Offline {
        format: String,
        bot: Bot,
        #[serde(default)]
        creator: String,
        seeds: Seeds,
        sent: Vec<(u64, String)>,
        #[serde(default)]
        teams: Teams,
        /// Against another agent: who plays, and what p2's seat asked.
        #[serde(default)]
        agent: Option<KeptAgent>,
    },
    Online {
        format: String,
        username: String,
        goal: Goal,
        room: Option<String>,
        answered: Option<u64>,
    },
}

/// p2's side of an agent-against-agent battle, as saved.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptAgent {
    creator: String,
    joiner: Option<String>,
    submitted: Option<(u64, String)>,
    in_flight: Option<(u64, String)>,
    announced: bool,
}

/// A battle as saved, with what the tools remember of the agent's calls.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    kept: Kept,
    submitted: Option<(u64, String)>,
    in_flight: Option<(u64, String)>,
    announced: bool,
    tally: game::SeatTally,
}

impl durable::Guest for Showdown {
    fn save() -> Vec<u8> {
        GAME.with_borrow(|g| {
            let saved = g.as_ref().map(|g| Saved {
                kept: match &g.mode {
                    Mode::Offline { creator, opponent, seeds, sent, replay, teams, .. } => Kept::Offline {
                        format: g.format.clone(),
                        creator: creator.clone(),
                        bot: match opponent {
                            Opponent::Bot { bot, .. } => *bot,
                            Opponent::Agent { .. } => Bot::Random,
                        },
                        agent: match opponent {
                            Opponent::Bot { .. } => None,
                            Opponent::Agent { creator, joiner, seat, .. } => Some(KeptAgent {
                                creator: creator.clone(),
                                joiner: joiner.clone(),
                                submitted: seat.submitted.clone(),
                                in_flight: seat.in_flight.clone(),
                                announced: seat.announced,
                            }),
                        },
                        seeds: *seeds,
                        teams: teams.clone(),
                        // Lines not yet sent again after a restart are still ours.
                        sent: sent.iter().chain(replay.iter()).cloned().collect(),
                    },
                    Mode::Online { goal, room, rejoin, answered, answered_before_restart, .. } => Kept::Online {
                        format: g.format.clone(),
                        username: g.seat.username.clone(),
                        goal: goal.clone(),
                        room: room.clone().or_else(|| rejoin.clone()),
                        answered: answered.or(*answered_before_restart),
                    },
                },
                submitted: g.seat.submitted.clone(),
                in_flight: g.seat.in_flight.clone(),
                announced: g.seat.announced,
                tally: g.seat.tally.clone(),
            });
            ludus_sdk::durable::write(&saved)
        })
    }

    /// Offline: starts a new simulator with the same seeds and plays our
    /// lines again as the simulator reaches the points where they were
    /// sent. Online: logs in again and rejoins the battle room; the server
    /// sends the battle so far and the request due. The `rqid` we last
    /// answered is kept: if the request due is that one (the server has our
    /// choice, the other side's is missing), it is not offered again.
    fn restore(state: Vec<u8>) -> Result<(), String> {
        let Some(saved) = ludus_sdk::durable::read::<Option<Saved>>(&state)? else { return Ok(()) };
        let mut game = match saved.kept {
            Kept::Offline { format, bot, creator, seeds, sent, teams, agent } => {
                let p2 = match &agent {
                    None => P2::Bot(bot),
                    Some(a) => P2::Agent { joiner: a.joiner.clone() },
                };
                let creator = agent.as_ref().map_or(creator, |a| a.creator.clone());
                let mut game = offline_game(creator, p2, format, seeds, teams)?;
                if let Mode::Offline { replay, opponent, .. } = &mut game.mode {
                    *replay = sent.into();
                    if let (Opponent::Agent { seat, .. }, Some(a)) = (opponent, agent) {
                        (seat.submitted, seat.in_flight, seat.announced) = (a.submitted, a.in_flight, a.announced);
                    }
                }
                game.seat.submitted = saved.submitted;
                game.seat.in_flight = saved.in_flight;
                game
            }
            Kept::Online { format, username, goal, room, answered } => {
                // The password is never stored: it comes from the operator's environment again.
                let password = operator_account(Some(&username)).and_then(|a| a.password);
                online_game(goal, format, username, password, room, answered)?
            }
        };
        game.seat.announced = saved.announced;
        game.seat.tally = saved.tally;
        GAME.set(Some(game));
        Ok(())
    }
}

// ---------------------------------------------------------------- events

impl events::Guest for Showdown {
    fn on_timer(_id: u64) {
        // Re-send a challenge the server refused because the opponent was not online yet.
        let _ = with_game(|g| {
            if let (Status::Challenging, Mode::Online { goal: Goal::Challenge(opp), logged_in: true, room: None, .. }) =
                (&g.status, &g.mode)
            {
                send(g.channel, &format!("|/challenge {opp}, {}", g.format));
                host::set_timer(CHALLENGE_RETRY_MS);
            }
            Ok(())
        });
    }

    fn on_message(channel: u32, data: String) {
        let _ = with_game(|g| {
            if let Mode::Online { login: Some(login), .. } = g.mode
                && channel == login
            {
                signed(g, login, &data);
            }
            if channel != g.channel {
                return Ok(());
            }
            match &mut g.mode {
                Mode::Offline { reader, .. } => match reader.line(&data) {
                    // The sidecar's own line: not one of the simulator's, which a replay counts.
                    Some(notice @ Event::Notice { .. }) => offline_event(g, notice),
                    event => {
                        g.notice = None;
                        if let Some(event) = event {
                            offline_event(g, event);
                        }
                        simulator_wrote_a_line(g);
                    }
                },
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
        let live = |g: &Game| channel == g.channel && !g.seat.battle.over() && g.status != Status::Finished;
        // Only a battle whose simulator had started (it said something): one
        // that never did (its install failed, say) would fail the same way again.
        let offline =
            GAME.with_borrow(|g| g.as_ref().is_some_and(|g| live(g) && matches!(g.mode, Mode::Offline { received, .. } if received > 0)));
        let mut reason = reason;
        if offline && ludus_sdk::durable::may_rebuild() {
            // The simulator ended by itself (a shared process killed, say): a
            // new one plays the battle again from its seeds and our lines,
            // as after a restart of the server.
            match <Showdown as durable::Guest>::restore(<Showdown as durable::Guest>::save()) {
                Ok(()) => {
                    return ludus_sdk::log(LogLevel::Warn, &format!("the battle simulator stopped ({reason}); the battle is rebuilt"));
                }
                Err(e) => reason = format!("{reason}; starting it again failed: {e}"),
            }
        }
        let _ = with_game(|g| {
            if live(g) {
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

// Exported only in the component: the native cdylib's linker rejects these symbol names.
#[cfg(target_arch = "wasm32")]
bindings::export!(Showdown with_types_in bindings);
