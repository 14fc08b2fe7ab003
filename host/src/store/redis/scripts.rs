//! The Lua scripts that make the lease discipline atomic in Redis: each
//! reads and writes one game's keys only (they share its hash tag, so on a
//! Redis Cluster one shard runs the whole script). Why:
//! docs/design/several-servers.md. Below them, the keys they read.

use std::time::Duration;

/// Takes or renews the lease for `holder`: `{1, version}`, or `{0, holder}`
/// when another server holds it, which is then asked for it if `ask`.
/// KEYS: lease, game, next. ARGV: holder, lease ms, ask, id, handed ms.
pub const TAKE: &str = r"
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  if ARGV[3] == '1' then
    redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[5])
    redis.call('PUBLISH', 'ludus:want:' .. string.match(holder, '^(.*) '), ARGV[4])
  end
  return {0, holder}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
return {1, tonumber(redis.call('HGET', KEYS[2], 'version') or '0')}
";

/// Gives the lease up if it is still this holder's: to the server waiting
/// for it, if one is (and tells that server, which is trying for it), else
/// to nobody.
/// KEYS: lease, next. ARGV: holder, handed ms.
pub const GIVE_BACK: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local waiting = redis.call('GET', KEYS[2])
if waiting then
  redis.call('SET', KEYS[1], waiting, 'PX', ARGV[2])
  redis.call('DEL', KEYS[2])
  redis.call('PUBLISH', 'ludus:given:' .. string.match(waiting, '^(.*) '), KEYS[1])
else
  redis.call('DEL', KEYS[1])
end
return 1
";

/// Writes the game as `version` if the lease is still this holder's (only
/// the holder writes, so it knows the next version): the version, or -1.
/// The write is announced only while a server follows the game (it holds
/// calls waiting on it): most games have no one to tell.
/// KEYS: lease, game. ARGV: holder, record, state, version, idle ms, server, id.
pub const WRITE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
local followed = redis.call('HGET', KEYS[2], 'followed')
redis.call('HSET', KEYS[2], 'record', ARGV[2], 'state', ARGV[3], 'version', ARGV[4], 'server', ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if followed then
  local now = redis.call('TIME')
  if tonumber(followed) >= tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) then
    redis.call('PUBLISH', 'ludus:changed', ARGV[6] .. ' ' .. ARGV[4] .. ' ' .. ARGV[7])
  end
end
return tonumber(ARGV[4])
";

/// Has the game's writes announced for the next `ms` milliseconds at least
/// (by Redis's clock, which every server's writes read), if it is stored.
/// KEYS: game. ARGV: ms.
pub const FOLLOW: &str = r"
local now = redis.call('TIME')
local until_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + tonumber(ARGV[1])
if tonumber(redis.call('HGET', KEYS[1], 'followed') or '0') < until_ms and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'followed', until_ms)
end
return 1
";

/// A game's hash: its record, state, version, last writer, `followed`.
pub fn game_key(id: &str) -> String {
    format!("ludus:{{{id}}}:game")
}

/// A game's lease: `server token`.
pub fn lease_key(id: &str) -> String {
    format!("ludus:{{{id}}}:lease")
}

/// The holder of the server that asked for a game, to be handed its lease.
pub fn next_key(id: &str) -> String {
    format!("ludus:{{{id}}}:next")
}

/// The ids of the games `caller` plays in (not under a game's hash tag:
/// written outside the scripts).
pub fn caller_key(caller: &str) -> String {
    format!("ludus:caller:{caller}")
}

/// A duration as the scripts take it.
pub fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}
