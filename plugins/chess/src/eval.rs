//! The static evaluation: a weighted count of terms (material, piece
//! squares, safe mobility, pressure on the enemy king, rooks on open files,
//! pawn structure, passed pawns and the kings' race to them, king shelter),
//! each weight a middlegame and an endgame value, tapered by the material left.
//!
//! The evaluation is written once, as [`trace`], which reports every term it
//! counts to a [`Trace`]. The engine's trace adds the weights up as it goes;
//! the tuner (`examples/tune.rs`) records the counts instead and fits the
//! weights in `weights.rs`, which it writes, to positions scored by a
//! stronger engine.

use cozy_chess::{BitBoard, Board, Color, Piece, Rank, Square, get_bishop_moves, get_king_moves, get_knight_moves, get_rook_moves};

/// A term's weight: (middlegame, endgame) centipawns per count.
pub type Weight = (i32, i32);

// The weight table's layout, one block per kind of term.
const MATERIAL: usize = 0; // pawn, knight, bishop, rook, queen
const SQUARES: usize = MATERIAL + 5; // 32 per piece: own side's view, files e–h mirrored onto d–a
const KNIGHT_MOBILITY: usize = SQUARES + 6 * 32; // by number of safe squares reached
const BISHOP_MOBILITY: usize = KNIGHT_MOBILITY + 9;
const ROOK_MOBILITY: usize = BISHOP_MOBILITY + 14;
const QUEEN_MOBILITY: usize = ROOK_MOBILITY + 15;
const KING_PRESSURE: usize = QUEEN_MOBILITY + 28; // by number of attackers; counts weighted hits
const BISHOP_PAIR: usize = KING_PRESSURE + 8;
const ROOK_FILE: usize = BISHOP_PAIR + 1; // half-open, open
const PASSED: usize = ROOK_FILE + 2; // by rank, 2nd to 7th
const PASSED_RACE: usize = PASSED + 6; // kings' distance to the pawn's path, by rank
const DOUBLED: usize = PASSED_RACE + 1;
const ISOLATED: usize = DOUBLED + 1;
const SUPPORTED: usize = ISOLATED + 1; // defended by a pawn or beside one
const SHELTER: usize = SUPPORTED + 1; // pawn near the king on its file, none
const TEMPO: usize = SHELTER + 2;
/// Number of weights.
pub const TERMS: usize = TEMPO + 1;

/// The table's blocks, in order: name and number of weights (for the tuner's output).
pub const BLOCKS: [(&str, usize); 19] = [
    ("material: pawn, knight, bishop, rook, queen", 5),
    ("pawn squares (a1–d8, rank by rank)", 32),
    ("knight squares", 32),
    ("bishop squares", 32),
    ("rook squares", 32),
    ("queen squares", 32),
    ("king squares", 32),
    ("knight mobility: 0–8 safe squares", 9),
    ("bishop mobility: 0–13", 14),
    ("rook mobility: 0–14", 15),
    ("queen mobility: 0–27", 28),
    ("king pressure per weighted hit, by attackers 0–7", 8),
    ("bishop pair", 1),
    ("rook on a half-open file, on an open file", 2),
    ("passed pawn by rank 2–7", 6),
    ("passed pawn: (their king's distance − ours) to the stop square × rank", 1),
    ("doubled, isolated, supported pawn", 3),
    ("king shelter: pawn near the king on its file or beside, none", 2),
    ("side to move", 1),
];

include!("weights.rs");

/// Receives the evaluation's terms: `n` counts of weight `term` for `color`.
pub trait Trace {
    fn add(&mut self, color: Color, term: usize, n: i32);
}

/// Records each term's count, White's positive and Black's negative: what
/// the tuner fits.
pub struct Counts(pub Vec<(usize, i32)>);

impl Trace for Counts {
    fn add(&mut self, color: Color, term: usize, n: i32) {
        self.0.push((term, if color == Color::White { n } else { -n }));
    }
}

/// Game phase from the non-pawn material left: 24 at the start, 0 in a bare endgame.
pub fn phase(board: &Board) -> i32 {
    let count = |p: Piece, w: i32| board.pieces(p).len() as i32 * w;
    (count(Piece::Knight, 1) + count(Piece::Bishop, 1) + count(Piece::Rook, 2) + count(Piece::Queen, 4)).min(24)
}

