//! A recorded game played again (`ludus verify`): the build that played it
//! starts a game from the record's seed and secret, under the illegal-move
//! policy it was played under, and runs the record's log in order — every
//! call that could change the game (refused ones too: they count), every
//! timer that fired, every line its processes sent. The record reproduces
//! when the game ends as the record says. Why a log of calls rather than of
//! states: docs/design/records.md, "Replays and verification".

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use wasmtime::component::Val;

use super::step::{Answered, Pick, Step};
use super::{Home, Names, Seeding, Session, Sessions};
use crate::capability::CallInfo;
use crate::plugin::{DECISION, Plugin, REASONING, Role};
use crate::records::{Action, ReplayStep, ResultRecord, line_digests};
use crate::runtime::run_guest;

/// What playing a record again came to.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// The game ended as recorded, after this many actions.
    Reproduced { actions: usize },
    /// It did not: where and how it went otherwise.
    Differs(String),
    /// It could not be played again: why (no log; the game would not start).
    Cannot(String),
}

/// How far a replay went through the log.
#[derive(Default)]
struct Played {
    actions: usize,
    /// Where a process first said something other than the log's digest.
    first_other_line: Option<String>,
    steps: Vec<ReplayStep>,
}

/// The largest answer a replay step keeps whole (bytes of JSON): the page
/// of a long Magic game stays loadable.
const MAX_STEP_ANSWER: usize = 24 * 1024;

impl Played {
    /// Keeps the step of action `i` (from 0).
    fn step(&mut self, i: usize, mut step: ReplayStep) {
        step.action = i + 1;
        let size = step.answer.to_string().len();
        if size > MAX_STEP_ANSWER {
            step.answer = serde_json::json!({"shown": format!("an answer of {size} bytes, too long to show here")});
        }
        self.steps.push(step);
    }
}

/// A replay's game is listed nowhere: a rename (`host.rename-session`) is
/// always free.
struct Unlisted;

impl Names for Unlisted {
    fn rename(&self, _old: &str, _new: &str) -> Result<(), String> {
        Ok(())
    }
}

impl Sessions {
    /// Plays `record` again on `plugin`, which must be the build that
    /// played it (the caller matches `record.build`).
    pub async fn replay(&self, plugin: Arc<Plugin>, record: &ResultRecord) -> Verdict {
        self.replay_with_steps(plugin, record).await.0
    }

    /// The same, with the replay's steps: each call and the answer it got.
    pub async fn replay_with_steps(&self, plugin: Arc<Plugin>, record: &ResultRecord) -> (Verdict, Vec<ReplayStep>) {
        let Some(game) = record.record.rsplit_once('/').and_then(|(_, n)| n.parse::<u32>().ok()) else {
            return (Verdict::Cannot(format!("its id {:?} is not SESSION/GAME", record.record)), Vec::new());
        };
        if record.actions.is_empty() {
            let why = "it has no action log (written before records kept one, or by a game that never changed)";
            return (Verdict::Cannot(why.into()), Vec::new());
        }
        let names: Arc<dyn Names> = Arc::new(Unlisted);
        let home = Home { table: Arc::downgrade(&names) as Weak<dyn Names>, store: None, records: None };
        let seeding = Seeding { seed: record.seed, chosen: true, secret: record.secret, replay: record.replay };
        let (p, creator, policy, rt) = (plugin.clone(), record.caller.clone(), record.illegal_move_policy.policy, self.rt.clone());
        let started = tokio::task::spawn_blocking(move || Session::start_replay(p, seeding, &creator, policy, home, rt)).await;
        let session = match started {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => return (Verdict::Cannot(format!("the game would not start: {e}")), Vec::new()),
            Err(e) => return (Verdict::Cannot(format!("the game would not start: {e}")), Vec::new()),
        };
        let mut log = Played::default();
        let played = self.run_log(&session, &plugin, record, game, &mut log).await;
        // The last step shows where the game ended, as its creator sees it.
        if let Some(view) = final_view(&session, &plugin, &record.caller).await {
            log.step(record.actions.len(), view);
        }
        let replayed = session.replayed_record(game).unwrap_or_else(|| session.record_now(&record.ended));
        session.stop_io();
        drop(names);
        // A process's lines that differ (it prints the time) matter only if the game went otherwise.
        let hint =
            log.first_other_line.map(|l| format!(" (its processes said other things than when played; first at {l})")).unwrap_or_default();
        let verdict = match played {
            Err((n, why)) => Verdict::Differs(format!("action {n} of {}: {why}{hint}", record.actions.len())),
            Ok(()) => match differences(record, &replayed) {
                none if none.is_empty() => Verdict::Reproduced { actions: log.actions },
                some => Verdict::Differs(format!("played again, {}{hint}", some.join("; "))),
            },
        };
        (verdict, log.steps)
    }

