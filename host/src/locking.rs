//! The host's one locking rule: a poisoned mutex is still used. A panic while
//! holding one of these locks would be a host bug; refusing every later call
//! because of it would turn that bug into an outage of the whole server.

use std::sync::{Mutex, MutexGuard};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
