//! Scoring our legal actions with poke-engine (MIT). The battle as we see it
//! becomes a `poke_engine` state: our side exactly from the request, the
//! opponent's from what was revealed, with the rest drawn from the
//! random-battle generator's own pool. A fixed-depth expectiminimax search
//! scores each action by its worst case over the opponent's replies, averaged
//! over several seeded draws. Deterministic: the same battle, the same scores.
//!
//! The state is built field by field, never parsed from a string
//! (`State::deserialize` panics on bad input and a panic traps the
//! component); anything the engine cannot represent is refused with an error.

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use poke_engine::choices::{Choices, MOVES};
use poke_engine::engine::abilities::Abilities;
use poke_engine::engine::evaluate::evaluate;
use poke_engine::engine::items::Items;
use poke_engine::engine::state::{MoveChoice, PokemonVolatileStatus, Terrain, Weather};
use poke_engine::pokemon::PokemonName;
use poke_engine::search::expectiminimax_search;
use poke_engine::state::{
    Move, Pokemon, PokemonIndex, PokemonMoveIndex, PokemonMoves, PokemonStatus, PokemonType, Side, SideConditions, State, StateTerrain,
    StateTrickRoom, StateWeather,
};

use crate::battle::{Battle, Mon, SideView, level_of, parse_condition};
use crate::data::{RandomSet, data, to_id};
use crate::request::{Action, Kind, Request, TeamMember};
use crate::rng::Rng;

/// How hard to look.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Plies of expectiminimax (whole turns). Values swing with depth
    /// parity, so scores are only comparable at one fixed depth.
    pub depth: i8,
    /// Draws of the opponent's hidden information.
    pub samples: u32,
    /// How an action's row of outcomes (one per reply of the opponent) becomes its value.
    pub rule: Rule,
}

/// How the opponent's replies are weighed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// The reply that hurts most: safe, and pessimistic.
    WorstCase,
    /// Every reply alike.
    Mean,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { depth: 2, samples: 4, rule: Rule::WorstCase }
    }
}

/// One legal action and what the search thinks of it.
#[derive(Debug, Clone)]
pub struct Scored {
    pub action: String,
    /// The active position it is for (0 in singles).
    pub position: usize,
    /// Mean over samples of the worst case over the opponent's replies, in
    /// poke-engine's evaluation units (positive is good for us).
    pub value: f32,
    /// `value` relative to the current position on a 0–1 scale (poke-engine's
    /// own sigmoid: about ±200 points saturate); 0.5 is "no change".
    pub score: f32,
}

#[derive(Debug, Clone)]
pub struct Evaluation {
    /// Every legal action, in the order of `Request::actions`.
    pub actions: Vec<Scored>,
    pub settings: Settings,
    /// Singles searches it took: 1, or in doubles and triples one per
    /// pairing of our open positions with the opposing active Pokémon.
    pub searches: usize,
}

/// How one action compares with the best.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The action's score as a share of the best action's score (0–1).
    pub optimality: f32,
    /// Best score minus this action's score (0–1 scale).
    pub regret: f32,
    /// 1 for the best action.
    pub rank: usize,
}

impl Evaluation {
    /// The best action (of the first position scored: the only one in singles).
    pub fn best(&self) -> Option<&Scored> {
        self.best_at(self.actions.first()?.position)
    }

    /// The positions scored, from the left (one in singles).
    fn positions(&self) -> Vec<usize> {
        let mut p: Vec<usize> = self.actions.iter().map(|s| s.position).collect();
        p.dedup();
        p
    }

    /// The best action of each position, as a decision (`a` in singles,
    /// `a, b` in doubles).
    pub fn best_decision(&self) -> String {
        self.positions().iter().filter_map(|&p| self.best_at(p)).map(|s| s.action.as_str()).collect::<Vec<_>>().join(", ")
    }

    fn best_at(&self, position: usize) -> Option<&Scored> {
        first_best(self.actions.iter().filter(|s| s.position == position).map(|s| (f64::from(s.value), s))).map(|(_, s)| s)
    }

