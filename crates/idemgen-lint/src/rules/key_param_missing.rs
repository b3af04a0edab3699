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
use idemgen_spec::Node;
use idemgen_spec::contract::key_template::Segment;
use idemgen_spec::contract::model::KeyLocation;

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
                    .with_fix(crate::fix::builders::key_parameter(context, key));
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
                    .with_fix(crate::fix::builders::key_parameter(context, key));
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
