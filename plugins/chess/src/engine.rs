//! The computer opponent: iterative-deepening principal-variation search
//! with quiescence search (delta pruning), a transposition table, null-move
//! (reduction growing with depth), internal iterative reduction,
//! reverse-futility, futility and late-move pruning, logarithmic late-move
//! reductions, MVV-LVA ordering with losing captures (by static exchange
//! evaluation) moved among the quiet moves and skipped in quiescence, killer
//! and history move ordering. The evaluation is in `eval`.
//!
//! Strength is set by node budgets, not time, so the same seed and the same
//! moves give the same engine moves on any machine. Weak levels also add
//! noise to root scores and sometimes play a random legal move.

use cozy_chess::{BitBoard, Board, Color, Move, Piece, get_pawn_attacks};

use crate::eval::evaluate;

/// One difficulty level's settings.
#[derive(Clone, Copy, Debug)]
pub struct Level {
    pub max_depth: u8,
    /// Nodes per move: a hard limit once depth 1 is searched.
    pub nodes: u64,
    /// Uniform noise (centipawns) added to each root move's score.
    pub noise: i32,
    /// Chance (per mille) of playing a uniformly random legal move.
    pub random_per_mille: u32,
}

/// Levels 1 (a beginner who blunders) to 10 (full strength at ~1 s a move).
pub fn level(n: u8) -> Level {
    let (max_depth, nodes, noise, random_per_mille) = match n.clamp(1, 10) {
        1 => (1, 400, 350, 300),
        2 => (1, 1_000, 250, 200),
        3 => (2, 3_000, 180, 120),
        4 => (2, 8_000, 120, 70),
        5 => (3, 25_000, 70, 35),
        6 => (4, 60_000, 40, 15),
        7 => (5, 150_000, 20, 5),
        8 => (64, 260_000, 8, 0),
        9 => (64, 650_000, 0, 0),
        // About one second a move inside the component (~1.3 M nodes/s: the
        // pruning evaluates every interior node).
        _ => (64, 1_300_000, 0, 0),
    };
    Level { max_depth, nodes, noise, random_per_mille }
}

/// Transposition-table entries of one game's engine (24 bytes each: 6 MiB,
/// well inside a session's default 64 MiB). Level 10 searches 1.3 M nodes a
/// move and the table is kept between moves.
pub const TT_ENTRIES: usize = 1 << 18;

const INF: i32 = 1_000_000;

/// Late-move reductions by depth and move number: about ln(depth)·ln(n)/2.
static LMR: std::sync::LazyLock<[[i32; 64]; 64]> = std::sync::LazyLock::new(|| {
    let mut t = [[0; 64]; 64];
    for (d, row) in t.iter_mut().enumerate().skip(1) {
        for (n, r) in row.iter_mut().enumerate().skip(1) {
            *r = (0.75 + (d as f64).ln() * (n as f64).ln() / 2.1) as i32;
        }
    }
    t
});
const MATE: i32 = 900_000;
const MAX_PLY: usize = 128;

#[derive(Clone, Copy, Default)]
struct Entry {
    key: u64,
    mv: Option<Move>,
    score: i32,
    depth: i8,
    bound: u8, // 0 exact, 1 lower, 2 upper
}

pub struct Engine {
    /// Empty until the engine first searches (`choose`): a game between two
    /// agents never needs it, and filling 6 MiB when a game starts cost
    /// `create_game` milliseconds and left the caches cold for the first move.
    tt: Vec<Entry>,
    tt_size: usize,
    nodes: u64,
    budget: u64,
    aborted: bool,
    killers: [[Option<Move>; 2]; MAX_PLY],
    /// Quiet moves that caused cut-offs, by from and to square.
    history: Box<[[i32; 64]; 64]>,
    /// Hashes of positions earlier in the game and on the search path (repetitions are draws).
    path: Vec<u64>,
    rng: u64,
    pub last_nodes: u64,
    pub last_depth: u8,
}

