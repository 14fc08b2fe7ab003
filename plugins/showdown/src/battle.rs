//! The battle as one player sees it: built from the public log and our own
//! `|request|` JSON. The opponent's side holds only what has been revealed.

use std::collections::BTreeMap;

use crate::protocol::fields;
use crate::request::Request;

/// One Pokémon as seen from our seat.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mon {
    /// The nickname shown in the log (`p2a: Name` → `Name`).
    pub name: String,
    pub species: String,
    pub level: u32,
    /// Percent of full HP (exact numbers for our own side come from the request).
    pub hp_percent: u32,
    pub status: Option<String>,
    pub fainted: bool,
    pub active: bool,
    pub boosts: BTreeMap<String, i32>,
    /// Moves seen in battle (for the opponent: revealed only).
    pub moves: Vec<String>,
    pub item: Option<String>,
    pub ability: Option<String>,
    pub tera: Option<String>,
    /// Volatile conditions now on it (`-start` … `-end`), as the simulator
    /// names them: Substitute, confusion, Leech Seed, Taunt, Encore, perish2…
    /// They leave with it when it switches out or faints.
    pub volatiles: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SideView {
    pub player: String,
    pub mons: Vec<Mon>,
    pub conditions: Vec<String>,
}

impl SideView {
    pub fn active(&self) -> Option<&Mon> {
        self.mons.iter().find(|m| m.active)
    }

    fn mon(&mut self, name: &str) -> &mut Mon {
        let i = match self.mons.iter().position(|m| m.name == name) {
            Some(i) => i,
            None => {
                self.mons.push(Mon { name: name.to_string(), hp_percent: 100, ..Mon::default() });
                self.mons.len() - 1
            }
        };
        &mut self.mons[i]
    }
}

#[derive(Debug, Clone, Default)]
pub struct Battle {
    /// `p1` or `p2`: our seat, from the request (`side.id`).
    pub me: String,
    pub sides: BTreeMap<String, SideView>,
    pub turn: u32,
    pub weather: Option<String>,
    pub fields: Vec<String>,
    pub request: Option<Request>,
    /// Counts requests that asked us for a decision.
    pub decision_seq: u64,
    pub winner: Option<String>,
    pub tie: bool,
    /// `|inactive|` text of the battle timer (online).
    pub timer: Option<String>,
    /// What happened, one readable line per event, for this turn and the last.
    pub recent: Vec<String>,
    pub previous_turn: Vec<String>,
    /// Every public log line (kept for replays and reproducibility checks).
    pub log: Vec<String>,
}

impl Battle {
    pub fn over(&self) -> bool {
        self.winner.is_some() || self.tie
    }

    pub fn opponent(&self) -> String {
        if self.me == "p2" { "p1".into() } else { "p2".into() }
    }

    pub fn my_side(&self) -> Option<&SideView> {
        self.sides.get(&self.me)
    }

    pub fn their_side(&self) -> Option<&SideView> {
        self.sides.get(&self.opponent())
    }

    /// The request we must answer now, if any.
    pub fn pending(&self) -> Option<&Request> {
        self.request.as_ref().filter(|r| r.needs_decision() && !self.over())
    }

    pub fn on_request(&mut self, request: Request) {
        if !request.side.id.is_empty() {
            self.me = request.side.id.clone();
        }
        if request.needs_decision() {
            self.decision_seq += 1;
        }
        self.sync_own_side(&request);
        self.request = Some(request);
    }

    /// Our own side is known exactly from the request.
    fn sync_own_side(&mut self, request: &Request) {
        let me = self.me.clone();
        let side = self.sides.entry(me).or_default();
        for p in &request.side.pokemon {
            let mon = side.mon(p.name());
            mon.species = p.species().to_string();
            mon.level = level_of(&p.details).unwrap_or(mon.level);
            let (hp, status, fainted) = parse_condition(&p.condition);
            mon.hp_percent = hp;
            mon.status = status;
            mon.fainted = fainted;
            mon.active = p.active;
            mon.moves = p.moves.clone();
            mon.item = Some(p.item.clone()).filter(|s| !s.is_empty());
            mon.ability = Some(p.ability.clone()).filter(|s| !s.is_empty());
            mon.tera = p.terastallized.clone().filter(|s| !s.is_empty());
        }
    }

