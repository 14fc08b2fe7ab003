//! One run of a tool call in its game, on a guest thread: the call into the
//! guest, and what the host does around it before the call is answered —
//! decision numbers (a retry gets the answer kept for its decision), seats
//! taken, the write to the store and the result record. Then the notes the
//! host adds to a final answer. Why decisions work so: docs/design/fair-play.md,
//! "A move is made once", and docs/design/durability.md, "Exactly once
//! across a restart".

use std::sync::Arc;

use wasmtime::component::Val;

use super::instance::{Invocation, Run, Session, SessionError};
use crate::capability::CallInfo;
use crate::plugin::{Audience, DECISION, Plugin, REASONING, Role, SECRET, SEED, ToolDef};
use crate::records::Action;

/// One run of a call (the first, or a re-run of a waiting one).
pub(super) struct Step {
    pub session: Arc<Session>,
    pub version: Arc<Plugin>,
    pub index: usize,
    pub params: Vec<Val>,
    pub caller: String,
    /// The decision number the call names, when its tool takes one.
    pub decision: Option<u64>,
    /// What the player said of its move (the host's `reasoning` and `usage` arguments).
    pub said: crate::records::Said,
    /// A re-run of the call the game's log has at this place.
    pub again: Option<usize>,
    /// The client's call, not a re-run of a waiting one.
    pub first: bool,
    /// This run follows a wait whose deadline passed: its answer is final.
    pub timed_out: bool,
    /// The host makes this call for the player under the illegal-move
    /// policy (a random legal move): not the client's, and it fires nothing.
    pub by_policy: bool,
}

/// What a run came to.
pub(super) enum Answered {
    /// The game's own answer (final, or provisional when it asked to wait).
    Game(Invocation),
    /// The call's decision was made already and this caller's answer of it
    /// is kept: that answer, and nothing was done.
    Kept(Val),
    /// The call's decision was made by a call of this caller that is still
    /// held waiting for its answer: wait for it.
    AnswerPending,
    /// The game refused the call, and that fired the illegal-move policy
    /// `then = "random"`: the refusal, and the legal move the host plays
    /// for the player now, as the next call.
    Random { refused: Invocation, pick: Pick },
}

/// A legal move the host plays for a player under the illegal-move policy.
pub(super) struct Pick {
    /// The tool (an index into the plugin's tools) and its arguments, the
    /// game's id and the refused call's decision number among them.
    pub index: usize,
    pub params: Vec<Val>,
    /// The move as the game listed it: the tool's name and its arguments.
    pub tool: String,
    pub args: serde_json::Value,
}

impl Pick {
    /// The move as the player is told it.
    pub fn shown(&self) -> String {
        format!("`{}` {}", self.tool, self.args)
    }
}

impl Step {
    /// Calls the guest (under the game's lease where servers share the
    /// store) and settles what the call did before it is answered.
    pub fn run(self, info: CallInfo) -> Result<Answered, SessionError> {
        let s = self.session.clone();
        // A game the host ended (the illegal-move policy, the clock) is over
        // for everyone; the game itself does not know.
        if let Some(why) = s.lost_to_the_host() {
            return Err(SessionError::Ended(why));
        }
        let tool = &self.version.tools[self.index];
        let kind = if tool.read_only { Run::Read } else { Run::Change };
        s.leased(kind, || self.in_game(tool, info))?
    }

