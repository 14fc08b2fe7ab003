//! How many sessions and held calls the server takes, and who may fix a
//! game's whole seed: the limits a new session or a wait is checked against.

use std::collections::HashMap;

use super::Sessions;
use crate::locking::lock;
use crate::plugin::Plugin;
use crate::runtime::maps_per_instance;

/// How many sessions may live at once, and who may fix a game's whole seed.
pub struct SessionLimits {
    /// In the whole server.
    pub total: usize,
    /// Why `total` is what it is, for the refusal ("limits.max_sessions", or
    /// the kernel's map limit that capped it).
    pub total_reason: String,
    /// Started by one caller (MCP connection), so one client cannot take every slot.
    pub per_caller: usize,
    /// Calls of one caller held waiting at once, over all its sessions.
    pub waits_per_caller: u64,
    /// Memory mappings the kernel's limit leaves for instances, and that
    /// limit: sessions that map their data take more than `total` counts
    /// on (`runtime::maps_per_instance`). None where it cannot be read.
    pub maps: Option<(u64, u64)>,
    /// Callers whose chosen seed is the whole seed (no secret mixed in).
    pub whole_seeds: WholeSeeds,
    /// Games idle this long leave memory (`limits.unload_idle_after_ms`; none: never).
    pub unload_after: Option<std::time::Duration>,
}

/// Which callers may fix a game's whole seed, hidden parts included: the
/// operator's evaluation harness, never a player by itself (config
/// `whole_seeds`, or `whole_seeds = true` on a token).
#[derive(Clone, Debug, Default)]
pub enum WholeSeeds {
    #[default]
    Nobody,
    Everyone,
    Callers(std::collections::HashSet<String>),
}

impl WholeSeeds {
    pub(super) fn allow(&self, caller: &str) -> bool {
        match self {
            WholeSeeds::Nobody => false,
            WholeSeeds::Everyone => true,
            WholeSeeds::Callers(names) => names.contains(caller),
        }
    }
}

/// Whether one more session (`mapped` or not) fits in `budget` mappings next
/// to `all` live sessions, `mapped_live` of them mapping their data.
fn maps_allow(budget: u64, all: usize, mapped_live: usize, mapped: bool) -> bool {
    let used = (all - mapped_live) as u64 * maps_per_instance(false) + mapped_live as u64 * maps_per_instance(true);
    used + maps_per_instance(mapped) <= budget
}

impl Sessions {
    /// Calls of `caller` held waiting now, over all its sessions.
    pub(super) fn waits_of(&self, caller: &str) -> u64 {
        lock(&self.waits).get(caller).copied().unwrap_or(0)
    }

    /// Live sessions in all, of `plugin`, started by `caller`, and mapping their data.
    fn counts(&self, plugin: &str, caller: &str) -> (usize, usize, usize, usize) {
        let live = lock(&self.live);
        let count = |counts: &HashMap<String, usize>, key: &str| counts.get(key).copied().unwrap_or(0);
        (live.by_id.len(), count(&live.per_plugin, plugin), count(&live.per_caller, caller), live.mapped)
    }

    /// Why a new session of `plugin` for `caller` cannot start, if it
    /// cannot even after the longest-idle games under the limit it meets
    /// left memory (`idle`).
    pub(super) fn refuse_new(&self, plugin: &Plugin, caller: &str) -> Option<String> {
        let (met, why) = self.refusal_now(plugin, caller)?;
        let made = match met {
            Met::Server => self.make_room(|_| true),
            Met::Plugin => self.make_room(|s| s.plugin.name == plugin.name),
            Met::Caller => self.make_room(|s| s.created_by == caller),
        };
        if made { self.refusal_now(plugin, caller).map(|(_, why)| why) } else { Some(why) }
    }

    /// Which limit a new session of `plugin` for `caller` meets now, and
    /// why it cannot start, if it cannot.
    fn refusal_now(&self, plugin: &Plugin, caller: &str) -> Option<(Met, String)> {
        let (all, of_plugin, of_caller, mapped) = self.counts(&plugin.name, caller);
        let l = &self.limits;
        if all >= l.total {
            return Some((
                Met::Server,
                format!("the server already runs {all} game sessions, its limit ({}); finish some first", l.total_reason),
            ));
        }
        if let Some((budget, max_maps)) = l.maps
            && !maps_allow(budget, all, mapped, plugin.maps_data)
        {
            return Some((
                Met::Server,
                format!(
                    "the server already runs {all} game sessions ({mapped} of them games that map their data, which take more memory \
                 mappings), all the kernel's vm.max_map_count of {max_maps} allows; finish some first (the operator can raise it with sysctl)"
                ),
            ));
        }
        if of_plugin >= plugin.limits.max_sessions {
            return Some((
                Met::Plugin,
                format!(
                    "{name} already runs {of_plugin} game sessions, its limit (the config's limits.max_sessions_per_plugin, or \
                 plugins.{name}.max_sessions for this game alone); finish some first",
                    name = plugin.name
                ),
            ));
        }
        if of_caller >= l.per_caller {
            return Some((
                Met::Caller,
                format!(
                    "you already run {of_caller} game sessions, the limit for one client (limits.max_sessions_per_caller); finish some first"
                ),
            ));
        }
        None
    }
}

/// The limit a new session meets: the whole server's (its own, or the
/// kernel's map limit), its plugin's, or its caller's.
enum Met {
    Server,
    Plugin,
    Caller,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_that_map_their_data_count_their_extra_mappings() {
        let (copied, mapped) = (maps_per_instance(false), maps_per_instance(true));
        let budget = 10 * copied;
        // Ten copied sessions fill a budget of ten; a mapped one takes more room.
        assert!(maps_allow(budget, 9, 0, false));
        assert!(!maps_allow(budget, 10, 0, false));
        assert_eq!(maps_allow(budget, 9, 0, true), 9 * copied + mapped <= budget);
        // Mixed: what the mapped ones use leaves less for the others.
        let mixed = ((budget - 2 * mapped) / copied) as usize;
        assert!(maps_allow(budget, 2 + mixed - 1, 2, false));
        assert!(!maps_allow(budget, 2 + mixed, 2, false));
    }
}
