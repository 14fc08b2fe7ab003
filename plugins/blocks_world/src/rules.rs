//! Blocks World rules, independent of the plugin interface: stacks of
//! lettered blocks; only a top block moves, onto another stack (empty or
//! not). The paper's instances split N blocks alphabetically over stacks 0
//! and 1, stack 2 empty, and ask for one interleaved stack on stack 0.

use std::collections::{HashMap, VecDeque};

pub const MAX_BLOCKS: u32 = 26;
/// Instances this small are solved exactly by breadth-first search.
pub const EXACT_UP_TO: usize = 7;

pub type Stacks = Vec<Vec<String>>;

/// A move as the paper writes it: `["C", 1, 2]`.
pub type Move = (String, u32, u32);

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct World {
    pub start: Stacks,
    pub goal: Stacks,
    pub stacks: Stacks,
    pub moves_made: u64,
}

/// The fewest moves from a position, or a lower bound where the search
/// would take too long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimum {
    Exact(u64),
    AtLeast(u64),
}

/// The paper's instance of `n` blocks: the first ⌈n/2⌉ letters on stack 0,
/// the rest on stack 1, bottom to top; the goal takes them from the tops of
/// stacks 1 and 0 in turn onto stack 0 (n = 4: `[["D","B","C","A"],[],[]]`).
pub fn paper_instance(n: u32) -> Result<(Stacks, Stacks), String> {
    if !(2..=MAX_BLOCKS).contains(&n) {
        return Err(format!("n must be between 2 and {MAX_BLOCKS} blocks, got {n}"));
    }
    let letters: Vec<String> = (0..n).map(|i| char::from(b'A' + i as u8).to_string()).collect();
    let half = n.div_ceil(2) as usize;
    let (left, right) = letters.split_at(half);
    let (mut l, mut r): (Vec<String>, Vec<String>) = (left.iter().rev().cloned().collect(), right.iter().rev().cloned().collect());
    let mut tower = Vec::new();
    while !l.is_empty() || !r.is_empty() {
        if !r.is_empty() {
            tower.push(r.remove(0));
        }
        if !l.is_empty() {
            tower.push(l.remove(0));
        }
    }
    Ok((vec![left.to_vec(), right.to_vec(), Vec::new()], vec![tower, Vec::new(), Vec::new()]))
}

impl World {
    pub fn new(start: Stacks, goal: Stacks) -> Result<World, String> {
        check_blocks(&start, "start")?;
        check_blocks(&goal, "goal")?;
        let mut a: Vec<&String> = start.iter().flatten().collect();
        let mut b: Vec<&String> = goal.iter().flatten().collect();
        a.sort();
        b.sort();
        if a != b {
            return Err("the start and the goal hold different blocks".into());
        }
        if start.len() != goal.len() {
            return Err(format!("the start has {} stacks and the goal {}", start.len(), goal.len()));
        }
        Ok(World { stacks: start.clone(), start, goal, moves_made: 0 })
    }

    pub fn goal_reached(&self) -> bool {
        self.stacks == self.goal
    }

    /// Checks a move and applies it, or says precisely why it is illegal.
    pub fn apply(&mut self, (block, from, to): &Move) -> Result<(), String> {
        let last = self.stacks.len() - 1;
        for s in [*from, *to] {
            if s as usize > last {
                return Err(format!("stack {s} does not exist: the stacks are 0 to {last}"));
            }
        }
        let (from, to) = (*from as usize, *to as usize);
        let Some(at) = self.stacks.iter().position(|s| s.contains(block)) else {
            let names: Vec<&String> = self.start.iter().flatten().collect();
            return Err(format!("there is no block {block:?}: the blocks are {names:?}"));
        };
        if at != from {
            return Err(format!("block {block} is on stack {at}, not on stack {from}"));
        }
        let top = self.stacks[from].last().expect("the block is on it");
        if top != block {
            return Err(format!("block {block} is not on top of stack {from}: {top} is on top; only a top block moves"));
        }
        if from == to {
            return Err(format!("from and to are both stack {from}: a move takes a block to another stack"));
        }
        let b = self.stacks[from].pop().expect("checked");
        self.stacks[to].push(b);
        self.moves_made += 1;
        Ok(())
    }

    pub fn legal_moves(&self) -> Vec<Move> {
        let mut out = Vec::new();
        for (from, s) in self.stacks.iter().enumerate() {
            let Some(top) = s.last() else { continue };
            for to in 0..self.stacks.len() {
                if to != from {
                    out.push((top.clone(), from as u32, to as u32));
                }
            }
        }
        out
    }

    pub fn set_state(&mut self, stacks: Stacks) -> Result<(), String> {
        let moved = World::new(stacks, self.goal.clone())?;
        self.stacks = moved.stacks;
        self.moves_made = 0;
        Ok(())
    }

    /// The fewest moves from the start to the goal.
    pub fn optimum(&self) -> Optimum {
        optimum(&self.start, &self.goal)
    }

    pub fn render(&self) -> String {
        format!("Stacks (bottom to top): {:?}; goal: {:?}; {} moves made.", self.stacks, self.goal, self.moves_made)
    }

    pub fn render_legal(&self) -> String {
        let shown: Vec<String> = self.legal_moves().iter().map(|(b, f, t)| format!("[\"{b}\", {f}, {t}]")).collect();
        format!("Legal moves now: {}.", shown.join(", "))
    }
}

