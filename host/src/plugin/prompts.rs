//! Prompts a plugin offers (`ludus:plugin/prompts`, since 0.1.4): read once
//! at load time from `prompts.offered`; the protocol layer lists them and
//! runs `get` and `complete` in the plugin's shared instance.

use wasmtime::component::ComponentExportIndex;

use super::PROMPTS;
use crate::capability::HostState;

/// A prompt a plugin offers (`ludus:plugin/prompts`), named `<prefix>_<name>`.
#[derive(Clone)]
pub struct PromptDef {
    pub name: String,
    /// The name the plugin gave it.
    pub own: String,
    pub title: Option<String>,
    pub description: String,
    pub arguments: Vec<PromptArgument>,
}

#[derive(Clone)]
pub struct PromptArgument {
    pub name: String,
    pub description: String,
    pub required: bool,
}

/// The exports of `ludus:plugin/prompts` the host calls per request.
#[derive(Clone, Copy)]
pub struct PromptExports {
    pub get: ComponentExportIndex,
    pub complete: ComponentExportIndex,
}

/// Calls `prompts.offered` when the plugin exports it (a 0.1.4 interface).
pub(super) fn read_prompts(
    store: &mut wasmtime::Store<HostState>,
    instance: &wasmtime::component::Instance,
) -> wasmtime::Result<Vec<PromptDef>> {
    use wasmtime::component::Val;
    let Some(func) = super::optional_export(store, instance, PROMPTS, "offered")? else { return Ok(Vec::new()) };
    let Some(func) = instance.get_func(&mut *store, func) else { wasmtime::bail!("{PROMPTS} has no `offered` function") };
    let mut out = [Val::Bool(false)];
    func.call(&mut *store, &[], &mut out)?;
    let Val::List(items) = &out[0] else { wasmtime::bail!("offered() returned no list") };
    let string = |v: &Val| if let Val::String(s) = v { s.clone() } else { String::new() };
    let mut prompts = Vec::new();
    for item in items {
        let Val::Record(fields) = item else { continue };
        let mut p = PromptDef { name: String::new(), own: String::new(), title: None, description: String::new(), arguments: Vec::new() };
        for (field, value) in fields {
            match (field.as_str(), value) {
                ("name", v) => p.own = string(v),
                ("title", Val::Option(Some(t))) => p.title = Some(string(t)),
                ("description", v) => p.description = string(v),
                ("arguments", Val::List(args)) => {
                    for a in args {
                        let Val::Record(af) = a else { continue };
                        let mut arg = PromptArgument { name: String::new(), description: String::new(), required: false };
                        for (f, v) in af {
                            match (f.as_str(), v) {
                                ("name", v) => arg.name = string(v),
                                ("description", v) => arg.description = string(v),
                                ("required", Val::Bool(b)) => arg.required = *b,
                                _ => {}
                            }
                        }
                        p.arguments.push(arg);
                    }
                }
                _ => {}
            }
        }
        if p.description.trim().is_empty() {
            wasmtime::bail!("prompt `{}` has no description (MCP clients show it to choose a prompt)", p.own);
        }
        prompts.push(p);
    }
    Ok(prompts)
}
