//! `river_crossing`: the River Crossing puzzle of "The Illusion of Thinking"
//! as a Ludus game. One instance is one puzzle (its `env_id` is the session id).

ludus_sdk::bindings!(world: "ludus:river-crossing/river-crossing", contract: "../../wit/plugin", client);

pub mod prompts;
pub mod rules;

use std::cell::RefCell;

use exports::ludus::river_crossing::tools::{Banks, Guest, Moved, Params, PlanResult, Reset, Side, Snapshot, Started};
use ludus_sdk::{puzzle, reply};
use rules::River;

#[derive(serde::Serialize, serde::Deserialize)]
struct Game {
    river: River,
    /// Fewest crossings from the start (none: unsolvable), computed once.
    optimal: Option<u32>,
}

thread_local! {
    static GAME: RefCell<Option<Game>> = const { RefCell::new(None) };
}

// The puzzles' shared glue; a restart keeps the puzzle: its state is the `Game` value.
ludus_sdk::puzzle!(
    Plugin,
    GAME,
    "river_crossing",
    "River Crossing",
    "River Crossing (actors and agents) as in Apple's \"The Illusion of Thinking\", with exact solvability and optimal length.",
    start: "Start a River Crossing puzzle",
    one_move: "Cross the river once",
    prompts: prompts::PAPER
);

fn with_game<T>(f: impl FnOnce(&mut Game) -> Result<T, String>) -> Result<T, String> {
    GAME.with_borrow_mut(|g| f(g.as_mut().ok_or("this puzzle was not started")?))
}

const RULE: &str = "Rule: an actor a_i may never be with another agent A_j unless A_i is there too, on either bank and in the boat; the boat never crosses empty.";

fn side(s: rules::Side) -> Side {
    match s {
        rules::Side::Left => Side::Left,
        rules::Side::Right => Side::Right,
    }
}

fn banks(r: &River) -> Banks {
    Banks { boat: side(r.boat), left: r.names_on(rules::Side::Left), right: r.names_on(rules::Side::Right) }
}

fn next_step(g: &Game) -> String {
    let r = &g.river;
    if r.goal_reached() {
        let verdict = match g.optimal {
            Some(o) if r.moves_made == o => "optimal".to_string(),
            Some(o) => format!("{} more than optimal", r.moves_made.saturating_sub(o)),
            None => "from a reset position".into(),
        };
        return format!("Solved: everyone is on the right bank after {} crossings ({verdict}).", r.moves_made);
    }
    if g.optimal.is_none() {
        return "This instance has no solution; start another with `river_crossing_init_simulator` (e.g. a larger k).".into();
    }
    format!("Next: call `river_crossing_execute_move` with who rides from the {} bank, e.g. [\"A_1\", \"a_1\"].", r.boat.name())
}

/// The puzzle's parameters for its result record.
fn parameters(n: u32, k: u32) -> String {
    format!("{{\"n\":{n},\"k\":{k}}}")
}

fn render(g: &Game) -> String {
    g.river.render(g.optimal)
}

struct Plugin;

// The illegal-move policy's random move: one crossing from the legal ones
// (loads of up to three riders: enough to go on, and few enough to list).
ludus_sdk::legal_moves!(Plugin, || {
    let loads = GAME.with_borrow(|g| g.as_ref().filter(|g| !g.river.goal_reached()).map(|g| g.river.legal_loads(3)).unwrap_or_default());
    let json = ludus_sdk::tally::json_string;
    let list = |load: &Vec<String>| load.iter().map(|name| json(name)).collect::<Vec<_>>().join(",");
    loads.iter().map(|load| ("execute-move", format!("{{\"move\":[{}]}}", list(load)))).collect()
});

impl Guest for Plugin {
    fn init_simulator(n: u32, k: Option<u32>) -> Result<Started, String> {
        let k = k.unwrap_or_else(|| rules::default_capacity(n));
        let river = River::new(n, k)?;
        let optimal = river.shortest_remaining();
        let g = Game { river, optimal };
        let env_id = ludus_sdk::session_id().unwrap_or_default();
        let verdict = match optimal {
            Some(o) => format!("Solvable: the shortest solution takes {o} crossings."),
            None => format!("Unsolvable: no sequence of crossings gets {n} pairs across with a boat for {k} (checked exhaustively)."),
        };
        let text = reply(format!("Started puzzle {env_id}. {verdict}\n{}{RULE}", render(&g)), puzzle::with_due(next_step(&g)));
        let started = Started {
            decision: 1,
            env_id,
            simulator_type: "RiverCrossing".into(),
            simulator_params: Params { n, k },
            state: banks(&g.river),
            solvable: optimal.is_some(),
            optimal_moves: optimal,
            text,
        };
        puzzle::started(parameters(n, k), optimal);
        GAME.set(Some(g));
        Ok(started)
    }

