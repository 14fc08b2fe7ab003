//! The answers an agent reads: its own view only, or the public view for
//! someone watching. Nothing here reads another seat's view.

use super::bindings::exports::ludus::openspiel::tools::{Action, Evaluation, SeatHolder, Turn};
use super::game::{Game, now_ms};

/// At most this many actions are listed in the text (all are in `legal-actions`).
const SHOWN_ACTIONS: usize = 40;
/// The last this many history lines are in the text (all are in `history`).
const SHOWN_HISTORY: usize = 12;

pub fn actions(legal: &[(i64, String)]) -> Vec<Action> {
    legal.iter().map(|(number, text)| Action { text: text.clone(), number: *number }).collect()
}

/// The game for `caller`: a player sees its seat's view, anyone else the public one.
pub fn turn(g: &Game, caller: &str, note: &str) -> Turn {
    let game_id = ludus_sdk::session_id().unwrap_or_default();
    let seat = g.seat_of(caller);
    let snap = g.snap.clone().unwrap_or_default();
    let view = seat.and_then(|s| snap.views.get(s).cloned()).unwrap_or_default();
    let to_move = snap.to_move();
    let your_turn = seat.is_some() && to_move.is_some_and(|m| g.seats_of(caller).contains(&m));
    let legal = match (your_turn, seat) {
        (true, Some(s)) => actions(snap.legal(s)),
        _ => Vec::new(),
    };
    let history = snap.history_lines();
    let history_actions = history.as_ref().map(|_| snap.history.clone());
    let seats: Vec<SeatHolder> = g.seats.iter().enumerate().map(|(i, s)| SeatHolder { seat: i as u32, holder: s.shown(caller) }).collect();

    // A move's score tells of its seat's cards: shown to that seat alone.
    let last_move = g.link.last_scored.filter(|s| g.seats_of(caller).contains(&s.seat));
    let mut text = String::new();
    let who = match seat {
        Some(s) => format!("you are seat {s}"),
        None => "you are watching".to_string(),
    };
    text.push_str(&format!("{} ({} seats: {}) — {who}.\n", g.name, g.seats.len(), holders(&seats)));
    if !note.is_empty() {
        text.push_str(note);
        text.push('\n');
    }
    if g.snap.is_none() {
        let busy = g.link.notice.as_ref().map(|(n, since)| format!(" ({n}; {} s so far)", now_ms().saturating_sub(*since) / 1000));
        text.push_str(&format!("OpenSpiel is starting the game{}. Call `openspiel_wait_for_turn`.", busy.unwrap_or_default()));
    } else if snap.over {
        let returns = snap.returns.as_ref().map(|r| r.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(", ")).unwrap_or_default();
        text.push_str(&format!("The game is over. Returns by seat: {returns}.\n"));
    } else if your_turn {
        text.push_str(&format!("Your turn (decision {}).\n", g.decision_due()));
    } else if let Some(m) = to_move {
        let waiting = if g.seats[m] == crate::seats::Seat::Open { " (an open seat: the game waits for an agent to join)" } else { "" };
        text.push_str(&format!("Seat {m} is to move{waiting}; call `openspiel_wait_for_turn`.\n"));
    }
    if let Some(s) = &last_move {
        text.push_str(&format!(
            "Your last move: worth {:+.3} against the equilibrium (the best action there {:+.3}; optimality {:.2}).\n",
            s.value, s.best, s.optimality
        ));
    }
    if let Some(obs) = &view.observation {
        text.push_str(&format!("Your observation:\n{}\n", obs.trim_end()));
    } else if seat.is_none()
        && let Some(public) = &snap.public
    {
        text.push_str(&format!("State:\n{}\n", public.state.trim_end()));
    }
    if let Some(info) = view.information_state.as_ref().filter(|i| Some(*i) != view.observation.as_ref()) {
        text.push_str(&format!("What you know: {}\n", info.trim_end()));
    }
    if snap.over
        && let Some(public) = &snap.public
    {
        text.push_str(&format!("Final state:\n{}\n", public.state.trim_end()));
    }
    if let Some(lines) = history.as_ref().filter(|l| !l.is_empty()) {
        let start = lines.len().saturating_sub(SHOWN_HISTORY);
        let more = if start > 0 { format!(" (last {SHOWN_HISTORY} of {})", lines.len()) } else { String::new() };
        text.push_str(&format!("Actions so far{more}: {}\n", lines[start..].join("; ")));
    }
    if !legal.is_empty() {
        let shown: Vec<String> = legal.iter().take(SHOWN_ACTIONS).map(|a| a.text.clone()).collect();
        let more = if legal.len() > SHOWN_ACTIONS {
            format!(" … and {} more (`openspiel_legal_actions`)", legal.len() - SHOWN_ACTIONS)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "Legal actions: {}{more}\nMove with `openspiel_move` (action, decision {}).",
            shown.join(", "),
            g.decision_due()
        ));
    }
    Turn {
        game_id,
        game: g.name.clone(),
        seat: seat.map(|s| s as u32),
        your_turn,
        game_over: snap.over,
        to_move: to_move.map(|m| m as u32),
        decision: g.decision_due(),
        observation: view.observation,
        information_state: view.information_state,
        legal_actions: legal,
        returns: snap.returns.clone(),
        history,
        history_actions,
        seats,
        last_move: last_move.map(|s| Evaluation { value: s.value, best: s.best, optimality: s.optimality }),
        text: text.trim_end().to_string(),
    }
}

fn holders(seats: &[SeatHolder]) -> String {
    seats.iter().map(|s| format!("{} {}", s.seat, s.holder)).collect::<Vec<_>>().join(", ")
}
