//! Unions that never guess: which variant of a `oneOf`/`anyOf` a value is.
//!
//! A `discriminator` names the variant; its union is internally tagged.
//! Without one, serde's `untagged` takes the first variant that accepts
//! the value, and a struct accepts any object that has its required
//! members (it ignores the others). Such a union is generated only when
//! its variants can be ordered so that each one refuses the values built
//! for the variants after it: different JSON types, a required member the
//! other does not declare, `additionalProperties: false` facing a member
//! it does not know, or a member both have whose values differ (a
//! `const`). Failing that, a union whose variants are objects that each
//! declare one property as a string enum, no value in two of them
//! (Adyen's `paymentMethod`: 58 objects, `type: ach`, `type: scheme`, …),
//! is chosen by that property's value: the variant whose values hold it
//! is the one tried, and no other. Otherwise the union is
//! `serde_json::Value`, and [`super::SpecTypes::ambiguous_unions`] names
//! it and says why: a value the business code can still read, never one
//! silently read as the wrong variant.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::Fallback;
use super::model::{Alternative, ChosenBy, EnumValue, Field, Kind, Struct, Tagged, Ty, TypeDef};

/// How deep the comparison follows named types before it gives up (and
/// then assumes the worst: the values may overlap).
const MAX_DEPTH: usize = 12;

/// Orders every untagged union so that each variant is chosen for its
/// own values, or makes it `serde_json::Value` (with a [`Fallback`] in
/// `ambiguous` and in `fallbacks`); gives each tagged variant that
/// declares the tag the members serde leaves it.
pub fn settle(
    defs: &mut BTreeMap<String, TypeDef>,
    pointers: &HashMap<String, String>,
    read_from_forms: &BTreeSet<String>,
    fallbacks: &mut Vec<Fallback>,
    ambiguous: &mut Vec<Fallback>,
) {
    let names: Vec<String> = defs.keys().cloned().collect();
    for name in names {
        let settled = match &defs[&name].kind {
            // A form's values are all text, which the chosen variant
            // would be read from as JSON: forms keep to unions in order.
            Kind::Untagged(variants) => order(defs, variants)
                .or_else(|why| match read_from_forms.contains(&name) {
                    true => Err(why),
                    false => chosen_by_property(defs, variants).ok_or(why),
                })
                .map(Kind::Untagged),
            Kind::Tagged(tagged) => tag_fields(defs, tagged).map(Kind::Tagged),
            _ => continue,
        };
        let def = defs.get_mut(&name).expect("a name listed from the map");
        match settled {
            Ok(kind) => def.kind = kind,
            Err(why) => {
                let reason = format!("Any JSON value: {why}.");
                if !def.docs.is_empty() {
                    def.docs.push(String::new());
                }
                def.docs.push(reason.clone());
                def.kind = Kind::Alias(Ty::Json);
                let fallback = Fallback {
                    pointer: pointers.get(&name).cloned().unwrap_or_default(),
                    reason,
                };
                fallbacks.push(fallback.clone());
                ambiguous.push(fallback);
            }
        }
    }
}

/// The variants in an order where each refuses the values of those after
/// it, or why there is none.
fn order(
    defs: &BTreeMap<String, TypeDef>,
    variants: &[Alternative],
) -> Result<Vec<Alternative>, String> {
    let mut left: Vec<Alternative> = variants.to_vec();
    let mut ordered = Vec::new();
    while !left.is_empty() {
        let first = (0..left.len()).find(|&i| {
            (0..left.len()).all(|k| k == i || refuses(defs, &left[i].ty, &left[k].ty, 0))
        });
        match first {
            Some(i) => ordered.push(left.remove(i)),
            None => return Err(why_ambiguous(defs, &left)),
        }
    }
    Ok(ordered)
}

/// The variants, each chosen by the values it allows for one property,
/// when there is such a property: every variant an object declaring it as
/// a string enum (or `const`), and no value allowed by two variants. The
/// first such property of the first variant, in its order.
fn chosen_by_property(
    defs: &BTreeMap<String, TypeDef>,
    variants: &[Alternative],
) -> Option<Vec<Alternative>> {
    let objects: Vec<&Struct> = variants
        .iter()
        .map(|variant| match shape(defs, &variant.ty, 0) {
            Shape::Struct(fields) => Some(fields),
            _ => None,
        })
        .collect::<Option<_>>()?;
    'property: for candidate in &objects.first()?.fields {
        let mut taken: HashSet<&str> = HashSet::new();
        let mut choices: Vec<Vec<String>> = Vec::new();
        for object in &objects {
            let Some(field) = find(&object.fields, &candidate.wire) else {
                continue 'property;
            };
            let Shape::Enum(values) = shape(defs, &field.ty, 0) else {
                continue 'property;
            };
            if values.is_empty() || !values.iter().all(|value| taken.insert(&value.wire)) {
                continue 'property;
            }
            let wires = values.iter().map(|value| value.wire.clone()).collect();
            choices.push(wires);
        }
        // The variant that keeps an object without the property, named
        // apart from the others.
        let mut without = format!("Without{}", super::naming::pascal_case(&candidate.wire));
        while variants.iter().any(|variant| variant.variant == without) {
            without.push_str("Value");
        }
        return Some(
            variants
                .iter()
                .zip(choices)
                .map(|(variant, values)| Alternative {
                    chosen_by: Some(ChosenBy {
                        property: candidate.wire.clone(),
                        values,
                        without: without.clone(),
                    }),
                    ..variant.clone()
                })
                .collect(),
        );
    }
    None
}

