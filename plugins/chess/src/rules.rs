//! A game of chess: the position and its history, move parsing (UCI and
//! SAN), every rule that ends a game, and PGN. Move generation is
//! cozy-chess (MIT); everything else here is this project's.

use cozy_chess::util::{display_san_move, parse_san_move, parse_uci_move};
use cozy_chess::{Board, Color, File, GameStatus, Move, Piece, Square};

/// How a game ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: &'static str,
    pub reason: String,
}

/// Which notation an agent used, so answers can speak it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notation {
    Uci,
    San,
}

#[derive(Clone, Debug)]
pub struct Game {
    pub start: Board,
    pub board: Board,
    /// Positions after each move (for repetition), and the moves in SAN and UCI.
    positions: Vec<Board>,
    pub san: Vec<String>,
    pub uci: Vec<String>,
    pub outcome: Option<Outcome>,
}

pub fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "White",
        Color::Black => "Black",
    }
}

fn piece_name(p: Piece) -> &'static str {
    match p {
        Piece::Pawn => "pawn",
        Piece::Knight => "knight",
        Piece::Bishop => "bishop",
        Piece::Rook => "rook",
        Piece::Queen => "queen",
        Piece::King => "king",
    }
}

impl Notation {
    /// The notation a move is written in: UCI looks like `e2e4` or `e7e8q`.
    pub fn of(text: &str) -> Notation {
        let b = text.trim().as_bytes();
        let uci = (4..=5).contains(&b.len())
            && b[0].is_ascii_lowercase()
            && b[1].is_ascii_digit()
            && b[2].is_ascii_lowercase()
            && b[3].is_ascii_digit();
        if uci { Notation::Uci } else { Notation::San }
    }
}

impl Default for Game {
    fn default() -> Self {
        Game::from_board(Board::default())
    }
}

impl Game {
    pub fn from_board(board: Board) -> Game {
        Game { start: board.clone(), positions: vec![board.clone()], board, san: Vec::new(), uci: Vec::new(), outcome: None }
    }

    pub fn from_fen(fen: &str) -> Result<Game, String> {
        let board: Board = fen.parse().map_err(|e| format!("not a valid FEN ({e:?}): {fen}"))?;
        Ok(Game::from_board(board))
    }

    /// Hashes of the positions before the current one (the engine treats a
    /// repetition as a draw).
    pub fn history_hashes(&self) -> Vec<u64> {
        self.positions[..self.positions.len() - 1].iter().map(Board::hash).collect()
    }

    pub fn fen(&self) -> String {
        format!("{}", self.board)
    }

    pub fn turn(&self) -> Color {
        self.board.side_to_move()
    }

    pub fn legal_moves(&self) -> Vec<Move> {
        let mut out = Vec::new();
        self.board.generate_moves(|ms| {
            out.extend(ms);
            false
        });
        out
    }

    /// A move in UCI (`e2e4`, `e7e8q`, castling as `e1g1`). Written by hand,
    /// not through `fmt`: every answer lists all legal moves, and formatting
    /// them was a tenth of a move's cost inside the component (`perf`).
    pub fn uci_of(&self, mv: Move) -> String {
        let me = self.turn();
        let mut to = mv.to;
        // cozy-chess writes castling as the king taking its own rook.
        if mv.from == self.board.king(me) && self.board.colors(me).has(mv.to) {
            to = Square::new(if mv.to.file() > mv.from.file() { File::G } else { File::C }, mv.to.rank());
        }
        let mut s = String::with_capacity(5);
        for sq in [mv.from, to] {
            s.push((b'a' + sq.file() as u8) as char);
            s.push((b'1' + sq.rank() as u8) as char);
        }
        if let Some(p) = mv.promotion {
            s.push(piece_char(p));
        }
        s
    }

    pub fn san_of(&self, mv: Move) -> String {
        display_san_move(&self.board, mv).to_string()
    }

    /// The legal moves written in one notation, sorted.
    pub fn legal_in(&self, notation: Notation) -> Vec<String> {
        let mut v: Vec<String> = self
            .legal_moves()
            .into_iter()
            .map(|m| match notation {
                Notation::Uci => self.uci_of(m),
                Notation::San => self.san_of(m),
            })
            .collect();
        v.sort();
        v
    }

