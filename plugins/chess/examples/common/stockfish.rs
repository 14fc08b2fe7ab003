//! A Stockfish process spoken to over UCI (shared by `calibrate` and `tune`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct Stockfish {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

/// What a search reported: the score (centipawns, or mate in N moves) for
/// the side to move, and the move it chose.
pub struct Search {
    pub cp: Option<i32>,
    pub mate: Option<i32>,
    pub best: String,
}

impl Stockfish {
    /// Starts `path` with one thread, a 16 MiB table and the given
    /// `setoption` values (`"UCI_Elo value 2000"`).
    pub fn start(path: &str, options: &[String]) -> Stockfish {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {path} ({e}); apt-get install stockfish"));
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut sf = Stockfish { child, input, output };
        sf.send("uci");
        sf.wait_for("uciok");
        for opt in ["Threads value 1", "Hash value 16"].into_iter().chain(options.iter().map(String::as_str)) {
            sf.send(&format!("setoption name {opt}"));
        }
        sf.send("isready");
        sf.wait_for("readyok");
        sf
    }

    pub fn send(&mut self, line: &str) {
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
    }

    fn read_line(&mut self, line: &mut String) {
        line.clear();
        if self.output.read_line(line).unwrap() == 0 {
            panic!("stockfish exited");
        }
    }

    pub fn wait_for(&mut self, prefix: &str) -> String {
        let mut line = String::new();
        loop {
            self.read_line(&mut line);
            if line.starts_with(prefix) {
                return line.trim().to_string();
            }
        }
    }

    /// Sets the position (`moves` from the start) and searches with `limit`
    /// (`"movetime 1000"`, `"depth 7"`).
    pub fn search(&mut self, moves: &[String], limit: &str) -> Search {
        self.send(&format!("position startpos moves {}", moves.join(" ")));
        self.send(&format!("go {limit}"));
        let mut found = Search { cp: None, mate: None, best: String::new() };
        let mut line = String::new();
        loop {
            self.read_line(&mut line);
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.first() {
                Some(&"bestmove") => {
                    found.best = words.get(1).unwrap_or(&"").to_string();
                    return found;
                }
                Some(&"info") => {
                    if let Some(i) = words.iter().position(|w| *w == "score") {
                        let n = words.get(i + 2).and_then(|n| n.parse().ok());
                        match words.get(i + 1) {
                            Some(&"cp") => (found.cp, found.mate) = (n, None),
                            Some(&"mate") => (found.cp, found.mate) = (None, n),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
}

impl Drop for Stockfish {
    fn drop(&mut self) {
        self.send("quit");
        let _ = self.child.wait();
    }
}
