//! The cards plugin: one instance is one game (its `game-id` is the session
//! id). Every tool is one call of the backend's tool of the same name (XMage's
//! headless-client surface), made through a host channel and awaited through
//! a host wait, so no thread blocks while the other seat thinks. Seats belong
//! to MCP connections (`host.caller`).

mod bindings;
mod game;
mod render;

use bindings::exports::ludus::cards::tools::{ActionChoices, ActionStatus, GameLog, GameState, Guest, Opponent, Oracle};
use bindings::exports::ludus::plugin::access::{self, Audience, Grant};
use bindings::exports::ludus::plugin::{durable, events, meta, moves};
use ludus_sdk::{PluginInfo, ToolHint, host};
use serde_json::{Value, json};

use crate::decision::{self, Answer};
use game::{Backend, GAME, Game, Seat, Step, game_id, with_game};

/// The longest a backend wait is asked for: the host's default wait cap is
/// 25 s, so a backend that answers "timeout" first lets the agent see it.
const MAX_BACKEND_WAIT_MS: u32 = 20_000;

struct Cards;

impl meta::Guest for Cards {
    fn describe() -> PluginInfo {
        let uses = |f: &str| ToolHint::uses(f, "game-id");
        PluginInfo {
            name: "cards".into(),
            title: "Card games (Magic: The Gathering)".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Magic: The Gathering through the decision tools of XMage's headless client: on the phase rules \
                          engine (built in; Python 3.11+) or on an XMage server through its headless client (the \
                          operator's `xmage` endpoint). Start with `cards_start_game`, then loop `cards_pass_priority`, \
                          `cards_get_action_choices` and `cards_choose_action` until the game ends."
                .into(),
            tools: vec![
                ToolHint::creates("start-game").title("Start a card game").waits(25_000, 300_000),
                uses("join-game").title("Join a card game").waits(25_000, 60_000),
                uses("is-action-on-me").title("Is a decision due?").read_only().waits(10_000, 30_000),
                uses("wait-for-action").title("Wait for a decision").read_only().waits(25_000, 300_000),
                uses("pass-priority").title("Pass priority").waits(25_000, 300_000),
                uses("auto-pass-until-event").title("Pass until something happens").waits(25_000, 300_000),
                uses("take-action").title("Take the default action").waits(10_000, 30_000),
                uses("get-action-choices").title("Pending decision").read_only().waits(10_000, 30_000),
                uses("choose-action").title("Answer the decision").waits(10_000, 30_000),
                uses("get-game-state").title("Game state").read_only().waits(10_000, 30_000),
                uses("get-game-log").title("Game log").read_only().waits(10_000, 30_000),
                uses("get-oracle-text").title("Card text").read_only().waits(10_000, 30_000),
                uses("send-chat-message").title("Chat").waits(10_000, 30_000),
                uses("concede").title("Concede").destructive().waits(10_000, 30_000),
            ],
            resources: vec![],
            idle_timeout_ms: None,
        }
    }

    fn read_resource(uri: String) -> Result<String, String> {
        Err(format!("cards has no resource {uri}"))
    }
}

/// Whether a call makes one of the game's decisions, with the number it
/// names (`ludus:plugin/decisions`).
#[derive(Clone, Copy)]
enum Decides {
    No,
    Yes(Option<u32>),
}

