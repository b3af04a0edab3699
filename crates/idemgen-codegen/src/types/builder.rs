//! Builders of the structs with more required fields than `new` takes.
//!
//! `Type::builder()` returns `builder::Type`: one setter per field, each
//! taking the value by its plain type (`amount(Amount)`, not
//! `Option<Amount>`), and `build()`, which gives the struct or
//! `builder::MissingFields` naming every required field not set. A
//! typestate builder would refuse a missing field at compile time, but
//! with one type parameter per required field (Adyen's payment request
//! has 11) its types and errors read badly; a constructor past seven
//! arguments is what clippy's `too_many_arguments` warns of. The
//! builders live in a module of their own, named as their structs (as
//! typify does), so that no builder's name can collide with a schema's.

use std::fmt::Write as _;

use super::emit::doc;
use super::model::{Field, Struct, Ty};
use super::naming::unraw;
use crate::names::{comment_lines, rust_string};

/// Whether `shape` gets a builder rather than `new`: more required fields
/// than a constructor takes, and some that may be absent (with none, a
/// struct literal says the same and is checked by the compiler).
pub fn wanted(shape: &Struct, max_arguments: usize) -> bool {
    let required = shape.fields.iter().filter(|field| field.required).count();
    let optional = shape.fields.len() - required + usize::from(shape.additional.is_some());
    required > max_arguments && optional > 0
}

/// The field a struct holds its unlisted members in, and their type.
pub struct Additional<'a> {
    pub field: String,
    pub value: &'a Ty,
}

/// What the builder of one struct needs: its fields and, per field, the
/// expression of its schema default (see `emit::default_expr`).
pub struct Built<'a> {
    pub name: &'a str,
    pub shape: &'a Struct,
    /// `Some(function)` for a field read as its schema default when
    /// absent (`default_currency`).
    pub default_fns: Vec<Option<String>>,
    pub additional: Option<Additional<'a>>,
}

/// `impl Type { pub fn builder() }`, written after the struct.
pub fn entry(out: &mut String, built: &Built<'_>) {
    let name = built.name;
    let required = built.shape.fields.iter().filter(|f| f.required).count();
    let _ = writeln!(out, "impl {name} {{");
    let _ = writeln!(
        out,
        "/// A builder of a `{name}`: its {required} required fields are too many for a constructor."
    );
    let _ = writeln!(out, "pub fn builder() -> builder::{name} {{");
    let _ = writeln!(out, "builder::{name} {{");
    for (field, default) in built.shape.fields.iter().zip(&built.default_fns) {
        let start = if field.required {
            "None".to_string()
        } else if let Some(function) = default {
            format!("Self::{function}()")
        } else if field.declared() == Ty::Json {
            "serde_json::Value::Null".to_string()
        } else {
            "None".to_string()
        };
        let _ = writeln!(out, "{}: {start},", field.name);
    }
    if let Some(additional) = &built.additional {
        let _ = writeln!(out, "{}: BTreeMap::new(),", additional.field);
    }
    out.push_str("}\n}\n}\n");
}