fn check_blocks(stacks: &Stacks, what: &str) -> Result<(), String> {
    if stacks.len() < 2 || stacks.len() > 10 {
        return Err(format!("the {what} has {} stacks: 2 to 10", stacks.len()));
    }
    let mut seen = std::collections::HashSet::new();
    for b in stacks.iter().flatten() {
        if b.is_empty() || b.len() > 3 || !b.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(format!("the {what} names a block {b:?}: a block is named by 1 to 3 letters or digits"));
        }
        if !seen.insert(b) {
            return Err(format!("the {what} holds block {b} twice"));
        }
    }
    if seen.is_empty() || seen.len() > MAX_BLOCKS as usize {
        return Err(format!("the {what} holds {} blocks: 1 to {MAX_BLOCKS}", seen.len()));
    }
    Ok(())
}

/// Positions the exact search may visit at most (n! · C(n+s−1, s−1) for n
/// blocks on s stacks).
const SEARCH_LIMIT: f64 = 400_000.0;

/// Breadth-first search when the instance is small (up to [`EXACT_UP_TO`]
/// blocks and few enough positions); beyond, a lower bound: every block above
/// the part of each goal stack already in place moves at least once.
pub fn optimum(start: &Stacks, goal: &Stacks) -> Optimum {
    let blocks = start.iter().map(Vec::len).sum::<usize>();
    let stacks = start.len();
    let positions = (1..=blocks).map(|k| k as f64).product::<f64>() * binomial(blocks + stacks - 1, stacks - 1);
    if blocks > EXACT_UP_TO || positions > SEARCH_LIMIT {
        return Optimum::AtLeast(lower_bound(start, goal));
    }
    // Blocks as small numbers and a position as one byte string (255
    // between stacks): cheap to hash and to copy.
    let names: Vec<&String> = start.iter().flatten().collect();
    let encode = |s: &Stacks| -> Vec<u8> {
        let mut out = Vec::with_capacity(blocks + stacks);
        for stack in s {
            out.extend(stack.iter().map(|b| names.iter().position(|n| *n == b).expect("the same blocks") as u8));
            out.push(255);
        }
        out
    };
    let (from_start, target) = (encode(start), encode(goal));
    let mut seen: HashMap<Vec<u8>, u64> = HashMap::from([(from_start.clone(), 0)]);
    let mut queue = VecDeque::from([from_start]);
    while let Some(pos) = queue.pop_front() {
        let d = seen[&pos];
        if pos == target {
            return Optimum::Exact(d);
        }
        let parts: Vec<&[u8]> = pos.split(|b| *b == 255).take(stacks).collect();
        for from in 0..stacks {
            let Some((&top, rest)) = parts[from].split_last() else { continue };
            for to in (0..stacks).filter(|t| *t != from) {
                let mut next = Vec::with_capacity(pos.len());
                for (i, part) in parts.iter().enumerate() {
                    next.extend_from_slice(if i == from { rest } else { part });
                    if i == to {
                        next.push(top);
                    }
                    next.push(255);
                }
                if !seen.contains_key(&next) {
                    seen.insert(next.clone(), d + 1);
                    queue.push_back(next);
                }
            }
        }
    }
    Optimum::AtLeast(lower_bound(start, goal))
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).map(|i| (n - i) as f64 / (i + 1) as f64).product()
}

fn lower_bound(start: &Stacks, goal: &Stacks) -> u64 {
    let mut bound = 0;
    for (s, g) in start.iter().zip(goal) {
        let in_place = s.iter().zip(g).take_while(|(a, b)| a == b).count();
        bound += (s.len() - in_place) as u64;
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(v: &[&[&str]]) -> Stacks {
        v.iter().map(|s| s.iter().map(|b| b.to_string()).collect()).collect()
    }

    #[test]
    fn the_papers_instances_and_their_optima() {
        let (start, goal) = paper_instance(4).unwrap();
        assert_eq!((start.clone(), goal.clone()), (stacks(&[&["A", "B"], &["C", "D"], &[]]), stacks(&[&["D", "B", "C", "A"], &[], &[]])));
        let (s6, g6) = paper_instance(6).unwrap();
        assert_eq!((s6, g6), (stacks(&[&["A", "B", "C"], &["D", "E", "F"], &[]]), stacks(&[&["F", "C", "E", "B", "D", "A"], &[], &[]])));
        let w = World::new(start, goal).unwrap();
        let Optimum::Exact(best) = w.optimum() else { panic!("4 blocks are searched exactly") };
        assert!(best >= lower_bound(&w.start, &w.goal));
        // Swapping two blocks on two stacks with a third free: three moves.
        assert_eq!(optimum(&stacks(&[&["A"], &["B"], &[]]), &stacks(&[&["B"], &["A"], &[]])), Optimum::Exact(3));
        assert!(matches!(World::new(paper_instance(7).unwrap().0, paper_instance(7).unwrap().1).unwrap().optimum(), Optimum::Exact(_)));
        assert!(matches!(World::new(paper_instance(20).unwrap().0, paper_instance(20).unwrap().1).unwrap().optimum(), Optimum::AtLeast(_)));
    }

    #[test]
    fn every_kind_of_illegal_move() {
        let (start, goal) = paper_instance(4).unwrap();
        let w = World::new(start, goal).unwrap();
        let e = |m: (&str, u32, u32)| w.clone().apply(&(m.0.to_string(), m.1, m.2)).unwrap_err();
        assert!(e(("Z", 0, 1)).contains("there is no block \"Z\""));
        assert!(e(("B", 7, 1)).contains("stack 7 does not exist"));
        assert!(e(("A", 0, 2)).contains("block A is not on top of stack 0: B is on top"));
        assert!(e(("B", 1, 2)).contains("block B is on stack 0, not on stack 1"));
        assert!(e(("B", 0, 0)).contains("both stack 0"));
        assert!(World::new(stacks(&[&["A", "A"], &[]]), stacks(&[&["A", "A"], &[]])).unwrap_err().contains("twice"));
    }
}
