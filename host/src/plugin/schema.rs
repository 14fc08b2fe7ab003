//! WIT types → shapes and their JSON Schema (here); JSON → component values
//! (`from_json`); component values → JSON (`to_json`). The conventions:
//! docs/design/contract.md, "From WIT to tools".
//!
//! At load time every parameter and result type of a tool is turned into a
//! [`Shape`]: a plan that knows its JSON names and doc comments. The plan
//! yields the JSON Schema, converts incoming JSON to [`Val`] with errors that
//! name the field, and converts results back. Nothing walks wasmtime's types
//! on the request path.

use serde_json::{Map, Value, json};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use super::docs::Docs;

mod from_json;
mod to_json;

use from_json::err;
pub use from_json::{ArgError, fields_to_vals};
pub use to_json::JsonOf;

/// Integer kinds with their exact ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int {
    S8,
    U8,
    S16,
    U16,
    S32,
    U32,
    S64,
    U64,
}

impl Int {
    fn range(self) -> (i128, i128) {
        match self {
            Int::S8 => (i8::MIN.into(), i8::MAX.into()),
            Int::U8 => (0, u8::MAX.into()),
            Int::S16 => (i16::MIN.into(), i16::MAX.into()),
            Int::U16 => (0, u16::MAX.into()),
            Int::S32 => (i32::MIN.into(), i32::MAX.into()),
            Int::U32 => (0, u32::MAX.into()),
            Int::S64 => (i64::MIN.into(), i64::MAX.into()),
            Int::U64 => (0, u64::MAX.into()),
        }
    }

    fn is_64(self) -> bool {
        matches!(self, Int::S64 | Int::U64)
    }
}

/// The largest integer a JavaScript number holds exactly (2^53 − 1).
const JS_SAFE: i64 = (1 << 53) - 1;

/// A record field or function parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The WIT name (kebab-case), as the component knows it.
    pub wit: String,
    /// The JSON name (snake_case).
    pub json: String,
    pub shape: Shape,
    pub doc: Option<String>,
    /// Bounds narrower than the integer type's, declared in the doc comment
    /// as `@range(1..=30)` (or `1..`, `..=100`): the schema states them and
    /// the host checks them, one source for both.
    pub range: Option<(i128, i128)>,
}

impl Field {
    pub fn new(wit: &str, shape: Shape, doc: Option<String>) -> Self {
        let (doc, range) = match doc {
            Some(d) => {
                let (text, range) = take_range(&d);
                ((!text.is_empty()).then_some(text), range)
            }
            None => (None, None),
        };
        let range = range.and_then(|(lo, hi)| shape.int_kind().map(|k| (lo.max(k.range().0), hi.min(k.range().1))));
        Field { wit: wit.to_string(), json: json_name(wit), shape, doc, range }
    }

    /// What a value of this field must be, in words (its declared range
    /// rather than its integer type's, when it has one).
    pub fn expected(&self) -> String {
        match (self.range, &self.shape) {
            (Some((lo, hi)), Shape::Option(_)) => format!("an integer from {lo} to {hi} or null"),
            (Some((lo, hi)), _) => format!("an integer from {lo} to {hi}"),
            (None, shape) => shape.expected(),
        }
    }

    /// The declared bounds hold for this value (an integer, or an option of one).
    fn check_range(&self, v: &Val, path: &str) -> Result<(), ArgError> {
        let Some((lo, hi)) = self.range else { return Ok(()) };
        let n: i128 = match v {
            Val::Option(Some(inner)) => return self.check_range(inner, path),
            Val::S8(n) => (*n).into(),
            Val::U8(n) => (*n).into(),
            Val::S16(n) => (*n).into(),
            Val::U16(n) => (*n).into(),
            Val::S32(n) => (*n).into(),
            Val::U32(n) => (*n).into(),
            Val::S64(n) => (*n).into(),
            Val::U64(n) => (*n).into(),
            _ => return Ok(()),
        };
        if n < lo || n > hi {
            return Err(err(path, format!("expected an integer from {lo} to {hi}, got {n}")));
        }
        Ok(())
    }

    /// A JSON integer outside the declared bounds, refused with them
    /// before its type's own range is checked (`300` for a `u8` declared
    /// `1..=100` is out of `1..=100`, not of `0..=255`).
    fn check_json_range(&self, v: &Value, path: &str) -> Result<(), ArgError> {
        let Some((lo, hi)) = self.range else { return Ok(()) };
        let n = match v {
            Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
            _ => None,
        };
        match n {
            Some(n) if n < lo || n > hi => Err(err(path, format!("expected an integer from {lo} to {hi}, got {n}"))),
            _ => Ok(()),
        }
    }

