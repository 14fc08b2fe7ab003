//! Round trips JSON → component value → JSON for every WIT type kind, on
//! random shapes and values; plus the schema rules clients depend on.

use base64::Engine as _;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn leaf() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Bool),
        prop_oneof![
            Just(Int::S8),
            Just(Int::U8),
            Just(Int::S16),
            Just(Int::U16),
            Just(Int::S32),
            Just(Int::U32),
            Just(Int::S64),
            Just(Int::U64)
        ]
        .prop_map(Shape::Int),
        Just(Shape::F64),
        Just(Shape::F32),
        Just(Shape::Char),
        Just(Shape::String),
        Just(Shape::Bytes),
        Just(Shape::Enum { cases: vec!["red".into(), "dark-blue".into()], docs: vec![None, None], doc: None }),
        Just(Shape::Flags { names: vec!["read".into(), "write".into(), "exec".into()], doc: None }),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|s| Shape::List(Box::new(s))),
            inner.clone().prop_map(|s| Shape::Option(Box::new(s))),
            // Field names out of alphabetical order: JSON keys are written sorted.
            prop::collection::vec(inner.clone(), 1..4).prop_map(|fs| Shape::record(
                fs.into_iter().zip(["zulu", "alpha", "mike-x", "bravo"]).map(|(s, name)| Field::new(name, s, None)).collect(),
                None,
                None,
            )),
            prop::collection::vec(inner.clone(), 1..3).prop_map(Shape::Tuple),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Shape::Variant {
                cases: vec![
                    Case { name: "none-here".into(), payload: None, doc: None },
                    Case { name: "one".into(), payload: Some(a), doc: None },
                    Case { name: "two".into(), payload: Some(b), doc: None },
                ],
                doc: None,
            }),
            (prop::option::of(inner.clone()), prop::option::of(inner))
                .prop_map(|(ok, err)| Shape::Result { ok: ok.map(Box::new), err: err.map(Box::new) }),
        ]
    })
}

/// A JSON value that conforms to `shape`, in its canonical form.
fn value(shape: &Shape) -> BoxedStrategy<Value> {
    match shape {
        Shape::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Shape::Int(k) => {
            let (min, max) = k.range();
            let (min, max) = (min.max(-(1 << 53)) as i64, max.min(1 << 53) as i64);
            (min..=max).prop_map(|n| json!(n)).boxed()
        }
        Shape::F64 => (-1e9f64..1e9).prop_map(|f| json!(f)).boxed(),
        Shape::F32 => (-1000i32..1000).prop_map(|n| json!(f64::from(n) / 4.0)).boxed(),
        Shape::Char => any::<char>().prop_map(|c| json!(c.to_string())).boxed(),
        Shape::String => ".{0,12}".prop_map(Value::String).boxed(),
        Shape::Bytes => {
            prop::collection::vec(any::<u8>(), 0..16).prop_map(|b| json!(base64::engine::general_purpose::STANDARD.encode(b))).boxed()
        }
        Shape::List(inner) => prop::collection::vec(value(inner), 0..4).prop_map(Value::Array).boxed(),
        Shape::Option(inner) => prop::option::of(value(inner)).prop_map(|v| v.unwrap_or(Value::Null)).boxed(),
        Shape::Record { fields, .. } => {
            let parts: Vec<BoxedStrategy<(String, Value)>> = fields
                .iter()
                .map(|f| {
                    let name = f.json.clone();
                    value(&f.shape).prop_map(move |v| (name.clone(), v)).boxed()
                })
                .collect();
            // none-valued fields are left out, as the host renders them.
            parts.prop_map(|kv| Value::Object(kv.into_iter().filter(|(_, v)| !v.is_null()).collect())).boxed()
        }
        Shape::Tuple(items) => {
            let parts: Vec<BoxedStrategy<Value>> = items.iter().map(value).collect();
            parts.prop_map(Value::Array).boxed()
        }
        Shape::Variant { cases, .. } => {
            let options: Vec<BoxedStrategy<Value>> = cases
                .iter()
                .map(|c| {
                    let tag = c.name.clone();
                    match &c.payload {
                        None => Just(json!({"tag": tag})).boxed(),
                        Some(p) => value(p).prop_map(move |v| json!({"tag": tag.clone(), "value": v})).boxed(),
                    }
                })
                .collect();
            prop::strategy::Union::new(options).boxed()
        }
        Shape::Enum { cases, .. } => prop::sample::select(cases.clone()).prop_map(Value::String).boxed(),
        Shape::Result { ok, err } => {
            let arm = |s: &Option<Box<Shape>>, key: &'static str| match s {
                Some(s) => value(s).prop_map(move |v| json!({key: v})).boxed(),
                None => Just(json!({key: null})).boxed(),
            };
            prop_oneof![arm(ok, "ok"), arm(err, "err")].boxed()
        }
        Shape::Flags { names, .. } => prop::sample::subsequence(names.clone(), 0..=names.len()).prop_map(|v| json!(v)).boxed(),
    }
}

