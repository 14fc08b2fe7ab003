//! The games built into the binary: the default set, served with no plugins
//! directory. `build.rs` compiles and packages them (docs embedded).

/// A built-in game: its component, and what `build.rs` compiled of it for
/// this machine, LZ4-compressed (empty where it could not: another target
/// than its own), which the server loads instead of compiling at start
/// where it fits the running engine (`Runtime::compile_bundled`).
pub struct Game {
    pub name: &'static str,
    pub wasm: &'static [u8],
    pub precompiled: &'static [u8],
}

/// The game `build.rs` built and compiled as `$name`.
macro_rules! game {
    ($name:literal) => {
        Game {
            name: $name,
            wasm: include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/", $name, ".wasm")),
            precompiled: include_bytes!(concat!(env!("LUDUS_WASM_DIR"), "/", $name, ".cwasm.lz4")),
        }
    };
}

/// A `static`, not a `const`: every use of a constant gets its own copy of
/// the bytes, and five uses put the 8 MB of games into the binary five times.
pub static BUNDLED: &[Game] = &[
    game!("blocks_world"),
    game!("cards"),
    game!("checker_jumping"),
    game!("chess"),
    game!("hanoi"),
    game!("openspiel"),
    game!("river_crossing"),
    game!("showdown"),
];

/// The component of the built-in game `name`.
pub fn component(name: &str) -> Option<&'static [u8]> {
    BUNDLED.iter().find(|g| g.name == name).map(|g| g.wasm)
}

/// A program a bundled game runs as a channel process, shipped inside the
/// binary so an installed `ludus` needs no source tree: its files are written
/// into the cache directory at start and the endpoint is granted by default.
pub struct Sidecar {
    pub plugin: &'static str,
    pub endpoint: &'static str,
    pub command: &'static str,
    /// The file passed to `command`.
    pub entry: &'static str,
    /// Processes it runs (`limits.max_processes` counts them).
    pub weight: u32,
    /// It speaks tagged lines: one process serves many games.
    pub tagged: bool,
    /// Its own data cache under the user cache, which it may write.
    pub data: Option<&'static str>,
    pub files: &'static [(&'static str, &'static str)],
    /// What it needs on the machine (`ludus doctor` checks it).
    pub needs: Needs,
}

/// A package registry a first-use install downloads from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registry {
    /// npm's (`npm_config_registry`, else registry.npmjs.org).
    Npm,
    /// The Python package index pip uses (`PIP_INDEX_URL`, else PyPI).
    PyPI,
}

/// What a sidecar needs to run: its interpreter at a version, and the engine
/// it installs on first use.
pub struct Needs {
    /// The interpreter's name for people ("Node.js").
    pub what: &'static str,
    /// (major, minor) of the oldest `command --version` that works.
    pub min: (u32, u32),
    /// How to get what is missing.
    pub fix: &'static str,
    /// The engine installed on first use, for people.
    pub engine: &'static str,
    /// A file under the user cache that exists once the engine is installed.
    pub installed: &'static str,
    /// The program the first-use install runs besides the interpreter.
    pub installer: Option<&'static str>,
    /// Where the first-use install downloads from (`ludus doctor` asks it).
    pub registry: Registry,
    /// What the install downloads, for people.
    pub size: &'static str,
    /// Anything else the game needs that no check covers.
    pub note: &'static str,
}

/// A `static` for the same reason as [`BUNDLED`].
pub static SIDECARS: &[Sidecar] = &[
    // Magic on the phase rules engine (installs phase-python on first use).
    Sidecar {
        plugin: "cards",
        endpoint: "phase",
        command: "python3",
        entry: "phase_bridge.py",
        weight: 1,
        // One process serves many games (`LUDUS_ENGINE_SHARED`).
        tagged: true,
        // Card data indexes, and MTGJSON's file when the operator asks for it.
        data: Some("ludus/cards"),
        files: &[
            ("phase_bridge.py", include_str!("../../../plugins/cards/bridge/phase_bridge.py")),
            ("first_use.py", include_str!("../../../plugins/sidecar/first_use.py")),
            ("card_data.py", include_str!("../../../plugins/cards/bridge/card_data.py")),
            ("cards.json", include_str!("../../../plugins/cards/bridge/cards.json")),
            ("decks.json", include_str!("../../../plugins/cards/bridge/decks.json")),
        ],
        needs: Needs {
            what: "Python",
            min: (3, 11),
            fix: "install Python 3.11+ with venv (Debian: apt-get install python3 python3-venv), or grant an `xmage` endpoint",
            engine: "the rules engine (phase-python 0.103.0)",
            installed: "ludus/phase-venv/.installed-phase-python==0.103.0",
            installer: None,
            registry: Registry::PyPI,
            size: "pip, about 35 MB",
            note: "",
        },
    },
    // OpenSpiel's games (installs open_spiel from PyPI on first use).
    Sidecar {
        plugin: "openspiel",
        endpoint: "openspiel",
        command: "python3",
        entry: "openspiel_bridge.py",
        weight: 1,
        // One process serves many games (`LUDUS_ENGINE_SHARED`).
        tagged: true,
        // Equilibrium policies computed once per machine.
        data: Some("ludus/openspiel-policies"),
        files: &[
            ("openspiel_bridge.py", include_str!("../../../plugins/openspiel/bridge/openspiel_bridge.py")),
            ("first_use.py", include_str!("../../../plugins/sidecar/first_use.py")),
        ],
        needs: Needs {
            what: "Python",
            min: (3, 11),
            fix: "install Python 3.11+ with venv (Debian: apt-get install python3 python3-venv)",
            engine: "OpenSpiel (open_spiel 2.0.2)",
            installed: "ludus/openspiel-venv/.installed-open_spiel==2.0.2",
            installer: None,
            registry: Registry::PyPI,
            size: "pip, about 16 MB and numpy",
            note: "",
        },
    },
    // Showdown's simulator for offline battles (installs pokemon-showdown
    // from npm on first use).
    Sidecar {
        plugin: "showdown",
        endpoint: "sim",
        command: "node",
        entry: "showdown_sim.js",
        // The launcher installs the simulator, then loads it into its own
        // process, which runs many battles (`LUDUS_ENGINE_SHARED`).
        weight: 1,
        tagged: true,
        data: None,
        files: &[("showdown_sim.js", include_str!("../../../plugins/showdown/sidecar/showdown_sim.js"))],
        needs: Needs {
            what: "Node.js",
            min: (18, 0),
            fix: "install Node.js 18+ and npm (Debian: apt-get install nodejs npm), or grant a `sim` endpoint in the config",
            engine: "the simulator (pokemon-showdown 0.11.11)",
            installed: "ludus/showdown-sim/.installed-0.11.11",
            installer: Some("npm"),
            registry: Registry::Npm,
            size: "npm, a few MB",
            note: "; online battles need the operator's `server` endpoint",
        },
    },
];
