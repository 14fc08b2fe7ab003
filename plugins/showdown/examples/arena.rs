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

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use showdown::battle::Battle;
use showdown::bot::{self, Bot};
use showdown::rng::Rng;
use showdown::protocol::{Event, SimReader};
use showdown::request::Request;

struct Args {
    showdown: String,
    p1: Bot,
    p2: Bot,
    battles: u64,
    jobs: u64,
    seed: u64,
}

fn bot(name: &str) -> Bot {
    match name {
        "random" => Bot::Random,
        "heuristic" => Bot::Heuristic,
        "search" => Bot::Search,
        other => panic!("unknown bot {other:?} (random, heuristic, search)"),
    }
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
            "--p1" => a.p1 = bot(&v),
            "--p2" => a.p2 = bot(&v),
            "--battles" => a.battles = v.parse().expect("--battles N"),
            "--jobs" => a.jobs = v.parse().expect("--jobs N"),
            "--seed" => a.seed = v.parse().expect("--seed N"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// One battle; true when p1 wins, none for a tie.
fn battle(showdown: &str, p1: Bot, p2: Bot, seed: u64) -> Option<bool> {
    let mut child = Command::new("node")
        .arg(format!("{showdown}/pokemon-showdown"))
        .args(["simulate-battle", "--skip-build"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting node");
    let mut stdin = child.stdin.take().unwrap();
    // A battle that stalls (a choice the simulator never accepts) is killed after a minute and counted as a tie.
    let pid = child.id();
    let (done, watchdog) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if watchdog.recv_timeout(std::time::Duration::from_secs(60)).is_err() {
            eprintln!("seed {seed}: stalled, killed");
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    });
    let mut rng = Rng::new(seed);
    let s = |rng: &mut Rng| (0..4).map(|_| (rng.next_u64() % 65_536).to_string()).collect::<Vec<_>>().join(",");
    writeln!(stdin, r#">start {{"formatid":"gen9randombattle","seed":"{}"}}"#, s(&mut rng)).unwrap();
    writeln!(stdin, r#">player p1 {{"name":"One","seed":"{}"}}"#, s(&mut rng)).unwrap();
    writeln!(stdin, r#">player p2 {{"name":"Two","seed":"{}"}}"#, s(&mut rng)).unwrap();
    let mut views = [Battle { me: "p1".into(), ..Battle::default() }, Battle { me: "p2".into(), ..Battle::default() }];
    let bots = [p1, p2];
    let mut reader = SimReader::default();
    let mut winner = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        match reader.line(&line) {
            Some(Event::Log { line, .. }) => views.iter_mut().for_each(|v| v.on_log(&line)),
            Some(Event::Request { side, json, .. }) => {
                let i = usize::from(side == "p2");
                let Ok(req) = Request::parse(&json) else { continue };
                if let Some(a) = bot::choose(bots[i], &req, &views[i], &mut rng) {
                    let _ = writeln!(stdin, ">{side} {}", a.choice);
                }
                views[i].on_request(req);
            }
            Some(Event::Error { side, text, .. }) if !text.starts_with("[Unavailable choice]") => {
                eprintln!("seed {seed}: {side} refused: {text}");
                let _ = writeln!(stdin, ">{side} default");
            }
            Some(Event::End { .. }) => break,
            _ => {}
        }
        if views[0].over() {
            winner = views[0].winner.clone();
            if views[0].tie {
                break;
            }
        }
    }
    drop(stdin);
    let _ = done.send(());
    let _ = child.kill();
    let _ = child.wait();
    winner.map(|w| w == "One")
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
                        .map(|i| battle(&a.showdown, a.p1, a.p2, a.seed.wrapping_mul(1_000_003).wrapping_add(i)))
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
