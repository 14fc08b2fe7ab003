//! `ludus report`: summarises result records (`records`) the way *The
//! Illusion of Thinking* shows its results: accuracy per game and size,
//! moves against the optimum, illegal moves, Showdown's move optimality and
//! chess score per engine level; with `--html`, one self-contained page
//! with those plots (`html`).
//!
//! The files are read one line at a time into fixed aggregates (one entry
//! per game and parameters, per caller and size, per optimum, per level):
//! memory does not grow with the number of records. A line that is not a
//! record is named (file and line), skipped and counted.

mod html;
mod ratings;
mod reading;
pub mod replays;
mod standings;
mod usage;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::records::Outcome;
pub use reading::Reading;
pub use standings::{CHESS_ANCHORS, Standing};

/// Longest line read as a record; a longer one is skipped as bad.
const MAX_LINE: usize = 4 << 20;
/// Bad lines named one by one; past this only counted.
const NAMED_BAD_LINES: u64 = 20;
/// Distinct illegal-move policies listed per game.
const MAX_POLICIES: usize = 8;
/// Bins of the optimality histogram over [0, 1].
pub const OPTIMALITY_BINS: usize = 20;
/// The table's columns.
const HEAD: [&str; 10] =
    ["game", "parameters", "caller", "games", "abandoned", "solved/won", "over optimum", "illegal/game", "optimality", "score"];
/// Said under the table: what "solved/won" is a share of.
const ABANDONED_NOTE: &str = "solved/won and the accuracy plots count the games not abandoned.";

/// What a record says that the report uses (other fields are skipped unread).
#[derive(Deserialize)]
struct Line<'a> {
    game: String,
    #[serde(default)]
    parameters: Value,
    #[serde(default)]
    caller: String,
    outcome: Outcome,
    #[serde(default)]
    moves: u32,
    #[serde(default)]
    illegal_moves: u32,
    #[serde(default)]
    optimum: Option<u32>,
    #[serde(default)]
    figures: Option<Figures>,
    /// A replay of a finished game with its published secret: the same game
    /// again, so counting it would count that game twice.
    #[serde(default)]
    replay: bool,
    /// Each seat's player and result (games with seats).
    #[serde(default, borrow)]
    seats: Vec<SeatLine<'a>>,
    /// What its moves cost, by player (the log's `usage`).
    #[serde(default, rename = "actions")]
    spent: usage::Spent,
    /// The illegal-move policy it was played under.
    #[serde(default)]
    illegal_move_policy: PolicyLine,
    /// The time per move it was played under (none: no clock).
    #[serde(default)]
    clock: Option<ClockLine>,
}

/// A record's clock, who ran out of it left unread.
#[derive(Deserialize)]
struct ClockLine {
    #[serde(default)]
    move_ms: u64,
    #[serde(default)]
    then: crate::config::OnTime,
}

/// A record's illegal-move policy, its counts left unread.
#[derive(Deserialize, Default)]
struct PolicyLine {
    #[serde(default)]
    attempts: u32,
    #[serde(default)]
    then: crate::config::AfterRefusals,
}

/// What the report reads of a seat: names borrowed from the line where
/// they need no unescaping (a million records, two seats each, allocate
/// nothing for them).
#[derive(Deserialize)]
struct SeatLine<'a> {
    #[serde(default)]
    kind: Option<crate::records::Holder>,
    #[serde(default, borrow)]
    player: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    result: Option<Outcome>,
}

#[derive(Deserialize, Default)]
struct Figures {
    #[serde(default)]
    optimality_mean: Option<f64>,
    #[serde(default)]
    optimality: Vec<f64>,
}

/// One row of the table: a game with one set of parameters, played by one caller.
#[derive(Default, Debug, Clone)]
pub struct Group {
    pub games: u64,
    pub solved: u64,
    pub won: u64,
    pub lost: u64,
    pub draw: u64,
    pub failed: u64,
    pub abandoned: u64,
    /// Sum and count of moves over the optimum, over solved games with a known optimum.
    pub over_optimum: (f64, u64),
    pub illegal: u64,
    /// Sum and count of battles' mean optimality.
    pub optimality: (f64, u64),
}

impl Group {
    /// Another agent's seat in a game between agents: a game of its own for
    /// that player, with its seat's result (the moves and figures are the
    /// creator's row's).
    fn add_seat(&mut self, outcome: Outcome) {
        self.games += 1;
        self.count(outcome);
    }

