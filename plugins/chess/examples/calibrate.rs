//! Calibrates the engine's levels against Stockfish's UCI_Elo (a benchmark,
//! not a test; the README carries its table).
//!
//! ```sh
//! apt-get install stockfish        # Debian's Stockfish 15.1: /usr/games/stockfish
//! cargo run --release -p chess --example calibrate -- --games 20 --levels 1,5,10 --anchors 1350,1700,2000
//! # below Stockfish's floor (UCI_Elo 1350), chain from a level already rated:
//! cargo run --release -p chess --example calibrate -- --games 20 --levels 1,2,3,4 --anchors L5@1261
//! ```
//!
//! Each level plays `--games` games against each anchor: a number is
//! Stockfish with `UCI_LimitStrength` and that `UCI_Elo` (`--movetime` ms a
//! move, 1 thread); `L<level>@<elo>` is this engine at another level, taken to
//! be rated `<elo>`. Colours alternate over a fixed opening book. The engine runs the same
//! code as the chess component, natively, with the level's node budget.
//! Output: per level the score, and a maximum-likelihood performance rating
//! with a 95 % interval (from the binomial error of the score).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use chess::engine::{Engine, TT_ENTRIES, level};
use chess::rules::Game;

#[path = "common/stockfish.rs"]
mod stockfish;
use stockfish::Stockfish;

/// Two-ply openings, each played once with each colour.
const BOOK: &[&str] = &[
    "e2e4 e7e5",
    "d2d4 d7d5",
    "e2e4 c7c5",
    "c2c4 e7e5",
    "g1f3 d7d5",
    "e2e4 e7e6",
    "d2d4 g8f6",
    "e2e4 c7c6",
    "e2e4 d7d6",
    "e2e4 g8f6",
    "d2d4 e7e6",
    "c2c4 g8f6",
    "g1f3 g8f6",
    "e2e4 d7d5",
    "d2d4 f7f5",
    "c2c4 c7c5",
];
const MAX_PLIES: usize = 300;

/// An opponent of known rating.
#[derive(Clone, Copy, Debug)]
enum Anchor {
    Stockfish(u32),
    Level(u8, u32),
}

impl Anchor {
    fn parse(s: &str) -> Anchor {
        match s.strip_prefix('L').and_then(|r| r.split_once('@')) {
            Some((l, e)) => Anchor::Level(l.parse().expect("level"), e.parse().expect("elo")),
            None => Anchor::Stockfish(s.parse().expect("an Elo, or L<level>@<elo>")),
        }
    }

    fn elo(self) -> u32 {
        match self {
            Anchor::Stockfish(e) | Anchor::Level(_, e) => e,
        }
    }

    fn label(self) -> String {
        match self {
            Anchor::Stockfish(e) => format!("SF {e}"),
            Anchor::Level(l, e) => format!("level {l} ({e})"),
        }
    }
}

/// Plays one game; returns the engine's score (1, 0.5, 0) and its mean nodes per move.
fn play(level_n: u8, anchor: Anchor, opening: &str, engine_white: bool, movetime: u64, sf_path: &str, seed: u64) -> (f64, u64) {
    let mut sf = match anchor {
        Anchor::Stockfish(elo) => {
            let mut sf = Stockfish::start(sf_path, &["UCI_LimitStrength value true".into(), format!("UCI_Elo value {elo}")]);
            sf.send("ucinewgame");
            Some(sf)
        }
        Anchor::Level(..) => None,
    };
    let mut rival = Engine::new(TT_ENTRIES, seed ^ 0x5eed);
    let mut game = Game::default();
    for mv in opening.split_whitespace() {
        let (m, _) = game.parse(mv).unwrap();
        game.play(m);
    }
    let mut engine = Engine::new(TT_ENTRIES, seed);
    let lvl = level(level_n);
    let (mut nodes, mut searches) = (0u64, 0u64);
    while game.outcome.is_none() && game.uci.len() < MAX_PLIES {
        let engine_to_move = (game.turn() == cozy_chess::Color::White) == engine_white;
        let mv = if engine_to_move {
            let m = engine.choose(&game.board, &game.history_hashes(), lvl).expect("a legal move");
            nodes += engine.last_nodes;
            searches += 1;
            m
        } else {
            match (sf.as_mut(), anchor) {
                (Some(sf), _) => {
                    let uci = sf.search(&game.uci, &format!("movetime {movetime}")).best;
                    game.parse(&uci).unwrap_or_else(|e| panic!("stockfish played {uci}: {e}")).0
                }
                (None, Anchor::Level(l, _)) => rival.choose(&game.board, &game.history_hashes(), level(l)).expect("a legal move"),
                (None, Anchor::Stockfish(_)) => unreachable!("Stockfish anchors start Stockfish"),
            }
        };
        game.play(mv);
    }
    let score = match game.outcome.as_ref().map(|o| o.result) {
        Some("1-0") => {
            if engine_white {
                1.0
            } else {
                0.0
            }
        }
        Some("0-1") => {
            if engine_white {
                0.0
            } else {
                1.0
            }
        }
        _ => 0.5,
    };
    (score, nodes / searches.max(1))
}