fn shape_and_value() -> impl Strategy<Value = (Shape, Value)> {
    shape().prop_flat_map(|s| {
        let v = value(&s);
        (Just(s), v)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn json_to_val_to_json_round_trips((shape, json) in shape_and_value()) {
        let val = shape.to_val(&json, "x").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = shape.to_json(&val);
        prop_assert_eq!(&back, &json, "shape {:?}", shape);
    }

    /// An answer written straight from a component value (the stdio lane)
    /// is byte for byte the one written through a `Value` (rmcp's path).
    #[test]
    fn values_written_straight_are_the_bytes_written_through_json_values((shape, json) in shape_and_value()) {
        let val = shape.to_val(&json, "x").map_err(|e| TestCaseError::fail(e.to_string()))?;
        let straight = serde_json::to_vec(&JsonOf::new(&shape, &val)).unwrap();
        let through = serde_json::to_vec(&shape.to_json(&val)).unwrap();
        prop_assert_eq!(String::from_utf8(straight).unwrap(), String::from_utf8(through).unwrap(), "shape {:?}", shape);
    }

    #[test]
    fn schemas_accept_what_the_converter_accepts((shape, json) in shape_and_value()) {
        let schema = shape.schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        prop_assert!(validator.is_valid(&json), "{} rejects {}", schema, json);
    }
}

#[test]
fn integers_accept_whole_floats_and_64_bit_strings() {
    let u8s = Shape::Int(Int::U8);
    assert_eq!(u8s.to_val(&json!(3.0), "n").unwrap(), Val::U8(3));
    assert!(u8s.to_val(&json!(3.5), "n").unwrap_err().to_string().contains("argument `n`"));
    assert!(u8s.to_val(&json!(256), "n").unwrap_err().to_string().contains("256 is out of range"));
    let u64s = Shape::Int(Int::U64);
    assert_eq!(u64s.to_val(&json!("18446744073709551615"), "n").unwrap(), Val::U64(u64::MAX));
    assert!(Shape::Int(Int::U32).to_val(&json!("5"), "n").is_err(), "strings only for 64-bit");
}

#[test]
fn options_are_not_required_and_flags_match_their_schema() {
    let fields =
        vec![Field::new("a", Shape::String, Some("the a".into())), Field::new("b-c", Shape::Option(Box::new(Shape::Int(Int::U32))), None)];
    let schema = object_schema(&fields);
    assert_eq!(schema["required"], json!(["a"]));
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["properties"]["a"]["description"], "the a");
    assert!(schema["properties"].get("b_c").is_some(), "kebab-case becomes snake_case");
    let flags = Shape::Flags { names: vec!["x".into(), "y".into()], doc: None };
    assert_eq!(flags.schema()["type"], "array");
    assert_eq!(flags.schema()["uniqueItems"], true);
    assert!(flags.to_val(&json!(["x", "x"]), "f").unwrap_err().to_string().contains("twice"));
    assert_eq!(flags.to_val(&json!(["y"]), "f").unwrap(), Val::Flags(vec!["y".into()]));
}

#[test]
fn unit_variants_are_plain_string_enums() {
    let v = Shape::Variant {
        cases: vec![
            Case { name: "left".into(), payload: None, doc: Some("port".into()) },
            Case { name: "right".into(), payload: None, doc: None },
        ],
        doc: None,
    };
    assert_eq!(v.schema()["enum"], json!(["left", "right"]));
    assert_eq!(v.schema()["description"], "`left`: port");
    assert_eq!(v.to_val(&json!("right"), "s").unwrap(), Val::Variant("right".into(), None));
    assert!(v.to_val(&json!("up"), "s").unwrap_err().to_string().contains("unknown case `up`"));
}

#[test]
fn declared_ranges_narrow_the_schema_and_are_checked() {
    let n = Field::new("n", Shape::Int(Int::U32), Some("number of disks, 1 to 30 @range(1..=30)".into()));
    assert_eq!(n.doc.as_deref(), Some("number of disks, 1 to 30"));
    let k = Field::new("k", Shape::Option(Box::new(Shape::Int(Int::U8))), Some("@range(2..)".into()));
    assert_eq!((k.doc.clone(), k.range), (None, Some((2, 255))), "open ends take the type's bound");
    let fields = [n, k];
    let schema = object_schema(&fields);
    assert_eq!((schema["properties"]["n"]["minimum"].clone(), schema["properties"]["n"]["maximum"].clone()), (json!(1), json!(30)));
    assert_eq!(schema["properties"]["k"]["minimum"], 2);
    let args = |v: Value| v.as_object().unwrap().clone();
    assert!(fields_to_vals(&fields, &args(json!({"n": 30, "k": 2})), "").is_ok());
    let e = fields_to_vals(&fields, &args(json!({"n": 31})), "").unwrap_err().to_string();
    assert!(e.contains("`n`") && e.contains("from 1 to 30, got 31"), "{e}");
    let e = fields_to_vals(&fields, &args(json!({"n": 3, "k": 1})), "").unwrap_err().to_string();
    assert!(e.contains("from 2 to 255, got 1"), "{e}");
}

#[test]
fn sixty_four_bit_schemas_stay_within_javascripts_safe_integers() {
    let s = Shape::Int(Int::U64).schema();
    // One type per branch: a number up to 2^53 - 1, or any value as a decimal string.
    assert_eq!(s["anyOf"][0], json!({"type": "integer", "minimum": 0, "maximum": (1i64 << 53) - 1}));
    assert_eq!(s["anyOf"][1], json!({"type": "string", "pattern": "^[0-9]{1,20}$"}));
    assert!(s.get("type").is_none());
    // A declared range narrows the integer branch.
    let mut field = Field::new("seed", Shape::Int(Int::U64), Some("x @range(1..=100)".into()));
    field.doc = None;
    let narrowed = params_schema(&[field]);
    assert_eq!(narrowed["properties"]["seed"]["anyOf"][0]["maximum"], json!(100));
    assert_eq!(narrowed["properties"]["seed"]["anyOf"][0]["minimum"], json!(1));
    assert_eq!(Shape::Int(Int::U64).to_val(&json!("18446744073709551615"), "seed").unwrap(), Val::U64(u64::MAX));
}

#[test]
fn large_64_bit_results_go_out_as_strings_that_match_their_schema() {
    assert_eq!(Shape::Int(Int::U64).to_json(&Val::U64(u64::MAX)), json!("18446744073709551615"));
    assert_eq!(Shape::Int(Int::U64).to_json(&Val::U64(7)), json!(7));
    assert_eq!(Shape::Int(Int::S64).to_json(&Val::S64(i64::MIN)), json!("-9223372036854775808"));
}

#[test]
fn a_named_record_used_twice_is_defined_once_under_defs() {
    let address = |doc: Option<&str>| {
        Shape::record(
            vec![Field::new("street", Shape::String, None), Field::new("city", Shape::String, None)],
            Some("postal-address".into()),
            doc.map(str::to_string),
        )
    };
    let fields = vec![
        Field::new("home", address(Some("Where one lives.")), Some("the home".into())),
        Field::new("mail", Shape::Option(Box::new(address(Some("Where one lives.")))), None),
    ];
    let schema = params_schema(&fields);
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["$defs"]["postal_address"]["description"], "Where one lives.");
    assert_eq!(schema["$defs"]["postal_address"]["required"], json!(["street", "city"]));
    assert_eq!(schema["properties"]["home"], json!({"$ref": "#/$defs/postal_address", "description": "the home"}));
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    assert!(validator.is_valid(&json!({"home": {"street": "Rue 1", "city": "Lyon"}})));
    assert!(!validator.is_valid(&json!({"home": {"street": "Rue 1"}})), "the reference is followed");

    // Used once, or two records of one name with different fields: inline, no dialect.
    let once = params_schema(&fields[..1]);
    assert!(once.get("$defs").is_none() && once.get("$schema").is_none(), "{once}");
    let other = Shape::record(vec![Field::new("zip", Shape::String, None)], Some("postal-address".into()), None);
    let clash = params_schema(&[fields[0].clone(), Field::new("other", other, None)]);
    assert!(clash.get("$defs").is_none(), "{clash}");
}
