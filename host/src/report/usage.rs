//! What the moves cost, as the players' clients reported it (each move's
//! optional `usage`: tokens in and out, cost), summed per game and player,
//! with the means per move and per game. Read from a record's `actions`
//! without keeping them: each action is looked at once, and only its
//! player and usage are read.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde::de::{SeqAccess, Visitor};

use crate::records::Usage;

/// One player's usage in one record.
#[derive(Default, Clone, Copy, Debug)]
pub struct Totals {
    /// Games with any usage reported.
    pub games: u64,
    /// Moves with usage reported.
    pub moves: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost: f64,
}

impl Totals {
    fn add(&mut self, u: &Usage) {
        self.moves += 1;
        self.input_tokens += u.input_tokens.unwrap_or(0);
        self.output_tokens += u.output_tokens.unwrap_or(0);
        self.cost += u.cost.unwrap_or(0.0);
    }

    fn merge(&mut self, other: &Totals) {
        self.games += other.games;
        self.moves += other.moves;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost += other.cost;
    }
}

/// A record's usage by player, read from its `actions`.
#[derive(Default)]
pub(super) struct Spent(pub Vec<(String, Totals)>);

#[derive(Deserialize)]
struct ActionUsage<'a> {
    #[serde(default, borrow)]
    by: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Usage>,
}

impl<'de> Deserialize<'de> for Spent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Spent, D::Error> {
        struct Each;
        impl<'de> Visitor<'de> for Each {
            type Value = Spent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a record's actions")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Spent, A::Error> {
                let mut spent = Spent::default();
                while let Some(action) = seq.next_element::<ActionUsage<'de>>()? {
                    let (Some(usage), Some(by)) = (action.usage, action.by) else { continue };
                    match spent.0.iter_mut().find(|(p, _)| *p == by) {
                        Some((_, t)) => t.add(&usage),
                        None => {
                            let mut t = Totals { games: 1, ..Totals::default() };
                            t.add(&usage);
                            spent.0.push((by.into_owned(), t));
                        }
                    }
                }
                Ok(spent)
            }
        }
        d.deserialize_seq(Each)
    }
}

/// Usage by game, then player.
#[derive(Default, Debug)]
pub struct UsageTable(pub BTreeMap<String, BTreeMap<String, Totals>>);

impl UsageTable {
    pub(super) fn add(&mut self, game: &str, spent: Spent) {
        for (player, totals) in spent.0 {
            self.0.entry(game.to_string()).or_default().entry(player).or_default().merge(&totals);
        }
    }

    /// The table, or nothing when no move reported its usage.
    pub fn text(&self) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "Usage, as the players' clients reported it (each move's `usage`):\n\
             game             player                games  moves  input tokens  output tokens      cost  tokens/move  cost/game\n",
        );
        for (game, players) in &self.0 {
            for (player, t) in players {
                let per_move = (t.input_tokens + t.output_tokens) as f64 / t.moves.max(1) as f64;
                let per_game = t.cost / t.games.max(1) as f64;
                let _ = writeln!(
                    s,
                    "{game:<16} {player:<20} {:>6} {:>6} {:>13} {:>14} {:>9.4} {per_move:>12.0} {per_game:>10.4}",
                    t.games, t.moves, t.input_tokens, t.output_tokens, t.cost
                );
            }
        }
        s
    }
}
