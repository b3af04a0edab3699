//! [`TypeDef`]s → the formatted source of the models module.
//!
//! The source is written as plain text, then laid out by the one
//! formatter of generated Rust ([`crate::format`]): a mistake here is a
//! parse error reported as [`TypesError`], never broken output.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::builder;
use super::model::{
    Alternative, ChosenBy, EnumValue, Field, Kind, MediaCase, ResponseCase, Struct, Tagged, Ty,
    TypeDef,
};
use super::naming::unraw;
use super::{StatusPattern, TypesError};
use crate::names::{comment_lines, rust_string};
use idemgen_spec::Workspace;
use idemgen_spec::node::Node;

/// What the module's own doc comment says.
pub struct Header {
    pub title: Option<String>,
}

impl Header {
    pub fn for_workspace(workspace: &Workspace) -> Header {
        Header {
            title: workspace
                .root()
                .get("info")
                .and_then(|info| info.get("title"))
                .and_then(Node::as_str)
                .map(str::to_string),
        }
    }
}

/// `read_from_forms`: the unions whose number and boolean variants also
/// take text ([`super::form_text`]).
pub fn module(
    defs: &BTreeMap<String, TypeDef>,
    header: &Header,
    read_from_forms: &BTreeSet<String>,
) -> Result<String, TypesError> {
    let mut out = String::new();
    let title = match &header.title {
        Some(title) => format!("the schemas of {}", comment_lines(title).join(" ")),
        None => "the API's schemas".into(),
    };
    doc(&mut out, "//!", &[format!("Types generated from {title}.")]);
    doc(
        &mut out,
        "//!",
        &[
            String::new(),
            "`idemgen gen` rewrites this file: change the spec, not this file.".into(),
            "Names follow the API's names and doc comments its Markdown, so".into(),
            "the clippy lints about those are allowed here.".into(),
        ],
    );
    out.push_str(
        "#![allow(clippy::enum_variant_names, clippy::large_enum_variant, \
         clippy::doc_lazy_continuation)]\n",
    );
    // Aliases and response enums derive nothing from serde: a spec with
    // only those (or none) must not import it unused.
    if defs.values().any(|def| {
        !matches!(
            def.kind,
            Kind::Alias(_) | Kind::Response(_) | Kind::Media(_)
        )
    }) {
        out.push_str("use serde::{Deserialize, Serialize};\n");
    }
    if defs.values().any(uses_map) {
        out.push_str("use std::collections::BTreeMap;\n");
    }
    for def in defs.values() {
        out.push('\n');
        definition(&mut out, def, defs, read_from_forms.contains(&def.name));
    }
    let variants_read = |test: &dyn Fn(&Ty) -> bool| {
        read_from_forms.iter().any(|name| {
            matches!(defs.get(name).map(|def| &def.kind),
                Some(Kind::Untagged(alternatives)) if alternatives.iter().any(|one| test(&one.ty)))
        })
    };
    let parsed = variants_read(&super::form_text::parses_text);
    let empty = variants_read(&|ty| super::form_text::takes_empty(ty, defs));
    if parsed || empty {
        out.push_str(&super::form_text::helpers(parsed, empty));
    }
    if defs.values().any(sets_headers) {
        out.push_str(HEADER_TEXT);
    }
    if let Some(builders) = builder::module(&built(defs)) {
        out.push_str(&builders);
    }
    crate::format::rust("src/models.rs", &out)
        .map_err(|error| TypesError(format!("{error}\nin the generated source:\n{out}")))
}

fn uses_map(def: &TypeDef) -> bool {
    matches!(&def.kind, Kind::Struct(shape) if shape.additional.is_some())
        || holds(def, Ty::uses_map)
}

/// Whether the models use chrono (`date-time` and `date`): the generated
/// project then depends on it.
pub fn uses_time(defs: &BTreeMap<String, TypeDef>) -> bool {
    defs.values().any(|def| holds(def, Ty::uses_time))
}

/// Whether any type a definition holds satisfies `test`.
fn holds(def: &TypeDef, test: fn(&Ty) -> bool) -> bool {
    match &def.kind {
        Kind::Struct(shape) => {
            shape.fields.iter().any(|field| test(&field.ty))
                || shape.additional.as_ref().is_some_and(test)
        }
        Kind::Untagged(alternatives) => alternatives.iter().any(|a| test(&a.ty)),
        Kind::Tagged(tagged) => tagged.variants.iter().any(|variant| match &variant.fields {
            Some(fields) => fields.iter().any(|field| test(&field.ty)),
            None => test(&variant.ty),
        }),
        Kind::Alias(ty) | Kind::Newtype(ty) => test(ty),
        Kind::Response(cases) => cases.iter().any(|case| {
            case.body.as_ref().is_some_and(test) || case.headers.iter().any(|h| test(&h.ty))
        }),
        Kind::Media(cases) => cases.iter().any(|case| test(&case.body)),
        Kind::StringEnum(_) => false,
    }
}

/// Whether a response enum has headers, and so a `headers()` method.
fn sets_headers(def: &TypeDef) -> bool {
    matches!(&def.kind, Kind::Response(cases) if cases.iter().any(|case| !case.headers.is_empty()))
}

const DERIVES: &str = "#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]\n";