    /// Applies one public log line.
    pub fn on_log(&mut self, line: &str) {
        let f = fields(line);
        let Some(&kind) = f.first() else { return };
        if kind != "t:" && !kind.is_empty() {
            self.log.push(line.to_string());
        }
        let arg = |i: usize| f.get(i).copied().unwrap_or("");
        match kind {
            "player" if !arg(2).is_empty() => self.sides.entry(arg(1).to_string()).or_default().player = arg(2).to_string(),
            "turn" => {
                self.turn = arg(1).parse().unwrap_or(self.turn);
                self.previous_turn = std::mem::take(&mut self.recent);
            }
            "switch" | "drag" | "replace" => {
                let (side, name) = ident(arg(1));
                let view = self.sides.entry(side.clone()).or_default();
                for m in &mut view.mons {
                    if m.active {
                        m.active = false;
                        m.boosts.clear();
                        m.volatiles.clear();
                    }
                }
                let mon = view.mon(&name);
                mon.active = true;
                mon.species = arg(2).split(',').next().unwrap_or("").trim().to_string();
                mon.level = level_of(arg(2)).unwrap_or(100);
                let (hp, status, fainted) = parse_condition(arg(3));
                if side != self.me {
                    (mon.hp_percent, mon.status, mon.fainted) = (hp, status, fainted);
                }
                self.note(format!("{} sent out {}", self.player(&side), mon_label(arg(2))));
            }
            "move" => {
                let (side, name) = ident(arg(1));
                let mon = self.sides.entry(side).or_default().mon(&name);
                let m = arg(2).to_string();
                if !mon.moves.iter().any(|x| crate::data::to_id(x) == crate::data::to_id(&m)) {
                    mon.moves.push(crate::data::to_id(&m));
                }
                let miss = f.iter().any(|x| *x == "[miss]");
                self.note(format!("{name} used {m}{}", if miss { " (missed)" } else { "" }));
            }
            "-damage" | "-heal" | "-sethp" => {
                let (side, name) = ident(arg(1));
                let mine = side == self.me;
                let mon = self.sides.entry(side).or_default().mon(&name);
                let (hp, status, fainted) = parse_condition(arg(2));
                let before = mon.hp_percent;
                // Our own side's exact HP comes with the request, but a knockout
                // (`0 fnt`) is news either way: a knocked-out Pokémon read as
                // "lost 0% HP, now 42%" misled agents.
                if !mine || arg(2).contains('/') || fainted {
                    (mon.hp_percent, mon.fainted) = (hp, fainted);
                    if status.is_some() || fainted {
                        mon.status = status;
                    }
                }
                let after = mon.hp_percent;
                let from = f.iter().find_map(|x| x.strip_prefix("[from] ")).map(|s| format!(" ({s})")).unwrap_or_default();
                let verb = if kind == "-damage" { "lost" } else { "gained" };
                self.note(format!("{name} {verb} {}% HP, now {after}%{from}", before.abs_diff(after)));
            }
            "faint" => {
                let (side, name) = ident(arg(1));
                let mon = self.sides.entry(side).or_default().mon(&name);
                (mon.fainted, mon.hp_percent) = (true, 0);
                mon.volatiles.clear();
                self.note(format!("{name} fainted"));
            }
            "-status" => {
                let (side, name) = ident(arg(1));
                self.sides.entry(side).or_default().mon(&name).status = Some(arg(2).to_string());
                self.note(format!("{name} is now {}", status_name(arg(2))));
            }
            "-curestatus" => {
                let (side, name) = ident(arg(1));
                self.sides.entry(side).or_default().mon(&name).status = None;
            }
            "-boost" | "-unboost" => {
                let (side, name) = ident(arg(1));
                let n: i32 = arg(3).parse().unwrap_or(0) * if kind == "-boost" { 1 } else { -1 };
                let mon = self.sides.entry(side).or_default().mon(&name);
                let b = mon.boosts.entry(arg(2).to_string()).or_insert(0);
                *b = (*b + n).clamp(-6, 6);
                self.note(format!("{name}'s {} {} {}", arg(2), if n >= 0 { "rose" } else { "fell" }, n.abs()));
            }
            "-clearboost" | "-clearallboost" | "-clearnegativeboost" => {
                let clear_all = kind == "-clearallboost";
                for (side, view) in self.sides.iter_mut() {
                    for m in view.mons.iter_mut().filter(|m| m.active) {
                        if clear_all || ident(arg(1)) == (side.clone(), m.name.clone()) {
                            m.boosts.retain(|_, v| kind == "-clearnegativeboost" && *v > 0);
                        }
                    }
                }
            }
            "-start" | "-end" => {
                let (side, name) = ident(arg(1));
                let effect = effect_name(arg(2));
                if effect.is_empty() {
                    return;
                }
                let mon = self.sides.entry(side).or_default().mon(&name);
                // Perish Song counts down as new effects (perish3, perish2, …).
                let same = |v: &String| crate::data::to_id(v) == crate::data::to_id(&effect) || (effect.starts_with("perish") && v.starts_with("perish"));
                mon.volatiles.retain(|v| !same(v));
                if kind == "-start" {
                    mon.volatiles.push(effect.clone());
                    self.note(format!("{name}: {effect} started"));
                } else {
                    self.note(format!("{name}: {effect} ended"));
                }
            }
            "-weather" => {
                self.weather = Some(arg(1)).filter(|w| *w != "none").map(str::to_string);
            }
            "-fieldstart" => self.fields.push(arg(1).trim_start_matches("move: ").to_string()),
            "-fieldend" => {
                let what = arg(1).trim_start_matches("move: ");
                self.fields.retain(|x| x != what);
            }
            "-sidestart" | "-sideend" => {
                let side = arg(1).split(':').next().unwrap_or("").trim().to_string();
                let what = arg(2).trim_start_matches("move: ").to_string();
                let view = self.sides.entry(side).or_default();
                if kind == "-sidestart" {
                    view.conditions.push(what);
                } else {
                    view.conditions.retain(|c| *c != what);
                }
            }
            "-item" | "-enditem" => {
                let (side, name) = ident(arg(1));
                let mon = self.sides.entry(side).or_default().mon(&name);
                mon.item = if kind == "-item" { Some(arg(2).to_string()) } else { Some(String::new()) };
            }
            "-ability" => {
                let (side, name) = ident(arg(1));
                self.sides.entry(side).or_default().mon(&name).ability = Some(arg(2).to_string());
            }
            "-terastallize" => {
                let (side, name) = ident(arg(1));
                self.sides.entry(side).or_default().mon(&name).tera = Some(arg(2).to_string());
                self.note(format!("{name} terastallized into the {} type", arg(2)));
            }
            "detailschange" | "-formechange" => {
                let (side, name) = ident(arg(1));
                let species = arg(2).split(',').next().unwrap_or("").trim().to_string();
                if !species.is_empty() {
                    self.sides.entry(side).or_default().mon(&name).species = species;
                }
            }
            "-supereffective" => self.note("It's super effective!".into()),
            "-resisted" => self.note("It's not very effective…".into()),
            "-immune" => self.note(format!("{} is immune", ident(arg(1)).1)),
            "-crit" => self.note("A critical hit!".into()),
            "cant" => self.note(format!("{} can't move ({})", ident(arg(1)).1, arg(2))),
            "inactive" => self.timer = Some(arg(1).to_string()),
            "inactiveoff" => self.timer = None,
            "win" => {
                self.winner = Some(arg(1).to_string());
                self.note(format!("{} won the battle", arg(1)));
            }
            "tie" => {
                self.tie = true;
                self.note("The battle ended in a tie".into());
            }
            _ => {}
        }
    }

