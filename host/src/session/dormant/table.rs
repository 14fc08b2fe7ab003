//! The table of games out of memory that no store keeps (`store =
//! "memory"`): their records and states, kept without a heap allocation of
//! each game's own.
//!
//! Why: games leave memory while others are being started, so each small
//! allocation a dormant entry made landed in a hole that a freed instance
//! left, and held that page of the heap: 100,000 puzzles out of memory kept
//! 425 MB of heap resident around 7 MB in use, and `malloc_trim` could hand
//! none of it back. Here an entry's id is a number where it can be (ids
//! are 32 hex digits), its plugin's and callers' names are shared, and what
//! no store keeps of it (its record and state, with `store = "memory"`)
//! goes into large chunks of its own, so the pages freed instances leave
//! hold nothing of theirs.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::records::MatchTag;
use crate::store::Record;

/// A game out of memory: the few fields the table finds games by.
pub(super) struct Dormant {
    /// Where its record (JSON) and then its state are, and the record's length.
    kept: (Place, u32),
    pub plugin: Arc<str>,
    players: Players,
    pub created_by: Arc<str>,
    /// Boxed: few games are in a match, and every entry would carry its room.
    pub in_match: Option<Box<MatchTag>>,
    /// When it expires (its last change plus its idle timeout), in ms since the epoch.
    expires_at_ms: u64,
}

/// What the table keeps of a game no store keeps: its record as the JSON
/// a store would write, and its state.
pub(crate) struct Kept {
    pub record: Vec<u8>,
    pub state: Vec<u8>,
}

/// Who may play: nearly always its creator alone.
enum Players {
    Creator,
    These(Box<[Arc<str>]>),
}

impl Dormant {
    /// `caller` plays in it.
    pub fn plays(&self, caller: &str) -> bool {
        !caller.is_empty()
            && match &self.players {
                Players::Creator => &*self.created_by == caller,
                Players::These(players) => players.iter().any(|p| &**p == caller),
            }
    }

    /// It has been idle past its timeout at `now_ms` (`Record::expired`).
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms > self.expires_at_ms
    }
}

/// Games out of memory by id.
#[derive(Default)]
pub(super) struct DormantTable {
    games: HashMap<Id, Dormant>,
    names: Names,
    kept: Chunks,
}

impl DormantTable {
    pub fn len(&self) -> usize {
        self.games.len()
    }

    pub fn get(&self, id: &str) -> Option<&Dormant> {
        self.games.get(&Id::of(id))
    }

    pub fn contains(&self, id: &str) -> bool {
        self.games.contains_key(&Id::of(id))
    }

    /// Files `record`'s game with what is kept of it.
    pub fn insert(&mut self, record: &Record, kept: Kept) {
        let kept = (self.kept.put(&[&kept.record, &kept.state]), kept.record.len() as u32);
        let created_by = self.names.get(&record.created_by);
        let players = match record.players.as_slice() {
            [only] if *only == record.created_by => Players::Creator,
            all => Players::These(all.iter().map(|p| self.names.get(p)).collect()),
        };
        let dormant = Dormant {
            kept,
            plugin: self.names.get(&record.plugin),
            players,
            created_by,
            in_match: record.in_match.clone().map(Box::new),
            expires_at_ms: record.changed_at_ms.saturating_add(record.idle_timeout_ms),
        };
        if let Some(old) = self.games.insert(Id::of(&record.id), dormant) {
            self.release(old);
        }
    }

    pub fn remove(&mut self, id: &str) {
        if let Some(gone) = self.games.remove(&Id::of(id)) {
            self.release(gone);
        }
    }

    fn release(&mut self, gone: Dormant) {
        self.kept.free(gone.kept.0);
    }

    /// The ids of the games `pick` picks.
    pub fn ids_where(&self, pick: impl Fn(&Dormant) -> bool) -> Vec<String> {
        self.games.iter().filter(|(_, d)| pick(d)).map(|(id, _)| id.text()).collect()
    }

    /// `dormant`'s kept record (as JSON) and state.
    fn kept_bytes(&self, dormant: &Dormant) -> (&[u8], &[u8]) {
        let (place, json) = dormant.kept;
        self.kept.get(place).split_at(json as usize)
    }

    /// `dormant`'s record (None when it does not read back, which the
    /// table wrote itself and so does not happen).
    pub fn kept_record(&self, dormant: &Dormant) -> Option<Record> {
        serde_json::from_slice(self.kept_bytes(dormant).0).ok()
    }

