//! # key-schema-mismatch
//!
//! **What it checks.** The schema of the key's parameter (or request-body
//! field) says what the contract says: a `pattern` equivalent to
//! `key.format` (anchored; groups and needless escapes aside) and a
//! `maxLength` equal to `key.max-length`.
//!
//! **Why it matters.** Everything that is not idemgen reads the schema, not
//! the extension: fuzzers such as schemathesis, client-side validators,
//! mock servers, generated SDKs. With only `{type: string}` they send keys
//! the server must refuse with the missing-key answer, and report the
//! service as broken for rejecting a "schema-valid" request.
//!
//! **Example fix.** For `format: "pay:{date}:{uuid}"` and `max-length: 128`:
//!
//! ```yaml
//! schema:
//!   type: string
//!   pattern: "^pay:[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]):[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$"
//!   maxLength: 128
//! ```
//!
//! `idemgen lint --fix` writes both (a safe fix).
//!
//! An `{opaque}` key (a key of the client's own shape, what a fix writes
//! for a key the API already takes) agrees with a schema that says nothing
//! of its shape or length: no `pattern` and no `maxLength` are asked for,
//! so no fix narrows the schema of a key today's clients already send. A
//! `pattern` or `maxLength` the schema does state must still agree.
//!
//! A key schema shared through a component or another file is reported at
//! each operation that takes it, with the shared schema (where the fix
//! writes) as a related location.
use super::prelude::*;
use crate::fix::Offer;
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use idemgen_diagnostics::Related;
use idemgen_spec::contract::model::KeySpec;
use idemgen_spec::{Node, Value};

declare_rule!(
    "key_schema_mismatch.rs",
    "key-schema-mismatch",
    Warning,
    "the key's schema lacks the template's `pattern` or a `maxLength` equal to key.max-length",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(key) = context.key() else {
        return;
    };
    // A key that is not declared at all is key-param-missing's finding.
    let Some(schema) = context.key_schema(key) else {
        return;
    };
    let template = &key.format.value;
    let max_length = key.max_length.value;
    // An `{opaque}` key's shape is the client's: a schema silent about
    // shape and length agrees with it, and writing a `pattern` or
    // `maxLength` there would turn away keys today's clients may send.
    let silent_ok = template.is_opaque();
    let mut problems = Vec::new();
    match schema.get("pattern").and_then(Node::as_str) {
        None if silent_ok && schema.get("pattern").is_none() => {}
        None => problems.push("has no `pattern`".to_string()),
        Some(pattern) if !template.pattern_matches(pattern) => problems.push(format!(
            "has `pattern` `{pattern}`, which is not the template `{}`",
            template.source
        )),
        Some(_) => {}
    }
    match schema.get("maxLength").map(|node| &node.value) {
        None if silent_ok => {}
        None => problems.push(format!(
            "has no `maxLength` (key.max-length is {max_length})"
        )),
        Some(Value::Int(length)) if u64::try_from(*length).ok() == Some(max_length) => {}
        Some(_) => problems.push(format!(
            "has a `maxLength` other than key.max-length {max_length}"
        )),
    }
    if problems.is_empty() {
        return;
    }
    // At the schema when the operation itself declares it; a schema shared
    // through a component or another file is reported at the operation (what
    // a pull request touches, once for each operation that takes the key),
    // with the shared schema, where the fix writes, as the related place.
    let declared_at = context.workspace.pointer_at(schema.span);
    let own = declared_at.starts_with(&format!("{}/", context.operation.pointer));
    let origin = if own {
        Origin {
            span: schema.span,
            pointer: declared_at.clone(),
        }
    } else {
        context.operation_origin()
    };
    let fix = key_schema(context, key, schema);
    let diagnostic = sink.report(
        &origin,
        format!(
            "{}: the schema of key {} `{}` {}",
            context.name(),
            key.location.value.name(),
            key.name.value,
            problems.join(" and ")
        ),
    )
    // Quoted and escaped as JSON, which is also YAML: the pattern's
    // backslashes (`\.`) copied into a YAML double-quoted string as they
    // are would be escapes YAML does not know.
    .with_help(format!(
        "set `pattern: {}` and `maxLength: {max_length}`, so tools that read only the schema send keys the server accepts",
        Emit::str(template.schema_pattern()).json_compact()
    ))
    .with_fix(RULE.offered(fix));
    if !own {
        diagnostic
            .with_label(format!(
                "the key's schema is declared at {}",
                crate::sink::shown(&declared_at)
            ))
            .with_related(Related {
                location: crate::sink::location(context.workspace, schema.span),
                pointer: declared_at,
                message:
                    "the key's schema is declared here, shared by the operations that reference it"
                        .into(),
            });
    }
}

/// The key's schema → `pattern` and `maxLength` from the contract.
fn key_schema(context: &OperationContext<'_>, key: &KeySpec, schema: &Node) -> Option<Offer> {
    let mut editor = Editor::new(context.workspace);
    let template = &key.format.value;
    let silent_ok = template.is_opaque();
    let pattern_ok = match schema.get("pattern") {
        None => silent_ok,
        Some(pattern) => pattern
            .as_str()
            .is_some_and(|pattern| template.pattern_matches(pattern)),
    };
    if !pattern_ok {
        editor.set(schema, &["pattern"], Emit::str(template.schema_pattern()))?;
    }
    let length_ok = match schema.get("maxLength").map(|node| &node.value) {
        None => silent_ok,
        Some(Value::Int(length)) => u64::try_from(*length).ok() == Some(key.max_length.value),
        Some(_) => false,
    };
    if !length_ok {
        editor.set(
            schema,
            &["maxLength"],
            Emit::Int(key.max_length.value as i64),
        )?;
    }
    editor.finish("Set the key schema's `pattern` and `maxLength` from the contract")
}
