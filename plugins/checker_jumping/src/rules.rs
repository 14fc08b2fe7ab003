//! Checker Jumping rules, independent of the plugin interface: a row of
//! 2N+1 cells, N red checkers on the left, N blue on the right, the gap
//! between. Red moves right, blue left: a checker slides into the adjacent
//! empty cell, or jumps over exactly one checker of the other colour into
//! the empty cell. The goal is the colours swapped.

pub const MAX_N: u32 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Cell {
    Red,
    Blue,
    Empty,
}

impl Cell {
    /// The paper's letters: `R`, `B`, `_`.
    pub fn letter(self) -> &'static str {
        match self {
            Cell::Red => "R",
            Cell::Blue => "B",
            Cell::Empty => "_",
        }
    }

    fn colour(letter: &str) -> Result<Cell, String> {
        match letter {
            "R" => Ok(Cell::Red),
            "B" => Ok(Cell::Blue),
            other => Err(format!("the colour is \"R\" (red, moves right) or \"B\" (blue, moves left), got {other:?}")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Cell::Red => "red",
            Cell::Blue => "blue",
            Cell::Empty => "empty",
        }
    }
}

/// A move as the paper writes it: `["R", 0, 1]`.
pub type Move = (String, u32, u32);

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Board {
    pub n: u32,
    pub cells: Vec<Cell>,
    pub moves_made: u64,
}

impl Board {
    pub fn new(n: u32) -> Result<Board, String> {
        if !(1..=MAX_N).contains(&n) {
            return Err(format!("n must be between 1 and {MAX_N} checkers of each colour, got {n}"));
        }
        let n_ = n as usize;
        let mut cells = vec![Cell::Red; n_];
        cells.push(Cell::Empty);
        cells.extend(vec![Cell::Blue; n_]);
        Ok(Board { n, cells, moves_made: 0 })
    }

    /// Fewest moves that solve it: (N+1)² − 1.
    pub fn optimal_moves(&self) -> u64 {
        u64::from(self.n + 1).pow(2) - 1
    }

    pub fn goal_reached(&self) -> bool {
        let n = self.n as usize;
        self.cells[..n].iter().all(|c| *c == Cell::Blue) && self.cells[n + 1..].iter().all(|c| *c == Cell::Red)
    }

    /// No legal move is left and the goal is not reached.
    pub fn dead_end(&self) -> bool {
        !self.goal_reached() && self.legal_moves().is_empty()
    }

    /// Checks a move and applies it, or says precisely why it is illegal.
    pub fn apply(&mut self, mv: &Move) -> Result<(), String> {
        let (letter, from, to) = mv;
        let colour = Cell::colour(letter)?;
        let last = self.cells.len() as u32 - 1;
        for p in [*from, *to] {
            if p > last {
                return Err(format!("position {p} is off the board: the cells are 0 to {last}"));
            }
        }
        let (from, to) = (*from as usize, *to as usize);
        let here = self.cells[from];
        if here != colour {
            return Err(match here {
                Cell::Empty => format!("cell {from} is empty: there is no checker to move"),
                other => format!("cell {from} holds a {} checker, not a {} one", other.name(), colour.name()),
            });
        }
        if self.cells[to] != Cell::Empty {
            return Err(format!("cell {to} is not empty: a checker moves only into the empty cell"));
        }
        let forward = if colour == Cell::Red { to > from } else { to < from };
        if !forward {
            let way = if colour == Cell::Red { "right" } else { "left" };
            return Err(format!("a {} checker moves only {way} (no backward moves)", colour.name()));
        }
        match from.abs_diff(to) {
            1 => {}
            2 => {
                let over = self.cells[(from + to) / 2];
                if over == colour {
                    return Err(format!(
                        "a checker jumps only over a checker of the other colour; cell {} holds a {} one",
                        (from + to) / 2,
                        over.name()
                    ));
                }
            }
            d => return Err(format!("a checker slides one cell or jumps two; {from} to {to} is {d} cells")),
        }
        self.cells.swap(from, to);
        self.moves_made += 1;
        Ok(())
    }

    /// Every legal move now.
    pub fn legal_moves(&self) -> Vec<Move> {
        let gap = self.cells.iter().position(|c| *c == Cell::Empty).expect("one empty cell");
        let mut out = Vec::new();
        for from in gap.saturating_sub(2)..=(gap + 2).min(self.cells.len() - 1) {
            let c = self.cells[from];
            if c == Cell::Empty {
                continue;
            }
            let mv = (c.letter().to_string(), from as u32, gap as u32);
            if self.clone().apply(&mv).is_ok() {
                out.push(mv);
            }
        }
        out
    }

    /// Sets a position: `R`, `B` and one `_`, N of each colour.
    pub fn set_state(&mut self, cells: &[String]) -> Result<(), String> {
        let parsed: Vec<Cell> = cells
            .iter()
            .map(|c| match c.as_str() {
                "R" => Ok(Cell::Red),
                "B" => Ok(Cell::Blue),
                "_" => Ok(Cell::Empty),
                other => Err(format!("a cell is \"R\", \"B\" or \"_\", got {other:?}")),
            })
            .collect::<Result<_, _>>()?;
        let count = |k: Cell| parsed.iter().filter(|c| **c == k).count();
        let n = self.n as usize;
        if parsed.len() != 2 * n + 1 || count(Cell::Red) != n || count(Cell::Blue) != n {
            return Err(format!("the board has {} cells: {n} \"R\", {n} \"B\" and one \"_\"", 2 * n + 1));
        }
        self.cells = parsed;
        self.moves_made = 0;
        Ok(())
    }

