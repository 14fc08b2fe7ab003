//! How far the fast score `showdown_make_move` reports can be trusted: it is
//! compared, position by position, with a slower reference from the same
//! engine (deeper, more guesses of the hidden sets). A benchmark, not a test:
//!
//! ```text
//! cargo run --release -p showdown --no-default-features --example agreement -- \
//!     --showdown target/pokemon-showdown/node_modules/pokemon-showdown --positions 1000
//! ```
//!
//! Positions are our side's decisions in seeded battles between the bots
//! (each bot in turn on each side). For every candidate setting it prints,
//! over the positions both could score: the mean Spearman rank correlation of
//! the actions' values (positions with three or more actions), how often its
//! best action is the reference's best, how often it is within 0.02 of the
//! reference's best score (a near tie), the mean regret of its best action
//! under the reference (0–1 score scale), and its time per decision.

mod common;

use std::sync::Mutex;
use std::time::Instant;

use showdown::battle::Battle;
use showdown::bot::Bot;
use showdown::engine::{Evaluation, Rule, Settings, evaluate_actions};
use showdown::request::Request;

struct Args {
    showdown: String,
    positions: usize,
    seed: u64,
    jobs: usize,
    reference: Settings,
    candidates: Vec<Settings>,
}

/// `2,4,worst` → depth 2, 4 samples, worst case over the replies.
fn settings(s: &str) -> Settings {
    let parts: Vec<&str> = s.split(',').collect();
    let rule = match parts.get(2).copied().unwrap_or("worst") {
        "worst" => Rule::WorstCase,
        "mean" => Rule::Mean,
        other => panic!("unknown rule {other:?} (worst, mean)"),
    };
    Settings { depth: parts[0].parse().expect("depth"), samples: parts.get(1).map_or(4, |n| n.parse().expect("samples")), rule }
}

fn label(s: &Settings) -> String {
    format!("depth {}, {} samples, {}", s.depth, s.samples, if s.rule == Rule::WorstCase { "worst case" } else { "mean" })
}

fn args() -> Args {
    let mut a = Args {
        showdown: "target/pokemon-showdown/node_modules/pokemon-showdown".into(),
        positions: 1000,
        seed: 1,
        jobs: 2,
        reference: settings("3,8,worst"),
        candidates: vec![settings("2,4,worst"), settings("2,8,worst"), settings("2,4,mean"), settings("1,8,worst")],
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--showdown" => a.showdown = v,
            "--positions" => a.positions = v.parse().expect("--positions N"),
            "--seed" => a.seed = v.parse().expect("--seed N"),
            "--jobs" => a.jobs = v.parse().expect("--jobs N"),
            "--reference" => a.reference = settings(&v),
            "--candidates" => a.candidates = v.split(';').map(settings).collect(),
            other => panic!("unknown argument {other} (--showdown, --positions, --seed, --jobs, --reference, --candidates)"),
        }
    }
    a
}

/// At most this many positions from one battle (every third decision), so
/// that long battles between weak bots do not fill the sample.
const PER_BATTLE: usize = 12;

/// Our side's decisions with two or more actions, from seeded battles.
fn positions(a: &Args) -> Vec<(Battle, Request)> {
    let bots = [Bot::Random, Bot::Heuristic, Bot::Search];
    let mut found = Vec::new();
    let mut i = 0u64;
    while found.len() < a.positions {
        let pair = [bots[i as usize % 3], bots[(i / 3) as usize % 3]];
        let (mut decision, mut taken) = (0, 0);
        common::battle(&a.showdown, pair, a.seed.wrapping_mul(1_000_003).wrapping_add(i), |battle, request| {
            decision += 1;
            if request.actions().len() >= 2 && decision % 3 == 1 && taken < PER_BATTLE {
                found.push((battle.clone(), request.clone()));
                taken += 1;
            }
        });
        i += 1;
        eprint!("\r{} positions from {i} battles", found.len().min(a.positions));
    }
    eprintln!();
    found.truncate(a.positions);
    found
}

