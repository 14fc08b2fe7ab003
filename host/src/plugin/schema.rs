//! WIT types ⇄ JSON Schema, and JSON ⇄ component values (the conventions:
//! docs/design-notes.md, "From WIT to tools").
//!
//! At load time every parameter and result type of a tool is turned into a
//! [`Shape`]: a plan that knows its JSON names and doc comments. The plan
//! yields the JSON Schema, converts incoming JSON to [`Val`] with errors that
//! name the field, and converts results back. Nothing walks wasmtime's types
//! on the request path.

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use super::docs::Docs;

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
    pub fn record(fields: Vec<Field>, doc: Option<String>) -> Shape {
        let mut sorted: Vec<usize> = (0..fields.len()).collect();
        sorted.sort_by(|&a, &b| fields[a].json.cmp(&fields[b].json));
        Shape::Record { fields, doc, sorted }
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
                Shape::record(fields, tdoc.and_then(|t| t.doc.clone()))
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
    fn int_kind(&self) -> Option<Int> {
        match self {
            Shape::Int(k) => Some(*k),
            Shape::Option(inner) => inner.int_kind(),
            _ => None,
        }
    }

    /// The JSON Schema of values of this shape. Never uses oneOf/anyOf/allOf
    /// at the top of an object (clients reject it).
    pub fn schema(&self) -> Value {
        match self {
            Shape::Bool => json!({"type": "boolean"}),
            Shape::Int(k) => {
                let (min, max) = k.range();
                if k.is_64() {
                    // JSON numbers beyond 2^53 lose precision in JavaScript: the
                    // schema's numbers stop there, and any 64-bit value can be
                    // given as a decimal string.
                    let (min, pattern) = match k {
                        Int::U64 => (0, "^[0-9]+$"),
                        _ => (-JS_SAFE, "^-?[0-9]+$"),
                    };
                    json!({"type": ["integer", "string"], "minimum": min, "maximum": JS_SAFE, "pattern": pattern,
                           "description": "64-bit integer: a number up to 2^53 - 1, or any value as a decimal string"})
                } else {
                    json!({"type": "integer", "minimum": min as i64, "maximum": max as i64})
                }
            }
            Shape::F32 | Shape::F64 => json!({"type": "number"}),
            Shape::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
            Shape::String => json!({"type": "string"}),
            Shape::Bytes => json!({"type": "string", "contentEncoding": "base64"}),
            Shape::List(inner) => json!({"type": "array", "items": inner.schema()}),
            Shape::Record { fields, doc, .. } => with_doc(object_schema(fields), doc),
            Shape::Tuple(items) => json!({
                "type": "array",
                "prefixItems": items.iter().map(Shape::schema).collect::<Vec<_>>(),
                "minItems": items.len(), "maxItems": items.len(),
            }),
            Shape::Variant { cases, doc } => {
                let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                let schema = if cases.iter().all(|c| c.payload.is_none()) {
                    json!({"type": "string", "enum": names})
                } else {
                    let payloads: Vec<Value> = cases.iter().filter_map(|c| c.payload.as_ref().map(Shape::schema)).collect();
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
            Shape::Option(inner) => json!({"anyOf": [inner.schema(), {"type": "null"}]}),
            Shape::Result { ok, err } => {
                let arm = |s: &Option<Box<Shape>>| s.as_ref().map(|s| s.schema()).unwrap_or(json!({"type": "null"}));
                json!({"type": "object", "properties": {"ok": arm(ok), "err": arm(err)},
                       "minProperties": 1, "maxProperties": 1, "additionalProperties": false})
            }
            Shape::Flags { names, doc } => {
                with_doc(json!({"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": true}), doc)
            }
        }
    }
}

/// An object schema for parameters or record fields: required = non-option fields.
/// An integer schema's bounds narrowed to a field's declared range (64-bit
/// schemas keep their JavaScript-safe numeric bounds where those are tighter).
fn narrow(schema: &mut Value, lo: i128, hi: i128) {
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

pub fn object_schema(fields: &[Field]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for f in fields {
        let mut schema = match &f.shape {
            Shape::Option(inner) => inner.schema(),
            other => other.schema(),
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

// ------------------------------------------------------------- JSON → Val

/// A conversion error naming where in the arguments it happened.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgError {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for ArgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() { write!(f, "{}", self.message) } else { write!(f, "argument `{}`: {}", self.path, self.message) }
    }
}

fn err(path: &str, message: impl Into<String>) -> ArgError {
    ArgError { path: path.to_string(), message: message.into() }
}

fn describe_json(v: &Value) -> String {
    let s = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    let text = v.to_string();
    if text.len() <= 40 { format!("{s} ({text})") } else { s.to_string() }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}.{key}") }
}

impl Shape {
    /// What an agent should send for this shape, in words.
    pub fn expected(&self) -> String {
        match self {
            Shape::Bool => "a boolean".into(),
            Shape::Int(k) => {
                let (min, max) = k.range();
                format!("an integer from {min} to {max}")
            }
            Shape::F32 | Shape::F64 => "a number".into(),
            Shape::Char => "a one-character string".into(),
            Shape::String => "a string".into(),
            Shape::Bytes => "a base64 string".into(),
            Shape::List(inner) => format!("an array of {}", inner.expected()),
            Shape::Record { fields, .. } => {
                let names: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
                format!("an object with fields {}", names.join(", "))
            }
            Shape::Tuple(items) => format!("an array of exactly {} items", items.len()),
            Shape::Variant { cases, .. } if cases.iter().all(|c| c.payload.is_none()) => {
                let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                format!("one of {}", names.join(", "))
            }
            Shape::Variant { .. } => "an object {\"tag\": …, \"value\": …}".into(),
            Shape::Enum { cases, .. } => format!("one of {}", cases.join(", ")),
            Shape::Option(inner) => format!("{} or null", inner.expected()),
            Shape::Result { .. } => "an object {\"ok\": …} or {\"err\": …}".into(),
            Shape::Flags { names, .. } => format!("an array of distinct names from {}", names.join(", ")),
        }
    }

    /// Converts JSON to a component value of this shape.
    pub fn to_val(&self, v: &Value, path: &str) -> Result<Val, ArgError> {
        let mismatch = || err(path, format!("expected {}, got {}", self.expected(), describe_json(v)));
        Ok(match self {
            Shape::Bool => Val::Bool(v.as_bool().ok_or_else(mismatch)?),
            Shape::Int(k) => int_val(*k, v, path, &self.expected())?,
            Shape::F32 => Val::Float32(v.as_f64().ok_or_else(mismatch)? as f32),
            Shape::F64 => Val::Float64(v.as_f64().ok_or_else(mismatch)?),
            Shape::Char => {
                let s = v.as_str().ok_or_else(mismatch)?;
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Val::Char(c),
                    _ => return Err(mismatch()),
                }
            }
            Shape::String => Val::String(v.as_str().ok_or_else(mismatch)?.to_string()),
            Shape::Bytes => {
                let s = v.as_str().ok_or_else(mismatch)?;
                let bytes = base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| err(path, format!("invalid base64: {e}")))?;
                Val::List(bytes.into_iter().map(Val::U8).collect())
            }
            Shape::List(inner) => {
                let items = v.as_array().ok_or_else(mismatch)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(inner.to_val(item, &format!("{path}[{i}]"))?);
                }
                Val::List(out)
            }
            Shape::Record { fields, .. } => {
                let obj = v.as_object().ok_or_else(mismatch)?;
                Val::Record(fields_to_vals(fields, obj, path)?.into_iter().map(|(f, v)| (f.wit.clone(), v)).collect())
            }
            Shape::Tuple(items) => {
                let arr = v.as_array().filter(|a| a.len() == items.len()).ok_or_else(mismatch)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, (s, item)) in items.iter().zip(arr).enumerate() {
                    out.push(s.to_val(item, &format!("{path}[{i}]"))?);
                }
                Val::Tuple(out)
            }
            Shape::Variant { cases, .. } => variant_val(cases, v, path, &self.expected())?,
            Shape::Enum { cases, .. } => {
                let s = v.as_str().ok_or_else(mismatch)?;
                if !cases.iter().any(|c| c == s) {
                    return Err(mismatch());
                }
                Val::Enum(s.to_string())
            }
            Shape::Option(inner) => match v {
                Value::Null => Val::Option(None),
                v => Val::Option(Some(Box::new(inner.to_val(v, path)?))),
            },
            Shape::Result { ok, err: e } => {
                let obj = v.as_object().filter(|o| o.len() == 1).ok_or_else(mismatch)?;
                let (key, inner) = obj.iter().next().expect("one entry");
                let arm = |s: &Option<Box<Shape>>, p: String| -> Result<Option<Box<Val>>, ArgError> {
                    match s {
                        Some(s) => Ok(Some(Box::new(s.to_val(inner, &p)?))),
                        None => Ok(None),
                    }
                };
                match key.as_str() {
                    "ok" => Val::Result(Ok(arm(ok, join(path, "ok"))?)),
                    "err" => Val::Result(Err(arm(e, join(path, "err"))?)),
                    _ => return Err(mismatch()),
                }
            }
            Shape::Flags { names, .. } => {
                let arr = v.as_array().ok_or_else(mismatch)?;
                let mut out: Vec<String> = Vec::new();
                for item in arr {
                    let s = item.as_str().filter(|s| names.iter().any(|n| n == s)).ok_or_else(mismatch)?;
                    if out.iter().any(|o| o == s) {
                        return Err(err(path, format!("flag `{s}` is given twice")));
                    }
                    out.push(s.to_string());
                }
                Val::Flags(out)
            }
        })
    }
}