    fn count(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Solved => self.solved += 1,
            Outcome::Won => self.won += 1,
            Outcome::Lost => self.lost += 1,
            Outcome::Draw => self.draw += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Abandoned => self.abandoned += 1,
        }
    }

    fn add(&mut self, l: &Line<'_>) {
        self.games += 1;
        self.count(l.outcome);
        if let (Outcome::Solved, Some(o)) = (l.outcome, l.optimum) {
            self.over_optimum.0 += f64::from(l.moves) - f64::from(o);
            self.over_optimum.1 += 1;
        }
        self.illegal += u64::from(l.illegal_moves);
        if let Some(m) = l.figures.as_ref().and_then(|f| f.optimality_mean) {
            self.optimality.0 += m;
            self.optimality.1 += 1;
        }
    }

    /// Solved or won, of the games not abandoned (an abandoned game says
    /// nothing of how well its caller plays); None when all were.
    pub fn success(&self) -> Option<f64> {
        let played = self.games - self.abandoned;
        (played > 0).then(|| (self.solved + self.won) as f64 / played as f64)
    }

    /// Chess-style score (won 1, draw ½) over decided games, if any.
    pub fn score(&self) -> Option<f64> {
        let decided = self.won + self.lost + self.draw;
        (decided > 0).then(|| (self.won as f64 + self.draw as f64 / 2.0) / decided as f64)
    }
}

/// Games and successes (solved or won, or a chess score's sum).
#[derive(Default, Debug, Clone, Copy)]
pub struct Tally {
    pub games: u64,
    pub points: f64,
}

/// Tallies by size `n`.
pub type BySize = BTreeMap<u64, Tally>;

/// Everything read, aggregated.
#[derive(Default)]
pub struct Report {
    /// By game, then by parameters (sorted as values), then by caller.
    pub groups: BTreeMap<String, BTreeMap<Params, BTreeMap<String, Group>>>,
    /// Games with a size `n`: by game, caller, the other parameters (River
    /// Crossing's `k`: each its own series) and n.
    pub accuracy: BTreeMap<String, BTreeMap<String, BTreeMap<Params, BySize>>>,
    /// Solved games with an optimum: by game and optimum, the moves made.
    pub moves: BTreeMap<String, BTreeMap<u32, Tally>>,
    /// Games with an engine `level`: by game, caller and level, the score.
    pub levels: BTreeMap<String, BTreeMap<String, BTreeMap<u64, Tally>>>,
    /// Each scored decision's optimality, binned over [0, 1].
    pub optimality: [u64; OPTIMALITY_BINS],
    /// Who met whom, by game: the ratings' data (`standings`).
    pub results: BTreeMap<String, standings::Results>,
    /// Anchors the reader added or changed (`--anchor NAME=ELO`).
    pub anchors: Vec<(String, f64)>,
    pub records: u64,
    /// Replays read and left out of every figure.
    pub replays: u64,
    pub bad_lines: u64,
    /// Lines whose seal does not hold (`seal`), by flaw.
    pub unverified: reading::Unverified,
    /// What the moves cost, as the clients reported it.
    pub usage: usage::UsageTable,
    /// The illegal-move policies and clocks each game was played under, in words.
    pub policies: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Files that could not be read, with why.
    pub unreadable: Vec<String>,
}

/// A game's parameters, ordered as values (numbers by size), shown as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Params(pub Value);

impl Eq for Params {}

impl Ord for Params {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        cmp_values(&self.0, &other.0)
    }
}

impl PartialOrd for Params {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn cmp_values(a: &Value, b: &Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64().unwrap_or(0.0).total_cmp(&y.as_f64().unwrap_or(0.0)),
        // Every record's parameters are compared on the way down the map:
        // strings without making text of them.
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Object(x), Value::Object(y)) => {
            for ((ka, va), (kb, vb)) in x.iter().zip(y.iter()) {
                let o = ka.cmp(kb).then_with(|| cmp_values(va, vb));
                if o != Ordering::Equal {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        _ => a.to_string().cmp(&b.to_string()),
    }
}

impl std::fmt::Display for Params {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Value::Object(m) if m.is_empty() => f.write_str("-"),
            Value::Object(m) => {
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => format!("{k}={s}"),
                        v => format!("{k}={v}"),
                    })
                    .collect();
                f.write_str(&parts.join(" "))
            }
            Value::Null => f.write_str("-"),
            v => write!(f, "{v}"),
        }
    }
}

