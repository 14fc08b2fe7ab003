//! River Crossing rules and an exact solver, independent of the plugin interface.
//!
//! People are indexed 0..n for actors a_1..a_n and n..2n for agents A_1..A_n.

use std::collections::{HashMap, VecDeque};

pub const MAX_PAIRS: u32 = 50;
pub const MAX_CAPACITY: u32 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Side {
    Left,
    Right,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Left => "left",
            Side::Right => "right",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct River {
    pub n: u32,
    pub k: u32,
    pub boat: Side,
    /// Where each person is.
    pub at: Vec<Side>,
    pub moves_made: u32,
}

/// The paper's boat sizes: 2 for up to 3 pairs, else 3.
pub fn default_capacity(n: u32) -> u32 {
    if n <= 3 { 2 } else { 3 }
}

impl River {
    pub fn new(n: u32, k: u32) -> Result<River, String> {
        if !(1..=MAX_PAIRS).contains(&n) {
            return Err(format!("n must be between 1 and {MAX_PAIRS} pairs, got {n}"));
        }
        if !(1..=MAX_CAPACITY).contains(&k) {
            return Err(format!("k (boat capacity) must be between 1 and {MAX_CAPACITY}, got {k}"));
        }
        Ok(River { n, k, boat: Side::Left, at: vec![Side::Left; 2 * n as usize], moves_made: 0 })
    }

    pub fn name(&self, person: usize) -> String {
        let n = self.n as usize;
        if person < n { format!("a_{}", person + 1) } else { format!("A_{}", person - n + 1) }
    }

    pub fn parse(&self, name: &str) -> Result<usize, String> {
        let bad = || format!("unknown person {name:?}: actors are a_1…a_{n} and agents A_1…A_{n} (case matters)", n = self.n);
        let (kind, num) = name.split_once('_').ok_or_else(bad)?;
        let i: usize = num.parse().map_err(|_| bad())?;
        if i == 0 || i > self.n as usize {
            return Err(bad());
        }
        match kind {
            "a" => Ok(i - 1),
            "A" => Ok(self.n as usize + i - 1),
            _ => Err(bad()),
        }
    }

    /// Why a group of people cannot be together, if it cannot.
    fn unsafe_in(&self, group: &[usize]) -> Option<String> {
        let n = self.n as usize;
        let agent = group.iter().find(|&&p| p >= n)?;
        for &actor in group.iter().filter(|&&p| p < n) {
            if !group.contains(&(actor + n)) {
                let other = group.iter().find(|&&p| p >= n && p != actor + n).unwrap_or(agent);
                return Some(format!("{} would be with {} without {}", self.name(actor), self.name(*other), self.name(actor + n)));
            }
        }
        None
    }

    fn on(&self, side: Side) -> Vec<usize> {
        (0..self.at.len()).filter(|&p| self.at[p] == side).collect()
    }

    pub fn goal_reached(&self) -> bool {
        self.at.iter().all(|&s| s == Side::Right)
    }

    /// Every legal crossing of at most `most` riders (and the boat's
    /// capacity), smaller loads first, each in the order of the riders.
    pub fn legal_loads(&self, most: u32) -> Vec<Vec<String>> {
        let here = self.on(self.boat);
        let mut out = Vec::new();
        let mut load: Vec<usize> = Vec::new();
        for size in 1..=most.min(self.k) as usize {
            self.loads_of(&here, size, 0, &mut load, &mut out);
        }
        out
    }

    /// The legal loads of `size` riders that extend `load` with riders of `here` from `from` on.
    fn loads_of(&self, here: &[usize], size: usize, from: usize, load: &mut Vec<usize>, out: &mut Vec<Vec<String>>) {
        if load.len() == size {
            let names: Vec<String> = load.iter().map(|&p| self.name(p)).collect();
            if self.clone().apply(&names).is_ok() {
                out.push(names);
            }
            return;
        }
        for i in from..here.len() {
            load.push(here[i]);
            self.loads_of(here, size, i + 1, load, out);
            load.pop();
        }
    }

    /// Checks one crossing and applies it, or says precisely why it is illegal.
    pub fn apply(&mut self, load: &[String]) -> Result<(), String> {
        if load.is_empty() {
            return Err("the boat cannot cross empty: name at least one rider".into());
        }
        let mut riders = Vec::new();
        for name in load {
            let p = self.parse(name)?;
            if riders.contains(&p) {
                return Err(format!("{name} is listed twice"));
            }
            riders.push(p);
        }
        if riders.len() > self.k as usize {
            return Err(format!("the boat holds at most {} people, not {}", self.k, riders.len()));
        }
        for &p in &riders {
            if self.at[p] != self.boat {
                return Err(format!(
                    "{} is on the {} bank, but the boat is on the {} bank",
                    self.name(p),
                    self.at[p].name(),
                    self.boat.name()
                ));
            }
        }
        if let Some(why) = self.unsafe_in(&riders) {
            return Err(format!("unsafe in the boat: {why}"));
        }
        let mut next = self.clone();
        for &p in &riders {
            next.at[p] = self.boat.other();
        }
        next.boat = self.boat.other();
        for side in [self.boat, self.boat.other()] {
            if let Some(why) = next.unsafe_in(&next.on(side)) {
                return Err(format!("unsafe on the {} bank after crossing: {why}", side.name()));
            }
        }
        next.moves_made += 1;
        *self = next;
        Ok(())
    }

    /// Replaces the position (a reset to a given state); it must be safe.
    pub fn set_state(&mut self, boat: Side, left: &[String], right: &[String]) -> Result<(), String> {
        let mut at: Vec<Option<Side>> = vec![None; self.at.len()];
        for (side, names) in [(Side::Left, left), (Side::Right, right)] {
            for name in names {
                let p = self.parse(name)?;
                if at[p].replace(side).is_some() {
                    return Err(format!("{name} appears twice"));
                }
            }
        }
        if let Some(p) = at.iter().position(Option::is_none) {
            return Err(format!("{} is on neither bank: list everyone exactly once", self.name(p)));
        }
        let mut next = self.clone();
        next.at = at.into_iter().map(|s| s.expect("checked")).collect();
        next.boat = boat;
        for side in [Side::Left, Side::Right] {
            if let Some(why) = next.unsafe_in(&next.on(side)) {
                return Err(format!("that position is unsafe on the {} bank: {why}", side.name()));
            }
        }
        next.moves_made = 0;
        *self = next;
        Ok(())
    }

    pub fn names_on(&self, side: Side) -> Vec<String> {
        self.on(side).into_iter().map(|p| self.name(p)).collect()
    }

    pub fn render(&self, optimal: Option<u32>) -> String {
        let line = |side: Side| {
            let names = self.names_on(side);
            let who = if names.is_empty() { "(empty)".into() } else { names.join(" ") };
            let boat = if self.boat == side { "   [boat]" } else { "" };
            format!("{:<6} bank: {who}{boat}\n", side.name())
        };
        let optimal = optimal.map_or("no solution exists".into(), |o| format!("optimal solution: {o}"));
        format!(
            "River Crossing, {} pairs, boat holds {}. Crossings made: {} ({optimal}).\n{}{}",
            self.n,
            self.k,
            self.moves_made,
            line(Side::Left),
            line(Side::Right)
        )
    }

    /// Fewest crossings from this position to the goal, if it can be reached.
    pub fn shortest_remaining(&self) -> Option<u32> {
        shortest(self.n, self.k, Counts::of(self))
    }
}

/// A position up to renaming of pairs: how many pairs have their actor and
/// agent on each combination of banks. Safety depends only on these counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Counts {
    /// [actor left & agent left, actor left & agent right, actor right & agent left]
    ll: u32,
    lr: u32,
    rl: u32,
    boat_left: bool,
}