    /// Runs the log until the record's game ends; how many actions ran, or
    /// the action (counted from 1) that went otherwise and how.
    async fn run_log(
        &self,
        session: &Arc<Session>,
        plugin: &Arc<Plugin>,
        record: &ResultRecord,
        game: u32,
        log: &mut Played,
    ) -> Result<(), (usize, String)> {
        // The random move the illegal-move policy played in the replay,
        // which the log must have next, made by the host.
        let mut picked: Option<Pick> = None;
        for (i, action) in record.actions.iter().enumerate() {
            if session.replayed_record(game).is_some() {
                return Ok(());
            }
            log.actions = i + 1;
            // The policy's move is logged when it runs: what a process said
            // or a timer did between the refusal and that move comes first.
            let event = matches!(
                action,
                Action::Input { .. } | Action::Timer { .. } | Action::Closed { .. } | Action::Rebuilt { .. } | Action::OutOfTime { .. }
            );
            if !event {
                same_pick(picked.take(), action).map_err(|why| (i + 1, why))?;
            }
            let ran = match action {
                Action::Call { .. } => replay_call(session, plugin, action, None).await.map(|(step, pick)| {
                    picked = pick;
                    log.step(i, step)
                }),
                Action::Again { again, timed_out } => match record.actions.get(*again) {
                    Some(call @ Action::Call { .. }) if *again < i => {
                        replay_call(session, plugin, call, Some(*timed_out)).await.map(|(step, pick)| {
                            picked = pick;
                            log.step(i, step)
                        })
                    }
                    _ => Err(format!("it runs action {} again, which is no earlier call", again + 1)),
                },
                Action::Timer { timer } => session.replay_timer(*timer).await,
                Action::Input { input, lines } => {
                    match session.replay_lines(*input, lines, &later_lines(&record.actions[i + 1..], *input)).await {
                        Ok(Some(said)) if log.first_other_line.is_none() => {
                            log.first_other_line = Some(format!("action {}: channel {input}'s process said {said:?}", i + 1));
                            Ok(())
                        }
                        Ok(_) => Ok(()),
                        Err(e) => Err(e),
                    }
                }
                Action::Closed { closed } => session.replay_closed(*closed).await,
                Action::Rebuilt { .. } => session.replay_rebuilt().await,
                Action::OutOfTime { out_of_time } => session.replay_out_of_time(out_of_time),
            };
            ran.map_err(|why| (i + 1, why))?;
        }
        Ok(())
    }
}

/// Checks that the host's moves under the illegal-move policy went as
/// when played: the move the replay picked (if any) is the next call,
/// and an action the host made was picked in the replay too.
fn same_pick(picked: Option<Pick>, next: &Action) -> Result<(), String> {
    let logged = match next {
        Action::Call { call, args, policy: true, .. } => Some((call, args)),
        _ => None,
    };
    match (picked, logged) {
        (None, None) => Ok(()),
        (Some(p), Some((call, args))) if &p.tool == call && &p.args == args => Ok(()),
        (Some(p), Some((call, args))) => Err(format!("the illegal-move policy played `{call}` {args} when played, and {} now", p.shown())),
        (Some(p), None) => Err(format!("the illegal-move policy played {} now, and nothing when played", p.shown())),
        (None, Some((call, args))) => Err(format!("the illegal-move policy played `{call}` {args} when played, and nothing now")),
    }
}

