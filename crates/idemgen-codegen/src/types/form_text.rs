//! Form values are text: `serde_qs` hands every value to serde as a
//! string, so the number or boolean variant of an untagged union would
//! never match a form's `delay_days=7`. The unions a form body reaches
//! read those variants through `form_text::parsed` (written into the
//! models module), which also takes text that parses as the variant's
//! type; a string variant listed first still takes the text first. And
//! `serde_qs` reads an optional field's empty value (`percent=`) as no
//! value: a `""` variant reads it through `form_text::empty`.

use std::collections::{BTreeMap, BTreeSet};

use super::OperationTypes;
use super::model::{Kind, Ty, TypeDef};

/// The helpers the chosen variants name, written once into the models:
/// `parsed` for number and boolean variants, `empty` for an enum of `""`.
pub fn helpers(parsed: bool, empty: bool) -> String {
    let mut out = String::from(
        "
/// Form values are text: a union's number or boolean variant also takes
/// text that parses as its type (`delay_days=7`), and its `\"\"` variant
/// the empty value of an optional field (`percent=`).
mod form_text {
    use serde::Deserialize;
    use serde::de::Deserializer;
",
    );
    if parsed {
        out.push_str(
            "
    pub fn parsed<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + std::str::FromStr,
    {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Sent<T> {
            Value(T),
            Text(String),
        }
        match Sent::<T>::deserialize(deserializer)? {
            Sent::Value(value) => Ok(value),
            Sent::Text(text) => text
                .parse()
                .map_err(|_| D::Error::custom(format!(\"`{text}` is not of this variant's type\"))),
        }
    }
",
        );
    }
    if empty {
        out.push_str(
            "
    pub fn empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Sent<T> {
            Value(T),
            Nothing(()),
        }
        match Sent::<T>::deserialize(deserializer)? {
            Sent::Value(value) => Ok(value),
            Sent::Nothing(()) => T::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(\"\")),
        }
    }
",
        );
    }
    out.push_str("}\n");
    out
}

/// Whether a union's variant of this type is read with `parsed`.
pub fn parses_text(ty: &Ty) -> bool {
    matches!(ty, Ty::Integer(_) | Ty::Number(_) | Ty::Bool)
}

/// Whether a union's variant of this type is read with `empty`: a string
/// enum with the value `""` (Stripe's "emptyable" fields).
pub fn takes_empty(ty: &Ty, defs: &BTreeMap<String, TypeDef>) -> bool {
    matches!(ty, Ty::Named(name) if matches!(
        defs.get(name).map(|def| &def.kind),
        Some(Kind::StringEnum(values)) if values.iter().any(|value| value.wire.is_empty())
    ))
}

/// The untagged unions with a number, boolean or `""` variant that a
/// form body reaches.
pub fn unions_read_from_forms(
    defs: &BTreeMap<String, TypeDef>,
    operations: &BTreeMap<String, OperationTypes>,
) -> BTreeSet<String> {
    unions_forms_reach(defs, operations)
        .into_iter()
        .filter(|name| match defs.get(name).map(|def| &def.kind) {
            Some(Kind::Untagged(alternatives)) => alternatives
                .iter()
                .any(|one| parses_text(&one.ty) || takes_empty(&one.ty, defs)),
            _ => false,
        })
        .collect()
}

/// Every untagged union a form body reaches, whatever its variants.
pub fn unions_forms_reach(
    defs: &BTreeMap<String, TypeDef>,
    operations: &BTreeMap<String, OperationTypes>,
) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut unions = BTreeSet::new();
    let mut pending: Vec<&Ty> = Vec::new();
    let bodies: Vec<Ty> = operations
        .values()
        .filter_map(|types| types.request_body.as_ref())
        .filter(|body| body.is_form)
        .map(|body| Ty::Named(body.type_name.clone()))
        .collect();
    pending.extend(bodies.iter());
    while let Some(ty) = pending.pop() {
        match ty {
            Ty::Vec(inner) | Ty::Map(inner) | Ty::Option(inner) | Ty::Boxed(inner) => {
                pending.push(inner)
            }
            Ty::Named(name) if seen.insert(name.clone()) => {
                let Some(def) = defs.get(name) else {
                    continue;
                };
                match &def.kind {
                    Kind::Struct(shape) => {
                        pending.extend(shape.fields.iter().map(|field| &field.ty));
                        pending.extend(shape.additional.iter());
                    }
                    Kind::Untagged(alternatives) => {
                        unions.insert(name.clone());
                        pending.extend(alternatives.iter().map(|one| &one.ty));
                    }
                    Kind::Alias(inner) | Kind::Newtype(inner) => pending.push(inner),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    unions
}