/// `from_forms`: a union read from form text ([`super::form_text`]).
fn definition(out: &mut String, def: &TypeDef, defs: &BTreeMap<String, TypeDef>, from_forms: bool) {
    let docs = rustdoc_safe(&def.docs);
    doc(out, "///", &docs);
    let name = &def.name;
    match &def.kind {
        Kind::Struct(shape) => structure(out, name, shape, defs),
        Kind::StringEnum(values) => {
            out.push_str(
                "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]\n",
            );
            let rule = best_rule(
                values.iter().map(|v| (v.variant.as_str(), v.wire.as_str())),
                &VARIANT_RULES,
            );
            if let Some((rule, _)) = rule {
                let _ = writeln!(out, "#[serde(rename_all = \"{rule}\")]");
            }
            let _ = writeln!(out, "pub enum {name} {{");
            for value in values {
                let renamed = rule.map(|(_, apply)| apply(&value.variant));
                if renamed.as_deref() != Some(value.wire.as_str()) {
                    let _ = writeln!(out, "#[serde(rename = {})]", rust_string(&value.wire));
                }
                let _ = writeln!(out, "{},", value.variant);
            }
            out.push_str("}\n");
            string_enum_text(out, name, values);
        }
        Kind::Untagged(alternatives) if alternatives.iter().all(|a| a.chosen_by.is_some()) => {
            chosen_union(out, name, alternatives);
        }
        Kind::Untagged(alternatives) => {
            out.push_str(DERIVES);
            out.push_str("#[serde(untagged)]\n");
            let _ = writeln!(out, "pub enum {name} {{");
            for alternative in alternatives {
                if from_forms && super::form_text::parses_text(&alternative.ty) {
                    out.push_str("#[serde(deserialize_with = \"form_text::parsed\")]\n");
                } else if from_forms && super::form_text::takes_empty(&alternative.ty, defs) {
                    out.push_str("#[serde(deserialize_with = \"form_text::empty\")]\n");
                }
                let _ = writeln!(out, "{}({}),", alternative.variant, alternative.ty.rust());
            }
            out.push_str("}\n");
        }
        Kind::Tagged(tagged) => tagged_union(out, name, tagged),
        Kind::Alias(ty) => {
            let _ = writeln!(out, "pub type {name} = {};", ty.rust());
        }
        Kind::Newtype(ty) => {
            out.push_str(DERIVES);
            out.push_str("#[serde(transparent)]\n");
            let _ = writeln!(out, "pub struct {name}(pub {});", ty.rust());
        }
        Kind::Response(cases) => response(out, name, cases),
        Kind::Media(cases) => media(out, name, cases),
    }
}

/// `Display` writes a string enum's value as the wire has it, and
/// `FromStr` reads it back (for a query string, a log line or a CLI flag).
fn string_enum_text(out: &mut String, name: &str, values: &[EnumValue]) {
    let _ = writeln!(
        out,
        "impl std::fmt::Display for {name} {{\n\
         fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{\n\
         f.write_str(match *self {{"
    );
    for value in values {
        let _ = writeln!(
            out,
            "{name}::{} => {},",
            value.variant,
            rust_string(&value.wire)
        );
    }
    out.push_str("})\n}\n}\n");
    let _ = writeln!(
        out,
        "impl std::str::FromStr for {name} {{\n\
         type Err = String;\n\
         fn from_str(value: &str) -> Result<Self, Self::Err> {{\n\
         match value {{"
    );
    for value in values {
        let _ = writeln!(
            out,
            "{} => Ok({name}::{}),",
            rust_string(&value.wire),
            value.variant
        );
    }
    let _ = writeln!(
        out,
        "other => Err(format!(\"`{{other}}` is not a value of {name}\")),\n}}\n}}\n}}"
    );
}

/// A struct whose fields may all be absent has a `Default`.
fn all_optional(shape: &Struct) -> bool {
    shape.fields.iter().all(|field| !field.required)
}

/// The Rust expression of a field's schema `default`, for a field that
/// may be absent, when the value can be written as its type: a string,
/// number or boolean, a string enum's value, an empty array or map.
/// Other defaults stay in the doc only, and the field an `Option`.
fn default_expr(field: &Field, defs: &BTreeMap<String, TypeDef>) -> Option<String> {
    if field.required {
        return None;
    }
    rust_value(&field.ty, field.default.as_ref()?, defs, 0)
}

fn rust_value(
    ty: &Ty,
    value: &serde_json::Value,
    defs: &BTreeMap<String, TypeDef>,
    depth: usize,
) -> Option<String> {
    use serde_json::Value as Json;
    match (ty, value) {
        (Ty::String, Json::String(text)) => Some(format!("{}.to_string()", rust_string(text))),
        (Ty::Bool, Json::Bool(flag)) => Some(flag.to_string()),
        (Ty::Integer(rust), Json::Number(number)) => {
            super::model::integer_value(rust, number).map(|whole| whole.to_string())
        }
        (Ty::Number(rust), Json::Number(number)) => {
            let float = number.as_f64()?;
            Some(if *rust == "f32" {
                format!("{:?}", float as f32)
            } else {
                format!("{float:?}")
            })
        }
        (Ty::Vec(_), Json::Array(items)) if items.is_empty() => Some("Vec::new()".into()),
        (Ty::Map(_), Json::Object(members)) if members.is_empty() => Some("BTreeMap::new()".into()),
        (Ty::Option(inner), _) => {
            rust_value(inner, value, defs, depth).map(|inner| format!("Some({inner})"))
        }
        (Ty::Named(name), Json::String(wire)) if depth < 8 => match &defs.get(name)?.kind {
            Kind::StringEnum(values) => values
                .iter()
                .find(|v| v.wire == *wire)
                .map(|v| format!("{name}::{}", v.variant)),
            Kind::Alias(ty) => rust_value(ty, value, defs, depth + 1),
            _ => None,
        },
        (Ty::Named(name), _) if depth < 8 => match &defs.get(name)?.kind {
            Kind::Alias(ty) => rust_value(ty, value, defs, depth + 1),
            _ => None,
        },
        _ => None,
    }
}

