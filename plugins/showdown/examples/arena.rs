//! Bot against bot over many seeded offline battles, through the real
//! simulator (`pokemon-showdown simulate-battle`), with the plugin's own
//! protocol reader, tracker and bots. A benchmark, not a test:
//!
//! ```text
//! cargo run --release -p showdown --no-default-features --example arena -- \
//!     --showdown target/pokemon-showdown/node_modules/pokemon-showdown --p1 heuristic --p2 random --battles 200
//! ```
//!
//! Prints the first player's win rate with a 95 % Wilson interval and the
//! battles per minute.

mod common;

use std::time::Instant;

use showdown::bot::Bot;

struct Args {
    showdown: String,
    p1: Bot,
    p2: Bot,
    battles: u64,
    jobs: u64,
    seed: u64,
}

fn args() -> Args {
    let mut a = Args {
        showdown: "target/pokemon-showdown/node_modules/pokemon-showdown".into(),
        p1: Bot::Heuristic,
        p2: Bot::Random,
        battles: 200,
        jobs: 2,
        seed: 1,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--showdown" => a.showdown = v,
            "--p1" => a.p1 = common::bot(&v),
            "--p2" => a.p2 = common::bot(&v),
            "--battles" => a.battles = v.parse().expect("--battles N"),
            "--jobs" => a.jobs = v.parse().expect("--jobs N"),
            "--seed" => a.seed = v.parse().expect("--seed N"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn wilson(wins: f64, n: f64) -> (f64, f64) {
    let z = 1.96;
    let p = wins / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    (centre - half, centre + half)
}

fn main() {
    let a = args();
    let started = Instant::now();
    let results: Vec<Option<bool>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..a.jobs)
            .map(|job| {
                let a = &a;
                scope.spawn(move || {
                    (0..a.battles)
                        .filter(|i| i % a.jobs == job)
                        .map(|i| common::battle(&a.showdown, [a.p1, a.p2], a.seed.wrapping_mul(1_000_003).wrapping_add(i), |_, _| {}))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let secs = started.elapsed().as_secs_f64();
    let n = results.len() as f64;
    let wins = results.iter().filter(|r| **r == Some(true)).count() as f64;
    let ties = results.iter().filter(|r| r.is_none()).count() as f64;
    let score = wins + ties / 2.0;
    let (lo, hi) = wilson(score, n);
    println!(
        "{:?} vs {:?}: {} battles, p1 scored {:.1} % (95 % CI {:.1}–{:.1} %), {} ties; {:.1} s, {:.0} battles/min with {} jobs",
        a.p1,
        a.p2,
        n,
        100.0 * score / n,
        100.0 * lo,
        100.0 * hi,
        ties,
        secs,
        n / secs * 60.0,
        a.jobs
    );
}