    pub fn letters(&self) -> Vec<String> {
        self.cells.iter().map(|c| c.letter().to_string()).collect()
    }

    /// The board as the paper prints it, with the cell numbers under it.
    pub fn render(&self) -> String {
        let row: Vec<&str> = self.cells.iter().map(|c| c.letter()).collect();
        format!("Board: {row:?} (cells 0 to {}), {} moves made.", self.cells.len() - 1, self.moves_made)
    }

    pub fn render_legal(&self) -> String {
        let legal = self.legal_moves();
        if legal.is_empty() {
            return "No legal move is left: this is a dead end. Reset with `checker_jumping_reset_simulator`.".into();
        }
        let shown: Vec<String> = legal.iter().map(|(c, f, t)| format!("[\"{c}\", {f}, {t}]")).collect();
        format!("Legal moves now: {}.", shown.join(", "))
    }
}

/// An optimal solution: (N+1)² − 1 moves. The moves come in runs of one
/// colour, red first, the colours alternating, of lengths 1, 2, …, N, N, N,
/// …, 2, 1; within a run a checker jumps when one can, else one slides.
pub fn solve(n: u32) -> Result<Vec<Move>, String> {
    let mut b = Board::new(n)?;
    let runs: Vec<u32> = (1..=n).chain([n, n]).chain((1..n).rev()).collect();
    let mut plan = Vec::with_capacity(b.optimal_moves() as usize);
    for (i, len) in runs.into_iter().enumerate() {
        let letter = if i % 2 == 0 { "R" } else { "B" };
        for _ in 0..len {
            let legal: Vec<Move> = b.legal_moves().into_iter().filter(|m| m.0 == letter).collect();
            let mv = legal.iter().find(|m| m.1.abs_diff(m.2) == 2).or(legal.first()).cloned().ok_or("the solver found no move")?;
            b.apply(&mv)?;
            plan.push(mv);
        }
    }
    if !b.goal_reached() {
        return Err("the solver's plan does not reach the goal".into());
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashSet, VecDeque};

    fn mv(c: &str, f: u32, t: u32) -> Move {
        (c.to_string(), f, t)
    }

    /// Fewest moves by breadth-first search.
    fn bfs(n: u32) -> u64 {
        let start = Board::new(n).unwrap();
        let mut seen = HashSet::from([start.cells.clone()]);
        let mut queue = VecDeque::from([(start, 0u64)]);
        while let Some((b, d)) = queue.pop_front() {
            if b.goal_reached() {
                return d;
            }
            for m in b.legal_moves() {
                let mut next = b.clone();
                next.apply(&m).unwrap();
                if seen.insert(next.cells.clone()) {
                    queue.push_back((next, d + 1));
                }
            }
        }
        unreachable!("every size is solvable")
    }

    #[test]
    fn the_optimum_is_n_plus_one_squared_minus_one_and_the_solver_finds_it() {
        for n in 1..=6 {
            assert_eq!(bfs(n), Board::new(n).unwrap().optimal_moves(), "n = {n}");
        }
        for n in 1..=40 {
            assert_eq!(solve(n).unwrap().len() as u64, Board::new(n).unwrap().optimal_moves(), "n = {n}");
        }
    }

    #[test]
    fn the_papers_example_and_every_kind_of_illegal_move() {
        let mut b = Board::new(1).unwrap();
        for m in [mv("R", 0, 1), mv("B", 2, 0), mv("R", 1, 2)] {
            b.apply(&m).unwrap();
        }
        assert!(b.goal_reached());
        let mut b = Board::new(2).unwrap();
        let err = |b: &mut Board, m: Move| b.clone().apply(&m).unwrap_err();
        assert!(err(&mut b, mv("G", 1, 2)).contains("\"R\" (red, moves right) or \"B\""));
        assert!(err(&mut b, mv("R", 1, 7)).contains("position 7 is off the board"));
        assert!(err(&mut b, mv("R", 2, 3)).contains("cell 2 is empty"));
        assert!(err(&mut b, mv("B", 1, 2)).contains("cell 1 holds a red checker, not a blue one"));
        assert!(err(&mut b, mv("R", 0, 1)).contains("cell 1 is not empty"));
        assert!(err(&mut b, mv("R", 0, 2)).contains("jumps only over a checker of the other colour"));
        b.apply(&mv("R", 1, 2)).unwrap();
        assert!(err(&mut b, mv("R", 2, 1)).contains("moves only right"));
        assert!(err(&mut b, mv("B", 4, 1)).contains("3 cells"));
        // Two reds slid next to each other facing two blues: stuck.
        let mut stuck = Board::new(2).unwrap();
        stuck.set_state(&["_", "R", "R", "B", "B"].map(String::from)).unwrap();
        assert!(stuck.dead_end());
    }
}