    fn in_game(&self, tool: &ToolDef, info: CallInfo) -> Result<Answered, SessionError> {
        let s = &self.session;
        let results = usize::from(tool.result.is_some());
        let inv = s.invoke(&tool.export, &self.params, results, info, self.logged(tool))?;
        if let Some(n) = self.decision.filter(|n| inv.made_already.is_some_and(|said| u64::from(said) == *n)) {
            // Made by another tool (a plan, then a single move): its answer
            // is of another type, and the game's refusal stands.
            if let Some((_, answer)) = s.answer_of(&self.caller, n).filter(|(made_by, _)| *made_by == tool.func) {
                if self.first {
                    s.count_call(true);
                }
                return Ok(Answered::Kept(answer));
            }
            if !self.timed_out && s.is_awaiting(&self.caller, n) {
                return Ok(Answered::AnswerPending);
            }
        }
        if self.first && !self.by_policy {
            s.count_call(false);
        }
        let is_final = inv.wait.is_none() || self.timed_out;
        if !is_final {
            s.follow_changes(tool.max_wait);
        }
        let refused = matches!(inv.value, Some(Val::Result(Err(_))));
        if is_final && !refused {
            // A `joins` tool's final success takes the seat; a decision's
            // final answer is kept for its retries.
            if tool.audience == Audience::Joins {
                s.seat(&self.caller);
            }
            if let (Some(n), Some(value), None) = (self.decision, &inv.value, inv.made_already) {
                s.remember(&self.caller, &tool.func, n, value.clone());
            }
        }
        if !tool.read_only {
            s.persist()?;
            s.settle();
            s.run_clock(Some(&self.caller));
        }
        if !self.by_policy
            && !tool.read_only
            && s.take_random_due(&self.caller)
            && let Some(pick) = self.pick_random()?
        {
            s.random_move_made();
            return Ok(Answered::Random { refused: inv, pick });
        }
        Ok(Answered::Game(inv))
    }

    /// The legal move the illegal-move policy plays for this call's player:
    /// one of those the game lists, drawn from its seed (none: the game
    /// lists none it can take, and the refusal stands).
    fn pick_random(&self) -> Result<Option<Pick>, SessionError> {
        let s = &self.session;
        let legal = s.legal_moves(&self.caller)?;
        let Some(chosen) = legal.get(s.draw_for_policy(legal.len())) else { return Ok(None) };
        let unusable = |why: String| {
            tracing::warn!(plugin = self.version.name, session = s.id(), "the legal move {chosen:?} cannot be played: {why}");
            Ok(None)
        };
        let Some(index) = self.version.tools.iter().position(|t| t.func == chosen.tool && t.decision.is_some()) else {
            return unusable("the game has no decision tool of that name".into());
        };
        let tool = &self.version.tools[index];
        let Ok(serde_json::Value::Object(mut args)) = serde_json::from_str(&chosen.arguments) else {
            return unusable("its arguments are not a JSON object".into());
        };
        let shown = serde_json::Value::Object(args.clone());
        if let Role::Uses(i) = tool.role {
            args.insert(tool.params[i].json.clone(), s.id().into());
        }
        if let Some(n) = self.decision {
            args.insert(DECISION.into(), n.into());
        }
        match tool.convert_args(&args) {
            Ok(params) => Ok(Some(Pick { index, params, tool: tool.name.clone(), args: shown })),
            Err(e) => unusable(e),
        }
    }
}

impl Step {
    /// What the game's log keeps of this run: a call of a tool that may
    /// change the game, with its arguments (the game's id left out: a
    /// replay's game has its own) and the player's reasoning beside them.
    fn logged(&self, tool: &ToolDef) -> Option<Action> {
        let session_param = match tool.role {
            Role::Uses(i) => i,
            Role::Creates => usize::MAX,
            Role::Shared => return None,
        };
        if tool.read_only || !self.session.keeps_log() {
            return None;
        }
        if let Some(again) = self.again {
            return Some(Action::Again { again, timed_out: self.timed_out });
        }
        let mut args = serde_json::Map::new();
        for (i, (field, val)) in tool.params.iter().zip(&self.params).enumerate() {
            let value = field.shape.to_json(val);
            if i != session_param && !value.is_null() {
                args.insert(field.json.clone(), value);
            }
        }
        // A game's own `reasoning` parameter is kept where the host's is;
        // the decision number has its own place too.
        let own = args.remove(REASONING).and_then(|v| v.as_str().map(String::from));
        args.remove(DECISION);
        Some(Action::Call {
            call: tool.name.clone(),
            by: self.caller.clone(),
            args: serde_json::Value::Object(args),
            decision: self.decision,
            refused: false,
            timed_out: self.timed_out,
            reasoning: self.said.reasoning.clone().or(own),
            usage: self.said.usage,
            at_ms: None,
            think_ms: None,
            policy: self.by_policy,
        })
    }
}

