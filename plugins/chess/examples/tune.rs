//! Fits the evaluation's weights (`src/weights.rs`) to positions scored by
//! Stockfish: its scores are data to learn from, none of its code is used.
//!
//! ```sh
//! apt-get install stockfish     # Debian's Stockfish 15.1: /usr/games/stockfish
//! # 1. Positions: Stockfish plays itself from random openings (8 random plies,
//! #    then a random move 1 time in 20); quiet positions are kept with its score.
//! cargo run --release -p chess --example tune -- gen --games 5000 --depth 7 --out /tmp/positions.txt
//! # 2. Weights: least squares on win probabilities, written over src/weights.rs.
//! cargo run --release -p chess --example tune -- fit --data /tmp/positions.txt --out plugins/chess/src/weights.rs
//! ```
//!
//! `gen` takes about 17 minutes on 2 cores (≈ 318 000 positions); `fit` about
//! a minute. `fit` starts from the current weights, holds out every tenth
//! position to report the error on positions it did not fit, and prints both
//! as it goes (1000 iterations: the held-out error stops falling by about 500).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chess::eval::{BLOCKS, Counts, TERMS, WEIGHTS, phase, trace};
use chess::rules::Game;
use cozy_chess::{Board, Color, Move, Piece};

#[path = "common/stockfish.rs"]
mod stockfish;
use stockfish::Stockfish;

const RANDOM_OPENING_PLIES: usize = 8;
/// A side this far ahead (centipawns) has won; the rest of the game teaches little.
const DECIDED: i32 = 2000;
const MAX_PLIES: usize = 300;

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => generate(
            arg(&args, "--games", "5000").parse().expect("--games N"),
            arg(&args, "--depth", "7").parse().expect("--depth N"),
            &arg(&args, "--out", "/tmp/positions.txt"),
            &arg(&args, "--stockfish", "/usr/games/stockfish"),
            arg(&args, "--threads", "2").parse().expect("--threads N"),
        ),
        Some("fit") => fit(
            &arg(&args, "--data", "/tmp/positions.txt"),
            &arg(&args, "--out", "plugins/chess/src/weights.rs"),
            arg(&args, "--iterations", "1000").parse().expect("--iterations N"),
        ),
        _ => eprintln!(
            "usage: tune gen [--games N] [--depth N] [--out FILE] [--stockfish PATH] [--threads N]\n       tune fit [--data FILE] [--out FILE] [--iterations N]"
        ),
    }
}

/// xorshift64*: reproducible random openings per game number.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

/// Captures, promotions and moves out of check change the material at once:
/// a static evaluation cannot be expected to score such positions.
fn tactical(board: &Board, mv: Move) -> bool {
    let en_passant = board.piece_on(mv.from) == Some(Piece::Pawn) && mv.from.file() != mv.to.file();
    !board.checkers().is_empty() || board.colors(!board.side_to_move()).has(mv.to) || en_passant || mv.promotion.is_some()
}

