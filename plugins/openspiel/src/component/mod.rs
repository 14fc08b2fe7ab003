//! The openspiel plugin: one instance is one game (its `game-id` is the
//! session id). Reads are answered from the last snapshot; `start-game`,
//! `move` and `forfeit` are one bridge request each, awaited through a
//! host wait so that no thread blocks while OpenSpiel thinks. Seats belong
//! to MCP connections (`host.caller`).

mod bindings;
mod game;
mod render;

use bindings::exports::ludus::openspiel::tools::{Action, GameInfo, GameList, Guest, Parameter, Turn};
use bindings::exports::ludus::plugin::access::{self, Audience, Grant};
use bindings::exports::ludus::plugin::{durable, events, meta, moves};
use ludus_sdk::tally::Tally;
use ludus_sdk::{PluginInfo, ToolHint, host};
use serde_json::json;

use crate::catalogue;
use crate::seats::{Seat, seat_table};
use game::{GAME, Game, Step, with_game};

struct OpenSpiel;

impl meta::Guest for OpenSpiel {
    fn describe() -> PluginInfo {
        let uses = |f: &str| ToolHint::uses(f, "game-id");
        PluginInfo {
            name: "openspiel".into(),
            title: "OpenSpiel's games".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "About a hundred games from DeepMind's OpenSpiel on the real engine (Python 3.11+; installed on \
                          first use): board games, poker, bridge, Hanabi, dice and matrix games, against random, MCTS or \
                          equilibrium opponents or other agents. Each seat sees only its own observation. Find a game with \
                          `openspiel_list_games`, start it with `openspiel_start_game`, then `openspiel_move` and \
                          `openspiel_wait_for_turn` until it is over."
                .into(),
            tools: vec![
                ToolHint::stateless("list-games").title("OpenSpiel's games").read_only().idempotent(),
                ToolHint::creates("start-game").title("Start an OpenSpiel game").waits(25_000, 300_000),
                uses("join-game").title("Join an OpenSpiel game"),
                uses("wait-for-turn").title("Wait for your turn").read_only().waits(25_000, 60_000),
                uses("get-state").title("Game state").read_only(),
                uses("legal-actions").title("Legal actions").read_only(),
                uses("move").title("Make a move").waits(25_000, 60_000),
                uses("forfeit").title("Forfeit").destructive().waits(10_000, 30_000),
            ],
            resources: vec![],
            idle_timeout_ms: None,
        }
    }

    fn read_resource(uri: String) -> Result<String, String> {
        Err(format!("openspiel has no resource {uri}"))
    }
}

/// One bridge request's outcome as a tool's answer: the caller's turn once
/// it is in, a provisional one (the host calls again) while it is not.
fn awaited(g: &mut Game, caller: &str, key: &str, body: serde_json::Value, done: &str) -> Result<(Turn, bool), String> {
    match g.request(caller, key, body) {
        Step::Done(Ok(())) => Ok((render::turn(g, caller, done), true)),
        Step::Done(Err(e)) => Err(e),
        Step::Waiting => Ok((still_waiting(g, caller), false)),
    }
}

/// The answer while OpenSpiel has not answered: provisional unless the
/// host's wait ran out, when it says what is going on.
fn still_waiting(g: &Game, caller: &str) -> Turn {
    if !host::wait_timed_out() {
        host::wait(0);
        return render::turn(g, caller, "");
    }
    render::turn(g, caller, "OpenSpiel has not answered yet; call `openspiel_wait_for_turn` to see the outcome.")
}