fn int_val(k: Int, v: &Value, path: &str, expected: &str) -> Result<Val, ArgError> {
    let wrong = || err(path, format!("expected {expected}, got {}", describe_json(v)));
    let n: i128 = match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into()
            } else if let Some(u) = n.as_u64() {
                u.into()
            } else {
                // `3.0` is an integer; `3.5` is not.
                let f = n.as_f64().ok_or_else(wrong)?;
                if f.fract() != 0.0 || !f.is_finite() || f.abs() > 2f64.powi(63) {
                    return Err(wrong());
                }
                f as i128
            }
        }
        Value::String(s) if k.is_64() => s.trim().parse::<i128>().map_err(|_| wrong())?,
        _ => return Err(wrong()),
    };
    let (min, max) = k.range();
    if n < min || n > max {
        return Err(err(path, format!("{n} is out of range: expected {expected}")));
    }
    Ok(match k {
        Int::S8 => Val::S8(n as i8),
        Int::U8 => Val::U8(n as u8),
        Int::S16 => Val::S16(n as i16),
        Int::U16 => Val::U16(n as u16),
        Int::S32 => Val::S32(n as i32),
        Int::U32 => Val::U32(n as u32),
        Int::S64 => Val::S64(n as i64),
        Int::U64 => Val::U64(n as u64),
    })
}

