//! Write a Ludus game plugin in Rust.
//!
//! A game generates its bindings with [`bindings!`], which maps the shared
//! Ludus interfaces onto this crate, so every game speaks the same types (see
//! `sdk/README.md` for the whole walk-through):
//!
//! ```ignore
//! ludus_sdk::bindings!(world: "ludus:hello/hello", contract: "../../wit/plugin");
//! ```

#[allow(missing_docs)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "ludus:plugin/sdk@0.1.7",
        path: "../wit/plugin",
        // Types no host function mentions (e.g. embedded-resource) are still shared.
        generate_unused_types: true,
    });
}

pub use bindings::ludus::plugin::{channels, client, content, decisions, host, lifecycle, outcome, seats, seeds, types, watchers};
/// The bindings generator, for [`bindings!`]: a game needs no dependency of its own on it.
pub use wit_bindgen;

/// Generates a game's bindings: its world from the crate's `wit/` folder, the
/// Ludus contract (`wit/plugin` of the Ludus repository) from `contract`, a
/// path relative to the crate's manifest. The contract's shared interfaces map
/// onto this crate's types, so `describe()` returns [`PluginInfo`] and the
/// helpers here work for every game. Add `channels` when the world includes
/// `ludus:plugin/game-with-channels`, `lifecycle` when it imports
/// `ludus:plugin/lifecycle` (as `ludus:plugin/game-with-seats` does; both:
/// `channels, lifecycle`), `client` when it includes
/// `ludus:plugin/game-with-client` (progress, sampling, elicitation,
/// resource changes; it may then export `prompts` and `resources` too;
/// with seats as well: `lifecycle, client`), and `module: "crate::path"` when the bindings are
/// generated somewhere other than where `export!` is called. The game crate
/// must name this crate `ludus_sdk` (the default for the `ludus-sdk` package).
#[macro_export]
macro_rules! bindings {
    (world: $world:literal, contract: $contract:literal $(, module: $module:literal)?) => {
        $crate::__generate!($world, $contract, [$($module)?], {
            "ludus:plugin/types@0.1.7": ludus_sdk::types,
            "ludus:plugin/host@0.1.7": ludus_sdk::host,
            "ludus:plugin/outcome@0.1.7": ludus_sdk::outcome,
            "ludus:plugin/decisions@0.1.7": ludus_sdk::decisions,
            "ludus:plugin/seeds@0.1.7": ludus_sdk::seeds,
        });
    };
    (world: $world:literal, contract: $contract:literal, channels $(, module: $module:literal)?) => {
        $crate::__generate!($world, $contract, [$($module)?], {
            "ludus:plugin/types@0.1.7": ludus_sdk::types,
            "ludus:plugin/host@0.1.7": ludus_sdk::host,
            "ludus:plugin/outcome@0.1.7": ludus_sdk::outcome,
            "ludus:plugin/decisions@0.1.7": ludus_sdk::decisions,
            "ludus:plugin/seeds@0.1.7": ludus_sdk::seeds,
            "ludus:plugin/channels@0.1.7": ludus_sdk::channels,
        });
    };
    (world: $world:literal, contract: $contract:literal, lifecycle $(, module: $module:literal)?) => {
        $crate::__generate!($world, $contract, [$($module)?], {
            "ludus:plugin/types@0.1.7": ludus_sdk::types,
            "ludus:plugin/host@0.1.7": ludus_sdk::host,
            "ludus:plugin/outcome@0.1.7": ludus_sdk::outcome,
            "ludus:plugin/decisions@0.1.7": ludus_sdk::decisions,
            "ludus:plugin/seeds@0.1.7": ludus_sdk::seeds,
            "ludus:plugin/lifecycle@0.1.7": ludus_sdk::lifecycle,
            "ludus:plugin/seats@0.1.7": ludus_sdk::seats,
        });
    };
    (world: $world:literal, contract: $contract:literal, client $(, module: $module:literal)?) => {
        $crate::__generate!($world, $contract, [$($module)?], {
            "ludus:plugin/types@0.1.7": ludus_sdk::types,
            "ludus:plugin/host@0.1.7": ludus_sdk::host,
            "ludus:plugin/outcome@0.1.7": ludus_sdk::outcome,
            "ludus:plugin/decisions@0.1.7": ludus_sdk::decisions,
            "ludus:plugin/seeds@0.1.7": ludus_sdk::seeds,
            "ludus:plugin/content@0.1.7": ludus_sdk::content,
            "ludus:plugin/client@0.1.7": ludus_sdk::client,
            "ludus:plugin/watchers@0.1.7": ludus_sdk::watchers,
        });
    };
    (world: $world:literal, contract: $contract:literal, lifecycle, client $(, module: $module:literal)?) => {
        $crate::__generate!($world, $contract, [$($module)?], {
            "ludus:plugin/types@0.1.7": ludus_sdk::types,
            "ludus:plugin/host@0.1.7": ludus_sdk::host,
            "ludus:plugin/outcome@0.1.7": ludus_sdk::outcome,
            "ludus:plugin/decisions@0.1.7": ludus_sdk::decisions,
            "ludus:plugin/seeds@0.1.7": ludus_sdk::seeds,
            "ludus:plugin/lifecycle@0.1.7": ludus_sdk::lifecycle,
            "ludus:plugin/seats@0.1.7": ludus_sdk::seats,
            "ludus:plugin/content@0.1.7": ludus_sdk::content,
            "ludus:plugin/client@0.1.7": ludus_sdk::client,
            "ludus:plugin/watchers@0.1.7": ludus_sdk::watchers,
        });
    };
    (world: $world:literal, contract: $contract:literal, channels, lifecycle $(, module: $module:literal)?) => {
        $crate::__generate!($world, $contract, [$($module)?], {
            "ludus:plugin/types@0.1.7": ludus_sdk::types,
            "ludus:plugin/host@0.1.7": ludus_sdk::host,
            "ludus:plugin/outcome@0.1.7": ludus_sdk::outcome,
            "ludus:plugin/decisions@0.1.7": ludus_sdk::decisions,
            "ludus:plugin/seeds@0.1.7": ludus_sdk::seeds,
            "ludus:plugin/channels@0.1.7": ludus_sdk::channels,
            "ludus:plugin/lifecycle@0.1.7": ludus_sdk::lifecycle,
            "ludus:plugin/seats@0.1.7": ludus_sdk::seats,
        });
    };
}