    fn note(&mut self, s: String) {
        self.recent.push(s);
    }

    fn player(&self, side: &str) -> String {
        match self.sides.get(side).map(|s| s.player.as_str()).filter(|p| !p.is_empty()) {
            Some(p) => p.to_string(),
            None => side.to_string(),
        }
    }
}

/// `p2a: Great Tusk` → (`p2`, `Great Tusk`).
pub fn ident(s: &str) -> (String, String) {
    let (pos, name) = s.split_once(": ").unwrap_or((s, ""));
    (pos.chars().take(2).collect(), name.trim().to_string())
}

/// `Species, L84, F` → 84.
pub fn level_of(details: &str) -> Option<u32> {
    details.split(", ").find_map(|p| p.strip_prefix('L')).and_then(|l| l.parse().ok())
}

/// `Great Tusk, L84` → `Great Tusk (L84)`.
fn mon_label(details: &str) -> String {
    let species = details.split(',').next().unwrap_or("").trim();
    match level_of(details) {
        Some(l) => format!("{species} (L{l})"),
        None => species.to_string(),
    }
}

/// An effect as the protocol writes it (`move: Leech Seed`, `ability: Flash
/// Fire`, `Substitute`), without its kind.
fn effect_name(raw: &str) -> String {
    let name = raw.split_once(": ").map_or(raw, |(kind, name)| if ["move", "ability", "item"].contains(&kind) { name } else { raw });
    name.trim().to_string()
}

/// `55/100 par` → (55, Some(par), false); `0 fnt` → (0, None, true); exact
/// numbers become a percentage.
pub fn parse_condition(c: &str) -> (u32, Option<String>, bool) {
    let mut parts = c.split_whitespace();
    let hp = parts.next().unwrap_or("100");
    let rest = parts.next();
    if rest == Some("fnt") || hp == "0" {
        return (0, None, true);
    }
    let percent = match hp.split_once('/') {
        Some((cur, max)) => {
            let (cur, max) = (cur.parse::<u64>().unwrap_or(0), max.parse::<u64>().unwrap_or(100).max(1));
            let p = (cur * 100).div_ceil(max) as u32;
            if cur > 0 { p.max(1) } else { 0 }
        }
        None => hp.parse().unwrap_or(100),
    };
    (percent.min(100), rest.map(str::to_string), false)
}