/// Runs one backend tool for the calling seat and hands its answer to
/// `done`; while the backend has not answered, asks the host to wait (and,
/// when the host's wait ran out, answers with `waiting`). A decision's
/// number is checked when its call is first sent (not on the host's
/// re-runs, which find it in flight), and the decision counted then.
fn call<T>(
    key: &str,
    tool: &str,
    args: Value,
    decides: Decides,
    done: impl FnOnce(&mut Game, usize, Value) -> Result<T, String>,
    waiting: impl FnOnce(&Game, usize) -> T,
) -> Result<T, String> {
    with_game(|g| {
        let caller = host::caller();
        let seat = g.seat_of(&caller)?;
        let in_flight = g.in_flight(&caller, key);
        if let (Decides::Yes(number), false) = (decides, in_flight) {
            ludus_sdk::decision::check(number, g.decision_due(seat))?;
        }
        if let Some(view) = g.final_view(tool, seat) {
            return done(g, seat, view);
        }
        let step = g.step(&caller, key, seat, tool, args);
        if matches!(decides, Decides::Yes(_)) && !in_flight && g.in_flight(&caller, key) {
            g.take_number(seat, key);
        }
        match step {
            Step::Done(r) => {
                g.settle_number(seat, key, &r);
                let mut answer = r?;
                g.note_if_over(&mut answer);
                // The game just ended: answer once its final views are in and
                // the host knows, so the caller's next call sees it over.
                if g.ending_pending() && Game::answers_when_over(tool) {
                    host::wait(0);
                    return Ok(waiting(g, seat));
                }
                done(g, seat, answer)
            }
            Step::Waiting => {
                if !host::wait_timed_out() {
                    host::wait(0);
                }
                Ok(waiting(g, seat))
            }
        }
    })
}

/// A backend tool whose answer is a status.
fn status_call(tool: &str, args: Value, decides: Decides) -> Result<ActionStatus, String> {
    status_call_as(&format!("{tool} {args}"), tool, args, decides)
}

/// The same, recognised on re-runs by `key` rather than by its arguments.
fn status_call_as(key: &str, tool: &str, args: Value, decides: Decides) -> Result<ActionStatus, String> {
    call(key, tool, args, decides, |g, seat, v| Ok(status_of(g, seat, &v)), still_waiting)
}

/// A backend status for `seat`, with the decision due and what an open seat means.
fn status_of(g: &Game, seat: usize, v: &Value) -> ActionStatus {
    let mut status = render::status(game_id(), seat as u32, v, g.decision_due(seat));
    if let Some(open) = g.open_seat().filter(|_| !status.action_pending && !status.game_over) {
        status.text = format!(
            "{}\nSeat {open} is open: the game waits for an agent to join it with the join code (`cards_join_game`); nobody \
             plays it until then.",
            status.text
        );
    }
    status
}

/// The answer while the backend has not answered yet (the host's wait ran out).
fn still_waiting(g: &Game, seat: usize) -> ActionStatus {
    let busy = g.notice.as_deref().map(|n| format!("{n} ({} s so far)", game::now_ms().saturating_sub(g.notice_since) / 1000));
    render::still_waiting(game_id(), seat as u32, busy.as_deref(), g.decision_due(seat))
}

/// A status tool that waits: the backend waits what was asked, up to the
/// cap, and the answer says so when the cap cut the wait short.
fn waiting_call(tool: &str, mut args: Value, timeout_ms: Option<u32>, default: u32, decides: Decides) -> Result<ActionStatus, String> {
    let asked = timeout_ms.unwrap_or(default);
    args["timeout_ms"] = json!(asked.min(MAX_BACKEND_WAIT_MS));
    let mut status = status_call(tool, args, decides)?;
    if asked > MAX_BACKEND_WAIT_MS && !status.action_pending && !status.game_over {
        status.wait_cap_ms = Some(MAX_BACKEND_WAIT_MS);
        status.text = format!(
            "{}\n(One call waits at most {} s on this server; you asked for {} s. Call again to keep waiting.)",
            status.text,
            MAX_BACKEND_WAIT_MS / 1000,
            asked / 1000
        );
    }
    Ok(status)
}

/// A provisional answer is never shown: the host calls again.
fn placeholder_choices(g: &Game, seat: usize) -> ActionChoices {
    render::choices(game_id(), seat as u32, &Value::Null, g.decision_due(seat))
}

/// The game's last status for the caller's seat, once the game is over: what
/// every decision tool answers from then on.
fn final_status() -> Result<Option<ActionStatus>, String> {
    with_game(|g| {
        let seat = g.seat_of(&host::caller())?;
        Ok(g.final_status().map(|st| status_of(g, seat, &st)))
    })
}

