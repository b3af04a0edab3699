//! # replay-schema-missing
//!
//! **What it checks.** The operation declares at least one 2xx response
//! with a content schema.
//!
//! **Why it matters.** A completed request is answered by replaying its
//! stored response. If the success body is undescribed, clients cannot
//! rely on a replay looking like the original, and the store has nothing to
//! size its body column against.
//!
//! **Example fix.**
//!
//! ```yaml
//! "200":
//!   description: Payment recorded (replayed for retries)
//!   content:
//!     application/json:
//!       schema: {$ref: "#/components/schemas/Payment"}
//! ```
use super::prelude::*;
use idemgen_spec::Node;

declare_rule!(
    "replay_schema_missing.rs",
    "replay-schema-missing",
    Warning,
    "no 2xx response with a schema to replay",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    if context.contract().is_none() {
        return;
    }
    let workspace = context.workspace;
    let has_schema = context
        .operation
        .node
        .get("responses")
        .and_then(|responses| workspace.deref(responses))
        .and_then(Node::as_map)
        .into_iter()
        .flatten()
        .filter(|entry| entry.key.starts_with('2'))
        .filter_map(|entry| workspace.deref(&entry.value))
        .filter_map(|response| response.get("content").and_then(Node::as_map))
        .flatten()
        .any(|media| media.value.get("schema").is_some());
    if !has_schema {
        sink.report(
            &context.responses_origin(),
            format!(
                "{}: no 2xx response has a schema, so replays are undescribed",
                context.name()
            ),
        )
        .with_help("describe the success body under `responses.\"200\".content`");
    }
}
