//! Rust names for schema names, property names and enum values: valid,
//! unique within their scope, and as close to the wire name as Rust allows.

use std::collections::HashSet;

use crate::names::{MAX_IDENTIFIER, bounded, snake_case};

/// Keywords that are written `r#name` when used as field names.
const RAW_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield", "union",
];

/// Keywords that cannot be raw identifiers: they get a trailing `_`.
const NOT_RAW: &[&str] = &["self", "super", "crate", "_"];

/// `PascalCase` of `text`; words split as [`snake_case`] splits them.
/// Two digit words stay apart (`1.0` → `1_0`), so they do not merge.
pub fn pascal_case(text: &str) -> String {
    let mut out = String::new();
    let mut previous_digit = false;
    for word in snake_case(text).split('_').filter(|word| !word.is_empty()) {
        let starts_digit = word.starts_with(|c: char| c.is_ascii_digit());
        if previous_digit && starts_digit {
            out.push('_');
        }
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
        previous_digit = word.ends_with(|c: char| c.is_ascii_digit());
    }
    out
}

/// Field names of one struct: `snake_case`, keywords as raw identifiers.
#[derive(Default)]
pub struct FieldNames {
    taken: HashSet<String>,
}

impl FieldNames {
    pub fn assign(&mut self, wire: &str) -> String {
        let mut base = bounded(snake_case(wire), MAX_IDENTIFIER - 4);
        if base.is_empty() {
            base = "field".into();
        }
        if base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert_str(0, "field_");
        }
        if NOT_RAW.contains(&base.as_str()) {
            base.push('_');
        }
        let name = unique(&mut self.taken, base, "_");
        if RAW_KEYWORDS.contains(&name.as_str()) {
            format!("r#{name}")
        } else {
            name
        }
    }
}

/// Variant names of one enum: `PascalCase`, digits prefixed with `V`.
#[derive(Default)]
pub struct VariantNames {
    taken: HashSet<String>,
}

impl VariantNames {
    pub fn assign(&mut self, text: &str) -> String {
        let mut base = bounded(pascal_case(text), MAX_IDENTIFIER - 4);
        if base.is_empty() {
            base = "Empty".into();
        }
        if base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert(0, 'V');
        }
        if base == "Self" {
            base = "SelfValue".into();
        }
        unique(&mut self.taken, base, "")
    }

    /// Reserves a name chosen elsewhere (it must be free).
    pub fn reserve(&mut self, name: &str) -> String {
        unique(&mut self.taken, name.to_string(), "")
    }
}

/// `base`, or `base{sep}2`, `base{sep}3`, … whichever is free first.
fn unique(taken: &mut HashSet<String>, base: String, separator: &str) -> String {
    if taken.insert(base.clone()) {
        return base;
    }
    // Digits straight after digits would read as one number.
    let separator = if separator.is_empty() && base.ends_with(|c: char| c.is_ascii_digit()) {
        "_"
    } else if base.ends_with('_') {
        ""
    } else {
        separator
    };
    (2..)
        .map(|n| format!("{base}{separator}{n}"))
        .find(|candidate| taken.insert(candidate.clone()))
        .expect("an unbounded range always yields a free name")
}

/// The bare identifier of a field name (`r#type` → `type`), for deciding
/// whether it needs a serde rename.
pub fn unraw(name: &str) -> &str {
    name.strip_prefix("r#").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names() {
        let mut names = FieldNames::default();
        assert_eq!(names.assign("type"), "r#type");
        assert_eq!(names.assign("self"), "self_");
        assert_eq!(names.assign("Self"), "self_2");
        assert_eq!(names.assign("paidAt"), "paid_at");
        assert_eq!(names.assign("paid_at"), "paid_at_2");
        assert_eq!(names.assign("@id"), "id");
        assert_eq!(names.assign("$id"), "id_2");
        assert_eq!(names.assign("2fa"), "field_2fa");
        assert_eq!(names.assign("threeDSPaymentData"), "three_ds_payment_data");
        assert_eq!(names.assign(""), "field");
    }

    #[test]
    fn variant_names() {
        let mut names = VariantNames::default();
        assert_eq!(names.assign("in_progress"), "InProgress");
        assert_eq!(names.assign("in-progress"), "InProgress2");
        assert_eq!(names.assign("1.0"), "V1_0");
        assert_eq!(names.assign(""), "Empty");
        assert_eq!(names.assign("Self"), "SelfValue");
    }
}