pub fn status_name(s: &str) -> &str {
    match s {
        "par" => "paralyzed",
        "brn" => "burned",
        "psn" => "poisoned",
        "tox" => "badly poisoned",
        "slp" => "asleep",
        "frz" => "frozen",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_build_the_public_view() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in [
            "|player|p1|Ada|",
            "|player|p2|Bot|",
            "|switch|p1a: Pikachu|Pikachu, L92, M|100/100",
            "|switch|p2a: Gyarados|Gyarados, L80, F|100/100",
            "|turn|1",
            "|move|p1a: Pikachu|Thunderbolt|p2a: Gyarados",
            "|-supereffective|p2a: Gyarados",
            "|-damage|p2a: Gyarados|12/100 par",
            "|-boost|p2a: Gyarados|atk|2",
            "|-terastallize|p2a: Gyarados|Ground",
            "|move|p2a: Gyarados|Earthquake|p1a: Pikachu",
            "|faint|p1a: Pikachu",
            "|win|Bot",
        ] {
            b.on_log(l);
        }
        let g = &b.their_side().unwrap().mons[0];
        assert_eq!((g.species.as_str(), g.level, g.hp_percent), ("Gyarados", 80, 12));
        assert_eq!(g.status.as_deref(), Some("par"));
        assert_eq!(g.boosts["atk"], 2);
        assert_eq!(g.tera.as_deref(), Some("Ground"));
        assert_eq!(g.moves, ["earthquake"]);
        assert!(b.my_side().unwrap().mons[0].fainted);
        assert_eq!((b.turn, b.winner.as_deref()), (1, Some("Bot")));
        assert!(b.recent.iter().any(|r| r == "Gyarados lost 88% HP, now 12%"), "{:?}", b.recent);
    }

    #[test]
    fn volatile_conditions_start_end_and_leave_with_their_pokemon() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for line in [
            "|switch|p2a: Gengar|Gengar, L80|100/100",
            "|-start|p2a: Gengar|Substitute",
            "|-start|p2a: Gengar|confusion",
            "|-start|p2a: Gengar|move: Leech Seed",
            "|-start|p2a: Gengar|move: Taunt",
            "|-start|p2a: Gengar|perish3",
            "|-start|p2a: Gengar|perish2",
            "|-end|p2a: Gengar|confusion",
            "|-end|p2a: Gengar|move: Taunt|[silent]",
        ] {
            b.on_log(line);
        }
        let gengar = |b: &Battle| b.sides["p2"].mons.iter().find(|m| m.name == "Gengar").unwrap().volatiles.clone();
        assert_eq!(gengar(&b), ["Substitute", "Leech Seed", "perish2"]);
        b.on_log("|switch|p2a: Snorlax|Snorlax, L80|100/100");
        assert!(gengar(&b).is_empty(), "volatiles leave with the Pokémon");
        b.on_log("|switch|p2a: Gengar|Gengar, L80|100/100");
        b.on_log("|-start|p2a: Gengar|Encore");
        b.on_log("|faint|p2a: Gengar");
        assert!(gengar(&b).is_empty(), "and with a knockout");
    }

    #[test]
    fn a_knockout_of_our_own_pokemon_reads_as_a_knockout() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in [
            "|player|p1|You|",
            "|player|p2|Bot|",
            "|switch|p1a: Alomomola|Alomomola, L88, F|407/407",
            "|switch|p2a: Glalie|Glalie, L90, M|100/100",
            "|-damage|p1a: Alomomola|171/407",
            "|move|p2a: Glalie|Freeze-Dry|p1a: Alomomola",
            "|-damage|p1a: Alomomola|0 fnt",
            "|faint|p1a: Alomomola",
        ] {
            b.on_log(l);
        }
        assert!(b.recent.iter().any(|r| r == "Alomomola lost 43% HP, now 0%"), "{:?}", b.recent);
        assert!(!b.recent.iter().any(|r| r.contains("lost 0% HP")), "{:?}", b.recent);
    }

    #[test]
    fn conditions_parse_without_panicking() {
        assert_eq!(parse_condition("150/300 brn"), (50, Some("brn".into()), false));
        assert_eq!(parse_condition("0 fnt"), (0, None, true));
        assert_eq!(parse_condition("1/400"), (1, None, false));
        assert_eq!(parse_condition(""), (100, None, false));
        assert_eq!(parse_condition("x/y"), (0, None, false));
        let mut b = Battle::default();
        for junk in ["|", "||||", "|switch|", "|-damage|p2a", "|turn|x", "|-boost|p1a: X|atk|lots"] {
            b.on_log(junk);
        }
    }
}
