//! The validation keywords of an operation's body (JSON, form or
//! multipart) and parameters, as the `idemgen_runtime::Constraint` tables
//! the generated handler checks before any key is claimed.
//!
//! serde's types already hold `type`, `required`, `additionalProperties:
//! false` and string enums; this collects the rest (`minimum`, `maximum`
//! and their exclusive forms, `multipleOf`, `pattern`, `minLength`,
//! `maxLength`, `minItems`, `maxItems`, `uniqueItems`, `minProperties`,
//! `maxProperties`, enums of other values), following `$ref`s and `allOf`
//! into properties and array items. A keyword inside one branch of a
//! `oneOf`/`anyOf` is not collected (which branch applies is the type's
//! business), nor one below a schema that contains itself, nor a
//! `pattern` Rust's regex cannot read: each such pattern is a warning.

use std::collections::HashSet;

use idemgen_spec::Workspace;
use idemgen_spec::node::{Node, Value};
use idemgen_spec::operations::Operation;
use serde::Serialize;

use crate::names::rust_string;

/// Deepest nesting of properties and items followed.
const MAX_DEPTH: usize = 12;

/// One `Constraint { at, check }` as the template writes it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConstraintContext {
    /// The pointer, as a Rust string literal.
    pub at: String,
    /// The `Check::…` expression.
    pub check: String,
}

/// The constraints of an operation's body (from the body) and of its
/// parameters (from the object of parameter names), and warnings.
#[derive(Debug, Default)]
pub struct OperationConstraints {
    pub body: Vec<ConstraintContext>,
    pub params: Vec<ConstraintContext>,
    pub warnings: Vec<String>,
}

/// `key`: where the contract's idempotency key is (`("header",
/// "Idempotency-Key")`), which the engine checks itself.
pub fn collect(
    workspace: &Workspace,
    operation: &Operation<'_>,
    key: Option<(&str, &str)>,
) -> OperationConstraints {
    let mut collector = Collector {
        workspace,
        found: Vec::new(),
        warnings: Vec::new(),
        path: HashSet::new(),
    };
    if let Some(schema) = body_schema(workspace, operation) {
        collector.schema(schema, "", 0);
    }
    let body = std::mem::take(&mut collector.found);
    for (name, location, schema) in parameters(workspace, operation) {
        let is_key = key.is_some_and(|(key_in, key_name)| {
            key_in == location && key_name.eq_ignore_ascii_case(name)
        });
        if !is_key {
            collector.schema(schema, &format!("/{}", escape(name)), 0);
        }
    }
    OperationConstraints {
        body,
        params: collector.found,
        warnings: collector.warnings,
    }
}

/// The schema of the operation's request body, if it has one: of the
/// media type its type is read from (the first JSON one, else the first
/// declared, as `types` picks). The pointers are the spec's property
/// names, which are the JSON members, the form's field names and the
/// multipart part names alike.
fn body_schema<'w>(workspace: &'w Workspace, operation: &Operation<'w>) -> Option<&'w Node> {
    let body = workspace.deref(operation.node.get("requestBody")?)?;
    let content = body.get("content")?.as_map()?;
    let chosen = content
        .iter()
        .find(|entry| crate::types::is_json(&entry.key))
        .or_else(|| content.first())?;
    chosen.value.get("schema")
}

/// Each path, query and header parameter's name, place and schema (the
/// operation's replacing the path item's of the same name and place).
fn parameters<'w>(
    workspace: &'w Workspace,
    operation: &Operation<'w>,
) -> Vec<(&'w str, &'w str, &'w Node)> {
    let mut found: Vec<(&'w str, &'w str, &'w Node)> = Vec::new();
    for holder in [operation.path_item, operation.node] {
        for parameter in holder
            .get("parameters")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            let Some(parameter) = workspace.deref(parameter) else {
                continue;
            };
            let (Some(name), Some(location), Some(schema)) = (
                parameter.get("name").and_then(Node::as_str),
                parameter.get("in").and_then(Node::as_str),
                parameter.get("schema"),
            ) else {
                continue;
            };
            if !matches!(location, "path" | "query" | "header") {
                continue;
            }
            let same = |(other, at, _): &(&str, &str, &Node)| {
                *at == location
                    && (other == &name
                        || (location == "header" && other.eq_ignore_ascii_case(name)))
            };
            match found.iter_mut().find(|seen| same(seen)) {
                Some(seen) => *seen = (name, location, schema),
                None => found.push((name, location, schema)),
            }
        }
    }
    found
}

