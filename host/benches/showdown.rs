//! Showdown benchmark: `cargo bench -p ludus --bench showdown` (release build).
//!
//! Plays seeded offline battles, singles and doubles in turn, through the
//! real component and the real simulator (from npm, through the plugin's
//! sidecar; the Showdown tests install it into `target/pokemon-showdown`, or
//! set `LUDUS_SHOWDOWN` to the package directory) and reports the latency of
//! the optimality evaluation that `showdown_make_move` runs inside the
//! component for every decision (poke-engine in wasm32-wasip2, timed by the
//! component itself; in doubles one singles search per pairing), plus the
//! whole `make_move` round trip. Nothing is asserted; docs/benchmarks.md
//! carries the table.

use std::time::Instant;

use serde_json::{Value, json};

mod common;
// The tests' own decision composer: the same rules the plugin checks.
#[path = "../../tests/common/decision.rs"]
mod decision;
mod in_process;

const BATTLES: u64 = 10;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// What one format's battles measured.
#[derive(Default)]
struct Figures {
    evaluation_ms: Vec<f64>,
    round_trip_ms: Vec<f64>,
    legal: Vec<f64>,
}

impl Figures {
    fn sort(&mut self) {
        self.evaluation_ms.sort_by(f64::total_cmp);
        self.round_trip_ms.sort_by(f64::total_cmp);
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let sim = format!("[plugins.showdown]\nmax_wait_ms = 60000\n{}", common::showdown_sim(&common::showdown_package()));
    let bench = in_process::start("showdown.wasm", &sim).await;
    let call = |tool: &'static str, args: Value| bench.call(tool, args);

    let mut figures = [Figures::default(), Figures::default()];
    // Singles and doubles in turn, battle by battle, so that both meet the machine alike.
    for seed in 1..=BATTLES {
        for (format, f) in ["gen9randombattle", "gen9randomdoublesbattle"].into_iter().zip(figures.iter_mut()) {
            let started = call("showdown_start_offline_battle", json!({"bot": "heuristic", "format": format, "seed": seed})).await;
            let id = started["battle_id"].as_str().unwrap().to_string();
            for step in 0..1000usize {
                let s = call("showdown_get_battle_state", json!({"battle_id": id})).await;
                if s["status"] != "active" {
                    break;
                }
                let actions = call("showdown_get_available_actions", json!({"battle_id": id})).await;
                let listed = actions["actions"].as_array().unwrap().len();
                if listed == 0 {
                    continue;
                }
                let action = decision::decision(&actions, |free| step % free.len());
                let t = Instant::now();
                let r = call("showdown_make_move", json!({"battle_id": id, "action": action})).await;
                f.round_trip_ms.push(t.elapsed().as_secs_f64() * 1e3);
                if let Some(ms) = r["evaluation"]["millis"].as_f64() {
                    f.evaluation_ms.push(ms);
                    f.legal.push(listed as f64);
                }
            }
        }
    }
    figures.iter_mut().for_each(Figures::sort);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!("| measurement ({BATTLES} offline battles of each against the heuristic bot, in turn) | singles | doubles |\n|---|---|---|");
    let [singles, doubles] = &figures;
    println!(
        "| decisions made / scored (legal actions listed on average, all positions) | {} / {} ({:.1}) | {} / {} ({:.1}) |",
        singles.round_trip_ms.len(),
        singles.evaluation_ms.len(),
        mean(&singles.legal),
        doubles.round_trip_ms.len(),
        doubles.evaluation_ms.len(),
        mean(&doubles.legal)
    );
    let ms = |f: &Figures| {
        let e = &f.evaluation_ms;
        format!("{:.0} / {:.0} / {:.0} ms", percentile(e, 0.5), percentile(e, 0.95), e.last().copied().unwrap_or(0.0))
    };
    println!("| optimality evaluation in the component: p50 / p95 / max | {} | {} |", ms(singles), ms(doubles));
    let rt = |f: &Figures| format!("{:.0} / {:.0} ms", percentile(&f.round_trip_ms, 0.5), percentile(&f.round_trip_ms, 0.95));
    println!("| `make_move` round trip (evaluation, simulator, bot's reply): p50 / p95 | {} | {} |", rt(singles), rt(doubles));
    println!(
        "| doubles against singles, evaluation p50 | | {:.1}× |",
        percentile(&doubles.evaluation_ms, 0.5) / percentile(&singles.evaluation_ms, 0.5).max(1e-9)
    );
}