/// A decision call held waiting for its answer, for as long as this lives
/// (`Session::awaiting`); when it goes, calls waiting for that answer wake.
pub(super) struct Awaiting {
    session: Arc<Session>,
    caller: String,
    decision: u64,
}

impl Awaiting {
    pub fn start(session: &Arc<Session>, caller: &str, decision: u64) -> Awaiting {
        session.awaiting(caller, decision, true);
        Awaiting { session: session.clone(), caller: caller.to_string(), decision }
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        self.session.awaiting(&self.caller, self.decision, false);
        self.session.bump();
    }
}

/// What the host adds to a call's final answer (`value`), for the agent:
/// the join code of a new game with a seat open; what the creator chose,
/// for the agent that just took a seat; the seed and secret that replay a
/// game that has ended, once to each player.
pub(super) fn notes(session: &Session, plugin: &Plugin, tool: &ToolDef, caller: &str, value: &Option<Val>) -> Option<String> {
    let ok = !matches!(value, Some(Val::Result(Err(_))));
    let mut notes = Vec::new();
    if ok && tool.role == Role::Creates {
        notes.extend(join_note(session, plugin));
    }
    if ok && tool.audience == Audience::Joins {
        notes.push(seed_note(session));
    }
    if let Some((who, policy)) = session.lost_by_policy().filter(|(who, _)| who == caller) {
        notes.push(format!(
            "That was one refused move too many for this game's illegal-move policy ({}): the game is over, and {who} lost it.",
            policy.in_words()
        ));
    }
    if let Some(starts) = seeded_start(plugin)
        && let Some((seed, secret)) = session.secret_for(caller)
    {
        notes.push(format!(
            "The game is over. Its seed was {seed} and its secret {secret}: `{starts}` with `{SEED}` {seed} and `{SECRET}` \
             {secret} plays it again exactly (a replay, left out of every report)."
        ));
    }
    (!notes.is_empty()).then(|| notes.join("\n\n"))
}

/// The tool that starts a game with a seed, if the plugin has one.
fn seeded_start(plugin: &Plugin) -> Option<&str> {
    plugin.tools.iter().find(|t| t.role == Role::Creates && t.params.iter().any(|f| f.json == SEED)).map(|t| t.name.as_str())
}

/// What the creator of a game with a seat open is told: the code to hand out.
fn join_note(session: &Session, plugin: &Plugin) -> Option<String> {
    let (code, tool) = (session.join_code()?, super::joins_tool(plugin)?);
    if !session.has_open_seat() {
        return None;
    }
    Some(format!(
        "Join code: {code}. To let another agent take the open seat, give them the game id and this code; they pass both \
         to `{tool}` (`{}`). To play the other side yourself, call it with the code too. Until then nobody plays that \
         seat. `ludus_sessions` shows the code again.",
        crate::plugin::JOIN_CODE
    ))
}

/// What an agent that takes a seat is told of the game's seed.
fn seed_note(session: &Session) -> String {
    let seeding = &session.seeding;
    if seeding.replay {
        return "This game replays a finished one: its creator gave the seed and secret that were published when it ended, \
                so every side's hidden parts (teams, cards, chance) are known. It is marked a replay in its record and left \
                out of every figure of `ludus report`."
            .into();
    }
    match (seeding.secret, seeding.chosen) {
        (None, _) => "The operator lets this game's creator fix whole seeds: everything in it, yours included, follows from the \
                      seed the creator chose."
            .into(),
        (Some(_), true) => "The creator chose this game's seed: what only the creator sees (its own team or deck order) may \
                            follow from it. Everything hidden from the creator, yours included, comes from the game's secret, \
                            which is published when the game is over."
            .into(),
        (Some(_), false) => "The server drew this game's seed; everything hidden comes from the game's secret, which is \
                             published when the game is over."
            .into(),
    }
}