/// The function that gives a field its default (`Self::default_currency`).
fn default_fn(field: &Field) -> String {
    format!("default_{}", unraw(&field.name))
}

/// The most required fields a constructor takes (clippy's
/// `too_many_arguments`): past it, a struct gets a builder.
const MAX_CONSTRUCTOR_ARGUMENTS: usize = 7;

/// The structs that get a builder, in module order.
fn built(defs: &BTreeMap<String, TypeDef>) -> Vec<builder::Built<'_>> {
    defs.values()
        .filter_map(|def| match &def.kind {
            Kind::Struct(shape) if builder::wanted(shape, MAX_CONSTRUCTOR_ARGUMENTS) => {
                Some(built_of(&def.name, shape, defs))
            }
            _ => None,
        })
        .collect()
}

fn built_of<'a>(
    name: &'a str,
    shape: &'a Struct,
    defs: &BTreeMap<String, TypeDef>,
) -> builder::Built<'a> {
    builder::Built {
        name,
        shape,
        default_fns: shape
            .fields
            .iter()
            .map(|field| default_expr(field, defs).map(|_| default_fn(field)))
            .collect(),
        additional: shape.additional.as_ref().map(|value| builder::Additional {
            field: additional_field(shape),
            value,
        }),
    }
}

fn structure(out: &mut String, name: &str, shape: &Struct, defs: &BTreeMap<String, TypeDef>) {
    let defaults: Vec<Option<String>> = shape
        .fields
        .iter()
        .map(|field| default_expr(field, defs))
        .collect();
    let has_defaults = defaults.iter().any(Option::is_some);
    if all_optional(shape) && !has_defaults {
        out.push_str("#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]\n");
    } else {
        out.push_str(DERIVES);
    }
    let rule = best_rule(
        shape
            .fields
            .iter()
            .map(|field| (unraw(&field.name), field.wire.as_str())),
        &FIELD_RULES,
    );
    let mut attributes = Vec::new();
    if let Some((rule, _)) = rule {
        attributes.push(format!("rename_all = \"{rule}\""));
    }
    if shape.deny_unknown && shape.additional.is_none() {
        attributes.push("deny_unknown_fields".into());
    }
    if !attributes.is_empty() {
        let _ = writeln!(out, "#[serde({})]", attributes.join(", "));
    }
    let _ = writeln!(out, "pub struct {name} {{");
    for (field, default) in shape.fields.iter().zip(&defaults) {
        let default = default
            .as_ref()
            .map(|_| format!("{name}::{}", default_fn(field)));
        struct_field(
            out,
            field,
            rule.map(|(_, apply)| apply),
            "pub ",
            default.as_deref(),
        );
    }
    if let Some(value) = &shape.additional {
        let field = additional_field(shape);
        doc(out, "///", &["Members not listed above.".into()]);
        out.push_str("#[serde(flatten)]\n");
        let _ = writeln!(out, "pub {field}: BTreeMap<String, {}>,", value.rust());
    }
    out.push_str("}\n");
    if has_defaults {
        default_functions(out, name, shape, &defaults);
    }
    if builder::wanted(shape, MAX_CONSTRUCTOR_ARGUMENTS) {
        builder::entry(out, &built_of(name, shape, defs));
    } else {
        constructor(out, name, shape, &defaults);
    }
}

/// The functions serde calls for an absent field with a schema default,
/// and the `Default` that uses them when every field may be absent.
fn default_functions(out: &mut String, name: &str, shape: &Struct, defaults: &[Option<String>]) {
    let _ = writeln!(out, "impl {name} {{");
    for (field, default) in shape.fields.iter().zip(defaults) {
        if let Some(expr) = default {
            doc(
                out,
                "///",
                &[format!(
                    "`{}` when absent: the schema's default.",
                    field.wire
                )],
            );
            let _ = writeln!(
                out,
                "fn {}() -> {} {{ {expr} }}",
                default_fn(field),
                field.ty.rust()
            );
        }
    }
    out.push_str("}\n");
    if !all_optional(shape) {
        return;
    }
    let _ = writeln!(out, "impl Default for {name} {{");
    doc(
        out,
        "///",
        &["Every field absent: the schema's default where it has one.".into()],
    );
    let _ = writeln!(out, "fn default() -> Self {{\n{name} {{");
    absent_fields(out, shape, defaults);
    out.push_str("}\n}\n}\n");
}

