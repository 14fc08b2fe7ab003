//! `hello`: the minimal Ludus game from `sdk/README.md`.

ludus_sdk::bindings!(world: "ludus:hello/hello", contract: "../../../wit/plugin");

use std::cell::Cell;

use exports::ludus::hello::tools::{Counter, Guest as Tools};
use exports::ludus::plugin::meta::Guest as Meta;
use ludus_sdk::{PluginInfo, ToolHint};

const VERSION: &str = if cfg!(feature = "v2") { "0.2.0" } else { "0.1.0" };

thread_local! {
    // One instance is one session, so plain instance-global state is the game state.
    static COUNT: Cell<u32> = const { Cell::new(0) };
    static LUCKY: Cell<u32> = const { Cell::new(0) };
}

struct Hello;

fn counter() -> Counter {
    let count = COUNT.get();
    Counter {
        counter_id: ludus_sdk::session_id().unwrap_or_default(),
        count,
        lucky: LUCKY.get(),
        text: ludus_sdk::reply(format!("Counter is at {count}."), "Call `hello_bump` to add to it."),
    }
}

impl Meta for Hello {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "hello".into(),
            title: "Hello counter".into(),
            version: VERSION.into(),
            description: "A greeting and a counter: the example game of the Ludus SDK.".into(),
            tools: vec![
                ToolHint::stateless("greet").read_only(),
                ToolHint::creates("start"),
                ToolHint::uses("bump", "counter-id"),
                ToolHint::uses("bump-later", "counter-id"),
                ToolHint::uses("whoami", "counter-id").read_only(),
                ToolHint::uses("wait-for", "counter-id").read_only().waits(5_000, 30_000),
            ],
            resources: vec![],
            idle_timeout_ms: None,
        }
    }

    fn read_resource(uri: String) -> Result<String, String> {
        Err(format!("hello has no resource {uri}"))
    }
}

impl Tools for Hello {
    fn greet(name: String) -> String {
        if cfg!(feature = "v2") { format!("Hello again, {name}! (v2)") } else { format!("Hello, {name}!") }
    }

    fn start(start: Option<u32>, _seed: Option<u64>) -> Result<Counter, String> {
        // The host seeds this instance's WASI random from the whole seed (`seed`
        // with the game's secret mixed in), so this draw repeats with both.
        use std::hash::BuildHasher;
        LUCKY.set(std::collections::hash_map::RandomState::new().hash_one("hello") as u32 % 1000);
        COUNT.set(start.unwrap_or(0));
        Ok(counter())
    }

    fn bump_later(_counter_id: String, delay_ms: u32) -> Result<Counter, String> {
        if delay_ms > 60_000 {
            return Err(format!("`delay_ms` must be at most 60000, got {delay_ms}"));
        }
        ludus_sdk::host::set_timer(delay_ms);
        Ok(counter())
    }

    fn whoami(_counter_id: String) -> Result<String, String> {
        Ok(format!("caller={} seed={}", ludus_sdk::host::caller(), ludus_sdk::seeds::visible()))
    }

    fn bump(_counter_id: String, by: Option<u32>) -> Result<Counter, String> {
        let by = by.unwrap_or(1);
        if !(1..=1000).contains(&by) {
            return Err(format!("`by` must be between 1 and 1000, got {by}"));
        }
        COUNT.set(COUNT.get().saturating_add(by));
        // Reaches the calling client as MCP logging (`notifications/message`)
        // and the server's log. Only the caller of this call hears it.
        ludus_sdk::log(ludus_sdk::LogLevel::Info, &format!("bumped by {by} to {}", COUNT.get()));
        if COUNT.get() >= 1000 {
            ludus_sdk::log(ludus_sdk::LogLevel::Warn, "the counter is past 1000");
        }
        Ok(counter())
    }

    fn wait_for(_counter_id: String, at_least: u32) -> Result<Counter, String> {
        if COUNT.get() >= at_least {
            return Ok(counter());
        }
        if ludus_sdk::wait_timed_out() {
            return Err(format!("timed out: the counter is still at {} (< {at_least}); call this tool again", COUNT.get()));
        }
        ludus_sdk::wait(0);
        Ok(counter())
    }
}

// Exports only exist in the component; native builds (unit tests) skip them.
#[cfg(target_arch = "wasm32")]
export!(Hello);

impl exports::ludus::plugin::events::Guest for Hello {
    fn on_timer(_id: u64) {
        COUNT.set(COUNT.get().saturating_add(1));
    }

    fn on_message(_channel: u32, _data: String) {}

    fn on_closed(_channel: u32, _reason: String) {}
}
