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
//! **Where nothing uses it, a warning.** A broken `$ref` inside a component
//! that no path or webhook reaches (through `$ref`s, followed) hides
//! nothing from the other checks, so it is reported one level milder: a
//! leftover schema should not fail a build on day one.
//!
//! **Example fix.** `$ref: "#/components/schemas/Paymnet"` becomes
//! `$ref: "#/components/schemas/Payment"`; bundle remote references into
//! the document.
use super::prelude::*;
use idemgen_spec::{LoadProblem, Node, Value};
use std::collections::HashSet;

declare_rule!(
    "ref_unresolved.rs",
    "ref-unresolved",
    Error,
    "a $ref dangles, loops, is remote or leaves the spec's directory",
    Check::Document(check)
);

fn check(context: &DocumentContext<'_>, sink: &mut Sink<'_>) {
    let mut reachable: Option<HashSet<String>> = None;
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
        let unreachable = !*remote && {
            let reachable = reachable.get_or_insert_with(|| reachable_components(context));
            component_of(&origin.pointer).is_some_and(|component| !reachable.contains(component))
        };
        let mut text = format!("`$ref: {reference}` cannot be followed: {message}");
        if unreachable {
            text.push_str(" (in a component no path or webhook reaches)");
        }
        // A remote reference is not wrong, only unchecked, and one in a
        // component nothing uses hides nothing from the other rules: one
        // level milder.
        let diagnostic = if *remote || unreachable {
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

/// The root document's component (`/components/schemas/Payment`) that
/// holds `pointer`; `None` outside `components` or in another file.
fn component_of(pointer: &str) -> Option<&str> {
    let rest = pointer.strip_prefix("/components/")?;
    let mut ends = rest.match_indices('/').map(|(at, _)| at);
    let kind_end = ends.next()?;
    let name_end = ends.next().unwrap_or(rest.len());
    (name_end > kind_end + 1).then(|| &pointer[.."/components/".len() + name_end])
}

/// The root document's components that its paths and webhooks reach
/// through local `$ref`s, followed transitively.
fn reachable_components(context: &DocumentContext<'_>) -> HashSet<String> {
    let root = context.workspace.root();
    let mut reached = HashSet::new();
    let mut todo: Vec<&Node> = ["paths", "webhooks"]
        .iter()
        .filter_map(|section| root.get(section))
        .collect();
    while let Some(node) = todo.pop() {
        match &node.value {
            Value::Map(_) => {
                for entry in node.as_map().unwrap_or_default() {
                    let local = (&*entry.key == "$ref")
                        .then(|| entry.value.as_str())
                        .flatten()
                        .and_then(|reference| reference.strip_prefix('#'));
                    if let Some(component) = local.and_then(component_of) {
                        if reached.insert(component.to_string()) {
                            todo.extend(idemgen_spec::refs::evaluate(root, component));
                        }
                    }
                    todo.push(&entry.value);
                }
            }
            Value::Seq(items) => todo.extend(items),
            _ => {}
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::component_of;

    #[test]
    fn components_of_pointers() {
        assert_eq!(
            component_of("/components/schemas/Payment/properties/x/$ref"),
            Some("/components/schemas/Payment")
        );
        assert_eq!(
            component_of("/components/schemas/Payment"),
            Some("/components/schemas/Payment")
        );
        assert_eq!(component_of("/components/schemas"), None);
        assert_eq!(component_of("/paths/~1x/post"), None);
        assert_eq!(component_of("other.yaml#/components/schemas/A"), None);
    }
}
