//! Tower of Hanoi rules, independent of the plugin interface.

pub const PEGS: usize = 3;
pub const MAX_DISKS: u32 = 30;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hanoi {
    pub n: u32,
    /// Pegs bottom to top.
    pub pegs: [Vec<u32>; PEGS],
    pub moves_made: u64,
}

impl Hanoi {
    pub fn new(n: u32) -> Result<Hanoi, String> {
        if !(1..=MAX_DISKS).contains(&n) {
            return Err(format!("n must be between 1 and {MAX_DISKS} disks, got {n}"));
        }
        Ok(Hanoi { n, pegs: [(1..=n).rev().collect(), Vec::new(), Vec::new()], moves_made: 0 })
    }

    pub fn optimal_moves(&self) -> u64 {
        (1u64 << self.n) - 1
    }

    pub fn goal_reached(&self) -> bool {
        self.pegs[2].len() == self.n as usize
    }

    /// Checks a move and applies it, or says precisely why it is illegal.
    pub fn apply(&mut self, mv: &[u32]) -> Result<(), String> {
        let [disk, from, to] = *mv else {
            return Err(format!("a move is [disk, from_peg, to_peg] (three numbers), got {mv:?}"));
        };
        for peg in [from, to] {
            if peg as usize >= PEGS {
                return Err(format!("peg {peg} does not exist: the pegs are 0, 1 and 2"));
            }
        }
        let (from, to) = (from as usize, to as usize);
        if !(1..=self.n).contains(&disk) {
            return Err(format!("disk {disk} does not exist: the disks are 1 (smallest) to {}", self.n));
        }
        if from == to {
            return Err(format!("from and to are both peg {from}: a move takes a disk to another peg"));
        }
        match self.pegs[from].last() {
            None => return Err(format!("peg {from} is empty, so disk {disk} cannot move from it")),
            Some(&top) if top != disk => {
                let at = self.pegs.iter().position(|p| p.contains(&disk)).expect("every disk is on a peg");
                return Err(if at != from {
                    format!("disk {disk} is on peg {at}, not on peg {from}")
                } else {
                    format!("disk {disk} is not on top of peg {from}: disk {top} lies on it")
                });
            }
            Some(_) => {}
        }
        if let Some(&under) = self.pegs[to].last()
            && under < disk
        {
            return Err(format!(
                "disk {disk} cannot go onto peg {to}: its top disk {under} is smaller, and a larger disk never lies on a smaller one"
            ));
        }
        self.pegs[from].pop();
        self.pegs[to].push(disk);
        self.moves_made += 1;
        Ok(())
    }

    /// Every legal move now, as `[disk, from, to]`.
    pub fn legal_moves(&self) -> Vec<[u32; 3]> {
        let mut out = Vec::new();
        for from in 0..PEGS {
            let Some(&disk) = self.pegs[from].last() else { continue };
            for to in 0..PEGS {
                if to != from && self.pegs[to].last().is_none_or(|&u| u > disk) {
                    out.push([disk, from as u32, to as u32]);
                }
            }
        }
        out
    }

    /// Replaces the position (a reset to a given state).
    pub fn set_state(&mut self, state: &[Vec<u32>]) -> Result<(), String> {
        if state.len() != PEGS {
            return Err(format!("a state lists exactly 3 pegs, got {}", state.len()));
        }
        let mut seen = vec![false; self.n as usize + 1];
        for (i, peg) in state.iter().enumerate() {
            for w in peg.windows(2) {
                if w[0] < w[1] {
                    return Err(format!("peg {i} has disk {} on top of the smaller disk {}; list each peg bottom to top", w[1], w[0]));
                }
            }
            for &d in peg {
                if d == 0 || d > self.n {
                    return Err(format!("disk {d} does not exist: the disks are 1 to {}", self.n));
                }
                if std::mem::replace(&mut seen[d as usize], true) {
                    return Err(format!("disk {d} appears twice"));
                }
            }
        }
        if let Some(missing) = (1..=self.n).find(|&d| !seen[d as usize]) {
            return Err(format!("disk {missing} is missing: every disk 1..{} must be on a peg", self.n));
        }
        self.pegs = [state[0].clone(), state[1].clone(), state[2].clone()];
        self.moves_made = 0;
        Ok(())
    }