/// [`bindings!`] with the interface mappings spelled out: wit-bindgen
/// refuses a mapping the world does not use, so each arm lists its own.
#[doc(hidden)]
#[macro_export]
macro_rules! __generate {
    ($world:literal, $contract:literal, [$($module:literal)?], { $($with:tt)* }) => {
        $crate::wit_bindgen::generate!({
            world: $world,
            path: [$contract, "wit"],
            runtime_path: "ludus_sdk::wit_bindgen::rt",
            $(default_bindings_module: $module,)?
            with: { $($with)* },
        });
    };
}
pub use types::{LogLevel, PluginInfo, ResourceInfo, SessionRole, ToolHint};

impl ToolHint {
    fn new(name: &str, role: SessionRole, session_param: Option<&str>) -> Self {
        ToolHint {
            name: name.into(),
            role,
            session_param: session_param.map(Into::into),
            title: None,
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
            default_wait_ms: None,
            max_wait_ms: None,
            ui_resource: None,
        }
    }

    /// A tool that starts a new session (a fresh instance of the plugin).
    pub fn creates(name: &str) -> Self {
        Self::new(name, SessionRole::Creates, None)
    }

    /// A tool that acts on the session whose id arrives in `param`.
    pub fn uses(name: &str, param: &str) -> Self {
        Self::new(name, SessionRole::Uses, Some(param))
    }

    /// A tool that needs no session (runs in one shared instance).
    pub fn stateless(name: &str) -> Self {
        Self::new(name, SessionRole::None, None)
    }

    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Changes nothing (also idempotent).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self.idempotent = true;
        self
    }

    /// May throw away state the agent cares about (reset, forfeit).
    pub fn destructive(mut self) -> Self {
        self.destructive = true;
        self
    }

    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    pub fn open_world(mut self) -> Self {
        self.open_world = true;
        self
    }

    /// Default and maximum wait (milliseconds) for a tool that calls [`wait`].
    pub fn waits(mut self, default_ms: u32, max_ms: u32) -> Self {
        self.default_wait_ms = Some(default_ms);
        self.max_wait_ms = Some(max_ms);
        self
    }

    pub fn ui(mut self, resource_uri: &str) -> Self {
        self.ui_resource = Some(resource_uri.into());
        self
    }
}

/// Write to the host log.
pub fn log(level: LogLevel, message: &str) {
    host::log(level, message);
}

/// The current session's id (none in a stateless call).
pub fn session_id() -> Option<String> {
    host::session_id()
}

/// Mark this call's answer provisional: the host calls the tool again when the
/// session changes or after `timeout_ms` (0: the tool's default wait).
pub fn wait(timeout_ms: u32) {
    host::wait(timeout_ms)
}

/// True when this call re-runs a wait whose deadline passed: answer finally now.
pub fn wait_timed_out() -> bool {
    host::wait_timed_out()
}

/// Runs `f` on the game this instance holds. A component instance is one
/// session, so a game keeps its state in one thread-local slot
/// (`thread_local! { static GAME: RefCell<Option<Game>> = … }`); `missing` is
/// the error when no game was started in it.
pub fn with_state<T: 'static, R>(
    slot: &'static std::thread::LocalKey<std::cell::RefCell<Option<T>>>,
    missing: &str,
    f: impl FnOnce(&mut T) -> Result<R, String>,
) -> Result<R, String> {
    slot.with_borrow_mut(|g| match g.as_mut() {
        Some(game) => f(game),
        None => Err(missing.to_string()),
    })
}