/// The initialisers of a struct's fields: the required ones by their
/// argument's name, the others absent (or their schema's default).
fn absent_fields(out: &mut String, shape: &Struct, defaults: &[Option<String>]) {
    for (field, default) in shape.fields.iter().zip(defaults) {
        if field.required {
            let _ = writeln!(out, "{},", field.name);
        } else if default.is_some() {
            let _ = writeln!(out, "{}: Self::{}(),", field.name, default_fn(field));
        } else if field.declared() == Ty::Json {
            let _ = writeln!(out, "{}: serde_json::Value::Null,", field.name);
        } else {
            let _ = writeln!(out, "{}: None,", field.name);
        }
    }
    if shape.additional.is_some() {
        let _ = writeln!(out, "{}: BTreeMap::new(),", additional_field(shape));
    }
}

/// The field that holds the members a struct does not list.
fn additional_field(shape: &Struct) -> String {
    let taken: Vec<&str> = shape.fields.iter().map(|f| unraw(&f.name)).collect();
    let mut field = "additional_properties".to_string();
    while taken.contains(&field.as_str()) {
        field.push('_');
    }
    field
}

/// `new(required fields…)` for a struct with both required fields and
/// fields that may be absent, which start absent (and no members beyond
/// those listed).
fn constructor(out: &mut String, name: &str, shape: &Struct, defaults: &[Option<String>]) {
    let required: Vec<&Field> = shape.fields.iter().filter(|field| field.required).collect();
    let optional = shape.fields.len() - required.len() + usize::from(shape.additional.is_some());
    if required.is_empty() || optional == 0 || required.len() > MAX_CONSTRUCTOR_ARGUMENTS {
        return;
    }
    let _ = writeln!(out, "impl {name} {{");
    doc(
        out,
        "///",
        &[if defaults.iter().any(Option::is_some) {
            format!(
                "A `{name}` of its required fields; the others are absent or their schema's default."
            )
        } else {
            format!("A `{name}` of its required fields; the others are absent.")
        }],
    );
    let arguments: Vec<String> = required
        .iter()
        .map(|field| format!("{}: {}", field.name, field.declared().rust()))
        .collect();
    let _ = writeln!(out, "pub fn new({}) -> Self {{", arguments.join(", "));
    let _ = writeln!(out, "{name} {{");
    absent_fields(out, shape, defaults);
    out.push_str("}\n}\n}\n");
}

/// A union chosen by a property's value ([`super::union`]): written as
/// untagged (each variant writes its own property), read by a
/// `Deserialize` of its own that tries only the variant the value names.
/// An object without the property is kept whole in a last variant of its
/// own: the spec lets more than one variant be it.
fn chosen_union(out: &mut String, name: &str, alternatives: &[Alternative]) {
    fn chosen(alternative: &Alternative) -> &ChosenBy {
        alternative
            .chosen_by
            .as_ref()
            .expect("every variant of a chosen union is chosen")
    }
    let Some(first) = alternatives.first().map(chosen) else {
        return;
    };
    let property = &first.property;
    let without = &first.without;
    // The property as code (a string literal) and as text in a comment.
    let quoted = rust_string(property);
    let shown = property.escape_debug().to_string();
    out.push_str("#[derive(Debug, Clone, PartialEq, Serialize)]\n#[serde(untagged)]\n");
    let _ = writeln!(out, "pub enum {name} {{");
    for alternative in alternatives {
        let values: Vec<String> = chosen(alternative)
            .values
            .iter()
            .map(|value| format!("`{}`", value.escape_debug()))
            .collect();
        let docs = vec![format!(
            "`{shown}` {} {}.",
            if values.len() == 1 { "is" } else { "is one of" },
            values.join(", ")
        )];
        doc(out, "///", &docs);
        let _ = writeln!(out, "{}({}),", alternative.variant, alternative.ty.rust());
    }
    doc(
        out,
        "///",
        &[format!(
            "An object without `{shown}`, kept as it came: the spec lets more than one \
                 variant be it. A variant built with `{shown}` absent is written without it, \
                 and so reads back as this."
        )],
    );
    let _ = writeln!(out, "{without}(serde_json::Value),");
    out.push_str("}\n\n");
    doc(
        out,
        "///",
        &[format!(
            "Reads the variant that `{shown}` names, and no other: an object whose `{shown}` \
             no variant allows is refused, not read as the nearest one."
        )],
    );
    let _ = writeln!(out, "impl<'de> Deserialize<'de> for {name} {{");
    out.push_str(
        "fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {\n\
         use serde::de::Error;\n\
         let value = serde_json::Value::deserialize(deserializer)?;\n",
    );
    let _ = writeln!(
        out,
        "let Some(object) = value.as_object() else {{\n\
         return Err(D::Error::custom(\"expected an object, as every `{name}` is\"));\n\
         }};"
    );
    let _ = writeln!(
        out,
        "let chosen_by = match object.get({quoted}) {{\n\
         Some(serde_json::Value::String(chosen_by)) => chosen_by.clone(),\n\
         Some(_) => return Err(D::Error::custom(format_args!(\"`{{}}` must be a string\", {quoted}))),\n\
         None => return Ok(Self::{without}(value)),\n\
         }};"
    );
    out.push_str("let chosen = match chosen_by.as_str() {\n");
    for alternative in alternatives {
        let pattern: Vec<String> = chosen(alternative)
            .values
            .iter()
            .map(|value| rust_string(value))
            .collect();
        let _ = writeln!(
            out,
            "{} => serde_json::from_value(value).map(Self::{}),",
            pattern.join(" | "),
            alternative.variant
        );
    }
    let _ = writeln!(
        out,
        "other => {{\n\
         return Err(D::Error::custom(format_args!(\n\
         \"`{{}}` is `{{other}}`, which no variant of `{name}` allows\",\n\
         {quoted}\n\
         )));\n\
         }}"
    );
    out.push_str("};\nchosen.map_err(D::Error::custom)\n}\n}\n");
}

