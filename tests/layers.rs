//! The host's house rule, checked on its source: `host/src` is built in
//! layers, and a module imports only from its own layer or the ones below.
//! No file may import a file that imports it back, directly or through
//! others. A new top-level module must be given its place in `LAYERS`.
//!
//! Imports are read from the text: every `crate::…` and `super::…` path
//! (grouped `use` trees expanded), resolved to the file that defines the
//! module it names. `#[cfg(test)]` modules at the end of a file are left out;
//! they may reach into the module they test. A second rule keeps the MCP
//! protocol's types in the `mcp` layer and above.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom to top, in the order a tool call climbs back out of the component:
/// plain helpers (locks, turns at the CPU) and configuration, the session store, the wasmtime runtime, what a plugin may
/// import, loading a plugin, sessions, the registry, the MCP surface, and the
/// server with its transports.
const LAYERS: &[&str] = &[
    "locking",
    "turns",
    "config",
    "seal",
    "records",
    "report",
    "store",
    "runtime",
    "capability",
    "plugin",
    "session",
    "registry",
    "arena",
    "mcp",
    "server",
];

/// The entry points: they declare modules and wire them up, nothing imports them.
const ROOTS: &[&str] = &["lib.rs", "main.rs"];

type Module = Vec<String>;

#[test]
fn host_modules_import_only_their_own_layer_or_below_and_never_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = modules(&src);
    assert!(files.len() > 10, "found only {} modules under {}", files.len(), src.display());

    let mut problems = Vec::new();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, path) in &files {
        let Some(rank) = layer(module) else {
            problems.push(format!("{}: top-level module `{}` has no place in LAYERS", rel(path), module[0]));
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let targets: BTreeSet<(usize, Module)> =
            imports(&text, module).into_iter().filter_map(|(line, path)| Some((line, resolve(&path, &files)?))).collect();
        for (line, target) in targets {
            if &target == module {
                continue;
            }
            if layer(&target).is_some_and(|r| r > rank) {
                problems.push(format!(
                    "{}:{line}: `{}` (layer {}) imports `{}` (layer {}), which is above it",
                    rel(path),
                    module.join("::"),
                    module[0],
                    target.join("::"),
                    target[0]
                ));
            }
            graph.entry(module.clone()).or_default().insert(target);
        }
    }
    problems.extend(circles(&graph).into_iter().map(|c| format!("import circle: {}", c.join(" → "))));
    assert!(problems.is_empty(), "the host's layers do not hold:\n{}", problems.join("\n"));
}

/// The MCP protocol (rmcp's types) is known to the `mcp` layer and the
/// transports above it only: below them, tools, answers and callers are the
/// host's own, in no protocol's terms.
#[test]
fn no_layer_below_mcp_names_rmcp() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mcp = layer(&vec!["mcp".to_string()]).unwrap();
    let mut problems = Vec::new();
    for (module, path) in modules(&src) {
        if layer(&module).is_none_or(|r| r >= mcp) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in without_test_module(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("rmcp::") {
                problems.push(format!("{}:{}: {}", rel(&path), n + 1, line.trim()));
            }
        }
    }
    assert!(problems.is_empty(), "rmcp named below the mcp layer:\n{}", problems.join("\n"));
}

/// Every source file of the crate but the roots, by module path
/// (`capability/channels/mod.rs` → `capability::channels`).
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            if path.extension().is_none_or(|e| e != "rs") || ROOTS.contains(&rel.to_str().unwrap()) {
                continue;
            }
            let mut module: Module = rel.with_extension("").iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if module.last().is_some_and(|s| s == "mod") {
                module.pop();
            }
            out.insert(module, path);
        }
    }
    out
}

fn layer(module: &Module) -> Option<usize> {
    LAYERS.iter().position(|l| *l == module[0])
}