impl Guest for Cards {
    fn start_game(
        game: Option<String>,
        opponent: Option<Opponent>,
        seat: Option<u32>,
        _seed: Option<u64>,
        decks: Option<Vec<String>>,
        ai_level: Option<String>,
        format: Option<String>,
    ) -> Result<ActionStatus, String> {
        if GAME.with_borrow(Option::is_none) {
            let game = game.unwrap_or_else(|| "magic".into());
            if game != "magic" {
                return Err(format!("unknown card game {game:?}; the card games are: magic"));
            }
            let seat = seat.unwrap_or(0) as usize;
            if seat > 1 {
                return Err("seat is 0 or 1".into());
            }
            let other = match opponent.unwrap_or(Opponent::Ai) {
                Opponent::Ai => Seat::Ai,
                Opponent::Agent => Seat::Open,
            };
            let mut seats = [other.clone(), other];
            seats[seat] = Seat::Agent(host::caller());
            // The operator's XMage client when granted, else the phase bridge.
            let mut g = Game::new(Backend::Xmage, seats.clone());
            match g.connect(seat) {
                Ok(()) => {}
                Err(e) if e.contains("is not granted") => {
                    g = Game::new(Backend::Phase, seats);
                    g.connect(seat)?;
                }
                Err(e) => return Err(e),
            }
            g.ai_level = ai_level.clone().unwrap_or_else(|| "Medium".into());
            g.begin_tally(seat);
            g.tell_seats();
            GAME.set(Some(g));
        }
        let backend = with_game(|g| Ok(g.backend))?;
        match backend {
            // The game starts with `new_game`: both seats, the decks, the seed.
            Backend::Phase => {
                let (roles, seed, mine) = with_game(|g| {
                    let roles: Vec<&str> = g.seats.iter().map(|s| if *s == Seat::Ai { "ai" } else { "agent" }).collect();
                    Ok((json!(roles), host::seed(), g.seat_of(&host::caller())?))
                })?;
                // The whole 64-bit seed (the game's secret mixed in): phase takes any.
                let mut args = json!({"seats": roles, "seed": seed, "first_player": 0});
                if let Some(mut d) = decks {
                    // Yours first for the agent; by seat for the engine.
                    if mine == 1 {
                        d.reverse();
                    }
                    args["decks"] = json!(d);
                }
                if let Some(l) = ai_level {
                    args["ai_level"] = json!(l);
                }
                if let Some(f) = format {
                    args["format"] = json!(f);
                }
                // The operator's card data (`[plugins.cards] env = { LUDUS_CARDS_DATA = ... }`).
                if let Ok(cards) = std::env::var("LUDUS_CARDS_DATA") {
                    args["cards"] = json!(cards);
                }
                with_game(|g| {
                    g.start.get_or_insert_with(|| args.clone());
                    Ok(())
                })?;
                status_call("new_game", args, Decides::No)
            }
            // XMage's client joined its table at launch: ask where it stands.
            Backend::Xmage => status_call("is_action_on_me", json!({}), Decides::No),
        }
    }

    fn join_game(_game_id: String) -> Result<ActionStatus, String> {
        let caller = host::caller();
        with_game(|g| {
            // Seated already: the host's re-run of this waiting call, or the
            // creator asking for the other seat, which one client cannot hold.
            if let Ok(mine) = g.seat_of(&caller) {
                return match g.open_seat() {
                    Some(free) => Err(format!(
                        "you hold seat {mine} already; to play seat {free} too, join from a second client (another connection, \
                         or another token): each call acts for its caller's seat"
                    )),
                    None => Ok(()),
                };
            }
            let free = g.open_seat().ok_or("this game has no free seat")?;
            g.seats[free] = Seat::Agent(caller.clone());
            if g.backend == Backend::Xmage {
                g.connect(free)?;
            }
            g.tell_seats();
            Ok(())
        })?;
        status_call("is_action_on_me", json!({}), Decides::No)
    }

    fn is_action_on_me(_game_id: Option<String>) -> Result<ActionStatus, String> {
        status_call("is_action_on_me", json!({}), Decides::No)
    }