    /// Reads a move in UCI (`e2e4`, `e7e8q`, `e1g1`) or SAN (`e4`, `Nf3`, `O-O`, `e8=Q`).
    pub fn parse(&self, text: &str) -> Result<(Move, Notation), String> {
        let text = text.trim();
        let legal = self.legal_moves();
        if Notation::of(text) == Notation::Uci {
            let mv = parse_uci_move(&self.board, text).map_err(|_| format!("`{text}` is not a valid UCI move"))?;
            if legal.contains(&mv) {
                return Ok((mv, Notation::Uci));
            }
            return Err(self.why_illegal(mv, text));
        }
        // SAN, forgiving about castling with zeros and a trailing !/?.
        let san = text.trim_end_matches(['!', '?']).replace('0', "O");
        match parse_san_move(&self.board, &san) {
            Ok(mv) if legal.contains(&mv) => Ok((mv, Notation::San)),
            Ok(_) | Err(_) => {
                let matches: Vec<Move> = legal.iter().copied().filter(|m| strip_marks(&self.san_of(*m)) == strip_marks(&san)).collect();
                match matches.as_slice() {
                    [m] => Ok((*m, Notation::San)),
                    _ => Err(format!(
                        "`{text}` is not a legal move here (moves are UCI like e2e4 / e7e8q, or SAN like Nf3, exd5, O-O, e8=Q)"
                    )),
                }
            }
        }
    }

    /// A reason a well-formed UCI move is illegal, in words. It names the
    /// squares as the agent typed them: cozy-chess reads castling written
    /// `e1g1` as the king taking its rook (`e1h1`), which the agent never wrote.
    fn why_illegal(&self, mv: Move, text: &str) -> String {
        let me = self.turn();
        let (from, to) = (&text[0..2], &text[2..4]);
        let Some(piece) = self.board.piece_on(mv.from) else {
            return format!("{text} is illegal: there is no piece on {from}");
        };
        let owner = self.board.color_on(mv.from).expect("occupied");
        let what = format!("the {} on {from}", piece_name(piece));
        if owner != me {
            return format!("{text} is illegal: {what} is {}'s, and it is {}'s turn", color_name(owner), color_name(me));
        }
        let last_rank = if me == Color::White { cozy_chess::Rank::Eighth } else { cozy_chess::Rank::First };
        if let Some(letter) = text.chars().nth(4).filter(|c| !"qrbn".contains(*c)) {
            return format!(
                "{text} is illegal: a pawn promotes to a queen, rook, bishop or knight (end the move with q, r, b or n), not `{letter}`"
            );
        }
        if let Some(promo) = mv.promotion {
            if piece != Piece::Pawn || mv.to.rank() != last_rank {
                return format!("{text} is illegal: only a pawn reaching the last rank promotes (to {})", piece_name(promo));
            }
            if matches!(promo, Piece::King | Piece::Pawn) {
                return format!(
                    "{text} is illegal: a pawn promotes to a queen, rook, bishop or knight (end the move with q, r, b or n), \
                     not to a {}",
                    piece_name(promo)
                );
            }
        }
        let legal = self.legal_moves();
        if piece == Piece::Pawn && mv.promotion.is_none() && mv.to.rank() == last_rank {
            // Only where promoting makes it legal: a pawn blocked on its last step cannot move at all.
            let promoted = Move { promotion: Some(Piece::Queen), ..mv };
            if legal.contains(&promoted) {
                return format!("{text} is illegal: a pawn reaching the last rank must promote, e.g. {from}{to}q");
            }
        }
        if let Some(why) = self.why_no_castling(mv, piece, to) {
            return format!("{text} is illegal: {why}");
        }
        if !self.board.checkers().is_empty() {
            return format!("{text} is illegal: {} is in check and must get out of check", color_name(me));
        }
        if self.board.pinned().has(mv.from) && pseudo_reaches(&self.board, mv) {
            return format!("{text} is illegal: {what} is pinned to its king");
        }
        if piece == Piece::King && pseudo_reaches(&self.board, mv) {
            return format!("{text} is illegal: the king would be in check on {to}");
        }
        if !legal.iter().any(|m| m.from == mv.from) {
            return format!("{text} is illegal: {what} has no legal move");
        }
        if self.board.colors(me).has(mv.to) {
            return format!(
                "{text} is illegal: {to} holds {}'s own {}",
                color_name(me),
                self.board.piece_on(mv.to).map_or("piece", piece_name)
            );
        }
        format!("{text} is illegal: {what} cannot move to {to}")
    }