/// Makes a game durable (`ludus:plugin/durable`: its sessions survive a
/// restart of the server) when its whole state is the serde type in one
/// thread-local slot, as [`with_state`] keeps it: the state is saved in
/// postcard's compact form and read back into the slot. The world must `export
/// ludus:plugin/durable@0.1.7;`, and the macro is called where the bindings
/// were generated:
///
/// ```ignore
/// ludus_sdk::durable!(Plugin, GAME);
/// ```
///
/// A game that needs more on a restore (set a timer again, reopen a
/// process) implements `exports::ludus::plugin::durable::Guest` itself,
/// with [`durable::save`] and [`durable::restore`] for the serde part.
#[macro_export]
macro_rules! durable {
    ($plugin:ty, $slot:ident) => {
        impl exports::ludus::plugin::durable::Guest for $plugin {
            fn save() -> Vec<u8> {
                $crate::durable::save(&$slot)
            }

            fn restore(state: Vec<u8>) -> Result<(), String> {
                $crate::durable::restore(&$slot, &state)
            }
        }
    };
}

/// Lists a game's legal moves (`ludus:plugin/moves`, since 0.1.7) for the
/// host's illegal-move policy `then = "random"`: `$list` is a function
/// returning, for the player calling (`host.caller`), each legal move as
/// the decision tool (kebab-case, as in WIT) and its arguments as a JSON
/// object, without the game's id and `decision`. The world must `export
/// ludus:plugin/moves@0.1.7;`.
///
/// ```ignore
/// ludus_sdk::legal_moves!(Plugin, || vec![("execute-move", r#"{"move":[1,0,2]}"#.to_string())]);
/// ```
#[macro_export]
macro_rules! legal_moves {
    ($plugin:ty, $list:expr) => {
        impl exports::ludus::plugin::moves::Guest for $plugin {
            fn legal() -> Vec<exports::ludus::plugin::moves::LegalMove> {
                let list: Vec<(&str, String)> = ($list)();
                list.into_iter()
                    .map(|(tool, arguments)| exports::ludus::plugin::moves::LegalMove { tool: tool.to_string(), arguments })
                    .collect()
            }
        }
    };
}

/// Engine requests that tool calls wait for across the host's re-runs. A
/// call that needs its engine sends a request, asks the host to wait
/// (`host::wait`), and is run again when an answer arrives: it recognises
/// its own request by a key (`"move e4"`), one request per caller, and takes
/// the answer then. An engine game keeps one `Held` beside its channel.
pub mod held {
    use std::collections::HashMap;

    /// Which request each caller waits for (by key and id), and the answers
    /// that came for them.
    pub struct Held<T> {
        calls: HashMap<String, (String, u64)>,
        answers: HashMap<u64, T>,
    }

    impl<T> Default for Held<T> {
        fn default() -> Self {
            Held { calls: HashMap::new(), answers: HashMap::new() }
        }
    }

    /// What a caller's request has come to.
    #[derive(Debug, PartialEq)]
    pub enum Poll<T> {
        /// Its answer: the request is done (asked again, it is `NotSent`).
        Answered(T),
        Waiting,
        /// The caller waits for no request with this key.
        NotSent,
    }

    impl<T> Held<T> {
        /// What `caller`'s request `key` has come to.
        pub fn poll(&mut self, caller: &str, key: &str) -> Poll<T> {
            let Some(id) = self.calls.get(caller).filter(|(k, _)| k == key).map(|(_, id)| *id) else { return Poll::NotSent };
            match self.answers.remove(&id) {
                Some(answer) => {
                    self.calls.remove(caller);
                    Poll::Answered(answer)
                }
                None => Poll::Waiting,
            }
        }

        /// `caller` sent request `id` for `key`. A request it abandoned is
        /// replaced: its answer is dropped when it comes.
        pub fn sent(&mut self, caller: &str, key: &str, id: u64) {
            self.calls.insert(caller.to_string(), (key.to_string(), id));
        }

        /// The answer to request `id`, kept while a call waits for it.
        pub fn answer(&mut self, id: u64, outcome: T) {
            if self.waits_for(id) {
                self.answers.insert(id, outcome);
            }
        }

        /// Whether a call waits for request `id`.
        pub fn waits_for(&self, id: u64) -> bool {
            self.calls.values().any(|(_, i)| *i == id)
        }

        /// The key of the request `id` a call waits for.
        pub fn key_of(&self, id: u64) -> Option<&str> {
            self.calls.values().find(|(_, i)| *i == id).map(|(k, _)| k.as_str())
        }

        /// Whether `caller` waits for its request `key`.
        pub fn in_flight(&self, caller: &str, key: &str) -> bool {
            self.calls.get(caller).is_some_and(|(k, _)| k == key)
        }

