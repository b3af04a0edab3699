//! # undeclared-key-header
//!
//! **What it checks.** An operation that accepts an `Idempotency-Key`-like
//! parameter (header, query or top-level request-body field such as
//! `idempotency_key`) also has an `x-idempotency` block.
//!
//! **Why it matters.** The key is there, so clients believe retries are
//! safe, but nothing states the window, the in-progress answer or what a
//! reused key with a different body does. Those are exactly the places
//! where implementations differ and money moves twice.
//!
//! **Example fix.**
//!
//! ```yaml
//! parameters:
//!   - {in: header, name: Idempotency-Key, required: true, schema: {type: string}}
//! x-idempotency:
//!   key: {in: header, name: Idempotency-Key, format: "refund:{uuid}"}
//!   window: 1d
//! ```
use super::prelude::*;
use crate::spec::Node;

declare_rule!(
    "undeclared_key_header.rs",
    "undeclared-key-header",
    Warning,
    "an operation declares an Idempotency-Key-like parameter but no x-idempotency",
    Check::Operation(check)
);

/// Whether a parameter or field name looks like an idempotency key.
pub fn looks_like_key(name: &str) -> bool {
    let squashed: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    squashed.contains("idempotency") || squashed.contains("idempotent")
}

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    if !matches!(context.state, ContractState::Absent) {
        return;
    }
    let parameter = context.parameters().into_iter().find_map(|parameter| {
        let name = parameter.get("name").and_then(Node::as_str)?;
        let location = parameter.get("in").and_then(Node::as_str)?;
        looks_like_key(name).then(|| (format!("{location} parameter `{name}`"), parameter))
    });
    let field = || {
        let schema = context.request_schema()?;
        let properties = context.workspace.deref(schema.get("properties")?)?;
        properties
            .as_map()?
            .iter()
            .find(|entry| looks_like_key(&entry.key))
            .map(|entry| (format!("request-body field `{}`", entry.key), &entry.value))
    };
    let Some((what, node)) = parameter.or_else(field) else {
        return;
    };
    // Point at the parameter (or field) itself, wherever it is written.
    let origin = Origin {
        span: node.span,
        pointer: context.workspace.pointer_at(node.span),
    };
    sink.report(
        &origin,
        format!(
            "{} accepts the {what} but has no x-idempotency contract",
            context.name()
        ),
    )
    .with_help("add an `x-idempotency` block that names this key, its window and its answers");
}
