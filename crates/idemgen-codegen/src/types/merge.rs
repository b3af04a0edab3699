//! Structurally identical types, one definition: an inline schema written
//! out again in many places (Stripe's `created` range filter, on 30 list
//! operations) would otherwise be as many identical structs. Two
//! definitions are merged when everything but their names is the same,
//! docs included; the survivor is the first by name, and the others'
//! names stay, as aliases of it (so a name does not vanish when an alike
//! type is added to the spec). A schema of
//! `components` is named by the spec and never merged away, and neither
//! is a type an operation names (its body, parameters, responses).

use std::collections::{BTreeMap, BTreeSet};

use super::OperationTypes;
use super::model::{Kind, Ty, TypeDef};

/// `defs` with identical inline definitions merged, repeating while a
/// merge makes their users identical in turn.
pub fn identical(
    mut defs: BTreeMap<String, TypeDef>,
    components: &BTreeSet<String>,
    operations: &BTreeMap<String, OperationTypes>,
) -> BTreeMap<String, TypeDef> {
    let named = named_by_operations(operations);
    loop {
        let mut first_of: BTreeMap<String, &str> = BTreeMap::new();
        let mut renamed: BTreeMap<String, String> = BTreeMap::new();
        for (name, def) in &defs {
            if components.contains(name) || named.contains(name.as_str()) || !mergeable(&def.kind) {
                continue;
            }
            let shape = format!("{:?}{:?}", def.docs, def.kind);
            match first_of.get(&shape) {
                Some(first) => {
                    renamed.insert(name.clone(), (*first).to_string());
                }
                None => {
                    first_of.insert(shape, name);
                }
            }
        }
        if renamed.is_empty() {
            return defs;
        }
        for def in defs.values_mut() {
            match renamed.get(&def.name) {
                // Its name stays, as an alias: code that names it keeps
                // compiling whichever of the alike types is the survivor.
                Some(survivor) => {
                    if !def.docs.is_empty() {
                        def.docs.push(String::new());
                    }
                    def.docs.push(format!(
                        "The same type as [`{survivor}`], which the spec declares alike."
                    ));
                    def.kind = Kind::Alias(Ty::Named(survivor.clone()));
                }
                None => rename_in_kind(&mut def.kind, &renamed),
            }
        }
    }
}

/// Kinds that are the shape of a value (not an operation's answers).
fn mergeable(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Struct(_) | Kind::StringEnum(_) | Kind::Untagged(_) | Kind::Tagged(_)
    )
}

/// Every identifier in the text of the types operations refer to: the
/// templates and the service's code name those types.
fn named_by_operations(operations: &BTreeMap<String, OperationTypes>) -> BTreeSet<String> {
    let mut texts: Vec<&str> = Vec::new();
    for types in operations.values() {
        if let Some(body) = &types.request_body {
            texts.push(&body.type_name);
        }
        if let Some(params) = &types.params {
            texts.push(&params.type_name);
            texts.extend(params.fields.iter().map(|field| field.rust_type.as_str()));
        }
        texts.push(&types.response.type_name);
        for variant in &types.response.variants {
            texts.extend(variant.body.as_deref());
            texts.extend(variant.media_enum.as_deref());
            texts.extend(
                variant
                    .headers
                    .iter()
                    .map(|header| header.rust_type.as_str()),
            );
        }
    }
    texts
        .iter()
        .flat_map(|text| text.split(|c: char| !(c.is_alphanumeric() || c == '_')))
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

fn rename_in_kind(kind: &mut Kind, renamed: &BTreeMap<String, String>) {
    match kind {
        Kind::Struct(shape) => {
            for field in &mut shape.fields {
                rename_in_ty(&mut field.ty, renamed);
            }
            if let Some(additional) = &mut shape.additional {
                rename_in_ty(additional, renamed);
            }
        }
        Kind::StringEnum(_) => {}
        Kind::Untagged(alternatives) => {
            for alternative in alternatives {
                rename_in_ty(&mut alternative.ty, renamed);
            }
        }
        Kind::Tagged(tagged) => {
            for variant in &mut tagged.variants {
                rename_in_ty(&mut variant.ty, renamed);
                for field in variant.fields.iter_mut().flatten() {
                    rename_in_ty(&mut field.ty, renamed);
                }
            }
        }
        Kind::Alias(ty) | Kind::Newtype(ty) => rename_in_ty(ty, renamed),
        Kind::Response(cases) => {
            for case in cases {
                if let Some(body) = &mut case.body {
                    rename_in_ty(body, renamed);
                }
                for header in &mut case.headers {
                    rename_in_ty(&mut header.ty, renamed);
                }
            }
        }
        Kind::Media(cases) => {
            for case in cases {
                rename_in_ty(&mut case.body, renamed);
            }
        }
    }
}

fn rename_in_ty(ty: &mut Ty, renamed: &BTreeMap<String, String>) {
    match ty {
        Ty::Named(name) => {
            if let Some(survivor) = renamed.get(name) {
                *name = survivor.clone();
            }
        }
        Ty::Vec(inner) | Ty::Map(inner) | Ty::Option(inner) | Ty::Boxed(inner) => {
            rename_in_ty(inner, renamed);
        }
        _ => {}
    }
}
