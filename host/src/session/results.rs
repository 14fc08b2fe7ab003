//! A session's game as a result record (`records`): what the game said
//! about itself (its latest `outcome.tell`) and what the host knows (who,
//! when, how many calls, which build).

use crate::records::{Outcome, PolicyRecord, RecordsFile, ResultRecord, rfc3339};
use crate::store::Record;

/// Why a record of a game that said it ended was written.
pub const GAME_ENDED: &str = "the game ended";

/// The result record of `record`'s current game, which ended at `now_ms`
/// (`ended`: how; a game still under way is `abandoned`).
pub fn result_record(record: &Record, ended: &str, now_ms: u64) -> ResultRecord {
    let s = &record.standing;
    let told = s.told.clone().unwrap_or_default();
    ResultRecord {
        record: format!("{}/{}", record.id, s.game),
        time: rfc3339(now_ms),
        game: record.plugin.clone(),
        plugin_version: record.plugin_version.clone(),
        parameters: told.parameters,
        seed: record.seed,
        caller: record.created_by.clone(),
        secret: record.secret,
        replay: record.replay,
        seats: record.seats.clone(),
        tool_calls: s.tool_calls,
        moves: told.moves,
        illegal_moves: told.illegal_moves,
        first_failing_move: told.first_failing_move,
        optimum: told.optimum,
        outcome: told.outcome.unwrap_or(Outcome::Abandoned),
        ended: ended.to_string(),
        duration_ms: now_ms.saturating_sub(s.started_at_ms),
        figures: told.figures,
        illegal_move_policy: PolicyRecord { policy: s.policy, fired: s.fired, lost: s.forfeit.clone() },
        clock: (s.clock.move_ms > 0).then(|| crate::records::ClockRecord { clock: s.clock, lost: s.out_of_time.clone() }),
        in_match: record.in_match.clone(),
        build: record.plugin_sha256.clone(),
        actions: s.log.clone(),
    }
}

/// A stored session that ends without running again (it expired while the
/// server was down, or its build is gone): its game's record, unless written.
pub fn record_stored_end(records: &RecordsFile, record: &Record, why: &str) {
    if record.standing.unrecorded() {
        records.append(&result_record(record, why, crate::store::now_ms()));
    }
}