    /// How a decision compares with the best: in singles its one action
    /// against the others; in doubles and triples each position's action
    /// against that position's others, averaged (optimality and regret),
    /// rank 1 plus the actions scored above the chosen ones at their positions.
    pub fn verdict(&self, decision: &str) -> Option<Verdict> {
        let parts: Vec<&str> = decision.split(',').map(str::trim).collect();
        let positions = self.positions();
        if parts.len() != positions.len() {
            return None;
        }
        let (mut optimality, mut regret, mut rank) = (0.0, 0.0, 1);
        for (&p, part) in positions.iter().zip(&parts) {
            let chosen = self.actions.iter().find(|s| s.position == p && s.action == *part)?;
            let best = self.best_at(p)?.score;
            rank += self.actions.iter().filter(|s| s.position == p && s.value > chosen.value).count();
            optimality += if best > 0.0 { (chosen.score / best).clamp(0.0, 1.0) } else { 1.0 };
            regret += (best - chosen.score).max(0.0);
        }
        let n = parts.len() as f32;
        Some(Verdict { optimality: optimality / n, regret: regret / n, rank })
    }
}

/// The first item of the highest value (a tie keeps the earlier one), with its value.
pub fn first_best<T>(items: impl IntoIterator<Item = (f64, T)>) -> Option<(f64, T)> {
    items.into_iter().fold(None, |best, (v, item)| match best {
        Some((bv, _)) if bv >= v => best,
        _ => Some((v, item)),
    })
}

/// Doubles and triples, where poke-engine models singles: each of our open
/// positions is searched as a singles battle of that Pokémon (and our bench)
/// against each opposing active Pokémon in turn. A move aimed at one is
/// scored in the pairing with that one; a spread move, a move on our side
/// and a switch by the mean over the pairings. `searches` counts them.
pub fn evaluate_positions(battle: &Battle, request: &Request, settings: Settings) -> Result<Evaluation, String> {
    if request.team_preview {
        return Err("team preview is not scored".into());
    }
    let foes: Vec<usize> =
        (0..request.positions()).filter(|&t| battle.their_side().and_then(|s| s.at(t)).is_some_and(|m| !m.fainted)).collect();
    if foes.is_empty() {
        return Err("no opposing Pokémon is on the field".into());
    }
    let mut actions = Vec::new();
    let mut searches = 0;
    for pos in request.open_positions() {
        let single = singles_request(request, pos);
        let mut per_foe: Vec<(usize, Evaluation)> = Vec::new();
        for &t in &foes {
            per_foe.push((t, evaluate_actions(&pairing(battle, pos, t), &single, settings)?));
            searches += 1;
        }
        for a in request.position_actions(pos) {
            let name = a.name.split(' ').next().filter(|_| a.kind == Kind::Move).unwrap_or(&a.name);
            let in_pairing = |e: &Evaluation| e.actions.iter().find(|s| s.action == name).map(|s| (s.value, s.score));
            let aimed = a.target.filter(|&t| t > 0).map(|t| t as usize - 1).filter(|t| foes.contains(t));
            let found: Vec<(f32, f32)> =
                per_foe.iter().filter(|(t, _)| aimed.is_none_or(|a| a == *t)).filter_map(|(_, e)| in_pairing(e)).collect();
            if found.is_empty() {
                return Err(format!("`{}` cannot be scored by the engine", a.name));
            }
            let n = found.len() as f32;
            let (value, score) = found.iter().fold((0.0, 0.0), |(v, s), (fv, fs)| (v + fv / n, s + fs / n));
            actions.push(Scored { action: a.name.clone(), position: pos, value, score });
        }
    }
    Ok(Evaluation { actions, settings, searches })
}

/// The request as a singles request for our position `pos`: that Pokémon
/// active, the other active ones left out (they cannot be switched in).
fn singles_request(request: &Request, pos: usize) -> Request {
    let n = request.positions();
    let mut single = request.clone();
    single.active = request.active.get(pos).cloned().into_iter().collect();
    single.force_switch = request.force_switch.get(pos).map(|&f| vec![f]).unwrap_or_default();
    single.side.pokemon = request.side.pokemon.iter().enumerate().filter(|(i, _)| *i == pos || *i >= n).map(|(_, p)| p.clone()).collect();
    single
}

/// The battle as a singles battle of our position `pos` against their `foe`.
fn pairing(battle: &Battle, pos: usize, foe: usize) -> Battle {
    let mut b = battle.clone();
    let me = b.me.clone();
    for (side, view) in b.sides.iter_mut() {
        let keep = if *side == me { pos } else { foe };
        view.mons.retain(|m| !m.active || m.position == Some(keep));
    }
    b
}