/// Why no order of `left` reads each value as itself, naming the
/// variants by their types (the union itself becomes `serde_json::Value`,
/// so its variant names are nowhere in the code).
fn why_ambiguous(defs: &BTreeMap<String, TypeDef>, left: &[Alternative]) -> String {
    let advice = "give each variant a required or `const` property of its own, \
                  `additionalProperties: false`, or name it with a `discriminator`";
    for (i, a) in left.iter().enumerate() {
        for b in &left[i + 1..] {
            if !refuses(defs, &a.ty, &b.ty, 0) && !refuses(defs, &b.ty, &a.ty, 0) {
                return format!(
                    "the union's variants `{}` and `{}` accept each other's values, so which \
                     one a value is cannot be told ({advice})",
                    a.ty.rust(),
                    b.ty.rust()
                );
            }
        }
    }
    format!(
        "the union's variants {} accept one another's values in a circle, so which one a \
         value is cannot be told ({advice})",
        left.iter()
            .map(|alternative| format!("`{}`", alternative.ty.rust()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Each tagged variant that declares the tag holds the other members.
fn tag_fields(defs: &BTreeMap<String, TypeDef>, tagged: &Tagged) -> Result<Tagged, String> {
    let mut tagged = tagged.clone();
    for variant in &mut tagged.variants {
        match shape(defs, &variant.ty, 0) {
            Shape::Struct(fields) => {
                if fields.fields.iter().any(|field| field.wire == tagged.tag) {
                    variant.fields = Some(
                        fields
                            .fields
                            .iter()
                            .filter(|field| field.wire != tagged.tag)
                            .cloned()
                            .collect(),
                    );
                }
            }
            // serde takes the tag out before the variant reads the rest: a
            // union named by the same property would never find it.
            Shape::Tagged(inner) if inner.tag == tagged.tag => {
                return Err(format!(
                    "the discriminator's variant `{}` is itself a union named by `{}`, which \
                     serde takes out before the variant reads the rest",
                    variant.variant, tagged.tag
                ));
            }
            Shape::Map(_) | Shape::Any | Shape::Tagged(_) => {}
            _ => {
                return Err(format!(
                    "the discriminator's variant `{}` is not an object, so no property can \
                     name it",
                    variant.variant
                ));
            }
        }
    }
    Ok(tagged)
}

/// What a type accepts, as far as telling variants apart needs.
enum Shape<'d> {
    /// Any JSON value (or one this comparison does not follow).
    Any,
    Bool,
    Integer,
    Number,
    String,
    Enum(&'d [EnumValue]),
    Array(&'d Ty),
    Map(&'d Ty),
    Struct(&'d Struct),
    Tagged(&'d Tagged),
    Union(&'d [Alternative]),
}

fn shape<'d>(defs: &'d BTreeMap<String, TypeDef>, ty: &'d Ty, depth: usize) -> Shape<'d> {
    if depth > MAX_DEPTH {
        return Shape::Any;
    }
    match ty {
        Ty::Named(name) => match defs.get(name).map(|def| &def.kind) {
            Some(Kind::Struct(fields)) => Shape::Struct(fields),
            Some(Kind::StringEnum(values)) => Shape::Enum(values),
            Some(Kind::Untagged(variants)) => Shape::Union(variants),
            Some(Kind::Tagged(tagged)) => Shape::Tagged(tagged),
            Some(Kind::Alias(inner) | Kind::Newtype(inner)) => shape(defs, inner, depth + 1),
            _ => Shape::Any,
        },
        // On the wire a date is a string: it might take another string's value.
        Ty::String | Ty::DateTime | Ty::Date => Shape::String,
        Ty::Bool => Shape::Bool,
        Ty::Integer(_) => Shape::Integer,
        Ty::Number(_) => Shape::Number,
        Ty::Vec(item) => Shape::Array(item),
        Ty::Map(value) => Shape::Map(value),
        // A value built for a variant is not `null`.
        Ty::Option(inner) | Ty::Boxed(inner) => shape(defs, inner, depth + 1),
        Ty::Bytes | Ty::Json => Shape::Any,
    }
}

/// The JSON type of a shape's values (`None`: any).
fn json_type(shape: &Shape) -> Option<&'static str> {
    Some(match shape {
        Shape::Any | Shape::Union(_) => return None,
        Shape::Bool => "boolean",
        Shape::Integer => "integer",
        Shape::Number => "number",
        Shape::String | Shape::Enum(_) => "string",
        Shape::Array(_) => "array",
        Shape::Map(_) | Shape::Struct(_) | Shape::Tagged(_) => "object",
    })
}

/// Whether deserialising as `taker` refuses every value built for
/// `value`: a value with the members `value` requires, each built the
/// same way. False when unsure.
pub fn refuses(defs: &BTreeMap<String, TypeDef>, taker: &Ty, value: &Ty, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let (taker_shape, value_shape) = (shape(defs, taker, depth), shape(defs, value, depth));
    refuses_shape(defs, &taker_shape, &value_shape, depth + 1)
}

fn refuses_shape(
    defs: &BTreeMap<String, TypeDef>,
    taker: &Shape,
    value: &Shape,
    depth: usize,
) -> bool {
    if let Shape::Union(variants) = value {
        return variants.iter().all(|variant| {
            refuses_shape(defs, taker, &shape(defs, &variant.ty, depth), depth + 1)
        });
    }
    if let Shape::Union(variants) = taker {
        return variants.iter().all(|variant| {
            refuses_shape(defs, &shape(defs, &variant.ty, depth), value, depth + 1)
        });
    }
    let (Some(taker_type), Some(value_type)) = (json_type(taker), json_type(value)) else {
        return false;
    };
    if taker_type != value_type {
        // A number accepts an integer's values; the other types are apart.
        return !(taker_type == "number" && value_type == "integer");
    }
    match (taker, value) {
        (Shape::Enum(allowed), Shape::Enum(values)) => values
            .iter()
            .all(|value| !allowed.iter().any(|a| a.wire == value.wire)),
        // A valid value of the plain string is none of the enum's (else
        // it would match both).
        (Shape::Enum(_), Shape::String) => true,
        (Shape::Array(taker), Shape::Array(value)) => refuses(defs, taker, value, depth),
        (Shape::Struct(taker), Shape::Struct(value)) => struct_refuses(defs, taker, value, depth),
        (Shape::Struct(taker), Shape::Map(_)) => taker.fields.iter().any(|field| field.required),
        (Shape::Map(item), Shape::Struct(value)) => value
            .fields
            .iter()
            .filter(|field| field.required)
            .any(|field| refuses(defs, item, &field.ty, depth)),
        (Shape::Tagged(taker), Shape::Struct(value)) => match find(&value.fields, &taker.tag) {
            Some(field) if field.required => match shape(defs, &field.ty, depth) {
                Shape::Enum(values) => values.iter().all(|value| {
                    !taker.variants.iter().any(|variant| {
                        variant.wire == value.wire || variant.aliases.contains(&value.wire)
                    })
                }),
                _ => false,
            },
            _ => true,
        },
        (Shape::Struct(taker), Shape::Tagged(value)) => value.variants.iter().all(|variant| {
            // The tag is a member `taker` does not know, where it denies those.
            let tag_unknown = taker.deny_unknown
                && taker.additional.is_none()
                && find(&taker.fields, &value.tag).is_none();
            let members = shape(defs, &variant.ty, depth);
            tag_unknown || refuses_shape(defs, &Shape::Struct(taker), &members, depth + 1)
        }),
        (Shape::Tagged(taker), Shape::Tagged(value)) => {
            taker.tag != value.tag
                || value.variants.iter().all(|variant| {
                    !taker
                        .variants
                        .iter()
                        .any(|other| other.wire == variant.wire)
                })
        }
        _ => false,
    }
}

/// Whether the struct `taker` refuses the objects built for `value`.
fn struct_refuses(
    defs: &BTreeMap<String, TypeDef>,
    taker: &Struct,
    value: &Struct,
    depth: usize,
) -> bool {
    // A member `taker` requires that `value`'s objects never carry.
    let lacks_required = taker
        .fields
        .iter()
        .filter(|field| field.required)
        .any(|field| find(&value.fields, &field.wire).is_none());
    let required_of_value = || value.fields.iter().filter(|field| field.required);
    // A member `taker` does not know, where it denies unknown ones.
    let unknown = taker.deny_unknown
        && taker.additional.is_none()
        && required_of_value().any(|field| find(&taker.fields, &field.wire).is_none());
    // A member both have whose values differ (`kind: const cat` / `dog`).
    let differs = required_of_value().any(|field| {
        find(&taker.fields, &field.wire)
            .is_some_and(|mine| refuses(defs, &mine.ty, &field.ty, depth))
    });
    lacks_required || unknown || differs
}

fn find<'f>(fields: &'f [Field], wire: &str) -> Option<&'f Field> {
    fields.iter().find(|field| field.wire == wire)
}