    /// Why a king's move two files sideways from its starting square (castling,
    /// as `e1g1` or `e1c1`) is not possible now; none for any other move.
    fn why_no_castling(&self, mv: Move, piece: Piece, to: &str) -> Option<String> {
        let me = self.turn();
        let home = if me == Color::White { cozy_chess::Rank::First } else { cozy_chess::Rank::Eighth };
        let typed_file = to.as_bytes()[0].wrapping_sub(b'a') as usize;
        let sideways = (typed_file as i32 - mv.from.file() as i32).abs() == 2 && mv.to.rank() == home;
        if piece != Piece::King || mv.from.rank() != home || mv.from.file() != File::E || !sideways {
            return None;
        }
        let (kingside, side) = if typed_file > mv.from.file() as usize { (true, "kingside") } else { (false, "queenside") };
        let rights = self.board.castle_rights(me);
        let rook_file = if kingside { rights.short } else { rights.long };
        let Some(rook_file) = rook_file else {
            return Some(format!("{} cannot castle {side}: the king or that rook has moved", color_name(me)));
        };
        if !self.board.checkers().is_empty() {
            return Some(format!("{} cannot castle {side} out of check", color_name(me)));
        }
        let (lo, hi) =
            if kingside { (mv.from.file() as usize + 1, rook_file as usize) } else { (rook_file as usize + 1, mv.from.file() as usize) };
        let between: Vec<String> = (lo..hi)
            .map(|f| Square::new(File::index(f), home))
            .filter(|sq| self.board.occupied().has(*sq))
            .map(|sq| sq.to_string())
            .collect();
        if !between.is_empty() {
            return Some(format!(
                "{} cannot castle {side}: the squares between the king and the rook must be empty ({} {} occupied)",
                color_name(me),
                between.join(" and "),
                if between.len() == 1 { "is" } else { "are" }
            ));
        }
        Some(format!("{} cannot castle {side}: the king would pass through or land on a square the opponent attacks", color_name(me)))
    }

    /// Plays a legal move and updates the outcome.
    pub fn play(&mut self, mv: Move) {
        let san = self.san_of(mv);
        self.play_written(mv, san);
    }

    /// `play` for a caller that has written the move in SAN already.
    pub fn play_written(&mut self, mv: Move, san: String) {
        self.san.push(san);
        self.uci.push(self.uci_of(mv));
        self.board.play(mv);
        self.positions.push(self.board.clone());
        self.outcome = self.judge();
    }

    fn judge(&self) -> Option<Outcome> {
        let b = &self.board;
        match b.status() {
            GameStatus::Won => {
                let winner = !b.side_to_move();
                let result = if winner == Color::White { "1-0" } else { "0-1" };
                return Some(Outcome { result, reason: format!("{} wins by checkmate", color_name(winner)) });
            }
            GameStatus::Drawn if b.halfmove_clock() >= 100 => {
                return Some(draw("fifty-move rule: 50 moves by each side without a capture or pawn move"));
            }
            GameStatus::Drawn => {
                return Some(draw(&format!("stalemate: {} has no legal move and is not in check", color_name(b.side_to_move()))));
            }
            GameStatus::Ongoing => {}
        }
        let repeats = self.positions.iter().filter(|p| p.same_position(b)).count();
        if repeats >= 3 {
            return Some(draw("threefold repetition of the position"));
        }
        if insufficient_material(b) {
            return Some(draw("insufficient material: neither side can checkmate"));
        }
        None
    }

    /// The game so far in PGN.
    pub fn pgn(&self, white: &str, black: &str, date: &str) -> String {
        let result = self.outcome.as_ref().map_or("*", |o| o.result);
        let mut s = format!(
            "[Event \"Ludus game\"]\n[Site \"ludus\"]\n[Date \"{date}\"]\n[Round \"-\"]\n[White \"{white}\"]\n[Black \"{black}\"]\n[Result \"{result}\"]\n"
        );
        let standard = Board::default();
        if self.start != standard {
            s.push_str(&format!("[SetUp \"1\"]\n[FEN \"{}\"]\n", self.start));
        }
        if let Some(o) = &self.outcome {
            s.push_str(&format!("[Termination \"{}\"]\n", o.reason));
        }
        s.push('\n');
        let mut number = self.start.fullmove_number();
        let mut white_to_move = self.start.side_to_move() == Color::White;
        let mut parts = Vec::new();
        for (i, san) in self.san.iter().enumerate() {
            if white_to_move {
                parts.push(format!("{number}. {san}"));
            } else if i == 0 {
                parts.push(format!("{number}... {san}"));
            } else {
                parts.push(san.clone());
            }
            if !white_to_move {
                number += 1;
            }
            white_to_move = !white_to_move;
        }
        parts.push(result.to_string());
        s.push_str(&parts.join(" "));
        s.push('\n');
        s
    }