/// Scores every legal action of `request` (our side) in `battle`.
pub fn evaluate_actions(battle: &Battle, request: &Request, settings: Settings) -> Result<Evaluation, String> {
    if battle.over() {
        return Err("the battle is over".into());
    }
    if request.team_preview {
        return Err("team preview is not scored".into());
    }
    if request.positions() > 1 {
        return Err(format!("the search (poke-engine) models singles and this battle has {} active Pokémon a side", request.positions()));
    }
    if request.side.pokemon.iter().any(|p| p.reviving) {
        return Err("Revival Blessing is not modelled by the engine".into());
    }
    let actions = request.actions();
    let ours: Vec<MoveChoice> = actions.iter().map(|a| root_choice(a, request)).collect::<Result<_, _>>()?;
    let samples = settings.samples.max(1);
    let depth = settings.depth.clamp(1, 4);
    let mut values = vec![0.0f32; actions.len()];
    let mut root = 0.0f32;
    for k in 0..samples {
        let mut rng = Rng::new(sample_seed(battle, k));
        let mut state = build_state(battle, request, &mut rng)?;
        let (_, mut theirs) = state.get_all_options();
        if theirs.is_empty() {
            theirs.push(MoveChoice::None);
        }
        root += evaluate(&state) / samples as f32;
        let matrix = expectiminimax_search(&mut state, depth, ours.clone(), theirs.clone(), false, &Arc::new(Mutex::new(true)));
        for (row, value) in values.iter_mut().enumerate() {
            let cells = matrix[row * theirs.len()..(row + 1) * theirs.len()].iter().copied().filter(|v| !v.is_nan());
            let row_value = match settings.rule {
                Rule::WorstCase => Some(cells.fold(f32::INFINITY, f32::min)).filter(|v| v.is_finite()),
                Rule::Mean => {
                    let (sum, n) = cells.fold((0.0, 0), |(s, n), v| (s + v, n + 1));
                    (n > 0).then(|| sum / n as f32)
                }
            };
            *value += row_value.unwrap_or(0.0) / samples as f32;
        }
    }
    let actions: Vec<Scored> = actions
        .iter()
        .zip(values)
        .map(|(a, value)| Scored { action: a.name.clone(), position: 0, value, score: sigmoid(value - root) })
        .collect();
    Ok(Evaluation { actions, settings: Settings { depth, samples, rule: settings.rule }, searches: 1 })
}

/// poke-engine's MCTS squashes evaluation differences with this curve.
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-0.0125 * x).exp())
}

/// The draws depend on the decision, not on when or how often we ask.
fn sample_seed(battle: &Battle, k: u32) -> u64 {
    battle.decision_seq.wrapping_mul(0x1000_0000_01b3) ^ (u64::from(battle.turn) << 32) ^ u64::from(k)
}

fn root_choice(action: &Action, request: &Request) -> Result<MoveChoice, String> {
    let moves = request.active.first().map_or(0, |s| s.moves.len());
    match action.kind {
        Kind::Move if action.name == "default" => Err("this request has no choices the engine can score".into()),
        Kind::Move if action.index < moves.min(4) => {
            let i = move_index(action.index);
            Ok(if action.name.ends_with("-tera") { MoveChoice::MoveTera(i) } else { MoveChoice::Move(i) })
        }
        Kind::Switch if action.index < 6 => Ok(MoveChoice::Switch(pokemon_index(action.index))),
        _ => Err(format!("`{}` cannot be scored by the engine", action.name)),
    }
}

fn move_index(i: usize) -> PokemonMoveIndex {
    [PokemonMoveIndex::M0, PokemonMoveIndex::M1, PokemonMoveIndex::M2, PokemonMoveIndex::M3][i.min(3)]
}

fn pokemon_index(i: usize) -> PokemonIndex {
    [PokemonIndex::P0, PokemonIndex::P1, PokemonIndex::P2, PokemonIndex::P3, PokemonIndex::P4, PokemonIndex::P5][i.min(5)]
}

/// One sample of the battle as a poke-engine state: we are side one.
pub fn build_state(battle: &Battle, request: &Request, rng: &mut Rng) -> Result<State, String> {
    let mut state = State { side_one: our_side(battle, request)?, side_two: their_side(battle, rng)?, ..State::default() };
    // How many turns weather, terrain and Trick Room have left is not in the
    // protocol: assume five.
    if let Some(w) = battle.weather.as_deref().and_then(weather) {
        state.weather = StateWeather { weather_type: w, turns_remaining: 5 };
    }
    for f in &battle.fields {
        if let Some(t) = terrain(f) {
            state.terrain = StateTerrain { terrain_type: t, turns_remaining: 5 };
        } else if f == "Trick Room" {
            state.trick_room = StateTrickRoom { active: true, turns_remaining: 5 };
        }
    }
    state.set_conditional_mechanics();
    Ok(state)
}

