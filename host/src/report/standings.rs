//! The report's standings: who beat whom, as Bradley–Terry ratings on the
//! Elo scale with bootstrap intervals (`ratings`), per game and across
//! games; and for puzzles, accuracy per size with Wilson intervals and the
//! size where it first falls below half (the paper's collapse point).
//!
//! Players are each seat's player in a record (`seats`): a caller by its
//! name, a built-in opponent by its name and strength (`chess-engine/5`).
//! The chess engine's levels enter as anchors at their Elo against
//! Stockfish (docs/benchmarks.md, "Engine strength"), so a chess rating is
//! on that scale; other built-in opponents are fitted from their games.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::ratings::{self, Interval, Meeting};
use super::{Report, Tally};
use crate::records::Outcome;

/// Bootstrap resamples per fit (`RATING_NOTE` says it): enough for stable 2.5 % and 97.5 % points.
const ROUNDS: usize = 200;
/// The bootstrap's seed: the same records give the same intervals.
const SEED: u64 = 0x5eed;

/// The chess engine's levels with a measured Elo (docs/benchmarks.md,
/// "Engine strength"): level 10 against Stockfish 2000 with the current
/// engine; the others from the table of levels 1–10 (an earlier engine,
/// so they rather understate it). Levels measured only as "below" are not anchors.
pub const CHESS_ANCHORS: [(&str, f64); 6] = [
    ("chess-engine/4", 1070.0),
    ("chess-engine/5", 1261.0),
    ("chess-engine/7", 1298.0),
    ("chess-engine/8", 1551.0),
    ("chess-engine/9", 1800.0),
    ("chess-engine/10", 2095.0),
];

/// Results between players of one game: by first and second player in
/// name order, how many the first won, were drawn, the second won.
#[derive(Default, Debug)]
pub struct Results(BTreeMap<String, BTreeMap<String, [u64; 3]>>);

impl Results {
    /// The cell of `first` against `second` (names are copied only the
    /// first time a pair meets: a million records allocate nothing more).
    fn cell(&mut self, first: &str, second: &str) -> &mut [u64; 3] {
        if !self.0.contains_key(first) {
            self.0.insert(first.to_string(), BTreeMap::new());
        }
        let row = self.0.get_mut(first).expect("inserted above");
        if !row.contains_key(second) {
            row.insert(second.to_string(), [0; 3]);
        }
        row.get_mut(second).expect("inserted above")
    }

    /// Every pair that met, with its cell.
    fn pairs(&self) -> impl Iterator<Item = (&str, &str, &[u64; 3])> {
        self.0.iter().flat_map(|(a, row)| row.iter().map(move |(b, cell)| (a.as_str(), b.as_str(), cell)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Adds a record's seats (each seat's player and result) to `results`:
/// every two seats with different players and a result each met once (won
/// beats drawn beats lost).
pub fn add_seats<'a>(results: &mut Results, seats: impl Iterator<Item = (&'a str, Outcome)>) {
    let rank = |o: Outcome| match o {
        Outcome::Won | Outcome::Solved => Some(2),
        Outcome::Draw => Some(1),
        Outcome::Lost | Outcome::Failed => Some(0),
        Outcome::Abandoned => None,
    };
    let placed: Vec<(&str, u8)> = seats.filter_map(|(player, result)| Some((player, rank(result)?))).collect();
    for (i, &(p, rp)) in placed.iter().enumerate() {
        for &(q, rq) in &placed[i + 1..] {
            if p == q {
                continue;
            }
            let (first, second, r1, r2) = if p < q { (p, q, rp, rq) } else { (q, p, rq, rp) };
            let cell = results.cell(first, second);
            cell[match r1.cmp(&r2) {
                std::cmp::Ordering::Greater => 0,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Less => 2,
            }] += 1;
        }
    }
}

/// One player's line in a fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub player: String,
    pub games: u64,
    /// Points (won 1, drawn ½) per game.
    pub score: f64,
    pub rating: Interval,
    pub anchored: bool,
}