fn variant_val(cases: &[Case], v: &Value, path: &str, expected: &str) -> Result<Val, ArgError> {
    let wrong = || err(path, format!("expected {expected}, got {}", describe_json(v)));
    // A bare string names a case without payload.
    let (tag, value) = match v {
        Value::String(s) => (s.as_str(), None),
        Value::Object(o) => {
            if let Some(extra) = o.keys().find(|k| *k != "tag" && *k != "value") {
                return Err(err(path, format!("unknown field `{extra}`: expected {expected}")));
            }
            (o.get("tag").and_then(Value::as_str).ok_or_else(wrong)?, o.get("value"))
        }
        _ => return Err(wrong()),
    };
    let Some(case) = cases.iter().find(|c| c.name == tag) else {
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        return Err(err(path, format!("unknown case `{tag}`: expected one of {}", names.join(", "))));
    };
    let payload = match (&case.payload, value) {
        (None, None | Some(Value::Null)) => None,
        (None, Some(_)) => return Err(err(path, format!("case `{tag}` takes no value"))),
        (Some(s), Some(val)) => Some(Box::new(s.to_val(val, &join(path, "value"))?)),
        (Some(s), None) => match s {
            Shape::Option(_) => Some(Box::new(Val::Option(None))),
            _ => return Err(err(path, format!("case `{tag}` needs a `value`: {}", s.expected()))),
        },
    };
    Ok(Val::Variant(tag.to_string(), payload))
}