impl Report {
    /// Reads every file; bad lines, lines whose seal does not hold and
    /// unreadable files are said on `warn`.
    pub fn read(files: &[PathBuf], reading: &Reading<'_>, warn: &mut dyn FnMut(&str)) -> Report {
        let mut report = Report::default();
        for path in files {
            if let Err(e) = report.read_file(path, reading, warn) {
                let why = format!("{}: cannot be read: {e}", path.display());
                warn(&why);
                report.unreadable.push(why);
            }
        }
        if report.bad_lines > NAMED_BAD_LINES {
            warn(&format!("… {} bad lines in all, skipped", report.bad_lines));
        }
        if let Some(said) = report.unverified.said(reading.include_unverified) {
            warn(&said);
        }
        report
    }

    fn add(&mut self, mut l: Line<'_>) {
        self.records += 1;
        if l.replay {
            self.replays += 1;
            return;
        }
        self.usage.add(&l.game, std::mem::take(&mut l.spent));
        if self.policies.get(&l.game).is_none_or(|p| p.len() < MAX_POLICIES) {
            let PolicyLine { attempts, then } = l.illegal_move_policy;
            let policy = crate::config::IllegalMovePolicy { attempts, then };
            let clock =
                l.clock.as_ref().map_or(crate::config::Clock::default(), |c| crate::config::Clock { move_ms: c.move_ms, then: c.then });
            let rules = format!("illegal moves: {}; clock: {}", policy.in_words(), clock.in_words());
            self.policies.entry(l.game.clone()).or_default().insert(rules);
        }
        let by_params = self.groups.entry(l.game.clone()).or_default().entry(Params(l.parameters.clone())).or_default();
        by_params.entry(l.caller.clone()).or_default().add(&l);
        let joiners = l.seats.iter().filter(|s| s.kind == Some(crate::records::Holder::Agent));
        for seat in joiners {
            let Some(player) = seat.player.as_deref().filter(|p| *p != l.caller) else { continue };
            let outcome = seat.result.unwrap_or(Outcome::Abandoned);
            by_params.entry(player.to_string()).or_default().add_seat(outcome);
        }
        if let (Outcome::Solved, Some(o)) = (l.outcome, l.optimum) {
            let t = self.moves.entry(l.game.clone()).or_default().entry(o).or_default();
            t.games += 1;
            t.points += f64::from(l.moves);
        }
        let decided = matches!(l.outcome, Outcome::Won | Outcome::Lost | Outcome::Draw);
        if let Some(level) = l.parameters.get("level").and_then(Value::as_u64).filter(|_| decided) {
            let t = self.levels.entry(l.game.clone()).or_default().entry(l.caller.clone()).or_default().entry(level).or_default();
            t.games += 1;
            t.points += match l.outcome {
                Outcome::Won => 1.0,
                Outcome::Draw => 0.5,
                _ => 0.0,
            };
        }
        if !l.seats.is_empty() {
            let seats = l.seats.iter().filter_map(|s| Some((s.player.as_deref()?, s.result?)));
            standings::add_seats(self.results.entry(l.game.clone()).or_default(), seats);
        }
        for &x in l.figures.iter().flat_map(|f| &f.optimality) {
            let bin = ((x.clamp(0.0, 1.0) * OPTIMALITY_BINS as f64) as usize).min(OPTIMALITY_BINS - 1);
            self.optimality[bin] += 1;
        }
        // Last: the parameters besides `n` are moved into the series' key.
        let n = l.parameters.get("n").and_then(Value::as_u64).filter(|_| l.outcome != Outcome::Abandoned);
        if let (Some(n), Value::Object(mut rest)) = (n, std::mem::take(&mut l.parameters)) {
            rest.remove("n");
            let by_caller = self.accuracy.entry(l.game.clone()).or_default().entry(l.caller.clone()).or_default();
            let t = by_caller.entry(Params(Value::Object(rest))).or_default().entry(n).or_default();
            t.games += 1;
            t.points += f64::from(u8::from(matches!(l.outcome, Outcome::Solved | Outcome::Won)));
        }
    }

