//! `blocks_world`: the Blocks World puzzle of "The Illusion of Thinking" as
//! a Ludus game. One instance is one puzzle (its `env_id` is the session id).

ludus_sdk::bindings!(world: "ludus:blocks-world/blocks-world", contract: "../../wit/plugin", client);

pub mod prompts;
pub mod rules;

use std::cell::RefCell;

use exports::ludus::blocks_world::tools::{Guest, Moved, PlanResult, Reset, Snapshot, Started};
use ludus_sdk::{puzzle, reply};
use rules::{Move, Optimum, Stacks, World};

const TYPE: &str = "BlocksWorld";

/// The puzzle and its optimum (searched once, at the start).
#[derive(serde::Serialize, serde::Deserialize)]
struct Puzzle {
    world: World,
    optimal: u64,
    exact: bool,
    /// For its result record: `{"n":4,"instance":"paper"}` (or `"given"`).
    parameters: String,
}

impl Puzzle {
    /// The optimum as a result record takes it: none when only a bound is known.
    fn exact_optimum(&self) -> Option<u32> {
        self.exact.then_some(self.optimal as u32)
    }
}

thread_local! {
    static GAME: RefCell<Option<Puzzle>> = const { RefCell::new(None) };
}

fn with_game<T>(f: impl FnOnce(&mut Puzzle) -> Result<T, String>) -> Result<T, String> {
    GAME.with_borrow_mut(|g| f(g.as_mut().ok_or("this puzzle was not started")?))
}

fn optimum_words(p: &Puzzle) -> String {
    if p.exact { format!("the optimum is {} moves", p.optimal) } else { format!("at least {} moves are needed (a lower bound)", p.optimal) }
}

fn next_step(p: &Puzzle) -> String {
    let w = &p.world;
    if w.goal_reached() {
        let verdict = match (p.exact, w.moves_made.checked_sub(p.optimal)) {
            (true, Some(0)) => "optimal".to_string(),
            (true, Some(more)) => format!("{more} more than optimal"),
            _ => optimum_words(p),
        };
        format!("Solved: the stacks match the goal after {} moves ({verdict}).", w.moves_made)
    } else {
        "Next: call `blocks_world_execute_move` with [block, from_stack, to_stack], or `blocks_world_execute_moves` with a whole plan."
            .into()
    }
}

struct Plugin;

// The puzzles' shared glue; a restart keeps the puzzle.
ludus_sdk::puzzle!(
    Plugin,
    GAME,
    "blocks_world",
    "Blocks World",
    "Blocks World as in Apple's \"The Illusion of Thinking\": the paper's instances or your own, step by step or as \
     a whole plan, with the optimum (exact up to 7 blocks, else a lower bound).",
    start: "Start a Blocks World puzzle",
    one_move: "Move one block",
    prompts: prompts::PAPER
);

// The illegal-move policy's random move: one block move from the legal ones.
ludus_sdk::legal_moves!(Plugin, || {
    let moves = GAME.with_borrow(|g| g.as_ref().filter(|p| !p.world.goal_reached()).map(|p| p.world.legal_moves()).unwrap_or_default());
    let json = ludus_sdk::tally::json_string;
    moves.iter().map(|(block, from, to)| ("execute-move", format!("{{\"move\":[{},{from},{to}]}}", json(block)))).collect()
});

impl Guest for Plugin {
    fn init_simulator(n: Option<u32>, initial: Option<Stacks>, goal: Option<Stacks>) -> Result<Started, String> {
        let given = initial.is_some();
        let (start, end) = match (initial, goal) {
            (Some(s), Some(g)) => (s, g),
            (None, None) => rules::paper_instance(n.unwrap_or(4))?,
            _ => return Err("give both `initial` and `goal`, or neither (the paper's instance of `n` blocks)".into()),
        };
        let world = World::new(start, end)?;
        let (optimal, exact) = match world.optimum() {
            Optimum::Exact(m) => (m, true),
            Optimum::AtLeast(m) => (m, false),
        };
        let blocks: usize = world.start.iter().map(Vec::len).sum();
        let instance = if given { "given" } else { "paper" };
        let parameters = format!("{{\"n\":{blocks},\"instance\":\"{instance}\"}}");
        let p = Puzzle { world, optimal, exact, parameters };
        let env_id = ludus_sdk::session_id().unwrap_or_default();
        let text = reply(format!("Started puzzle {env_id}: {}.\n{}", optimum_words(&p), p.world.render()), puzzle::with_due(next_step(&p)));
        let started = Started {
            decision: 1,
            env_id,
            simulator_type: TYPE.into(),
            state: p.world.stacks.clone(),
            goal: p.world.goal.clone(),
            optimal_moves: optimal,
            optimum_exact: exact,
            text,
        };
        puzzle::started(p.parameters.clone(), p.exact_optimum());
        GAME.set(Some(p));
        Ok(started)
    }