        /// Whether any call waits for a request whose key `matches`.
        pub fn any(&self, matches: impl Fn(&str) -> bool) -> bool {
            self.calls.values().any(|(k, _)| matches(k))
        }

        /// Answers every request waited for that `which` takes (by id) with
        /// `outcome()`: its engine stopped.
        pub fn fail(&mut self, which: impl Fn(u64) -> bool, outcome: impl Fn() -> T) {
            let ids: Vec<u64> = self.calls.values().map(|(_, id)| *id).filter(|id| which(*id)).collect();
            for id in ids {
                self.answers.insert(id, outcome());
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_call_takes_its_own_answer_once_and_a_replaced_one_is_dropped() {
            let mut held = Held::default();
            assert_eq!(held.poll("a", "move e4"), Poll::NotSent);
            held.sent("a", "move e4", 1);
            assert_eq!(held.poll("a", "move e4"), Poll::Waiting);
            assert_eq!(held.poll("a", "move d4"), Poll::NotSent, "another key is another call");
            held.sent("a", "move d4", 2);
            held.answer(1, "old");
            assert!(!held.waits_for(1), "the abandoned request's answer is dropped");
            held.answer(2, "new");
            assert_eq!(held.poll("a", "move d4"), Poll::Answered("new"));
            assert_eq!(held.poll("a", "move d4"), Poll::NotSent);
            held.sent("b", "start", 3);
            held.fail(|id| id >= 3, || "stopped");
            assert_eq!(held.poll("b", "start"), Poll::Answered("stopped"));
        }
    }
}

/// A game's state as bytes and back, for [`durable!`].
pub mod durable {
    use std::cell::{Cell, RefCell};
    use std::thread::LocalKey;

    /// Rebuilds after an engine stopped by itself that one game may make.
    pub const REBUILDS: u32 = 3;

    thread_local! {
        static REBUILT: Cell<u32> = const { Cell::new(0) };
    }

    /// Whether this game may rebuild itself once more after its engine
    /// stopped by itself (a crash, a kill of a shared engine process): by
    /// `save` and `restore` in place, as after a restart of the server. A
    /// few times, not for ever: an engine that fails on the game's history
    /// fails again.
    pub fn may_rebuild() -> bool {
        REBUILT.with(|n| {
            let more = n.get() < REBUILDS;
            n.set(n.get() + u32::from(more));
            more
        })
    }

    /// The slot's content, serialised.
    pub fn save<T: serde::Serialize + 'static>(slot: &'static LocalKey<RefCell<Option<T>>>) -> Vec<u8> {
        slot.with_borrow(write)
    }

    /// Any serde value in postcard's compact form, for [`read`].
    pub fn write<T: serde::Serialize>(value: &T) -> Vec<u8> {
        postcard::to_allocvec(value).unwrap_or_default()
    }

    /// Puts what [`save`] wrote back into the slot.
    pub fn restore<T: serde::de::DeserializeOwned + 'static>(
        slot: &'static LocalKey<RefCell<Option<T>>>,
        state: &[u8],
    ) -> Result<(), String> {
        let game: Option<T> = read(state)?;
        slot.set(game);
        Ok(())
    }

    /// Reads a state [`save`] or [`write`] wrote.
    pub fn read<T: serde::de::DeserializeOwned>(state: &[u8]) -> Result<T, String> {
        postcard::from_bytes(state).map_err(|e| format!("the stored state is not this game's: {e}"))
    }
}

/// Formats a text block for an agent: the body, then one line saying what to do next.
pub fn reply(body: impl AsRef<str>, next: impl AsRef<str>) -> String {
    let body = body.as_ref().trim_end();
    let next = next.as_ref();
    if next.is_empty() { body.to_string() } else { format!("{body}\n\n{next}") }
}