    /// The summary table, one row per game, parameters and caller.
    pub fn table(&self) -> String {
        let head = HEAD;
        let rows: Vec<[String; 10]> = self.rows().collect();
        let widths: Vec<usize> =
            (0..head.len()).map(|i| rows.iter().map(|r| r[i].chars().count()).chain([head[i].len()]).max().unwrap_or(0)).collect();
        let mut out = String::new();
        let mut line = |cells: &[&str]| {
            let parts: Vec<String> = cells
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, w))| if i < 3 { format!("{c:<w$}") } else { format!("{c:>w$}") })
                .collect();
            let _ = writeln!(out, "{}", parts.join("  ").trim_end());
        };
        line(&head);
        for r in &rows {
            line(&r.iter().map(String::as_str).collect::<Vec<_>>());
        }
        out.push_str(ABANDONED_NOTE);
        out.push('\n');
        out
    }

    /// The table's rows as text cells, in `HEAD`'s order.
    fn rows(&self) -> impl Iterator<Item = [String; 10]> + '_ {
        let rows = self.groups.iter().flat_map(|(game, groups)| {
            groups.iter().flat_map(move |(params, callers)| callers.iter().map(move |(caller, g)| (game, params, caller, g)))
        });
        rows.map(|(game, params, caller, g)| {
            [
                game.clone(),
                params.to_string(),
                if caller.is_empty() { "-".into() } else { caller.clone() },
                g.games.to_string(),
                g.abandoned.to_string(),
                g.success().map_or("-".into(), |s| format!("{:.1}%", 100.0 * s)),
                mean(g.over_optimum).map_or("-".into(), |m| format!("{m:+.2}")),
                format!("{:.2}", g.illegal as f64 / g.games as f64),
                mean(g.optimality).map_or("-".into(), |m| format!("{m:.3}")),
                g.score().map_or("-".into(), |s| format!("{s:.2}")),
            ]
        })
    }

    /// Each puzzle's accuracy series: one per caller and other parameters,
    /// named so (`model-a`, `model-a k=3`), with its tallies by size.
    pub fn accuracy_series(&self) -> impl Iterator<Item = (&str, Vec<(String, &BySize)>)> {
        self.accuracy.iter().map(|(game, by_caller)| {
            let series = by_caller
                .iter()
                .flat_map(|(caller, by_rest)| {
                    by_rest.iter().map(move |(rest, sizes)| {
                        let caller = if caller.is_empty() { "-" } else { caller.as_str() };
                        let name = match rest.to_string().as_str() {
                            "-" => caller.to_string(),
                            rest => format!("{caller} {rest}"),
                        };
                        (name, sizes)
                    })
                })
                .collect();
            (game.as_str(), series)
        })
    }

    /// Each game's illegal-move policy (or policies, when its games were
    /// played under several), one line a game.
    pub fn policies_text(&self) -> String {
        let mut s = String::new();
        for (game, policies) in &self.policies {
            let list: Vec<&str> = policies.iter().map(String::as_str).collect();
            let _ = writeln!(s, "rules, {game}: {}", list.join(" | "));
        }
        s
    }

    /// The closing line: records read, and what was skipped.
    pub fn totals(&self) -> String {
        let mut s = format!("{} records", self.records);
        if self.replays > 0 {
            let noun = if self.replays == 1 { "replay" } else { "replays" };
            s.push_str(&format!(", {} {noun} left out", self.replays));
        }
        if self.bad_lines > 0 {
            s.push_str(&format!(", {} bad lines skipped", self.bad_lines));
        }
        if self.unverified.left_out > 0 {
            s.push_str(&format!(", {} lines left out whose seal does not hold", self.unverified.left_out));
        }
        if !self.unreadable.is_empty() {
            s.push_str(&format!(", {} files could not be read", self.unreadable.len()));
        }
        s
    }

    /// The HTML page: the table and the plots, self-contained.
    pub fn html(&self) -> Result<String, String> {
        html::page(self)
    }
}

