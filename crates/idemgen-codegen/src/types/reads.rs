//! What serde's derived code reads a JSON value as, worked out from the
//! type model rather than from compiled code: which variant of a union a
//! value becomes. It lets a test check every union of a large corpus in
//! process (`tests/it/types_corpus.rs`), where compiling the models of
//! 92 specs would take most of an hour; the compiled check of the same
//! samples stays for the specs it is run on.
//!
//! It follows the derives [`super::emit`] writes: a struct takes an object
//! with its required members (unknown members ignored unless
//! `deny_unknown_fields`, absent optional ones `None` or their default),
//! an untagged enum its first variant that takes the value, a tagged enum
//! the variant its tag names.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::model::{Alternative, Field, Kind, Tagged, Ty, TypeDef};

/// Deepest nesting followed; past it a value is taken (as a deeper check
/// would most likely find).
const MAX_DEPTH: usize = 48;

/// The variant of the union `union` that `value` is read as, `None` when
/// no variant takes it.
pub fn variant_of(defs: &BTreeMap<String, TypeDef>, union: &str, value: &Value) -> Option<String> {
    match &defs.get(union)?.kind {
        Kind::Untagged(variants) => untagged_variant(defs, variants, value, 0),
        Kind::Tagged(tagged) => tagged_variant(defs, tagged, value, 0),
        _ => None,
    }
}

/// The variant of an untagged union that takes `value`: the first that
/// does, or in a union chosen by a property, the one its value names (an
/// object without it: the variant that keeps it whole).
fn untagged_variant(
    defs: &BTreeMap<String, TypeDef>,
    variants: &[Alternative],
    value: &Value,
    depth: usize,
) -> Option<String> {
    let Some(chosen) = variants.first().and_then(|first| first.chosen_by.as_ref()) else {
        return variants
            .iter()
            .find(|variant| takes(defs, &variant.ty, value, depth))
            .map(|variant| variant.variant.clone());
    };
    // A value that is not a string is none of them.
    let sent = match value.as_object()?.get(&chosen.property) {
        None => return Some(chosen.without.clone()),
        Some(sent) => sent.as_str()?,
    };
    variants
        .iter()
        .find(|variant| {
            variant
                .chosen_by
                .as_ref()
                .is_some_and(|chosen| chosen.values.iter().any(|value| value == sent))
        })
        .filter(|variant| takes(defs, &variant.ty, value, depth))
        .map(|variant| variant.variant.clone())
}

fn tagged_variant(
    defs: &BTreeMap<String, TypeDef>,
    tagged: &Tagged,
    value: &Value,
    depth: usize,
) -> Option<String> {
    let object = value.as_object()?;
    let tag = object.get(&tagged.tag)?.as_str()?;
    let variant = tagged
        .variants
        .iter()
        .find(|variant| variant.wire == tag || variant.aliases.iter().any(|alias| alias == tag))?;
    // serde takes the tag out and gives the variant the other members.
    let mut rest = object.clone();
    rest.remove(&tagged.tag);
    let fits = match &variant.fields {
        Some(fields) => takes_members(defs, fields, false, None, &rest, depth + 1),
        None => takes(defs, &variant.ty, &Value::Object(rest), depth + 1),
    };
    fits.then(|| variant.variant.clone())
}

/// Whether deserialising `value` as `ty` succeeds.
pub fn takes(defs: &BTreeMap<String, TypeDef>, ty: &Ty, value: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    match (ty, value) {
        (Ty::Json, _) => true,
        (Ty::Option(_), Value::Null) => true,
        (Ty::Option(inner) | Ty::Boxed(inner), _) => takes(defs, inner, value, depth + 1),
        (Ty::String, Value::String(_)) => true,
        (Ty::DateTime, Value::String(text)) => is_date_time(text),
        (Ty::Date, Value::String(text)) => is_date(text),
        (Ty::Bool, Value::Bool(_)) => true,
        (Ty::Integer(rust), Value::Number(number)) => {
            super::model::integer_value(rust, number).is_some()
        }
        (Ty::Number(_), Value::Number(_)) => true,
        (Ty::Vec(item), Value::Array(items)) => {
            items.iter().all(|each| takes(defs, item, each, depth + 1))
        }
        (Ty::Map(member), Value::Object(members)) => members
            .values()
            .all(|each| takes(defs, member, each, depth + 1)),
        (Ty::Named(name), _) => match defs.get(name).map(|def| &def.kind) {
            Some(Kind::Struct(shape)) => value.as_object().is_some_and(|members| {
                takes_members(
                    defs,
                    &shape.fields,
                    shape.deny_unknown && shape.additional.is_none(),
                    shape.additional.as_ref(),
                    members,
                    depth + 1,
                )
            }),
            Some(Kind::StringEnum(values)) => value
                .as_str()
                .is_some_and(|text| values.iter().any(|each| each.wire == text)),
            Some(Kind::Untagged(variants)) => {
                untagged_variant(defs, variants, value, depth + 1).is_some()
            }
            Some(Kind::Tagged(tagged)) => tagged_variant(defs, tagged, value, depth + 1).is_some(),
            Some(Kind::Alias(inner) | Kind::Newtype(inner)) => takes(defs, inner, value, depth + 1),
            // Response and media enums are never read from JSON.
            Some(Kind::Response(_) | Kind::Media(_)) | None => false,
        },
        _ => false,
    }
}

/// Whether an object's members make the struct of `fields`.
fn takes_members(
    defs: &BTreeMap<String, TypeDef>,
    fields: &[Field],
    deny_unknown: bool,
    additional: Option<&Ty>,
    members: &Map<String, Value>,
    depth: usize,
) -> bool {
    let declared = |key: &str| fields.iter().any(|field| field.wire == key);
    for (key, value) in members {
        if declared(key) {
            continue;
        }
        match additional {
            Some(ty) if !takes(defs, ty, value, depth + 1) => return false,
            None if deny_unknown => return false,
            _ => {}
        }
    }
    fields.iter().all(|field| match members.get(&field.wire) {
        Some(value) => takes(defs, &field.declared(), value, depth + 1),
        None => !field.required,
    })
}

/// `YYYY-MM-DD` with a month and day that can be (chrono checks the
/// calendar too; the samples this reads are real dates).
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| range.clone().all(|at| bytes[at].is_ascii_digit());
    bytes.len() == 10
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && (1..=12).contains(&text[5..7].parse::<u8>().unwrap_or(0))
        && (1..=31).contains(&text[8..10].parse::<u8>().unwrap_or(0))
}

/// RFC 3339: a date, `T`, a time and an offset (`Z` or `±hh:mm`).
fn is_date_time(text: &str) -> bool {
    let Some((date, time)) = text.split_once(['T', 't']) else {
        return false;
    };
    let offset_at = time.rfind(['Z', 'z', '+', '-']).filter(|&at| at >= 8);
    is_date(date)
        && offset_at.is_some_and(|at| {
            let clock = &time[..at];
            let offset = &time[at..];
            clock.len() >= 8
                && clock.as_bytes()[2] == b':'
                && clock.as_bytes()[5] == b':'
                && (offset.eq_ignore_ascii_case("z") || offset.len() == 6)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_date_times() {
        assert!(is_date("2024-06-15"));
        assert!(!is_date("2024-13-15"));
        assert!(!is_date("text"));
        assert!(is_date_time("2024-06-15T12:00:00Z"));
        assert!(is_date_time("2024-06-15T12:00:00.5+02:00"));
        assert!(!is_date_time("2024-06-15"));
        assert!(!is_date_time("text"));
    }
}