fn our_side(battle: &Battle, request: &Request) -> Result<Side, String> {
    let members = &request.side.pokemon;
    if members.is_empty() || members.len() > 6 {
        return Err(format!("a team of {} Pokémon cannot be scored", members.len()));
    }
    let mut side = Side::default();
    for (i, member) in members.iter().enumerate() {
        let slot = request.active.first().filter(|_| member.active);
        side.pokemon.pkmn[i] = own_pokemon(member, slot.map(|s| s.moves.as_slice()));
    }
    for slot in members.len()..6 {
        side.pokemon.pkmn[slot] = empty_slot();
    }
    let active = members.iter().position(|m| m.active).ok_or("no active Pokémon in the request")?;
    side.active_index = pokemon_index(active);
    if let Some(view) = battle.my_side() {
        apply_view(&mut side, view, battle.turn);
    }
    Ok(side)
}

fn their_side(battle: &Battle, rng: &mut Rng) -> Result<Side, String> {
    let view = battle.their_side().ok_or("the opponent has not been seen yet")?;
    let seen: Vec<&Mon> = view.mons.iter().take(6).collect();
    let mut side = Side::default();
    for (i, mon) in seen.iter().enumerate() {
        side.pokemon.pkmn[i] = guessed_pokemon(mon, rng);
    }
    // Random battles field six: the unseen rest are drawn from the pool.
    let taken: Vec<String> = seen.iter().map(|m| to_id(&m.species)).collect();
    let pool: Vec<&String> = data().random_species_ids().iter().filter(|id| !taken.contains(id)).collect();
    for slot in seen.len()..6 {
        side.pokemon.pkmn[slot] = match rng.pick(&pool) {
            Some(species) => guessed_pokemon(&Mon { species: (*species).clone(), hp_percent: 100, ..Mon::default() }, rng),
            None => empty_slot(),
        };
    }
    let active = match seen.iter().position(|m| m.active) {
        Some(active) => active,
        // Its active Pokémon fainted and we choose first (both sides replace a
        // fainted one at once, or our pivot move knocked it out): which one it
        // sends in is hidden, so each guess draws it from those able to fight.
        None => {
            let able: Vec<usize> = (0..6).filter(|&i| side.pokemon.pkmn[i].hp > 0).collect();
            *rng.pick(&able).ok_or("the opponent has no Pokémon left to send in")?
        }
    };
    side.active_index = pokemon_index(active);
    apply_view(&mut side, view, battle.turn);
    Ok(side)
}

/// The public facts of a side: boosts and volatile conditions of the active
/// Pokémon, and hazards/screens. `turn` is the turn about to be played.
fn apply_view(side: &mut Side, view: &SideView, turn: u32) {
    if let Some(active) = view.active() {
        for name in &active.volatiles {
            if let Some(status) = stateless_volatile(name) {
                side.volatile_statuses.insert(status);
            } else if let Some(status) =
                counted_volatile(side, name, active.volatile_since.get(&to_id(name)).map(|t| turn.saturating_sub(*t)))
            {
                side.volatile_statuses.insert(status);
            }
        }
        if side.volatile_statuses.contains(&PokemonVolatileStatus::SUBSTITUTE) {
            // A substitute takes a quarter of the maximum HP; the damage it has
            // taken since is not in the protocol, so assume it is whole.
            side.substitute_health = side.get_active_immutable().maxhp / 4;
        }
        let boost = |k: &str| active.boosts.get(k).copied().unwrap_or(0).clamp(-6, 6) as i8;
        side.attack_boost = boost("atk");
        side.defense_boost = boost("def");
        side.special_attack_boost = boost("spa");
        side.special_defense_boost = boost("spd");
        side.speed_boost = boost("spe");
        side.accuracy_boost = boost("accuracy");
        side.evasion_boost = boost("evasion");
    }
    side.side_conditions = side_conditions(&view.conditions);
}

/// A volatile condition the engine can take as a bare flag. Confusion is one
/// too: the engine gives each move its chance to hit itself and never ends it,
/// which within a two-turn search is what a confused Pokémon faces.
fn stateless_volatile(name: &str) -> Option<PokemonVolatileStatus> {
    use PokemonVolatileStatus as V;
    let status = V::from_str(&to_id(name)).ok()?;
    [V::SUBSTITUTE, V::LEECHSEED, V::CURSE, V::AQUARING, V::INGRAIN, V::PERISH4, V::PERISH3, V::PERISH2, V::PERISH1, V::CONFUSION]
        .contains(&status)
        .then_some(status)
}

