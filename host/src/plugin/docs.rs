//! Doc comments of a component, from its `package-docs` section.
//!
//! Component types carry no names, so a type's docs are found by its member
//! names (the SDK's packaging step lists every member). Function docs follow
//! one convention for parameters: a line `- name: text` documents parameter
//! `name`; those lines are taken out of the tool description.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// Docs of one record, variant, enum or flags type.
#[derive(Debug, Default, Clone)]
pub struct TypeDocs {
    /// The WIT type's name (kebab-case).
    pub name: Option<String>,
    pub doc: Option<String>,
    items: BTreeMap<String, String>,
}

impl TypeDocs {
    pub fn item(&self, name: &str) -> Option<String> {
        self.items.get(name).filter(|d| !d.trim().is_empty()).map(|d| clean(d))
    }
}

/// A function's description and its parameters' docs.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FuncDocs {
    pub summary: Option<String>,
    pub params: HashMap<String, String>,
}

#[derive(Debug, Default)]
pub struct Docs {
    /// `interface/function` → raw doc comment.
    funcs: HashMap<String, String>,
    types: Vec<TypeDocs>,
}

fn clean(doc: &str) -> String {
    doc.trim().to_string()
}

fn doc_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("docs").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

impl Docs {
    /// Parses the JSON of a package-docs section; malformed docs are an error
    /// the loader reports (a plugin with broken docs is a packaging bug).
    pub fn parse(json: &[u8]) -> Result<Docs, String> {
        let root: Value = serde_json::from_slice(json).map_err(|e| format!("package-docs is not valid JSON: {e}"))?;
        let mut docs = Docs::default();
        let interfaces = root.get("interfaces").and_then(Value::as_object);
        for (iname, iface) in interfaces.into_iter().flatten() {
            for (fname, f) in iface.get("funcs").and_then(Value::as_object).into_iter().flatten() {
                if let Some(d) = doc_of(f) {
                    docs.funcs.insert(format!("{iname}/{fname}"), d);
                }
            }
            for (tname, t) in iface.get("types").and_then(Value::as_object).into_iter().flatten() {
                let items = t
                    .get("items")
                    .and_then(Value::as_object)
                    .map(|o| o.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
                    .unwrap_or_default();
                let doc = t.get("docs").and_then(Value::as_str).map(clean);
                docs.types.push(TypeDocs { name: Some(tname.clone()), doc, items });
            }
        }
        Ok(docs)
    }

    /// Docs of the type whose members are exactly `members`.
    pub fn type_docs(&self, members: &[&str]) -> Option<&TypeDocs> {
        self.types.iter().find(|t| t.items.len() == members.len() && members.iter().all(|m| t.items.contains_key(*m)))
    }

    /// The docs of function `func` in interface `iface` (the interface's short name, e.g. `tools`).
    pub fn func(&self, iface: &str, func: &str) -> FuncDocs {
        self.funcs.get(&format!("{iface}/{func}")).map(|d| split_func_doc(d)).unwrap_or_default()
    }
}

/// Splits a function doc comment into its summary and `- param: text` lines.
pub fn split_func_doc(doc: &str) -> FuncDocs {
    let mut summary = Vec::new();
    let mut params = HashMap::new();
    for line in doc.lines() {
        let t = line.trim();
        if let Some((name, text)) = t.strip_prefix("- ").and_then(|r| r.split_once(':')) {
            let name = name.trim().trim_matches('`');
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                params.insert(name.replace('-', "_"), text.trim().to_string());
                continue;
            }
        }
        summary.push(line.trim_end());
    }
    let summary = summary.join("\n").trim().to_string();
    FuncDocs { summary: (!summary.is_empty()).then_some(summary), params }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_lines_leave_the_summary() {
        let d = split_func_doc("Move a disk.\n\n- move: `[disk, from, to]`\n- env-id: the puzzle\nMore text.");
        assert_eq!(d.summary.as_deref(), Some("Move a disk.\n\nMore text."));
        assert_eq!(d.params["move"], "`[disk, from, to]`");
        assert_eq!(d.params["env_id"], "the puzzle");
    }

    #[test]
    fn types_are_found_by_exact_member_set() {
        let json = br#"{"interfaces":{"tools":{"funcs":{"f":{"docs":"F."}},
            "types":{"a":{"docs":"A","items":{"x":"the x","y":""}},"b":{"items":{"x":""}}}}}}"#;
        let docs = Docs::parse(json).unwrap();
        let a = docs.type_docs(&["y", "x"]).unwrap();
        assert_eq!((a.name.as_deref(), a.doc.as_deref()), (Some("a"), Some("A")));
        assert_eq!(a.item("x").as_deref(), Some("the x"));
        assert_eq!(a.item("y"), None);
        assert!(docs.type_docs(&["x"]).unwrap().doc.is_none());
        assert!(docs.type_docs(&["z"]).is_none());
        assert_eq!(docs.func("tools", "f").summary.as_deref(), Some("F."));
    }
}