    /// `option<T>` fields may be left out.
    pub fn required(&self) -> bool {
        !matches!(self.shape, Shape::Option(_))
    }
}

/// Splits `@range(A..=B)` out of a doc comment: the text without it, and the
/// bounds (either side may be left open: `1..`, `..=100`).
fn take_range(doc: &str) -> (String, Option<(i128, i128)>) {
    let Some(start) = doc.find("@range(") else { return (doc.trim().to_string(), None) };
    let Some(len) = doc[start..].find(')') else { return (doc.trim().to_string(), None) };
    let spec = &doc[start + "@range(".len()..start + len];
    let bound = |s: &str, open: i128| if s.trim().is_empty() { Some(open) } else { s.trim().parse::<i128>().ok() };
    let range = spec.split_once("..=").and_then(|(lo, hi)| Some((bound(lo, i128::MIN)?, bound(hi, i128::MAX)?))).or_else(|| {
        let lo = spec.strip_suffix("..")?;
        Some((bound(lo, i128::MIN)?, i128::MAX))
    });
    let text = format!("{}{}", &doc[..start], &doc[start + len + 1..]);
    (text.trim().trim_end_matches([',', ';']).trim().to_string(), range)
}

/// A variant case: its WIT name and optional payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub name: String,
    pub payload: Option<Shape>,
    pub doc: Option<String>,
}

/// The conversion plan for one WIT type.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Bool,
    Int(Int),
    F32,
    F64,
    Char,
    String,
    /// `list<u8>`, carried as base64.
    Bytes,
    List(Box<Shape>),
    Record {
        fields: Vec<Field>,
        /// The WIT type's name, where its docs name it: the key of its
        /// schema under `$defs` when a tool's parameters use it twice.
        name: Option<String>,
        doc: Option<String>,
        /// Indexes of `fields` by JSON name, sorted: the order a value's keys
        /// are written in (`JsonOf`). Made by [`Shape::record`].
        sorted: Vec<usize>,
    },
    Tuple(Vec<Shape>),
    Variant {
        cases: Vec<Case>,
        doc: Option<String>,
    },
    Enum {
        cases: Vec<String>,
        docs: Vec<Option<String>>,
        doc: Option<String>,
    },
    Option(Box<Shape>),
    Result {
        ok: Option<Box<Shape>>,
        err: Option<Box<Shape>>,
    },
    Flags {
        names: Vec<String>,
        doc: Option<String>,
    },
}

/// kebab-case → snake_case.
pub fn json_name(wit: &str) -> String {
    wit.replace('-', "_")
}

// ---------------------------------------------------------------- WIT → Shape

impl Shape {
    /// A record of `fields` (in the WIT type's order).
    pub fn record(fields: Vec<Field>, name: Option<String>, doc: Option<String>) -> Shape {
        let mut sorted: Vec<usize> = (0..fields.len()).collect();
        sorted.sort_by(|&a, &b| fields[a].json.cmp(&fields[b].json));
        Shape::Record { fields, name, doc, sorted }
    }

