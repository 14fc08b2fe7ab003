//! Chess benchmarks: `cargo bench -p ludus --bench chess` (release build).
//!
//! - perft(6) from the start position inside the component (the chess code
//!   built for wasm32-wasip2 and run by the host) against the same code built
//!   natively: the ratio is the sandbox's cost for move generation;
//! - engine nodes per second per level, inside the component, over a few
//!   positions, and the native figure for level 10.
//!
//! Nothing is asserted; the README carries the table.

use std::time::Instant;

use serde_json::{Value, json};

mod in_process;

const POSITIONS: &[&str] = &[
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r1bq1rk1/pp2ppbp/2np1np1/8/3NP3/2N1BP2/PPPQ2PP/R3KB1R w KQ - 3 9",
];

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let bench = in_process::start("chess_bench.wasm", "[plugins.chess_bench]\ncall_timeout_ms = 120000\n").await;
    let call = |tool: &'static str, args: Value| bench.call(tool, args);

    println!("| measurement | result |\n|---|---|");
    // perft(6): the same move generator in the component and natively.
    let start: cozy_chess::Board = POSITIONS[0].parse().unwrap();
    let t = Instant::now();
    let native_nodes = chess::rules::perft(&start, 6);
    let native = t.elapsed();
    let wasm = call("chess_bench_perft", json!({"fen": POSITIONS[0], "depth": 6})).await;
    assert_eq!(wasm["nodes"], native_nodes);
    let wasm_s = wasm["micros"].as_f64().unwrap() / 1e6;
    println!(
        "| perft(6) from the start ({native_nodes} leaves): component / native | {wasm_s:.2} s / {:.2} s = {:.2}× |",
        native.as_secs_f64(),
        wasm_s / native.as_secs_f64()
    );

    // Engine speed per level, inside the component.
    for level in 1..=10u8 {
        let (mut nodes, mut micros) = (0f64, 0f64);
        for fen in POSITIONS {
            let s = call("chess_bench_think", json!({"fen": fen, "level": level})).await;
            nodes += s["nodes"].as_f64().unwrap();
            micros += s["micros"].as_f64().unwrap();
        }
        let n = POSITIONS.len() as f64;
        println!(
            "| engine level {level} in the component: nodes per move, time per move, speed | {:.0}, {:.0} ms, {:.2} M nodes/s |",
            nodes / n,
            micros / n / 1e3,
            nodes / micros
        );
    }
    let (mut nodes, mut secs) = (0u64, 0f64);
    for fen in POSITIONS {
        let board: cozy_chess::Board = fen.parse().unwrap();
        let mut engine = chess::engine::Engine::new(chess::engine::TT_ENTRIES, 1);
        let t = Instant::now();
        engine.choose(&board, &[], chess::engine::level(10));
        secs += t.elapsed().as_secs_f64();
        nodes += engine.last_nodes;
    }
    println!(
        "| engine level 10 natively: time per move, speed | {:.0} ms, {:.2} M nodes/s |",
        secs / POSITIONS.len() as f64 * 1e3,
        nodes as f64 / secs / 1e6
    );
}
