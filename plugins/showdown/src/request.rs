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

/// One thing the agent may do now.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// What the agent writes: a move id (`thunderbolt`), `<move>-tera`,
    /// `switch <species id>`, or `team <species id>` for team preview.
    pub name: String,
    pub kind: Kind,
    /// The choice we send (`move 1 terastallize`, `switch 3`, `team 2`).
    pub choice: String,
    /// Index into `active[0].moves` or `side.pokemon`.
    pub index: usize,
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

    /// Every legal action, moves first (singles: one active slot).
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
                })
                .collect();
        }
        let mut out = Vec::new();
        let slot = self.active.first().filter(|_| !self.must_switch());
        if let Some(slot) = slot {
            for (i, m) in slot.moves.iter().enumerate().filter(|(_, m)| m.usable()) {
                let id = if m.id.is_empty() { to_id(&m.name) } else { m.id.clone() };
                out.push(Action { name: id.clone(), kind: Kind::Move, choice: format!("move {}", i + 1), index: i });
                // The once-a-battle mechanics of each generation, as the request offers them.
                let offered = [
                    (slot.can_terastallize.is_some(), "tera", "terastallize"),
                    (slot.can_mega_evo, "mega", "mega"),
                    (slot.can_z_move.get(i).is_some_and(Option::is_some), "zmove", "zmove"),
                    (slot.can_dynamax, "dynamax", "dynamax"),
                ];
                for (_, suffix, word) in offered.into_iter().filter(|(can, _, _)| *can) {
                    out.push(Action {
                        name: format!("{id}-{suffix}"),
                        kind: Kind::Move,
                        choice: format!("move {} {word}", i + 1),
                        index: i,
                    });
                }
            }
        }
        let trapped = slot.is_some_and(|s| s.trapped);
        let reviving = self.must_switch() && self.side.pokemon.iter().any(|p| p.reviving);
        if !trapped {
            for (i, p) in self.side.pokemon.iter().enumerate() {
                if !p.active && p.fainted() == reviving {
                    out.push(Action {
                        name: format!("switch {}", to_id(p.species())),
                        kind: Kind::Switch,
                        choice: format!("switch {}", i + 1),
                        index: i,
                    });
                }
            }
        }
        if out.is_empty() {
            // A request we cannot read into choices: let the simulator pick.
            out.push(Action { name: "default".into(), kind: Kind::Move, choice: "default".into(), index: 0 });
        }
        out
    }

    /// Finds the agent's action: case, spaces and punctuation do not matter
    /// (`Thunderbolt`, `switch Iron Valiant`); anything else is refused.
    pub fn find(&self, wanted: &str) -> Option<Action> {
        let key = action_key(wanted);
        self.actions().into_iter().find(|a| action_key(&a.name) == key)
    }
}

/// What a move's action may end with: Terastallize (9), Mega Evolve (6–7),
/// its Z-move (7), Dynamax (8).
const MECHANICS: [&str; 4] = ["tera", "mega", "zmove", "dynamax"];

/// `switch Iron-Valiant` → `switch ironvaliant`; `Thunderbolt-Tera` → `thunderbolt-tera`.
fn action_key(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
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
        assert!(Request::parse("{not json").is_err());
    }
}
