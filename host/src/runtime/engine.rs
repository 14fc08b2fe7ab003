//! The engine settings, in a file of their own because `build.rs` compiles
//! the bundled games ahead of time with them too (`Runtime::compile_bundled`):
//! an artifact compiled under other settings does not load, and the game is
//! compiled at start instead. Nothing here may name the crate's other modules.

/// Data segments from which a component's instances map their memory's
/// initial contents copy-on-write instead of copying them.
///
/// A copy costs two memory mappings fewer per instance (2.03 against 4.08),
/// and the kernel's map limit is what caps live sessions: right for the
/// puzzles' few KB. Chess carries 4.4 MB of move tables: copied, every new
/// game spent 2.5 ms writing them (most are never read) and kept them
/// resident, and the first move after it found every cache cold.
pub const MAPPED_DATA_BYTES: usize = 1 << 20;

/// Bytes of active data segments in a component's core modules (a copy of
/// each starts an instance's linear memory); 0 for what does not parse.
pub fn data_bytes(wasm: &[u8]) -> usize {
    let mut total = 0;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let Ok(wasmparser::Payload::DataSection(reader)) = payload else { continue };
        for data in reader.into_iter().flatten() {
            if matches!(data.kind, wasmparser::DataKind::Active { .. }) {
                total += data.data.len();
            }
        }
    }
    total
}

/// Whether a component of these bytes runs on the engine that maps data.
pub fn maps_data(wasm: &[u8]) -> bool {
    data_bytes(wasm) >= MAPPED_DATA_BYTES
}

/// The settings both engines share; `mapped` is how an instance's memory
/// gets its data segments (`MAPPED_DATA_BYTES`).
pub fn config(mapped: bool) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    config.max_wasm_stack(2 << 20);
    config.memory_init_cow(mapped);
    config
}
