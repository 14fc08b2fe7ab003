//! The built-in opponents of offline battles. They choose from the legal
//! actions of their own request, seeing the battle as a player would.

use crate::battle::Battle;
use crate::data::{Category, data};
use crate::engine::{self, Settings, first_best};
use crate::request::{Action, Kind, Request, TeamMember};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Bot {
    /// Any legal action, uniformly.
    Random,
    /// The strongest expected hit (power, STAB, type effectiveness, accuracy,
    /// attack against estimated defence); switches out of hopeless match-ups
    /// and sends in the best attacker after a faint.
    Heuristic,
    /// poke-engine's expectiminimax two turns ahead, the opponent's hidden
    /// sets guessed from the random-battle pool (`engine`); the heuristic
    /// where the engine cannot score (team preview, Revival Blessing).
    Search,
}

/// The bot's choice for the simulator: one action in singles, one per
/// open position in doubles and triples (never the same switch twice).
pub fn choice(bot: Bot, request: &Request, battle: &Battle, rng: &mut Rng) -> Option<String> {
    if request.positions() == 1 {
        return choose(bot, request, battle, rng).map(|a| a.choice);
    }
    let evaluation = match bot {
        Bot::Search => engine::evaluate_positions(battle, request, Settings::default()).ok(),
        _ => None,
    };
    let mut picked: Vec<Action> = Vec::new();
    for pos in request.open_positions() {
        let free: Vec<Action> = request.position_actions(pos).into_iter().filter(|a| request.conflict(a, &picked).is_none()).collect();
        let pick = match bot {
            Bot::Random => free.get(rng.below(free.len().max(1))).cloned(),
            // The search's best for this position (its pairings' scores).
            Bot::Search if evaluation.is_some() => {
                let e = evaluation.as_ref()?;
                let scored = |a: &Action| e.actions.iter().find(|s| s.position == pos && s.action == a.name).map(|s| f64::from(s.value));
                first_best(free.iter().filter_map(|a| Some((scored(a)?, a)))).map(|(_, a)| a.clone())
            }
            // Each position's hardest expected hit on the target it names.
            Bot::Heuristic | Bot::Search => {
                let value = |a: &Action| match (a.kind, request.side.pokemon.get(pos)) {
                    (Kind::Move, Some(member)) => {
                        let id = request.active.get(pos).and_then(|s| s.moves.get(a.index)).map_or("", |m| m.id.as_str());
                        let foe = a.target.filter(|&t| t > 0).and_then(|t| target_at(battle, t as usize - 1));
                        hit(member, id, None, foe.as_ref()) * if a.target.is_some_and(|t| t < 0) { -1.0 } else { 1.0 }
                    }
                    _ => 0.0,
                };
                first_best(free.iter().map(|a| (value(a), a))).map(|(_, a)| a.clone())
            }
        };
        // Nothing left for this position: the simulator's own default choice.
        let Some(pick) = pick else { return Some("default".into()) };
        picked.push(pick);
    }
    Some(request.assemble(picked).choice)
}

pub fn choose(bot: Bot, request: &Request, battle: &Battle, rng: &mut Rng) -> Option<Action> {
    let actions = request.actions();
    if actions.is_empty() {
        return None;
    }
    match bot {
        Bot::Random => Some(actions[rng.below(actions.len())].clone()),
        Bot::Heuristic => Some(heuristic(&actions, request, battle)),
        Bot::Search => Some(match engine::evaluate_actions(battle, request, Settings::default()) {
            Ok(e) => e
                .best()
                .and_then(|s| actions.iter().find(|a| a.name == s.action))
                .cloned()
                .unwrap_or_else(|| heuristic(&actions, request, battle)),
            Err(_) => heuristic(&actions, request, battle),
        }),
    }
}

/// What we know of the opponent's active Pokémon: types, level, base stats.
struct Target {
    types: Vec<String>,
    level: u32,
    base: [u32; 6],
}

fn target(battle: &Battle) -> Option<Target> {
    target_of(battle.their_side()?.active()?)
}

/// The opponent's Pokémon at active position `pos` (0-based).
fn target_at(battle: &Battle, pos: usize) -> Option<Target> {
    target_of(battle.their_side()?.at(pos)?)
}

fn target_of(mon: &crate::battle::Mon) -> Option<Target> {
    let species = data().species(&mon.species)?;
    let types = match &mon.tera {
        Some(t) => vec![t.clone()],
        None => species.types.clone(),
    };
    Some(Target { types, level: mon.level.max(1), base: species.base })
}

/// A random-battle stat estimate (31 IVs, 84 EVs, neutral nature).
fn stat(base: u32, level: u32) -> f64 {
    f64::from((2 * base + 31 + 21) * level / 100 + 5)
}