struct Collector<'w> {
    workspace: &'w Workspace,
    found: Vec<ConstraintContext>,
    warnings: Vec<String>,
    /// The schemas on the way to the current one (a cycle stops there).
    path: HashSet<(u32, u32, u32)>,
}

impl<'w> Collector<'w> {
    fn schema(&mut self, node: &'w Node, at: &str, depth: usize) {
        let Some(schema) = self.workspace.deref(node) else {
            return;
        };
        let id = (schema.span.file.0, schema.span.start, schema.span.end);
        if depth > MAX_DEPTH || schema.as_map().is_none() || !self.path.insert(id) {
            return;
        }
        self.keywords(schema, at);
        for part in schema
            .get("allOf")
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            self.schema(part, at, depth + 1);
        }
        for entry in schema
            .get("properties")
            .and_then(Node::as_map)
            .unwrap_or_default()
        {
            self.schema(
                &entry.value,
                &format!("{at}/{}", escape(&entry.key)),
                depth + 1,
            );
        }
        if let Some(items) = schema.get("items").filter(|items| items.as_map().is_some()) {
            self.schema(items, &format!("{at}/*"), depth + 1);
        }
        self.path.remove(&id);
    }

    fn keywords(&mut self, schema: &'w Node, at: &str) {
        let number = |keyword: &str| schema.get(keyword).and_then(as_number);
        let count = |keyword: &str| {
            schema
                .get(keyword)
                .and_then(as_number)
                .filter(|n| *n >= 0.0 && n.fract() == 0.0)
                .map(|n| n as u64)
        };
        let flag = |keyword: &str| schema.get(keyword).and_then(Node::as_bool) == Some(true);
        let mut checks: Vec<String> = Vec::new();
        // 3.0 writes `exclusiveMinimum: true` beside `minimum`; 3.1 a number.
        match (number("minimum"), flag("exclusiveMinimum")) {
            (Some(limit), true) => checks.push(format!("Check::ExclusiveMinimum({limit:?})")),
            (Some(limit), false) => checks.push(format!("Check::Minimum({limit:?})")),
            _ => {}
        }
        match (number("maximum"), flag("exclusiveMaximum")) {
            (Some(limit), true) => checks.push(format!("Check::ExclusiveMaximum({limit:?})")),
            (Some(limit), false) => checks.push(format!("Check::Maximum({limit:?})")),
            _ => {}
        }
        if let Some(limit) = number("exclusiveMinimum") {
            checks.push(format!("Check::ExclusiveMinimum({limit:?})"));
        }
        if let Some(limit) = number("exclusiveMaximum") {
            checks.push(format!("Check::ExclusiveMaximum({limit:?})"));
        }
        if let Some(step) = number("multipleOf").filter(|step| *step > 0.0) {
            checks.push(format!("Check::MultipleOf({step:?})"));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Node::as_str) {
            match regex::Regex::new(pattern) {
                Ok(_) => checks.push(format!("Check::Pattern({})", rust_string(pattern))),
                Err(_) => self.warnings.push(format!(
                    "#{}: the pattern `{pattern}` is not one Rust's regex reads (lookaround or \
                     back-references?), so it is not checked",
                    self.workspace.pointer_at(schema.span)
                )),
            }
        }
        for (keyword, variant) in [
            ("minLength", "MinLength"),
            ("maxLength", "MaxLength"),
            ("minItems", "MinItems"),
            ("maxItems", "MaxItems"),
            ("minProperties", "MinProperties"),
            ("maxProperties", "MaxProperties"),
        ] {
            if let Some(n) = count(keyword) {
                checks.push(format!("Check::{variant}({n})"));
            }
        }
        if flag("uniqueItems") {
            checks.push("Check::UniqueItems".into());
        }
        // An enum of strings is a Rust enum, which serde holds.
        if let Some(values) = schema.get("enum").and_then(Node::as_seq) {
            if !values.iter().all(|value| value.as_str().is_some()) {
                let listed: Vec<String> = values
                    .iter()
                    .map(|value| rust_string(&value.to_json().to_string()))
                    .collect();
                checks.push(format!("Check::Enum(&[{}])", listed.join(", ")));
            }
        }
        for check in checks {
            let context = ConstraintContext {
                at: rust_string(at),
                check,
            };
            if !self.found.contains(&context) {
                self.found.push(context);
            }
        }
    }
}

fn as_number(node: &Node) -> Option<f64> {
    match &node.value {
        Value::Int(n) => Some(*n as f64),
        Value::Float(n) => Some(*n),
        _ => node.to_json().as_f64(),
    }
}

/// A JSON pointer segment.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