    /// The board as Markdown: ranks 8→1 (from White's side) or 1→8 (Black's).
    /// Pushed character by character: this is in every answer.
    pub fn diagram(&self, from_black: bool) -> String {
        // Files a→h and ranks 8→1 as seen from White; the other way round from Black.
        let file_at = |i: usize| if from_black { 7 - i } else { i };
        let rank_at = |i: usize| if from_black { i } else { 7 - i };
        let mut letters = String::with_capacity(16);
        for i in 0..8 {
            letters.push(' ');
            letters.push((b'a' + file_at(i) as u8) as char);
        }
        let mut s = String::with_capacity(320);
        s.push_str("```\n ");
        s.push_str(&letters);
        s.push('\n');
        for i in 0..8 {
            let r = rank_at(i);
            let label = (b'1' + r as u8) as char;
            s.push(label);
            for j in 0..8 {
                let sq = Square::index(r * 8 + file_at(j));
                s.push(' ');
                s.push(match (self.board.piece_on(sq), self.board.color_on(sq)) {
                    (Some(p), Some(Color::White)) => piece_char(p).to_ascii_uppercase(),
                    (Some(p), _) => piece_char(p),
                    _ => '.',
                });
            }
            s.push(' ');
            s.push(label);
            s.push('\n');
        }
        s.push(' ');
        s.push_str(&letters);
        s.push_str("\n```\nUppercase = White, lowercase = Black.");
        s
    }
}

/// A piece's letter, lowercase (as UCI promotions and Black's pieces are written).
fn piece_char(p: Piece) -> char {
    match p {
        Piece::Pawn => 'p',
        Piece::Knight => 'n',
        Piece::Bishop => 'b',
        Piece::Rook => 'r',
        Piece::Queen => 'q',
        Piece::King => 'k',
    }
}

/// Leaf positions `depth` plies below `board` (move-generator check and benchmark).
pub fn perft(board: &Board, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut n = 0;
    board.generate_moves(|ms| {
        for mv in ms {
            if depth == 1 {
                n += 1;
            } else {
                let mut b = board.clone();
                b.play_unchecked(mv);
                n += perft(&b, depth - 1);
            }
        }
        false
    });
    n
}

fn draw(reason: &str) -> Outcome {
    Outcome { result: "1/2-1/2", reason: format!("draw by {reason}") }
}

fn strip_marks(s: &str) -> String {
    s.trim_end_matches(['+', '#', '!', '?']).to_string()
}

/// Whether the piece could reach the square ignoring checks (used only to word reasons).
fn pseudo_reaches(board: &Board, mv: Move) -> bool {
    use cozy_chess::{get_bishop_moves, get_king_moves, get_knight_moves, get_rook_moves};
    let occ = board.occupied();
    let piece = board.piece_on(mv.from);
    let own = board.colors(board.side_to_move());
    if own.has(mv.to) {
        return false;
    }
    let targets = match piece {
        Some(Piece::Knight) => get_knight_moves(mv.from),
        Some(Piece::Bishop) => get_bishop_moves(mv.from, occ),
        Some(Piece::Rook) => get_rook_moves(mv.from, occ),
        Some(Piece::Queen) => get_bishop_moves(mv.from, occ) | get_rook_moves(mv.from, occ),
        Some(Piece::King) => get_king_moves(mv.from),
        // Pawns: forward pushes and diagonal captures are close enough for wording.
        Some(Piece::Pawn) => return mv.from.file() == mv.to.file() || board.occupied().has(mv.to),
        None => return false,
    };
    targets.has(mv.to)
}