/// The plugin glue every puzzle shares: its state, held in `$slot`,
/// survives a restart with its tally ([`puzzle::TALLY`]: what the game
/// tells for its result record, and its decision count); `describe()` is
/// [`puzzle::info`] with the version of the calling crate; it has no
/// resources.
///
/// ```ignore
/// ludus_sdk::puzzle!(Plugin, GAME, "hanoi", "Tower of Hanoi", "Tower of Hanoi as in …",
///                    start: "Start a Tower of Hanoi puzzle", one_move: "Move one disk");
/// ```
#[macro_export]
macro_rules! puzzle {
    ($plugin:ty, $slot:ident, $name:literal, $title:expr, $description:expr, start: $start:expr, one_move: $one_move:expr, prompts: $paper:expr) => {
        $crate::puzzle!($plugin, $slot, $name, $title, $description, start: $start, one_move: $one_move);

        // The paper's prompts (`ludus:plugin/prompts`): the world includes
        // `game-with-client` and the bindings map its types (`client`).
        impl exports::ludus::plugin::prompts::Guest for $plugin {
            fn offered() -> Vec<exports::ludus::plugin::prompts::Prompt> {
                use exports::ludus::plugin::prompts::{Argument, Prompt};
                $crate::puzzle_prompts::offered(&$paper)
                    .into_iter()
                    .map(|p| Prompt {
                        name: p.name,
                        title: Some(p.title),
                        description: p.description,
                        arguments: p
                            .arguments
                            .into_iter()
                            .map(|(name, description, required)| Argument { name, description, required })
                            .collect(),
                    })
                    .collect()
            }

            fn get(name: String, arguments: Vec<(String, String)>) -> Result<Vec<exports::ludus::plugin::prompts::Message>, String> {
                let texts = $crate::puzzle_prompts::get(&$paper, &name, &arguments)?;
                Ok(texts
                    .into_iter()
                    .map(|t| exports::ludus::plugin::prompts::Message {
                        role: $crate::client::Role::User,
                        content: $crate::content::Block::Text(t),
                    })
                    .collect())
            }

            fn complete(name: String, argument: String, value: String) -> Vec<String> {
                $crate::puzzle_prompts::complete(&$paper, &name, &argument, &value)
            }
        }
    };
    ($plugin:ty, $slot:ident, $name:literal, $title:expr, $description:expr, start: $start:expr, one_move: $one_move:expr) => {
        // The puzzle and its tally (what `outcome.tell` reports) are saved together.
        impl exports::ludus::plugin::durable::Guest for $plugin {
            fn save() -> Vec<u8> {
                $slot.with_borrow(|game| $crate::puzzle::TALLY.with_borrow(|tally| $crate::durable::write(&(game, tally))))
            }

            fn restore(state: Vec<u8>) -> Result<(), String> {
                let (game, tally) = $crate::durable::read(&state)?;
                $slot.set(game);
                $crate::puzzle::TALLY.set(tally);
                Ok(())
            }
        }

        impl exports::ludus::plugin::meta::Guest for $plugin {
            fn describe() -> $crate::PluginInfo {
                $crate::puzzle::info($name, env!("CARGO_PKG_VERSION"), $title, $description, $start, $one_move)
            }

            fn read_resource(uri: String) -> Result<String, String> {
                Err(format!(concat!($name, " has no resource {}"), uri))
            }
        }
    };
}

/// The step-by-step puzzle surface of the *Illusion of Thinking* simulators
/// (`init-simulator`, `execute-move`, `execute-moves`, `reset-simulator`,
/// `get-state`, keyed by `env-id`), shared by the puzzle games.
pub mod puzzle {
    use std::cell::RefCell;

    use crate::tally::Tally;
    use crate::{PluginInfo, ToolHint};

    thread_local! {
        /// The puzzle's tally, saved with it by [`puzzle!`](crate::puzzle!).
        pub static TALLY: RefCell<Tally> = RefCell::default();
    }

    /// A puzzle started, or was reset: a new game with these parameters (a
    /// JSON object, `{"n":5}`) and optimum (none: not known from where it
    /// starts). Its decisions are numbered afresh from 1.
    pub fn started(parameters: String, optimum: Option<u32>) {
        TALLY.set(Tally::new(parameters, optimum));
        TALLY.with_borrow(Tally::tell);
    }

    /// The number of the decision due (a move or a whole plan): 1 at the
    /// start and after a reset.
    pub fn decision_due() -> u32 {
        TALLY.with_borrow(|t| t.decisions + 1)
    }

    /// An answer's last line `next` with the number of the decision due.
    pub fn with_due(next: String) -> String {
        format!("{next}\nDecision due: {} (send it as `decision` with the next move or plan).", decision_due())
    }

    /// Checks the decision number a move or plan names (none: made as
    /// sent), before anything is applied ([`crate::decision::check`]). A
    /// puzzle that was solved or failed takes nothing more until a reset;
    /// a retry of its last decision still gets that decision's answer.
    pub fn check_decision(given: Option<u32>) -> Result<(), String> {
        crate::decision::check(given, decision_due())?;
        match TALLY.with_borrow(|t| t.ended) {
            None => Ok(()),
            Some(end) => Err(format!(
                "The puzzle is over ({}); nothing more is applied. Reset it to play again.",
                if end == crate::tally::End::Solved { "solved" } else { "failed" }
            )),
        }
    }

    /// The puzzle is solved: what a result's `goal_reached` says, so that
    /// it agrees with the outcome (a plan that reached the goal and then
    /// made an illegal move failed).
    pub fn solved() -> bool {
        TALLY.with_borrow(|t| t.ended == Some(crate::tally::End::Solved))
    }

    /// One move was sent: accepted (a decision made) or refused; `solved`:
    /// the goal is reached after it.
    pub fn moved(accepted: bool, solved: bool) {
        TALLY.with_borrow_mut(|t| {
            t.sent(accepted);
            if accepted {
                t.decisions += 1;
            }
            if solved {
                t.solved();
            }
            t.tell();
        });
    }

