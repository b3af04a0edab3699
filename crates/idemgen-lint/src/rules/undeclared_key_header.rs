//! # undeclared-key-header
//!
//! **What it checks.** An operation that accepts an `Idempotency-Key`-like
//! parameter (header, query or request-body field such as
//! `idempotency_key`, also nested: Square's `request.idempotency_key` and
//! each entry's `values[*].idempotency_key` in a bulk upsert) also has an
//! `x-idempotency` block. A vendor's own header counts (`PayPal-Request-Id`),
//! and so does a request id whose description says it deduplicates.
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
//! **Where it points.** At the key when the operation declares it; at
//! the operation (its method's key) when the key is a shared component or
//! sits in another file, with a label that names where the key is
//! declared and that place as a related location (`related` in the JSON
//! output, `relatedLocations` in SARIF, a note with its snippet in the
//! pretty output, `relatedInformation` in the editor): Adyen's 22
//! operations that share one `Idempotency-Key` parameter get 22 findings
//! at 22 operations, not one line that a pull request rarely touches, and
//! the finding's pointer is the root document's, so a baseline matches in
//! any checkout.
//!
//! **Reads are a note.** A POST that the `missing-idempotency` heuristics
//! call a read (`search`, `retrieve`, `get`, `validate`… as the first word
//! of its action, see that rule) is reported one level milder, at info,
//! with no fix: Adyen's `POST /paymentMethods/balance` takes the API's
//! optional `Idempotency-Key`, but reading a gift card's balance twice
//! needs no contract.
//!
//! **Measured precision.** On the hand-judged sample in
//! `tests/data/precision/labels.tsv`, 15 of its 16 warnings were right
//! (93 %) before reads became notes and nested keys were recognised, and
//! 17 of 17 (100 %) after: the gift-card balance read became a note, and
//! Square's bulk creates and upserts, whose entries carry their own
//! `idempotency_key`, moved here from `missing-idempotency`, which had
//! wanted to add an `Idempotency-Key` header beside them.
//! `tests/it/precision.rs` fails below 80 %.
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
use crate::write_shape::{self, Shape};
use idemgen_diagnostics::Related;
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
        let (pointer, node) = body_key(context, schema)?;
        Some((format!("request-body field `{pointer}`"), node))
    };
    parameter.or_else(field)
}

/// How deep under the request body a key field is looked for: Square's
/// `request.idempotency_key` (a multipart part) and each entry's
/// `values[*].idempotency_key` in its bulk upserts are two levels down.
const BODY_KEY_DEPTH: usize = 3;

/// The request body's key field, a top-level one first, else the first
/// nested one (through `properties`, array `items`, map
/// `additionalProperties` and `allOf`/`oneOf`/`anyOf`): its name
/// (`idempotency_key`) or, nested, its pointer (`/request/idempotency_key`,
/// `/values/*/idempotency_key`) and node.
pub fn body_key<'a>(
    context: &OperationContext<'a>,
    schema: &'a Node,
) -> Option<(String, &'a Node)> {
    (0..BODY_KEY_DEPTH).find_map(|depth| key_at_depth(context, schema, "", depth))
}

fn key_at_depth<'a>(
    context: &OperationContext<'a>,
    schema: &'a Node,
    prefix: &str,
    depth: usize,
) -> Option<(String, &'a Node)> {
    let workspace = context.workspace;
    let schema = workspace.deref(schema)?;
    let entries = schema
        .get("properties")
        .and_then(|properties| workspace.deref(properties))
        .and_then(Node::as_map)
        .unwrap_or_default();
    if depth == 0 {
        if let Some(entry) = entries
            .iter()
            .find(|entry| looks_like_key(&entry.key, &entry.value))
        {
            // A top-level field by its name, as before; a nested one by
            // its pointer.
            let name = if prefix.is_empty() {
                entry.key.to_string()
            } else {
                format!("{prefix}/{}", entry.key)
            };
            return Some((name, &entry.value));
        }
    } else {
        for entry in entries {
            let below = format!("{prefix}/{}", entry.key);
            if let Some(found) = key_at_depth(context, &entry.value, &below, depth - 1) {
                return Some(found);
            }
        }
        for (child, step) in [("items", "/*"), ("additionalProperties", "/*")] {
            if let Some(inner) = schema.get(child) {
                let below = format!("{prefix}{step}");
                if let Some(found) = key_at_depth(context, inner, &below, depth - 1) {
                    return Some(found);
                }
            }
        }
    }
    for combinator in ["allOf", "oneOf", "anyOf"] {
        for part in schema
            .get(combinator)
            .and_then(Node::as_seq)
            .unwrap_or_default()
        {
            if let Some(found) = key_at_depth(context, part, prefix, depth) {
                return Some(found);
            }
        }
    }
    None
}

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    if !matches!(context.state, ContractState::Absent) {
        return;
    }
    let Some((what, node)) = key_like_input(context) else {
        return;
    };
    // Point at the parameter (or field) when the operation itself declares
    // it. A key declared elsewhere (a shared component, another file) is
    // reported at the operation, which is what a pull request touches and
    // whose pointer is the root document's whatever the file layout; the
    // label says where the key is declared.
    let declared_at = context.workspace.pointer_at(node.span);
    let own = declared_at.starts_with(&format!("{}/", context.operation.pointer));
    let origin = if own {
        Origin {
            span: node.span,
            pointer: declared_at.clone(),
        }
    } else {
        context.operation_origin()
    };
    let message = format!(
        "{} accepts the {what} but has no x-idempotency contract",
        context.name()
    );
    if let Shape::Read(word) = write_shape::of(context.operation) {
        // A read that takes a key: nothing to deduplicate, so no contract
        // to write and no fix; still worth knowing, at a milder level. At
        // the operation: the key is often a shared component, which the
        // fixes of the API's other operations edit.
        sink.report_milder(
            &context.operation_origin(),
            format!("{message} (a `{word}`: a read, so a note only)"),
        )
        .with_help("write `x-idempotency: false` if repeating it is harmless");
        return;
    }
    let fix = contract_for_existing_key(context, sink.fix_defaults());
    let diagnostic = sink
        .report(&origin, message)
        .with_help("add an `x-idempotency` block that names this key, its window and its answers")
        .with_fix(RULE.offered(fix));
    if !own {
        diagnostic
            .with_label(format!(
                "the key is declared at {}",
                crate::sink::shown(&declared_at)
            ))
            .with_related(Related {
                location: crate::sink::location(context.workspace, node.span),
                pointer: declared_at,
                message: format!(
                    "the {what} is declared here, shared by the operations that reference it"
                ),
            });
    }
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
