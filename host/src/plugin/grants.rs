//! What a plugin is granted, by identity: a built-in game gets its own
//! bundled engine; the operator's `[plugins.NAME]` grants (channels, the
//! guest's environment, what its engines may use) go to the component that
//! takes the name, or only to the one with the table's `sha256` where the
//! operator pinned it. A plugin from the plugins directory that takes a
//! built-in game's name gets nothing of the built-in's.

use std::collections::BTreeMap;

use crate::config::{Config, Endpoint, PluginConfig};
use crate::runtime::sandbox::EngineRules;

use super::Source;

/// One plugin version's grants, and why it has each (the load line, `ludus inspect`).
pub struct Grants {
    pub endpoints: BTreeMap<String, Endpoint>,
    pub engine: EngineRules,
    /// The operator's table applies to this component (name, and digest if pinned).
    pub table_applies: bool,
    pub said: Vec<String>,
}

pub fn of(config: &Config, name: &str, sha256: &str, source: &Source) -> Grants {
    let table = config.plugins.get(name);
    let pinned = table.and_then(|t| t.sha256.as_deref());
    let table_applies = table.is_some() && pinned.is_none_or(|p| p.eq_ignore_ascii_case(sha256));
    let mut said = Vec::new();
    let mut endpoints = BTreeMap::new();
    if let (Source::Builtin, Some(own)) = (source, config.builtin_channels.get(name)) {
        for (endpoint, e) in own {
            said.push(format!("channel `{endpoint}`: its bundled engine ({}), as a built-in game", describe(e)));
            endpoints.insert(endpoint.clone(), e.clone());
        }
    } else if !matches!(source, Source::Builtin) && config.builtin_channels.contains_key(name) {
        said.push(format!(
            "none of the built-in {name}'s engines: this plugin only takes its name (the operator grants endpoints as [plugins.{name}.channels.NAME])"
        ));
    }
    if let Some(pin) = pinned.filter(|_| !table_applies) {
        said.push(format!(
            "nothing of [plugins.{name}]: its channels, environment and engine grants are for the component with SHA-256 {pin}, \
             and this one's is {sha256}"
        ));
    }
    let empty = PluginConfig::default();
    let own = table.filter(|_| table_applies).unwrap_or(&empty);
    for (endpoint, e) in &own.channels {
        said.push(format!("channel `{endpoint}`: {} (config [plugins.{name}.channels.{endpoint}])", describe(e)));
        endpoints.insert(endpoint.clone(), e.clone());
    }
    let engine = &own.engine;
    let mut read = engine.read.clone();
    if matches!(source, Source::Builtin) {
        // A file the operator names to a built-in game in its environment
        // (its card data, say) is for its engine to read.
        let named = own.env.values().map(std::path::PathBuf::from).filter(|p| p.is_absolute() && p.is_file());
        read.extend(named);
    }
    let rules = EngineRules {
        env: engine.environment(),
        read,
        write: engine.write.clone(),
        connect: engine.connect.clone(),
        limits: engine.limits(&config.engines.limits),
        sharing: config.engines.sharing(engine),
    };
    if endpoints.values().any(|e| matches!(e, Endpoint::Process { .. })) {
        said.push(engine_line(name, &rules));
    }
    if endpoints.values().any(|e| matches!(e, Endpoint::Process { tagged: true, .. })) && rules.sharing.games_per_process > 1 {
        let s = rules.sharing;
        said.push(format!(
            "shared engine processes: up to {} games a process, {} before games double up ([engines] games_per_process, shards)",
            s.games_per_process, s.shards
        ));
    }
    Grants { endpoints, engine: rules, table_applies, said }
}

fn describe(e: &Endpoint) -> String {
    match e {
        Endpoint::Process { command, args, .. } => format!("process `{command} {}`", args.join(" ")),
        Endpoint::Websocket(url) => format!("websocket {url}"),
        Endpoint::Tcp(addr) => format!("tcp {addr}"),
        Endpoint::Http(url) => format!("http {url}"),
        Endpoint::Disabled(_) => "turned off".into(),
    }
}

/// What its engine processes may use, in a line.
fn engine_line(name: &str, r: &EngineRules) -> String {
    let l = &r.limits;
    let list = |v: &[std::path::PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let mut extra = Vec::new();
    if !r.env.is_empty() {
        extra.push(format!("environment {}", r.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if !r.read.is_empty() {
        extra.push(format!("reads {}", list(&r.read)));
    }
    if !r.write.is_empty() {
        extra.push(format!("writes {}", list(&r.write)));
    }
    if !r.connect.is_empty() {
        extra.push(format!("TCP ports {}", r.connect.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")));
    }
    let extra = if extra.is_empty() { "nothing beyond its own directory".to_string() } else { extra.join("; ") };
    format!(
        "engine processes: {} MiB address space, {} s CPU, {} processes, {} open files, {} MiB files; {extra} ([plugins.{name}.engine])",
        l.memory_mb, l.cpu_s, l.processes, l.open_files, l.file_mb
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let mut c: Config = toml::from_str(text).unwrap();
        let own =
            Endpoint::Process { command: "node".into(), args: vec!["sim.js".into()], cwd: None, weight: 1, tagged: false, bundled: None };
        c.builtin_channels.insert("showdown".into(), BTreeMap::from([("sim".to_string(), own)]));
        c
    }

    #[test]
    fn a_plugin_that_takes_a_built_in_name_gets_none_of_its_engines() {
        let c = config("");
        let builtin = of(&c, "showdown", "aa", &Source::Builtin);
        assert!(builtin.endpoints.contains_key("sim"));
        let impostor = of(&c, "showdown", "bb", &Source::File("/p/showdown.wasm".into()));
        assert!(impostor.endpoints.is_empty(), "{:?}", impostor.said);
        assert!(impostor.said[0].contains("only takes its name"), "{:?}", impostor.said);
    }

    #[test]
    fn the_operator_grants_by_name_or_only_to_the_pinned_digest() {
        let sha = "ab".repeat(32);
        let table = format!(
            "[plugins.relay]\nsha256 = \"{sha}\"\nenv = {{ A = \"1\" }}\n[plugins.relay.channels.echo]\nprocess = {{ command = \"cat\" }}\n"
        );
        let c = config(&table);
        let file = Source::File("/p/relay.wasm".into());
        assert!(of(&c, "relay", &sha, &file).endpoints.contains_key("echo"));
        let other = of(&c, "relay", &"cd".repeat(32), &file);
        assert!(other.endpoints.is_empty() && !other.table_applies, "{:?}", other.said);
        let unpinned = config("[plugins.relay.channels.echo]\nprocess = { command = \"cat\" }\n");
        let g = of(&unpinned, "relay", "any", &file);
        assert!(g.endpoints.contains_key("echo") && g.said.iter().any(|s| s.contains("engine processes: 4096 MiB")), "{:?}", g.said);
    }
}