/// A fit of one game's results (or all games'), best first.
pub fn fit(results: &Results, anchors: &BTreeMap<String, f64>) -> Vec<Standing> {
    let mut names: Vec<&str> = results.pairs().flat_map(|(a, b, _)| [a, b]).collect();
    names.sort_unstable();
    names.dedup();
    let index = |name: &str| names.binary_search(&name).unwrap_or_default();
    let meetings: Vec<Meeting> = results
        .pairs()
        .map(|(a, b, [a_won, drawn, b_won])| Meeting { a: index(a), b: index(b), a_won: *a_won, drawn: *drawn, b_won: *b_won })
        .collect();
    let pinned: Vec<(usize, f64)> = names.iter().enumerate().filter_map(|(i, n)| Some((i, *anchors.get(*n)?))).collect();
    let fitted = ratings::with_intervals(names.len(), &meetings, &pinned, ROUNDS, SEED);
    let mut games = vec![0u64; names.len()];
    let mut points = vec![0f64; names.len()];
    for m in &meetings {
        let n = m.a_won + m.drawn + m.b_won;
        games[m.a] += n;
        games[m.b] += n;
        points[m.a] += m.a_won as f64 + m.drawn as f64 / 2.0;
        points[m.b] += m.b_won as f64 + m.drawn as f64 / 2.0;
    }
    let mut standings: Vec<Standing> = names
        .iter()
        .enumerate()
        .map(|(i, name)| Standing {
            player: name.to_string(),
            games: games[i],
            score: points[i] / games[i].max(1) as f64,
            rating: fitted[i],
            anchored: anchors.contains_key(*name),
        })
        .collect();
    standings.sort_by(|a, b| b.rating.rating.total_cmp(&a.rating.rating).then_with(|| a.player.cmp(&b.player)));
    standings
}

impl Report {
    /// The anchors in force: the chess engine's levels, then the caller's own.
    pub fn anchors(&self) -> BTreeMap<String, f64> {
        let mut anchors: BTreeMap<String, f64> = CHESS_ANCHORS.iter().map(|(n, e)| (n.to_string(), *e)).collect();
        anchors.extend(self.anchors.iter().cloned());
        anchors
    }

    /// Every fit the report shows: one per game with results between
    /// players, and one across them all when there are several.
    pub fn fits(&self) -> Vec<(String, Vec<Standing>)> {
        let anchors = self.anchors();
        let mut fits: Vec<(String, Vec<Standing>)> =
            self.results.iter().filter(|(_, r)| !r.is_empty()).map(|(game, r)| (game.clone(), fit(r, &anchors))).collect();
        if fits.len() > 1 {
            let mut all = Results::default();
            for (a, b, cell) in self.results.values().flat_map(Results::pairs) {
                let sum = all.cell(a, b);
                (0..3).for_each(|i| sum[i] += cell[i]);
            }
            fits.push(("all games".into(), fit(&all, &anchors)));
        }
        fits
    }

    /// The ratings: a table per fit, rows in `RATING_HEAD`'s order.
    pub fn rating_tables(&self) -> Vec<(String, Vec<[String; 5]>)> {
        let row = |s: &Standing| {
            let player = if s.anchored { format!("{} *", s.player) } else { s.player.clone() };
            let interval = if s.anchored { "-".into() } else { format!("{:.0} to {:.0}", s.rating.low, s.rating.high) };
            [player, s.games.to_string(), format!("{:.1}%", 100.0 * s.score), format!("{:.0}", s.rating.rating), interval]
        };
        self.fits().into_iter().map(|(name, standings)| (name, standings.iter().map(row).collect())).collect()
    }

    /// Puzzle accuracy per size and caller, with Wilson intervals, and each
    /// caller's collapse point: a table per game, in `ACCURACY_HEAD`'s order.
    pub fn accuracy_tables(&self) -> Vec<(String, Vec<[String; 5]>)> {
        let mut tables = Vec::new();
        for (game, series) in self.accuracy_series() {
            let mut rows = Vec::new();
            for (caller, sizes) in series {
                for (n, t) in sizes {
                    let solved = t.points.round() as u64;
                    let interval =
                        ratings::wilson(solved, t.games).map_or("-".into(), |(lo, hi)| format!("{:.0}–{:.0}%", 100.0 * lo, 100.0 * hi));
                    let share = format!("{:.0}%", 100.0 * t.points / t.games.max(1) as f64);
                    rows.push([caller.to_string(), n.to_string(), format!("{solved}/{}", t.games), share, interval]);
                }
                let collapse = collapse_point(sizes).map_or("none".into(), |n| format!("n={n}"));
                rows.push([caller.to_string(), "collapse".into(), String::new(), String::new(), collapse]);
            }
            tables.push((game.to_string(), rows));
        }
        tables
    }