    /// `dormant`'s record and state.
    pub fn kept(&self, dormant: &Dormant) -> (Option<Record>, Vec<u8>) {
        let (record, state) = self.kept_bytes(dormant);
        (serde_json::from_slice(record).ok(), state.to_vec())
    }

    /// The records kept here.
    pub fn kept_records(&self) -> Vec<Record> {
        self.games.values().filter_map(|d| self.kept_record(d)).collect()
    }

    /// Lets go of names no game uses any more, and moves the kept bytes
    /// together when most of the chunks' room is holes. The reaper calls
    /// it every second; each part costs a pass only when it is due.
    pub fn tidy(&mut self) {
        self.names.tidy();
        if self.kept.wasteful() {
            let mut fresh = Chunks::default();
            for dormant in self.games.values_mut() {
                dormant.kept.0 = fresh.put(&[self.kept.get(dormant.kept.0)]);
            }
            self.kept = fresh;
        }
    }
}

/// A game's id: the number its 32 hex digits spell (no allocation of its
/// own; as bytes, which a `u128`'s alignment would pad to 32), or, for an
/// id of another form, its text.
#[derive(Hash, PartialEq, Eq)]
enum Id {
    Hex([u8; 16]),
    Text(Box<str>),
}

impl Id {
    fn of(id: &str) -> Id {
        let lower_hex = id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        match u128::from_str_radix(id, 16) {
            Ok(n) if lower_hex => Id::Hex(n.to_be_bytes()),
            _ => Id::Text(id.into()),
        }
    }

    fn text(&self) -> String {
        match self {
            Id::Hex(n) => format!("{:032x}", u128::from_be_bytes(*n)),
            Id::Text(text) => text.to_string(),
        }
    }
}

/// Plugin and caller names, one copy each, shared by the games that name them.
#[derive(Default)]
struct Names {
    set: HashSet<Arc<str>>,
    /// How many were in use at the last sweep.
    in_use: usize,
}

impl Names {
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.set.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = name.into();
        self.set.insert(shared.clone());
        shared
    }

    /// Forgets the names no game holds, once there are twice as many as
    /// at the last sweep (each MCP session over HTTP is a caller of its own).
    fn tidy(&mut self) {
        if self.set.len() > 2 * self.in_use.max(64) {
            self.set.retain(|n| Arc::strong_count(n) > 1);
            self.in_use = self.set.len();
        }
    }
}

/// Where bytes are kept in the chunks.
#[derive(Clone, Copy)]
struct Place {
    chunk: u32,
    at: u32,
    len: u32,
}

/// Bytes appended into chunks of a mebibyte (allocations that large get
/// pages of their own), each knowing how many of its bytes are still used:
/// one whose bytes are all freed is handed back.
#[derive(Default)]
struct Chunks {
    chunks: Vec<Chunk>,
    /// The chunk being filled.
    open: usize,
    live: usize,
}

#[derive(Default)]
struct Chunk {
    bytes: Vec<u8>,
    live: usize,
}

const CHUNK: usize = 1 << 20;

impl Chunks {
    /// Appends `parts`, one after the other.
    fn put(&mut self, parts: &[&[u8]]) -> Place {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let fits = |c: &Chunk| c.bytes.capacity() - c.bytes.len() >= len;
        if !self.chunks.get(self.open).is_some_and(fits) {
            // An emptied chunk's slot, or a new one (numbers stay put).
            self.open = self.chunks.iter().position(|c| c.bytes.capacity() == 0).unwrap_or(self.chunks.len());
            if self.open == self.chunks.len() {
                self.chunks.push(Chunk::default());
            }
            self.chunks[self.open].bytes = Vec::with_capacity(CHUNK.max(len));
        }
        let chunk = &mut self.chunks[self.open];
        let at = chunk.bytes.len();
        for part in parts {
            chunk.bytes.extend_from_slice(part);
        }
        chunk.live += len;
        self.live += len;
        Place { chunk: self.open as u32, at: at as u32, len: len as u32 }
    }

    fn get(&self, place: Place) -> &[u8] {
        let at = place.at as usize;
        &self.chunks[place.chunk as usize].bytes[at..at + place.len as usize]
    }

    fn free(&mut self, place: Place) {
        let chunk = &mut self.chunks[place.chunk as usize];
        chunk.live -= place.len as usize;
        self.live -= place.len as usize;
        // An emptied chunk: the open one is refilled from its start, any
        // other is handed back.
        if chunk.live == 0 && place.chunk as usize == self.open {
            chunk.bytes.clear();
        } else if chunk.live == 0 {
            chunk.bytes = Vec::new();
        }
    }

