//! Builds the game components (wasm32-wasip2) and packages them with their
//! WIT docs into `$OUT_DIR/components`: the bundled games that `server/bundled.rs`
//! embeds (each with what the server's engine compiles of it) and, for tests and benchmarks only (feature `test-fixtures`, which
//! the crate's dev-dependency on itself turns on), the SDK example and the
//! test fixtures they load. `cargo build --release` and `cargo install` build
//! the games alone.
//!
//! The nested cargo uses its own target directory: sharing the outer one
//! would wait forever on the outer build's lock.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/runtime/engine.rs"]
mod engine;

/// (crate, WIT dir relative to the workspace, features, output name). One
/// cargo run builds each distinct feature set; `-` marks a set of its own with
/// no features, for crates whose dependencies must not share features with
/// the others (the chess benchmark fixture uses the chess crate without its
/// plugin exports).
type Component = (&'static str, &'static str, &'static str, &'static str);

/// The bundled games: always built.
const GAMES: &[Component] = &[
    ("blocks_world", "plugins/blocks_world/wit", "", "blocks_world"),
    ("cards", "plugins/cards/wit", "", "cards"),
    ("checker_jumping", "plugins/checker_jumping/wit", "", "checker_jumping"),
    ("chess", "plugins/chess/wit", "", "chess"),
    ("hanoi", "plugins/hanoi/wit", "", "hanoi"),
    ("openspiel", "plugins/openspiel/wit", "", "openspiel"),
    ("river_crossing", "plugins/river_crossing/wit", "", "river_crossing"),
    ("showdown", "plugins/showdown/wit", "", "showdown"),
];

/// What the tests and benchmarks load besides the games.
const FIXTURES: &[Component] = &[
    ("hello", "sdk/examples/hello/wit", "", "hello"),
    ("hostile", "tests/fixtures/hostile/wit", "", "hostile"),
    ("bad_import", "tests/fixtures/bad_import/wit", "", "bad_import"),
    ("relay", "tests/fixtures/relay/wit", "", "relay"),
    ("relay", "tests/fixtures/relay/wit", "relay/impostor", "impostor"),
    ("conformance", "tests/fixtures/conformance/wit", "", "conformance"),
    ("hello", "sdk/examples/hello/wit", "hello/v2", "hello_v2"),
    ("chess_bench", "tests/fixtures/chess_bench/wit", "-", "chess_bench"),
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("..");
    let root = root.canonicalize().unwrap();
    for dir in ["wit", "sdk/src", "sdk/Cargo.toml", "sdk/examples", "plugins", "tests/fixtures", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    ensure_wasm_target();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("components");
    std::fs::create_dir_all(&out).unwrap();
    let target_dir = root.join("target").join("ludus-wasm");
    let built = target_dir.join("wasm32-wasip2").join("release");
    let mut components: Vec<Component> = GAMES.to_vec();
    if std::env::var_os("CARGO_FEATURE_TEST_FIXTURES").is_some() {
        components.extend_from_slice(FIXTURES);
    }

    // One cargo run per feature set; the default set first, in one go.
    let mut groups: Vec<&str> = Vec::new();
    for c in &components {
        if !groups.contains(&c.2) {
            groups.push(c.2);
        }
    }
    for features in groups {
        let crates: Vec<&str> = components.iter().filter(|c| c.2 == features).map(|c| c.0).collect();
        cargo_build(&root, &target_dir, &crates, features);
        for (krate, wit, _, name) in components.iter().filter(|c| c.2 == features) {
            let input = built.join(format!("{krate}.wasm"));
            let dirs = [root.join("wit/plugin"), root.join(wit)];
            let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
            ludus_pack::pack_file(&input, &dirs, &out.join(format!("{name}.wasm"))).unwrap_or_else(|e| panic!("packaging {krate}: {e:#}"));
        }
    }
    precompile(&out, GAMES.iter().map(|c| c.3));
    println!("cargo:rustc-env=LUDUS_WASM_DIR={}", out.display());
}

/// Compiles each bundled game for this machine with the server's engine
/// settings (`src/runtime/engine.rs`) into `NAME.cwasm.lz4` beside it: the
/// server loads those in milliseconds where a first start would compile
/// for a second or two (`Runtime::compile_bundled`). Built for another
/// target, the files are empty, and the server compiles at start.
fn precompile<'a>(out: &Path, names: impl Iterator<Item = &'a str>) {
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    let engines = native.then(|| {
        let engine = |mapped| wasmtime::Engine::new(&engine::config(mapped)).expect("the engine settings are valid");
        (engine(false), engine(true))
    });
    for name in names {
        let wasm = std::fs::read(out.join(format!("{name}.wasm"))).unwrap();
        let artifact = match &engines {
            Some((copied, mapped)) => {
                let engine = if engine::maps_data(&wasm) { mapped } else { copied };
                engine.precompile_component(&wasm).unwrap_or_else(|e| panic!("compiling {name} ahead of time: {e:#}"))
            }
            None => Vec::new(),
        };
        std::fs::write(out.join(format!("{name}.cwasm.lz4")), lz4_flex::compress_prepend_size(&artifact)).unwrap();
    }
}

/// A fresh machine has no wasm32-wasip2 standard library: add it with rustup,
/// so the README's first command works there too.
fn ensure_wasm_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(rustc).args(["--print", "sysroot"]).output().expect("running rustc");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib/wasm32-wasip2").is_dir() {
        return;
    }
    println!("cargo:warning=installing the wasm32-wasip2 target with rustup (needed to build the games)");
    let ok = Command::new("rustup").args(["target", "add", "wasm32-wasip2"]).status().is_ok_and(|s| s.success());
    if !ok {
        panic!("the wasm32-wasip2 target is missing and `rustup target add wasm32-wasip2` failed; install it and build again");
    }
}

fn cargo_build(root: &Path, target_dir: &Path, crates: &[&str], features: &str) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root).args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"]).arg(target_dir);
    for c in crates {
        cmd.args(["-p", c]);
    }
    if !features.is_empty() && features != "-" {
        cmd.args(["--features", features]);
    }
    // The outer build's settings are for the host, not for the guests (and
    // `cargo clippy` lints the game crates as workspace members already).
    for (key, _) in std::env::vars() {
        let wrapper = ["RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CLIPPY_ARGS", "CLIPPY_CONF_DIR"].contains(&key.as_str());
        if key.starts_with("CARGO_") && key != "CARGO_HOME" || wrapper {
            cmd.env_remove(key);
        }
    }
    cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "false");
    let output = cmd.output().expect("running cargo for the game components");
    if !output.status.success() {
        panic!(
            "building the game components failed (is the wasm32-wasip2 target installed? \
             `rustup target add wasm32-wasip2`):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
