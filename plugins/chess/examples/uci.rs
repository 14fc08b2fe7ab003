//! The engine as a minimal UCI program, so that two versions of it can play
//! each other through `calibrate --stockfish <this binary>` (the anchor's
//! `UCI_Elo` options are ignored). The level comes from `LUDUS_UCI_LEVEL`
//! (default 10); `go` limits are ignored: the level's node budget decides.
//!
//! ```sh
//! cargo build --release -p chess --example uci   # in a checkout of the older version
//! cargo run --release -p chess --example calibrate -- --levels 10 --anchors 1880 --stockfish path/to/old/uci
//! ```
//! Only `position startpos [moves …]` is understood (what `calibrate` sends).

use std::io::{BufRead, Write};

use chess::engine::{Engine, TT_ENTRIES, level};
use chess::rules::Game;

fn main() {
    let level_n: u8 = std::env::var("LUDUS_UCI_LEVEL").ok().and_then(|l| l.parse().ok()).unwrap_or(10);
    let mut engine = Engine::new(TT_ENTRIES, 1);
    let mut game = Game::default();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        match words.next() {
            Some("uci") => writeln!(out, "id name ludus-chess level {level_n}\nuciok").unwrap(),
            Some("isready") => writeln!(out, "readyok").unwrap(),
            Some("ucinewgame") => engine = Engine::new(TT_ENTRIES, 1),
            Some("position") => {
                game = Game::default();
                for mv in words.skip_while(|w| *w != "moves").skip(1) {
                    match game.parse(mv) {
                        Ok((m, _)) => game.play(m),
                        Err(e) => panic!("illegal move {mv} in `{line}`: {e}"),
                    }
                }
            }
            Some("go") => {
                let best = engine.choose(&game.board, &game.history_hashes(), level(level_n)).map(|m| {
                    let mut after = game.clone();
                    after.play(m);
                    after.uci.last().cloned().unwrap_or_default()
                });
                writeln!(out, "info depth {} nodes {}", engine.last_depth, engine.last_nodes).unwrap();
                writeln!(out, "bestmove {}", best.unwrap_or_else(|| "0000".into())).unwrap();
            }
            Some("quit") => break,
            _ => {}
        }
        out.flush().unwrap();
    }
}
