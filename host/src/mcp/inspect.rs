//! `ludus inspect FILE.wasm`: exactly what the host derives from a component,
//! its tools as MCP lists them.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::Config;
use crate::plugin::{Plugin, Role, Source};
use crate::runtime::Runtime;

pub fn inspect(path: &Path, config: &Config, runtime: &Arc<Runtime>) -> Result<Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let p = Plugin::load(runtime, config, &bytes, Source::File(path.to_path_buf())).map_err(|e| e.to_string())?;
    Ok(describe(&p, crate::runtime::data_bytes(&bytes)))
}

/// The same for a game built into the binary.
pub fn inspect_builtin(bytes: &[u8], config: &Config, runtime: &Arc<Runtime>) -> Result<Value, String> {
    let p = Plugin::load(runtime, config, bytes, Source::Builtin).map_err(|e| e.to_string())?;
    Ok(describe(&p, crate::runtime::data_bytes(bytes)))
}

/// `data_bytes`: the size of the component's data segments.
pub fn describe(p: &Plugin, data_bytes: usize) -> Value {
    let tools: Vec<Value> = p
        .tools
        .iter()
        .map(|t| {
            let role = match t.role {
                Role::Creates => json!("creates"),
                Role::Uses(i) => json!({"uses": t.params[i].json}),
                Role::Shared => json!("none"),
            };
            let mut v = serde_json::to_value(super::tools::documented_tool(t)).unwrap_or(Value::Null);
            v["ludus"] = json!({
                "function": t.func,
                "session": role,
                "defaultWaitMs": t.default_wait.as_millis() as u64,
                "maxWaitMs": t.max_wait.as_millis() as u64,
            });
            v
        })
        .collect();
    json!({
        "plugin": {
            "name": p.name,
            "title": p.title,
            "version": p.version,
            "description": p.description,
            "source": p.source.to_string(),
            "sha256": p.sha256,
            "imports": p.imports,
            "events": p.on_timer.is_some(),
            "idleTimeoutMs": p.limits.idle_timeout.as_millis() as u64,
            "maxSessions": p.limits.max_sessions,
            // Sessions start from a copy of the data, or map it copy-on-write from 1 MiB up.
            "data": {"bytes": data_bytes, "mapped": p.maps_data},
            "resources": p.resources.iter().map(|r| json!({"uri": r.uri, "name": r.name, "description": r.description, "mimeType": r.mime_type})).collect::<Vec<_>>(),
            // What it was granted (channels, its engine processes' limits and grants), and why.
            "granted": p.granted,
        },
        "tools": tools,
    })
}