    /// A whole plan was sent: `executed` moves were applied, `refused` is the
    /// index of the one refused; `goal_reached`: the goal holds after the
    /// applied moves. A plan is the puzzle's answer, checked whole as the
    /// paper checks it: it solves the puzzle only when every move in it is
    /// legal and the goal holds at its end; otherwise the game fails (a move
    /// refused, even one after the goal was reached, or a plan that stops
    /// short). A plan that applied any move is one decision made.
    pub fn planned(executed: u32, refused: Option<u32>, goal_reached: bool) {
        TALLY.with_borrow_mut(|t| {
            for _ in 0..executed {
                t.sent(true);
            }
            if refused.is_some() {
                t.sent(false);
            }
            if executed > 0 {
                t.decisions += 1;
            }
            if refused.is_none() && goal_reached {
                t.solved()
            } else {
                t.failed()
            }
            t.tell();
        });
    }

    /// The last line of a plan's answer: `next` (the puzzle's own next
    /// step) when the plan solved it, else why the plan fails.
    pub fn after_plan(refused: Option<u32>, goal_reached: bool, next: String) -> String {
        match (refused, goal_reached) {
            (None, true) => next,
            (Some(i), true) => format!(
                "The plan fails: move {i} is illegal, and a plan must be legal throughout, even after the goal is reached \
                 (the paper's check). The moves before it were applied."
            ),
            (Some(i), false) => format!("The plan fails: move {i} is illegal. {next}"),
            (None, false) => format!("The plan fails: it ends short of the goal. {next}"),
        }
    }

    /// No legal move is left short of the goal: the game fails.
    pub fn dead_end() {
        TALLY.with_borrow_mut(|t| {
            t.failed();
            t.tell();
        });
    }

    /// Puzzles untouched this long are removed (as in the seed server).
    pub const IDLE_TIMEOUT_MS: u32 = 120_000;

    /// `describe()` for a puzzle: `start` and `one_move` title the first two tools.
    pub fn info(name: &str, version: &str, title: &str, description: &str, start: &str, one_move: &str) -> PluginInfo {
        PluginInfo {
            name: name.into(),
            title: title.into(),
            version: version.into(),
            description: description.into(),
            tools: vec![
                ToolHint::creates("init-simulator").title(start),
                ToolHint::uses("execute-move", "env-id").title(one_move),
                ToolHint::uses("execute-moves", "env-id").title("Submit a whole plan"),
                ToolHint::uses("reset-simulator", "env-id").title("Reset the puzzle").destructive(),
                ToolHint::uses("get-state", "env-id").title("Show the puzzle").read_only(),
            ],
            resources: vec![],
            idle_timeout_ms: Some(IDLE_TIMEOUT_MS),
        }
    }
}

/// The prompts of *The Illusion of Thinking* (appendix A.1) for a puzzle,
/// as MCP prompts: `paper`, the system prompt and the user prompt with the
/// instance filled in, as the paper sent them; `paper-program`, the same
/// puzzle asking for a program that prints the moves instead of the list
/// (the rebuttal's proposal, arXiv 2506.09250). MCP prompts have no system
/// role: both come as user messages, the system prompt first.
pub mod puzzle_prompts {
    /// What a puzzle's prompts need from the game.
    pub struct Paper {
        /// The puzzle's name in the prompts' titles (`Tower of Hanoi`).
        pub puzzle: &'static str,
        /// The paper's system prompt, verbatim.
        pub system: &'static str,
        /// The paper's user prompt for an instance of size `n` (and boat capacity `k`).
        pub user: fn(n: u32, k: Option<u32>) -> Result<String, String>,
        /// The sizes the game plays, and what `n` counts.
        pub n: (u32, u32),
        pub n_means: &'static str,
        /// What `k` means, for the puzzles that take it (River Crossing).
        pub k_means: Option<&'static str>,
        /// The paper's answer format (`moves = [[disk id, from peg, to peg], ...]`).
        pub moves_format: &'static str,
    }

    /// One prompt as `prompts.offered` lists it.
    pub struct Offered {
        pub name: String,
        pub title: String,
        pub description: String,
        /// (name, description, required)
        pub arguments: Vec<(String, String, bool)>,
    }

    const PAPER: &str = "paper";
    const PROGRAM: &str = "paper-program";

    pub fn offered(p: &Paper) -> Vec<Offered> {
        let mut arguments = vec![("n".to_string(), format!("{} ({}–{})", p.n_means, p.n.0, p.n.1), true)];
        if let Some(k) = p.k_means {
            arguments.push(("k".into(), k.into(), false));
        }
        vec![
            Offered {
                name: PAPER.into(),
                title: format!("{}: the paper's prompt", p.puzzle),
                description: format!(
                    "The Illusion of Thinking's prompt for {} (appendix A.1): two user messages, the paper's system prompt \
                     (send it as your system prompt) and its user prompt for this instance.",
                    p.puzzle
                ),
                arguments: arguments.clone(),
            },
            Offered {
                name: PROGRAM.into(),
                title: format!("{}: ask for a program", p.puzzle),
                description: format!(
                    "{} as the paper poses it, but asking for a program that prints the moves instead of the list (the \
                     rebuttal's proposal, arXiv 2506.09250). Optional `language` (default Python).",
                    p.puzzle
                ),
                arguments: arguments
                    .into_iter()
                    .chain([("language".into(), "the program's language (default Python)".into(), false)])
                    .collect(),
            },
        ]
    }

