//! Plugin tools as MCP lists them, built from each plugin version's
//! protocol-neutral tool definitions once and kept while that version is
//! loaded (a `tools/list` then clones a few `Arc`s per tool), in the
//! server's [`Listed`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::json;

use super::convention::structured_fields;
use crate::locking::lock;
use crate::plugin::schema::{Shape, object_schema};
use crate::plugin::{Plugin, ToolDef, ok_shape};

/// The MCP tools of each plugin, by name, with the version they were built
/// for: a reloaded plugin is a new version and gets its tools built again.
#[derive(Default)]
pub struct Listed(Mutex<HashMap<String, Built>>);

/// A plugin version and the MCP tools built for it.
type Built = (Weak<Plugin>, Arc<[Tool]>);

impl Listed {
    /// The MCP tools of `plugin`, in its order (built on first use).
    pub fn of_plugin(&self, plugin: &Arc<Plugin>) -> Arc<[Tool]> {
        let mut built = lock(&self.0);
        // A weak reference keeps its allocation: while it is here no other
        // version can have that address.
        if let Some((version, tools)) = built.get(&plugin.name)
            && std::ptr::eq(version.as_ptr(), Arc::as_ptr(plugin))
        {
            return tools.clone();
        }
        // Plugins no longer loaded go with the next version built.
        built.retain(|_, (version, _)| version.strong_count() > 0);
        let tools: Arc<[Tool]> = plugin.tools.iter().map(tool).collect();
        built.insert(plugin.name.clone(), (Arc::downgrade(plugin), tools.clone()));
        tools
    }
}

/// One tool's MCP definition.
pub fn tool(def: &ToolDef) -> Tool {
    tool_of(def, false)
}

/// The same with its output schema's field docs (`ludus inspect`).
pub fn documented_tool(def: &ToolDef) -> Tool {
    tool_of(def, true)
}

fn tool_of(def: &ToolDef, docs: bool) -> Tool {
    let listing = &def.listing;
    let mut tool = Tool::new(def.name.clone(), listing.description.clone(), listing.input_schema.clone());
    if let Some(schema) = output_schema(def, docs) {
        tool = tool.with_raw_output_schema(Arc::new(schema));
    }
    let h = listing.hints;
    tool = tool.annotate(
        ToolAnnotations::new().read_only(h.read_only).destructive(h.destructive).idempotent(h.idempotent).open_world(h.open_world),
    );
    if let Some(title) = &listing.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(uri) = &listing.ui_resource {
        let mut meta = MetaObject::new();
        meta.insert("ui".into(), json!({"resourceUri": uri}));
        tool = tool.with_meta(meta);
    }
    tool
}

/// The schema of `structuredContent`: a record result's data fields, their
/// shapes without their docs. The agent reads the answer's text, and the
/// output schema, which is for programs checking the data, was two thirds of
/// `tools/list`; the fields' docs are in `ludus inspect GAME` and the WIT.
fn output_schema(def: &ToolDef, docs: bool) -> Option<JsonObject> {
    let Some(Shape::Record { fields, doc, .. }) = ok_shape(def.result.as_ref()) else { return None };
    let mut schema = object_schema(&structured_fields(fields));
    if !docs {
        without_docs(&mut schema);
    }
    if let Some(d) = doc {
        schema["description"] = json!(d);
    }
    match schema {
        serde_json::Value::Object(o) => Some(o),
        _ => None,
    }
}

/// Removes the `description` of a schema and of every schema inside it (a
/// property named `description` stays).
fn without_docs(schema: &mut serde_json::Value) {
    let Some(o) = schema.as_object_mut() else { return };
    o.remove("description");
    if let Some(serde_json::Value::Object(props)) = o.get_mut("properties") {
        props.values_mut().for_each(without_docs);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner) = o.get_mut(key) {
            without_docs(inner);
        }
    }
    for key in ["prefixItems", "anyOf", "oneOf"] {
        if let Some(serde_json::Value::Array(all)) = o.get_mut(key) {
            all.iter_mut().for_each(without_docs);
        }
    }
}
