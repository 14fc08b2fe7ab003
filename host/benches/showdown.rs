//! Showdown benchmark: `cargo bench -p ludus --bench showdown` (release build).
//!
//! Plays seeded offline battles through the real component and the real
//! simulator (`pokemon-showdown simulate-battle`, from npm; the Showdown tests
//! install it into `target/pokemon-showdown`, or set `LUDUS_SHOWDOWN` to the
//! package directory) and reports the latency of the optimality evaluation
//! that `showdown_make_move` runs inside the component for every decision
//! (poke-engine in wasm32-wasip2, timed by the component itself), plus the
//! whole `make_move` round trip. Nothing is asserted; the README carries the
//! table.

use std::time::Instant;

use serde_json::{Value, json};

mod common;
mod in_process;

const BATTLES: u64 = 10;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let sim = format!("[plugins.showdown]\nmax_wait_ms = 60000\n{}", common::showdown_sim(&common::showdown_package()));
    let bench = in_process::start("showdown.wasm", &sim).await;
    let call = |tool: &'static str, args: Value| bench.call(tool, args);

    let (mut evaluation_ms, mut round_trip_ms, mut legal) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 1..=BATTLES {
        let started = call("showdown_start_offline_battle", json!({"bot": "heuristic", "seed": seed})).await;
        let id = started["battle_id"].as_str().unwrap().to_string();
        for step in 0..1000usize {
            let s = call("showdown_get_battle_state", json!({"battle_id": id})).await;
            if s["status"] != "active" {
                break;
            }
            let actions = s["available_actions"].as_array().unwrap();
            if actions.is_empty() {
                continue;
            }
            // Any legal action will do: the k-th on step k reaches switches too.
            let action = actions[step % actions.len()].clone();
            let t = Instant::now();
            let r = call("showdown_make_move", json!({"battle_id": id, "action": action})).await;
            round_trip_ms.push(t.elapsed().as_secs_f64() * 1e3);
            if let Some(ms) = r["evaluation"]["millis"].as_f64() {
                evaluation_ms.push(ms);
                legal.push(actions.len() as f64);
            }
        }
    }
    evaluation_ms.sort_by(f64::total_cmp);
    round_trip_ms.sort_by(f64::total_cmp);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!("| measurement ({BATTLES} offline battles against the heuristic bot) | result |\n|---|---|");
    println!(
        "| optimality evaluation in the component, {} decisions ({:.1} legal actions on average): p50 / p95 / max | {:.0} / {:.0} / {:.0} ms |",
        evaluation_ms.len(),
        mean(&legal),
        percentile(&evaluation_ms, 0.5),
        percentile(&evaluation_ms, 0.95),
        evaluation_ms.last().copied().unwrap_or(0.0)
    );
    println!(
        "| `make_move` round trip (evaluation, simulator, bot's reply), {} calls: p50 / p95 | {:.0} / {:.0} ms |",
        round_trip_ms.len(),
        percentile(&round_trip_ms, 0.5),
        percentile(&round_trip_ms, 0.95)
    );
}
