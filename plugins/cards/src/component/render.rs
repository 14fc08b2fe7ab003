//! What the agent reads: the backend's answers (XMage's shapes) as typed
//! records, each with a short text that says what to do next. Missing fields
//! read as empty, so a backend that says less still renders.

use serde_json::Value;

use super::bindings::exports::ludus::cards::tools::{
    ActionChoices, ActionStatus, CardRef, Choice, GameState, Oracle, Permanent, PlayerView, TurnContext,
};

fn s(v: &Value) -> Option<String> {
    v.as_str().map(String::from)
}

fn u(v: &Value) -> Option<u32> {
    v.as_u64().map(|n| n as u32)
}

fn i(v: &Value) -> Option<i32> {
    v.as_i64().map(|n| n as i32)
}

/// Each item of an array, read by `f`; nothing when it is not an array.
fn list<T>(v: &Value, f: impl Fn(&Value) -> T) -> Vec<T> {
    v.as_array().map(|a| a.iter().map(f).collect()).unwrap_or_default()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
}

fn outcome(winner: Option<u32>, seat: u32) -> String {
    match winner {
        Some(w) if w == seat => "The game is over: you won.".into(),
        Some(_) => "The game is over: you lost.".into(),
        None => "The game is over.".into(),
    }
}

pub fn status(game_id: String, seat: u32, v: &Value) -> ActionStatus {
    let pending = v["action_pending"].as_bool().unwrap_or(false);
    let over = v["game_over"].as_bool().unwrap_or(false);
    let winner = u(&v["winner"]);
    let timeout = v["timeout"].as_bool();
    let passed = u(&v["actions_passed"]);
    let mut text = if over {
        outcome(winner, seat)
    } else if pending {
        format!(
            "Your decision ({}): {}\nNext: `cards_get_action_choices`, then `cards_choose_action`.",
            v["action_type"].as_str().unwrap_or("?"),
            v["message"].as_str().unwrap_or("")
        )
    } else if timeout == Some(true) {
        "Nothing for you yet (the wait timed out). Call `cards_pass_priority` or `cards_wait_for_action` again.".into()
    } else {
        "No decision is due from you now. Call `cards_pass_priority` or `cards_wait_for_action`.".into()
    };
    if let Some(n) = passed.filter(|n| *n > 0) {
        text = format!("Passed priority {n} time(s).\n{text}");
    }
    ActionStatus {
        game_id,
        seat,
        action_pending: pending,
        action_type: s(&v["action_type"]),
        message: s(&v["message"]),
        game_over: over,
        winner,
        timeout,
        actions_passed: passed,
        has_playable_cards: v["has_playable_cards"].as_bool(),
        text,
    }
}

/// A status for a wait the host cut short; the backend call stays in flight.
/// What the agent reads when the host's wait ran out first; `notice` is what
/// the backend last said it is busy with (its first-use install).
pub fn still_waiting(game_id: String, seat: u32, notice: Option<&str>) -> ActionStatus {
    let v = serde_json::json!({"action_pending": false, "game_over": false, "timeout": true});
    let mut st = status(game_id, seat, &v);
    let doing = notice.map_or_else(|| "the first game installs the rules engine, which takes a while".to_string(), str::to_string);
    st.message = notice.map(str::to_string);
    st.text = format!("Still waiting for the game ({doing}). Call `cards_wait_for_action` with this game_id.");
    st
}

pub fn choices(game_id: String, v: &Value) -> ActionChoices {
    let list: Vec<Choice> = v["choices"]
        .as_array()
        .map(|c| {
            c.iter()
                .enumerate()
                .map(|(n, c)| Choice {
                    index: u(&c["index"]).unwrap_or(n as u32),
                    description: c["description"].as_str().map(String::from).unwrap_or_else(|| c.to_string()),
                })
                .collect()
        })
        .unwrap_or_default();
    let pending = v["action_pending"].as_bool().unwrap_or(false);
    let kind = s(&v["response_type"]);
    let can_pass = v["can_pass"].as_bool().unwrap_or(false);
    let mut text = match (&kind, pending) {
        (_, false) => "No decision is due from you now. Call `cards_pass_priority` or `cards_wait_for_action`.".to_string(),
        (Some(k), true) => format!("{}\n({k} decision)", v["message"].as_str().unwrap_or("")),
        (None, true) => v["message"].as_str().unwrap_or("").to_string(),
    };
    for c in &list {
        text.push_str(&format!("\n{}: {}", c.index, c.description));
    }
    if pending {
        let how = match kind.as_deref() {
            Some("boolean") => "Answer with `cards_choose_action` and `answer` true or false.".to_string(),
            Some("amount") => format!("Answer with `amount` from {} to {}.", v["min"], v["max"]),
            Some("pile") => "Answer with `pile` 1 or 2.".into(),
            Some("multi_amount") => "Answer with `amounts`.".into(),
            _ => "Answer with `cards_choose_action` and the `index` of your choice.".into(),
        };
        let pass = if can_pass && kind.as_deref() != Some("boolean") { " `answer: false` passes, cancels or confirms." } else { "" };
        text.push_str(&format!("\n{how}{pass}"));
    }
    let cx = &v["context"];
    ActionChoices {
        game_id,
        action_pending: pending,
        action_type: s(&v["action_type"]),
        message: s(&v["message"]),
        response_type: kind,
        choices: list,
        min: v["min"].as_i64(),
        max: v["max"].as_i64(),
        can_pass,
        hand: strings(&v["hand"]),
        context: cx.is_object().then(|| TurnContext {
            turn: u(&cx["turn"]).unwrap_or(0),
            phase: cx["phase"].as_str().unwrap_or("").into(),
            step: cx["step"].as_str().unwrap_or("").into(),
            active_player: u(&cx["active_player"]),
        }),
        game_over: v["game_over"].as_bool().unwrap_or(false),
        text,
    }
}