    fn execute_move(_env_id: String, mv: Move, decision: Option<u32>) -> Result<Moved, String> {
        with_game(|p| {
            puzzle::check_decision(decision)?;
            let applied = p.world.apply(&mv);
            puzzle::moved(applied.is_ok(), p.world.goal_reached());
            if let Err(why) = applied {
                return Err(reply(
                    format!("Illegal move [{:?}, {}, {}]: {why}.\n{}", mv.0, mv.1, mv.2, p.world.render()),
                    p.world.render_legal(),
                ));
            }
            Ok(Moved {
                decision: puzzle::decision_due(),
                move_successful: true,
                state: p.world.stacks.clone(),
                goal_reached: puzzle::solved(),
                moves_made: p.world.moves_made,
                optimal_moves: p.optimal,
                optimum_exact: p.exact,
                text: reply(
                    format!("Moved {} from stack {} to stack {}.\n{}", mv.0, mv.1, mv.2, p.world.render()),
                    puzzle::with_due(next_step(p)),
                ),
            })
        })
    }

    fn execute_moves(_env_id: String, moves: Vec<Move>, decision: Option<u32>) -> Result<PlanResult, String> {
        with_game(|p| {
            puzzle::check_decision(decision)?;
            let plan = ludus_sdk::plan::run(&moves, "move", |m| p.world.apply(m));
            let refused = plan.failure.as_ref().map(|f| f.0);
            puzzle::planned(plan.executed, refused, p.world.goal_reached());
            Ok(PlanResult {
                decision: puzzle::decision_due(),
                all_moves_successful: plan.failure.is_none(),
                moves_executed: plan.executed,
                failed_move_index: plan.failure.as_ref().map(|f| f.0),
                failure_reason: plan.failure.map(|f| f.1),
                state: p.world.stacks.clone(),
                goal_reached: puzzle::solved(),
                moves_made: p.world.moves_made,
                optimal_moves: p.optimal,
                optimum_exact: p.exact,
                text: reply(
                    format!("{}\n{}", plan.summary, p.world.render()),
                    puzzle::with_due(puzzle::after_plan(refused, p.world.goal_reached(), next_step(p))),
                ),
            })
        })
    }

    fn reset_simulator(_env_id: String, state: Option<Stacks>) -> Result<Reset, String> {
        with_game(|p| {
            // From a position of the agent's choosing the optimum is not the start's.
            let optimum = if state.is_none() { p.exact_optimum() } else { None };
            match state {
                Some(s) => p.world.set_state(s).map_err(|e| format!("cannot reset to that state: {e}"))?,
                None => p.world = World::new(p.world.start.clone(), p.world.goal.clone())?,
            }
            puzzle::started(p.parameters.clone(), optimum);
            let text = reply(format!("Reset.\n{}", p.world.render()), puzzle::with_due(next_step(p)));
            Ok(Reset { decision: puzzle::decision_due(), reset_successful: true, current_state: p.world.stacks.clone(), text })
        })
    }

    fn get_state(_env_id: String) -> Result<Snapshot, String> {
        with_game(|p| {
            Ok(Snapshot {
                decision: puzzle::decision_due(),
                simulator_type: TYPE.into(),
                state: p.world.stacks.clone(),
                goal: p.world.goal.clone(),
                goal_reached: puzzle::solved(),
                moves_made: p.world.moves_made,
                optimal_moves: p.optimal,
                optimum_exact: p.exact,
                text: reply(p.world.render(), puzzle::with_due(next_step(p))),
            })
        })
    }
}

// Exports only exist in the component; native builds (unit tests) skip them.
#[cfg(target_arch = "wasm32")]
export!(Plugin);
