//! `hanoi`: the Tower of Hanoi of "The Illusion of Thinking" as a Ludus game.
//! One instance is one puzzle (its `env_id` is the session id).

ludus_sdk::bindings!(world: "ludus:hanoi/hanoi", contract: "../../wit/plugin", client);

pub mod prompts;
pub mod rules;

use std::cell::RefCell;

use exports::ludus::hanoi::tools::{Guest, Moved, Params, PlanResult, Reset, Snapshot, Started};
use ludus_sdk::{puzzle, reply};
use rules::Hanoi;

thread_local! {
    static GAME: RefCell<Option<Hanoi>> = const { RefCell::new(None) };
}

fn with_game<T>(f: impl FnOnce(&mut Hanoi) -> Result<T, String>) -> Result<T, String> {
    GAME.with_borrow_mut(|g| f(g.as_mut().ok_or("this puzzle was not started")?))
}

fn next_step(g: &Hanoi) -> String {
    if g.goal_reached() {
        let verdict = if g.moves_made == g.optimal_moves() {
            "optimal".to_string()
        } else {
            format!("{} more than optimal", g.moves_made - g.optimal_moves())
        };
        format!("Solved: all disks are on peg 2 after {} moves ({verdict}).", g.moves_made)
    } else {
        "Next: call `hanoi_execute_move` with [disk, from_peg, to_peg], or `hanoi_execute_moves` with a whole plan.".into()
    }
}

/// The puzzle's parameters for its result record.
fn parameters(n: u32) -> String {
    format!("{{\"n\":{n}}}")
}

fn pegs(g: &Hanoi) -> Vec<Vec<u32>> {
    g.pegs.to_vec()
}

struct Plugin;

// The puzzles' shared glue; a restart keeps the puzzle: its state is the `Hanoi` value.
ludus_sdk::puzzle!(
    Plugin,
    GAME,
    "hanoi",
    "Tower of Hanoi",
    "Tower of Hanoi as in Apple's \"The Illusion of Thinking\": step by step or as a whole plan, with the optimal move count.",
    start: "Start a Tower of Hanoi puzzle",
    one_move: "Move one disk",
    prompts: prompts::PAPER
);

// The illegal-move policy's random move: one disk move from the legal ones.
ludus_sdk::legal_moves!(Plugin, || {
    let moves = GAME.with_borrow(|g| g.as_ref().filter(|g| !g.goal_reached()).map(Hanoi::legal_moves).unwrap_or_default());
    moves.iter().map(|[disk, from, to]| ("execute-move", format!("{{\"move\":[{disk},{from},{to}]}}"))).collect()
});

impl Guest for Plugin {
    fn init_simulator(n: u32) -> Result<Started, String> {
        let g = Hanoi::new(n)?;
        let env_id = ludus_sdk::session_id().unwrap_or_default();
        let text = reply(
            format!("Started puzzle {env_id}.\n{}", g.render()),
            "Goal: move every disk to peg 2. Next: call `hanoi_execute_move` with [disk, from_peg, to_peg], e.g. [1, 0, 2].",
        );
        let started = Started {
            decision: 1,
            env_id,
            simulator_type: "TowerOfHanoi".into(),
            simulator_params: Params { n },
            state: pegs(&g),
            optimal_moves: g.optimal_moves(),
            text,
        };
        puzzle::started(parameters(n), Some(g.optimal_moves() as u32));
        GAME.set(Some(g));
        Ok(started)
    }

    fn execute_move(_env_id: String, mv: Vec<u32>, decision: Option<u32>) -> Result<Moved, String> {
        with_game(|g| {
            puzzle::check_decision(decision)?;
            let applied = g.apply(&mv);
            puzzle::moved(applied.is_ok(), g.goal_reached());
            if let Err(why) = applied {
                return Err(reply(format!("Illegal move {mv:?}: {why}.\n{}", g.render()), g.render_legal()));
            }
            Ok(Moved {
                decision: puzzle::decision_due(),
                move_successful: true,
                state: pegs(g),
                goal_reached: puzzle::solved(),
                moves_made: g.moves_made,
                optimal_moves: g.optimal_moves(),
                text: reply(
                    format!("Moved disk {} from peg {} to peg {}.\n{}", mv[0], mv[1], mv[2], g.render()),
                    puzzle::with_due(next_step(g)),
                ),
            })
        })
    }

    fn execute_moves(_env_id: String, moves: Vec<Vec<u32>>, decision: Option<u32>) -> Result<PlanResult, String> {
        with_game(|g| {
            puzzle::check_decision(decision)?;
            let plan = ludus_sdk::plan::run(&moves, "move", |m| g.apply(m));
            let refused = plan.failure.as_ref().map(|f| f.0);
            puzzle::planned(plan.executed, refused, g.goal_reached());
            Ok(PlanResult {
                decision: puzzle::decision_due(),
                all_moves_successful: plan.failure.is_none(),
                moves_executed: plan.executed,
                failed_move_index: plan.failure.as_ref().map(|f| f.0),
                failure_reason: plan.failure.map(|f| f.1),
                state: pegs(g),
                goal_reached: puzzle::solved(),
                moves_made: g.moves_made,
                optimal_moves: g.optimal_moves(),
                text: reply(
                    format!("{}\n{}", plan.summary, g.render()),
                    puzzle::with_due(puzzle::after_plan(refused, g.goal_reached(), next_step(g))),
                ),
            })
        })
    }

    fn reset_simulator(_env_id: String, state: Option<Vec<Vec<u32>>>) -> Result<Reset, String> {
        with_game(|g| {
            match &state {
                Some(s) => g.set_state(s).map_err(|e| format!("cannot reset to that state: {e}"))?,
                None => *g = Hanoi::new(g.n)?,
            }
            // From a position of the agent's choosing the optimum is not the start's.
            puzzle::started(parameters(g.n), state.is_none().then(|| g.optimal_moves() as u32));
            Ok(Reset {
                decision: puzzle::decision_due(),
                reset_successful: true,
                current_state: pegs(g),
                text: reply(format!("Reset.\n{}", g.render()), puzzle::with_due(next_step(g))),
            })
        })
    }

    fn get_state(_env_id: String) -> Result<Snapshot, String> {
        with_game(|g| {
            Ok(Snapshot {
                decision: puzzle::decision_due(),
                simulator_type: "TowerOfHanoi".into(),
                simulator_params: Params { n: g.n },
                state: pegs(g),
                goal_reached: puzzle::solved(),
                moves_made: g.moves_made,
                optimal_moves: g.optimal_moves(),
                text: reply(g.render(), puzzle::with_due(next_step(g))),
            })
        })
    }
}

// Exports only exist in the component; native builds (unit tests) skip them.
#[cfg(target_arch = "wasm32")]
export!(Plugin);