impl Guest for OpenSpiel {
    fn list_games(filter: Option<String>, hidden_information: Option<bool>) -> Result<GameList, String> {
        let cat = catalogue::catalogue();
        let needle = filter.map(|f| f.to_lowercase());
        let games: Vec<GameInfo> = cat
            .games
            .iter()
            .filter(|e| needle.as_ref().is_none_or(|n| e.name.to_lowercase().contains(n) || e.title.to_lowercase().contains(n)))
            .filter(|e| hidden_information.is_none_or(|h| e.hidden == h))
            .map(|e| GameInfo {
                name: e.name.clone(),
                title: e.title.clone(),
                players: e.players,
                min_players: e.min_players,
                max_players: e.max_players,
                hidden_information: e.hidden,
                chance: e.chance,
                simultaneous: e.simultaneous,
                utility: e.utility.clone(),
                parameters: e.defaults(),
                rules: e.rules.clone(),
            })
            .collect();
        let lines: Vec<String> = games
            .iter()
            .map(|g| {
                let hidden = if g.hidden_information { ", hidden information" } else { "" };
                let rules = if g.rules.is_empty() { String::new() } else { format!(" — {}", g.rules) };
                format!("{} ({}; {} players{hidden}){rules}", g.name, g.title, g.players)
            })
            .collect();
        let text = format!(
            "{} of OpenSpiel {}'s games{}:\n{}\nStart one with `openspiel_start_game` (game, optional parameters, seat, opponents).",
            games.len(),
            cat.open_spiel,
            if games.len() < cat.games.len() { " match" } else { "" },
            lines.join("\n")
        );
        Ok(GameList { games, open_spiel: cat.open_spiel.clone(), text })
    }

    fn start_game(
        game: String,
        parameters: Option<Vec<Parameter>>,
        seat: Option<u32>,
        opponents: Option<Vec<String>>,
        _seed: Option<u64>,
    ) -> Result<Turn, String> {
        let caller = host::caller();
        if GAME.with_borrow(Option::is_none) {
            let entry = catalogue::game(game.trim())?;
            let given: Vec<(String, String)> = parameters.unwrap_or_default().into_iter().map(|p| (p.name, p.value)).collect();
            let params = entry.parameters(&given)?;
            let count = entry.seats_with(&params);
            let mine = seat.unwrap_or(0);
            let seats = seat_table(entry, count, mine, &caller, &opponents.unwrap_or_default())?;
            let holders: Vec<String> = seats.iter().map(|s| s.shown("")).collect();
            let tally = Tally::new(json!({"game": entry.name, "parameters": params, "seats": holders}).to_string(), None);
            tally.tell();
            let g = Game::new(entry.name.clone(), serde_json::Value::Object(params).to_string(), seats, mine as usize, tally);
            g.tell_seats();
            GAME.set(Some(g));
        }
        with_game(|g| {
            let body = g.new_request();
            let (turn, _) = awaited(g, &caller, "start", body, "The game has started.")?;
            Ok(turn)
        })
    }

    fn join_game(_game_id: String) -> Result<Turn, String> {
        let caller = host::caller();
        with_game(|g| {
            let free = g.seats.iter().position(|s| *s == Seat::Open).ok_or("this game has no free seat")?;
            g.seats[free] = Seat::Agent(caller.clone());
            g.tell_seats();
            Ok(render::turn(g, &caller, &format!("You took seat {free}.")))
        })
    }

    fn wait_for_turn(_game_id: String) -> Result<Turn, String> {
        let caller = host::caller();
        with_game(|g| {
            let started = g.snap.is_some();
            let mine = g.seats_of(&caller);
            let due = g.snap.as_ref().and_then(|s| s.to_move()).is_some_and(|m| mine.contains(&m));
            // A spectator is answered at once: it has no turn to wait for.
            if started && (g.over() || due || mine.is_empty()) {
                return Ok(render::turn(g, &caller, ""));
            }
            if host::wait_timed_out() {
                return Ok(render::turn(g, &caller, "Not your turn yet: call this tool again to keep waiting."));
            }
            host::wait(0);
            Ok(render::turn(g, &caller, ""))
        })
    }

    fn get_state(_game_id: String) -> Result<Turn, String> {
        with_game(|g| Ok(render::turn(g, &host::caller(), "")))
    }

    fn legal_actions(_game_id: String) -> Result<Vec<Action>, String> {
        with_game(|g| {
            let caller = host::caller();
            Ok(match g.seat_to_move(&caller) {
                Ok(seat) => render::actions(g.snap.as_ref().map(|s| s.legal(seat)).unwrap_or_default()),
                Err(_) => Vec::new(),
            })
        })
    }