    /// The messages of prompt `name`: the system prompt, then the user prompt.
    pub fn get(p: &Paper, name: &str, arguments: &[(String, String)]) -> Result<Vec<String>, String> {
        let arg = |key: &str| arguments.iter().find(|(k, _)| k == key).map(|(_, v)| v.trim());
        let number = |key: &str, v: &str| v.parse::<u32>().map_err(|_| format!("`{key}` must be a whole number, not {v:?}"));
        let n = number("n", arg("n").ok_or("`n` is required")?)?;
        if !(p.n.0..=p.n.1).contains(&n) {
            return Err(format!("`n` must be {}–{} for {}; {n} is out of range", p.n.0, p.n.1, p.puzzle));
        }
        // The host refuses arguments a prompt does not declare (`k` but for River Crossing).
        let k = arg("k").filter(|v| !v.is_empty()).map(|v| number("k", v)).transpose()?;
        let user = (p.user)(n, k)?;
        match name {
            PAPER => Ok(vec![p.system.to_string(), user]),
            PROGRAM => {
                let language = arg("language").filter(|v| !v.is_empty()).unwrap_or("Python");
                if language.len() > 40 || !language.chars().all(|c| c.is_alphanumeric() || " +#-.".contains(c)) {
                    return Err(format!("`language` {language:?} is not a programming language's name"));
                }
                let ask = format!(
                    "Do not list the moves yourself. Instead, write a complete {language} program that, when run, prints \
                     the complete list of moves of the solution in the format: {}",
                    p.moves_format
                );
                Ok(vec![format!("{}\n\n{ask}", p.system), format!("{user}\n\n{ask}")])
            }
            _ => Err(format!("no prompt {name}; the prompts are `{PAPER}` and `{PROGRAM}`")),
        }
    }

    /// Values for `n` (and `k`) that begin with what was typed.
    pub fn complete(p: &Paper, _name: &str, argument: &str, value: &str) -> Vec<String> {
        let range = match argument {
            "n" => p.n.0..=p.n.1,
            "k" if p.k_means.is_some() => 1..=p.n.1.min(10),
            _ => return Vec::new(),
        };
        range.map(|v| v.to_string()).filter(|v| v.starts_with(value)).take(100).collect()
    }
}

/// Decision numbers (`ludus:plugin/decisions`): each move names the decision
/// it answers, so that a retry is never made twice. The game numbers its
/// decisions 1, 2, … (afresh after a reset or a rematch), shows the number
/// due in its answers, and checks each call's number with [`decision::check`]
/// before it changes anything.
pub mod decision {
    /// Whether a call naming decision `given` (none: no number, made as
    /// sent) may be made when `due` is due. A number already passed is
    /// refused and the host told (`decisions.made-already`): the host then
    /// answers with the answer the same player's call for it got, if it
    /// keeps one. A number not yet due is refused.
    pub fn check(given: Option<u32>, due: u32) -> Result<(), String> {
        match given {
            None => Ok(()),
            Some(n) if n == due => Ok(()),
            Some(n) if n < due => {
                #[cfg(target_arch = "wasm32")]
                crate::decisions::made_already(n);
                Err(format!("decision {n} was made already; the decision due now is {due}"))
            }
            Some(n) => Err(format!("decision {n} is not due yet; the decision due now is {due}")),
        }
    }
}

/// What a move-by-move game tells the host for its result record
/// (`ludus:plugin/outcome`): its parameters and optimum, moves accepted and
/// refused, the first refused one, and its verdict. Keep one in the game's
/// state (it is serde, so [`durable!`] saves it) and call [`Tally::tell`]
/// after each change; once the verdict is final the tally no longer
/// changes, until the next game starts with [`Tally::new`].
pub mod tally {
    use serde::{Deserialize, Serialize};

    use crate::outcome::{Statement, Verdict};

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct Tally {
        /// The game's parameters as a JSON object.
        pub parameters: String,
        /// Decisions made in this game (`ludus:plugin/decisions`): the one
        /// due is the next number.
        pub decisions: u32,
        pub optimum: Option<u32>,
        pub moves: u32,
        pub illegal: u32,
        /// Moves sent, accepted or not: the position of the next one.
        sent: u32,
        pub first_failing: Option<u32>,
        /// The final verdict, once there is one.
        pub ended: Option<End>,
        /// The game's own figures as a JSON object (empty: `{}`).
        pub figures: String,
    }