/// `#[serde(tag = "…")]`: the tag's value chooses the variant.
fn tagged_union(out: &mut String, name: &str, tagged: &Tagged) {
    out.push_str(DERIVES);
    let _ = writeln!(out, "#[serde(tag = {})]", rust_string(&tagged.tag));
    let _ = writeln!(out, "pub enum {name} {{");
    for variant in &tagged.variants {
        let mut names = vec![];
        if variant.wire != variant.variant {
            names.push(format!("rename = {}", rust_string(&variant.wire)));
        }
        names.extend(
            variant
                .aliases
                .iter()
                .map(|alias| format!("alias = {}", rust_string(alias))),
        );
        match &variant.fields {
            None => {
                doc(
                    out,
                    "///",
                    &[format!(
                        "`{}: {}`: a `{}`.",
                        tagged.tag,
                        variant.wire,
                        variant.ty.rust()
                    )],
                );
                if !names.is_empty() {
                    let _ = writeln!(out, "#[serde({})]", names.join(", "));
                }
                let _ = writeln!(out, "{}({}),", variant.variant, variant.ty.rust());
            }
            Some(fields) => {
                doc(
                    out,
                    "///",
                    &[format!(
                        "`{}: {}`: the members of a `{}` but `{}`, which serde reads as the tag.",
                        tagged.tag,
                        variant.wire,
                        variant.ty.rust(),
                        tagged.tag
                    )],
                );
                if !names.is_empty() {
                    let _ = writeln!(out, "#[serde({})]", names.join(", "));
                }
                let _ = writeln!(out, "{} {{", variant.variant);
                for field in fields {
                    struct_field(out, field, None, "", None);
                }
                out.push_str("},\n");
            }
        }
    }
    out.push_str("}\n");
}

/// One field; `visibility` is `pub ` in a struct, empty in a variant.
fn struct_field(
    out: &mut String,
    field: &Field,
    rule: Option<fn(&str) -> String>,
    visibility: &str,
    default: Option<&str>,
) {
    doc(out, "///", &rustdoc_safe(&field.docs));
    let mut attributes = Vec::new();
    let renamed = rule.map(|apply| apply(unraw(&field.name)));
    let plain = unraw(&field.name);
    let expected = renamed.as_deref().unwrap_or(plain);
    if expected != field.wire {
        attributes.push(format!("rename = {}", rust_string(&field.wire)));
    }
    let declared = match default {
        Some(_) => field.ty.clone(),
        None => field.declared(),
    };
    if field.required && matches!(declared, Ty::Option(_)) {
        // Required but nullable: `null` is a value, absence an error (serde
        // would read a missing `Option` as `None`).
        attributes.push("deserialize_with = \"Option::deserialize\"".into());
    }
    if let Some(function) = default {
        attributes.push(format!("default = {}", rust_string(function)));
    } else if !field.required {
        match declared {
            Ty::Json => attributes
                .push("default, skip_serializing_if = \"serde_json::Value::is_null\"".into()),
            _ => attributes.push("default, skip_serializing_if = \"Option::is_none\"".into()),
        }
    }
    if !attributes.is_empty() {
        let _ = writeln!(out, "#[serde({})]", attributes.join(", "));
    }
    let _ = writeln!(out, "{visibility}{}: {},", field.name, declared.rust());
}