/// Neither side can mate: K v K, K+minor v K, K+B v K+B with bishops on one colour.
fn insufficient_material(b: &Board) -> bool {
    let heavy = b.pieces(Piece::Pawn) | b.pieces(Piece::Rook) | b.pieces(Piece::Queen);
    if !heavy.is_empty() {
        return false;
    }
    let knights = b.pieces(Piece::Knight).len();
    let bishops = b.pieces(Piece::Bishop);
    match (knights, bishops.len()) {
        (0, 0) | (1, 0) | (0, 1) => true,
        (0, _) => {
            let dark = cozy_chess::BitBoard::DARK_SQUARES;
            (bishops & dark).is_empty() || (bishops & !dark).is_empty()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perft_matches_published_counts() {
        // Published perft results (chessprogramming wiki "Perft Results").
        let start = Board::default();
        assert_eq!(perft(&start, 5), 4_865_609);
        let kiwipete: Board = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1".parse().unwrap();
        assert_eq!(perft(&kiwipete, 4), 4_085_603);
        let endgame: Board = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1".parse().unwrap();
        assert_eq!(perft(&endgame, 5), 674_624);
        let promotions: Board = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1".parse().unwrap();
        assert_eq!(perft(&promotions, 4), 422_333);
        let pos5: Board = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8".parse().unwrap();
        assert_eq!(perft(&pos5, 4), 2_103_487);
    }

    fn play_all(g: &mut Game, moves: &[&str]) {
        for m in moves {
            let (mv, _) = g.parse(m).unwrap_or_else(|e| panic!("{m}: {e}"));
            g.play(mv);
        }
    }

    #[test]
    fn scholars_mate_in_mixed_notation() {
        let mut g = Game::default();
        play_all(&mut g, &["e4", "e7e5", "Bc4", "b8c6", "Qh5", "Nf6", "Qxf7#"]);
        assert_eq!(g.outcome.as_ref().unwrap().result, "1-0");
        assert!(g.outcome.as_ref().unwrap().reason.contains("checkmate"));
        let pgn = g.pgn("agent", "agent", "2026.11.21");
        assert!(pgn.contains("1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6 4. Qxf7# 1-0"), "{pgn}");
    }

    #[test]
    fn castling_en_passant_and_promotion_in_both_notations() {
        let mut g = Game::default();
        play_all(&mut g, &["e2e4", "g8f6", "e4e5", "d7d5", "e5d6", "e7d6", "g1f3", "f8e7", "f1e2", "O-O", "e1g1"]);
        assert_eq!(g.san[4], "exd6", "en passant");
        assert_eq!(g.uci[9], "e8g8");
        assert_eq!(g.san[10], "O-O");
        let mut p = Game::from_fen("8/P6k/8/8/8/8/8/K7 w - - 0 1").unwrap();
        play_all(&mut p, &["a8=Q"]);
        assert_eq!(p.uci[0], "a7a8q");
        let mut p = Game::from_fen("8/P6k/8/8/8/8/8/K7 w - - 0 1").unwrap();
        play_all(&mut p, &["a7a8n"]);
        assert_eq!(p.san[0], "a8=N");
    }

    #[test]
    fn illegal_moves_get_reasons() {
        let g = Game::default();
        assert!(g.parse("e2e5").unwrap_err().contains("the pawn on e2 cannot move to e5"));
        assert!(g.parse("e3e4").unwrap_err().contains("no piece on e3"));
        assert!(g.parse("e7e5").unwrap_err().contains("Black's, and it is White's turn"));
        assert!(g.parse("Ke2").unwrap_err().contains("not a legal move"));
        assert!(g.parse("hello").unwrap_err().contains("UCI like e2e4"));
        let pinned = Game::from_fen("4k3/8/8/8/4r3/8/4N3/4K3 w - - 0 1").unwrap();
        assert!(pinned.parse("e2c3").unwrap_err().contains("pinned"));
        let check = Game::from_fen("4k3/8/8/8/4r3/8/8/R3K3 w - - 0 1").unwrap();
        assert!(check.parse("a1a2").unwrap_err().contains("in check"));
        let promo = Game::from_fen("8/P6k/8/8/8/8/8/K7 w - - 0 1").unwrap();
        assert!(promo.parse("a7a8").unwrap_err().contains("must promote"));
    }

    #[test]
    fn refusals_name_the_squares_typed_and_suggest_only_what_is_legal() {
        // Castling written the usual way is about g1, not the rook's h1.
        let mut g = Game::default();
        play_all(&mut g, &["e4", "e5"]);
        let e = g.parse("e1g1").unwrap_err();
        assert!(e.contains("cannot castle kingside") && e.contains("f1 and g1 are occupied") && !e.contains("h1"), "{e}");
        let through = Game::from_fen("4k3/8/8/8/8/8/8/4K2r w K - 0 1");
        assert!(through.is_err() || !through.unwrap().parse("e1g1").unwrap_err().contains("h1"));
        let attacked = Game::from_fen("4k3/8/8/8/8/8/5r2/4K2R w K - 0 1").unwrap();
        let e = attacked.parse("e1g1").unwrap_err();
        assert!(e.contains("cannot castle kingside out of check") || e.contains("pass through"), "{e}");
        let moved = Game::from_fen("4k3/8/8/8/8/8/8/4K2R w - - 0 1").unwrap();
        assert!(moved.parse("e1g1").unwrap_err().contains("the king or that rook has moved"));
        // A pawn blocked on its last step is not told to promote.
        let blocked = Game::from_fen("2n1k3/2P5/8/8/8/8/8/4K3 w - - 0 1").unwrap();
        let e = blocked.parse("c7c8").unwrap_err();
        assert!(!e.contains("c7c8q") && e.contains("c8"), "{e}");
        // A promotion to a king names the pieces a pawn may become, and suggests nothing more.
        let capture = Game::from_fen("1n2k3/2P5/8/8/8/8/8/4K3 w - - 0 1").unwrap();
        let e = capture.parse("c7b8k").unwrap_err();
        assert!(e.contains("queen, rook, bishop or knight") && !e.contains("c7b8kq"), "{e}");
        assert!(capture.parse("c7b8").unwrap_err().contains("must promote, e.g. c7b8q"));
    }

    #[test]
    fn draws_stalemate_repetition_material_fifty_moves() {
        let mut g = Game::from_fen("7k/8/6K1/8/8/8/8/5Q2 w - - 0 1").unwrap();
        play_all(&mut g, &["Qf7"]);
        assert!(g.outcome.as_ref().unwrap().reason.contains("stalemate"), "{:?}", g.outcome);

        let mut g = Game::default();
        play_all(&mut g, &["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"]);
        assert!(g.outcome.is_none());
        play_all(&mut g, &["Ng8"]);
        assert!(g.outcome.as_ref().unwrap().reason.contains("threefold"));

        let mut g = Game::from_fen("4k3/8/8/8/8/8/3n4/4K3 w - - 0 1").unwrap();
        play_all(&mut g, &["Kxd2"]);
        assert!(g.outcome.as_ref().unwrap().reason.contains("insufficient material"));
        assert!(!insufficient_material(&"4k3/8/8/8/8/8/2bb4/4K3 w - - 0 1".parse().unwrap()), "two bishops on both colours can mate");

        let mut g = Game::from_fen("4k3/8/8/8/8/8/R7/4K3 w - - 98 80").unwrap();
        play_all(&mut g, &["Ra3"]);
        assert!(g.outcome.is_none());
        play_all(&mut g, &["Kd7"]);
        assert!(g.outcome.as_ref().unwrap().reason.contains("fifty-move"));
    }

    #[test]
    fn uci_is_written_as_cozy_chess_writes_it() {
        // Castling both ways for both sides, promotions with and without capture, en passant.
        let fens = [
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1",
            "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        ];
        for fen in fens {
            let g = Game::from_fen(fen).unwrap();
            for mv in g.legal_moves() {
                let ours = g.uci_of(mv);
                assert_eq!(ours, cozy_chess::util::display_uci_move(&g.board, mv).to_string(), "{fen}");
                let mut after = g.clone();
                after.play(mv);
                for reply in after.legal_moves() {
                    assert_eq!(after.uci_of(reply), cozy_chess::util::display_uci_move(&after.board, reply).to_string(), "{fen} {ours}");
                }
            }
        }
    }

    #[test]
    fn the_diagram_is_seen_from_the_players_side() {
        let mut g = Game::default();
        play_all(&mut g, &["e4"]);
        let white = "```\n  a b c d e f g h\n8 r n b q k b n r 8\n7 p p p p p p p p 7\n6 . . . . . . . . 6\n5 . . . . . . . . 5\n\
                     4 . . . . P . . . 4\n3 . . . . . . . . 3\n2 P P P P . P P P 2\n1 R N B Q K B N R 1\n  a b c d e f g h\n```\n\
                     Uppercase = White, lowercase = Black.";
        assert_eq!(g.diagram(false), white);
        let black = g.diagram(true);
        assert!(black.starts_with("```\n  h g f e d c b a\n1 R N B K Q B N R 1\n2 P P P . P P P P 2\n"), "{black}");
        assert!(black.contains("8 r n b k q b n r 8\n  h g f e d c b a\n```"), "{black}");
    }
}
