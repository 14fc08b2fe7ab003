//! The battle as one player sees it: built from the public log and our own
//! `|request|` JSON. The opponent's side holds only what has been revealed.

use std::collections::BTreeMap;

use crate::data::{data, to_id};
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
    /// Our own side: exact (current, maximum) HP from the request.
    pub hp: Option<(u32, u32)>,
    pub status: Option<String>,
    pub fainted: bool,
    pub active: bool,
    /// Where it stands while active: 0 (the left, the only one in singles), 1, 2.
    pub position: Option<usize>,
    pub boosts: BTreeMap<String, i32>,
    /// Moves seen in battle (for the opponent: revealed only).
    pub moves: Vec<String>,
    /// `Some("")` once the item is gone (knocked off, eaten, popped).
    pub item: Option<String>,
    /// The item it lost last: a later `[from] item:` naming it is its last
    /// act (a berry's heal), not a new item.
    pub last_item: Option<String>,
    pub ability: Option<String>,
    pub tera: Option<String>,
    /// A forme it holds only while in battle (Cramorant-Gulping,
    /// Morpeko-Hangry, or what a Transform copied); shown as its species.
    pub forme: Option<String>,
    /// The Pokémon it transformed into (side, name): the moves it uses
    /// while transformed are that one's.
    pub copied_from: Option<(String, String)>,
    /// Volatile conditions now on it (`-start` … `-end`), as the simulator
    /// names them: Substitute, confusion, Leech Seed, Taunt, Encore, perish2…
    /// They leave with it when it switches out or faints.
    pub volatiles: Vec<String>,
    /// The turn each volatile condition began (by id): the engine counts
    /// Taunt's and Yawn's turns from it.
    pub volatile_since: BTreeMap<String, u32>,
    /// Known from team preview only: its name is the species until it
    /// comes out (under a nickname, perhaps).
    pub previewed: bool,
}

impl Mon {
    /// The species as it stands in battle now (a temporary forme if any).
    pub fn shown_species(&self) -> &str {
        self.forme.as_deref().unwrap_or(&self.species)
    }

    /// Notes a move it has shown.
    fn learn(&mut self, name: &str) {
        let id = to_id(name);
        if !id.is_empty() && !self.moves.contains(&id) {
            self.moves.push(id);
        }
    }

    /// What ends when it leaves the field: being active, stat stages,
    /// volatile conditions, a temporary forme.
    fn leave_battle(&mut self) {
        self.active = false;
        self.position = None;
        self.boosts.clear();
        self.volatiles.clear();
        self.volatile_since.clear();
        self.forme = None;
        self.copied_from = None;
    }
}

#[derive(Debug, Clone, Default)]
pub struct SideView {
    pub player: String,
    pub mons: Vec<Mon>,
    pub conditions: Vec<String>,
}

impl SideView {
    /// The Pokémon `name` names: by its name, its species, or the forme
    /// the battle shows now (Minior-Meteor, a Cramorant gulping).
    pub fn find(&self, name: &str) -> Option<&Mon> {
        let key = to_id(name);
        self.mons.iter().find(|m| [m.name.as_str(), &m.species, m.shown_species()].iter().any(|n| to_id(n) == key))
    }

    /// Our own Zoroark in disguise: the log names the Pokémon it imitates,
    /// the request the real one. What the disguise gained in battle
    /// (boosts, volatiles) is the real one's, and the imitated one is not
    /// in battle.
    fn see_through_disguises(&mut self, request: &Request) {
        let active: Vec<(usize, &str)> =
            request.side.pokemon.iter().enumerate().filter(|(_, p)| p.active).map(|(i, p)| (i, p.name())).collect();
        for &(pos, real) in &active {
            let Some(shown) = self
                .mons
                .iter_mut()
                .find(|m| m.active && m.position == Some(pos) && m.name != real && !active.iter().any(|(_, n)| *n == m.name))
            else {
                continue;
            };
            let (boosts, volatiles, since) =
                (std::mem::take(&mut shown.boosts), std::mem::take(&mut shown.volatiles), std::mem::take(&mut shown.volatile_since));
            shown.leave_battle();
            let mon = self.mon(real);
            (mon.boosts, mon.volatiles, mon.volatile_since) = (boosts, volatiles, since);
        }
    }

    pub fn active(&self) -> Option<&Mon> {
        self.mons.iter().find(|m| m.active)
    }

    /// A Pokémon coming out under `name`: the one team preview showed as
    /// its species takes that name (`Urshifu-*` stands for any Urshifu).
    fn claim_previewed(&mut self, name: &str, species: &str) {
        if self.mons.iter().any(|m| m.name == name) {
            return;
        }
        let base = |s: &str| to_id(s.split('-').next().unwrap_or(s));
        let shown = |m: &Mon| m.species == species || (m.species.ends_with("-*") && base(&m.species) == base(species));
        if let Some(m) = self.mons.iter_mut().find(|m| m.previewed && shown(m)) {
            m.name = name.to_string();
            m.previewed = false;
        }
    }

    /// The active Pokémon from the left (one in singles).
    pub fn actives(&self) -> Vec<&Mon> {
        let mut on: Vec<&Mon> = self.mons.iter().filter(|m| m.active).collect();
        on.sort_by_key(|m| m.position);
        on
    }