/// Taunt and Yawn, whose turns the engine counts (`volatile_status_durations`):
/// the count is the turns played since the condition began (Taunt ends after
/// three of the taunted Pokémon's moves, Yawn puts it to sleep at the end of
/// the next turn). Encore stays out: the engine needs the encored move, which
/// the tracker does not keep, and panics without it.
fn counted_volatile(side: &mut Side, name: &str, turns: Option<u32>) -> Option<PokemonVolatileStatus> {
    use PokemonVolatileStatus as V;
    let turns = turns?.min(2) as i8;
    let status = V::from_str(&to_id(name)).ok()?;
    match status {
        V::TAUNT => side.volatile_status_durations.taunt = turns,
        V::YAWN => side.volatile_status_durations.yawn = turns.min(1),
        _ => return None,
    }
    Some(status)
}

fn side_conditions(names: &[String]) -> SideConditions {
    let count = |name: &str| names.iter().filter(|c| c.as_str() == name).count().min(3) as i8;
    // Screens and the like last five turns; how many are left is not in the
    // protocol, so assume a fresh one.
    let turns = |name: &str| if count(name) > 0 { 5 } else { 0 };
    SideConditions {
        stealth_rock: count("Stealth Rock").min(1),
        spikes: count("Spikes"),
        toxic_spikes: count("Toxic Spikes").min(2),
        sticky_web: count("Sticky Web").min(1),
        reflect: turns("Reflect"),
        light_screen: turns("Light Screen"),
        aurora_veil: turns("Aurora Veil"),
        safeguard: turns("Safeguard"),
        tailwind: if count("Tailwind") > 0 { 4 } else { 0 },
        ..SideConditions::default()
    }
}

fn weather(name: &str) -> Option<Weather> {
    Some(match name {
        "SunnyDay" => Weather::SUN,
        "RainDance" => Weather::RAIN,
        "Sandstorm" => Weather::SAND,
        "Snow" | "Snowscape" => Weather::SNOW,
        "Hail" => Weather::HAIL,
        "DesolateLand" => Weather::HARSHSUN,
        "PrimordialSea" => Weather::HEAVYRAIN,
        _ => return None,
    })
}

fn terrain(name: &str) -> Option<Terrain> {
    Some(match name {
        "Electric Terrain" => Terrain::ELECTRICTERRAIN,
        "Psychic Terrain" => Terrain::PSYCHICTERRAIN,
        "Misty Terrain" => Terrain::MISTYTERRAIN,
        "Grassy Terrain" => Terrain::GRASSYTERRAIN,
        _ => return None,
    })
}

fn status(s: Option<&str>) -> PokemonStatus {
    match s {
        Some("brn") => PokemonStatus::BURN,
        Some("par") => PokemonStatus::PARALYZE,
        Some("slp") => PokemonStatus::SLEEP,
        Some("frz") => PokemonStatus::FREEZE,
        Some("psn") => PokemonStatus::POISON,
        Some("tox") => PokemonStatus::TOXIC,
        _ => PokemonStatus::NONE,
    }
}

fn poke_type(name: &str) -> PokemonType {
    PokemonType::from_str(name).unwrap_or(PokemonType::TYPELESS)
}

fn engine_move(id: &str, pp: u32, disabled: bool) -> Move {
    let id = Choices::from_str(&to_id(id)).unwrap_or(Choices::NONE);
    let known = id != Choices::NONE;
    Move {
        id,
        disabled: disabled || !known,
        pp: if known { pp.min(64) as i8 } else { 0 },
        choice: MOVES.get(&id).cloned().unwrap_or_default(),
    }
}

fn moves(list: &[Move]) -> PokemonMoves {
    let m = |i: usize| list.get(i).cloned().unwrap_or_else(|| engine_move("", 0, true));
    PokemonMoves { m0: m(0), m1: m(1), m2: m(2), m3: m(3) }
}

/// A slot with nobody in it: fainted, so never switched in.
fn empty_slot() -> Pokemon {
    Pokemon { hp: 0, moves: moves(&[]), ..Pokemon::default() }
}

