//! # key-param-missing
//!
//! **What it checks.** The key the contract names is really declared: for
//! `key.in: header` or `query`, a parameter of that name marked
//! `required: true` on the operation or its path item; for `key.in: body`
//! and for every `{field:/pointer}` segment, a property at that pointer in
//! the request schema.
//!
//! **Why it matters.** Generated clients, docs and gateways follow the
//! declared parameters. An undeclared key is never sent, so every request
//! is answered 400; an optional one lets clients skip it and lose
//! deduplication without noticing.
//!
//! **Example fix.**
//!
//! ```yaml
//! parameters:
//!   - in: header
//!     name: Idempotency-Key
//!     required: true
//!     schema: {type: string, maxLength: 128}
//! ```
use super::prelude::*;
use crate::fix::Offer;
use crate::fix::builders::key_schema_value;
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use idemgen_spec::Node;
use idemgen_spec::contract::key_template::Segment;
use idemgen_spec::contract::model::{KeyLocation, KeySpec};

declare_rule!(
    "key_param_missing.rs",
    "key-param-missing",
    Error,
    "the key's header/query parameter is not declared required, or its body pointer is not in the request schema",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(key) = context.key() else {
        return;
    };
    let key_required = context
        .contract()
        .is_some_and(|contract| contract.missing_key_status.is_some());
    let name = &key.name.value;
    match key.location.value {
        KeyLocation::Header | KeyLocation::Query => {
            let location = key.location.value.name();
            match context.parameter(location, name) {
                None => {
                    sink.report(
                        &key.name.origin,
                        format!(
                            "{}: the key {location} `{name}` is not declared in the operation's parameters",
                            context.name()
                        ),
                    )
                    .with_help(format!(
                        "declare it: `- {{in: {location}, name: {name}, required: true, schema: {{type: string}}}}`"
                    ))
                    .with_fix(RULE.offered(key_parameter(context, key)));
                }
                Some(parameter)
                    if key_required
                        && parameter.get("required").and_then(Node::as_bool) != Some(true) =>
                {
                    sink.report(
                        &key.name.origin,
                        format!(
                            "{}: the key {location} `{name}` is declared but not `required: true`",
                            context.name()
                        ),
                    )
                    .with_help(
                        "mark the parameter `required: true`; requests without a key are refused",
                    )
                    .with_fix(RULE.offered(key_parameter(context, key)));
                }
                Some(_) => {}
            }
        }
        KeyLocation::Body => {
            if context.request_field(name).is_none() {
                sink.report(
                    &key.name.origin,
                    format!(
                        "{}: the key field `{name}` is not in the request body schema",
                        context.name()
                    ),
                )
                .with_help(
                    "point `key.name` at a property of the request schema, e.g. `/idempotency_key`",
                );
            }
        }
    }
    for segment in key.format.value.segments() {
        if let Segment::Field(pointer) = segment {
            if context.request_field(pointer).is_none() {
                sink.report(
                    &key.format.origin,
                    format!(
                        "{}: key segment `{{field:{pointer}}}` names no property of the request body schema",
                        context.name()
                    ),
                )
                .with_help("use a pointer to a request-body property, e.g. `{field:/txn_id}`");
            }
        }
    }
}

/// The key's header or query parameter → declared, and `required: true`.
fn key_parameter(context: &OperationContext<'_>, key: &KeySpec) -> Option<Offer> {
    let location = match key.location.value {
        KeyLocation::Body => return None,
        location => location.name(),
    };
    let mut editor = Editor::new(context.workspace);
    let title = match context.parameter(location, &key.name.value) {
        Some(parameter) => {
            if parameter.get("in").and_then(Node::as_str) == Some("querystring") {
                return None;
            }
            editor.set(parameter, &["required"], Emit::Bool(true))?;
            format!(
                "Mark the key {location} `{}` `required: true`",
                key.name.value
            )
        }
        None => {
            editor.append(
                context.operation.node,
                "parameters",
                key_parameter_value(location, &key.name.value, key),
            )?;
            format!("Declare the key {location} `{}`", key.name.value)
        }
    };
    editor.finish(title)
}

fn key_parameter_value(location: &str, name: &str, key: &KeySpec) -> Emit {
    Emit::map([
        ("name", Emit::str(name)),
        ("in", Emit::str(location)),
        ("required", Emit::Bool(true)),
        (
            "description",
            Emit::str(format!(
                "Idempotency key, `{}`: the same for every retry of one request, new for every new request.",
                key.format.value.source
            )),
        ),
        (
            "schema",
            key_schema_value(&key.format.value, key.max_length.value),
        ),
    ])
}
