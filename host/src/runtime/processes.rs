//! The server's budget of game processes: channel endpoints of kind
//! `process` (a Showdown simulator, the phase bridge) cost tens of MiB and a
//! share of the CPU each, where a session of a pure-WebAssembly game costs
//! kilobytes. So they are counted apart from sessions: in all, and per
//! caller, each by its weight. A permit is held while the process runs and
//! returned when its channel closes.
//!
//! A shared engine process (one that serves many games) is the server's,
//! not a caller's: it counts in all only. The games a caller has in shared
//! processes are counted apart, so that no caller fills them all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::locking::lock;

pub struct ProcessBudget {
    state: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    /// Most in all, and for one caller.
    max_total: usize,
    max_per_caller: usize,
    total: usize,
    per_caller: HashMap<String, usize>,
    max_games_per_caller: usize,
    games: HashMap<String, usize>,
    /// Whose share a caller's processes count in, where not its own: a
    /// caller without a token (one MCP session) counts in its address's,
    /// so one address cannot take every process by opening sessions.
    counts_as: HashMap<String, String>,
}

/// Which limit refuses more processes. The texts say what frees them.
#[derive(Debug, thiserror::Error)]
pub enum OverBudget {
    #[error(
        "the server already runs {running} game processes, its limit (limits.max_processes = {max}); a game that ends frees \
         its processes at once, so finish one first, or ask the operator to raise the limit"
    )]
    Server { running: usize, max: usize },
    #[error(
        "your games already run {running} game processes, the limit for one caller (limits.max_processes_per_caller \
         = {max}; without a bearer token, the MCP sessions of one address are one caller); a game that ends frees its \
         processes at once, so finish one first, or ask the operator to raise the limit"
    )]
    Caller { running: usize, max: usize },
    #[error(
        "your games already hold {running} places in shared engine processes, the limit for one caller \
         (limits.max_engine_games_per_caller = {max}); a game that ends frees its place at once, so finish one first, \
         or ask the operator to raise the limit"
    )]
    Games { running: usize, max: usize },
}

/// Processes counted against the budget while this lives.
pub struct ProcessPermit {
    budget: Arc<ProcessBudget>,
    /// Whose share it counts in: none for a shared process, the server's.
    caller: Option<String>,
    weight: usize,
}

/// One game's place in shared engine processes, counted for its caller while this lives.
pub struct GamePermit {
    budget: Arc<ProcessBudget>,
    caller: String,
}

impl ProcessBudget {
    pub fn new(max_total: usize, max_per_caller: usize, max_games_per_caller: usize) -> Arc<ProcessBudget> {
        Arc::new(ProcessBudget { state: Mutex::new(Counts { max_total, max_per_caller, max_games_per_caller, ..Counts::default() }) })
    }

    pub fn set_limits(&self, max_total: usize, max_per_caller: usize, max_games_per_caller: usize) {
        let mut s = lock(&self.state);
        (s.max_total, s.max_per_caller, s.max_games_per_caller) = (max_total, max_per_caller, max_games_per_caller);
    }

    /// Processes running now, in all.
    pub fn running(&self) -> usize {
        lock(&self.state).total
    }

    /// `caller`'s processes count in `share`'s, until `forget`.
    pub fn count_as(&self, caller: &str, share: &str) {
        lock(&self.state).counts_as.insert(caller.to_string(), share.to_string());
    }

    /// `caller` is gone: processes it starts later count as its own.
    /// Those it holds stay counted where they were taken.
    pub fn forget(&self, caller: &str) {
        lock(&self.state).counts_as.remove(caller);
    }

    /// Counts `weight` processes for `caller`, or says which limit refuses them.
    pub fn take(self: &Arc<Self>, caller: &str, weight: usize) -> Result<ProcessPermit, OverBudget> {
        let mut s = lock(&self.state);
        let caller = s.counts_as.get(caller).cloned().unwrap_or_else(|| caller.to_string());
        let mine = s.per_caller.get(&caller).copied().unwrap_or(0);
        if s.total + weight > s.max_total {
            return Err(OverBudget::Server { running: s.total, max: s.max_total });
        }
        if mine + weight > s.max_per_caller {
            return Err(OverBudget::Caller { running: mine, max: s.max_per_caller });
        }
        s.total += weight;
        *s.per_caller.entry(caller.clone()).or_default() += weight;
        Ok(ProcessPermit { budget: self.clone(), caller: Some(caller), weight })
    }

