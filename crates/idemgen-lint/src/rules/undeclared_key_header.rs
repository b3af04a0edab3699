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
//! **One finding per problem.** Such an operation is reported here only,
//! not also by `missing-idempotency`: a POST or PATCH without a contract
//! but with a key-like parameter gets this finding, the more specific one.
//! Turning this rule off hands those operations back to
//! `missing-idempotency`.
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
use crate::fix::builders::{contract_block, key_input};
use crate::fix::edit::Editor;
use crate::fix::{FixDefaults, Offer};
use idemgen_spec::Node;

declare_rule!(
    "undeclared_key_header.rs",
    "undeclared-key-header",
    Warning,
    "an operation declares an Idempotency-Key-like parameter but no x-idempotency",
    Check::Operation(check),
    fix = Unsafe
);

/// Whether a parameter or body field (its node) is an idempotency key,
/// judged by its name and description.
pub fn looks_like_key(name: &str, node: &Node) -> bool {
    let description = node.get("description").and_then(Node::as_str);
    idemgen_spec::key_names::is_idempotency_key(name, description)
}

/// The operation's first key-like input, described (`header parameter
/// `Idempotency-Key``) with the node to point at: a parameter, else a
/// top-level request-body field.
pub fn key_like_input<'a>(context: &OperationContext<'a>) -> Option<(String, &'a Node)> {
    let parameter = context.parameters().into_iter().find_map(|parameter| {
        let name = parameter.get("name").and_then(Node::as_str)?;
        let location = parameter.get("in").and_then(Node::as_str)?;
        looks_like_key(name, parameter)
            .then(|| (format!("{location} parameter `{name}`"), parameter))
    });
    let field = || {
        let schema = context.request_schema()?;
        let properties = context.workspace.deref(schema.get("properties")?)?;
        properties
            .as_map()?
            .iter()
            .find(|entry| looks_like_key(&entry.key, &entry.value))
            .map(|entry| (format!("request-body field `{}`", entry.key), &entry.value))
    };
    parameter.or_else(field)
}

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    if !matches!(context.state, ContractState::Absent) {
        return;
    }
    let Some((what, node)) = key_like_input(context) else {
        return;
    };
    // Point at the parameter (or field) itself, wherever it is written.
    let origin = Origin {
        span: node.span,
        pointer: context.workspace.pointer_at(node.span),
    };
    let fix = contract_for_existing_key(context, sink.fix_defaults());
    sink.report(
        &origin,
        format!(
            "{} accepts the {what} but has no x-idempotency contract",
            context.name()
        ),
    )
    .with_help("add an `x-idempotency` block that names this key, its window and its answers")
    .with_fix(RULE.offered(fix));
}

/// `undeclared-key-header` → an `x-idempotency` block for the key the
/// operation already accepts (unsafe: the key format is a guess).
fn contract_for_existing_key(
    context: &OperationContext<'_>,
    defaults: &FixDefaults,
) -> Option<Offer> {
    let input = key_input(context)?;
    let mut editor = Editor::new(context.workspace);
    contract_block(context, defaults, &input, &mut editor)?;
    editor.finish(format!(
        "Add an `x-idempotency` block for the key `{}`",
        input.name
    ))
}