    fn wait_for_action(_game_id: Option<String>, timeout_ms: Option<u32>) -> Result<ActionStatus, String> {
        waiting_call("wait_for_action", json!({}), timeout_ms, 15_000, Decides::No)
    }

    fn pass_priority(_game_id: Option<String>, timeout_ms: Option<u32>, decision: Option<u32>) -> Result<ActionStatus, String> {
        waiting_call("pass_priority", json!({}), timeout_ms, 30_000, Decides::Yes(decision))
    }

    fn auto_pass_until_event(
        _game_id: Option<String>,
        min_new_chars: Option<u32>,
        timeout_ms: Option<u32>,
        decision: Option<u32>,
    ) -> Result<ActionStatus, String> {
        let args = json!({"min_new_chars": min_new_chars.unwrap_or(50)});
        waiting_call("auto_pass_until_event", args, timeout_ms, 10_000, Decides::Yes(decision))
    }

    fn take_action(_game_id: Option<String>, decision: Option<u32>) -> Result<ActionStatus, String> {
        status_call("take_action", json!({}), Decides::Yes(decision))
    }

    fn get_action_choices(_game_id: Option<String>) -> Result<ActionChoices, String> {
        let over = with_game(|g| {
            let seat = g.seat_of(&host::caller())?;
            Ok(g.final_status().map(|st| render::choices(game_id(), seat as u32, &st, g.decision_due(seat))))
        })?;
        if let Some(choices) = over {
            return Ok(choices);
        }
        call(
            "get_action_choices",
            "get_action_choices",
            json!({}),
            Decides::No,
            |g, seat, v| Ok(render::choices(game_id(), seat as u32, &v, g.decision_due(seat))),
            placeholder_choices,
        )
    }

    /// Checked against the pending decision first: only an answer that fits
    /// it is sent to the engine.
    fn choose_action(
        _game_id: Option<String>,
        index: Option<u32>,
        answer: Option<bool>,
        amount: Option<i64>,
        amounts: Option<Vec<i64>>,
        pile: Option<u32>,
        decision: Option<u32>,
    ) -> Result<ActionStatus, String> {
        let answer = Answer { index, answer, amount, amounts, pile };
        let (check_key, send_key) = (format!("check {answer:?}"), format!("choose {answer:?}"));
        // On a re-run the checked answer is already with the backend: only its result is awaited.
        let (already_sent, checking) = with_game(|g| {
            let caller = host::caller();
            Ok((g.in_flight(&caller, &send_key), g.in_flight(&caller, &check_key)))
        })?;
        if !already_sent && !checking {
            with_game(|g| ludus_sdk::decision::check(decision, g.decision_due(g.seat_of(&host::caller())?)))?;
            if let Some(over) = final_status()? {
                return Ok(over);
            }
        }
        let args = if already_sent {
            Value::Null
        } else {
            let check = |g: &mut Game, seat: usize, pending: Value| {
                let checked = decision::check(&pending, &answer).map(Ok);
                g.pending_seen[seat] = Some(pending);
                checked
            };
            let still = |g: &Game, seat| Err(Box::new(still_waiting(g, seat)));
            let checked = call(&check_key, "get_action_choices", json!({}), Decides::No, check, still);
            match checked {
                Ok(Ok(args)) => args,
                Ok(Err(waiting)) => return Ok(*waiting),
                Err(refused) => {
                    with_game(|g| {
                        g.tally.sent(false);
                        g.tally.tell();
                        Ok(())
                    })?;
                    return Err(refused);
                }
            }
        };
        let status = status_call_as(&send_key, "choose_action", args, Decides::No)?;
        // Counted once, when it is sent: a re-run only awaits its result.
        if !already_sent {
            with_game(|g| {
                g.decisions[g.seat_of(&host::caller())?] += 1;
                g.pending_seen = [None, None];
                g.tally.sent(true);
                g.tally.tell();
                Ok(())
            })?;
        }
        Ok(status)
    }

