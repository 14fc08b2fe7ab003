//! Component values → JSON: `JsonOf`, the one definition of how a value
//! looks in JSON, written straight to bytes or into a `Value`.

use base64::Engine as _;
use serde_json::Value;
use wasmtime::component::Val;

use super::{Field, JS_SAFE, Shape};

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
