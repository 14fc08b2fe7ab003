//! What the agent reads: the Markdown overview every answer carries, one line
//! per Pokémon and per action, and the structured answers of the tools.

use super::bindings::exports::ludus::showdown::tools::{ActionScore, BattleState, MoveEvaluation, MoveResult, Pokemon};
use super::game::{Game, Status, battle_id};
use crate::battle::{Mon, status_name};
use crate::data::data;
use crate::request::{Kind, Request};

pub fn pokemon(m: &Mon) -> Pokemon {
    Pokemon {
        name: m.name.clone(),
        species: m.shown_species().to_string(),
        level: m.level,
        hp_percent: m.hp_percent,
        hp: m.hp.map(|(cur, _)| cur),
        max_hp: m.hp.map(|(_, max)| max).filter(|max| *max > 0),
        status: m.status.clone(),
        fainted: m.fainted,
        active: m.active,
        position: m.position.filter(|_| m.active).map(|p| p as u32 + 1),
        moves: m.moves.clone(),
        item: m.item.clone().filter(|i| !i.is_empty()),
        ability: m.ability.clone(),
        tera: m.tera.clone(),
        boosts: m.boosts.iter().filter(|(_, v)| **v != 0).map(|(k, v)| format!("{k}{v:+}")).collect(),
        volatiles: m.volatiles.clone(),
    }
}

pub fn move_names(ids: &[String]) -> String {
    ids.iter().map(|id| data().move_(id).map_or(id.clone(), |m| m.name.clone())).collect::<Vec<_>>().join(", ")
}