fn response(out: &mut String, name: &str, cases: &[ResponseCase]) {
    out.push_str("#[derive(Debug, Clone, PartialEq)]\n");
    let _ = writeln!(out, "pub enum {name} {{");
    for case in cases {
        doc(out, "///", &rustdoc_safe(&case.docs));
        let variant = &case.variant;
        if !case.has_fields() {
            let _ = match &case.body {
                None => writeln!(out, "{variant},"),
                Some(body) => writeln!(out, "{variant}({}),", body.rust()),
            };
            continue;
        }
        let _ = writeln!(out, "{variant} {{");
        if case.status.carries_status() {
            out.push_str("status: u16,\n");
        }
        if let Some(body) = &case.body {
            let _ = writeln!(out, "body: {},", body.rust());
        }
        for header in &case.headers {
            doc(out, "///", &rustdoc_safe(&header.docs));
            let _ = writeln!(out, "{}: {},", header.name, header.declared().rust());
        }
        out.push_str("},\n");
    }
    out.push_str("}\n\n");

    let scrutinee = if cases.is_empty() { "*self" } else { "self" };
    let _ = writeln!(out, "impl {name} {{");
    doc(
        out,
        "///",
        &["The status code this response is sent with.".into()],
    );
    let _ = writeln!(out, "pub fn status(&self) -> u16 {{ match {scrutinee} {{");
    for case in cases {
        let _ = match case.status {
            StatusPattern::Exact(code) => {
                writeln!(out, "{} => {code},", pattern(case, false, false))
            }
            _ => writeln!(out, "{} => *status,", pattern(case, true, false)),
        };
    }
    out.push_str("} }\n");

    doc(
        out,
        "///",
        &["The media type of the body; `None` when the response has no content.".into()],
    );
    let _ = writeln!(
        out,
        "pub fn content_type(&self) -> Option<&'static str> {{ match {scrutinee} {{"
    );
    for case in cases {
        let _ = match &case.media_type {
            _ if case.chooses_media => writeln!(
                out,
                "{} => Some(body.content_type()),",
                pattern(case, false, true)
            ),
            Some(media_type) => writeln!(
                out,
                "{} => Some({}),",
                pattern(case, false, false),
                rust_string(media_type)
            ),
            None => writeln!(out, "{} => None,", pattern(case, false, false)),
        };
    }
    out.push_str("} }\n");

    if cases.iter().any(|case| !case.headers.is_empty()) {
        response_headers(out, cases);
    }

    doc(
        out,
        "///",
        &[
            "The body as sent: JSON bodies are serialised once, here, so the".into(),
            "bytes sent and the bytes stored for a replay are the same.".into(),
        ],
    );
    out.push_str("pub fn into_body(self) -> Result<Vec<u8>, serde_json::Error> { match self {\n");
    for case in cases {
        let arm = match &case.body {
            None => format!("{} => Ok(Vec::new()),", pattern(case, false, false)),
            Some(_) if case.chooses_media => {
                format!("{} => body.into_body(),", pattern(case, false, true))
            }
            Some(Ty::Bytes) => format!("{} => Ok(body),", pattern(case, false, true)),
            Some(_) => format!(
                "{} => serde_json::to_vec(&body),",
                pattern(case, false, true)
            ),
        };
        let _ = writeln!(out, "{arm}");
    }
    out.push_str("} }\n}\n");
}

/// The enum of a response's bodies, one variant per media type, with the
/// `Content-Type` each is sent as, its bytes, and (for a client) the body
/// read back by the `Content-Type` it came with.
fn media(out: &mut String, name: &str, cases: &[MediaCase]) {
    out.push_str("#[derive(Debug, Clone, PartialEq)]\n");
    let _ = writeln!(out, "pub enum {name} {{");
    for case in cases {
        doc(out, "///", &rustdoc_safe(&case.docs));
        let _ = writeln!(out, "{}({}),", case.variant, case.body.rust());
    }
    out.push_str("}\n\n");
    let _ = writeln!(out, "impl {name} {{");
    doc(
        out,
        "///",
        &["The media type this body is sent as: its `Content-Type`.".into()],
    );
    out.push_str("pub fn content_type(&self) -> &'static str { match self {\n");
    for case in cases {
        let _ = writeln!(
            out,
            "Self::{}(_) => {},",
            case.variant,
            rust_string(&case.media_type)
        );
    }
    out.push_str("} }\n");
    doc(
        out,
        "///",
        &[
            "The body as sent: JSON bodies are serialised once, here, so the".into(),
            "bytes sent and the bytes stored for a replay are the same.".into(),
        ],
    );
    out.push_str("pub fn into_body(self) -> Result<Vec<u8>, serde_json::Error> { match self {\n");
    for case in cases {
        let _ = match case.body {
            Ty::Bytes => writeln!(out, "Self::{}(body) => Ok(body),", case.variant),
            _ => writeln!(
                out,
                "Self::{}(body) => serde_json::to_vec(&body),",
                case.variant
            ),
        };
    }
    out.push_str("} }\n");
    doc(
        out,
        "///",
        &[
            "The body an answer sent with `content_type` carries, read as the".into(),
            "media type it names (parameters and case aside); `Err` for a media".into(),
            "type the response does not declare, or JSON that does not fit.".into(),
        ],
    );
    out.push_str(
        "pub fn from_wire(content_type: Option<&str>, body: &[u8]) -> Result<Self, String> {\n",
    );
    out.push_str(
        "let essence = content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();\n",
    );
    out.push_str("match essence.as_str() {\n");
    for case in cases {
        let essence = rust_string(&super::operation::media_essence(&case.media_type));
        let _ = match case.body {
            Ty::Bytes => writeln!(
                out,
                "{essence} => Ok(Self::{}(body.to_vec())),",
                case.variant
            ),
            _ => {
                // A format string naming the media type (braces, which no
                // media type has, doubled all the same).
                let message = rust_string(&format!(
                    "the {} body does not fit the spec: {{error}}",
                    case.media_type.replace('{', "{{").replace('}', "}}")
                ));
                writeln!(
                    out,
                    "{essence} => serde_json::from_slice(body).map(Self::{}).map_err(|error| format!({message})),",
                    case.variant
                )
            }
        };
    }
    out.push_str(
        "other => Err(format!(\"`Content-Type: {other}` is none of the media types the response declares\")),\n",
    );
    out.push_str("} } }\n");
}

