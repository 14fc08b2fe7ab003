//! The games built into the binary: the default set, served with no plugins
//! directory. `build.rs` compiles and packages them (docs embedded).

pub const BUNDLED: &[(&str, &[u8])] = &[
    ("cards", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/cards.wasm"))),
    ("chess", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/chess.wasm"))),
    ("hanoi", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/hanoi.wasm"))),
    ("river_crossing", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/river_crossing.wasm"))),
    ("showdown", include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/showdown.wasm"))),
];

/// A program a bundled game runs as a channel process, shipped inside the
/// binary so an installed `ludus` needs no source tree: its files are written
/// into the cache directory at start and the endpoint is granted by default.
pub struct Sidecar {
    pub plugin: &'static str,
    pub endpoint: &'static str,
    pub command: &'static str,
    /// The file passed to `command`.
    pub entry: &'static str,
    pub files: &'static [(&'static str, &'static str)],
}

pub const SIDECARS: &[Sidecar] = &[
    // Magic on the phase rules engine (installs phase-python on first use).
    Sidecar {
        plugin: "cards",
        endpoint: "phase",
        command: "python3",
        entry: "phase_bridge.py",
        files: &[
            ("phase_bridge.py", include_str!("../../../plugins/cards/bridge/phase_bridge.py")),
            ("pool.json", include_str!("../../../plugins/cards/bridge/pool.json")),
            ("decks.json", include_str!("../../../plugins/cards/bridge/decks.json")),
        ],
    },
    // Showdown's simulator for offline battles (installs pokemon-showdown
    // from npm on first use).
    Sidecar {
        plugin: "showdown",
        endpoint: "sim",
        command: "node",
        entry: "showdown_sim.js",
        files: &[("showdown_sim.js", include_str!("../../../plugins/showdown/sidecar/showdown_sim.js"))],
    },
];