    /// Counts a shared engine process: the server's, so in all only.
    pub fn take_shared(self: &Arc<Self>, weight: usize) -> Result<ProcessPermit, OverBudget> {
        let mut s = lock(&self.state);
        if s.total + weight > s.max_total {
            return Err(OverBudget::Server { running: s.total, max: s.max_total });
        }
        s.total += weight;
        Ok(ProcessPermit { budget: self.clone(), caller: None, weight })
    }

    /// Counts one game of `caller` in shared engine processes.
    pub fn take_game(self: &Arc<Self>, caller: &str) -> Result<GamePermit, OverBudget> {
        let mut s = lock(&self.state);
        let caller = s.counts_as.get(caller).cloned().unwrap_or_else(|| caller.to_string());
        let mine = s.games.get(&caller).copied().unwrap_or(0);
        if mine >= s.max_games_per_caller {
            return Err(OverBudget::Games { running: mine, max: s.max_games_per_caller });
        }
        *s.games.entry(caller.clone()).or_default() += 1;
        Ok(GamePermit { budget: self.clone(), caller })
    }
}

/// Takes `n` off `caller`'s count in `counts`, forgetting a caller at 0.
fn uncount(counts: &mut HashMap<String, usize>, caller: &str, n: usize) {
    if let Some(held) = counts.get_mut(caller) {
        *held -= n;
        if *held == 0 {
            counts.remove(caller);
        }
    }
}

impl Drop for GamePermit {
    fn drop(&mut self) {
        uncount(&mut lock(&self.budget.state).games, &self.caller, 1);
    }
}

impl Drop for ProcessPermit {
    fn drop(&mut self) {
        let mut s = lock(&self.budget.state);
        s.total -= self.weight;
        if let Some(caller) = &self.caller {
            uncount(&mut s.per_caller, caller, self.weight);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_count_by_weight_in_all_and_per_caller_until_dropped() {
        let budget = ProcessBudget::new(5, 3, 2);
        let a = budget.take("a", 2).unwrap();
        assert!(budget.take("a", 2).err().unwrap().to_string().contains("limits.max_processes_per_caller = 3"));
        let b = budget.take("b", 3).unwrap();
        assert!(budget.take("c", 1).err().unwrap().to_string().contains("limits.max_processes = 5"));
        drop(a);
        assert_eq!(budget.running(), 3);
        let _c = budget.take("c", 2).unwrap();
        drop(b);
        assert_eq!(budget.running(), 2);
    }

    #[test]
    fn callers_without_a_token_count_in_their_address_share() {
        let budget = ProcessBudget::new(10, 2, 2);
        budget.count_as("client-1", "127.0.0.9");
        budget.count_as("client-2", "127.0.0.9");
        let _one = budget.take("client-1", 2).unwrap();
        assert!(budget.take("client-2", 1).is_err(), "a second session of the same address has no processes left");
        budget.forget("client-2");
        let _own = budget.take("client-2", 1).unwrap();
        assert_eq!(budget.running(), 3);
    }

    #[test]
    fn shared_processes_count_in_all_and_games_per_caller() {
        let budget = ProcessBudget::new(2, 1, 2);
        let shared = budget.take_shared(1).unwrap();
        let _own = budget.take("a", 1).unwrap();
        assert!(budget.take_shared(1).is_err(), "a shared process counts against limits.max_processes");
        let (g1, _g2) = (budget.take_game("a").unwrap(), budget.take_game("a").unwrap());
        assert!(budget.take_game("a").err().unwrap().to_string().contains("max_engine_games_per_caller = 2"));
        let _b = budget.take_game("b").unwrap();
        drop(g1);
        let _g3 = budget.take_game("a").unwrap();
        drop(shared);
        assert_eq!(budget.running(), 1);
    }
}
