//! Who may call an operation: the security requirement in force, which is
//! the operation's own `security` when it has one (even `security: []`),
//! else the document's.

use super::Workspace;
use super::node::Node;
use super::operations::Operation;

/// The `security` list that applies to `operation`, if any applies.
pub fn requirement<'a>(workspace: &'a Workspace, operation: &Operation<'a>) -> Option<&'a Node> {
    operation
        .node
        .get("security")
        .or_else(|| workspace.root().get("security"))
}

/// Whether the requirement in force names a security scheme, so callers
/// authenticate and have a principal: some alternative is a non-empty
/// mapping. No `security`, `security: []`, or only empty alternatives
/// (`- {}`, anonymous access) name none.
pub fn authenticates(workspace: &Workspace, operation: &Operation<'_>) -> bool {
    requirement(workspace, operation)
        .and_then(Node::as_seq)
        .is_some_and(|alternatives| {
            alternatives.iter().any(|alternative| {
                alternative
                    .as_map()
                    .is_some_and(|schemes| !schemes.is_empty())
            })
        })
}