    fn move_(_game_id: String, action: String, decision: Option<u32>) -> Result<Turn, String> {
        let caller = host::caller();
        let key = format!("move {action}");
        with_game(|g| {
            let sent = g.in_flight(&caller, &key);
            if !sent {
                // The number first: a move sent again after it was made gets
                // its answer from the host, whatever the game did since.
                ludus_sdk::decision::check(decision, g.decision_due())?;
                let seat = g.seat_to_move(&caller)?;
                if g.moving() {
                    // Another seat's move is with OpenSpiel: this one is
                    // judged against the game that move leaves.
                    return Ok(still_waiting(g, &caller));
                }
                g.decisions += 1;
                let body = json!({"op": "move", "seat": seat, "action": action});
                return finish_move(g, &caller, &key, body);
            }
            finish_move(g, &caller, &key, serde_json::Value::Null)
        })
    }

    fn forfeit(_game_id: String) -> Result<Turn, String> {
        let caller = host::caller();
        with_game(|g| {
            if g.over() {
                return Ok(render::turn(g, &caller, "The game is over already."));
            }
            let seat = *g.seats_of(&caller).first().ok_or("you have no seat in this game")?;
            let body = json!({"op": "forfeit", "seat": seat});
            let (turn, _) = awaited(g, &caller, "forfeit", body, "You forfeited.")?;
            Ok(turn)
        })
    }
}

/// A move sent (or being awaited): counted once its outcome is in.
fn finish_move(g: &mut Game, caller: &str, key: &str, body: serde_json::Value) -> Result<Turn, String> {
    match awaited(g, caller, key, body, "") {
        Ok((turn, true)) => {
            // Counted as its answer arrived (`Game::receive`).
            g.tally.tell();
            Ok(turn)
        }
        Ok((turn, false)) => Ok(turn),
        Err(refused) => {
            // Refused: the decision is still due.
            g.decisions -= 1;
            g.tally.sent(false);
            g.tally.tell();
            Err(refused)
        }
    }
}

// The illegal-move policy's random move: the caller's legal actions by text.
impl moves::Guest for OpenSpiel {
    fn legal() -> Vec<moves::LegalMove> {
        let legal = with_game(|g| {
            let seat = g.seat_to_move(&host::caller())?;
            Ok(g.snap.as_ref().map(|s| s.legal(seat).to_vec()).unwrap_or_default())
        });
        let to_move = |text: String| moves::LegalMove { tool: "move".into(), arguments: json!({ "action": text }).to_string() };
        legal.unwrap_or_default().into_iter().map(|(_, text)| to_move(text)).collect()
    }
}

impl access::Guest for OpenSpiel {
    /// Free seats are taken with the join code; the state and the wait show
    /// a watcher the public view only (nothing any seat keeps hidden).
    fn grants() -> Vec<Grant> {
        vec![
            Grant { name: "join-game".into(), audience: Audience::Joins },
            Grant { name: "get-state".into(), audience: Audience::Spectators },
            Grant { name: "wait-for-turn".into(), audience: Audience::Spectators },
        ]
    }
}

impl durable::Guest for OpenSpiel {
    fn save() -> Vec<u8> {
        ludus_sdk::durable::save(&GAME)
    }

    /// The bridge is not started here: the next move starts it and rebuilds
    /// the game from its history; reads need only the saved snapshot.
    fn restore(state: Vec<u8>) -> Result<(), String> {
        ludus_sdk::durable::restore(&GAME, &state)
    }
}

impl events::Guest for OpenSpiel {
    fn on_timer(_id: u64) {}

    fn on_message(_channel: u32, data: String) {
        let _ = with_game(|g| {
            g.receive(&data);
            Ok(())
        });
    }

    fn on_closed(channel: u32, reason: String) {
        let _ = with_game(|g| {
            g.closed(channel, &reason);
            Ok(())
        });
    }
}

// Exported only in the component: the native cdylib's linker rejects these symbol names.
#[cfg(target_arch = "wasm32")]
bindings::export!(OpenSpiel with_types_in bindings);