fn mean((sum, n): (f64, u64)) -> Option<f64> {
    (n > 0).then(|| sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(text: &str) -> (Report, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, text).unwrap();
        let mut warnings = Vec::new();
        let reading = Reading { trusted: &crate::seal::Trusted::default(), include_unverified: true };
        let r = Report::read(&[path, dir.path().join("missing.jsonl")], &reading, &mut |w| warnings.push(w.to_string()));
        (r, warnings)
    }

    #[test]
    fn groups_sizes_and_bad_lines() {
        let text = [
            r#"{"game":"hanoi","parameters":{"n":3},"caller":"a","outcome":"solved","moves":9,"optimum":7,"illegal_moves":1}"#,
            r#"{"game":"hanoi","parameters":{"n":10},"caller":"a","outcome":"failed","moves":2,"optimum":1023}"#,
            "not json",
            r#"{"game":"hanoi","parameters":{"n":3},"caller":"b","outcome":"solved","moves":7,"optimum":7}"#,
            "",
            r#"{"game":"chess","parameters":{"level":3},"caller":"a","outcome":"draw"}"#,
            r#"{"game":"showdown","parameters":{},"outcome":"won","figures":{"optimality_mean":0.5,"optimality":[0.0,0.5,1.0]}}"#,
            r#"{"game":"x","outcome":"exploded"}"#,
            r#"{"game":"hanoi","parameters":{"n":3},"caller":"a","outcome":"solved","moves":7,"optimum":7,"replay":true}"#,
            r#"{"game":"hanoi","parameters":{"n":10},"caller":"a","outcome":"abandoned"}"#,
            r#"{"game":"hanoi","parameters":{"n":10},"caller":"b","outcome":"abandoned"}"#,
            r#"{"game":"river_crossing","parameters":{"n":3,"k":2},"caller":"a","outcome":"solved"}"#,
            r#"{"game":"river_crossing","parameters":{"k":3,"n":3},"caller":"a","outcome":"failed"}"#,
        ]
        .join("\n");
        let (r, warnings) = report(&text);
        assert_eq!((r.records, r.replays, r.bad_lines, r.unreadable.len()), (10, 1, 2, 1));
        assert!(r.totals().starts_with("10 records, 1 replay left out, 2 bad lines"), "{}", r.totals());
        assert!(warnings[0].ends_with("r.jsonl:3: not a result record (expected ident at line 1 column 2); skipped"), "{warnings:?}");
        assert!(warnings[1].contains("r.jsonl:8:") && warnings[2].contains("missing.jsonl: cannot be read"), "{warnings:?}");
        let n3a = &r.groups["hanoi"][&Params(serde_json::json!({"n":3}))]["a"];
        assert_eq!((n3a.games, n3a.solved, n3a.illegal, mean(n3a.over_optimum)), (1, 1, 1, Some(2.0)));
        let n3b = &r.groups["hanoi"][&Params(serde_json::json!({"n":3}))]["b"];
        assert_eq!((n3b.games, n3b.solved, mean(n3b.over_optimum)), (1, 1, Some(0.0)));
        let none = Params(serde_json::json!({}));
        let sizes: Vec<u64> = r.accuracy["hanoi"]["a"][&none].keys().copied().collect();
        assert_eq!(sizes, [3, 10], "sizes sort as numbers");
        assert_eq!(r.accuracy["hanoi"]["a"][&none][&10].games, 1, "the abandoned game is left out of accuracy");
        assert!(!r.accuracy["hanoi"]["b"][&none].contains_key(&10));
        let river: Vec<String> = r.accuracy_series().find(|(g, _)| *g == "river_crossing").unwrap().1.into_iter().map(|s| s.0).collect();
        assert_eq!(river, ["a k=2", "a k=3"], "each k its own series");
        assert_eq!(r.levels["chess"]["a"][&3].points, 0.5);
        assert_eq!(r.optimality.iter().sum::<u64>(), 3);
        assert_eq!((r.optimality[0], r.optimality[10], r.optimality[OPTIMALITY_BINS - 1]), (1, 1, 1));
        let table = r.table();
        let row = |params: &str, caller: &str| -> Vec<String> {
            let line =
                table.lines().find(|l| l.starts_with("hanoi") && l.contains(&format!("{params} ")) && l.contains(&format!(" {caller} ")));
            line.unwrap_or_else(|| panic!("no row {params} {caller}: {table}")).split_whitespace().map(String::from).collect()
        };
        let chess: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(chess[..4], ["chess", "level=3", "a", "1"], "{table}");
        assert_eq!(row("n=3", "a")[3..7], ["1", "0", "100.0%", "+2.00"], "{table}");
        assert_eq!(row("n=3", "b")[3..7], ["1", "0", "100.0%", "+0.00"], "{table}");
        assert_eq!(row("n=10", "a")[3..6], ["2", "1", "0.0%"], "the abandoned game is its own column: {table}");
        assert_eq!(row("n=10", "b")[3..6], ["1", "1", "-"], "all abandoned: no share: {table}");
        assert!(table.find("n=3").unwrap() < table.find("n=10").unwrap(), "{table}");
        assert!(table.ends_with(&format!("{ABANDONED_NOTE}\n")), "{table}");
    }

    #[test]
    fn a_line_too_long_is_skipped_whole() {
        let long = format!("{{\"game\":\"{}\"}}\n", "x".repeat(MAX_LINE + 10));
        let ok = r#"{"game":"hanoi","parameters":{"n":1},"outcome":"solved"}"#;
        let (r, warnings) = report(&format!("{long}{ok}\n"));
        assert_eq!((r.records, r.bad_lines), (1, 1), "{warnings:?}");
        assert!(warnings[0].contains(":1: not a result record (longer than 4 MiB)"));
    }
}