impl Counts {
    fn of(r: &River) -> Counts {
        let n = r.n as usize;
        let mut c = Counts { ll: 0, lr: 0, rl: 0, boat_left: r.boat == Side::Left };
        for i in 0..n {
            match (r.at[i], r.at[i + n]) {
                (Side::Left, Side::Left) => c.ll += 1,
                (Side::Left, Side::Right) => c.lr += 1,
                (Side::Right, Side::Left) => c.rl += 1,
                (Side::Right, Side::Right) => {}
            }
        }
        c
    }

    /// The same position seen from the other bank.
    fn mirrored(self, n: u32) -> Counts {
        Counts { ll: n - self.ll - self.lr - self.rl, lr: self.rl, rl: self.lr, boat_left: !self.boat_left }
    }

    /// A bank is safe unless an actor without its agent meets some agent.
    fn banks_safe(self, n: u32) -> bool {
        let rr = n - self.ll - self.lr - self.rl;
        let left_ok = self.lr == 0 || self.ll + self.rl == 0;
        let right_ok = self.rl == 0 || self.lr + rr == 0;
        left_ok && right_ok
    }

    /// Positions one legal crossing away, computed for the boat on the left.
    fn successors_from_left(self, n: u32, k: u32, out: &mut Vec<Counts>) {
        let Counts { ll, lr, rl, .. } = self;
        for both in 0..=ll.min(k / 2) {
            for actor in 0..=(ll - both) {
                for agent in 0..=(ll - both - actor) {
                    for lone_actor in 0..=lr {
                        for lone_agent in 0..=rl {
                            let load = 2 * both + actor + agent + lone_actor + lone_agent;
                            if load == 0 || load > k {
                                continue;
                            }
                            // In the boat: actors riding without their agent meet any agent riding.
                            if actor + lone_actor > 0 && both + agent + lone_agent > 0 {
                                continue;
                            }
                            let next = Counts {
                                ll: ll - both - actor - agent,
                                lr: lr - lone_actor + agent,
                                rl: rl - lone_agent + actor,
                                boat_left: false,
                            };
                            if next.banks_safe(n) {
                                out.push(next);
                            }
                        }
                    }
                }
            }
        }
    }