    fn execute_move(_env_id: String, load: Vec<String>, decision: Option<u32>) -> Result<Moved, String> {
        with_game(|g| {
            puzzle::check_decision(decision)?;
            let applied = g.river.apply(&load);
            puzzle::moved(applied.is_ok(), g.river.goal_reached());
            if let Err(why) = applied {
                return Err(reply(format!("Illegal crossing {load:?}: {why}.\n{}{RULE}", render(g)), next_step(g)));
            }
            Ok(Moved {
                decision: puzzle::decision_due(),
                move_successful: true,
                state: banks(&g.river),
                goal_reached: puzzle::solved(),
                moves_made: g.river.moves_made,
                optimal_moves: g.optimal,
                text: reply(format!("Crossed: {}.\n{}", load.join(", "), render(g)), puzzle::with_due(next_step(g))),
            })
        })
    }

    fn execute_moves(_env_id: String, moves: Vec<Vec<String>>, decision: Option<u32>) -> Result<PlanResult, String> {
        with_game(|g| {
            puzzle::check_decision(decision)?;
            let plan = ludus_sdk::plan::run(&moves, "crossing", |m| g.river.apply(m));
            let refused = plan.failure.as_ref().map(|f| f.0);
            puzzle::planned(plan.executed, refused, g.river.goal_reached());
            Ok(PlanResult {
                decision: puzzle::decision_due(),
                all_moves_successful: plan.failure.is_none(),
                moves_executed: plan.executed,
                failed_move_index: plan.failure.as_ref().map(|f| f.0),
                failure_reason: plan.failure.map(|f| f.1),
                state: banks(&g.river),
                goal_reached: puzzle::solved(),
                moves_made: g.river.moves_made,
                optimal_moves: g.optimal,
                text: reply(
                    format!("{}\n{}", plan.summary, render(g)),
                    puzzle::with_due(puzzle::after_plan(refused, g.river.goal_reached(), next_step(g))),
                ),
            })
        })
    }

    fn reset_simulator(_env_id: String, state: Option<Banks>) -> Result<Reset, String> {
        with_game(|g| {
            match &state {
                Some(s) => {
                    let boat = match s.boat {
                        Side::Left => rules::Side::Left,
                        Side::Right => rules::Side::Right,
                    };
                    g.river.set_state(boat, &s.left, &s.right).map_err(|e| format!("cannot reset to that position: {e}"))?;
                }
                None => g.river = River::new(g.river.n, g.river.k)?,
            }
            // From a position of the agent's choosing the optimum is not the start's.
            puzzle::started(parameters(g.river.n, g.river.k), g.optimal.filter(|_| state.is_none()));
            Ok(Reset {
                decision: puzzle::decision_due(),
                reset_successful: true,
                current_state: banks(&g.river),
                text: reply(format!("Reset.\n{}", render(g)), puzzle::with_due(next_step(g))),
            })
        })
    }

    fn get_state(_env_id: String) -> Result<Snapshot, String> {
        with_game(|g| {
            let remaining = g.river.shortest_remaining();
            let reach = match remaining {
                Some(0) => String::new(),
                Some(r) => format!("The goal is {r} crossings away.\n"),
                None => "The goal cannot be reached from this position; reset the puzzle.\n".into(),
            };
            Ok(Snapshot {
                decision: puzzle::decision_due(),
                simulator_type: "RiverCrossing".into(),
                simulator_params: Params { n: g.river.n, k: g.river.k },
                state: banks(&g.river),
                goal_reached: puzzle::solved(),
                moves_made: g.river.moves_made,
                solvable: g.optimal.is_some(),
                optimal_moves: g.optimal,
                optimal_remaining: remaining,
                text: reply(format!("{}{reach}{RULE}", render(g)), puzzle::with_due(next_step(g))),
            })
        })
    }
}

// Exports only exist in the component; native builds (unit tests) skip them.
#[cfg(target_arch = "wasm32")]
export!(Plugin);