    /// Builds the plan for a component type, or says why it cannot be a tool type.
    pub fn from_type(ty: &Type, docs: &Docs) -> Result<Shape, String> {
        Ok(match ty {
            Type::Bool => Shape::Bool,
            Type::S8 => Shape::Int(Int::S8),
            Type::U8 => Shape::Int(Int::U8),
            Type::S16 => Shape::Int(Int::S16),
            Type::U16 => Shape::Int(Int::U16),
            Type::S32 => Shape::Int(Int::S32),
            Type::U32 => Shape::Int(Int::U32),
            Type::S64 => Shape::Int(Int::S64),
            Type::U64 => Shape::Int(Int::U64),
            Type::Float32 => Shape::F32,
            Type::Float64 => Shape::F64,
            Type::Char => Shape::Char,
            Type::String => Shape::String,
            Type::List(l) => match l.ty() {
                Type::U8 => Shape::Bytes,
                inner => Shape::List(Box::new(Shape::from_type(&inner, docs)?)),
            },
            Type::Record(r) => {
                let names: Vec<&str> = r.fields().map(|f| f.name).collect();
                let tdoc = docs.type_docs(&names);
                let mut fields = Vec::new();
                for f in r.fields() {
                    let shape = Shape::from_type(&f.ty, docs)?;
                    let doc = tdoc.and_then(|t| t.item(f.name));
                    fields.push(Field::new(f.name, shape, doc));
                }
                Shape::record(fields, tdoc.and_then(|t| t.name.clone()), tdoc.and_then(|t| t.doc.clone()))
            }
            Type::Tuple(t) => Shape::Tuple(t.types().map(|t| Shape::from_type(&t, docs)).collect::<Result<_, _>>()?),
            Type::Variant(v) => {
                let names: Vec<&str> = v.cases().map(|c| c.name).collect();
                let tdoc = docs.type_docs(&names);
                let mut cases = Vec::new();
                for c in v.cases() {
                    let payload = c.ty.as_ref().map(|t| Shape::from_type(t, docs)).transpose()?;
                    cases.push(Case { name: c.name.to_string(), payload, doc: tdoc.and_then(|t| t.item(c.name)) });
                }
                Shape::Variant { cases, doc: tdoc.and_then(|t| t.doc.clone()) }
            }
            Type::Enum(e) => {
                let cases: Vec<String> = e.names().map(str::to_string).collect();
                let names: Vec<&str> = e.names().collect();
                let tdoc = docs.type_docs(&names);
                let case_docs = cases.iter().map(|c| tdoc.and_then(|t| t.item(c))).collect();
                Shape::Enum { cases, docs: case_docs, doc: tdoc.and_then(|t| t.doc.clone()) }
            }
            Type::Option(o) => Shape::Option(Box::new(Shape::from_type(&o.ty(), docs)?)),
            Type::Result(r) => Shape::Result {
                ok: r.ok().map(|t| Shape::from_type(&t, docs)).transpose()?.map(Box::new),
                err: r.err().map(|t| Shape::from_type(&t, docs)).transpose()?.map(Box::new),
            },
            Type::Flags(f) => {
                let names: Vec<&str> = f.names().collect();
                let tdoc = docs.type_docs(&names);
                Shape::Flags { names: f.names().map(str::to_string).collect(), doc: tdoc.and_then(|t| t.doc.clone()) }
            }
            Type::Own(_) | Type::Borrow(_) => {
                return Err("resources cannot cross the MCP boundary; pass a session id instead".into());
            }
            Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
                return Err("future, stream and error-context types are not supported in tools".into());
            }
            Type::Map(_) => return Err("map types are not supported in tools; use a list of records".into()),
            Type::FixedLengthList(_) => {
                return Err("fixed-length lists are not supported in tools; use list<T>".into());
            }
        })
    }
}

// --------------------------------------------------------------- JSON Schema

fn with_doc(mut schema: Value, doc: &Option<String>) -> Value {
    if let (Some(d), Some(obj)) = (doc, schema.as_object_mut()) {
        obj.entry("description").or_insert_with(|| Value::String(d.clone()));
    }
    schema
}

/// A type's description with its documented cases appended: "Doc (`a`: …; `b`: …)".
fn with_case_docs<'a>(doc: &Option<String>, cases: impl Iterator<Item = (&'a str, Option<&'a String>)>) -> Option<String> {
    let help = cases.filter_map(|(name, d)| d.map(|d| format!("`{name}`: {}", d.trim_end_matches('.')))).collect::<Vec<_>>().join("; ");
    match (doc, help.is_empty()) {
        (Some(d), false) => Some(format!("{} ({help})", d.trim_end_matches('.'))),
        (None, false) => Some(help),
        (d, true) => d.clone(),
    }
}

impl Shape {
    /// The integer type of an integer shape, or of an option of one.
    pub(crate) fn int_kind(&self) -> Option<Int> {
        match self {
            Shape::Int(k) => Some(*k),
            Shape::Option(inner) => inner.int_kind(),
            _ => None,
        }
    }

    /// The JSON Schema of values of this shape. Never uses oneOf/anyOf/allOf
    /// at the top of an object (clients reject it).
    pub fn schema(&self) -> Value {
        self.schema_in(&Defs::new())
    }