/// Species facts both sides share: id, types, weight.
fn species_pokemon(species: &str, level: u32) -> Pokemon {
    let dex = data().species(species);
    let types = dex.map(|s| s.types.clone()).unwrap_or_default();
    let t = |i: usize| types.get(i).map_or(PokemonType::TYPELESS, |t| poke_type(t));
    let pair = (t(0), t(1));
    Pokemon {
        id: PokemonName::from_str(&to_id(species)).unwrap_or(PokemonName::NONE),
        level: level.clamp(1, 100) as i8,
        types: pair,
        base_types: pair,
        weight_kg: dex.map_or(50.0, |s| s.weight_kg as f32),
        ..Pokemon::default()
    }
}

/// Our own Pokémon, exactly as the request has it.
fn own_pokemon(member: &TeamMember, active_moves: Option<&[crate::request::MoveSlot]>) -> Pokemon {
    let mut p = species_pokemon(member.species(), level_of(&member.details).unwrap_or(100));
    let (hp, maxhp, status_code) = exact_hp(&member.condition);
    (p.hp, p.maxhp, p.status) = (hp, maxhp, status(status_code.as_deref()));
    let stat = |k: &str| member.stats.get(k).copied().unwrap_or(100).min(2000) as i16;
    (p.attack, p.defense, p.special_attack, p.special_defense, p.speed) = (stat("atk"), stat("def"), stat("spa"), stat("spd"), stat("spe"));
    p.ability = Abilities::from_str(&to_id(&member.ability)).unwrap_or(Abilities::NONE);
    p.base_ability = Abilities::from_str(&to_id(&member.base_ability)).unwrap_or(p.ability);
    p.item = if member.item.is_empty() { Items::NONE } else { Items::from_str(&to_id(&member.item)).unwrap_or(Items::NONE) };
    if let Some(t) = member.tera_type.as_deref() {
        p.tera_type = poke_type(t);
    }
    p.terastallized = member.terastallized.as_deref().is_some_and(|t| !t.is_empty());
    let list: Vec<Move> = match active_moves {
        // The active slot's moves carry PP and disabled flags (and what Transform copied).
        Some(slots) => slots.iter().map(|m| engine_move(&m.id, m.pp.unwrap_or(16), !m.usable())).collect(),
        None => member.moves.iter().map(|id| engine_move(id, 16, false)).collect(),
    };
    p.moves = moves(&list);
    p
}

/// `cur/max status` → exact numbers; `0 fnt` → fainted.
fn exact_hp(condition: &str) -> (i16, i16, Option<String>) {
    let (_, status, fainted) = parse_condition(condition);
    let hp = condition.split_whitespace().next().unwrap_or("");
    let (cur, max) = hp.split_once('/').unwrap_or((hp, "100"));
    let max: i16 = max.parse().unwrap_or(100).max(1);
    let cur: i16 = if fainted { 0 } else { cur.parse().unwrap_or(max).clamp(0, max) };
    (cur, max, status)
}