    fn successors(self, n: u32, k: u32) -> Vec<Counts> {
        let mut out = Vec::new();
        if self.boat_left {
            self.successors_from_left(n, k, &mut out);
        } else {
            self.mirrored(n).successors_from_left(n, k, &mut out);
            for c in &mut out {
                *c = c.mirrored(n);
            }
        }
        out
    }
}

/// Breadth-first search over counts: exact fewest crossings to the goal.
fn shortest(n: u32, k: u32, from: Counts) -> Option<u32> {
    let goal = Counts { ll: 0, lr: 0, rl: 0, boat_left: false };
    let mut dist: HashMap<Counts, u32> = HashMap::from([(from, 0)]);
    let mut queue = VecDeque::from([from]);
    while let Some(c) = queue.pop_front() {
        let d = dist[&c];
        if c == goal {
            return Some(d);
        }
        for next in c.successors(n, k) {
            dist.entry(next).or_insert_with(|| {
                queue.push_back(next);
                d + 1
            });
        }
    }
    None
}

/// Fewest crossings that solve a fresh puzzle, or none if it cannot be solved.
pub fn optimal(n: u32, k: u32) -> Option<u32> {
    River::new(n, k).ok()?.shortest_remaining()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_legal_loads_are_the_crossings_the_rules_take() {
        let r = River::new(3, 2).unwrap();
        let loads = r.legal_loads(3);
        assert!(loads.iter().all(|l| r.clone().apply(l).is_ok()), "{loads:?}");
        assert!(loads.contains(&load(&["a_1", "A_1"])) && loads.contains(&load(&["a_1"])), "{loads:?}");
        assert!(!loads.contains(&load(&["A_1", "A_2"])), "two agents leave their actors with the third: {loads:?}");
        assert!(loads.iter().all(|l| l.len() <= 2), "the boat holds two: {loads:?}");
        let mut done = r.clone();
        done.at = vec![Side::Right; 6];
        done.boat = Side::Right;
        assert!(done.legal_loads(3).iter().all(|l| done.clone().apply(l).is_ok()));
    }

    #[test]
    fn solvability_matches_the_published_table() {
        // k=2: N=1..3 solvable in 1, 5, 11; k=3: N=1..5 in 1, 3, 5, 9, 11, N≥6 not;
        // k=4: N=1..7 in 1, 1, 3, 5, 7, 9, 11 (shared/research/games-anchors.md §3.2).
        assert_eq!((1..=5).map(|n| optimal(n, 2)).collect::<Vec<_>>(), [Some(1), Some(5), Some(11), None, None]);
        assert_eq!((1..=7).map(|n| optimal(n, 3)).collect::<Vec<_>>(), [Some(1), Some(3), Some(5), Some(9), Some(11), None, None]);
        assert_eq!((1..=7).map(|n| optimal(n, 4)).collect::<Vec<_>>(), [Some(1), Some(1), Some(3), Some(5), Some(7), Some(9), Some(11)]);
        assert_eq!(optimal(1, 1), None, "the boat cannot come back empty");
    }

    #[test]
    fn large_instances_are_solved_quickly() {
        assert!(optimal(50, 4).is_some());
        assert_eq!(optimal(50, 3), None);
    }

    #[test]
    fn the_papers_two_pair_example_solves_it() {
        let mut r = River::new(2, 2).unwrap();
        for m in [&["A_2", "a_2"][..], &["A_2"], &["A_1", "A_2"], &["A_1"], &["A_1", "a_1"]] {
            r.apply(&load(m)).unwrap();
        }
        assert!(r.goal_reached());
        assert_eq!(r.moves_made, 5);
    }

    #[test]
    fn the_boat_is_checked_too() {
        // With k=3 an actor may not ride with a stranger agent even if the banks stay safe.
        let mut r = River::new(2, 3).unwrap();
        let e = r.apply(&load(&["a_1", "A_2"])).unwrap_err();
        assert!(e.contains("unsafe in the boat") && e.contains("a_1 would be with A_2 without A_1"), "{e}");
    }

    #[test]
    fn illegal_crossings_say_why() {
        let mut r = River::new(3, 2).unwrap();
        assert!(r.apply(&[]).unwrap_err().contains("cannot cross empty"));
        assert!(r.apply(&load(&["b_1"])).unwrap_err().contains("unknown person"));
        assert!(r.apply(&load(&["a_4"])).unwrap_err().contains("unknown person"));
        assert!(r.apply(&load(&["a_1", "a_1"])).unwrap_err().contains("twice"));
        assert!(r.apply(&load(&["a_1", "a_2", "a_3"])).unwrap_err().contains("at most 2"));
        let e = r.apply(&load(&["A_1", "A_2"])).unwrap_err();
        assert!(e.contains("unsafe on the left bank") && e.contains("a_1 would be with A_3"), "{e}");
        r.apply(&load(&["a_1", "a_2"])).unwrap();
        assert!(r.apply(&load(&["a_3"])).unwrap_err().contains("boat is on the right bank"));
        assert_eq!(r.moves_made, 1);
    }

    #[test]
    fn reset_positions_must_be_complete_and_safe() {
        let mut r = River::new(2, 2).unwrap();
        assert!(r.set_state(Side::Right, &load(&["a_1", "A_1"]), &load(&["a_2", "A_2"])).is_ok());
        assert_eq!(r.shortest_remaining(), Some(4), "A_2 back, A_1+A_2 over, A_1 back, A_1+a_1 over");
        assert!(r.set_state(Side::Left, &load(&["a_1"]), &load(&["a_2", "A_2"])).unwrap_err().contains("neither bank"));
        assert!(r.set_state(Side::Left, &load(&["a_1", "A_2"]), &load(&["a_2", "A_1"])).unwrap_err().contains("unsafe"));
    }
}