    /// The state as an agent reads it.
    pub fn render(&self) -> String {
        let mut s =
            format!("Tower of Hanoi, {} disks. Moves made: {} (optimal solution: {}).\n", self.n, self.moves_made, self.optimal_moves());
        for (i, peg) in self.pegs.iter().enumerate() {
            let disks: Vec<String> = peg.iter().map(u32::to_string).collect();
            let disks = if disks.is_empty() { "(empty)".to_string() } else { disks.join(" ") };
            s.push_str(&format!("peg {i} (bottom→top): {disks}\n"));
        }
        s
    }

    pub fn render_legal(&self) -> String {
        let moves: Vec<String> = self.legal_moves().iter().map(|m| format!("[{}, {}, {}]", m[0], m[1], m[2])).collect();
        format!("Legal moves now: {}", moves.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn solve(n: u32, from: u32, to: u32, via: u32, out: &mut Vec<[u32; 3]>) {
        if n == 0 {
            return;
        }
        solve(n - 1, from, via, to, out);
        out.push([n, from, to]);
        solve(n - 1, via, to, from, out);
    }

    #[test]
    fn the_papers_three_disk_solution_is_optimal() {
        let mut h = Hanoi::new(3).unwrap();
        for m in [[1, 0, 2], [2, 0, 1], [1, 2, 1], [3, 0, 2], [1, 1, 0], [2, 1, 2], [1, 0, 2]] {
            h.apply(&m).unwrap();
        }
        assert!(h.goal_reached());
        assert_eq!(h.moves_made, h.optimal_moves());
    }

    #[test]
    fn twenty_disks_solve_in_2_pow_20_minus_1_moves() {
        let mut h = Hanoi::new(20).unwrap();
        let mut plan = Vec::new();
        solve(20, 0, 2, 1, &mut plan);
        for m in &plan {
            h.apply(m).unwrap();
        }
        assert!(h.goal_reached());
        assert_eq!(h.moves_made, (1 << 20) - 1);
    }

    #[test]
    fn illegal_moves_say_why() {
        let mut h = Hanoi::new(3).unwrap();
        assert!(h.apply(&[1, 0]).unwrap_err().contains("three numbers"));
        assert!(h.apply(&[1, 0, 3]).unwrap_err().contains("peg 3 does not exist"));
        assert!(h.apply(&[4, 0, 1]).unwrap_err().contains("disk 4 does not exist"));
        assert!(h.apply(&[1, 0, 0]).unwrap_err().contains("both peg 0"));
        assert!(h.apply(&[2, 0, 1]).unwrap_err().contains("not on top of peg 0"));
        assert!(h.apply(&[1, 1, 2]).unwrap_err().contains("peg 1 is empty"));
        h.apply(&[1, 0, 2]).unwrap();
        assert!(h.apply(&[2, 0, 2]).unwrap_err().contains("larger disk never lies on a smaller"));
        assert!(h.apply(&[1, 0, 1]).unwrap_err().contains("disk 1 is on peg 2"));
        assert_eq!(h.moves_made, 1, "refused moves change nothing");
        assert_eq!(h.legal_moves(), vec![[2, 0, 1], [1, 2, 0], [1, 2, 1]]);
    }

    #[test]
    fn reset_states_are_checked() {
        let mut h = Hanoi::new(3).unwrap();
        assert!(h.set_state(&[vec![3, 2], vec![1], vec![]]).is_ok());
        assert!(h.set_state(&[vec![2, 3], vec![1], vec![]]).unwrap_err().contains("bottom to top"));
        assert!(h.set_state(&[vec![3], vec![1], vec![]]).unwrap_err().contains("disk 2 is missing"));
        assert!(h.set_state(&[vec![3, 1], vec![1], vec![2]]).unwrap_err().contains("twice"));
        assert!(h.set_state(&[vec![3, 2, 1]]).unwrap_err().contains("exactly 3 pegs"));
    }
}
