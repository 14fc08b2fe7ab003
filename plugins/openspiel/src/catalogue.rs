//! The games OpenSpiel plays by name with their default parameters, in turns
//! (`games.json`, written by `bridge/catalogue.py` from the pinned OpenSpiel
//! and embedded, so listing them needs no Python).

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
pub struct Catalogue {
    pub open_spiel: String,
    pub games: Vec<Entry>,
    /// The games OpenSpiel registers that are not offered, and why.
    #[serde(default)]
    pub left_out: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize, Clone)]
pub struct Entry {
    pub name: String,
    pub title: String,
    pub players: u32,
    pub min_players: u32,
    pub max_players: u32,
    pub hidden: bool,
    pub chance: bool,
    pub simultaneous: bool,
    pub utility: String,
    /// Defaults by name: numbers, booleans or strings.
    pub parameters: serde_json::Map<String, Value>,
    pub rules: String,
    /// Its chance is the engine's own generator (`rng_seed`, set from the
    /// game's seed), not chance nodes.
    #[serde(default)]
    pub sampled: bool,
    /// OpenSpiel's IS-MCTS plays it (it samples the states a player's
    /// information state allows): the search opponent of games that hide.
    #[serde(default)]
    pub ismcts: bool,
}

pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| serde_json::from_str(include_str!("../games.json")).expect("games.json is the catalogue"))
}

/// The game named `name`, or why there is none (with the nearest names).
pub fn game(name: &str) -> Result<&'static Entry, String> {
    let games = &catalogue().games;
    if let Some(e) = games.iter().find(|e| e.name == name) {
        return Ok(e);
    }
    if let Some(why) = catalogue().left_out.get(name) {
        return Err(format!("OpenSpiel's {name} is left out here: {why}"));
    }
    let near: Vec<&str> =
        games.iter().filter(|e| e.name.contains(name) || name.contains(&e.name)).map(|e| e.name.as_str()).take(8).collect();
    let hint = if near.is_empty() { "see `openspiel_list_games`".to_string() } else { format!("did you mean {}?", near.join(", ")) };
    Err(format!("OpenSpiel has no game {name:?} here; {hint}"))
}

impl Entry {
    /// `name=value` for each default, as the listing shows them.
    pub fn defaults(&self) -> Vec<String> {
        self.parameters.iter().map(|(k, v)| format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), String::from))).collect()
    }

    /// The agent's parameters as OpenSpiel takes them: each name known to
    /// the game, each value read as its default's type.
    pub fn parameters(&self, given: &[(String, String)]) -> Result<serde_json::Map<String, Value>, String> {
        let mut out = serde_json::Map::new();
        for (name, text) in given {
            let Some(default) = self.parameters.get(name) else {
                let known = if self.parameters.is_empty() {
                    "it has none".to_string()
                } else {
                    format!("its parameters: {}", self.defaults().join(", "))
                };
                return Err(format!("{} has no parameter {name:?}; {known}", self.name));
            };
            let bad = |kind: &str| format!("parameter {name} takes {kind}; {text:?} is not one (its default: {default})");
            let value = match default {
                Value::Bool(_) => Value::Bool(text.trim().parse().map_err(|_| bad("true or false"))?),
                Value::Number(n) if n.is_i64() || n.is_u64() => Value::from(text.trim().parse::<i64>().map_err(|_| bad("an integer"))?),
                Value::Number(_) => {
                    let f: f64 = text.trim().parse().map_err(|_| bad("a number"))?;
                    serde_json::Number::from_f64(f).map(Value::Number).ok_or_else(|| bad("a finite number"))?
                }
                _ => Value::String(text.clone()),
            };
            out.insert(name.clone(), value);
        }
        Ok(out)
    }

    /// The seats with these parameters: `players` where the game takes it.
    pub fn seats_with(&self, parameters: &serde_json::Map<String, Value>) -> u32 {
        parameters.get("players").and_then(Value::as_u64).map_or(self.players, |n| n as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_holds_the_games_evaluators_use() {
        for name in ["tic_tac_toe", "connect_four", "go", "kuhn_poker", "leduc_poker", "hanabi", "bridge", "gin_rummy", "2048", "blackjack"]
        {
            assert!(game(name).is_ok(), "{name}");
        }
        assert!(catalogue().games.len() >= 100);
        assert!(game("kuhn_poker").unwrap().hidden && !game("go").unwrap().hidden);
    }

    #[test]
    fn parameters_take_their_defaults_types_and_unknown_ones_are_named() {
        let go = game("go").unwrap();
        let p = go.parameters(&[("board_size".into(), "9".into()), ("komi".into(), "6.5".into())]).unwrap();
        assert_eq!(p["board_size"], Value::from(9));
        assert_eq!(p["komi"], Value::from(6.5));
        let e = go.parameters(&[("size".into(), "9".into())]).unwrap_err();
        assert!(e.contains("board_size=19"), "{e}");
        assert!(go.parameters(&[("board_size".into(), "nine".into())]).unwrap_err().contains("an integer"));
        assert!(game("tic-tac-toe").is_err());
    }

    #[test]
    fn sampled_games_are_offered_and_left_out_ones_say_why() {
        for name in ["tarok", "negotiation", "stones_and_gems", "bridge_uncontested_bidding"] {
            let e = game(name).unwrap();
            assert!(e.sampled && !e.parameters.contains_key("rng_seed"), "{name}: the seed is the game's, not a parameter");
        }
        assert!(game("mfg_garnet").err().unwrap().contains("left out here: a mean-field game"));
        assert!(game("bridge").unwrap().rules.contains("thirteen tricks"));
    }
}
