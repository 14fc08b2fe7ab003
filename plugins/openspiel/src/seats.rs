//! Who plays each seat: the agents (the creator, joiners), seats still open
//! for a joiner, and the built-in opponents the bridge plays.

use serde::{Deserialize, Serialize};

use crate::catalogue::Entry;

/// MCTS strengths: simulations a move (the bridge's `MCTS_SIMULATIONS`).
pub const MCTS_LEVELS: u32 = 5;

/// The games whose equilibrium the bridge computes (CFR+).
pub const CFR_GAMES: [&str; 2] = ["kuhn_poker", "leduc_poker"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Seat {
    /// An agent, as `host.caller` names it.
    Agent(String),
    /// Waiting for an agent to join: played by nobody until then.
    Open,
    Random,
    Mcts(u32),
    /// Information-set MCTS: searches the states the seat's own
    /// information allows, never the true one.
    Ismcts(u32),
    Cfr,
}

impl Seat {
    /// How the bridge names the seat's player (`agent` for agents and open seats).
    pub fn bridge_name(&self) -> String {
        match self {
            Seat::Agent(_) | Seat::Open => "agent".into(),
            Seat::Random => "random".into(),
            Seat::Mcts(level) => format!("mcts:{level}"),
            Seat::Ismcts(level) => format!("ismcts:{level}"),
            Seat::Cfr => "cfr".into(),
        }
    }

    /// The built-in opponent's name with its strength, for records.
    pub fn builtin(&self) -> Option<String> {
        match self {
            Seat::Random => Some("openspiel-random".into()),
            Seat::Mcts(level) => Some(format!("openspiel-mcts/{level}")),
            Seat::Ismcts(level) => Some(format!("openspiel-ismcts/{level}")),
            Seat::Cfr => Some("openspiel-cfr".into()),
            Seat::Agent(_) | Seat::Open => None,
        }
    }

    /// How the seat reads for `caller`.
    pub fn shown(&self, caller: &str) -> String {
        match self {
            Seat::Agent(c) if c == caller => "you".into(),
            Seat::Agent(_) => "agent".into(),
            Seat::Open => "open".into(),
            Seat::Random => "random".into(),
            Seat::Mcts(level) => format!("mcts/{level}"),
            Seat::Ismcts(level) => format!("ismcts/{level}"),
            Seat::Cfr => "cfr".into(),
        }
    }
}

/// The seats of a new game: the creator at `mine`, the opponents named in
/// seat order at the others (`random` where none is named).
pub fn seat_table(game: &Entry, count: u32, mine: u32, creator: &str, opponents: &[String]) -> Result<Vec<Seat>, String> {
    if mine >= count {
        return Err(format!("{} has seats 0 to {}; seat {mine} is not one", game.name, count - 1));
    }
    let others = count as usize - 1;
    if opponents.len() > others {
        return Err(format!(
            "{} has {count} seats, so {others} opponent{} at most; {} were named",
            game.name,
            if others == 1 { "" } else { "s" },
            opponents.len()
        ));
    }
    let mut named = opponents.iter();
    (0..count)
        .map(|seat| match seat == mine {
            true => Ok(Seat::Agent(creator.to_string())),
            false => named.next().map_or(Ok(Seat::Random), |o| opponent(game, o)),
        })
        .collect()
}

fn opponent(game: &Entry, name: &str) -> Result<Seat, String> {
    let name = name.trim().to_ascii_lowercase();
    let (kind, level) = match name.split_once(['/', ':']) {
        Some((kind, level)) => (kind, Some(level)),
        None => (name.as_str(), None),
    };
    match (kind, level) {
        ("random", None) => Ok(Seat::Random),
        ("agent", None) => Ok(Seat::Open),
        ("mcts", _) if game.hidden => Err(format!(
            "mcts searches the true state, which {} hides from its players; choose random{}{} or agent",
            game.name,
            if game.ismcts { ", ismcts (which searches only what its seat knows)" } else { "" },
            if CFR_GAMES.contains(&game.name.as_str()) { ", cfr" } else { "" }
        )),
        ("mcts", _) if game.sampled => Err(format!(
            "mcts would draw {}'s chance from the game's own generator and change the game it searches; choose random or agent",
            game.name
        )),
        ("mcts", level) => level_of("mcts", level).map(Seat::Mcts),
        ("ismcts", _) if !game.hidden => Err(format!("{} hides nothing: its search opponent is mcts", game.name)),
        ("ismcts", _) if !game.ismcts => Err(format!(
            "OpenSpiel's IS-MCTS cannot play {}: it cannot sample the states a seat's information allows there; choose random{} or agent",
            game.name,
            if CFR_GAMES.contains(&game.name.as_str()) { ", cfr" } else { "" }
        )),
        ("ismcts", level) => level_of("ismcts", level).map(Seat::Ismcts),
        ("cfr", None) if CFR_GAMES.contains(&game.name.as_str()) => Ok(Seat::Cfr),
        ("cfr", None) => Err(format!("cfr plays {} only; {} has no equilibrium opponent here", CFR_GAMES.join(" and "), game.name)),
        _ => Err(format!(
            "unknown opponent {name:?}: random, mcts (or mcts/1 to mcts/{MCTS_LEVELS}), ismcts (or ismcts/1 to \
             ismcts/{MCTS_LEVELS}), cfr or agent"
        )),
    }
}

/// A search's level: 3 unless named.
fn level_of(kind: &str, level: Option<&str>) -> Result<u32, String> {
    match level.map(str::parse::<u32>) {
        None => Ok(3),
        Some(Ok(n)) if (1..=MCTS_LEVELS).contains(&n) => Ok(n),
        Some(_) => Err(format!("{kind} levels are 1 to {MCTS_LEVELS}; {:?} is not one", level.unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::game;

    #[test]
    fn opponents_fill_the_other_seats_in_order() {
        let hanabi = game("hanabi").unwrap();
        let seats = seat_table(hanabi, 4, 1, "me", &["agent".into(), "random".into()]).unwrap();
        assert_eq!(seats, vec![Seat::Open, Seat::Agent("me".into()), Seat::Random, Seat::Random]);
        let c4 = game("connect_four").unwrap();
        assert_eq!(seat_table(c4, 2, 0, "me", &["mcts/5".into()]).unwrap()[1], Seat::Mcts(5));
        assert!(seat_table(c4, 2, 2, "me", &[]).is_err());
        assert!(seat_table(c4, 2, 0, "me", &["random".into(), "random".into()]).unwrap_err().contains("1 opponent at most"));
    }

    #[test]
    fn search_that_would_see_hidden_cards_is_refused() {
        let kuhn = game("kuhn_poker").unwrap();
        assert!(seat_table(kuhn, 2, 0, "me", &["mcts".into()]).unwrap_err().contains("hides"));
        assert_eq!(seat_table(kuhn, 2, 0, "me", &["cfr".into()]).unwrap()[1], Seat::Cfr);
        assert!(seat_table(game("go").unwrap(), 2, 0, "me", &["cfr".into()]).is_err());
        assert!(seat_table(game("go").unwrap(), 2, 0, "me", &["mcts/9".into()]).is_err());
        let e = seat_table(kuhn, 2, 0, "me", &["mcts".into()]).unwrap_err();
        assert!(e.contains("ismcts"), "the search that fits is named: {e}");
        assert_eq!(seat_table(kuhn, 2, 0, "me", &["ismcts/2".into()]).unwrap()[1], Seat::Ismcts(2));
        assert!(seat_table(game("go").unwrap(), 2, 0, "me", &["ismcts".into()]).unwrap_err().contains("hides nothing"));
        assert!(seat_table(game("hanabi").unwrap(), 4, 0, "me", &["ismcts".into()]).unwrap_err().contains("cannot play hanabi"));
    }
}
