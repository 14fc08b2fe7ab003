//! The `|request|` JSON (Showdown's `ChoiceRequest`) and the legal actions
//! it allows. An agent's action is matched against this list and only our
//! own choice string is ever sent: nothing the agent writes reaches the
//! simulator or server verbatim (the simulator obeys `>eval`).

use serde::Deserialize;

use crate::data::to_id;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Request {
    pub active: Vec<ActiveSlot>,
    pub side: SideInfo,
    pub force_switch: Vec<bool>,
    pub team_preview: bool,
    pub wait: bool,
    pub rqid: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ActiveSlot {
    pub moves: Vec<MoveSlot>,
    pub trapped: bool,
    pub maybe_trapped: bool,
    /// The type this Pokémon can Terastallize into (a string, not a flag).
    pub can_terastallize: Option<String>,
    /// Generation 7: per move slot, its Z-move when it has one.
    #[serde(rename = "canZMove")]
    pub can_z_move: Vec<Option<serde_json::Value>>,
    /// Generation 8.
    pub can_dynamax: bool,
    /// Generations 6 and 7.
    pub can_mega_evo: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct MoveSlot {
    #[serde(rename = "move")]
    pub name: String,
    pub id: String,
    pub pp: Option<u32>,
    pub maxpp: Option<u32>,
    /// `true`, `false` or a reason string.
    pub disabled: serde_json::Value,
    /// Whom it may hit (`normal`, `any`, `adjacentAlly`, `self`, `allAdjacentFoes`…).
    pub target: String,
}

impl MoveSlot {
    /// Neither disabled nor out of PP.
    pub fn usable(&self) -> bool {
        let disabled = match &self.disabled {
            serde_json::Value::Bool(b) => *b,
            serde_json::Value::String(s) => !s.is_empty(),
            _ => false,
        };
        !disabled && self.pp != Some(0)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SideInfo {
    pub name: String,
    pub id: String,
    pub pokemon: Vec<TeamMember>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TeamMember {
    /// `p1: Name`.
    pub ident: String,
    /// `Species, L88, F[, tera:Type]`.
    pub details: String,
    /// `cur/max [status]` or `0 fnt`.
    pub condition: String,
    pub active: bool,
    pub stats: std::collections::BTreeMap<String, u32>,
    pub moves: Vec<String>,
    pub base_ability: String,
    pub item: String,
    pub ability: String,
    pub tera_type: Option<String>,
    pub terastallized: Option<String>,
    /// Revival Blessing: this forced "switch" picks a fainted Pokémon to revive.
    pub reviving: bool,
}

impl TeamMember {
    /// The nickname part of the ident.
    pub fn name(&self) -> &str {
        self.ident.split_once(": ").map_or(self.ident.as_str(), |(_, n)| n)
    }

    pub fn species(&self) -> &str {
        self.details.split(',').next().unwrap_or("").trim()
    }

    pub fn fainted(&self) -> bool {
        self.condition.ends_with(" fnt") || self.condition.starts_with("0 ") || self.condition == "0"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Move,
    Switch,
    Team,
}

/// One thing the agent may do now, for one of its active Pokémon.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// What the agent writes: a move id (`thunderbolt`), `<move>-tera`,
    /// `switch <species id>`, or `team <species id>` for team preview; in
    /// doubles and triples a move that picks its target ends with it
    /// (`thunderbolt 2`: the opponent's second position; `-1`: our first).
    pub name: String,
    pub kind: Kind,
    /// The choice we send (`move 1 terastallize`, `switch 3`, `team 2`).
    pub choice: String,
    /// Index into `active[position].moves` or `side.pokemon`.
    pub index: usize,
    /// The active position it is for: 0 in singles, 0–2 from the left otherwise.
    pub position: usize,
    /// The target position it names: 1–3 the opponent's, −1 to −3 ours.
    pub target: Option<i8>,
}

impl Action {
    /// The once-a-battle mechanic it uses (`tera`, `mega`, `zmove`, `dynamax`), if any.
    pub fn mechanic(&self) -> Option<&'static str> {
        let base = self.name.split(' ').next().unwrap_or("");
        MECHANICS.iter().copied().find(|m| self.kind == Kind::Move && base.ends_with(&format!("-{m}")))
    }
}

/// A whole decision: one action for each active position that needs one.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The agent's actions as the action list names them, in position order.
    pub actions: Vec<Action>,
    /// What we send: the positions' choices joined, `pass` where none is due.
    pub choice: String,
}

impl Decision {
    /// The decision as the agent would write it again (`thunderbolt 1, protect`).
    pub fn name(&self) -> String {
        self.actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// Whether `p` may be sent to a forced or chosen switch: a Pokémon on the
/// bench still standing; for Revival Blessing any fainted one, a fainted ally
/// still in its doubles slot included (the simulator takes it).
fn may_switch_to(p: &TeamMember, reviving: bool) -> bool {
    if reviving { p.fainted() } else { !p.active && !p.fainted() }
}

impl Request {
    pub fn parse(json: &str) -> Result<Request, String> {
        serde_json::from_str(json).map_err(|e| format!("unreadable request: {e}"))
    }

    pub fn must_switch(&self) -> bool {
        self.force_switch.iter().any(|&b| b)
    }

    /// True when the request asks for a decision.
    pub fn needs_decision(&self) -> bool {
        !self.wait && (self.team_preview || self.must_switch() || !self.active.is_empty())
    }

    pub fn active_member(&self) -> Option<&TeamMember> {
        self.side.pokemon.iter().find(|p| p.active)
    }

    /// How many active positions the request speaks for: 1 in singles, 2 in
    /// doubles, 3 in triples.
    pub fn positions(&self) -> usize {
        if self.team_preview { 1 } else { self.active.len().max(self.force_switch.len()).max(1) }
    }

    /// The positions that need an action from the agent: a forced switch,
    /// or a move for a Pokémon still standing; the others pass.
    pub fn open_positions(&self) -> Vec<usize> {
        (0..self.positions()).filter(|&p| !self.position_actions(p).is_empty()).collect()
    }

    /// Every legal action, position by position, moves first.
    pub fn actions(&self) -> Vec<Action> {
        if !self.needs_decision() {
            return Vec::new();
        }
        if self.team_preview {
            return self
                .side
                .pokemon
                .iter()
                .enumerate()
                .map(|(i, p)| Action {
                    name: format!("team {}", to_id(p.species())),
                    kind: Kind::Team,
                    choice: format!("team {}", i + 1),
                    index: i,
                    position: 0,
                    target: None,
                })
                .collect();
        }
        let mut out: Vec<Action> = (0..self.positions()).flat_map(|p| self.position_actions(p)).collect();
        if out.is_empty() {
            // A request we cannot read into choices: let the simulator pick.
            out.push(Action { name: "default".into(), kind: Kind::Move, choice: "default".into(), index: 0, position: 0, target: None });
        }
        out
    }

    /// The legal actions of the Pokémon at active position `pos`.
    pub fn position_actions(&self, pos: usize) -> Vec<Action> {
        if !self.needs_decision() || self.team_preview {
            return Vec::new();
        }
        let forced = self.must_switch();
        if forced && !self.force_switch.get(pos).copied().unwrap_or(false) {
            return Vec::new();
        }
        let standing = self.side.pokemon.get(pos).is_none_or(|p| !p.fainted() || forced);
        let slot = self.active.get(pos).filter(|_| !forced && standing);
        let multi = self.positions() > 1;
        let mut out = Vec::new();
        if let Some(slot) = slot {
            for (i, m) in slot.moves.iter().enumerate().filter(|(_, m)| m.usable()) {
                let id = if m.id.is_empty() { to_id(&m.name) } else { m.id.clone() };
                let targets = if multi { targets(&m.target, pos, self.positions()) } else { vec![None] };
                // The once-a-battle mechanics of each generation, as the request offers them.
                let offered = [
                    (true, "", ""),
                    (slot.can_terastallize.is_some(), "-tera", " terastallize"),
                    (slot.can_mega_evo, "-mega", " mega"),
                    (slot.can_z_move.get(i).is_some_and(Option::is_some), "-zmove", " zmove"),
                    (slot.can_dynamax, "-dynamax", " dynamax"),
                ];
                for (_, suffix, word) in offered.into_iter().filter(|(can, _, _)| *can) {
                    for &target in &targets {
                        // The target is written alike in the action and in the choice.
                        let at = target.map_or(String::new(), |t| format!(" {t}"));
                        out.push(Action {
                            name: format!("{id}{suffix}{at}"),
                            kind: Kind::Move,
                            choice: format!("move {}{at}{word}", i + 1),
                            index: i,
                            position: pos,
                            target,
                        });
                    }
                }
            }
        }
        let trapped = slot.is_some_and(|s| s.trapped);
        let reviving = forced && self.side.pokemon.iter().any(|p| p.reviving);
        if !trapped && (slot.is_some() || forced) {
            for (i, p) in self.side.pokemon.iter().enumerate() {
                if may_switch_to(p, reviving) {
                    out.push(Action {
                        name: format!("switch {}", to_id(p.species())),
                        kind: Kind::Switch,
                        choice: format!("switch {}", i + 1),
                        index: i,
                        position: pos,
                        target: None,
                    });
                }
            }
        }
        if multi && forced && self.passes_allowed() > 0 {
            out.push(Action { name: "pass".into(), kind: Kind::Switch, choice: "pass".into(), index: 0, position: pos, target: None });
        }
        out
    }

    /// More forced switches than Pokémon to send: how many positions may
    /// stay empty (the simulator wants every Pokémon it can have sent in).
    pub fn passes_allowed(&self) -> usize {
        if !self.must_switch() {
            return 0;
        }
        let reviving = self.side.pokemon.iter().any(|p| p.reviving);
        let forced = self.force_switch.iter().filter(|&&b| b).count();
        let bench = self.side.pokemon.iter().filter(|p| may_switch_to(p, reviving)).count();
        forced.saturating_sub(bench)
    }

    /// Finds the agent's action: case, spaces and punctuation do not matter
    /// (`Thunderbolt`, `switch Iron Valiant`); anything else is refused.
    pub fn find(&self, wanted: &str) -> Option<Action> {
        let key = action_key(wanted);
        self.actions().into_iter().find(|a| action_key(&a.name) == key)
    }

    /// Every whole decision the agent may send now, as `decide` reads it:
    /// each action in singles; in doubles and triples each combination of
    /// one action per open position that `decide` takes (at most `most`).
    pub fn whole_decisions(&self, most: usize) -> Vec<String> {
        let open = self.open_positions();
        if self.positions() == 1 || open.is_empty() {
            return self.actions().into_iter().map(|a| a.name).take(most).collect();
        }
        let mut whole = vec![String::new()];
        for &pos in &open {
            let names: Vec<String> = self.position_actions(pos).into_iter().map(|a| a.name).collect();
            let longer = whole.iter().flat_map(|w| names.iter().map(move |n| if w.is_empty() { n.clone() } else { format!("{w}, {n}") }));
            whole = longer.take(most * 8).collect();
        }
        whole.into_iter().filter(|w| self.decide(w).is_ok()).take(most).collect()
    }

    /// The agent's whole decision: in singles one action; in doubles and
    /// triples one per position that needs one, in position order, joined
    /// with commas (`thunderbolt 1, switch garchomp`). Two positions may not
    /// send in the same Pokémon.
    pub fn decide(&self, wanted: &str) -> Result<Decision, String> {
        let open = self.open_positions();
        if self.positions() == 1 || open.is_empty() {
            let a = self.find(wanted).ok_or_else(|| format!("`{wanted}` is not a legal action now"))?;
            return Ok(Decision { choice: a.choice.clone(), actions: vec![a] });
        }
        let parts: Vec<&str> = wanted.split(',').map(str::trim).collect();
        if parts.len() != open.len() {
            return Err(format!(
                "this decision takes {} action{} separated by commas, one for each of {} in position order; `{wanted}` has {}",
                open.len(),
                if open.len() == 1 { "" } else { "s" },
                open.iter().map(|p| format!("position {}", p + 1)).collect::<Vec<_>>().join(" and "),
                parts.len()
            ));
        }
        let mut actions = Vec::new();
        for (&pos, part) in open.iter().zip(&parts) {
            let key = action_key(part);
            let Some(a) = self.position_actions(pos).into_iter().find(|a| action_key(&a.name) == key) else {
                return Err(format!("`{part}` is not a legal action for position {} now", pos + 1));
            };
            if let Some(why) = self.conflict(&a, &actions) {
                return Err(why);
            }
            actions.push(a);
        }
        Ok(self.assemble(actions))
    }

    /// Why `a` cannot join the actions `picked` for the positions before
    /// it, as the simulator would refuse it: the same Pokémon sent in twice,
    /// a once-a-battle mechanic used twice, or a pass while a Pokémon is
    /// left to send in. The bots choose among the actions without one.
    pub fn conflict(&self, a: &Action, picked: &[Action]) -> Option<String> {
        if a.kind == Kind::Switch && a.choice != "pass" && picked.iter().any(|b| b.choice == a.choice) {
            return Some(format!("two positions cannot both `{}`", a.name));
        }
        if let Some(m) = a.mechanic().filter(|m| picked.iter().any(|b| b.mechanic() == Some(m))) {
            return Some(format!("only one position may use `-{m}`: it is once a battle"));
        }
        let allowed = self.passes_allowed();
        if a.choice == "pass" && picked.iter().filter(|b| b.choice == "pass").count() >= allowed {
            return Some(format!("only {allowed} position{} may pass: send in every Pokémon you can", if allowed == 1 { "" } else { "s" }));
        }
        None
    }

    /// The decision made of one action per open position (the others pass).
    pub fn assemble(&self, actions: Vec<Action>) -> Decision {
        let choice = (0..self.positions())
            .map(|p| actions.iter().find(|a| a.position == p).map_or("pass".to_string(), |a| a.choice.clone()))
            .collect::<Vec<_>>()
            .join(", ");
        Decision { actions, choice }
    }
}

/// The positions a move used from our position `pos` (0-based) may name,
/// as Showdown numbers them (1…n the opponent's, −1…−n ours), with its
/// adjacency rule; `[None]` for a move that picks no target.
fn targets(kind: &str, pos: usize, n: usize) -> Vec<Option<i8>> {
    let me = pos as i8 + 1;
    let n = n as i8;
    let foe_adjacent = |t: i8| (t + me - (n + 1)).abs() <= 1;
    let ally_adjacent = |t: i8| (t - me).abs() == 1;
    let foes = |all: bool| (1..=n).filter(move |&t| all || foe_adjacent(t)).map(Some);
    let allies = |with_self: bool, all: bool| {
        (1..=n).filter(move |&t| (t != me && (all || ally_adjacent(t))) || (with_self && t == me)).map(|t| Some(-t))
    };
    match kind {
        "normal" => foes(false).chain(allies(false, false)).collect(),
        "adjacentFoe" => foes(false).collect(),
        "any" => foes(true).chain(allies(false, true)).collect(),
        "adjacentAlly" => allies(false, false).collect(),
        "adjacentAllyOrSelf" => allies(true, false).collect(),
        _ => vec![None],
    }
}

/// Whether two agents' writings of a decision name the same actions
/// (`Thunderbolt 1, Protect` and `thunderbolt 1,protect`; not `thunderbolt -1`).
pub fn same_decision(a: &str, b: &str) -> bool {
    let keys = |s: &str| s.split(',').map(action_key).collect::<Vec<_>>();
    keys(a) == keys(b)
}

/// What a move's action may end with: Terastallize (9), Mega Evolve (6–7),
/// its Z-move (7), Dynamax (8).
const MECHANICS: [&str; 4] = ["tera", "mega", "zmove", "dynamax"];

/// `switch Iron-Valiant` → `switch ironvaliant`; `Thunderbolt-Tera` →
/// `thunderbolt-tera`; `Heat Wave -1` → `heatwave @-1` (a target position,
/// written after a space, stays apart from the move's name).
fn action_key(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    if let Some((head, t)) = s.rsplit_once(char::is_whitespace)
        && let Ok(t) = t.trim_start_matches('+').parse::<i8>()
        && t != 0
        && !head.trim().is_empty()
    {
        return format!("{} @{t}", action_key(head));
    }
    let (verb, rest) = match s.split_once(char::is_whitespace) {
        Some((v @ ("switch" | "team" | "move"), rest)) => (v, rest.to_string()),
        _ => ("", s.clone()),
    };
    let rest = rest.trim_end();
    let suffix = MECHANICS.iter().find(|m| rest.ends_with(&format!("-{m}")) || rest.ends_with(&format!(" {m}")));
    let base = suffix.map_or(rest, |m| &rest[..rest.len() - m.len() - 1]);
    let id = to_id(base);
    let verb = if verb == "move" { "" } else { verb };
    match (verb.is_empty(), suffix) {
        (true, None) => id,
        (true, Some(m)) => format!("{id}-{m}"),
        (false, _) => format!("{verb} {id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOVE_REQ: &str = r#"{"active":[{"moves":[
        {"move":"Thunderbolt","id":"thunderbolt","pp":24,"maxpp":24,"target":"normal","disabled":false},
        {"move":"Protect","id":"protect","pp":0,"maxpp":16,"target":"self","disabled":false},
        {"move":"Volt Switch","id":"voltswitch","pp":32,"maxpp":32,"target":"normal","disabled":"Taunt"}],
        "canTerastallize":"Electric"}],
      "side":{"name":"Ada","id":"p1","pokemon":[
        {"ident":"p1: Pikachu","details":"Pikachu, L92, M","condition":"200/211","active":true,"stats":{"atk":150},"moves":["thunderbolt"],"baseAbility":"static","item":"lightball","ability":"static","teraType":"Electric","terastallized":""},
        {"ident":"p1: Iron Valiant","details":"Iron Valiant, L80","condition":"250/250","active":false,"stats":{},"moves":[],"item":"","ability":""},
        {"ident":"p1: Mew","details":"Mew, L80","condition":"0 fnt","active":false,"stats":{},"moves":[]}]},
      "rqid":7}"#;

    #[test]
    fn z_moves_mega_evolution_and_dynamax_are_offered_where_the_request_allows_them() {
        let gen7 = MOVE_REQ.replace(
            r#""canTerastallize":"Electric""#,
            r#""canZMove":[{"move":"Gigavolt Havoc","target":"normal"},null,null],"canMegaEvo":true"#,
        );
        let r = Request::parse(&gen7).unwrap();
        let names: Vec<String> = r.actions().into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["thunderbolt", "thunderbolt-mega", "thunderbolt-zmove", "switch ironvaliant"]);
        assert_eq!(r.find("Thunderbolt-ZMove").unwrap().choice, "move 1 zmove");
        assert_eq!(r.find("thunderbolt mega").unwrap().choice, "move 1 mega");
        let gen8 = MOVE_REQ.replace(r#""canTerastallize":"Electric""#, r#""canDynamax":true"#);
        let r = Request::parse(&gen8).unwrap();
        assert_eq!(r.find("thunderbolt-dynamax").unwrap().choice, "move 1 dynamax");
        assert!(r.find("thunderbolt-tera").is_none(), "no Terastallizing where the request does not offer it");
    }

    #[test]
    fn legal_actions_skip_disabled_empty_and_fainted() {
        let r = Request::parse(MOVE_REQ).unwrap();
        let names: Vec<String> = r.actions().into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["thunderbolt", "thunderbolt-tera", "switch ironvaliant"]);
        assert_eq!(r.find("Thunderbolt-Tera").unwrap().choice, "move 1 terastallize");
        assert_eq!(r.find("move thunderbolt").unwrap().choice, "move 1");
        assert_eq!(r.find("switch Iron Valiant").unwrap().choice, "switch 2");
        assert!(r.find("protect").is_none());
        assert!(r.find("voltswitch").is_none());
        assert!(r.find("switch mew").is_none());
        assert!(r.find("move 1\n>eval process.exit()").is_none());
        assert_eq!(r.rqid, Some(7));
    }

    const DOUBLES_REQ: &str = r#"{"active":[
        {"moves":[{"move":"Heat Wave","id":"heatwave","pp":16,"target":"allAdjacentFoes","disabled":false},
                  {"move":"Thunderbolt","id":"thunderbolt","pp":24,"target":"normal","disabled":false},
                  {"move":"Helping Hand","id":"helpinghand","pp":32,"target":"adjacentAlly","disabled":false}]},
        {"moves":[{"move":"Protect","id":"protect","pp":16,"target":"self","disabled":false},
                  {"move":"Dark Pulse","id":"darkpulse","pp":24,"target":"any","disabled":false}]}],
      "side":{"id":"p1","pokemon":[
        {"ident":"p1: Rotom","details":"Rotom-Heat, L80","condition":"200/200","active":true},
        {"ident":"p1: Kingambit","details":"Kingambit, L80","condition":"250/250","active":true},
        {"ident":"p1: Amoonguss","details":"Amoonguss, L80","condition":"250/250","active":false},
        {"ident":"p1: Mew","details":"Mew, L80","condition":"0 fnt","active":false}]},"rqid":3}"#;

    #[test]
    fn doubles_actions_name_their_targets_and_a_decision_takes_one_per_position() {
        let r = Request::parse(DOUBLES_REQ).unwrap();
        assert_eq!(r.positions(), 2);
        let first: Vec<String> = r.position_actions(0).into_iter().map(|a| a.name).collect();
        assert_eq!(
            first,
            ["heatwave", "thunderbolt 1", "thunderbolt 2", "thunderbolt -2", "helpinghand -2", "switch amoonguss"],
            "a spread move names no target, a single-target move each adjacent one, ally moves the ally"
        );
        let second: Vec<String> = r.position_actions(1).into_iter().map(|a| a.name).collect();
        assert_eq!(second, ["protect", "darkpulse 1", "darkpulse 2", "darkpulse -1", "switch amoonguss"]);
        let d = r.decide("Thunderbolt 2, protect").unwrap();
        assert_eq!(d.choice, "move 2 2, move 1");
        assert_eq!(d.name(), "thunderbolt 2, protect");
        assert_eq!(r.decide("heatwave, dark pulse -1").unwrap().choice, "move 1, move 2 -1");
        assert!(r.decide("thunderbolt 2").unwrap_err().contains("takes 2 actions"));
        assert!(r.decide("thunderbolt 3, protect").unwrap_err().contains("not a legal action for position 1"));
        assert!(r.decide("switch amoonguss, switch amoonguss").unwrap_err().contains("cannot both"));
        let tera = DOUBLES_REQ
            .replace(r#""target":"self","disabled":false}"#, r#""target":"self","disabled":false}],"canTerastallize":"Dark","x":[{}"#)
            .replace(r#"{"moves":[{"move":"Heat Wave""#, r#"{"canTerastallize":"Fire","moves":[{"move":"Heat Wave""#);
        let r = Request::parse(&tera).unwrap();
        assert_eq!(r.decide("heatwave-tera, protect-tera").unwrap_err(), "only one position may use `-tera`: it is once a battle");
        assert_eq!(r.decide("heatwave-tera, protect").unwrap().choice, "move 1 terastallize, move 1");
        assert!(same_decision("Thunderbolt 2,Protect", "thunderbolt 2, protect"));
        assert!(!same_decision("thunderbolt -2, protect", "thunderbolt 2, protect"));
        // After a knockout only the fainted position switches; the other passes.
        let forced = DOUBLES_REQ.replace(r#""active":["#, r#""forceSwitch":[false,true],"unused":["#);
        let r = Request::parse(&forced).unwrap();
        assert_eq!(r.open_positions(), [1]);
        assert_eq!(r.decide("switch amoonguss").unwrap().choice, "pass, switch 3");
        // Both fainted, one to send in: one position switches, the other passes.
        let both = forced.replace("[false,true]", "[true,true]");
        let r = Request::parse(&both).unwrap();
        assert_eq!(r.passes_allowed(), 1);
        assert_eq!(r.decide("pass, switch amoonguss").unwrap().choice, "pass, switch 3");
        assert!(r.decide("pass, pass").unwrap_err().contains("only 1 position may pass"));
    }

    #[test]
    fn triples_targets_follow_adjacency() {
        assert_eq!(targets("normal", 0, 3), [Some(2), Some(3), Some(-2)]);
        assert_eq!(targets("normal", 1, 3), [Some(1), Some(2), Some(3), Some(-1), Some(-3)]);
        assert_eq!(targets("any", 0, 3), [Some(1), Some(2), Some(3), Some(-2), Some(-3)]);
        assert_eq!(targets("adjacentAllyOrSelf", 2, 3), [Some(-2), Some(-3)]);
        assert_eq!(targets("allAdjacentFoes", 1, 3), [None]);
    }

    #[test]
    fn forced_switches_trapping_and_waits() {
        let forced = r#"{"forceSwitch":[true],"side":{"id":"p1","pokemon":[
            {"ident":"p1: A","details":"Mew","condition":"0 fnt","active":true},
            {"ident":"p1: B","details":"Ditto","condition":"10/100 par","active":false}]},"noCancel":true}"#;
        let r = Request::parse(forced).unwrap();
        assert_eq!(r.actions().iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["switch ditto"]);
        let trapped = r#"{"active":[{"moves":[{"move":"Tackle","id":"tackle","pp":5,"disabled":false}],"trapped":true}],
            "side":{"pokemon":[{"ident":"p1: A","details":"Mew","condition":"1/1","active":true},{"ident":"p1: B","details":"Ditto","condition":"1/1"}]}}"#;
        assert_eq!(Request::parse(trapped).unwrap().actions().len(), 1);
        assert!(Request::parse(r#"{"wait":true,"side":{}}"#).unwrap().actions().is_empty());
        let reviving = r#"{"forceSwitch":[true],"side":{"id":"p1","pokemon":[
            {"ident":"p1: A","details":"Pawmot","condition":"50/100","active":true,"reviving":true},
            {"ident":"p1: B","details":"Ditto","condition":"0 fnt"},
            {"ident":"p1: C","details":"Mew","condition":"5/100"}]}}"#;
        let names: Vec<String> = Request::parse(reviving).unwrap().actions().into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["switch ditto"], "Revival Blessing picks a fainted Pokémon");
        // Doubles: the only fainted Pokémon is the ally still in its slot.
        let ally = r#"{"forceSwitch":[true,false],"side":{"id":"p1","pokemon":[
            {"ident":"p1a: Rabsca","details":"Rabsca","condition":"50/100","active":true,"reviving":true},
            {"ident":"p1b: Ditto","details":"Ditto","condition":"0 fnt","active":true},
            {"ident":"p1: Mew","details":"Mew","condition":"5/100"}]}}"#;
        let r = Request::parse(ally).unwrap();
        let names: Vec<String> = r.actions().into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["switch ditto"], "a fainted ally on the field may be revived; no pass");
        assert_eq!(r.passes_allowed(), 0);
        assert!(Request::parse("{not json").is_err());
    }
}
