//! JSON arguments → component values, checked against their shape, with
//! errors that name the field and what it expects.

use base64::Engine as _;
use serde_json::{Map, Value};
use wasmtime::component::Val;

use super::{Case, Field, Int, Shape};

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

pub(super) fn err(path: &str, message: impl Into<String>) -> ArgError {
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
                // A declared range is what the agent must hear about, even
                // for a number the integer type itself cannot hold.
                f.check_json_range(v, &p)?;
                // With a declared range, a value of the wrong kind hears that range too, not the type's.
                let val = f.shape.to_val(v, &p).map_err(|e| match f.range {
                    Some(_) => err(&p, format!("expected {}, got {}", f.expected(), describe_json(v))),
                    None => e,
                })?;
                f.check_range(&val, &p)?;
                val
            }
            None if !f.required() => Val::Option(None),
            None => return Err(err(&p, format!("missing required field: expected {}", f.expected()))),
        };
        out.push((f, val));
    }
    Ok(out)
}