/// Expected score of a player rated `r` against `a`.
fn expected(r: f64, a: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf((a - r) / 400.0))
}

/// The rating whose expected total against `anchors` equals `score` (bisection).
fn performance(anchors: &[f64], score: f64) -> f64 {
    let (mut lo, mut hi) = (-1000.0, 4500.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        let e: f64 = anchors.iter().map(|&a| expected(mid, a)).sum();
        if e < score { lo = mid } else { hi = mid }
    }
    (lo + hi) / 2.0
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',').filter_map(|x| x.trim().parse().ok()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let games: usize = arg(&args, "--games", "16").parse().unwrap();
    let movetime: u64 = arg(&args, "--movetime", "1000").parse().unwrap();
    let levels: Vec<u8> = list(&arg(&args, "--levels", "1,2,3,4,5,6,7,8,9,10"));
    let anchors: Vec<Anchor> = arg(&args, "--anchors", "1350,1700,2000").split(',').map(|a| Anchor::parse(a.trim())).collect();
    let threads: usize = arg(&args, "--threads", "2").parse().unwrap();
    let sf_path = arg(&args, "--stockfish", "/usr/games/stockfish");

    let mut jobs = Vec::new();
    for &l in &levels {
        for &a in &anchors {
            for g in 0..games {
                jobs.push((l, a, BOOK[(g / 2) % BOOK.len()], g % 2 == 0, g as u64));
            }
        }
    }
    let total = jobs.len();
    let jobs = Arc::new(Mutex::new(jobs.into_iter()));
    let results = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (jobs, results, sf) = (jobs.clone(), results.clone(), sf_path.clone());
            std::thread::spawn(move || {
                loop {
                    let Some((l, a, opening, white, seed)) = jobs.lock().unwrap().next() else { return };
                    let (score, nodes) = play(l, a, opening, white, movetime, &sf, seed);
                    let mut r = results.lock().unwrap();
                    r.push((l, a.elo(), score, nodes));
                    eprintln!("[{}/{total}] level {l} vs {}: {score} ({:.0} s)", r.len(), a.label(), started.elapsed().as_secs_f64());
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let results = results.lock().unwrap();
    let names: Vec<String> = anchors.iter().map(|a| a.label()).collect();
    println!(
        "Stockfish 15.1, UCI_LimitStrength, {movetime} ms a move, 1 thread; {games} games per level and anchor; anchors: {}.\n",
        names.join(", ")
    );
    println!("| level | games | won-drawn-lost | score | Elo (95 % interval) | nodes/move |");
    println!("|---|---|---|---|---|---|");
    for &l in &levels {
        let mine: Vec<_> = results.iter().filter(|r| r.0 == l).collect();
        let n = mine.len() as f64;
        let score: f64 = mine.iter().map(|r| r.2).sum();
        let (w, d) = (mine.iter().filter(|r| r.2 == 1.0).count(), mine.iter().filter(|r| r.2 == 0.5).count());
        let opp: Vec<f64> = mine.iter().map(|r| f64::from(r.1)).collect();
        let p = score / n;
        let se = (p * (1.0 - p) / n).sqrt().max(0.5 / n);
        let clamp = |x: f64| x.clamp(0.25 / n, n - 0.25);
        let elo = performance(&opp, clamp(score));
        let lo = performance(&opp, clamp((p - 1.96 * se) * n));
        let hi = performance(&opp, clamp((p + 1.96 * se) * n));
        // A clean sweep bounds the rating on one side only.
        let rating = if w == 0 && d == 0 {
            format!("below {hi:.0}")
        } else if w == mine.len() {
            format!("above {lo:.0}")
        } else {
            format!("{elo:.0} ({lo:.0} to {hi:.0})")
        };
        let nodes = mine.iter().map(|r| r.3).sum::<u64>() / mine.len().max(1) as u64;
        println!("| {l} | {} | {w}-{d}-{} | {:.1}% | {rating} | {nodes} |", mine.len(), mine.len() - w - d, p * 100.0);
    }
    println!("\n{total} games in {:.0} s.", started.elapsed().as_secs_f64());
}