    /// The JSON Schema, with the records named in `defs` written as
    /// references to `#/$defs/NAME`.
    fn schema_in(&self, defs: &Defs) -> Value {
        match self {
            Shape::Bool => json!({"type": "boolean"}),
            Shape::Int(k) => {
                let (min, max) = k.range();
                if k.is_64() {
                    // JSON numbers beyond 2^53 lose precision in JavaScript: the
                    // schema's numbers stop there, and any 64-bit value can be
                    // given as a decimal string. Two branches of one type each
                    // rather than `"type": ["integer", "string"]`, which clients
                    // that map schemas onto a one-type dialect reject.
                    let (min, pattern) = match k {
                        Int::U64 => (0, "^[0-9]{1,20}$"),
                        _ => (-JS_SAFE, "^-?[0-9]{1,19}$"),
                    };
                    json!({"anyOf": [{"type": "integer", "minimum": min, "maximum": JS_SAFE}, {"type": "string", "pattern": pattern}],
                           "description": "64-bit integer: a number up to 2^53 - 1, or any value as a decimal string"})
                } else if matches!(k, Int::U32 | Int::S32) {
                    // Bounds of the type itself tell an agent nothing (the
                    // host still refuses a value that does not fit); they
                    // were a tenth of every schema's bytes.
                    if *k == Int::U32 { json!({"type": "integer", "minimum": 0}) } else { json!({"type": "integer"}) }
                } else {
                    json!({"type": "integer", "minimum": min as i64, "maximum": max as i64})
                }
            }
            Shape::F32 | Shape::F64 => json!({"type": "number"}),
            Shape::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            Shape::String => json!({"type": "string"}),
            Shape::Bytes => json!({"type": "string", "contentEncoding": "base64"}),
            Shape::List(inner) => json!({"type": "array", "items": inner.schema_in(defs)}),
            // The type's doc is in `$defs`; a field's own doc is added by the record around it.
            Shape::Record { name: Some(name), .. } if defs.contains_key(name.as_str()) => {
                json!({"$ref": format!("#/$defs/{}", json_name(name))})
            }
            Shape::Record { fields, doc, .. } => with_doc(object_schema_in(fields, defs), doc),
            Shape::Tuple(items) => json!({
                "type": "array",
                "prefixItems": items.iter().map(|s| s.schema_in(defs)).collect::<Vec<_>>(),
                "minItems": items.len(), "maxItems": items.len(),
            }),
            Shape::Variant { cases, doc } => {
                let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                let schema = if cases.iter().all(|c| c.payload.is_none()) {
                    json!({"type": "string", "enum": names})
                } else {
                    let payloads: Vec<Value> = cases.iter().filter_map(|c| c.payload.as_ref().map(|s| s.schema_in(defs))).collect();
                    let value = if payloads.len() == 1 { payloads[0].clone() } else { json!({"anyOf": payloads}) };
                    json!({
                        "type": "object",
                        "properties": {"tag": {"type": "string", "enum": names}, "value": value},
                        "required": ["tag"],
                        "additionalProperties": false,
                    })
                };
                let doc = with_case_docs(doc, cases.iter().map(|c| (c.name.as_str(), c.doc.as_ref())));
                with_doc(schema, &doc)
            }
            Shape::Enum { cases, docs, doc } => {
                let doc = with_case_docs(doc, cases.iter().map(String::as_str).zip(docs.iter().map(Option::as_ref)));
                with_doc(json!({"type": "string", "enum": cases}), &doc)
            }
            // Where absence is impossible (list items, tuple slots) none is null.
            // Object fields use the inner schema and are simply not required.
            Shape::Option(inner) => json!({"anyOf": [inner.schema_in(defs), {"type": "null"}]}),
            Shape::Result { ok, err } => {
                let arm = |s: &Option<Box<Shape>>| s.as_ref().map(|s| s.schema_in(defs)).unwrap_or(json!({"type": "null"}));
                json!({"type": "object", "properties": {"ok": arm(ok), "err": arm(err)},
                       "minProperties": 1, "maxProperties": 1, "additionalProperties": false})
            }
            Shape::Flags { names, doc } => {
                with_doc(json!({"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": true}), doc)
            }
        }
    }
}

/// The schema of a host-level 64-bit argument (a seed's secret), with its description.
pub fn u64_schema(description: &str) -> Value {
    let mut schema = Shape::Int(Int::U64).schema();
    schema["description"] = json!(description);
    schema
}