/// Ranks with ties sharing their mean rank.
fn ranks(v: &[f32]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&x, &y| v[x].total_cmp(&v[y]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        for k in i..=j {
            r[order[k]] = (i + j) as f64 / 2.0;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rank correlation; none when either side is constant.
fn spearman(x: &[f32], y: &[f32]) -> Option<f64> {
    let (rx, ry) = (ranks(x), ranks(y));
    let n = rx.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let (vx, vy): (f64, f64) = (rx.iter().map(|a| (a - mx).powi(2)).sum(), ry.iter().map(|b| (b - my).powi(2)).sum());
    (vx > 0.0 && vy > 0.0).then(|| cov / (vx * vy).sqrt())
}

/// How one candidate did on one position against the reference.
struct Outcome {
    spearman: Option<f64>,
    agrees: bool,
    near: bool,
    regret: f64,
    millis: f64,
}

/// A choice this close to the reference's best score counts as a near tie.
const NEAR: f32 = 0.02;

fn judge(candidate: &Evaluation, reference: &Evaluation, millis: f64) -> Outcome {
    let values = |e: &Evaluation| e.actions.iter().map(|s| s.value).collect::<Vec<_>>();
    let (c, r) = (values(candidate), values(reference));
    // Both scored the same request: the candidate's choice is among the reference's actions.
    let best = reference.best().expect("a scored position has actions");
    let pick = candidate.best().expect("a scored position has actions");
    let chosen = reference.actions.iter().find(|s| s.action == pick.action).expect("the same request's actions");
    Outcome {
        spearman: if c.len() >= 3 { spearman(&c, &r) } else { None },
        // Equal reference values are equally good choices.
        agrees: chosen.value >= best.value,
        near: chosen.score >= best.score - NEAR,
        regret: f64::from(best.score - chosen.score).max(0.0),
        millis,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let a = args();
    let started = Instant::now();
    let positions = positions(&a);
    let collected = started.elapsed().as_secs_f64();
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<Vec<Outcome>>> = Mutex::new(Vec::new());
    let refused = Mutex::new(0usize);
    let reference_ms = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..a.jobs {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some((battle, request)) = positions.get(i) else { break };
                    let t = Instant::now();
                    let Ok(reference) = evaluate_actions(battle, request, a.reference) else {
                        *refused.lock().unwrap() += 1;
                        continue;
                    };
                    reference_ms.lock().unwrap().push(t.elapsed().as_secs_f64() * 1000.0);
                    let mut row = Vec::new();
                    for c in &a.candidates {
                        let t = Instant::now();
                        let e = evaluate_actions(battle, request, *c).expect("the reference could score it");
                        row.push(judge(&e, &reference, t.elapsed().as_secs_f64() * 1000.0));
                    }
                    let mut all = results.lock().unwrap();
                    all.push(row);
                    if all.len().is_multiple_of(20) {
                        eprint!("\r{} of {} positions scored", all.len(), positions.len());
                    }
                }
            });
        }
    });
    eprintln!();
    let results = results.into_inner().unwrap();
    let mut reference_ms = reference_ms.into_inner().unwrap();
    reference_ms.sort_by(f64::total_cmp);
    println!(
        "{} positions ({} collected in {collected:.0} s, {} the engine cannot score); reference: {}, p50 {:.0} ms",
        results.len(),
        positions.len(),
        refused.into_inner().unwrap(),
        label(&a.reference),
        percentile(&reference_ms, 0.5)
    );
    println!(
        "{:<34} {:>9} {:>11} {:>11} {:>12} {:>8} {:>8}",
        "candidate", "Spearman", "best agrees", "within 0.02", "mean regret", "p50 ms", "p95 ms"
    );
    for (k, c) in a.candidates.iter().enumerate() {
        let outcomes: Vec<&Outcome> = results.iter().map(|row| &row[k]).collect();
        let rhos: Vec<f64> = outcomes.iter().filter_map(|o| o.spearman).collect();
        let n = outcomes.len() as f64;
        let mut ms: Vec<f64> = outcomes.iter().map(|o| o.millis).collect();
        ms.sort_by(f64::total_cmp);
        println!(
            "{:<34} {:>9.3} {:>10.1}% {:>10.1}% {:>12.4} {:>8.1} {:>8.1}",
            label(c),
            rhos.iter().sum::<f64>() / rhos.len().max(1) as f64,
            100.0 * outcomes.iter().filter(|o| o.agrees).count() as f64 / n,
            100.0 * outcomes.iter().filter(|o| o.near).count() as f64 / n,
            outcomes.iter().map(|o| o.regret).sum::<f64>() / n,
            percentile(&ms, 0.5),
            percentile(&ms, 0.95)
        );
    }
    println!("{:.0} s in all", started.elapsed().as_secs_f64());
}