/// `headers()`: each header the response sets, by its name in the spec.
fn response_headers(out: &mut String, cases: &[ResponseCase]) {
    doc(
        out,
        "///",
        &[
            "The headers this response sets, each as sent: sent, stored with an".into(),
            "idempotent answer and replayed with it (`Set-Cookie` and `Date` are".into(),
            "sent but never replayed).".into(),
        ],
    );
    out.push_str(
        "pub fn headers(&self) -> Result<Vec<(&'static str, String)>, serde_json::Error> {\n",
    );
    out.push_str("let mut headers = Vec::new();\n");
    let with_headers: Vec<&ResponseCase> = cases
        .iter()
        .filter(|case| !case.headers.is_empty())
        .collect();
    // A variant whose one header is an `Option` matches only when it is
    // set (`Self::Ok { key: Some(value), .. }`): clippy's
    // `collapsible_match` asks for that rather than an `if let` inside.
    let refutable = |case: &ResponseCase| matches!(case.headers.as_slice(), [header] if matches!(header.declared(), Ty::Option(_)));
    let others =
        with_headers.len() < cases.len() || with_headers.iter().any(|case| refutable(case));
    // One variant among others reads as an `if let` (clippy's
    // `single_match` asks for it in the generated project).
    let single = with_headers.len() == 1 && others;
    if !single {
        out.push_str("match self {\n");
    }
    for case in with_headers {
        if refutable(case) {
            let header = &case.headers[0];
            let pattern = format!(
                "Self::{} {{ {}: Some(value), .. }}",
                case.variant, header.name
            );
            let push = format!(
                "headers.push(({}, header_text(value)?));",
                rust_string(&header.wire)
            );
            let _ = if single {
                writeln!(out, "if let {pattern} = self {{ {push} }}")
            } else {
                writeln!(out, "{pattern} => {{ {push} }}")
            };
            continue;
        }
        let bound: Vec<&str> = case.headers.iter().map(|h| h.name.as_str()).collect();
        let pattern = format!("Self::{} {{ {}, .. }}", case.variant, bound.join(", "));
        let _ = if single {
            writeln!(out, "if let {pattern} = self {{")
        } else {
            writeln!(out, "{pattern} => {{")
        };
        for header in &case.headers {
            let wire = rust_string(&header.wire);
            let field = &header.name;
            let _ = match header.declared() {
                Ty::Option(_) => writeln!(
                    out,
                    "if let Some(value) = {field} {{ headers.push(({wire}, header_text(value)?)); }}"
                ),
                Ty::Json if !header.required => writeln!(
                    out,
                    "if !{field}.is_null() {{ headers.push(({wire}, header_text({field})?)); }}"
                ),
                _ => writeln!(out, "headers.push(({wire}, header_text({field})?));"),
            };
        }
        out.push_str("}\n");
    }
    if !single {
        if others {
            out.push_str("_ => {}\n");
        }
        out.push_str("}\n");
    }
    out.push_str("Ok(headers)\n}\n");
}

