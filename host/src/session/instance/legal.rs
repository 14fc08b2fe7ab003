//! The illegal-move policy `then = "random"` on the session's side: whether
//! a call fired it, the player's legal moves as the game lists them
//! (`ludus:plugin/moves`), and the draw that picks one. Why the host picks
//! and the game only lists: docs/design/arena.md, "The illegal-move policy".

use wasmtime::component::Val;

use super::{Session, SessionError};
use crate::capability::CallInfo;
use crate::locking::lock;
use crate::records::IllegalMovePolicy;

/// One legal move as the game lists it: a tool (kebab-case, as in WIT) and
/// its arguments as a JSON object.
#[derive(Clone, Debug, PartialEq)]
pub struct LegalMove {
    pub tool: String,
    pub arguments: String,
}

impl Session {
    /// Whether the call of `caller` that just ran fired the policy's random
    /// move (it is then due now, and only once).
    pub fn take_random_due(&self, caller: &str) -> bool {
        let standing = &mut lock(&self.ledger).standing;
        if standing.random_due.as_deref() != Some(caller) {
            return false;
        }
        standing.random_due = None;
        true
    }

    /// The moves `caller` may make now, as the game lists them; none from a
    /// game that does not list them.
    pub fn legal_moves(&self, caller: &str) -> Result<Vec<LegalMove>, SessionError> {
        let Some(export) = self.plugin.legal_moves else { return Ok(Vec::new()) };
        let call = CallInfo { caller: caller.to_string(), ..CallInfo::default() };
        let (listed, _) = self.run_export(call, |store, instance| {
            let func =
                instance.get_func(&mut *store, export).ok_or_else(|| wasmtime::format_err!("the plugin does not export moves.legal"))?;
            let mut out = [Val::Bool(false)];
            func.call(&mut *store, &[], &mut out)?;
            let [listed] = out;
            Ok(listed)
        })?;
        Ok(legal_moves_of(listed))
    }

    /// Which of `n` legal moves the policy plays: a draw from the game's
    /// whole seed and where the game stands (its number, its moves and
    /// refusals so far), so that a replay of the game draws the same.
    pub fn draw_for_policy(&self, n: usize) -> usize {
        use sha2::{Digest, Sha256};
        let standing = &lock(&self.ledger).standing;
        let (moves, illegal) = standing.told.as_ref().map_or((0, 0), |t| (t.moves, t.illegal_moves));
        let whole = crate::store::whole_seed(self.seeding.seed, self.seeding.secret);
        let digest = Sha256::new()
            .chain_update(b"ludus random legal move")
            .chain_update(whole.to_le_bytes())
            .chain_update(standing.game.to_le_bytes())
            .chain_update(moves.to_le_bytes())
            .chain_update(illegal.to_le_bytes())
            .finalize();
        let draw = u64::from_le_bytes(digest[..8].try_into().unwrap_or_default());
        usize::try_from(draw % n.max(1) as u64).unwrap_or_default()
    }

    /// The illegal-move policy the current game is played under.
    pub fn policy(&self) -> IllegalMovePolicy {
        lock(&self.ledger).standing.policy
    }

    /// Counts the policy's random move, made.
    pub fn random_move_made(&self) {
        lock(&self.ledger).standing.fired += 1;
    }
}

/// `list<legal-move>` as values: records of `tool` and `arguments`.
fn legal_moves_of(listed: Val) -> Vec<LegalMove> {
    let Val::List(items) = listed else { return Vec::new() };
    let text = |fields: &[(String, Val)], name: &str| {
        fields.iter().find(|(n, _)| n == name).and_then(|(_, v)| match v {
            Val::String(s) => Some(s.clone()),
            _ => None,
        })
    };
    items
        .into_iter()
        .filter_map(|item| match item {
            Val::Record(fields) => Some(LegalMove { tool: text(&fields, "tool")?, arguments: text(&fields, "arguments")? }),
            _ => None,
        })
        .collect()
}