/// Blends a middlegame and an endgame score by `phase`.
pub fn taper(mg: i32, eg: i32, phase: i32) -> i32 {
    (mg * phase + eg * (24 - phase)) / 24
}

/// The score for the side to move, in centipawns.
/// (Mate and stalemate are found by the search, which knows there are no moves;
/// checking here would generate every move at every node.)
pub fn evaluate(board: &Board) -> i32 {
    struct Sum(i32, i32);
    impl Trace for Sum {
        #[inline(always)]
        fn add(&mut self, color: Color, term: usize, n: i32) {
            let n = if color == Color::White { n } else { -n };
            self.0 += WEIGHTS[term].0 * n;
            self.1 += WEIGHTS[term].1 * n;
        }
    }
    let mut sum = Sum(0, 0);
    trace(board, &mut sum);
    let white = taper(sum.0, sum.1, phase(board));
    if board.side_to_move() == Color::White { white } else { -white }
}

/// Reports every term of the position to `t`.
pub fn trace(board: &Board, t: &mut impl Trace) {
    for color in Color::ALL {
        pieces(board, color, t);
        pawns(board, color, t);
    }
    t.add(board.side_to_move(), TEMPO, 1);
}

/// Index of a square in a 32-square block: seen from `color`'s side, files
/// e–h mirrored onto d–a.
fn block_index(sq: Square, color: Color) -> usize {
    let sq = sq.relative_to(color);
    let f = sq.file() as usize;
    sq.rank() as usize * 4 + f.min(7 - f)
}

/// Material, squares, mobility, king pressure, bishop pair and rook files.
fn pieces(board: &Board, color: Color, t: &mut impl Trace) {
    let mine = board.colors(color);
    let occ = board.occupied();
    for (i, piece) in Piece::ALL.into_iter().enumerate() {
        for sq in board.pieces(piece) & mine {
            if piece != Piece::King {
                t.add(color, MATERIAL + i, 1);
            }
            t.add(color, SQUARES + 32 * i + block_index(sq, color), 1);
        }
    }
    if (board.pieces(Piece::Bishop) & mine).len() >= 2 {
        t.add(color, BISHOP_PAIR, 1);
    }
    // Squares a piece can go to without being taken by a pawn.
    let safe = !mine & !pawn_attacks(board.pieces(Piece::Pawn) & board.colors(!color), !color);
    let their_king = board.king(!color);
    let zone = get_king_moves(their_king) | their_king.bitboard();
    let (mut attackers, mut hits_on_king) = (0usize, 0);
    // Per piece: mobility block and how much one hit on the king's zone counts.
    for (piece, mobility, unit) in [
        (Piece::Knight, KNIGHT_MOBILITY, 3),
        (Piece::Bishop, BISHOP_MOBILITY, 3),
        (Piece::Rook, ROOK_MOBILITY, 5),
        (Piece::Queen, QUEEN_MOBILITY, 10),
    ] {
        for sq in board.pieces(piece) & mine {
            let reach = match piece {
                Piece::Knight => get_knight_moves(sq),
                Piece::Bishop => get_bishop_moves(sq, occ),
                Piece::Rook => get_rook_moves(sq, occ),
                _ => get_rook_moves(sq, occ) | get_bishop_moves(sq, occ),
            };
            t.add(color, mobility + (reach & safe).len() as usize, 1);
            let n = (reach & zone).len() as i32;
            if n > 0 {
                attackers += 1;
                hits_on_king += unit * n;
            }
        }
    }
    if attackers > 0 {
        t.add(color, KING_PRESSURE + attackers.min(7), hits_on_king);
    }
    let pawns = board.pieces(Piece::Pawn);
    for sq in board.pieces(Piece::Rook) & mine {
        let file = sq.file().bitboard();
        if (pawns & mine & file).is_empty() {
            t.add(color, ROOK_FILE + usize::from((pawns & file).is_empty()), 1);
        }
    }
}