    /// The ratings as text, under their note, then a blank line (none: no ratings).
    pub fn ratings_text(&self) -> String {
        section(RATING_NOTE, &RATING_HEAD, self.rating_tables())
    }

    /// The accuracy by size as text, under its note (none: no puzzles).
    pub fn accuracy_text(&self) -> String {
        section(ACCURACY_NOTE, &ACCURACY_HEAD, self.accuracy_tables())
    }
}

/// A note and its tables, each under its name, then a blank line.
fn section(note: &str, head: &[&str; 5], tables: Vec<(String, Vec<[String; 5]>)>) -> String {
    let mut out = String::new();
    if tables.is_empty() {
        return out;
    }
    let _ = writeln!(out, "{note}");
    for (name, rows) in tables {
        let _ = writeln!(out, "\n{name}");
        out.push_str(&columns(head, &rows, 1));
    }
    out.push('\n');
    out
}

/// The ratings tables' columns, and what they are.
pub const RATING_HEAD: [&str; 5] = ["player", "games", "score", "rating", "95 % interval"];
pub const RATING_NOTE: &str = "Ratings: Bradley–Terry on the Elo scale, draws as halves, 95 % intervals from 200 bootstrap \
                               resamples; * = an anchor, fixed at its measured Elo.";
/// The accuracy tables' columns, and what they are.
pub const ACCURACY_HEAD: [&str; 5] = ["caller", "n", "solved", "accuracy", "95 % interval"];
pub const ACCURACY_NOTE: &str = "Accuracy by size: solved of the games not abandoned, 95 % Wilson intervals; \
                                 collapse = the first size where accuracy is below 50 %.";

/// The first size whose accuracy is below half, of one caller's tallies.
pub fn collapse_point(sizes: &BTreeMap<u64, Tally>) -> Option<u64> {
    let rows: Vec<(u64, u64, u64)> = sizes.iter().map(|(n, t)| (*n, t.points.round() as u64, t.games)).collect();
    ratings::collapse_point(&rows)
}

/// A text table: the first `left` columns left-aligned, the rest right.
fn columns<const N: usize>(head: &[&str; N], rows: &[[String; N]], left: usize) -> String {
    let widths: Vec<usize> =
        (0..N).map(|i| rows.iter().map(|r| r[i].chars().count()).chain([head[i].chars().count()]).max().unwrap_or(0)).collect();
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| if i < left { format!("{c:<w$}") } else { format!("{c:>w$}") })
            .collect();
        let _ = writeln!(out, "  {}", parts.join("  ").trim_end());
    };
    line(head.to_vec());
    for r in rows {
        line(r.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seat(player: &str, result: Outcome) -> (&str, Outcome) {
        (player, result)
    }

    #[test]
    fn seats_meet_once_per_pair_in_name_order() {
        let mut r = Results::default();
        add_seats(&mut r, [seat("b", Outcome::Won), seat("a", Outcome::Lost)].into_iter());
        add_seats(&mut r, [seat("a", Outcome::Draw), seat("b", Outcome::Draw)].into_iter());
        add_seats(&mut r, [seat("a", Outcome::Won), seat("a", Outcome::Lost)].into_iter());
        add_seats(&mut r, [seat("a", Outcome::Abandoned), seat("b", Outcome::Won)].into_iter());
        let pairs: Vec<_> = r.pairs().collect();
        assert_eq!(pairs, [("a", "b", &[0, 1, 1])], "self-play and unfinished games are no meeting");
    }

    #[test]
    fn an_agent_rates_on_the_anchors_scale() {
        // `m` scores half against level 5 (1261) and 75 % against level 4
        // (1070), as a player of about 1261 would.
        let mut r = Results::default();
        *r.cell("chess-engine/5", "m") = [10, 0, 10];
        *r.cell("chess-engine/4", "m") = [5, 0, 15];
        let anchors = CHESS_ANCHORS.iter().map(|(n, e)| (n.to_string(), *e)).collect();
        let s = fit(&r, &anchors);
        let m = s.iter().find(|s| s.player == "m").unwrap();
        assert!((m.rating.rating - 1261.0).abs() < 60.0, "{s:?}");
        assert!(m.rating.low < m.rating.rating && m.rating.rating < m.rating.high);
        assert!(s.iter().filter(|s| s.anchored).all(|s| s.rating.low == s.rating.high));
        assert_eq!((m.games, m.score), (40, 0.625));
    }
}
