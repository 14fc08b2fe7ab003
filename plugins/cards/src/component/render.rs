//! What the agent reads: the backend's answers (XMage's shapes) as typed
//! records, each with a short text that says what to do next. Missing fields
//! read as empty, so a backend that says less still renders.

use serde_json::Value;

use super::bindings::exports::ludus::cards::tools::{
    ActionChoices, ActionStatus, AmountItem, Choice, Counter, GameLog, GameState, HandCard, Oracle, Permanent, PlayerView, SeatSummary,
    TurnContext,
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

/// An object id as the agent passes it back: a string (XMage's are UUIDs,
/// phase's numbers).
fn id(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn counters(v: &Value) -> Vec<Counter> {
    v.as_object().map(|o| o.iter().map(|(name, n)| Counter { name: name.clone(), count: u(n).unwrap_or(0) }).collect()).unwrap_or_default()
}

fn hand_card(c: &Value) -> HandCard {
    HandCard {
        object_id: id(&c["object_id"]).unwrap_or_default(),
        name: c["name"].as_str().unwrap_or("").into(),
        mana_cost: s(&c["mana_cost"]),
        mana_value: u(&c["mana_value"]).unwrap_or(0),
        is_land: c["is_land"].as_bool().unwrap_or(false),
        power: s(&c["power"]),
        toughness: s(&c["toughness"]),
        playable: c["playable"].as_bool().unwrap_or(false),
    }
}

fn permanent(o: &Value) -> Permanent {
    Permanent {
        object_id: id(&o["object_id"]).unwrap_or_default(),
        name: o["name"].as_str().unwrap_or("").into(),
        controller: u(&o["controller"]).unwrap_or(0),
        types: o["types"].as_str().unwrap_or("").into(),
        tapped: o["tapped"].as_bool().unwrap_or(false),
        power: i(&o["power"]),
        toughness: i(&o["toughness"]),
        damage: i(&o["damage"]),
        loyalty: i(&o["loyalty"]),
        counters: counters(&o["counters"]),
        summoning_sickness: o["summoning_sickness"].as_bool().unwrap_or(false),
        attached_to: id(&o["attached_to"]),
    }
}

fn context(cx: &Value) -> TurnContext {
    TurnContext {
        turn: u(&cx["turn"]).unwrap_or(0),
        phase: cx["phase"].as_str().unwrap_or("").into(),
        step: cx["step"].as_str().unwrap_or("").into(),
        active_player: u(&cx["active_player"]),
        priority_player: u(&cx["priority_player"]),
        is_my_main_phase: cx["is_my_main_phase"].as_bool().unwrap_or(false),
        players: list(&cx["players"], |p| SeatSummary {
            seat: u(&p["seat"]).unwrap_or(0),
            name: p["name"].as_str().unwrap_or("").into(),
            life: i(&p["life"]).unwrap_or(0),
            is_you: p["is_you"].as_bool().unwrap_or(false),
        }),
    }
}

fn outcome(winner: Option<u32>, seat: u32) -> String {
    match winner {
        Some(w) if w == seat => "The game is over: you won.".into(),
        Some(_) => "The game is over: you lost.".into(),
        None => "The game is over.".into(),
    }
}

pub fn status(game_id: String, seat: u32, v: &Value, decision: u32) -> ActionStatus {
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
    let new_log = s(&v["new_log"]);
    if let Some(news) = new_log.as_deref().filter(|l| !l.is_empty()) {
        text = format!("Meanwhile:\n{news}\n{text}");
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
        event_occurred: v["event_occurred"].as_bool(),
        new_chars: new_log.as_ref().map(|l| l.chars().count() as u32),
        new_log,
        actions_taken: u(&v["actions_taken"]),
        wait_cap_ms: None,
        decision,
        text,
    }
}

/// A status for a wait the host cut short; the backend call stays in flight.
/// What the agent reads when the host's wait ran out first; `notice` is what
/// the backend last said it is busy with (its first-use install).
pub fn still_waiting(game_id: String, seat: u32, notice: Option<&str>, decision: u32) -> ActionStatus {
    let v = serde_json::json!({"action_pending": false, "game_over": false, "timeout": true});
    let mut st = status(game_id, seat, &v, decision);
    let doing = notice.map_or_else(|| "the first game installs the rules engine, which takes a while".to_string(), str::to_string);
    st.message = notice.map(str::to_string);
    st.text = format!("Still waiting for the game ({doing}). Call `cards_wait_for_action` with this game_id.");
    st
}

pub fn choices(game_id: String, seat: u32, v: &Value, decision: u32) -> ActionChoices {
    let offered: Vec<Choice> = v["choices"]
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
    let over = v["game_over"].as_bool().unwrap_or(false);
    let mut text = match (&kind, pending) {
        _ if over => outcome(u(&v["winner"]), seat),
        (_, false) => "No decision is due from you now. Call `cards_pass_priority` or `cards_wait_for_action`.".to_string(),
        (Some(k), true) => format!("{}\n({k} decision)", v["message"].as_str().unwrap_or("")),
        (None, true) => v["message"].as_str().unwrap_or("").to_string(),
    };
    for c in &offered {
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
        choices: offered,
        min: v["min"].as_i64(),
        max: v["max"].as_i64(),
        can_pass,
        required: v["required"].as_bool(),
        can_cancel: v["can_cancel"].as_bool(),
        pile1: v["pile1"].is_array().then(|| strings(&v["pile1"])),
        pile2: v["pile2"].is_array().then(|| strings(&v["pile2"])),
        items: list(&v["items"], |it| AmountItem {
            description: it["description"].as_str().unwrap_or("").into(),
            min: it["min"].as_i64().unwrap_or(0),
            max: it["max"].as_i64().unwrap_or(0),
            default: it["default"].as_i64().unwrap_or(0),
        }),
        your_hand: list(&v["your_hand"], hand_card),
        land_count: u(&v["land_count"]),
        hand_size: u(&v["hand_size"]),
        context: cx.is_object().then(|| context(cx)),
        game_over: over,
        decision,
        text,
    }
}

pub fn state(game_id: String, v: &Value, decision: u32) -> GameState {
    let players: Vec<PlayerView> = list(&v["players"], |p| PlayerView {
        seat: u(&p["seat"]).unwrap_or(0),
        name: p["name"].as_str().unwrap_or("").into(),
        you: p["you"].as_bool().unwrap_or(false),
        is_active: p["is_active"].as_bool().unwrap_or(false),
        life: i(&p["life"]).unwrap_or(0),
        hand_size: u(&p["hand_size"]).unwrap_or(0),
        library_size: u(&p["library_size"]).unwrap_or(0),
        graveyard: strings(&p["graveyard"]),
        hand: list(&p["hand"], hand_card),
        battlefield: list(&p["battlefield"], permanent),
        counters: counters(&p["counters"]),
    });
    let stack: Vec<String> = list(&v["stack"], |e| e["name"].as_str().map(String::from).unwrap_or_else(|| e.to_string()));
    let active = u(&v["active_player"]);
    let whose = match active.and_then(|a| players.iter().find(|p| p.seat == a)) {
        Some(p) if p.you => "your turn".to_string(),
        Some(p) => format!("{}'s turn", p.name),
        None => "no one's turn".into(),
    };
    let mut text = format!("Turn {}, {whose} ({}, {}).", v["turn"], v["phase"].as_str().unwrap_or(""), v["step"].as_str().unwrap_or(""));
    for p in &players {
        let who = if p.you { "You".to_string() } else { format!("Opponent, {}", p.name) };
        text.push_str(&format!(
            "\n{who} (seat {}): {} life, {} cards in hand, {} in library.",
            p.seat, p.life, p.hand_size, p.library_size
        ));
        if p.you && !p.hand.is_empty() {
            let hand: Vec<String> = p.hand.iter().map(|c| format!("{}{}", c.name, if c.playable { " (playable)" } else { "" })).collect();
            text.push_str(&format!(" Hand: {}.", hand.join(", ")));
        }
        let own: Vec<String> = p
            .battlefield
            .iter()
            .map(|o| {
                let pt = match (o.power, o.toughness) {
                    (Some(pw), Some(t)) => format!(" {pw}/{t}"),
                    _ => String::new(),
                };
                let sick = if o.summoning_sickness { ", summoning sick" } else { "" };
                format!("{} (#{}){pt}{}{sick}", o.name, o.object_id, if o.tapped { ", tapped" } else { "" })
            })
            .collect();
        if !own.is_empty() {
            text.push_str(&format!(" Battlefield: {}.", own.join("; ")));
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
        step: v["step"].as_str().unwrap_or("").into(),
        active_player: active,
        priority_player: u(&v["priority_player"]),
        players,
        stack,
        game_over: over,
        winner,
        decision,
        text,
    }
}

pub fn oracle(v: &Value) -> Oracle {
    let name = v["name"].as_str().unwrap_or("").to_string();
    let rules = strings(&v["rules"]);
    let oracle_text = v["oracle_text"].as_str().map(String::from).unwrap_or_else(|| rules.join("\n"));
    Oracle {
        success: v["success"].as_bool().unwrap_or(!name.is_empty()),
        source: v["source"].as_str().unwrap_or("database").into(),
        name,
        rules,
        set_code: s(&v["set_code"]),
        card_number: s(&v["card_number"]),
        object_id: id(&v["object_id"]),
        oracle_text,
    }
}

/// The visible log, or its last `max_chars` characters (0 or none: all). Cut
/// here too: a finished game answers from the final log it kept.
pub fn game_log(v: &Value, max_chars: Option<u32>) -> GameLog {
    let mut log = v["log"].as_str().map(String::from).unwrap_or_else(|| v.as_str().unwrap_or("").to_string());
    let total = u(&v["total_length"]).unwrap_or(log.chars().count() as u32);
    if let Some(max) = max_chars.filter(|m| *m > 0)
        && let Some((cut, _)) = log.char_indices().rev().nth(max as usize - 1)
    {
        log = log[cut..].to_string();
    }
    let returned = log.chars().count() as u32;
    GameLog { log, total_length: total, returned_length: returned, truncated: returned < total }
}