/// Converts an object of named values (arguments or record fields), rejecting
/// unknown names and reporting missing required ones with what they expect.
pub fn fields_to_vals<'a>(fields: &'a [Field], obj: &Map<String, Value>, path: &str) -> Result<Vec<(&'a Field, Val)>, ArgError> {
    if let Some(unknown) = obj.keys().find(|k| !fields.iter().any(|f| &f.json == *k)) {
        let names: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
        let allowed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
        return Err(err(&join(path, unknown), format!("unknown field; allowed: {allowed}")));
    }
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let p = join(path, &f.json);
        let val = match obj.get(&f.json) {
            Some(v) => {
                let val = f.shape.to_val(v, &p)?;
                f.check_range(&val, &p)?;
                val
            }
            None if !f.required() => Val::Option(None),
            None => return Err(err(&p, format!("missing required field: expected {}", f.shape.expected()))),
        };
        out.push((f, val));
    }
    Ok(out)
}

// ------------------------------------------------------------- Val → JSON

impl Shape {
    /// Converts a component value of this shape back to JSON (the inverse of [`Shape::to_val`]).
    pub fn to_json(&self, v: &Val) -> Value {
        serde_json::to_value(JsonOf::new(self, v)).unwrap_or(Value::Null)
    }
}

/// A component value of a shape as JSON, for serde: `Shape::to_json` builds
/// a `Value` with it, and an answer can be written with it straight to bytes
/// (no `Value` in between), the same bytes either way. The one definition of
/// how values look in JSON.
pub struct JsonOf<'a> {
    shape: &'a Shape,
    val: &'a Val,
    /// Fields of a record value left out (the text convention's own fields,
    /// which an answer shows as content rather than as data).
    omit: fn(&Field) -> bool,
}

impl<'a> JsonOf<'a> {
    pub fn new(shape: &'a Shape, val: &'a Val) -> Self {
        JsonOf { shape, val, omit: |_| false }
    }

    /// A record value without the fields `omit` picks.
    pub fn omitting(shape: &'a Shape, val: &'a Val, omit: fn(&Field) -> bool) -> Self {
        JsonOf { shape, val, omit }
    }
}

