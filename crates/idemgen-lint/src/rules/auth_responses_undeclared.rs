//! # auth-responses-undeclared
//!
//! **What it checks.** An operation with an `x-idempotency` contract that
//! requires credentials (its `security`, else the document's, names a
//! scheme) declares `401` in `responses`, and `403` as well when a
//! requirement lists scopes (`oauth2: [refunds:write]`, or any non-empty
//! scope list). A `4XX` range declares both.
//!
//! **Why it matters.** A secured operation answers 401 to a missing or
//! rejected credential, and 403 to one without the scopes it needs, before
//! its key is claimed: the generated service does, and so does any
//! service behind an API gateway. Undeclared, those answers are outside
//! the contract: the generated client can only report them as an
//! undeclared status, and a reader of the spec cannot tell that a refused
//! request claimed no key and may be retried with it once the credential
//! is fixed.
//!
//! **Example fix.** `lint --fix` declares what is missing:
//!
//! ```yaml
//! "401": {description: The credentials are missing or were not accepted; nothing was processed and the key was not claimed.}
//! "403": {description: The credentials do not grant this operation's scopes; nothing was processed and the key was not claimed.}
//! ```
use super::prelude::*;
use crate::fix::Offer;
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use idemgen_spec::{Node, security};

declare_rule!(
    "auth_responses_undeclared.rs",
    "auth-responses-undeclared",
    Warning,
    "a secured operation does not declare 401 (or, with scopes, 403)",
    Check::Operation(check),
    fix = Safe
);

const UNAUTHENTICATED: &str = "The credentials are missing or were not accepted; nothing was processed and the key was not claimed.";
const FORBIDDEN: &str = "The credentials do not grant this operation's scopes; nothing was processed and the key was not claimed.";

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    if context.contract().is_none()
        || !security::authenticates(context.workspace, context.operation)
    {
        return;
    }
    let mut missing: Vec<u16> = Vec::new();
    if context.response(401).is_none() {
        missing.push(401);
    }
    if has_scopes(context) && context.response(403).is_none() {
        missing.push(403);
    }
    if missing.is_empty() {
        return;
    }
    let statuses = missing
        .iter()
        .map(|status| format!("{status}"))
        .collect::<Vec<_>>()
        .join(" and ");
    let why = if missing.contains(&403) {
        "it requires credentials and scopes"
    } else {
        "it requires credentials"
    };
    sink.report(
        &context.responses_origin(),
        format!(
            "{}: {why}, but {statuses} {} not declared in responses",
            context.name(),
            if missing.len() == 1 { "is" } else { "are" }
        ),
    )
    .with_help(format!(
        "declare {}: a refused request claims no key, and clients should know the answer",
        missing
            .iter()
            .map(|status| format!("`\"{status}\"`"))
            .collect::<Vec<_>>()
            .join(" and ")
    ))
    .with_fix(RULE.offered(declare(context, &missing)));
}

/// Whether a requirement in force lists a scope.
fn has_scopes(context: &OperationContext<'_>) -> bool {
    security::requirement(context.workspace, context.operation)
        .and_then(Node::as_seq)
        .is_some_and(|alternatives| {
            alternatives.iter().any(|alternative| {
                alternative.as_map().is_some_and(|schemes| {
                    schemes.iter().any(|scheme| {
                        scheme
                            .value
                            .as_seq()
                            .is_some_and(|scopes| !scopes.is_empty())
                    })
                })
            })
        })
}

fn declare(context: &OperationContext<'_>, missing: &[u16]) -> Option<Offer> {
    let mut editor = Editor::new(context.workspace);
    for status in missing {
        let description = if *status == 403 {
            FORBIDDEN
        } else {
            UNAUTHENTICATED
        };
        editor.set(
            context.operation.node,
            &["responses", &status.to_string()],
            Emit::map([("description", Emit::str(description))]),
        )?;
    }
    editor.finish(format!(
        "Declare response {}",
        missing
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(" and ")
    ))
}
