//! # set-cookie-replayed
//!
//! **What it checks.** An idempotent operation's 2xx response does not
//! declare a `Set-Cookie` header.
//!
//! **Why it matters.** A replay is the first answer again: status, content
//! type, body and the headers the response declares. A cookie is not part
//! of it. It belongs to the exchange that set it: replaying it to a retry
//! would start the first caller's session again for whoever holds the key,
//! or hand a stale one back. idemgen sends a declared `Set-Cookie` with the
//! first answer and never stores or replays it, so a client that retries
//! gets the answer without the cookie the spec promises. Return what the
//! client needs in the body or in a header that belongs to the result
//! (`Location`), and set sessions on an operation that is not idempotent.
//!
//! **Example fix.**
//!
//! ```yaml
//! "201":
//!   description: Order created
//!   headers:
//!     Location: {required: true, schema: {type: string}}
//!     # Set-Cookie dropped: a retry replays this answer without it
//! ```
use super::prelude::*;
use idemgen_spec::Node;
use idemgen_spec::node::escape_pointer_segment;

declare_rule!(
    "set_cookie_replayed.rs",
    "set-cookie-replayed",
    Warning,
    "an idempotent 2xx declares Set-Cookie, which replays never carry",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    if context.contract().is_none() {
        return;
    }
    let workspace = context.workspace;
    let Some(responses) = context
        .operation
        .node
        .get("responses")
        .and_then(|responses| workspace.deref(responses))
        .and_then(Node::as_map)
    else {
        return;
    };
    for response in responses.iter().filter(|entry| entry.key.starts_with('2')) {
        let Some(headers) = workspace
            .deref(&response.value)
            .and_then(|node| node.get("headers"))
            .and_then(Node::as_map)
        else {
            continue;
        };
        for header in headers
            .iter()
            .filter(|header| header.key.eq_ignore_ascii_case("set-cookie"))
        {
            let at_response = format!(
                "{}/responses/{}",
                context.operation.pointer,
                escape_pointer_segment(&response.key)
            );
            // A response `$ref` elsewhere: point at its use here.
            let origin = if response.value.get("$ref").is_some() {
                Origin {
                    span: response.key_span,
                    pointer: at_response,
                }
            } else {
                Origin {
                    span: header.key_span,
                    pointer: format!(
                        "{at_response}/headers/{}",
                        escape_pointer_segment(&header.key)
                    ),
                }
            };
            sink.report(
                &origin,
                format!(
                    "{}: the {} answer declares `{}`, which is sent with the first answer only: \
                     a replay never carries a cookie",
                    context.name(),
                    response.key,
                    header.key
                ),
            )
            .with_help(
                "return what the client needs in the body or a header of the result \
                 (`Location`), and set cookies on an operation that is not idempotent",
            );
        }
    }
}