pub fn mon_line(m: &Mon) -> String {
    let mut s = format!("{} (L{}) {}%", m.shown_species(), m.level, m.hp_percent);
    if m.fainted {
        s = format!("{} (L{}) fainted", m.shown_species(), m.level);
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
    if !m.volatiles.is_empty() {
        s.push_str(&format!(", {}", m.volatiles.join(", ")));
    }
    s
}

/// What a move or switch does, in a line.
pub fn describe_action(req: Option<&Request>, a: &crate::request::Action) -> String {
    let Some(req) = req else { return String::new() };
    match a.kind {
        Kind::Switch | Kind::Team => req.side.pokemon.get(a.index).map(|p| format!("{} ({})", p.details, p.condition)).unwrap_or_default(),
        Kind::Move => {
            let slot = req.active.get(a.position).and_then(|s| s.moves.get(a.index));
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
            if a.name.contains("-tera") {
                let t = req.active.get(a.position).and_then(|s| s.can_terastallize.clone()).unwrap_or_default();
                s.push_str(&format!(", terastallizing into {t}"));
            }
            s
        }
    }
}

/// Whom an action's target position names, for its description.
pub fn target_line(g: &Game, a: &crate::request::Action) -> String {
    let Some(t) = a.target else { return String::new() };
    let (side, whose) = if t > 0 { (g.seat.battle.their_side(), "the opponent's") } else { (g.seat.battle.my_side(), "your") };
    let at = side.and_then(|s| s.at(t.unsigned_abs() as usize - 1)).map(|m| format!(" {}", m.shown_species())).unwrap_or_default();
    format!(" → {whose}{at} at position {}", t.abs())
}

pub fn available_list(g: &Game) -> String {
    let Some(req) = g.due() else { return "No action is available now.".into() };
    let actions = req.actions();
    if actions.is_empty() {
        return "No action is available now.".into();
    }
    let names = |p: Option<usize>| {
        actions.iter().filter(|a| p.is_none_or(|p| a.position == p)).map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
    };
    let open = req.open_positions();
    if req.positions() == 1 || open.is_empty() {
        return format!("Available actions: {}.", names(None));
    }
    let per: Vec<String> = open.iter().map(|&p| format!("position {}: {}", p + 1, names(Some(p)))).collect();
    format!(
        "Available actions, one for each position in order, separated by commas (e.g. `{}`): {}.",
        open.iter().filter_map(|&p| actions.iter().find(|a| a.position == p).map(|a| a.name.as_str())).collect::<Vec<_>>().join(", "),
        per.join("; ")
    )
}

pub fn next_step(g: &Game) -> String {
    if let Some(installing) = g.installing() {
        return format!("{installing} Call `showdown_get_battle_state` to wait for the battle.");
    }
    match &g.status {
        Status::Searching => "Searching for an opponent; call `showdown_get_battle_state` to wait.".into(),
        Status::Challenging if matches!(g.mode, super::game::Mode::Offline { .. }) => {
            "Waiting for another agent to join (`showdown_join_battle`); call `showdown_get_battle_state` to wait.".into()
        }
        Status::Challenging => "Waiting for the opponent to accept; call `showdown_get_battle_state` to wait.".into(),
        Status::Finished => "The battle is over.".into(),
        Status::Error(e) => format!("The battle failed: {e}"),
        Status::Active if g.seat.battle.over() => "The battle is over.".into(),
        Status::Active if g.due().is_some() => "Your move: call `showdown_make_move` with one of the available actions.".into(),
        Status::Active => "Waiting for the opponent; call `showdown_get_battle_state` to wait.".into(),
    }
}

pub fn result_line(g: &Game) -> Option<String> {
    if g.seat.battle.tie {
        return Some("The battle ended in a tie.".into());
    }
    let w = g.seat.battle.winner.as_ref()?;
    let mine = g.seat.battle.my_side().map(|s| s.player.as_str()) == Some(w.as_str());
    Some(if mine { "You won the battle!".to_string() } else { format!("{w} won the battle: you lost.") })
}

/// The Markdown overview every answer carries.
pub fn summary(g: &Game) -> String {
    let mut out = format!("**Battle {}** — turn {} ({})\n", battle_id(), g.seat.battle.turn, g.status.label());
    if let Some(r) = result_line(g) {
        out.push_str(&format!("\n**{r}**\n"));
    }
    let doubles =
        g.seat.battle.my_side().is_some_and(|s| s.actives().len() > 1) || g.seat.battle.their_side().is_some_and(|s| s.actives().len() > 1);
    let at = |m: &Mon| if doubles { format!(" at position {}", m.position.unwrap_or(0) + 1) } else { String::new() };
    for m in g.seat.battle.my_side().map(|s| s.actives()).unwrap_or_default() {
        out.push_str(&format!("\nYour active{}: {}", at(m), mon_line(m)));
    }
    out.push('\n');
    for m in g.seat.battle.their_side().map(|s| s.actives()).unwrap_or_default() {
        out.push_str(&format!("Opponent's active{}: {}\n", at(m), mon_line(m)));
        if !m.moves.is_empty() {
            out.push_str(&format!("Its revealed moves: {}\n", move_names(&m.moves)));
        }
    }
    let field = field(g);
    if g.seat.battle.weather.is_some() || !field.is_empty() {
        let all: Vec<&str> = g.seat.battle.weather.iter().map(String::as_str).chain(field.iter().map(String::as_str)).collect();
        out.push_str(&format!("Field: {}\n", all.join(", ")));
    }
    if let Some(side) = g.seat.battle.my_side() {
        let bench: Vec<String> = side.mons.iter().filter(|m| !m.active).map(mon_line).collect();
        if !bench.is_empty() {
            out.push_str(&format!("Your bench: {}\n", bench.join("; ")));
        }
    }
    let events: Vec<&String> = g.seat.battle.previous_turn.iter().chain(&g.seat.battle.recent).collect();
    if !events.is_empty() {
        out.push_str("\nRecent events:\n");
        for e in events.iter().rev().take(14).rev() {
            out.push_str(&format!("- {e}\n"));
        }
    }
    if let Some((_, _, why)) = &g.seat.rejected {
        out.push_str(&format!("\nYour last choice was refused: {why}\n"));
    }
    if g.due().is_some() {
        out.push_str(&format!("\n{}\n", available_list(g)));
    }
    out.push_str(&format!("\nNext: {}", next_step(g)));
    out
}

/// Field effects, then each side's conditions with their layers
/// (`Spikes ×2 (opponent's side)`).
fn field(g: &Game) -> Vec<String> {
    let mut field = g.seat.battle.fields.clone();
    for (label, s) in [("your side", g.seat.battle.my_side()), ("opponent's side", g.seat.battle.their_side())] {
        let conditions = s.map(|s| s.conditions.as_slice()).unwrap_or_default();
        let mut seen: Vec<&String> = Vec::new();
        for c in conditions {
            if seen.contains(&c) {
                continue;
            }
            seen.push(c);
            match conditions.iter().filter(|x| *x == c).count() {
                1 => field.push(format!("{c} ({label})")),
                layers => field.push(format!("{c} ×{layers} ({label})")),
            }
        }
    }
    field
}

pub fn state(g: &Game) -> BattleState {
    let side = |s: Option<&crate::battle::SideView>| s.map(|s| s.mons.iter().map(pokemon).collect()).unwrap_or_default();
    BattleState {
        battle_id: battle_id(),
        status: g.status.label().into(),
        awaiting_decision: g.due().is_some(),
        decision: g.seat.battle.decision_seq as u32,
        turn: g.seat.battle.turn,
        time_left: g.seat.battle.timer.clone(),
        your_team: side(g.seat.battle.my_side()),
        opponent_team: side(g.seat.battle.their_side()),
        weather: g.seat.battle.weather.clone(),
        field: field(g),
        available_actions: g.due().map(|r| r.actions().into_iter().map(|a| a.name).collect()).unwrap_or_default(),
        recent_events: g.seat.battle.previous_turn.iter().chain(&g.seat.battle.recent).cloned().collect(),
        winner: g.seat.battle.winner.clone(),
        text: match &g.status {
            Status::Error(e) => format!("The battle failed: {e}"),
            _ => summary(g),
        },
    }
}

pub fn move_result(g: &Game, action: &str, at: Option<u64>) -> MoveResult {
    let evaluation = evaluation(g, at);
    // About the move just made, so before what is due next.
    let verdict = match (&evaluation, at) {
        (Ok(e), Some(d)) => format!(
            "Your `{action}` (decision {d}): optimality {:.2} (rank {} of {}); the search preferred `{}`.\n",
            e.optimality,
            e.rank,
            e.scores.len(),
            e.best_action
        ),
        (Err(why), Some(d)) => format!("Your `{action}` (decision {d}) was not scored: {why}.\n"),
        _ => String::new(),
    };
    MoveResult {
        battle_id: battle_id(),
        action: action.to_string(),
        status: g.status.label().into(),
        decision: at.unwrap_or(g.seat.battle.decision_seq) as u32,
        awaiting_decision: g.due().is_some(),
        turn: g.seat.battle.turn,
        recent_events: g.seat.battle.previous_turn.iter().chain(&g.seat.battle.recent).cloned().collect(),
        winner: g.seat.battle.winner.clone(),
        evaluation: evaluation.ok(),
        text: format!("{verdict}{}", summary(g)),
    }
}

/// The scorecard of the decision `at`, for the answer; the reason when there is none.
pub fn evaluation(g: &Game, at: Option<u64>) -> Result<MoveEvaluation, String> {
    let card = g.seat.scorecard.as_ref().filter(|c| Some(c.seq) == at).ok_or("no action of yours was scored")?;
    let e = card.evaluation.as_ref()?;
    let verdict = e.verdict(&card.action).ok_or("the action was not among the scored ones")?;
    let round = |x: f32| (f64::from(x) * 1000.0).round() / 1000.0;
    Ok(MoveEvaluation {
        optimality: round(verdict.optimality),
        best_action: e.best_decision(),
        regret: round(verdict.regret),
        rank: verdict.rank as u32,
        scores: e.actions.iter().map(|s| ActionScore { action: s.action.clone(), score: round(s.score) }).collect(),
        method: format!(
            "poke-engine expectiminimax, depth {}, {} over the opponent's replies, mean of {} seeded guesses of its hidden sets{}",
            e.settings.depth,
            match e.settings.rule {
                crate::engine::Rule::WorstCase => "worst case",
                crate::engine::Rule::Mean => "mean",
            },
            e.settings.samples,
            if e.searches > 1 {
                format!(
                    "; singles searches of each of our positions against each opposing active Pokémon ({} searches), a targeted move \
                     scored against its target, the others by the mean; the decision's optimality and regret average its positions'",
                    e.searches
                )
            } else {
                String::new()
            }
        ),
        millis: (card.millis * 10.0).round() / 10.0,
    })
}