fn generate(games: u64, depth: u32, out: &str, sf_path: &str, threads: usize) {
    let file = Arc::new(Mutex::new(BufWriter::new(File::create(out).unwrap_or_else(|e| panic!("cannot write {out}: {e}")))));
    let next = Arc::new(Mutex::new(0..games));
    let kept = Arc::new(Mutex::new(0usize));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (file, next, kept, sf_path) = (file.clone(), next.clone(), kept.clone(), sf_path.to_string());
            std::thread::spawn(move || {
                let mut sf = Stockfish::start(&sf_path, &[]);
                while let Some(g) = next.lock().unwrap().next() {
                    let lines = play_one(&mut sf, g, depth);
                    let mut f = file.lock().unwrap();
                    lines.iter().for_each(|l| writeln!(f, "{l}").unwrap());
                    let mut k = kept.lock().unwrap();
                    *k += lines.len();
                    if (g + 1) % 50 == 0 {
                        eprintln!("game {}/{games}: {} positions ({:.0} s)", g + 1, *k, started.elapsed().as_secs_f64());
                    }
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    file.lock().unwrap().flush().unwrap();
    eprintln!("{} positions from {games} games in {:.0} s → {out}", kept.lock().unwrap(), started.elapsed().as_secs_f64());
}

/// One game of Stockfish against itself; returns `FEN;score` lines (score
/// for the side to move) of its quiet positions.
fn play_one(sf: &mut Stockfish, g: u64, depth: u32) -> Vec<String> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (g + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut game = Game::default();
    let mut lines = Vec::new();
    sf.send("ucinewgame");
    while game.outcome.is_none() && game.uci.len() < MAX_PLIES {
        let moves = game.legal_moves();
        if game.uci.len() < RANDOM_OPENING_PLIES {
            game.play(moves[rng.below(moves.len())]);
            continue;
        }
        let found = sf.search(&game.uci, &format!("depth {depth}"));
        let Some(cp) = found.cp else { break }; // a mate is found: decided
        if cp.abs() >= DECIDED {
            break;
        }
        let best = game.parse(&found.best).unwrap_or_else(|e| panic!("stockfish played {}: {e}", found.best)).0;
        if !tactical(&game.board, best) {
            lines.push(format!("{};{cp}", game.fen()));
        }
        // Now and then a random move, for the unbalanced positions a search meets.
        game.play(if rng.below(20) == 0 { moves[rng.below(moves.len())] } else { best });
    }
    lines
}

/// A position as the fit sees it: term counts (White's minus Black's), phase
/// and target.
struct Sample {
    terms: Vec<(u16, f32)>,
    phase: f32,
    /// Stockfish's score as White's chance to win.
    target: f64,
}

/// Chance to win for a score in centipawns (the usual logistic, 400 cp = 10:1).
fn win_chance(cp: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-cp / 400.0))
}

fn load(path: &str) -> Vec<Sample> {
    let file = File::open(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    BufReader::new(file)
        .lines()
        .map(|line| {
            let line = line.unwrap();
            let (fen, cp) = line.rsplit_once(';').unwrap_or_else(|| panic!("not `FEN;score`: {line}"));
            let board: Board = fen.parse().unwrap_or_else(|e| panic!("bad FEN {fen}: {e:?}"));
            let cp: f64 = cp.parse().unwrap_or_else(|_| panic!("bad score in {line}"));
            let white_cp = if board.side_to_move() == Color::White { cp } else { -cp };
            let mut counts = Counts(Vec::new());
            trace(&board, &mut counts);
            let terms = counts.0.into_iter().map(|(t, n)| (t as u16, n as f32)).collect();
            Sample { terms, phase: phase(&board) as f32, target: win_chance(white_cp) }
        })
        .collect()
}

/// Mean squared error over `samples` and (if `grad` is given) its gradient
/// by every weight, middlegame weights first.
fn error(samples: &[Sample], w: &[f64], mut grad: Option<&mut [f64]>) -> f64 {
    let k = 10f64.ln() / 400.0;
    let mut sum = 0.0;
    for s in samples {
        let (mg_share, eg_share) = (f64::from(s.phase) / 24.0, 1.0 - f64::from(s.phase) / 24.0);
        let eval: f64 = s.terms.iter().map(|&(t, n)| f64::from(n) * (w[t as usize] * mg_share + w[TERMS + t as usize] * eg_share)).sum();
        let p = win_chance(eval);
        let diff = p - s.target;
        sum += diff * diff;
        if let Some(g) = grad.as_deref_mut() {
            let d = 2.0 * diff * p * (1.0 - p) * k;
            for &(t, n) in &s.terms {
                g[t as usize] += d * f64::from(n) * mg_share;
                g[TERMS + t as usize] += d * f64::from(n) * eg_share;
            }
        }
    }
    sum / samples.len() as f64
}

fn fit(data: &str, out: &str, iterations: usize) {
    let started = Instant::now();
    let all = load(data);
    let (mut train, mut valid) = (Vec::new(), Vec::new());
    for (i, s) in all.into_iter().enumerate() {
        if i % 10 == 9 { valid.push(s) } else { train.push(s) }
    }
    eprintln!("{} positions to fit, {} held out ({:.0} s to load)", train.len(), valid.len(), started.elapsed().as_secs_f64());
    let mut w: Vec<f64> = WEIGHTS.iter().map(|x| f64::from(x.0)).chain(WEIGHTS.iter().map(|x| f64::from(x.1))).collect();
    eprintln!("start: error {:.6} (held out {:.6})", error(&train, &w, None), error(&valid, &w, None));
    // Adam, full batch: a step of about one centipawn per iteration.
    let (rate, b1, b2) = (1.0, 0.9, 0.999);
    let (mut m, mut v) = (vec![0.0; w.len()], vec![0.0; w.len()]);
    for it in 1..=iterations {
        let mut g = vec![0.0; w.len()];
        let e = error(&train, &w, Some(&mut g));
        for i in 0..w.len() {
            let gi = g[i] / train.len() as f64;
            m[i] = b1 * m[i] + (1.0 - b1) * gi;
            v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
            let (mh, vh) = (m[i] / (1.0 - b1.powi(it as i32)), v[i] / (1.0 - b2.powi(it as i32)));
            w[i] -= rate * mh / (vh.sqrt() + 1e-12);
        }
        if it % 250 == 0 || it == iterations {
            eprintln!("iteration {it}: error {e:.6} (held out {:.6}) ({:.0} s)", error(&valid, &w, None), started.elapsed().as_secs_f64());
        }
    }
    write_weights(out, &w, train.len() + valid.len());
    eprintln!("weights → {out}");
}

fn write_weights(out: &str, w: &[f64], positions: usize) {
    let mut f = BufWriter::new(File::create(out).unwrap_or_else(|e| panic!("cannot write {out}: {e}")));
    writeln!(f, "// The evaluation's weights, (middlegame, endgame) centipawns; layout and names: `BLOCKS` in eval.rs.").unwrap();
    writeln!(f, "// Written by `examples/tune.rs fit` from {positions} positions scored by Stockfish (`tune gen`).").unwrap();
    writeln!(f, "pub const WEIGHTS: [Weight; TERMS] = [").unwrap();
    let mut term = 0;
    for (name, len) in BLOCKS {
        writeln!(f, "    // {name}").unwrap();
        // Square blocks one rank (4 squares) a line.
        let per_line = if len == 32 { 4 } else { 8 };
        for chunk in (term..term + len).collect::<Vec<_>>().chunks(per_line) {
            let cells: Vec<String> =
                chunk.iter().map(|&t| format!("({}, {}),", w[t].round() as i32, w[TERMS + t].round() as i32)).collect();
            writeln!(f, "    {}", cells.join(" ")).unwrap();
        }
        term += len;
    }
    writeln!(f, "];").unwrap();
    f.flush().unwrap();
}