pub fn state(game_id: String, v: &Value) -> GameState {
    let players: Vec<PlayerView> = list(&v["players"], |p| PlayerView {
        seat: u(&p["seat"]).unwrap_or(0),
        you: p["you"].as_bool().unwrap_or(false),
        life: i(&p["life"]).unwrap_or(0),
        hand_size: u(&p["hand_size"]).unwrap_or(0),
        library_size: u(&p["library_size"]).unwrap_or(0),
        graveyard: strings(&p["graveyard"]),
        hand: list(&p["hand"], |c| CardRef { object_id: u(&c["object_id"]).unwrap_or(0), name: c["name"].as_str().unwrap_or("").into() }),
    });
    let battlefield: Vec<Permanent> = list(&v["battlefield"], |o| Permanent {
        object_id: u(&o["object_id"]).unwrap_or(0),
        name: o["name"].as_str().unwrap_or("").into(),
        controller: u(&o["controller"]).unwrap_or(0),
        tapped: o["tapped"].as_bool().unwrap_or(false),
        power: i(&o["power"]),
        toughness: i(&o["toughness"]),
        damage: i(&o["damage"]),
        loyalty: i(&o["loyalty"]),
        attached_to: u(&o["attached_to"]),
    });
    let stack: Vec<String> = list(&v["stack"], |e| e["name"].as_str().map(String::from).unwrap_or_else(|| e.to_string()));
    let mut text = format!("Turn {} ({}).", v["turn"], v["phase"].as_str().unwrap_or(""));
    for p in &players {
        let who = if p.you { "You" } else { "Opponent" };
        text.push_str(&format!(
            "\n{who} (seat {}): {} life, {} cards in hand, {} in library.",
            p.seat, p.life, p.hand_size, p.library_size
        ));
        if p.you && !p.hand.is_empty() {
            text.push_str(&format!(" Hand: {}.", p.hand.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")));
        }
        let own: Vec<String> = battlefield
            .iter()
            .filter(|o| o.controller == p.seat)
            .map(|o| match (o.power, o.toughness) {
                (Some(pw), Some(t)) => format!("{} {pw}/{t}{}", o.name, if o.tapped { " (tapped)" } else { "" }),
                _ => format!("{}{}", o.name, if o.tapped { " (tapped)" } else { "" }),
            })
            .collect();
        if !own.is_empty() {
            text.push_str(&format!(" Battlefield: {}.", own.join(", ")));
        }
    }
    if !stack.is_empty() {
        text.push_str(&format!("\nStack: {}.", stack.join(", ")));
    }
    let over = v["game_over"].as_bool().unwrap_or(false);
    let winner = u(&v["winner"]);
    if over {
        let me = players.iter().find(|p| p.you).map_or(u32::MAX, |p| p.seat);
        text.push_str(&format!("\n{}", outcome(winner, me)));
    }
    GameState {
        game_id,
        turn: u(&v["turn"]).unwrap_or(0),
        phase: v["phase"].as_str().unwrap_or("").into(),
        active_player: u(&v["active_player"]),
        players,
        battlefield,
        stack,
        game_over: over,
        winner,
        text,
    }
}

pub fn oracle(v: &Value) -> Oracle {
    let name = v["name"].as_str().unwrap_or("").to_string();
    let oracle_text =
        v["oracle_text"].as_str().map(String::from).unwrap_or_else(|| v.as_str().map(String::from).unwrap_or_else(|| v.to_string()));
    Oracle { text: oracle_text.clone(), name, oracle_text }
}
