//! Recently ended sessions, remembered so that a call naming one can say why
//! it ended ("it expired after 30 s without calls") rather than "unknown".
//!
//! Compact on purpose: an entry is a keyed hash of the id and a shared
//! reason, in tables sized once at start. Entries are made as sessions end,
//! amid the heap those sessions just freed, where separate small strings
//! would pin pages all over it and keep the allocator from handing memory
//! back (figures: docs/design/sessions.md, "Memory and the kernel's map limit").

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

/// How many ended sessions are remembered.
const REMEMBERED: usize = 10_000;

/// Distinct reasons kept shared; past this the table starts over (a crash
/// message can be unique per session).
const REASONS: usize = 1_024;

pub struct EndedSessions {
    hasher: std::collections::hash_map::RandomState,
    why: HashMap<u64, Arc<str>>,
    order: VecDeque<u64>,
    reasons: HashSet<Arc<str>>,
}

impl Default for EndedSessions {
    fn default() -> Self {
        EndedSessions {
            hasher: Default::default(),
            why: HashMap::with_capacity(REMEMBERED + 1),
            order: VecDeque::with_capacity(REMEMBERED + 1),
            reasons: HashSet::new(),
        }
    }
}

impl EndedSessions {
    /// Remembers that session `id` ended, and why; forgets the oldest beyond
    /// the limit.
    pub fn record(&mut self, id: &str, why: &str) {
        let reason = self.shared_reason(why);
        let key = self.hasher.hash_one(id);
        if self.why.insert(key, reason).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.why.remove(&old);
            }
        }
    }

    /// Why session `id` ended, if it ended recently. (A different id with the
    /// same 64-bit keyed hash would be told the same: a wrong reason in an
    /// error message, at odds of one in 2^64.)
    pub fn why(&self, id: &str) -> Option<Arc<str>> {
        self.why.get(&self.hasher.hash_one(id)).cloned()
    }

    fn shared_reason(&mut self, why: &str) -> Arc<str> {
        if let Some(reason) = self.reasons.get(why) {
            return reason.clone();
        }
        if self.reasons.len() >= REASONS {
            self.reasons.clear();
        }
        let reason: Arc<str> = why.into();
        self.reasons.insert(reason.clone());
        reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_latest_and_shares_reasons() {
        let mut gone = EndedSessions::default();
        for i in 0..REMEMBERED + 5 {
            gone.record(&format!("s{i}"), "it expired");
        }
        assert!(gone.why("s0").is_none() && gone.why("s4").is_none(), "the oldest are forgotten");
        let (a, b) = (gone.why("s5").unwrap(), gone.why(&format!("s{}", REMEMBERED + 4)).unwrap());
        assert_eq!(&*a, "it expired");
        assert!(Arc::ptr_eq(&a, &b), "one shared reason, not one string per session");
        assert!(gone.why("never").is_none());
        assert_eq!(gone.order.len(), REMEMBERED);
    }
}