/// The digests of the lines the log has from channel `channel` a little
/// further on (its next eight entries of that channel's lines), by which a
/// replay knows a line belongs there.
fn later_lines(rest: &[Action], channel: u32) -> HashSet<&str> {
    let entries = rest.iter().filter_map(|a| match a {
        Action::Input { input, lines } if *input == channel => Some(lines),
        _ => None,
    });
    entries.take(8).flat_map(|lines| line_digests(lines)).collect()
}

/// Runs one logged call as its player made it, and checks that the game
/// took or refused it as it did then; or (`again`: whether its wait ran
/// out) a held call's re-run, whose answer is not checked. Its step, with
/// the answer the game gave.
async fn replay_call(
    session: &Arc<Session>,
    plugin: &Arc<Plugin>,
    action: &Action,
    again: Option<bool>,
) -> Result<(ReplayStep, Option<Pick>), String> {
    let Action::Call { call, by, args, decision, refused, timed_out, reasoning, usage, policy, .. } = action else {
        return Err("not a call".into());
    };
    let shown_args = args.clone();
    let timed_out = &again.unwrap_or(*timed_out);
    let index = plugin.tools.iter().position(|t| &t.name == call).ok_or_else(|| format!("the build has no tool `{call}`"))?;
    let tool = &plugin.tools[index];
    let mut args = args.as_object().cloned().unwrap_or_default();
    if let Role::Uses(i) = tool.role {
        args.insert(tool.params[i].json.clone(), session.id().into());
    }
    if let Some(n) = decision {
        args.insert(DECISION.into(), (*n).into());
    }
    if let Some(r) = reasoning.as_ref().filter(|_| !tool.host_reasoning && tool.params.iter().any(|f| f.json == REASONING)) {
        args.insert(REASONING.into(), r.clone().into());
    }
    let params = tool.convert_args(&args).map_err(|e| format!("`{call}` by {by}: {e}"))?;
    let step = Step {
        session: session.clone(),
        version: plugin.clone(),
        index,
        decision: tool.decision_argument(&params),
        params,
        caller: by.clone(),
        said: crate::records::Said { reasoning: reasoning.clone(), usage: *usage },
        again: None,
        first: again.is_none(),
        timed_out: *timed_out,
        by_policy: *policy,
    };
    let info = CallInfo { caller: by.clone(), timed_out: *timed_out, ..CallInfo::default() };
    let answered = run_guest(&tool.pace, move || step.run(info)).await.map_err(|e| e.to_string())?;
    let (value, pick) = match answered.map_err(|e| format!("`{call}` by {by} failed: {e}"))? {
        Answered::Game(inv) => (inv.value, None),
        Answered::Random { refused, pick } => (refused.value, Some(pick)),
        Answered::Kept(_) | Answered::AnswerPending => {
            return Err(format!("`{call}` by {by}: the game said its decision was made already"));
        }
    };
    let was = matches!(value, Some(Val::Result(Err(_))));
    if again.is_none() {
        match (*refused, was) {
            (true, false) => return Err(format!("`{call}` by {by} was refused when played, and taken now")),
            (false, true) => return Err(format!("`{call}` by {by} was taken when played, and refused now")),
            _ => {}
        }
    }
    let answer = match (&tool.result, &value) {
        (Some(shape), Some(v)) => shape.to_json(v),
        _ => serde_json::Value::Null,
    };
    // A result's `ok` or `err` is the answer the player read.
    let answer = match answer {
        serde_json::Value::Object(mut o) if o.len() == 1 && (o.contains_key("ok") || o.contains_key("err")) => {
            o.remove("ok").or_else(|| o.remove("err")).unwrap_or_default()
        }
        other => other,
    };
    let step = ReplayStep {
        action: 0,
        by: by.clone(),
        call: call.clone(),
        args: shown_args,
        reasoning: reasoning.clone(),
        again: again.is_some(),
        refused: was,
        by_policy: *policy,
        answer,
    };
    Ok((step, pick))
}