/// The helper `headers()` methods use, emitted once per module.
const HEADER_TEXT: &str = "
/// A header's value as sent: a string as is, a number or boolean as JSON
/// writes it, an array's items joined by commas (OpenAPI's `simple`
/// style), anything else as JSON.
fn header_text(value: &impl serde::Serialize) -> Result<String, serde_json::Error> {
    fn text(value: serde_json::Value) -> String {
        match value {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        }
    }
    let text = match serde_json::to_value(value)? {
        serde_json::Value::Array(items) => items.into_iter().map(text).collect::<Vec<_>>().join(\",\"),
        other => text(other),
    };
    Ok(text)
}
";

/// The match pattern of a response variant, binding `status` and `body`
/// when asked.
fn pattern(case: &ResponseCase, status: bool, body: bool) -> String {
    let variant = &case.variant;
    if !case.has_fields() {
        return match (&case.body, body) {
            (None, _) => format!("Self::{variant}"),
            (Some(_), true) => format!("Self::{variant}(body)"),
            (Some(_), false) => format!("Self::{variant}(_)"),
        };
    }
    let mut bound = Vec::new();
    if status {
        bound.push("status");
    }
    if body && case.body.is_some() {
        bound.push("body");
    }
    let all = usize::from(case.status.carries_status())
        + usize::from(case.body.is_some())
        + case.headers.len();
    if bound.len() < all {
        bound.push("..");
    }
    format!("Self::{variant} {{ {} }}", bound.join(", "))
}

/// `///` or `//!` lines as `doc` attributes (printed back as comments).
pub(super) fn doc(out: &mut String, style: &str, lines: &[String]) {
    let inner = if style == "//!" { "!" } else { "" };
    for line in lines {
        let text = if line.is_empty() {
            String::new()
        } else {
            format!(" {line}")
        };
        let _ = writeln!(out, "#{inner}[doc = {}]", rust_string(&text));
    }
}

/// Description text made safe for rustdoc: code blocks in the spec are
/// examples in other languages (JSON, shell), and rustdoc would compile a
/// fenced block without a language, or an indented block, as a Rust
/// doctest. Those are marked `text`.
fn rustdoc_safe(lines: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    let mut in_fence = false;
    let mut in_indented = false;
    let mut previous_blank = true;
    for line in lines {
        let trimmed = line.trim_start();
        let blank = trimmed.is_empty();
        let indent: usize = line[..line.len() - trimmed.len()]
            .chars()
            .map(|c| if c == '\t' { 4 } else { 1 })
            .sum();
        if in_indented && !blank && indent < 4 {
            // Close the block before the blank lines that ended it.
            let trailing = out
                .iter()
                .rev()
                .take_while(|l: &&String| l.is_empty())
                .count();
            out.insert(out.len() - trailing, "```".to_string());
            in_indented = false;
        }
        if in_indented {
            out.push(
                line.chars()
                    .skip(4.min(line.len() - trimmed.len()))
                    .collect(),
            );
            previous_blank = blank;
            continue;
        }
        let fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if fence {
            let opening = !in_fence;
            in_fence = !in_fence;
            let info = trimmed[3..].trim();
            let is_rust = info.is_empty() || info.starts_with("rust");
            if opening && is_rust {
                let prefix = &line[..line.len() - trimmed.len()];
                out.push(format!("{prefix}{}text", &trimmed[..3]));
            } else {
                out.push(line.clone());
            }
        } else if !in_fence && !blank && indent >= 4 && previous_blank {
            in_indented = true;
            out.push("```text".to_string());
            out.push(line.chars().skip(line.len() - trimmed.len()).collect());
        } else {
            out.push(line.clone());
        }
        previous_blank = blank;
    }
    if in_indented {
        let trailing = out.iter().rev().take_while(|l| l.is_empty()).count();
        out.insert(out.len() - trailing, "```".to_string());
    }
    out
}

type Rule = (&'static str, fn(&str) -> String);

/// serde's `rename_all` rules as applied to `PascalCase` variant names.
const VARIANT_RULES: [Rule; 6] = [
    ("snake_case", |v| words_of_pascal(v).join("_")),
    ("camelCase", |v| {
        let mut chars = v.chars();
        chars
            .next()
            .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
            .unwrap_or_default()
    }),
    ("kebab-case", |v| words_of_pascal(v).join("-")),
    ("SCREAMING_SNAKE_CASE", |v| {
        words_of_pascal(v).join("_").to_ascii_uppercase()
    }),
    ("lowercase", |v| v.to_ascii_lowercase()),
    ("UPPERCASE", |v| v.to_ascii_uppercase()),
];

/// serde's `rename_all` rules as applied to `snake_case` field names.
const FIELD_RULES: [Rule; 4] = [
    ("camelCase", |f| {
        let pascal = pascal_of_snake(f);
        let mut chars = pascal.chars();
        chars
            .next()
            .map(|first| first.to_ascii_lowercase().to_string() + chars.as_str())
            .unwrap_or_default()
    }),
    ("PascalCase", pascal_of_snake),
    ("kebab-case", |f| f.replace('_', "-")),
    ("SCREAMING_SNAKE_CASE", |f| f.to_ascii_uppercase()),
];

/// serde's snake_case of a variant: `_` before every upper-case letter
/// but the first, all lower case.
fn words_of_pascal(variant: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for (at, c) in variant.char_indices() {
        if c.is_uppercase() || at == 0 {
            words.push(String::new());
        }
        if let Some(word) = words.last_mut() {
            word.push(c.to_ascii_lowercase());
        }
    }
    words
}

fn pascal_of_snake(field: &str) -> String {
    let mut out = String::new();
    let mut capitalize = true;
    for c in field.chars() {
        if c == '_' {
            capitalize = true;
        } else if capitalize {
            out.push(c.to_ascii_uppercase());
            capitalize = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The `rename_all` rule that names the most members right, when it is
/// right for more than half of them and more than the names as they are.
fn best_rule<'a>(
    members: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    rules: &[Rule],
) -> Option<Rule> {
    let total = members.clone().count();
    let as_is = members.clone().filter(|(name, wire)| name == wire).count();
    rules
        .iter()
        .map(|rule| {
            let right = members
                .clone()
                .filter(|(name, wire)| (rule.1)(name) == *wire)
                .count();
            (right, *rule)
        })
        .filter(|(right, _)| *right > as_is && *right * 2 > total)
        .rev()
        .max_by_key(|(right, _)| *right)
        .map(|(_, rule)| rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_rules() {
        assert_eq!((VARIANT_RULES[0].1)("InProgress"), "in_progress");
        assert_eq!((VARIANT_RULES[1].1)("InProgress"), "inProgress");
        assert_eq!((VARIANT_RULES[3].1)("InProgress"), "IN_PROGRESS");
        assert_eq!((FIELD_RULES[0].1)("paid_at"), "paidAt");
        assert_eq!((FIELD_RULES[1].1)("paid_at"), "PaidAt");
    }

    #[test]
    fn fences_become_text() {
        let lines: Vec<String> = ["a", "```", "x", "```", "```json", "{}", "```"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            rustdoc_safe(&lines),
            ["a", "```text", "x", "```", "```json", "{}", "```"]
        );
    }

    #[test]
    fn indented_blocks_become_text() {
        let lines: Vec<String> = [
            "Example:",
            "",
            "    {\"a\": 1}",
            "      \"b\"",
            "",
            "After.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            rustdoc_safe(&lines),
            [
                "Example:",
                "",
                "```text",
                "{\"a\": 1}",
                "  \"b\"",
                "```",
                "",
                "After."
            ]
        );
        let list: Vec<String> = ["- item", "    continued"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(rustdoc_safe(&list), list, "a lazy continuation is no block");
    }
}
