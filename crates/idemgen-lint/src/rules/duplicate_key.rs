//! # duplicate-key
//!
//! **What it checks.** No mapping in the document (or a file it references)
//! has the same key twice.
//!
//! **Why it matters.** YAML and JSON parsers disagree on duplicates: most
//! keep the last, some the first, some fail. Two `post:` entries or two
//! `x-idempotency:` blocks mean the contract a tool sees depends on the
//! tool, so the contract you reviewed may not be the one deployed.
//!
//! **Example fix.** Merge the two entries into one.
use super::prelude::*;
use idemgen_spec::LoadProblem;
use idemgen_spec::node::pointer_join;

declare_rule!(
    "duplicate_key.rs",
    "duplicate-key",
    Error,
    "a mapping has the same key twice",
    Check::Document(check)
);

fn check(context: &DocumentContext<'_>, sink: &mut Sink<'_>) {
    for problem in &context.workspace.problems {
        if let LoadProblem::DuplicateKey { key, first, again } = problem {
            sink.report(
                &Origin {
                    span: *again,
                    pointer: pointer_join(&context.workspace.pointer_at(*again), key),
                },
                format!(
                    "`{key}` appears twice in the same mapping (first on line {})",
                    first.line
                ),
            )
            .with_help("keep one entry: parsers disagree on which duplicate wins");
        }
    }
}