/// The game's state at the end of a replay, from its read-only tool that
/// needs nothing but the game's id (preferring one that names a state):
/// what a game that ended in an event (the engine's mating move) shows.
async fn final_view(session: &Arc<Session>, plugin: &Arc<Plugin>, creator: &str) -> Option<ReplayStep> {
    let only_the_id = |t: &&crate::plugin::ToolDef| {
        t.read_only && matches!(t.role, Role::Uses(i) if t.params.iter().enumerate().all(|(j, f)| j == i || !f.required()))
    };
    let candidates: Vec<&crate::plugin::ToolDef> = plugin.tools.iter().filter(only_the_id).collect();
    let tool = candidates.iter().find(|t| t.name.contains("state")).or(candidates.first())?;
    let call = Action::Call {
        call: tool.name.clone(),
        by: creator.to_string(),
        args: serde_json::Value::Object(Default::default()),
        decision: None,
        refused: false,
        timed_out: true,
        reasoning: None,
        usage: None,
        at_ms: None,
        think_ms: None,
        policy: false,
    };
    let (mut step, _) = replay_call(session, plugin, &call, Some(true)).await.ok()?;
    step.again = false;
    Some(step)
}

/// How the replayed game's record differs from the recorded one, in what
/// the game decides: the result, the counts, the seats.
fn differences(recorded: &ResultRecord, replayed: &ResultRecord) -> Vec<String> {
    let mut out = Vec::new();
    let mut compare = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what} {b} (recorded: {a})"));
        }
    };
    compare("it ended", recorded.outcome.name().into(), replayed.outcome.name().into());
    compare("moves", recorded.moves.to_string(), replayed.moves.to_string());
    compare("illegal moves", recorded.illegal_moves.to_string(), replayed.illegal_moves.to_string());
    compare("first failing move", format!("{:?}", recorded.first_failing_move), format!("{:?}", replayed.first_failing_move));
    compare("optimum", format!("{:?}", recorded.optimum), format!("{:?}", replayed.optimum));
    compare("parameters", recorded.parameters.to_string(), replayed.parameters.to_string());
    compare("times the policy fired", recorded.illegal_move_policy.fired.to_string(), replayed.illegal_move_policy.fired.to_string());
    compare(
        "lost under the policy",
        format!("{:?}", recorded.illegal_move_policy.lost),
        format!("{:?}", replayed.illegal_move_policy.lost),
    );
    let seats = |r: &ResultRecord| {
        r.seats
            .iter()
            .map(|s| {
                let kind = serde_json::to_value(s.kind).ok().and_then(|k| k.as_str().map(String::from)).unwrap_or_default();
                format!("{} {} {kind} {}", s.seat, s.player.as_deref().unwrap_or("open"), s.result.map_or("-", |o| o.name()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    compare("seats", seats(recorded), seats(replayed));
    let figures = |r: &ResultRecord| without_dates(&r.figures).to_string();
    compare("figures", figures(recorded), figures(replayed));
    out
}

/// A game's figures without the day it was played: a PGN's `[Date …]`
/// tag says when, and a replay is played on another day.
fn without_dates(figures: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match figures {
        Value::String(s) if s.contains("[Date \"") => {
            Value::String(s.lines().filter(|l| !l.starts_with("[Date \"")).collect::<Vec<_>>().join("\n"))
        }
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), without_dates(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(without_dates).collect()),
        v => v.clone(),
    }
}