/// The opponent's Pokémon: what was revealed, the rest guessed from one of
/// the species' random-battle sets consistent with the revealed moves.
fn guessed_pokemon(mon: &Mon, rng: &mut Rng) -> Pokemon {
    let pool = data().random_sets(&mon.species);
    let level = if mon.level > 0 { mon.level } else { pool.map_or(80, |p| p.level) };
    let mut p = species_pokemon(&mon.species, level);
    let base = data().species(&mon.species).map_or([80; 6], |s| s.base);
    // Random battles: 31 IVs, 84 EVs, neutral natures.
    let stat = |b: u32| ((2 * b + 31 + 21) * level / 100 + 5) as i16;
    p.maxhp = ((2 * base[0] + 31 + 21) * level / 100 + level + 10) as i16;
    p.hp = if mon.fainted { 0 } else { ((u32::from(p.maxhp.unsigned_abs()) * mon.hp_percent).div_ceil(100) as i16).max(1) };
    (p.attack, p.defense, p.special_attack, p.special_defense, p.speed) =
        (stat(base[1]), stat(base[2]), stat(base[3]), stat(base[4]), stat(base[5]));
    p.status = status(mon.status.as_deref());
    let revealed: Vec<String> = mon.moves.iter().map(|m| to_id(m)).collect();
    let set = pool.and_then(|pool| {
        let fitting: Vec<&RandomSet> = pool.sets.iter().filter(|s| revealed.iter().all(|m| s.movepool.contains(m))).collect();
        if fitting.is_empty() { rng.pick(&pool.sets) } else { rng.pick(&fitting).copied() }
    });
    let mut move_ids: Vec<String> = revealed.iter().take(4).cloned().collect();
    if let Some(set) = set {
        let mut rest: Vec<&String> = set.movepool.iter().filter(|m| !move_ids.contains(m)).collect();
        while move_ids.len() < 4 && !rest.is_empty() {
            move_ids.push(rest.remove(rng.below(rest.len())).clone());
        }
    }
    p.moves = moves(&move_ids.iter().map(|id| engine_move(id, 16, false)).collect::<Vec<_>>());
    let ability = mon.ability.as_deref().map(to_id).or_else(|| set.and_then(|s| rng.pick(&s.abilities)).cloned());
    p.ability = ability.map_or(Abilities::NONE, |a| Abilities::from_str(&a).unwrap_or(Abilities::NONE));
    p.base_ability = p.ability;
    // Unknown items stay unknown: guessing one would bias every sample the same way.
    p.item = match mon.item.as_deref() {
        Some(item) if !item.is_empty() => Items::from_str(&to_id(item)).unwrap_or(Items::NONE),
        _ => Items::NONE,
    };
    match &mon.tera {
        Some(t) => (p.tera_type, p.terastallized) = (poke_type(t), true),
        None => {
            if let Some(t) = set.and_then(|s| rng.pick(&s.tera_types)) {
                p.tera_type = poke_type(t);
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our Pikachu against a revealed Gyarados, everything else unknown.
    fn position() -> (Battle, Request) {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in ["|switch|p1a: Pikachu|Pikachu, L92|211/211", "|switch|p2a: Gyarados|Gyarados, L80|100/100", "|turn|1"] {
            b.on_log(l);
        }
        let moves = r#"{"active":[{"moves":[
                {"move":"Thunderbolt","id":"thunderbolt","pp":24,"maxpp":24,"disabled":false},
                {"move":"Grass Knot","id":"grassknot","pp":32,"maxpp":32,"disabled":false},
                {"move":"Nuzzle","id":"nuzzle","pp":32,"maxpp":32,"disabled":false}],
                "canTerastallize":"Electric"}],"#;
        let req = Request::parse(&format!("{moves}{},\"rqid\":3}}", our_team("211/211"))).unwrap();
        b.on_request(req.clone());
        (b, req)
    }

    /// Our side of a request: Pikachu active (in `condition`), Snorlax behind it.
    fn our_team(condition: &str) -> String {
        r#""side":{"name":"A","id":"p1","pokemon":[
            {"ident":"p1: Pikachu","details":"Pikachu, L92","condition":"CONDITION","active":true,
             "stats":{"atk":180,"def":140,"spa":170,"spd":160,"spe":250},"moves":["thunderbolt","grassknot","nuzzle"],
             "baseAbility":"static","item":"lightball","ability":"static","teraType":"Electric","terastallized":""},
            {"ident":"p1: Snorlax","details":"Snorlax, L84","condition":"400/400","active":false,
             "stats":{"atk":250,"def":160,"spa":150,"spd":250,"spe":80},"moves":["bodyslam","rest","curse","earthquake"],
             "baseAbility":"thickfat","item":"leftovers","ability":"thickfat","teraType":"Normal"}]}"#
            .replace("CONDITION", condition)
    }

    #[test]
    fn electric_moves_beat_grass_knot_on_gyarados() {
        let (b, req) = position();
        let e = evaluate_actions(&b, &req, Settings::default()).unwrap();
        let names: Vec<&str> = e.actions.iter().map(|s| s.action.as_str()).collect();
        assert_eq!(names.len(), req.actions().len(), "every legal action is scored: {names:?}");
        assert!(e.best().unwrap().action.starts_with("thunderbolt"), "{e:#?}");
        let best = e.verdict(&e.best().unwrap().action).unwrap();
        assert_eq!((best.optimality, best.regret, best.rank), (1.0, 0.0, 1));
        let weak = e.verdict("grassknot").unwrap();
        assert!(weak.optimality < 1.0 && weak.regret > 0.0 && weak.rank > 1, "{weak:?}");
    }

    #[test]
    fn volatile_conditions_reach_the_engine_state() {
        let (mut b, req) = position();
        for l in [
            "|-start|p2a: Gyarados|Substitute",
            "|-start|p2a: Gyarados|move: Taunt",
            "|-start|p2a: Gyarados|Encore",
            "|-start|p1a: Pikachu|move: Leech Seed",
            "|-start|p1a: Pikachu|confusion",
            "|-start|p2a: Gyarados|typechange|Fire",
        ] {
            b.on_log(l);
        }
        let state = build_state(&b, &req, &mut Rng::new(1)).unwrap();
        let (ours, theirs) = (&state.side_one, &state.side_two);
        assert!(theirs.volatile_statuses.contains(&PokemonVolatileStatus::SUBSTITUTE));
        assert_eq!(theirs.substitute_health, theirs.get_active_immutable().maxhp / 4);
        assert!(ours.volatile_statuses.contains(&PokemonVolatileStatus::LEECHSEED));
        assert!(ours.volatile_statuses.contains(&PokemonVolatileStatus::CONFUSION));
        // Taunt with the turns it has run (begun on turn 1, now turn 1: none yet).
        assert!(theirs.volatile_statuses.contains(&PokemonVolatileStatus::TAUNT));
        assert_eq!(theirs.volatile_status_durations.taunt, 0);
        // Encore needs the encored move, which is not tracked (poke-engine panics on a bare one).
        assert!(!theirs.volatile_statuses.contains(&PokemonVolatileStatus::ENCORE));
        // And the position still scores, also two turns on with Yawn begun.
        assert!(evaluate_actions(&b, &req, Settings::default()).is_ok());
        for l in ["|turn|2", "|-start|p1a: Pikachu|move: Yawn|[of] p2a: Gyarados", "|turn|3"] {
            b.on_log(l);
        }
        let state = build_state(&b, &req, &mut Rng::new(1)).unwrap();
        assert_eq!((state.side_two.volatile_status_durations.taunt, state.side_one.volatile_status_durations.yawn), (2, 1));
        assert!(evaluate_actions(&b, &req, Settings::default()).is_ok());
    }

    #[test]
    fn a_replacement_chosen_while_the_opponents_field_is_empty_is_scored() {
        // Both active Pokémon fainted: we choose our replacement while the
        // opponent chooses theirs, unseen.
        let (mut b, _) = position();
        for l in ["|-damage|p1a: Pikachu|0 fnt", "|faint|p1a: Pikachu", "|-damage|p2a: Gyarados|0 fnt", "|faint|p2a: Gyarados"] {
            b.on_log(l);
        }
        let req = Request::parse(&format!("{{\"forceSwitch\":[true],{},\"rqid\":4}}", our_team("0 fnt"))).unwrap();
        b.on_request(req.clone());
        assert!(b.their_side().unwrap().active().is_none(), "the opponent's field is empty");
        let e = evaluate_actions(&b, &req, Settings::default()).unwrap();
        assert_eq!(e.actions.iter().map(|s| s.action.as_str()).collect::<Vec<_>>(), ["switch snorlax"]);
        // Each guess sends in one of the opponent's Pokémon still able to
        // fight, never the fainted Gyarados.
        for k in 0..8 {
            let state = build_state(&b, &req, &mut Rng::new(k)).unwrap();
            assert!(state.side_two.get_active_immutable().hp > 0, "guess {k}");
        }
    }

    #[test]
    fn the_same_position_scores_the_same() {
        let (b, req) = position();
        let a = evaluate_actions(&b, &req, Settings::default()).unwrap();
        let c = evaluate_actions(&b, &req, Settings::default()).unwrap();
        let values = |e: &Evaluation| e.actions.iter().map(|s| s.value.to_bits()).collect::<Vec<_>>();
        assert_eq!(values(&a), values(&c));
    }

    #[test]
    fn unusual_input_is_refused_or_scored_never_a_panic() {
        let (b, req) = position();
        let mut preview = req.clone();
        preview.team_preview = true;
        assert!(evaluate_actions(&b, &preview, Settings::default()).is_err());
        let unseen = Battle { me: "p1".into(), ..Battle::default() };
        assert!(evaluate_actions(&unseen, &req, Settings::default()).is_err());
        // Unknown species, moves, items and absurd numbers still make a state.
        let mut odd = b.clone();
        odd.on_log("|switch|p2a: Zzz|Missingno, L255|100/100");
        odd.on_log("|move|p2a: Zzz|Not A Move|p1a: Pikachu");
        let mut r = req.clone();
        r.side.pokemon[0].stats.insert("atk".into(), 99_999);
        r.side.pokemon[0].condition = "999999/-5 xyz".into();
        r.side.pokemon[0].item = "Mystery Thing".into();
        r.active[0].moves[0].id = "nonsense".into();
        assert!(evaluate_actions(&odd, &r, Settings::default()).is_ok());
    }
}
