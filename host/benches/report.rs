//! `ludus report` over many records: `cargo bench -p ludus --bench report`
//! (release build). `LUDUS_BENCH_RECORDS=N` sets how many (default
//! 1,000,000); `LUDUS_BENCH_BASELINE=/path/to/ludus` times another build's
//! table on the same file first.
//!
//! Writes N records shaped like the ones the server writes (the four
//! puzzles at sizes 1–12 for four callers, chess against levels 1–10 with a
//! PGN, Showdown battles with 30 per-decision optimalities; the games
//! against an opponent with their seats, so the ratings are fitted), each
//! line sealed as the server seals it (signed, chained to the one before),
//! then runs the real binary on them: the table alone, the table with every
//! signature checked against the key (`--key`), and the table with the
//! HTML page.
//! For each: wall time, records per second, and the process's peak resident
//! memory, next to `wc -l` reading the same file (the floor of reading it
//! at all) in the same run. The report streams: its memory does not grow
//! with the file. Nothing here is asserted.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ludus");

/// A small deterministic generator (xorshift), so every run writes the same file.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn write_records(path: &Path, count: u64, key: &ludus::seal::SigningKey) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let (mut line, mut prev) = (Vec::new(), String::new());
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let callers = ["model-a", "model-b", "model-c", "model-d"];
    let puzzles = ["hanoi", "river_crossing", "checker_jumping", "blocks_world"];
    let pgn = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 8. c3 O-O 9. h3 Nb8 10. d4 Nbd7 0-1";
    for i in 0..count {
        let caller = callers[rng.below(4) as usize];
        let (game, parameters, outcome, moves, optimum, figures, opponent) = match rng.below(10) {
            0..=6 => {
                let game = puzzles[rng.below(4) as usize];
                let n = 1 + rng.below(12);
                let optimum = match game {
                    "hanoi" => (1u64 << n) - 1,
                    "checker_jumping" => (n + 1) * (n + 1) - 1,
                    _ => 2 * n + 1,
                };
                let solved = rng.unit() < 1.0 / (1.0 + (n as f64 / 6.0).powi(3));
                let moves = if solved { optimum + rng.below(3) } else { rng.below(optimum + 1) };
                (
                    game,
                    format!("{{\"n\":{n}}}"),
                    if solved { "solved" } else { "failed" },
                    moves,
                    optimum.to_string(),
                    "{}".to_string(),
                    None,
                )
            }
            7..=8 => {
                let level = 1 + rng.below(10);
                let outcome = ["won", "lost", "draw"][rng.below(3) as usize];
                let figures = format!("{{\"result\":\"0-1\",\"reason\":\"checkmate\",\"level\":{level},\"pgn\":\"{pgn}\"}}");
                (
                    "chess",
                    format!("{{\"opponent\":\"computer\",\"level\":{level},\"colour\":\"white\"}}"),
                    outcome,
                    40,
                    "null".into(),
                    figures,
                    Some(format!("chess-engine/{level}")),
                )
            }
            _ => {
                let per_turn: Vec<String> = (0..30).map(|_| format!("{:.4}", rng.unit().sqrt())).collect();
                let figures =
                    format!("{{\"winner\":\"Bot\",\"turns\":30,\"optimality_mean\":0.6,\"optimality\":[{}]}}", per_turn.join(","));
                let outcome = if rng.unit() < 0.3 { "won" } else { "lost" };
                let opponent = Some("showdown-bot/heuristic".to_string());
                (
                    "showdown",
                    "{\"format\":\"gen9randombattle\",\"opponent\":\"heuristic\"}".into(),
                    outcome,
                    30,
                    "null".into(),
                    figures,
                    opponent,
                )
            }
        };
        // Games against an opponent list both seats, as the server writes them.
        let seats = match opponent {
            Some(opponent) => {
                let theirs = match outcome {
                    "won" => "lost",
                    "lost" => "won",
                    other => other,
                };
                format!(
                    ",\"seats\":[{{\"seat\":\"p1\",\"kind\":\"agent\",\"player\":\"{caller}\",\"result\":\"{outcome}\"}},\
                     {{\"seat\":\"p2\",\"kind\":\"builtin\",\"player\":\"{opponent}\",\"result\":\"{theirs}\"}}]"
                )
            }
            None => String::new(),
        };
        line.clear();
        writeln!(
            line,
            "{{\"record\":\"{i:032x}/1\",\"time\":\"2026-11-26T00:00:00.000Z\",\"game\":\"{game}\",\"plugin_version\":\"0.1.0\",\
             \"parameters\":{parameters},\"seed\":{},\"caller\":\"{caller}\",\"tool_calls\":{},\"moves\":{moves},\
             \"illegal_moves\":{},\"first_failing_move\":null,\"optimum\":{optimum},\"outcome\":\"{outcome}\",\
             \"ended\":\"the game ended\",\"duration_ms\":{},\"figures\":{figures}{seats}}}",
            rng.next(),
            moves + 1,
            rng.below(3),
            rng.below(60_000)
        )?;
        let value = serde_json::from_slice(&line).expect("the bench writes JSON");
        let sealed = key.seal(value, &prev).expect("sealing");
        prev = ludus::seal::digest(&sealed);
        out.write_all(&sealed)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

/// Runs `cmd` to its end: wall time and peak resident memory (KiB).
// The child is reaped by `wait4`, which also reports its own peak memory
// (std's `wait` does not).
#[allow(clippy::zombie_processes)]
fn measure(cmd: &mut Command) -> (Duration, i64) {
    let started = Instant::now();
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawning");
    let mut status = 0;
    // SAFETY: rusage is plain data, filled in by wait4 for the child just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{cmd:?} failed");
    (started.elapsed(), usage.ru_maxrss)
}

fn main() {
    let count: u64 = std::env::var("LUDUS_BENCH_RECORDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("records.jsonl");
    let started = Instant::now();
    let key = ludus::seal::SigningKey::load_or_create(&dir.path().join("records.key")).unwrap();
    write_records(&file, count, &key).unwrap();
    let bytes = std::fs::metadata(&file).unwrap().len();
    eprintln!("wrote {count} records, {} MB, in {:.1} s", bytes / 1_000_000, started.elapsed().as_secs_f64());

    let page = dir.path().join("report.html");
    let floor = measure(Command::new("wc").arg("-l").arg(&file));
    // Another build's table first, in the same run (`LUDUS_BENCH_BASELINE=/path/to/ludus`).
    let baseline = std::env::var("LUDUS_BENCH_BASELINE").ok().map(|b| measure(Command::new(b).arg("report").arg(&file)));
    let table = measure(Command::new(BIN).arg("report").arg(&file));
    let keyed = measure(Command::new(BIN).arg("report").arg(&file).args(["--key", key.public()]));
    let html = measure(Command::new(BIN).arg("report").arg(&file).arg("--html").arg(&page));
    let per_s = |d: Duration| count as f64 / d.as_secs_f64();
    println!("| `ludus report` over {count} records ({} MB) | wall | records/s | peak memory |", bytes / 1_000_000);
    println!("|---|---|---|---|");
    let rows = [("`wc -l` (reading the file)", Some(floor)), ("the table, baseline build", baseline), ("the table", Some(table))];
    let rows = rows
        .into_iter()
        .chain([("the table, every signature checked (`--key`)", Some(keyed)), ("the table and the HTML page", Some(html))]);
    for (what, (t, rss)) in rows.filter_map(|(what, m)| Some((what, m?))) {
        println!("| {what} | {:.2} s | {:.0} | {:.1} MB |", t.as_secs_f64(), per_s(t), rss as f64 / 1024.0);
    }
    println!(
        "\nThe table takes {:.1}× `wc -l`'s time; peak memory is {:.1} % of the file's size. The page is {} KB.",
        table.0.as_secs_f64() / floor.0.as_secs_f64(),
        100.0 * (table.1 as f64 * 1024.0) / bytes as f64,
        std::fs::metadata(&page).unwrap().len() / 1000
    );
}