    fn get_game_state(_game_id: Option<String>) -> Result<GameState, String> {
        call(
            "get_game_state",
            "get_game_state",
            json!({}),
            Decides::No,
            |g, seat, v| Ok(render::state(game_id(), &v, g.decision_due(seat))),
            |g, seat| render::state(game_id(), &Value::Null, g.decision_due(seat)),
        )
    }

    fn get_game_log(_game_id: Option<String>, max_chars: Option<u32>) -> Result<GameLog, String> {
        // 0 means all, as in XMage's client.
        let args = match max_chars.filter(|n| *n > 0) {
            Some(n) => json!({"max_chars": n}),
            None => json!({}),
        };
        let key = format!("get_game_log {args}");
        let log = |_: &mut Game, _, v: Value| Ok(render::game_log(&v, max_chars));
        call(&key, "get_game_log", args, Decides::No, log, |_, _| render::game_log(&Value::Null, None))
    }

    fn get_oracle_text(_game_id: Option<String>, card_name: Option<String>, object_id: Option<String>) -> Result<Oracle, String> {
        let args = match (&card_name, object_id) {
            (Some(n), None) => json!({"card_name": n}),
            (None, Some(id)) => json!({"object_id": id}),
            _ => return Err("give exactly one of `card_name` and `object_id`".into()),
        };
        let key = format!("get_oracle_text {args}");
        // A caller with no game: its call runs in the shared instance, which
        // holds none; a card is looked up by name in the bundled data.
        if host::session_id().is_none() {
            return match card_name {
                Some(name) => crate::card_book::by_name(&name).map(|v| render::oracle(&v)),
                None => Err("`object_id` names a card in a game, and you have no game of cards; look a card up by `card_name`".into()),
            };
        }
        // Once the game is over its engine is gone: a card is looked up by
        // name in a bridge started for that (and stopped when it answers).
        let after_the_end = with_game(|g| {
            if g.final_status().is_none() {
                return Ok(None);
            }
            Ok(Some(match g.look_up(&host::caller(), &key, args.clone()) {
                Step::Done(answer) => answer.map(|v| render::oracle(&v)),
                Step::Waiting if host::wait_timed_out() => Err("the card data did not answer in time; ask again".into()),
                Step::Waiting => {
                    host::wait(0);
                    Ok(render::oracle(&Value::Null))
                }
            }))
        })?;
        if let Some(answer) = after_the_end {
            return answer;
        }
        let oracle = |_: &mut Game, _, v: Value| Ok(render::oracle(&v));
        call(&key, "get_oracle_text", args, Decides::No, oracle, |_, _| render::oracle(&Value::Null))
    }

    fn send_chat_message(_game_id: Option<String>, message: String) -> Result<String, String> {
        if message.len() > 500 {
            return Err("a chat message has at most 500 bytes".into());
        }
        if let Some(over) = final_status()? {
            return Ok(format!("{} The message was not sent: the table has closed.", over.text));
        }
        let args = json!({"message": message});
        let key = format!("send_chat_message {args}");
        call(&key, "send_chat_message", args, Decides::No, |_, _, _| Ok("Sent.".to_string()), |_, _| String::new())
    }

    fn concede(_game_id: Option<String>) -> Result<ActionStatus, String> {
        with_game(|g| {
            g.conceding = true;
            Ok(())
        })?;
        status_call("concede", json!({}), Decides::No)
    }
}

// The illegal-move policy's random move: an answer that fits the decision
// the caller was last seen to have pending (when its refused answer was
// checked), as `choose_action` takes it.
impl moves::Guest for Cards {
    fn legal() -> Vec<moves::LegalMove> {
        let answers = with_game(|g| {
            let seat = g.seat_of(&host::caller())?;
            Ok(g.pending_seen[seat].as_ref().map(decision::legal_answers).unwrap_or_default())
        });
        let answers = answers.unwrap_or_default().into_iter();
        answers.map(|args| moves::LegalMove { tool: "choose-action".into(), arguments: args.to_string() }).collect()
    }
}