impl serde::Serialize for JsonOf<'_> {
    fn serialize<S: serde::Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let of = |shape, val| JsonOf::new(shape, val);
        match (self.shape, self.val) {
            (_, Val::Bool(b)) => out.serialize_bool(*b),
            (_, Val::S8(n)) => out.serialize_i8(*n),
            (_, Val::U8(n)) => out.serialize_u8(*n),
            (_, Val::S16(n)) => out.serialize_i16(*n),
            (_, Val::U16(n)) => out.serialize_u16(*n),
            (_, Val::S32(n)) => out.serialize_i32(*n),
            (_, Val::U32(n)) => out.serialize_u32(*n),
            // Beyond JavaScript's safe integers a 64-bit value goes out as a
            // decimal string, as its schema says.
            (_, Val::S64(n)) if n.unsigned_abs() > JS_SAFE as u64 => out.collect_str(n),
            (_, Val::U64(n)) if *n > JS_SAFE as u64 => out.collect_str(n),
            (_, Val::S64(n)) => out.serialize_i64(*n),
            (_, Val::U64(n)) => out.serialize_u64(*n),
            (_, Val::Float32(f)) => float_json(f64::from(*f), out),
            (_, Val::Float64(f)) => float_json(*f, out),
            (_, Val::Char(c)) => out.serialize_char(*c),
            (_, Val::String(s)) => out.serialize_str(s),
            (Shape::Bytes, Val::List(items)) => {
                let bytes: Vec<u8> = items.iter().map(|v| if let Val::U8(b) = v { *b } else { 0 }).collect();
                out.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            (Shape::List(inner), Val::List(items)) => out.collect_seq(items.iter().map(|i| of(inner, i))),
            (Shape::Record { fields, sorted, .. }, Val::Record(vals)) => {
                // none fields are left out, mirroring "absent means none" on
                // input. Keys go out sorted, as serde_json's maps write them,
                // so that a value written straight and one written through a
                // `Value` are the same bytes.
                let shown =
                    sorted.iter().map(|&i| (&fields[i], &vals[i])).filter(|(f, (_, v))| !matches!(v, Val::Option(None)) && !(self.omit)(f));
                let mut map = out.serialize_map(None)?;
                for (f, (_, v)) in shown {
                    map.serialize_entry(&f.json, &of(&f.shape, v))?;
                }
                map.end()
            }
            (Shape::Tuple(shapes), Val::Tuple(vals)) => out.collect_seq(shapes.iter().zip(vals).map(|(s, v)| of(s, v))),
            (Shape::Variant { cases, .. }, Val::Variant(tag, payload)) => {
                let case = cases.iter().find(|c| &c.name == tag);
                match (case.and_then(|c| c.payload.as_ref()), payload) {
                    (Some(s), Some(p)) => {
                        let mut map = out.serialize_map(Some(2))?;
                        map.serialize_entry("tag", tag)?;
                        map.serialize_entry("value", &of(s, p))?;
                        map.end()
                    }
                    _ if cases.iter().all(|c| c.payload.is_none()) => out.serialize_str(tag),
                    _ => {
                        let mut map = out.serialize_map(Some(1))?;
                        map.serialize_entry("tag", tag)?;
                        map.end()
                    }
                }
            }
            (_, Val::Enum(s)) => out.serialize_str(s),
            (Shape::Option(inner), Val::Option(o)) => match o {
                Some(v) => of(inner, v).serialize(out),
                None => out.serialize_unit(),
            },
            (Shape::Result { ok, err }, Val::Result(r)) => {
                let (key, shape, val) = match r {
                    Ok(v) => ("ok", ok, v),
                    Err(v) => ("err", err, v),
                };
                let mut map = out.serialize_map(Some(1))?;
                match (shape, val) {
                    (Some(s), Some(v)) => map.serialize_entry(key, &of(s, v))?,
                    _ => map.serialize_entry(key, &())?,
                }
                map.end()
            }
            (_, Val::Flags(names)) => {
                let mut seq = out.serialize_seq(Some(names.len()))?;
                for name in names {
                    seq.serialize_element(name)?;
                }
                seq.end()
            }
            // Shapes and values come from the same component type; anything else is a host bug.
            (s, v) => {
                let mut map = out.serialize_map(Some(1))?;
                map.serialize_entry("unconvertible", &format!("{s:?} / {v:?}"))?;
                map.end()
            }
        }
    }
}

/// NaN and the infinities have no JSON number: null, as `serde_json` writes them.
fn float_json<S: serde::Serializer>(f: f64, out: S) -> Result<S::Ok, S::Error> {
    if f.is_finite() { out.serialize_f64(f) } else { out.serialize_unit() }
}

#[cfg(test)]
mod tests;
