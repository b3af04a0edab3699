//! # ref-unresolved
//!
//! **What it checks.** Every `$ref` names something idemgen can read: a
//! pointer that exists, in this file or in a relative file inside the root
//! document's directory. Remote (`http`/`https`) references are not
//! fetched (a warning: what they name goes unchecked), references that
//! leave the directory tree are refused, and references that only point at
//! each other in a loop are reported.
//!
//! **Why it matters.** A parameter, response or schema behind a broken
//! reference is invisible to every check: a declared `Idempotency-Key`
//! header or `429` response may be there and still be reported missing, or
//! a real problem may go unseen.
//!
//! **Example fix.** `$ref: "#/components/schemas/Paymnet"` becomes
//! `$ref: "#/components/schemas/Payment"`; bundle remote references into
//! the document.
use super::prelude::*;
use idemgen_spec::LoadProblem;

declare_rule!(
    "ref_unresolved.rs",
    "ref-unresolved",
    Error,
    "a $ref dangles, loops, is remote or leaves the spec's directory",
    Check::Document(check)
);

fn check(context: &DocumentContext<'_>, sink: &mut Sink<'_>) {
    for problem in &context.workspace.problems {
        let LoadProblem::Ref {
            reference,
            at,
            message,
            remote,
        } = problem
        else {
            continue;
        };
        let origin = Origin {
            span: *at,
            pointer: context.workspace.pointer_at(*at),
        };
        let text = format!("`$ref: {reference}` cannot be followed: {message}");
        // A remote reference is not wrong, only unchecked: one level milder.
        let diagnostic = if *remote {
            sink.report_milder(&origin, text)
        } else {
            sink.report(&origin, text)
        };
        diagnostic.with_help(if *remote {
            "bundle the remote document into the spec so idemgen can check what it names"
        } else {
            "point it at an existing definition in this file or a relative file beside it"
        });
    }
}