impl access::Guest for Cards {
    /// The second seat is taken with the join code; every other tool is for
    /// the players (a hand is hidden information).
    fn grants() -> Vec<Grant> {
        vec![Grant { name: "join-game".into(), audience: Audience::Joins }]
    }
}

/// What a restart keeps of a game on phase: who sits where, the `new_game`
/// arguments and the journal of changes the bridge reported; `restore`
/// starts a new bridge and has it apply the journal again. A game on XMage
/// lives in the XMage server and the operator's client processes: it does
/// not survive a restart of Ludus.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    seats: [Seat; 2],
    start: Value,
    journal: Vec<Value>,
    creator: usize,
    tally: ludus_sdk::tally::Tally,
    #[serde(default)]
    decisions: [u32; 2],
    #[serde(default)]
    ai_level: String,
}

impl durable::Guest for Cards {
    fn save() -> Vec<u8> {
        GAME.with_borrow(|g| {
            let saved = g.as_ref().and_then(|g| {
                let start = g.start.clone().filter(|_| g.backend == Backend::Phase)?;
                Some(Saved {
                    seats: g.seats.clone(),
                    start,
                    journal: g.journal.clone(),
                    creator: g.creator,
                    tally: g.tally.clone(),
                    decisions: g.decisions,
                    ai_level: g.ai_level.clone(),
                })
            });
            // JSON: the journal holds the engine's own JSON values.
            serde_json::to_vec(&(g.is_some(), saved)).unwrap_or_default()
        })
    }

    fn restore(state: Vec<u8>) -> Result<(), String> {
        let (had_game, saved): (bool, Option<Saved>) =
            serde_json::from_slice(&state).map_err(|e| format!("the stored state is not this game's: {e}"))?;
        let Some(saved) = saved else {
            return match had_game {
                true => Err("a game on an XMage server does not survive a restart of Ludus".into()),
                false => Ok(()),
            };
        };
        let mut g = Game::new(Backend::Phase, saved.seats);
        g.connect(0)?;
        g.start = Some(saved.start);
        g.journal = saved.journal;
        (g.creator, g.tally, g.decisions, g.ai_level) = (saved.creator, saved.tally, saved.decisions, saved.ai_level);
        g.rebuild();
        GAME.set(Some(g));
        Ok(())
    }
}

impl events::Guest for Cards {
    fn on_timer(_id: u64) {}

    fn on_message(_channel: u32, data: String) {
        let _ = with_game(|g| {
            g.receive(&data);
            Ok(())
        });
    }

    fn on_closed(_channel: u32, reason: String) {
        // Only a game whose engine had started (it answered): one that never
        // did (its install failed, say) would fail the same way again.
        let on_phase = GAME.with_borrow(|g| {
            g.as_ref().is_some_and(|g| g.failed.is_none() && g.backend == Backend::Phase && g.start.is_some() && !g.offered.is_empty())
        });
        let mut reason = reason;
        if on_phase && ludus_sdk::durable::may_rebuild() {
            // The bridge ended by itself (a shared process killed, say): a
            // new one applies the game's journal again, as after a restart.
            match <Cards as durable::Guest>::restore(<Cards as durable::Guest>::save()) {
                Ok(()) => {
                    return ludus_sdk::log(ludus_sdk::LogLevel::Warn, &format!("the rules engine stopped ({reason}); the game is rebuilt"));
                }
                Err(e) => reason = format!("{reason}; starting it again failed: {e}"),
            }
        }
        let _ = with_game(|g| {
            if g.failed.is_none() {
                g.failed = Some(format!("the card-game backend ({}) stopped: {reason}", g.backend.endpoint()));
                // A game cut short by its backend is unfinished, not lost.
                g.tally.end(ludus_sdk::tally::End::Abandoned);
                g.tally.tell();
            }
            Ok(())
        });
    }
}

// Exported only in the component: the native cdylib's linker rejects these symbol names.
#[cfg(target_arch = "wasm32")]
bindings::export!(Cards with_types_in bindings);