    /// More than half of the chunks' room (beyond one chunk) is holes.
    fn wasteful(&self) -> bool {
        let room: usize = self.chunks.iter().map(|c| c.bytes.capacity()).sum();
        room > CHUNK && room - CHUNK > 2 * self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, players: &[&str]) -> Record {
        let mut r: Record = serde_json::from_value(serde_json::json!({
            "id": id, "plugin": "hanoi", "plugin_version": "0.1.0", "plugin_sha256": "00", "seed": 1,
            "created_by": players.first().copied().unwrap_or("nobody"), "created_at_ms": 1, "players": players,
            "join_code": null, "over": false, "renamed": false, "calls": 1, "changed_at_ms": 10, "idle_timeout_ms": 5
        }))
        .unwrap();
        r.calls = 2;
        r
    }

    fn kept(id: &str) -> Kept {
        Kept { record: serde_json::to_vec(&record(id, &["alice"])).unwrap(), state: b"state".to_vec() }
    }

    #[test]
    fn ids_of_any_form_find_their_games() {
        let mut table = DormantTable::default();
        let hex = "721990845b704a0ab4235c744765f1c5";
        for id in [hex, "0000000000000000000000000000000a", "box-1-721990845b704a0ab4235c744765f1c5", "ABCDEF00000000000000000000000000"] {
            table.insert(&record(id, &["alice"]), kept(id));
            assert!(table.contains(id), "{id}");
        }
        assert!(!table.contains("721990845B704A0AB4235C744765F1C5"), "ids are matched exactly, as text");
        let mut ids = table.ids_where(|d| d.plays("alice"));
        ids.sort();
        assert_eq!(
            ids,
            [
                "0000000000000000000000000000000a",
                "721990845b704a0ab4235c744765f1c5",
                "ABCDEF00000000000000000000000000",
                "box-1-721990845b704a0ab4235c744765f1c5"
            ]
        );
        table.remove(hex);
        assert!(!table.contains(hex) && table.len() == 3);
    }

    #[test]
    fn an_entry_stays_small() {
        // The table's room for 100,000 games is most of what they cost.
        assert!(std::mem::size_of::<(Id, Dormant)>() <= 120, "{}", std::mem::size_of::<(Id, Dormant)>());
    }

    #[test]
    fn players_and_expiry_read_as_the_record_says() {
        let mut table = DormantTable::default();
        table.insert(&record("a", &["alice"]), kept("a"));
        table.insert(&record("b", &["bob", "alice"]), kept("b"));
        table.insert(&record("c", &[]), kept("c"));
        let (a, b, c) = (table.get("a").unwrap(), table.get("b").unwrap(), table.get("c").unwrap());
        assert!(a.plays("alice") && !a.plays("bob") && !a.plays(""));
        assert!(b.plays("alice") && b.plays("bob") && &*b.created_by == "bob");
        assert!(!c.plays("nobody"), "a game with no players is played by nobody");
        assert!(!a.expired(15) && a.expired(16));
        assert_eq!(table.names.set.len(), 4, "hanoi, alice, bob, nobody: one copy each");
    }

    #[test]
    fn kept_records_and_states_read_back_through_removals_and_tidying() {
        let mut table = DormantTable::default();
        let state = vec![7u8; 300];
        for i in 0..6000 {
            let r = record(&format!("g{i}"), &["alice"]);
            table.insert(&r, Kept { record: serde_json::to_vec(&r).unwrap(), state: state.clone() });
        }
        let room = |t: &DormantTable| t.kept.chunks.iter().map(|c| c.bytes.capacity()).sum::<usize>();
        let full = room(&table);
        assert!(full > 2 * CHUNK, "the test needs several chunks: {full}");
        for i in (0..6000).filter(|i| i % 10 != 0) {
            table.remove(&format!("g{i}"));
        }
        table.tidy();
        assert!(room(&table) < full / 2, "tidying moved the kept bytes together: {} of {full}", room(&table));
        for i in (0..6000).step_by(10) {
            let (record, kept_state) = table.kept(table.get(&format!("g{i}")).unwrap());
            assert_eq!(record.unwrap().id, format!("g{i}"));
            assert_eq!(kept_state, state);
        }
        assert_eq!(table.kept_records().len(), 600);
        for i in (0..6000).step_by(10) {
            table.remove(&format!("g{i}"));
        }
        assert_eq!(table.kept.live, 0);
        assert!(room(&table) <= CHUNK, "emptied chunks are handed back");
    }
}