    /// The active Pokémon at `pos` (0-based from the left).
    pub fn at(&self, pos: usize) -> Option<&Mon> {
        self.mons.iter().find(|m| m.active && m.position == Some(pos))
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
    /// The simulator refused a choice as unavailable (a trap or a disabled
    /// move the request could not show) and a corrected request follows:
    /// until it arrives, the old one is not ours to answer.
    pub correction_due: bool,
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
    /// Our `|request|` JSON, each with the length of `log` when it arrived:
    /// with the log, the stream a Showdown client of our seat receives.
    pub requests: Vec<(usize, String)>,
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
        self.request.as_ref().filter(|r| r.needs_decision() && !self.over() && !self.correction_due)
    }

    pub fn on_request(&mut self, request: Request) {
        if !request.side.id.is_empty() {
            self.me = request.side.id.clone();
        }
        if request.needs_decision() {
            self.decision_seq += 1;
        }
        self.correction_due = false;
        self.sync_own_side(&request);
        self.request = Some(request);
    }

    /// Keeps a request of ours as it arrived, for [`Battle::protocol`].
    pub fn record_request(&mut self, json: &str) {
        self.requests.push((self.log.len(), json.to_string()));
    }

    /// Our seat's protocol stream: the public log with each of our requests
    /// where it arrived (`|request|{…}`), what a Showdown client library such
    /// as `@pkmn/client` reads.
    pub fn protocol(&self) -> String {
        let mut out = String::new();
        let mut requests = self.requests.iter().peekable();
        // Up to and including the log's end: a request may follow the last line.
        for i in 0..=self.log.len() {
            while let Some((_, json)) = requests.next_if(|(at, _)| *at == i) {
                out.push_str("|request|");
                out.push_str(json);
                out.push('\n');
            }
            if let Some(line) = self.log.get(i) {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// Our own side is known exactly from the request.
    fn sync_own_side(&mut self, request: &Request) {
        let me = self.me.clone();
        let side = self.sides.entry(me).or_default();
        side.see_through_disguises(request);
        let mut copied = None;
        for (i, p) in request.side.pokemon.iter().enumerate() {
            let mon = side.mon(p.name());
            mon.species = p.species().to_string();
            mon.level = level_of(&p.details).unwrap_or(100);
            let (hp, status, fainted) = parse_condition(&p.condition);
            mon.hp_percent = hp;
            // A fainted Pokémon's condition (`0 fnt`) no longer says its maximum.
            let known_max = mon.hp.map_or(0, |(_, max)| max);
            mon.hp = exact_hp(&p.condition).map(|(cur, max)| (cur, if max == 0 { known_max } else { max }));
            mon.status = status;
            mon.fainted = fainted;
            // A fainted Pokémon waiting to be replaced holds its slot but is not in battle.
            mon.active = p.active && !fainted;
            // The request lists the active Pokémon first, from the left.
            mon.position = mon.active.then_some(i);
            mon.moves = p.moves.clone();
            // Named as the log names the opponent's: the same spelling for both sides.
            mon.item = Some(p.item.clone()).filter(|s| !s.is_empty()).map(|i| data().item_name(&i));
            mon.ability = Some(p.ability.clone()).filter(|s| !s.is_empty()).map(|a| data().ability_name(&a));
            mon.tera = p.terastallized.clone().filter(|s| !s.is_empty());
            if let Some(target) = mon.copied_from.clone().filter(|_| mon.active) {
                copied = Some((target, p.moves.clone()));
            }
        }
        // The request's order, as Showdown's own client shows the team (the
        // active Pokémon first): the order is then the server's, the same
        // after a rejoin as before it, not the order we first saw each one in.
        let place = |m: &Mon| request.side.pokemon.iter().position(|p| p.name() == m.name).unwrap_or(usize::MAX);
        side.mons.sort_by_key(place);
        // Transformed, ours can use exactly the moves of the one it copied.
        if let Some(((side, name), moves)) = copied {
            let target = self.sides.entry(side).or_default().mon(&name);
            moves.iter().for_each(|m| target.learn(m));
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
        self.reveal(kind, &f);
        match kind {
            "player" if !arg(2).is_empty() => self.sides.entry(arg(1).to_string()).or_default().player = arg(2).to_string(),
            "turn" => {
                self.turn = arg(1).parse().unwrap_or(self.turn);
                self.previous_turn = std::mem::take(&mut self.recent);
            }
            "replace" => self.unmask(ident(arg(1)), position_of(arg(1)), arg(2)),
            // Team preview shows the opponent's whole team (our own comes with the request).
            "poke" if arg(1) != self.me && !arg(2).is_empty() => {
                let species = species_of(arg(2)).to_string();
                let view = self.sides.entry(arg(1).to_string()).or_default();
                if !view.mons.iter().any(|m| m.species == species) {
                    let level = level_of(arg(2)).unwrap_or(100);
                    view.mons.push(Mon { name: species.clone(), species, level, hp_percent: 100, previewed: true, ..Mon::default() });
                }
            }
            "switch" | "drag" => {
                let (side, name) = ident(arg(1));
                let pos = position_of(arg(1));
                let view = self.sides.entry(side.clone()).or_default();
                view.claim_previewed(&name, species_of(arg(2)));
                // The one it replaces at its position leaves (in doubles the other stays).
                for m in &mut view.mons {
                    if m.active && (m.position == Some(pos) || m.position.is_none()) {
                        m.leave_battle();
                    }
                }
                let mon = view.mon(&name);
                // Shed Tail hands its substitute to the Pokémon it brings in.
                if tag(&f, "from") == Some("Shed Tail") && !mon.volatiles.iter().any(|v| v == "Substitute") {
                    mon.volatiles.push("Substitute".into());
                }
                mon.active = true;
                mon.position = Some(pos);
                mon.species = species_of(arg(2)).to_string();
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
                // A move called by another (Magic Bounce, Dancer, a locked-in
                // repeat) is not one of its own; Sleep Talk calls its own.
                let own = match tag(&f, "from") {
                    None => true,
                    Some(from) => from.ends_with("Sleep Talk") || from == "Pursuit",
                };
                match mon.copied_from.clone() {
                    Some((side, name)) if own => self.sides.entry(side).or_default().mon(&name).learn(&m),
                    _ if own => mon.learn(&m),
                    _ => {}
                }
                let miss = f.contains(&"[miss]");
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
                // No request follows the last hit of a battle: our exact HP goes to 0 here.
                if fainted {
                    mon.hp = mon.hp.map(|(_, max)| (0, max));
                }
                let after = mon.hp_percent;
                let from = tag(&f, "from").map(|s| format!(" ({s})")).unwrap_or_default();
                let verb = if kind == "-damage" { "lost" } else { "gained" };
                self.note(format!("{name} {verb} {}% HP, now {after}%{from}", before.abs_diff(after)));
            }
            "faint" => {
                let (side, name) = ident(arg(1));
                let mon = self.sides.entry(side).or_default().mon(&name);
                (mon.fainted, mon.hp_percent) = (true, 0);
                mon.hp = mon.hp.map(|(_, max)| (0, max));
                mon.leave_battle();
                self.note(format!("{name} fainted"));
            }
            "-status" => {
                let (side, name) = ident(arg(1));
                self.sides.entry(side).or_default().mon(&name).status = Some(arg(2).to_string());
                self.note(format!("{name} is now {}", status_name(arg(2))));
            }
            "-curestatus" => {
                self.mon_at(arg(1)).status = None;
            }
            "-boost" | "-unboost" => {
                let (side, name) = ident(arg(1));
                let n: i32 = arg(3).parse().unwrap_or(0) * if kind == "-boost" { 1 } else { -1 };
                let mon = self.sides.entry(side).or_default().mon(&name);
                let b = mon.boosts.entry(arg(2).to_string()).or_insert(0);
                *b = (*b + n).clamp(-6, 6);
                self.note(format!("{name}'s {} {} {}", arg(2), if n >= 0 { "rose" } else { "fell" }, n.abs()));
            }
            "-setboost" => {
                let (side, name) = ident(arg(1));
                let n: i32 = arg(3).parse().unwrap_or(0);
                self.sides.entry(side).or_default().mon(&name).boosts.insert(arg(2).to_string(), n.clamp(-6, 6));
            }
            "-invertboost" => {
                self.mon_at(arg(1)).boosts.values_mut().for_each(|v| *v = -*v);
            }
            "-clearpositiveboost" => {
                self.mon_at(arg(1)).boosts.retain(|_, v| *v < 0);
            }
            "-swapboost" | "-copyboost" => self.move_boosts(kind, ident(arg(1)), ident(arg(2)), arg(3)),
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
            // Future Sight and Doom Desire wait on the user's side (`-start` by
            // the user), and end on the target (`-end` on the other side).
            "-start" | "-end" if ["Future Sight", "Doom Desire"].contains(&effect_name(arg(2)).as_str()) => {
                let (side, name) = ident(arg(1));
                let effect = effect_name(arg(2));
                let users_side = match (kind, side.as_str()) {
                    ("-start", _) => side,
                    (_, "p1") => "p2".to_string(),
                    _ => "p1".to_string(),
                };
                let view = self.sides.entry(users_side).or_default();
                view.conditions.retain(|c| *c != effect);
                if kind == "-start" {
                    view.conditions.push(effect.clone());
                    self.note(format!("{name} foresaw an attack ({effect})"));
                }
            }
            "-start" | "-end" => {
                let (side, name) = ident(arg(1));
                let effect = effect_name(arg(2));
                if effect.is_empty() {
                    return;
                }
                let turn = self.turn;
                let mon = self.sides.entry(side).or_default().mon(&name);
                if kind == "-start" {
                    mon.volatile_since.insert(to_id(&effect), turn);
                } else {
                    mon.volatile_since.remove(&to_id(&effect));
                }
                // Perish Song and Stockpile count as new effects (perish3, perish2, …).
                let counter = |v: &str| ["perish", "stockpile"].into_iter().find(|p| v.starts_with(p));
                let same = |v: &String| to_id(v) == to_id(&effect) || (counter(v).is_some() && counter(v) == counter(&effect));
                mon.volatiles.retain(|v| !same(v));
                if effect == "Illusion" {
                    mon.ability = Some(effect.clone());
                }
                if kind == "-start" {
                    // A terastallized Pokémon keeps its Tera type whatever changes its types.
                    if !(effect == "typechange" && mon.tera.is_some()) {
                        mon.volatiles.push(effect.clone());
                    }
                    self.note(format!("{name}: {effect} started"));
                } else {
                    self.note(format!("{name}: {effect} ended"));
                }
            }
            // A binding move (Whirlpool, Fire Spin…) holds its target: it ends with `-end`.
            "-activate" if PARTIAL_TRAPS.contains(&to_id(&effect_name(arg(2))).as_str()) => {
                let (side, name) = ident(arg(1));
                let effect = effect_name(arg(2));
                let mon = self.sides.entry(side).or_default().mon(&name);
                if !mon.volatiles.contains(&effect) {
                    mon.volatiles.push(effect);
                }
            }
            "-weather" => {
                self.weather = Some(arg(1)).filter(|w| *w != "none").map(str::to_string);
            }
            "-fieldstart" => {
                let what = arg(1).trim_start_matches("move: ").to_string();
                // One terrain at a time: a new one replaces the old without an `-fieldend`.
                if what.ends_with(" Terrain") {
                    self.fields.retain(|x| !x.ends_with(" Terrain"));
                }
                if !self.fields.contains(&what) {
                    self.fields.push(what);
                }
            }
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
            "-item" => {
                self.mon_at(arg(1)).item = Some(arg(2).to_string());
            }
            "-enditem" => {
                let mon = self.mon_at(arg(1));
                mon.item = Some(String::new());
                mon.last_item = Some(arg(2).to_string());
            }
            "-ability" => {
                let mon = self.mon_at(arg(1));
                // As One announces itself, then the Unnerve and the Neigh it includes.
                let part_of_as_one = ["Unnerve", "Chilling Neigh", "Grim Neigh"].contains(&arg(2));
                if !(part_of_as_one && mon.ability.as_deref().is_some_and(|a| a.starts_with("As One"))) {
                    mon.ability = Some(arg(2).to_string());
                }
            }
            "-terastallize" => {
                let (side, name) = ident(arg(1));
                self.sides.entry(side).or_default().mon(&name).tera = Some(arg(2).to_string());
                self.note(format!("{name} terastallized into the {} type", arg(2)));
            }
            "detailschange" | "-formechange" => {
                let (side, name) = ident(arg(1));
                let species = species_of(arg(2)).to_string();
                let mon = self.sides.entry(side).or_default().mon(&name);
                if species.is_empty() {
                    return;
                }
                if kind == "detailschange" {
                    // A lasting change (Ogerpon's Tera forme, and back when it faints): the
                    // forme's ability, when the pool gives it only one (else as last shown).
                    if let Some(ability) = crate::data::data().sole_ability(&species) {
                        mon.ability = Some(ability.to_string());
                    }
                    (mon.species, mon.forme) = (species, None);
                } else {
                    mon.forme = Some(species);
                }
            }
            "-transform" => {
                let (side, name) = ident(arg(1));
                let (their_side, their_name) = ident(arg(2));
                let copied = self.sides.get(&their_side).and_then(|s| s.mons.iter().find(|m| m.name == their_name));
                let (forme, boosts) = copied.map(|m| (m.shown_species().to_string(), m.boosts.clone())).unwrap_or_default();
                let mon = self.sides.entry(side).or_default().mon(&name);
                mon.copied_from = Some((their_side, their_name.clone()));
                mon.forme = Some(forme).filter(|f| !f.is_empty());
                mon.boosts = boosts;
                mon.volatiles.push("Transform".into());
                self.note(format!("{name} transformed into {their_name}"));
            }
            "-supereffective" => self.note("It's super effective!".into()),
            "-resisted" => self.note("It's not very effective…".into()),
            "-immune" => self.note(format!("{} is immune", ident(arg(1)).1)),
            "-crit" => self.note("A critical hit!".into()),
            "cant" => {
                let (side, name) = ident(arg(1));
                let tried = Some(arg(3)).filter(|m| !m.is_empty() && !m.starts_with('['));
                match (arg(2).starts_with("ability: "), tag(&f, "of")) {
                    // `cant|p2a: Tsareena|ability: Queenly Majesty|Extreme Speed|[of] p1a: X`:
                    // the holder's ability (Dazzling, Armor Tail too) stopped X's move.
                    (true, Some(user)) => {
                        self.reveal_effect(arg(1), arg(2));
                        if let Some(m) = tried {
                            self.mon_at(user).learn(m);
                        }
                        self.note(format!("{}'s {} stopped {}", name, &arg(2)[9..], tried.unwrap_or("a move")));
                    }
                    // `cant|p2a: X|move: Taunt|Moonlight` shows a move it has;
                    // `cant|p2a: Slaking|ability: Truant`, its own ability.
                    (is_ability, _) => {
                        if is_ability {
                            self.reveal_effect(arg(1), arg(2));
                        }
                        if let Some(m) = tried {
                            self.sides.entry(side).or_default().mon(&name).learn(m);
                        }
                        self.note(format!("{name} can't move ({})", arg(2)));
                    }
                }
            }
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

    /// `replace`: the active Pokémon was another in disguise (Illusion).
    /// What the disguise seemed to suffer is the real one's; the Pokémon it
    /// imitated is taken to be unhurt (what it really has is unknown).
    fn unmask(&mut self, (side, name): (String, String), pos: usize, details: &str) {
        let view = self.sides.entry(side).or_default();
        let at_pos = |m: &Mon| m.position.is_none_or(|p| p == pos);
        // Our own disguise may have been seen through already (the request).
        let taken = view.mons.iter_mut().find(|m| m.active && m.name != name && at_pos(m)).map(|shown| {
            let taken = (
                shown.hp_percent,
                shown.status.take(),
                std::mem::take(&mut shown.volatiles),
                std::mem::take(&mut shown.boosts),
                shown.tera.take(),
            );
            (shown.fainted, shown.hp_percent) = (false, 100);
            shown.leave_battle();
            taken
        });
        let mon = view.mon(&name);
        mon.active = true;
        mon.position = Some(pos);
        mon.species = species_of(details).to_string();
        mon.level = level_of(details).unwrap_or(100);
        mon.ability = Some("Illusion".into());
        if let Some((hp, status, volatiles, boosts, tera)) = taken {
            (mon.hp_percent, mon.status, mon.volatiles, mon.boosts) = (hp, status, volatiles, boosts);
            mon.tera = tera.or(mon.tera.take());
        }
        self.note(format!("{name} was disguised by its Illusion"));
    }

    /// What a line tells about who holds an ability or an item, beyond its
    /// own kind: `[from] ability: Drought|[of] p2a: Torkoal`, `[from] item:
    /// Leftovers`, `-activate|p1a: X|ability: Disguise`. The holder is the
    /// `[of]` Pokémon when named, else the line's own, except where the
    /// protocol names the other one in `[of]` (a thief's victim, a
    /// damage-dealer's target).
    fn reveal(&mut self, kind: &str, f: &[&str]) {
        let own = f.get(1).copied().filter(|a| a.starts_with('p') && a.contains(": "));
        let of = tag(f, "of");
        if kind == "-block" {
            // `-block|p2a: X|ability: Aroma Veil|[of] p2a: Y`: Y's ability shielded X.
            if let (Some(holder), Some(effect)) = (of.or(own), f.get(2)) {
                self.reveal_effect(holder, effect);
            }
        }
        if matches!(kind, "-start" | "-activate")
            && let (Some(holder), Some(effect)) = (own, f.get(2))
        {
            self.reveal_effect(holder, effect);
            // Poltergeist names the target's item.
            if *effect == "move: Poltergeist"
                && let Some(item) = f.get(3).filter(|i| !i.starts_with('['))
            {
                self.reveal_effect(holder, &format!("item: {item}"));
            }
        }
        let Some(from) = tag(f, "from") else { return };
        let holder = if from.starts_with("ability: ") {
            match kind {
                // Volt Absorb and the like name the attacker in `[of]`.
                "-heal" => own,
                // Pickpocket and Magician: `[of]` is the Pokémon robbed.
                "-item" if !from.ends_with("Frisk") => own,
                // `-ability|p1a: X|Thick Fat|[from] ability: Trace|[of] p2a: Y`:
                // X traced Y's Thick Fat, its ability now (the line's own part).
                "-ability" if from == "ability: Trace" => {
                    if let (Some(traced_from), Some(ability)) = (of, f.get(2)) {
                        self.reveal_effect(traced_from, &format!("ability: {ability}"));
                    }
                    None
                }
                "-enditem" => None,
                _ => of.or(own),
            }
        } else if from.starts_with("item: ") {
            match kind {
                "-item" | "-enditem" => None,
                "-heal" => own,
                _ => of.or(own),
            }
        } else {
            None
        };
        if let Some(holder) = holder {
            self.reveal_effect(holder, from);
        }
    }

    /// `ability: Levitate` or `item: Life Orb` shown by `holder` (`p2a: Name`).
    fn reveal_effect(&mut self, holder: &str, effect: &str) {
        let (side, name) = ident(holder);
        if let Some(ability) = effect.strip_prefix("ability: ") {
            self.sides.entry(side).or_default().mon(&name).ability = Some(ability.trim().to_string());
        } else if let Some(item) = effect.strip_prefix("item: ") {
            let mon = self.sides.entry(side).or_default().mon(&name);
            let item = item.trim();
            let spent = mon.item.as_deref() == Some("") && mon.last_item.as_deref().is_some_and(|l| to_id(l) == to_id(item));
            if !spent {
                mon.item = Some(item.to_string());
            }
        }
    }

    /// `-swapboost` (Guard Swap, Power Swap…) and `-copyboost` (Psych Up):
    /// the named stats, or all of them.
    fn move_boosts(&mut self, kind: &str, to: (String, String), from: (String, String), stats: &str) {
        let get = |b: &Battle, (side, name): &(String, String)| {
            b.sides.get(side).and_then(|s| s.mons.iter().find(|m| &m.name == name)).map(|m| m.boosts.clone()).unwrap_or_default()
        };
        let (mut a, mut b) = (get(self, &to), get(self, &from));
        let all = ["atk", "def", "spa", "spd", "spe", "accuracy", "evasion"];
        let stats: Vec<&str> = if stats.is_empty() || stats.starts_with('[') { all.to_vec() } else { stats.split(", ").collect() };
        for stat in stats {
            let (x, y) = (b.get(stat).copied().unwrap_or(0), a.get(stat).copied().unwrap_or(0));
            a.insert(stat.to_string(), x);
            if kind == "-swapboost" {
                b.insert(stat.to_string(), y);
            }
        }
        self.sides.entry(to.0.clone()).or_default().mon(&to.1).boosts = a;
        if kind == "-swapboost" {
            self.sides.entry(from.0.clone()).or_default().mon(&from.1).boosts = b;
        }
    }

    /// The Pokémon a protocol ident names (`p2a: Name`), noted if new.
    fn mon_at(&mut self, who: &str) -> &mut Mon {
        let (side, name) = ident(who);
        self.sides.entry(side).or_default().mon(&name)
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

/// The moves that bind their target for a few turns.
const PARTIAL_TRAPS: [&str; 10] =
    ["bind", "wrap", "firespin", "whirlpool", "sandtomb", "clamp", "infestation", "magmastorm", "snaptrap", "thundercage"];

/// `p2a: Great Tusk` → (`p2`, `Great Tusk`).
pub fn ident(s: &str) -> (String, String) {
    let (pos, name) = s.split_once(": ").unwrap_or((s, ""));
    (pos.chars().take(2).collect(), name.trim().to_string())
}

/// `p2b: Great Tusk` → 1: the active position (a, b, c from the left).
pub fn position_of(s: &str) -> usize {
    match s.split_once(": ").map(|(pos, _)| pos.as_bytes().get(2).copied()) {
        Some(Some(c @ b'a'..=b'c')) => usize::from(c - b'a'),
        _ => 0,
    }
}

/// The value of a line's `[key] value` part (`[from] item: Leftovers`;
/// the space after `]` is optional in the protocol).
pub fn tag<'a>(f: &[&'a str], key: &str) -> Option<&'a str> {
    f.iter().find_map(|x| x.strip_prefix('[')?.strip_prefix(key)?.strip_prefix(']')).map(str::trim)
}

/// `Great Tusk, L84` → `Great Tusk`.
pub fn species_of(details: &str) -> &str {
    details.split(',').next().unwrap_or("").trim()
}

/// `Species, L84, F` → 84.
pub fn level_of(details: &str) -> Option<u32> {
    // The species comes first and may itself start with L (Lycanroc, Lapras).
    details.split(", ").skip(1).find_map(|p| p.strip_prefix('L')?.parse().ok())
}

/// `Great Tusk, L84` → `Great Tusk (L84)`.
fn mon_label(details: &str) -> String {
    let species = species_of(details);
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
            // As Showdown shows it: rounded up, but 99 % until it is full
            // (273/275 is 99 %, not 100 %) and 1 % while it stands.
            let p = (cur * 100).div_ceil(max) as u32;
            match cur {
                0 => 0,
                c if c < max => p.clamp(1, 99),
                _ => p,
            }
        }
        None => hp.parse().unwrap_or(100),
    };
    (percent.min(100), rest.map(str::to_string), false)
}

/// `171/407 par` → (171, 407); `0 fnt` → (0, the maximum unknown: 0).
pub fn exact_hp(c: &str) -> Option<(u32, u32)> {
    let hp = c.split_whitespace().next()?;
    if hp == "0" {
        return Some((0, 0));
    }
    let (cur, max) = hp.split_once('/')?;
    Some((cur.parse().ok()?, max.parse().ok()?))
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
    fn our_pokemon_knocked_out_by_the_last_hit_shows_zero_hp() {
        // The battle's last hit: no request follows to say our exact HP.
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        b.on_log("|switch|p1a: Alomomola|Alomomola, L88, F|407/407");
        let mon = b.sides.entry("p1".into()).or_default().mon("Alomomola");
        mon.hp = Some((171, 407));
        b.on_log("|-damage|p1a: Alomomola|0 fnt");
        b.on_log("|faint|p1a: Alomomola");
        assert_eq!(super::tests::mon(&b, "p1", "Alomomola").hp, Some((0, 407)));
    }

    fn mon<'a>(b: &'a Battle, side: &str, name: &str) -> &'a Mon {
        b.sides[side].mons.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn the_log_reveals_items_abilities_and_moves_where_they_show() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in [
            "|switch|p1a: Plusle|Plusle, L90|100/100",
            "|switch|p2a: Lycanroc|Lycanroc-Dusk, L81, M|100/100",
            "|-heal|p2a: Lycanroc|100/100|[from] item: Leftovers",
            "|-weather|SunnyDay|[from] ability: Drought|[of] p2a: Lycanroc",
            "|move|p1a: Plusle|Thunderbolt|p2a: Lycanroc",
            "|-heal|p2a: Lycanroc|100/100|[from] ability: Volt Absorb|[of] p1a: Plusle",
        ] {
            b.on_log(l);
        }
        assert_eq!(
            mon(&b, "p2", "Lycanroc").ability.as_deref(),
            Some("Volt Absorb"),
            "a heal's ability is the healed one's, whatever `[of]` says"
        );
        for l in [
            "|cant|p2a: Lycanroc|move: Taunt|Moonlight",
            "|move|p2a: Lycanroc|Outrage|p1a: Plusle|[from] lockedmove",
            "|move|p2a: Lycanroc|Thunderbolt|p1a: Plusle|[from] ability: Magic Bounce",
        ] {
            b.on_log(l);
        }
        let l = mon(&b, "p2", "Lycanroc");
        assert_eq!(l.level, 81, "the species starts with L, the level is L81");
        assert_eq!(l.item.as_deref(), Some("Leftovers"));
        assert_eq!(l.ability.as_deref(), Some("Magic Bounce"));
        assert_eq!(l.moves, ["moonlight"], "called and locked-in moves are not counted; a blocked one is");

        // A berry eaten and its heal: the item is gone, not revealed again.
        b.on_log("|-enditem|p2a: Lycanroc|Sitrus Berry|[eat]");
        b.on_log("|-heal|p2a: Lycanroc|100/100|[from] item: Sitrus Berry");
        assert_eq!(mon(&b, "p2", "Lycanroc").item.as_deref(), Some(""));
        b.on_log("|-activate|p2a: Lycanroc|move: Poltergeist|Air Balloon");
        assert_eq!(mon(&b, "p2", "Lycanroc").item.as_deref(), Some("Air Balloon"));
        b.on_log("|-block|p2a: Lycanroc|ability: Aroma Veil|[of] p2a: Lycanroc");
        assert_eq!(mon(&b, "p2", "Lycanroc").ability.as_deref(), Some("Aroma Veil"));
    }

    #[test]
    fn terrains_replace_each_other_and_traps_and_formes_hold_while_in_battle() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in [
            "|-fieldstart|move: Electric Terrain",
            "|-fieldstart|move: Grassy Terrain|[from] ability: Grassy Surge|[of] p2a: Rillaboom",
            "|-fieldstart|move: Grassy Terrain|[from] ability: Grassy Surge|[of] p2a: Rillaboom",
            "|-fieldstart|move: Trick Room|[of] p1a: Cramorant",
            "|switch|p1a: Cramorant|Cramorant, L86, M|100/100",
            "|-formechange|p1a: Cramorant|Cramorant-Gulping|",
            "|-activate|p1a: Cramorant|move: Whirlpool|[of] p2a: Rillaboom",
            "|-setboost|p1a: Cramorant|atk|6",
        ] {
            b.on_log(l);
        }
        assert_eq!(b.fields, ["Grassy Terrain", "Trick Room"]);
        let c = mon(&b, "p1", "Cramorant");
        assert_eq!((c.shown_species(), c.species.as_str()), ("Cramorant-Gulping", "Cramorant"));
        let side = &b.sides["p1"];
        for name in ["Cramorant", "cramorant-gulping", "Cramorant-Gulping"] {
            assert_eq!(side.find(name).map(|m| m.name.as_str()), Some("Cramorant"), "{name}");
        }
        assert_eq!(c.volatiles, ["Whirlpool"]);
        assert_eq!(c.boosts["atk"], 6);
        b.on_log("|faint|p1a: Cramorant");
        let c = mon(&b, "p1", "Cramorant");
        assert!(!c.active && c.boosts.is_empty() && c.volatiles.is_empty() && c.forme.is_none());
    }