fn rel(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The paths a file names, absolute from the crate root, with their line numbers.
fn imports(text: &str, module: &Module) -> Vec<(usize, Module)> {
    // Comment lines are blanked (not removed) so that line numbers stay right.
    let code: String =
        without_test_module(text).lines().map(|l| if l.trim_start().starts_with("//") { "" } else { l }).collect::<Vec<_>>().join("\n");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = ["crate::", "super::"].iter().filter_map(|r| code[from..].find(r)).min() {
        let start = from + at;
        from = start + 1;
        let before = code[..start].chars().next_back().unwrap_or(' ');
        if before.is_alphanumeric() || before == '_' || before == ':' {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let (paths, used) = use_tree(&code[start..]);
        from = start + used.max(1);
        out.extend(paths.iter().filter_map(|p| absolute(p, module)).map(|p| (line, p)));
    }
    out
}

/// Cuts a trailing `#[cfg(test)] mod … { … }`.
fn without_test_module(text: &str) -> &str {
    let mut at = 0;
    while let Some(i) = text[at..].find("#[cfg(test)]") {
        let start = at + i;
        let after = text[start + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") {
            return &text[..start];
        }
        at = start + 1;
    }
    text
}

/// Reads a path or a `use` tree (`a::b::{c, d::{e, f}}`) from the start of
/// `s`; returns the leaf paths and how many bytes were read.
fn use_tree(s: &str) -> (Vec<Module>, usize) {
    let mut prefix: Module = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    loop {
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        if i > start {
            prefix.push(s[start..i].to_string());
        }
        if s[i..].starts_with("::") {
            i += 2;
            let ws = s[i..].len() - s[i..].trim_start().len();
            i += ws;
            if s[i..].starts_with('{') {
                i += 1;
                let mut leaves = Vec::new();
                loop {
                    let ws = s[i..].len() - s[i..].trim_start().len();
                    i += ws;
                    if s[i..].starts_with('}') || i >= s.len() {
                        i += 1;
                        break;
                    }
                    let (sub, used) = use_tree(&s[i..]);
                    i += used.max(1);
                    for p in sub {
                        leaves.push(prefix.iter().cloned().chain(p).collect());
                    }
                    let ws = s[i..].len() - s[i..].trim_start().len();
                    i += ws;
                    if s[i..].starts_with(',') {
                        i += 1;
                    }
                }
                return (leaves, i);
            }
            continue;
        }
        // `self` in a group names the prefix itself; ` as x` renames a leaf.
        if prefix.last().is_some_and(|s| s == "self") {
            prefix.pop();
        }
        if s[i..].trim_start().starts_with("as ") {
            let rest = s[i..].trim_start();
            let skip = s[i..].len() - rest.len() + 3;
            let rest2 = &rest[3..];
            let ident = rest2.trim_start();
            let len = ident.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(ident.len());
            i += skip + (rest2.len() - ident.len()) + len;
        }
        return (vec![prefix], i);
    }
}

/// `crate::a::b` → `[a, b]`; `super::x` from `p::q` → `[p, x]`.
fn absolute(path: &Module, module: &Module) -> Option<Module> {
    let mut segs = path.iter();
    let first = segs.next()?;
    let mut base: Module = match first.as_str() {
        "crate" => Vec::new(),
        "super" => {
            let mut m = module.clone();
            m.pop();
            m
        }
        _ => return None,
    };
    for s in segs {
        if s == "super" {
            base.pop();
        } else {
            base.push(s.clone());
        }
    }
    Some(base)
}

/// The file a path lands in: the longest prefix of it that is a module file.
fn resolve(path: &Module, files: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| files.contains_key(p))
}

/// Every import circle, each named once from its smallest module.
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, trail)) = stack.pop() {
            for next in graph.get(&at).into_iter().flatten() {
                if next == start {
                    let mut names: Vec<String> = trail.iter().map(|m| m.join("::")).collect();
                    let min = (0..names.len()).min_by_key(|&i| names[i].clone()).unwrap();
                    names.rotate_left(min);
                    names.push(names[0].clone());
                    found.insert(names);
                } else if !trail.contains(next) && next > start {
                    let mut t = trail.clone();
                    t.push(next.clone());
                    stack.push((next.clone(), t));
                }
            }
        }
    }
    found.into_iter().collect()
}

#[test]
fn the_reader_expands_use_trees_and_resolves_relative_paths() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Module>();
    let (paths, _) = use_tree("crate::capability::{self, channels::{Inbox, Input}, host::SessionControl as S};");
    assert_eq!(
        paths,
        vec![
            m("crate::capability"),
            m("crate::capability::channels::Inbox"),
            m("crate::capability::channels::Input"),
            m("crate::capability::host::SessionControl")
        ]
    );
    assert_eq!(absolute(&m("super::table::Table"), &m("capability::channels::transport")), Some(m("capability::channels::table::Table")));
    let code = "use crate::locking::lock;\n// crate::server is only named in a comment\nfn f() { crate::config::x(); }\n#[cfg(test)]\nmod tests { use crate::server; }\n";
    let found: Vec<Module> = imports(code, &m("session")).into_iter().map(|(_, p)| p).collect();
    assert_eq!(found, vec![m("locking::lock"), m("config::x")]);
    let mut g = BTreeMap::new();
    g.insert(m("a"), BTreeSet::from([m("b")]));
    g.insert(m("b"), BTreeSet::from([m("c")]));
    g.insert(m("c"), BTreeSet::from([m("a")]));
    assert_eq!(circles(&g), vec![vec!["a".to_string(), "b".into(), "c".into(), "a".into()]]);
}
