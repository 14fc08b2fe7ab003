//! What the examples share: one seeded battle between two bots through the
//! real simulator (`pokemon-showdown simulate-battle`), read with the
//! plugin's own protocol reader and tracker.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use showdown::battle::Battle;
use showdown::bot::{self, Bot};
use showdown::protocol::{Event, SimReader};
use showdown::request::Request;
use showdown::rng::Rng;

pub fn bot(name: &str) -> Bot {
    match name {
        "random" => Bot::Random,
        "heuristic" => Bot::Heuristic,
        "search" => Bot::Search,
        other => panic!("unknown bot {other:?} (random, heuristic, search)"),
    }
}

/// One battle; true when p1 wins, none for a tie. `at_decision` sees each
/// decision of p1 as the plugin would score it: the tracked battle with the
/// request applied, and the request.
pub fn battle(showdown: &str, bots: [Bot; 2], seed: u64, mut at_decision: impl FnMut(&Battle, &Request)) -> Option<bool> {
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
    let mut reader = SimReader::default();
    let mut winner = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        match reader.line(&line) {
            Some(Event::Log { line, .. }) => views.iter_mut().for_each(|v| v.on_log(&line)),
            Some(Event::Request { side, json, .. }) => {
                let i = usize::from(side == "p2");
                let Ok(req) = Request::parse(&json) else { continue };
                let pick = bot::choose(bots[i], &req, &views[i], &mut rng);
                views[i].on_request(req);
                if let Some(req) = views[0].pending().filter(|_| i == 0) {
                    at_decision(&views[0], req);
                }
                if let Some(a) = pick {
                    let _ = writeln!(stdin, ">{side} {}", a.choice);
                }
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