    #[test]
    fn truant_trace_future_sight_and_shed_tail_are_read_as_a_client_reads_them() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in [
            "|switch|p1a: Gardevoir|Gardevoir, L85, F|100/100",
            "|switch|p2a: Hariyama|Hariyama, L87, F|100/100",
            "|-ability|p1a: Gardevoir|Thick Fat|Trace|[from] ability: Trace|[of] p2a: Hariyama",
            "|cant|p2a: Hariyama|ability: Truant",
            "|-start|p1a: Gardevoir|move: Future Sight",
        ] {
            b.on_log(l);
        }
        // Gardevoir traced Hariyama's Thick Fat; Truant stopped Hariyama.
        assert_eq!(mon(&b, "p1", "Gardevoir").ability.as_deref(), Some("Thick Fat"));
        assert_eq!(mon(&b, "p2", "Hariyama").ability.as_deref(), Some("Truant"));
        // Future Sight waits on the user's side, not on the user.
        assert_eq!(b.sides["p1"].conditions, ["Future Sight"]);
        assert!(mon(&b, "p1", "Gardevoir").volatiles.is_empty());
        b.on_log("|-end|p2a: Hariyama|move: Future Sight");
        assert!(b.sides["p1"].conditions.is_empty());
        for l in ["|-start|p2a: Hariyama|Substitute|[from] move: Shed Tail", "|switch|p2a: Blissey|Blissey, L85, F|99/100|[from] Shed Tail"]
        {
            b.on_log(l);
        }
        assert_eq!(mon(&b, "p2", "Blissey").volatiles, ["Substitute"], "Shed Tail hands on its substitute");
    }

    #[test]
    fn an_illusion_unmasked_takes_what_its_disguise_suffered() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for l in [
            "|switch|p2a: Bellossom|Bellossom, L84, M|100/100",
            "|-damage|p2a: Bellossom|0 fnt",
            "|replace|p2a: Zoroark|Zoroark-Hisui, L80, F",
            "|-end|p2a: Zoroark|Illusion",
            "|faint|p2a: Zoroark",
        ] {
            b.on_log(l);
        }
        let bellossom = mon(&b, "p2", "Bellossom");
        assert!(!bellossom.fainted && !bellossom.active && bellossom.hp_percent == 100, "{bellossom:?}");
        let zoroark = mon(&b, "p2", "Zoroark");
        assert!(zoroark.fainted && zoroark.ability.as_deref() == Some("Illusion"), "{zoroark:?}");
    }

    #[test]
    fn the_protocol_stream_puts_each_request_where_it_arrived() {
        let mut b = Battle::default();
        b.on_log("|turn|1");
        b.record_request(r#"{"rqid":1}"#);
        b.on_log("|move|p1a: A|Tackle|p2a: B");
        b.record_request(r#"{"rqid":2}"#);
        assert_eq!(b.protocol(), "|turn|1\n|request|{\"rqid\":1}\n|move|p1a: A|Tackle|p2a: B\n|request|{\"rqid\":2}\n");
    }

    /// A rejoined battle's log shows the Pokémon that came in before the
    /// request arrives; the team is still listed in the request's order.
    #[test]
    fn our_team_is_listed_in_the_request_order_whatever_the_log_showed_first() {
        let request = |order: &[&str]| {
            let mons: Vec<String> = order
                .iter()
                .enumerate()
                .map(|(i, n)| format!(r#"{{"ident":"p1: {n}","details":"{n}, L80","condition":"100/100","active":{}}}"#, i == 0))
                .collect();
            Request::parse(&format!(r#"{{"side":{{"id":"p1","pokemon":[{}]}}}}"#, mons.join(","))).unwrap()
        };
        let mut b = Battle::default();
        b.on_log("|switch|p1a: Emboar|Emboar, L80|100/100");
        b.on_request(request(&["Emboar", "Dunsparce", "Tsareena"]));
        let names = |b: &Battle| b.my_side().unwrap().mons.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&b), ["Emboar", "Dunsparce", "Tsareena"]);
        b.on_request(request(&["Tsareena", "Dunsparce", "Emboar"]));
        assert_eq!(names(&b), ["Tsareena", "Dunsparce", "Emboar"]);
    }

    #[test]
    fn a_priority_blocking_ability_is_its_holders_and_the_move_its_users() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        b.on_log("|switch|p2a: Tsareena|Tsareena, L85|100/100");
        b.on_log("|switch|p1a: Dragonite|Dragonite, L80|100/100");
        b.on_log("|cant|p2a: Tsareena|ability: Queenly Majesty|Extreme Speed|[of] p1a: Dragonite");
        let t = &b.their_side().unwrap().mons[0];
        assert_eq!((t.ability.as_deref(), t.moves.len()), (Some("Queenly Majesty"), 0), "{t:?}");
        assert_eq!(b.my_side().unwrap().mons[0].moves, ["extremespeed"]);
    }

    #[test]
    fn team_preview_shows_the_opponents_team_and_a_nickname_claims_its_species() {
        let mut b = Battle { me: "p1".into(), ..Battle::default() };
        for line in ["|poke|p1|Great Tusk|", "|poke|p2|Garchomp, F|", "|poke|p2|Urshifu-*|", "|poke|p2|Kingambit, L50, F|"] {
            b.on_log(line);
        }
        assert!(b.my_side().is_none_or(|s| s.mons.is_empty()), "our own team comes from the request");
        let names = |b: &Battle| b.their_side().unwrap().mons.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&b), ["Garchomp", "Urshifu-*", "Kingambit"]);
        b.on_log("|switch|p2a: Chompy|Garchomp, F|100/100");
        b.on_log("|switch|p2b: Urshifu|Urshifu-Rapid-Strike|100/100");
        assert_eq!(names(&b), ["Chompy", "Urshifu", "Kingambit"]);
        assert_eq!(b.their_side().unwrap().mons[2].level, 50);
    }

    #[test]
    fn conditions_parse_without_panicking() {
        assert_eq!(parse_condition("150/300 brn"), (50, Some("brn".into()), false));
        assert_eq!(parse_condition("0 fnt"), (0, None, true));
        assert_eq!(parse_condition("1/400"), (1, None, false));
        assert_eq!(parse_condition("273/275"), (99, None, false), "not full is never 100 %");
        assert_eq!(parse_condition("275/275"), (100, None, false));
        assert_eq!(parse_condition(""), (100, None, false));
        assert_eq!(parse_condition("x/y"), (0, None, false));
        let mut b = Battle::default();
        for junk in ["|", "||||", "|switch|", "|-damage|p2a", "|turn|x", "|-boost|p1a: X|atk|lots"] {
            b.on_log(junk);
        }
    }
}