/// The `builder` module of every built struct, `None` when there are none.
pub fn module(built: &[Built<'_>]) -> Option<String> {
    if built.is_empty() {
        return None;
    }
    let taken: Vec<&str> = built.iter().map(|one| one.name).collect();
    let mut error = "MissingFields".to_string();
    while taken.contains(&error.as_str()) {
        error.push_str("Error");
    }
    let mut out = String::new();
    out.push_str(
        "\n/// Builders of the structs with more required fields than a constructor takes,\n\
         /// named as their structs: `PaymentRequest::builder()` is a `builder::PaymentRequest`.\n",
    );
    // Setters are named after their fields (`to_account`, `sub`), whatever
    // clippy expects of methods with such names.
    out.push_str("#[allow(clippy::should_implement_trait, clippy::wrong_self_convention)]\n");
    out.push_str("pub mod builder {\n");
    missing_fields(&mut out, &error);
    for one in built {
        builder(&mut out, one, &error);
    }
    out.push_str("}\n");
    Some(out)
}

/// The error of `build()`: the required fields that were not set.
fn missing_fields(out: &mut String, error: &str) {
    let _ = writeln!(
        out,
        "/// The required fields a builder was not given: `build()` makes no value without them.\n\
         #[derive(Debug, Clone, PartialEq, Eq)]\n\
         pub struct {error} {{\n\
         /// The struct being built.\n\
         pub type_name: &'static str,\n\
         /// The setters not called, in the order the struct declares their fields.\n\
         pub fields: Vec<&'static str>,\n\
         }}\n\
         \n\
         impl std::fmt::Display for {error} {{\n\
         fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{\n\
         write!(f, \"`{{}}` lacks required fields: {{}}\", self.type_name, self.fields.join(\", \"))\n\
         }}\n\
         }}\n\
         \n\
         impl std::error::Error for {error} {{}}"
    );
}

/// The builder struct of one struct, its setters and `build()`.
fn builder(out: &mut String, built: &Built<'_>, error: &str) {
    let name = built.name;
    let fields = &built.shape.fields;
    let stored = |field: &Field, default: &Option<String>| -> Ty {
        if field.required {
            Ty::Option(Box::new(field.ty.clone()))
        } else if default.is_some() {
            field.ty.clone()
        } else {
            field.declared()
        }
    };
    let _ = writeln!(
        out,
        "\n/// Builds a [`super::{name}`] one field at a time; `build()` refuses it while a required field is unset."
    );
    out.push_str("#[derive(Debug, Clone, PartialEq)]\n");
    let _ = writeln!(out, "pub struct {name} {{");
    for (field, default) in fields.iter().zip(&built.default_fns) {
        let _ = writeln!(
            out,
            "pub(super) {}: {},",
            field.name,
            from_parent(&stored(field, default))
        );
    }
    if let Some(additional) = &built.additional {
        let _ = writeln!(
            out,
            "pub(super) {}: std::collections::BTreeMap<String, {}>,",
            additional.field,
            from_parent(additional.value)
        );
    }
    out.push_str("}\n\n");
    let _ = writeln!(out, "impl {name} {{");
    for (field, default) in fields.iter().zip(&built.default_fns) {
        let setter = setter_name(&field.name);
        let (argument, assigned) = match stored(field, default) {
            Ty::Option(inner) => (*inner, "Some(value)"),
            other => (other, "value"),
        };
        let what = if field.required {
            "required"
        } else if default.is_some() {
            "else its schema's default"
        } else {
            "else absent"
        };
        let wire = comment_lines(&field.wire).join(" ");
        doc(out, "///", &[format!("Sets `{wire}` ({what}).")]);
        let _ = writeln!(
            out,
            "pub fn {setter}(mut self, value: {}) -> Self {{\nself.{} = {assigned};\nself\n}}\n",
            from_parent(&argument),
            field.name
        );
    }
    if let Some(additional) = &built.additional {
        let field = &additional.field;
        let _ = writeln!(
            out,
            "/// Sets the members not listed among the fields.\n\
             pub fn {field}(mut self, value: std::collections::BTreeMap<String, {}>) -> Self {{\n\
             self.{field} = value;\nself\n}}\n",
            from_parent(additional.value)
        );
    }
    let required: Vec<&Field> = fields.iter().filter(|field| field.required).collect();
    let _ = writeln!(out, "/// The `{name}`, or the required fields not set.");
    let _ = writeln!(
        out,
        "pub fn build(self) -> Result<super::{name}, {error}> {{"
    );
    out.push_str("let missing: Vec<&'static str> = [\n");
    for field in &required {
        let _ = writeln!(
            out,
            "({}, self.{}.is_none()),",
            rust_string(unraw(&setter_name(&field.name))),
            field.name
        );
    }
    out.push_str(
        "]\n.into_iter()\n.filter_map(|(field, unset)| unset.then_some(field))\n.collect();\n",
    );
    let bindings: Vec<String> = required
        .iter()
        .map(|field| format!("Some({})", field.name))
        .collect();
    let sources: Vec<String> = required
        .iter()
        .map(|field| format!("self.{}", field.name))
        .collect();
    let _ = writeln!(
        out,
        "let ({}) = ({}) else {{\nreturn Err({error} {{ type_name: {}, fields: missing }});\n}};",
        bindings.join(", "),
        sources.join(", "),
        rust_string(name)
    );
    let _ = writeln!(out, "Ok(super::{name} {{");
    for field in fields {
        if field.required {
            let _ = writeln!(out, "{},", field.name);
        } else {
            let _ = writeln!(out, "{0}: self.{0},", field.name);
        }
    }
    if let Some(additional) = &built.additional {
        let _ = writeln!(out, "{0}: self.{0},", additional.field);
    }
    out.push_str("})\n}\n}\n");
}

/// The setter of a field: its name, but `build_` for a field `build`
/// (no field name ends in `_` but `self_` and the like).
fn setter_name(field: &str) -> String {
    if unraw(field) == "build" {
        "build_".into()
    } else {
        field.to_string()
    }
}

/// `ty` as written inside the `builder` module, where the builders'
/// names hide their structs': every model type through `super::`.
fn from_parent(ty: &Ty) -> String {
    match ty {
        Ty::Named(name) => format!("super::{name}"),
        Ty::Vec(inner) => format!("Vec<{}>", from_parent(inner)),
        Ty::Map(inner) => format!("std::collections::BTreeMap<String, {}>", from_parent(inner)),
        Ty::Option(inner) => format!("Option<{}>", from_parent(inner)),
        Ty::Boxed(inner) => format!("Box<{}>", from_parent(inner)),
        other => other.rust(),
    }
}