impl Engine {
    /// `tt_entries` is rounded down to a power of two (24 bytes each).
    pub fn new(tt_entries: usize, seed: u64) -> Engine {
        // The largest power of two not above the request (the index is a mask).
        let n = tt_entries.max(1024);
        let size = if n.is_power_of_two() { n } else { n.next_power_of_two() / 2 };
        Engine {
            tt: Vec::new(),
            tt_size: size,
            nodes: 0,
            budget: 0,
            aborted: false,
            killers: [[None; 2]; MAX_PLY],
            history: Box::new([[0; 64]; 64]),
            path: Vec::new(),
            rng: seed ^ 0x2545_f491_4f6c_dd1d,
            last_nodes: 0,
            last_depth: 0,
        }
    }

    /// Where the random stream stands (saved with a game, given back by [`Engine::resume_at`]).
    pub fn rng(&self) -> u64 {
        self.rng
    }

    pub fn resume_at(&mut self, rng: u64) {
        self.rng = rng;
    }

    fn random(&mut self) -> u64 {
        // xorshift64*: small, deterministic, good enough for move noise.
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Picks a move for the side to move. `history` holds the hashes of the
    /// positions that occurred in the game before this one.
    ///
    /// Every search starts from an empty table, so the move depends only on
    /// the position, the game's history, the level and the random stream
    /// (`rng`): a game rebuilt from its moves after a restart plays on as
    /// it would have.
    pub fn choose(&mut self, board: &Board, history: &[u64], lvl: Level) -> Option<Move> {
        if self.tt.is_empty() {
            self.tt = vec![Entry::default(); self.tt_size];
        } else {
            self.tt.fill(Entry::default());
        }
        let mut moves = Vec::new();
        board.generate_moves(|ms| {
            moves.extend(ms);
            false
        });
        if moves.is_empty() {
            return None;
        }
        if lvl.random_per_mille > 0 && (self.random() % 1000) < u64::from(lvl.random_per_mille) {
            let i = (self.random() % moves.len() as u64) as usize;
            return Some(moves[i]);
        }
        self.path = history.to_vec();
        self.nodes = 0;
        self.budget = lvl.nodes;
        self.aborted = false;
        self.killers = [[None; 2]; MAX_PLY];
        *self.history = [[0; 64]; 64];
        self.last_depth = 0;
        let mut scored: Vec<(Move, i32)> = moves.iter().map(|&m| (m, 0)).collect();
        let mut best = scored[0].0;
        for depth in 1..=lvl.max_depth {
            // Full-window scores for every root move when noise is wanted; a
            // normal alpha-beta root otherwise.
            let mut alpha = -INF;
            let mut round: Vec<(Move, i32)> = Vec::with_capacity(scored.len());
            for (i, &(mv, _)) in scored.iter().enumerate() {
                let mut child = board.clone();
                child.play_unchecked(mv);
                self.path.push(board.hash());
                let d = depth as i32 - 1;
                let score = if lvl.noise > 0 || i == 0 {
                    -self.search(&child, d, 1, -INF, if lvl.noise > 0 { INF } else { -alpha }, true)
                } else {
                    // Principal variation search: prove the move no better first.
                    let s = -self.search(&child, d, 1, -alpha - 1, -alpha, true);
                    if s > alpha && !self.aborted { -self.search(&child, d, 1, -INF, -alpha, true) } else { s }
                };
                self.path.pop();
                if self.aborted {
                    break;
                }
                round.push((mv, score));
                alpha = alpha.max(score);
            }
            if self.aborted {
                // The budget ran out mid-iteration: root moves searched to the end
                // at this depth are still sound. The previous best comes first and
                // only a strictly better score replaces it: a move that failed low
                // can return exactly alpha, and must not win a tie.
                let mut top = i32::MIN;
                for &(m, score) in &round {
                    if score > top {
                        top = score;
                        best = m;
                    }
                }
                break;
            }
            round.sort_by_key(|b| std::cmp::Reverse(b.1));
            scored = round;
            best = scored[0].0;
            self.last_depth = depth;
            if self.nodes >= self.budget || scored[0].1.abs() >= MATE - MAX_PLY as i32 {
                break;
            }
        }
        self.last_nodes = self.nodes;
        if lvl.noise > 0 {
            let noisy = scored
                .iter()
                .map(|&(m, s)| {
                    let jitter = (self.random() % (2 * lvl.noise as u64 + 1)) as i32 - lvl.noise;
                    (m, s.saturating_add(jitter))
                })
                .max_by_key(|&(_, s)| s);
            return noisy.map(|(m, _)| m);
        }
        Some(best)
    }

    fn probe(&self, key: u64) -> Option<Entry> {
        let e = self.tt[(key as usize) & (self.tt.len() - 1)];
        (e.key == key).then_some(e)
    }

    fn store(&mut self, key: u64, mv: Option<Move>, score: i32, depth: i32, bound: u8) {
        let i = (key as usize) & (self.tt.len() - 1);
        if self.tt[i].key != key || depth as i8 >= self.tt[i].depth {
            self.tt[i] = Entry { key, mv, score, depth: depth as i8, bound };
        }
    }

    fn search(&mut self, board: &Board, depth: i32, ply: usize, mut alpha: i32, beta: i32, allow_null: bool) -> i32 {
        self.nodes += 1;
        // The node budget is a hard limit once depth 1 has finished (so there is a move).
        if self.nodes > self.budget && self.last_depth >= 1 {
            self.aborted = true;
            return 0;
        }
        let key = board.hash();
        if self.path.iter().rev().take(board.halfmove_clock() as usize + 1).any(|&h| h == key) || board.halfmove_clock() >= 100 {
            return 0;
        }
        let in_check = !board.checkers().is_empty();
        let depth = if in_check { depth + 1 } else { depth };
        if depth <= 0 || ply >= MAX_PLY - 1 {
            return self.quiesce(board, ply, alpha, beta);
        }
        let tt = self.probe(key);
        if let Some(e) = tt
            && i32::from(e.depth) >= depth
        {
            let s = from_tt(e.score, ply);
            match e.bound {
                0 => return s,
                1 if s >= beta => return s,
                2 if s <= alpha => return s,
                _ => {}
            }
        }
        let pv_node = beta - alpha > 1;
        let static_eval = if in_check { -INF } else { evaluate(board) };
        let decided = beta.abs() >= MATE - 1000;
        // Reverse futility: far enough above beta near the leaves, the opponent will not catch up.
        if !pv_node && !in_check && !decided && depth <= 5 && static_eval - 90 * depth >= beta {
            return static_eval - 90 * depth;
        }
        // Null move: if passing still beats beta, this position is too good to search fully.
        if allow_null
            && !pv_node
            && !in_check
            && depth >= 3
            && has_pieces(board)
            && static_eval >= beta
            && let Some(passed) = board.null_move()
        {
            self.path.push(key);
            let reduction = 3 + depth / 4;
            let score = -self.search(&passed, depth - 1 - reduction, ply + 1, -beta, -beta + 1, false);
            self.path.pop();
            if self.aborted {
                return 0;
            }
            if score >= beta {
                return beta;
            }
        }
        // Without a remembered best move this node is new to the search: a
        // shallower look is cheaper and as good for ordering next time.
        let depth = if depth >= 4 && tt.is_none_or(|e| e.mv.is_none()) { depth - 1 } else { depth };
        let mut moves = Vec::with_capacity(48);
        board.generate_moves(|ms| {
            moves.extend(ms);
            false
        });
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let tt_move = tt.and_then(|e| e.mv);
        let killers = self.killers[ply];
        let history = &self.history;
        moves.sort_by_cached_key(|&m| -(order_score(board, m, tt_move, &killers) + history[m.from as usize][m.to as usize].min(30_000)));
        let original_alpha = alpha;
        let mut best_move = None;
        let mut best = -INF;
        let theirs = board.colors(!board.side_to_move());
        // Near the leaves, quiet moves cannot lift a hopeless position to alpha.
        let futile = !pv_node && !in_check && depth <= 2 && static_eval + 150 * depth <= alpha;
        let late_limit = if !pv_node && !in_check && depth <= 4 { 4 + (depth * depth) as usize } else { usize::MAX };
        self.path.push(key);
        for (i, mv) in moves.into_iter().enumerate() {
            let quiet = !theirs.has(mv.to) && mv.promotion.is_none();
            let mut child = board.clone();
            child.play_unchecked(mv);
            let gives_check = !child.checkers().is_empty();
            if i > 0 && quiet && !gives_check && (futile || i >= late_limit) && best > -MATE + 1000 {
                continue;
            }
            let score = if i == 0 {
                -self.search(&child, depth - 1, ply + 1, -beta, -alpha, true)
            } else {
                // Late quiet moves are searched shallower first; anything promising is re-searched.
                let reduction = if depth >= 3 && i >= 3 && quiet && !in_check && !gives_check && !killers.contains(&Some(mv)) {
                    LMR[(depth as usize).min(63)][i.min(63)].min(depth - 2) - i32::from(pv_node)
                } else {
                    0
                }
                .max(0);
                let mut s = -self.search(&child, depth - 1 - reduction, ply + 1, -alpha - 1, -alpha, true);
                if s > alpha && reduction > 0 {
                    s = -self.search(&child, depth - 1, ply + 1, -alpha - 1, -alpha, true);
                }
                if s > alpha && s < beta {
                    s = -self.search(&child, depth - 1, ply + 1, -beta, -alpha, true);
                }
                s
            };
            if self.aborted {
                self.path.pop();
                return 0;
            }
            if score > best {
                best = score;
                best_move = Some(mv);
            }
            if score > alpha {
                alpha = score;
            }
            if alpha >= beta {
                if quiet {
                    let k = &mut self.killers[ply];
                    if k[0] != Some(mv) {
                        k[1] = k[0];
                        k[0] = Some(mv);
                    }
                    self.history[mv.from as usize][mv.to as usize] += depth * depth;
                }
                break;
            }
        }
        self.path.pop();
        let bound = if best <= original_alpha {
            2
        } else if best >= beta {
            1
        } else {
            0
        };
        self.store(key, best_move, to_tt(best, ply), depth, bound);
        best
    }

    fn quiesce(&mut self, board: &Board, ply: usize, mut alpha: i32, beta: i32) -> i32 {
        self.nodes += 1;
        let stand = evaluate(board);
        if stand >= beta {
            return stand;
        }
        alpha = alpha.max(stand);
        if ply >= MAX_PLY - 1 {
            return stand;
        }
        let theirs = board.colors(!board.side_to_move());
        let mut captures = Vec::new();
        board.generate_moves(|ms| {
            let mut ms = ms;
            ms.to &= theirs;
            captures.extend(ms);
            false
        });
        // Captures that lose material in the exchange cannot help. Dropping them
        // first leaves only winning captures, so victim and attacker alone order them.
        captures.retain(|&m| !losing_capture(board, m));
        captures.sort_by_cached_key(|&m| -capture_order(board, m));
        for mv in captures {
            // Delta pruning: even winning this piece cleanly would not reach alpha.
            let victim = board.piece_on(mv.to).map_or(0, value);
            let gain = victim + mv.promotion.map_or(0, |p| value(p) - 100);
            if stand + gain + 200 < alpha {
                continue;
            }
            let mut child = board.clone();
            child.play_unchecked(mv);
            let score = -self.quiesce(&child, ply + 1, -beta, -alpha);
            if score >= beta {
                return score;
            }
            alpha = alpha.max(score);
        }
        alpha
    }
}

/// The side to move has more than king and pawns (null moves are unsafe in zugzwang-prone endings).
fn has_pieces(board: &Board) -> bool {
    let mine = board.colors(board.side_to_move());
    !((board.pieces(Piece::Knight) | board.pieces(Piece::Bishop) | board.pieces(Piece::Rook) | board.pieces(Piece::Queen)) & mine)
        .is_empty()
}

// Mate scores are stored relative to the node, not the root.
fn to_tt(score: i32, ply: usize) -> i32 {
    if score > MATE - 1000 {
        score + ply as i32
    } else if score < -MATE + 1000 {
        score - ply as i32
    } else {
        score
    }
}

fn from_tt(score: i32, ply: usize) -> i32 {
    if score > MATE - 1000 {
        score - ply as i32
    } else if score < -MATE + 1000 {
        score + ply as i32
    } else {
        score
    }
}

fn value(p: Piece) -> i32 {
    match p {
        Piece::Pawn => 100,
        Piece::Knight => 320,
        Piece::Bishop => 330,
        Piece::Rook => 500,
        Piece::Queen => 950,
        Piece::King => 20_000,
    }
}

/// Move ordering: the table's move, then captures that do not lose material,
/// promotions, killers, then the rest (losing captures among them).
fn order_score(board: &Board, mv: Move, tt: Option<Move>, killers: &[Option<Move>; 2]) -> i32 {
    if Some(mv) == tt {
        return 1_000_000;
    }
    let mut s = capture_order(board, mv);
    if board.colors(!board.side_to_move()).has(mv.to) && !losing_capture(board, mv) {
        s += 100_000;
    }
    if killers[0] == Some(mv) {
        s += 50_000;
    } else if killers[1] == Some(mv) {
        s += 40_000;
    }
    s
}

/// Captures by most valuable victim, then least valuable attacker; promotions
/// by the piece promoted to.
fn capture_order(board: &Board, mv: Move) -> i32 {
    let mut s = 0;
    if let Some(victim) = board.piece_on(mv.to).filter(|_| board.colors(!board.side_to_move()).has(mv.to)) {
        let attacker = board.piece_on(mv.from).map_or(0, value);
        s += value(victim) * 10 - attacker / 10;
    }
    if let Some(p) = mv.promotion {
        s += 90_000 + value(p);
    }
    s
}

/// A capture by a bigger piece that the exchange on its square proves a loss.
fn losing_capture(board: &Board, mv: Move) -> bool {
    let attacker = board.piece_on(mv.from).map_or(0, value);
    let victim = board.piece_on(mv.to).map_or(0, value);
    attacker > victim + 50 && see(board, mv) < 0
}

/// Static exchange evaluation: the material the side to move nets by playing
/// capture `mv` and then both sides recapturing on its square with their
/// least valuable attacker, each free to stop when recapturing loses.
/// Sliders behind a capturer join in (x-rays) as the occupancy thins.
fn see(board: &Board, mv: Move) -> i32 {
    use cozy_chess::{get_bishop_moves, get_king_moves, get_knight_moves, get_rook_moves};
    let to = mv.to;
    let mut occ = board.occupied() ^ mv.from.bitboard();
    let diagonal = board.pieces(Piece::Bishop) | board.pieces(Piece::Queen);
    let straight = board.pieces(Piece::Rook) | board.pieces(Piece::Queen);
    let attackers_of = |occ: BitBoard| {
        (get_pawn_attacks(to, Color::White) & board.colored_pieces(Color::Black, Piece::Pawn))
            | (get_pawn_attacks(to, Color::Black) & board.colored_pieces(Color::White, Piece::Pawn))
            | (get_knight_moves(to) & board.pieces(Piece::Knight))
            | (get_king_moves(to) & board.pieces(Piece::King))
            | (get_bishop_moves(to, occ) & diagonal)
            | (get_rook_moves(to, occ) & straight)
    };
    let mut gains = [0i32; 32];
    gains[0] = board.piece_on(to).map_or(0, value);
    // The piece now standing on the square, which the next capture wins.
    let mut on_square = mv.promotion.or(board.piece_on(mv.from)).map_or(0, value);
    let mut side = !board.side_to_move();
    let mut n = 1;
    loop {
        let attackers = attackers_of(occ) & occ & board.colors(side);
        let Some((piece, from)) = [Piece::Pawn, Piece::Knight, Piece::Bishop, Piece::Rook, Piece::Queen, Piece::King]
            .into_iter()
            .find_map(|p| (attackers & board.pieces(p)).next_square().map(|sq| (p, sq)))
        else {
            break;
        };
        // A king may only take last: it cannot capture into a defended square.
        if piece == Piece::King && !(attackers_of(occ ^ from.bitboard()) & occ & board.colors(!side)).is_empty() {
            break;
        }
        gains[n] = on_square - gains[n - 1];
        on_square = value(piece);
        occ ^= from.bitboard();
        side = !side;
        n += 1;
        if n == gains.len() {
            break;
        }
    }
    // Fold back: each side takes only if taking is better than standing pat.
    while n > 1 {
        n -= 1;
        gains[n - 1] = -(-gains[n - 1]).max(gains[n]);
    }
    gains[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn best(fen: &str, lvl: u8) -> String {
        let board: Board = fen.parse().unwrap();
        let mv = Engine::new(1 << 16, 1).choose(&board, &[], level(lvl)).unwrap();
        cozy_chess::util::display_uci_move(&board, mv).to_string()
    }

    #[test]
    fn finds_mate_in_one_and_wins_material() {
        assert_eq!(best("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", 10), "a1a8");
        // A hanging queen is taken.
        assert_eq!(best("4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1", 8), "d2d5");
    }

    #[test]
    fn a_budget_cut_mid_iteration_keeps_the_best_move() {
        // The hanging queen must be taken at every budget, however the last iteration is cut.
        let board: Board = "4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1".parse().unwrap();
        for nodes in [2_000, 5_000, 20_000, 60_000, 150_000] {
            let lvl = Level { max_depth: 64, nodes, noise: 0, random_per_mille: 0 };
            let mv = Engine::new(1 << 16, 1).choose(&board, &[], lvl).unwrap();
            assert_eq!(cozy_chess::util::display_uci_move(&board, mv).to_string(), "d2d5", "budget {nodes}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_moves() {
        let board = Board::default();
        for lvl in [1, 5, 9] {
            let a = Engine::new(1 << 16, 7).choose(&board, &[], level(lvl));
            let b = Engine::new(1 << 16, 7).choose(&board, &[], level(lvl));
            assert_eq!(a, b, "level {lvl}");
        }
    }

    #[test]
    fn the_table_fits_its_memory_estimate() {
        assert!(std::mem::size_of::<Entry>() <= 24);
        assert_eq!(Engine::new(TT_ENTRIES, 1).tt_size, TT_ENTRIES);
        assert_eq!(Engine::new(3000, 1).tt_size, 2048);
        let mut engine = Engine::new(3000, 1);
        assert!(engine.tt.is_empty(), "the table is made when the engine first searches");
        engine.choose(&Board::default(), &[], level(1));
        assert_eq!(engine.tt.len(), 2048);
    }

    #[test]
    fn exchanges_count_recaptures_and_x_rays() {
        let see_of = |fen: &str, uci: &str| {
            let board: Board = fen.parse().unwrap();
            see(&board, cozy_chess::util::parse_uci_move(&board, uci).unwrap())
        };
        // An undefended pawn is won; a pawn-defended one costs the rook.
        assert_eq!(see_of("4k3/8/8/3p4/8/8/8/3RK3 w - - 0 1", "d1d5"), 100);
        assert_eq!(see_of("4k3/8/2p5/3p4/8/8/8/3RK3 w - - 0 1", "d1d5"), -400);
        // The rook behind the capturer wins the exchange after Rxd5 Rxd5 Rxd5.
        assert_eq!(see_of("3rk3/8/8/3p4/8/8/3R4/3RK3 w - - 0 1", "d2d5"), 100);
        // Without it the rook is lost for a pawn.
        assert_eq!(see_of("3rk3/8/8/3p4/8/8/3R4/4K3 w - - 0 1", "d2d5"), -400);
        // A king cannot recapture on a defended square.
        assert_eq!(see_of("8/8/4k3/3p4/8/8/3R4/3RK3 w - - 0 1", "d2d5"), 100);
    }
}