    /// How a game ended.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    pub enum End {
        Solved,
        Won,
        Lost,
        Draw,
        Failed,
        Abandoned,
    }

    impl Tally {
        pub fn new(parameters: String, optimum: Option<u32>) -> Tally {
            Tally { parameters, optimum, ..Tally::default() }
        }

        /// A move was sent; counted unless the game is over.
        pub fn sent(&mut self, accepted: bool) {
            if self.ended.is_some() {
                return;
            }
            if accepted {
                self.moves += 1;
            } else {
                self.illegal += 1;
                self.first_failing.get_or_insert(self.sent);
            }
            self.sent += 1;
        }

        /// The last move counted as accepted was refused after all (a game
        /// whose engine refuses a choice after it was sent): it counts as
        /// refused, at its place among the moves sent.
        pub fn retract(&mut self) {
            if self.ended.is_some() {
                return;
            }
            self.moves = self.moves.saturating_sub(1);
            self.illegal += 1;
            self.first_failing.get_or_insert(self.sent.saturating_sub(1));
        }

        /// The game ends so (the first end stands).
        pub fn end(&mut self, how: End) {
            self.ended.get_or_insert(how);
        }

        pub fn solved(&mut self) {
            self.end(End::Solved);
        }

        pub fn failed(&mut self) {
            self.end(End::Failed);
        }

        /// The statement `outcome.tell` takes.
        pub fn statement(&self) -> Statement {
            let verdict = match self.ended {
                None => Verdict::Playing,
                Some(End::Solved) => Verdict::Solved,
                Some(End::Won) => Verdict::Won,
                Some(End::Lost) => Verdict::Lost,
                Some(End::Draw) => Verdict::Draw,
                Some(End::Failed) => Verdict::Failed,
                Some(End::Abandoned) => Verdict::Abandoned,
            };
            let json = |s: &str| if s.is_empty() { "{}".to_string() } else { s.to_string() };
            Statement {
                verdict,
                parameters: json(&self.parameters),
                moves: self.moves,
                illegal_moves: self.illegal,
                first_failing_move: self.first_failing,
                optimum: self.optimum,
                figures: json(&self.figures),
            }
        }

        /// Tells the host where the game stands (nothing in a native build,
        /// where there is no host: unit tests of a game's rules).
        pub fn tell(&self) {
            #[cfg(target_arch = "wasm32")]
            crate::outcome::tell(&self.statement());
        }
    }

    /// `s` as a JSON string literal, for the parameters and figures objects.
    pub fn json_string(s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
}

/// Whole-plan submission (the paper's `moves = [...]`): moves are applied in
/// order until the first one the game refuses.
pub mod plan {
    /// What running a plan did.
    pub struct Outcome {
        /// Moves applied (all before the first refused one).
        pub executed: u32,
        /// Index of the first refused move and why it was refused.
        pub failure: Option<(u32, String)>,
        /// One sentence for the agent, e.g. "Applied the first 2 moves; move 2 … is illegal: …".
        pub summary: String,
    }

    /// Applies `moves` with `apply` until it refuses one. `noun` names a move in
    /// the summary ("move", "crossing").
    pub fn run<M: std::fmt::Debug>(moves: &[M], noun: &str, mut apply: impl FnMut(&M) -> Result<(), String>) -> Outcome {
        for (i, m) in moves.iter().enumerate() {
            if let Err(why) = apply(m) {
                let reason = format!("{noun} {i} {m:?} is illegal: {why}");
                let summary = format!("Applied the first {i} {noun}s; {reason}. Later {noun}s were not tried.");
                return Outcome { executed: i as u32, failure: Some((i as u32, reason)), summary };
            }
        }
        let n = moves.len();
        Outcome { executed: n as u32, failure: None, summary: format!("All {n} {noun}s were legal.") }
    }
}

#[cfg(test)]
mod tests {
    use super::tally::{End, Tally};

    #[test]
    fn a_tally_counts_moves_and_the_first_refused_ones_place() {
        let mut t = Tally::new("{\"n\":3}".into(), Some(7));
        t.sent(true);
        t.sent(false);
        t.sent(true);
        assert_eq!((t.moves, t.illegal, t.first_failing), (2, 1, Some(1)));
        // A move refused after it was counted keeps its own place; the first refusal stays first.
        t.retract();
        assert_eq!((t.moves, t.illegal, t.first_failing), (1, 2, Some(1)));
        let mut late = Tally::default();
        late.sent(true);
        late.sent(true);
        late.retract();
        assert_eq!((late.moves, late.illegal, late.first_failing), (1, 1, Some(1)));
        // Once ended, nothing more is counted.
        late.end(End::Lost);
        late.end(End::Won);
        late.sent(false);
        late.retract();
        assert_eq!((late.moves, late.illegal, late.ended), (1, 1, Some(End::Lost)));
    }
}