/// An integer schema's bounds narrowed to a field's declared range (64-bit
/// schemas keep their JavaScript-safe numeric bounds where those are tighter).
fn narrow(schema: &mut Value, lo: i128, hi: i128) {
    // A 64-bit schema's numbers are its integer branch.
    if let Some(integer) = schema.get_mut("anyOf").and_then(Value::as_array_mut).and_then(|b| b.iter_mut().find(|b| b["type"] == "integer"))
    {
        return narrow(integer, lo, hi);
    }
    let clamp = |key: &str, v: i128, keep_greater: bool| {
        let current = schema.get(key).and_then(Value::as_i64).map(i128::from);
        let new = match current {
            Some(c) if keep_greater => c.max(v),
            Some(c) => c.min(v),
            None => v,
        };
        (key.to_string(), new)
    };
    let (kmin, min) = clamp("minimum", lo, true);
    let (kmax, max) = clamp("maximum", hi, false);
    if let Value::Object(o) = schema
        && let (Ok(min), Ok(max)) = (i64::try_from(min), i64::try_from(max))
    {
        o.insert(kmin, json!(min));
        o.insert(kmax, json!(max));
    }
}

/// An object schema for parameters or record fields: required = non-option fields.
pub fn object_schema(fields: &[Field]) -> Value {
    object_schema_in(fields, &Defs::new())
}

/// Named records, by WIT name, that a tool's parameters use more than once.
type Defs<'a> = std::collections::BTreeMap<&'a str, &'a Shape>;

/// The input schema of a tool's parameters. A named record that appears
/// more than once is written once, under `$defs`, and referred to where it
/// is used; such a schema names its dialect (`$schema`), as JSON Schema
/// 2020-12 asks of a schema that defines things.
pub fn params_schema(fields: &[Field]) -> Value {
    let mut seen: std::collections::BTreeMap<&str, (usize, &Shape)> = Default::default();
    let mut clashes = std::collections::BTreeSet::new();
    for f in fields {
        f.shape.named_records(&mut |name, shape| {
            let entry = seen.entry(name).or_insert((0, shape));
            entry.0 += 1;
            // Two records of one name and different fields are kept inline.
            if entry.1 != shape {
                clashes.insert(name);
            }
        });
    }
    let defs: Defs = seen.into_iter().filter(|(name, (n, _))| *n > 1 && !clashes.contains(name)).map(|(k, (_, s))| (k, s)).collect();
    let mut schema = object_schema_in(fields, &defs);
    if !defs.is_empty() {
        let written: Map<String, Value> = defs
            .iter()
            .map(|(name, shape)| {
                let Shape::Record { fields, doc, .. } = shape else { unreachable!("only records are defined") };
                (json_name(name), with_doc(object_schema_in(fields, &defs), doc))
            })
            .collect();
        schema["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
        schema["$defs"] = Value::Object(written);
    }
    schema
}

impl Shape {
    /// Calls `found` with every named record in this shape, outermost first.
    fn named_records<'a>(&'a self, found: &mut impl FnMut(&'a str, &'a Shape)) {
        match self {
            Shape::Record { fields, name, .. } => {
                if let Some(name) = name {
                    found(name, self);
                }
                fields.iter().for_each(|f| f.shape.named_records(found));
            }
            Shape::List(s) | Shape::Option(s) => s.named_records(found),
            Shape::Tuple(items) => items.iter().for_each(|s| s.named_records(found)),
            Shape::Variant { cases, .. } => cases.iter().filter_map(|c| c.payload.as_ref()).for_each(|s| s.named_records(found)),
            Shape::Result { ok, err } => ok.iter().chain(err.iter()).for_each(|s| s.named_records(found)),
            _ => {}
        }
    }
}

fn object_schema_in(fields: &[Field], defs: &Defs) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for f in fields {
        let mut schema = match &f.shape {
            Shape::Option(inner) => inner.schema_in(defs),
            other => other.schema_in(defs),
        };
        if let Some((lo, hi)) = f.range {
            narrow(&mut schema, lo, hi);
        }
        // The field's (or parameter's) own doc is more specific than its type's.
        let schema = match (&f.doc, schema) {
            (Some(d), Value::Object(mut o)) => {
                o.insert("description".into(), Value::String(d.clone()));
                Value::Object(o)
            }
            (_, schema) => schema,
        };
        props.insert(f.json.clone(), schema);
        if f.required() {
            required.push(Value::String(f.json.clone()));
        }
    }
    let mut schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

#[cfg(test)]
mod tests;