/// Pawn structure, passed pawns and king shelter.
fn pawns(board: &Board, color: Color, t: &mut impl Trace) {
    let mine = board.pieces(Piece::Pawn) & board.colors(color);
    let theirs = board.pieces(Piece::Pawn) & board.colors(!color);
    let defended = pawn_attacks(mine, color);
    let (my_king, their_king) = (board.king(color), board.king(!color));
    for sq in mine {
        let file = sq.file();
        let rank = sq.rank().relative_to(color) as usize; // 1–6
        if (theirs & passed_mask(color, sq)).is_empty() {
            t.add(color, PASSED + rank - 1, 1);
            let stop = sq.offset(0, if color == Color::White { 1 } else { -1 });
            t.add(color, PASSED_RACE, (distance(their_king, stop) - distance(my_king, stop)) * rank as i32);
        }
        if (mine & file.bitboard()).len() > 1 {
            t.add(color, DOUBLED, 1);
        }
        if (mine & file.adjacent()).is_empty() {
            t.add(color, ISOLATED, 1);
        } else if defended.has(sq) || !(mine & file.adjacent() & sq.rank().bitboard()).is_empty() {
            t.add(color, SUPPORTED, 1);
        }
    }
    // Pawns on the two ranks in front of a king still at home shelter it.
    let home = Rank::First.relative_to(color);
    if my_king.rank() == home {
        let front = Rank::Second.relative_to(color).bitboard() | Rank::Third.relative_to(color).bitboard();
        for sq in (my_king.file().bitboard() | my_king.file().adjacent()) & home.bitboard() {
            let sheltered = !(mine & sq.file().bitboard() & front).is_empty();
            t.add(color, SHELTER + usize::from(!sheltered), 1);
        }
    }
}

/// Squares attacked by `color`'s pawns in `pawns`.
fn pawn_attacks(pawns: BitBoard, color: Color) -> BitBoard {
    const NOT_A: u64 = !0x0101_0101_0101_0101;
    const NOT_H: u64 = !0x8080_8080_8080_8080;
    let p = pawns.0;
    BitBoard(match color {
        Color::White => ((p & NOT_A) << 7) | ((p & NOT_H) << 9),
        Color::Black => ((p & NOT_A) >> 9) | ((p & NOT_H) >> 7),
    })
}

/// King moves between two squares.
fn distance(a: Square, b: Square) -> i32 {
    let df = (a.file() as i32 - b.file() as i32).abs();
    let dr = (a.rank() as i32 - b.rank() as i32).abs();
    df.max(dr)
}

/// The squares that must hold no enemy pawn for a pawn of `color` on `sq` to
/// be passed: its own and the adjacent files, ahead of it.
fn passed_mask(color: Color, sq: Square) -> BitBoard {
    let files = (sq.file().bitboard() | sq.file().adjacent()).0;
    let r = sq.rank() as usize;
    let ahead = match color {
        Color::White if r < 7 => !0u64 << (8 * (r + 1)),
        Color::White => 0,
        Color::Black => (1u64 << (8 * r)) - 1,
    };
    BitBoard(files & ahead)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluation_is_symmetric() {
        let w: Board = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3".parse().unwrap();
        let b: Board = "rnbqkb1r/pppp1ppp/5n2/4p3/4P3/2N5/PPPP1PPP/R1BQKBNR b KQkq - 2 3".parse().unwrap();
        assert_eq!(evaluate(&w), evaluate(&b));
    }

    #[test]
    fn the_traced_terms_add_up_to_the_evaluation() {
        // The tuner fits the traced counts; they must be exactly what the engine scores.
        for fen in [
            "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1",
            "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        ] {
            let board: Board = fen.parse().unwrap();
            let mut counts = Counts(Vec::new());
            trace(&board, &mut counts);
            let (mg, eg) = counts.0.iter().fold((0, 0), |(mg, eg), &(t, n)| (mg + WEIGHTS[t].0 * n, eg + WEIGHTS[t].1 * n));
            let white = taper(mg, eg, phase(&board));
            let expected = if board.side_to_move() == Color::White { white } else { -white };
            assert_eq!(evaluate(&board), expected, "{fen}");
            assert!(counts.0.len() > 20, "{fen}: only {} terms", counts.0.len());
        }
    }

    #[test]
    fn the_table_has_a_weight_for_every_term() {
        assert_eq!(BLOCKS.iter().map(|b| b.1).sum::<usize>(), TERMS);
        assert_eq!(WEIGHTS.len(), TERMS);
    }
}
