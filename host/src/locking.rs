//! The host's one locking rule: a poisoned mutex is still used. A panic while
//! holding one of these locks would be a host bug; refusing every later call
//! because of it would turn that bug into an outage of the whole server.
//! Also how a table behind a lock gives back its room (`shrink_emptied`).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::{Mutex, MutexGuard};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Gives back the room of a table that emptied out: one that once held
/// thousands of entries (MCP sessions) keeps room for them all unless
/// shrunk, and its memory cannot go back to the system. Called after each
/// removal: it shrinks only once the table is down to a quarter of its
/// room, so shrinking costs a constant share of the removals.
pub fn shrink_emptied<K: Eq + Hash, V, S: BuildHasher>(table: &mut HashMap<K, V, S>) {
    if table.capacity() > 64 && table.capacity() > 4 * table.len() {
        table.shrink_to_fit();
    }
}