/// Expected damage, up to a constant, of `member` using move `id` on `target`.
fn hit(member: &TeamMember, id: &str, tera: Option<&str>, target: Option<&Target>) -> f64 {
    let d = data();
    let Some(m) = d.move_(id) else { return 0.0 };
    if m.category == Category::Status {
        return 0.0;
    }
    let own_types = d.species(member.species()).map(|s| s.types.clone()).unwrap_or_default();
    let tera_now = member.terastallized.as_deref().filter(|t| !t.is_empty());
    let stab_types: Vec<&str> = own_types.iter().map(String::as_str).chain(tera_now).chain(tera).collect();
    let matches = stab_types.iter().filter(|t| **t == m.kind).count();
    let stab = match matches {
        0 => 1.0,
        1 => 1.5,
        _ => 2.0,
    };
    let power = if m.base_power == 0 { 60.0 } else { f64::from(m.base_power) };
    let (attack, defence) = match (m.category, target) {
        (Category::Physical, Some(t)) => (member.stats.get("atk"), stat(t.base[2], t.level)),
        (_, Some(t)) => (member.stats.get("spa"), stat(t.base[4], t.level)),
        (Category::Physical, None) => (member.stats.get("atk"), 200.0),
        (_, None) => (member.stats.get("spa"), 200.0),
    };
    let attack = attack.copied().unwrap_or(200) as f64;
    let effectiveness = target.map_or(1.0, |t| d.effectiveness(&m.kind, &t.types));
    power * stab * effectiveness * f64::from(m.accuracy) / 100.0 * attack / defence.max(1.0)
}

/// The best hit a team member has on the target, from its known moves.
fn best_hit(member: &TeamMember, target: Option<&Target>) -> f64 {
    member.moves.iter().map(|id| hit(member, id, None, target)).fold(0.0, f64::max)
}

/// How hard the target's own types hit `member` (lower is safer).
fn danger(member: &TeamMember, target: Option<&Target>) -> f64 {
    let (Some(t), Some(s)) = (target, data().species(member.species())) else { return 1.0 };
    t.types.iter().map(|ty| data().effectiveness(ty, &s.types)).fold(0.0, f64::max)
}

fn heuristic(actions: &[Action], request: &Request, battle: &Battle) -> Action {
    let target = target(battle);
    let t = target.as_ref();
    let members = &request.side.pokemon;
    let switch_value = |a: &Action| members.get(a.index).map_or(0.0, |m| best_hit(m, t) / danger(m, t).max(0.25));
    let best_by = |f: &dyn Fn(&Action) -> f64, kind: Kind| first_best(actions.iter().filter(|a| a.kind == kind).map(|a| (f(a), a)));
    let active = request.active_member();
    let move_value = |a: &Action| {
        let Some(member) = active else { return 0.0 };
        let slot = request.active.first().and_then(|s| s.moves.get(a.index));
        let id = slot.map(|m| m.id.as_str()).unwrap_or("");
        let tera = a.name.ends_with("-tera").then(|| request.active.first().and_then(|s| s.can_terastallize.as_deref())).flatten();
        // Terastallizing is worth it only for a clearly better hit.
        hit(member, id, tera, t) * if tera.is_some() { 0.9 } else { 1.0 }
    };
    let best_move = best_by(&move_value, Kind::Move);
    let best_switch = best_by(&switch_value, Kind::Switch);
    match (best_move, best_switch) {
        (Some((mv, m)), Some((sv, s))) => {
            let current = active.map_or(0.0, |a| mv / danger(a, t).max(0.25));
            if current * 3.0 < sv { s.clone() } else { m.clone() }
        }
        (Some((_, m)), None) => m.clone(),
        (None, Some((_, s))) => s.clone(),
        (None, None) => actions[0].clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn battle_against(species: &str) -> Battle {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        b.on_log(&format!("|switch|p2a: X|{species}, L80|100/100"));
        b
    }

    const REQ: &str = r#"{"active":[{"moves":[
        {"move":"Thunderbolt","id":"thunderbolt","pp":24,"disabled":false},
        {"move":"Surf","id":"surf","pp":24,"disabled":false},
        {"move":"Grass Knot","id":"grassknot","pp":24,"disabled":false}]}],
      "side":{"id":"p1","pokemon":[
        {"ident":"p1: Raichu","details":"Raichu, L90","condition":"200/200","active":true,"stats":{"atk":200,"spa":250},"moves":["thunderbolt","surf","grassknot"]},
        {"ident":"p1: Garchomp","details":"Garchomp, L80","condition":"250/250","active":false,"stats":{"atk":300,"spa":150},"moves":["earthquake","outrage"]}]}}"#;

    #[test]
    fn heuristic_picks_the_best_hit_and_switches_out_of_walls() {
        let r = Request::parse(REQ).unwrap();
        let mut rng = Rng::new(1);
        assert_eq!(choose(Bot::Heuristic, &r, &battle_against("Gyarados"), &mut rng).unwrap().name, "thunderbolt");
        assert_eq!(choose(Bot::Heuristic, &r, &battle_against("Golem"), &mut rng).unwrap().name, "surf");
        // Against a Ground/Dragon wall Raichu's best is weak; Garchomp's Outrage is far better.
        let pick = choose(Bot::Heuristic, &r, &battle_against("Flygon"), &mut rng).unwrap();
        assert_eq!(pick.name, "switch garchomp");
    }

    #[test]
    fn random_is_reproducible() {
        let r = Request::parse(REQ).unwrap();
        let b = battle_against("Gyarados");
        let run =
            |seed| (0..20).map(|_| 0).scan(Rng::new(seed), |rng, _| choose(Bot::Random, &r, &b, rng).map(|a| a.name)).collect::<Vec<_>>();
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }
}
