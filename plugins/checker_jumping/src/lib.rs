//! `checker_jumping`: the Checker Jumping puzzle of "The Illusion of
//! Thinking" as a Ludus game. One instance is one puzzle (its `env_id` is
//! the session id).

ludus_sdk::bindings!(world: "ludus:checker-jumping/checker-jumping", contract: "../../wit/plugin", client);

pub mod prompts;
pub mod rules;

use std::cell::RefCell;

use exports::ludus::checker_jumping::tools::{Guest, Moved, Params, PlanResult, Reset, Snapshot, Started};
use ludus_sdk::{puzzle, reply};
use rules::{Board, Move};

const TYPE: &str = "CheckerJumping";

thread_local! {
    static GAME: RefCell<Option<Board>> = const { RefCell::new(None) };
}

fn with_game<T>(f: impl FnOnce(&mut Board) -> Result<T, String>) -> Result<T, String> {
    GAME.with_borrow_mut(|g| f(g.as_mut().ok_or("this puzzle was not started")?))
}

fn next_step(g: &Board) -> String {
    if g.goal_reached() {
        let verdict = match g.moves_made.checked_sub(g.optimal_moves()) {
            Some(0) => "optimal".to_string(),
            Some(more) => format!("{more} more than optimal"),
            None => "from a position set by a reset".to_string(),
        };
        format!("Solved: the colours are swapped after {} moves ({verdict}).", g.moves_made)
    } else if g.dead_end() {
        "Dead end: no legal move is left and the colours are not swapped. Reset with `checker_jumping_reset_simulator`.".into()
    } else {
        "Next: call `checker_jumping_execute_move` with [colour, from, to], or `checker_jumping_execute_moves` with a whole plan.".into()
    }
}

/// The puzzle's parameters for its result record.
fn parameters(n: u32) -> String {
    format!("{{\"n\":{n}}}")
}

/// A dead end fails the game: no move can reach the goal from it.
fn stuck(g: &Board) {
    if g.dead_end() {
        puzzle::dead_end();
    }
}

struct Plugin;

// The puzzles' shared glue; a restart keeps the puzzle: its state is the `Board` value.
ludus_sdk::puzzle!(
    Plugin,
    GAME,
    "checker_jumping",
    "Checker Jumping",
    "Checker Jumping as in Apple's \"The Illusion of Thinking\": step by step or as a whole plan, with the optimal \
     move count and dead ends said.",
    start: "Start a Checker Jumping puzzle",
    one_move: "Move one checker",
    prompts: prompts::PAPER
);

fn moved_text(g: &Board, (c, f, t): &Move) -> String {
    let how = if f.abs_diff(*t) == 2 { "jumped" } else { "slid" };
    reply(format!("{c} {how} from cell {f} to cell {t}.\n{}", g.render()), puzzle::with_due(next_step(g)))
}

// The illegal-move policy's random move: one slide or jump from the legal ones.
ludus_sdk::legal_moves!(Plugin, || {
    let moves = GAME.with_borrow(|g| g.as_ref().filter(|b| !b.goal_reached()).map(Board::legal_moves).unwrap_or_default());
    let json = ludus_sdk::tally::json_string;
    moves.iter().map(|(colour, from, to)| ("execute-move", format!("{{\"move\":[{},{from},{to}]}}", json(colour)))).collect()
});

impl Guest for Plugin {
    fn init_simulator(n: u32) -> Result<Started, String> {
        let g = Board::new(n)?;
        let env_id = ludus_sdk::session_id().unwrap_or_default();
        let text = reply(
            format!("Started puzzle {env_id}.\n{}", g.render()),
            "Goal: the blue checkers on the left, the red on the right. Next: call `checker_jumping_execute_move` with \
             [colour, from, to], e.g. [\"R\", N-1, N].",
        );
        let started = Started {
            decision: 1,
            env_id,
            simulator_type: TYPE.into(),
            simulator_params: Params { n },
            state: g.letters(),
            optimal_moves: g.optimal_moves(),
            text,
        };
        puzzle::started(parameters(n), Some(g.optimal_moves() as u32));
        GAME.set(Some(g));
        Ok(started)
    }

    fn execute_move(_env_id: String, mv: Move, decision: Option<u32>) -> Result<Moved, String> {
        with_game(|g| {
            puzzle::check_decision(decision)?;
            let applied = g.apply(&mv);
            puzzle::moved(applied.is_ok(), g.goal_reached());
            stuck(g);
            if let Err(why) = applied {
                return Err(reply(format!("Illegal move [{:?}, {}, {}]: {why}.\n{}", mv.0, mv.1, mv.2, g.render()), g.render_legal()));
            }
            Ok(Moved {
                decision: puzzle::decision_due(),
                move_successful: true,
                state: g.letters(),
                goal_reached: puzzle::solved(),
                dead_end: g.dead_end(),
                moves_made: g.moves_made,
                optimal_moves: g.optimal_moves(),
                text: moved_text(g, &mv),
            })
        })
    }

    fn execute_moves(_env_id: String, moves: Vec<Move>, decision: Option<u32>) -> Result<PlanResult, String> {
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
                state: g.letters(),
                goal_reached: puzzle::solved(),
                dead_end: g.dead_end(),
                moves_made: g.moves_made,
                optimal_moves: g.optimal_moves(),
                text: reply(
                    format!("{}\n{}", plan.summary, g.render()),
                    puzzle::with_due(puzzle::after_plan(refused, g.goal_reached(), next_step(g))),
                ),
            })
        })
    }

    fn reset_simulator(_env_id: String, state: Option<Vec<String>>) -> Result<Reset, String> {
        with_game(|g| {
            match &state {
                Some(s) => g.set_state(s).map_err(|e| format!("cannot reset to that state: {e}"))?,
                None => *g = Board::new(g.n)?,
            }
            // From a position of the agent's choosing the optimum is not the start's.
            puzzle::started(parameters(g.n), state.is_none().then(|| g.optimal_moves() as u32));
            stuck(g);
            Ok(Reset {
                decision: puzzle::decision_due(),
                reset_successful: true,
                current_state: g.letters(),
                text: reply(format!("Reset.\n{}", g.render()), puzzle::with_due(next_step(g))),
            })
        })
    }

    fn get_state(_env_id: String) -> Result<Snapshot, String> {
        with_game(|g| {
            Ok(Snapshot {
                decision: puzzle::decision_due(),
                simulator_type: TYPE.into(),
                simulator_params: Params { n: g.n },
                state: g.letters(),
                goal_reached: puzzle::solved(),
                dead_end: g.dead_end(),
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
