//! A JSON value built for each variant of each generated union, with the
//! pattern that variant matches: what a test feeds the compiled models to
//! check that a value of variant *k* is read as variant *k*.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::model::{Alternative, Field, Kind, Ty, TypeDef};

/// Deepest nesting a sample is built to (a required member that holds
/// its own type would never end).
const MAX_DEPTH: usize = 24;

/// One value built for one variant of a union.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionSample {
    /// The union's type name in the models module.
    pub union: String,
    pub variant: String,
    /// A Rust pattern that matches the variant (`Pet::Dog(_)`, `Pet::Cat { .. }`).
    pub pattern: String,
    /// The value, as the variant's schema requires it.
    pub value: Value,
    /// The variant serde's derived code reads `value` as, worked out from
    /// the type model ([`super::reads`]); `None` when none takes it.
    pub reads_as: Option<String>,
}

/// A sample of every variant of every tagged and untagged union.
pub fn union_samples(defs: &BTreeMap<String, TypeDef>) -> Vec<UnionSample> {
    let mut samples = Vec::new();
    for def in defs.values() {
        match &def.kind {
            Kind::Untagged(variants) => {
                for variant in variants {
                    samples.push(UnionSample {
                        union: def.name.clone(),
                        variant: variant.variant.clone(),
                        pattern: format!("{}::{}(_)", def.name, variant.variant),
                        value: alternative(defs, variant, 0),
                        reads_as: None,
                    });
                }
            }
            Kind::Tagged(tagged) => {
                for variant in &tagged.variants {
                    let (members, pattern) = match &variant.fields {
                        Some(fields) => (
                            object(defs, fields, 0),
                            format!("{}::{} {{ .. }}", def.name, variant.variant),
                        ),
                        None => (
                            sample(defs, &variant.ty, 0),
                            format!("{}::{}(_)", def.name, variant.variant),
                        ),
                    };
                    let mut value = match members {
                        Value::Object(members) => members,
                        _ => Map::new(),
                    };
                    value.insert(tagged.tag.clone(), Value::String(variant.wire.clone()));
                    samples.push(UnionSample {
                        union: def.name.clone(),
                        variant: variant.variant.clone(),
                        pattern,
                        value: Value::Object(value),
                        reads_as: None,
                    });
                }
            }
            _ => {}
        }
    }
    for each in &mut samples {
        each.reads_as = super::reads::variant_of(defs, &each.union, &each.value);
    }
    samples
}

/// A value of `ty` with every required member.
fn sample(defs: &BTreeMap<String, TypeDef>, ty: &Ty, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    match ty {
        Ty::Named(name) => match defs.get(name).map(|def| &def.kind) {
            Some(Kind::Struct(shape)) => object(defs, &shape.fields, depth),
            Some(Kind::StringEnum(values)) => values
                .first()
                .map_or(Value::Null, |value| Value::String(value.wire.clone())),
            Some(Kind::Untagged(variants)) => variants
                .first()
                .map_or(Value::Null, |variant| alternative(defs, variant, depth + 1)),
            Some(Kind::Tagged(tagged)) => {
                let Some(variant) = tagged.variants.first() else {
                    return Value::Null;
                };
                let members = match &variant.fields {
                    Some(fields) => object(defs, fields, depth + 1),
                    None => sample(defs, &variant.ty, depth + 1),
                };
                let mut members = match members {
                    Value::Object(members) => members,
                    _ => Map::new(),
                };
                members.insert(tagged.tag.clone(), Value::String(variant.wire.clone()));
                Value::Object(members)
            }
            Some(Kind::Alias(inner) | Kind::Newtype(inner)) => sample(defs, inner, depth + 1),
            _ => Value::Null,
        },
        Ty::String => json!("text"),
        Ty::DateTime => json!("2024-06-15T12:00:00Z"),
        Ty::Date => json!("2024-06-15"),
        Ty::Bool => json!(true),
        Ty::Integer(_) => json!(1),
        Ty::Number(_) => json!(0.5),
        Ty::Vec(item) => json!([sample(defs, item, depth + 1)]),
        Ty::Map(_) => json!({}),
        Ty::Option(inner) | Ty::Boxed(inner) => sample(defs, inner, depth + 1),
        Ty::Bytes | Ty::Json => json!({}),
    }
}

/// A value of one variant of an untagged union: in a union chosen by a
/// property, with the property set to the variant's first value.
fn alternative(defs: &BTreeMap<String, TypeDef>, variant: &Alternative, depth: usize) -> Value {
    let mut value = sample(defs, &variant.ty, depth);
    if let (Some(chosen), Value::Object(members)) = (&variant.chosen_by, &mut value)
        && let Some(first) = chosen.values.first()
    {
        members.insert(chosen.property.clone(), Value::String(first.clone()));
    }
    value
}

fn object(defs: &BTreeMap<String, TypeDef>, fields: &[Field], depth: usize) -> Value {
    Value::Object(
        fields
            .iter()
            .filter(|field| field.required)
            .map(|field| (field.wire.clone(), sample(defs, &field.ty, depth + 1)))
            .collect(),
    )
}
