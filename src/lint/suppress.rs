//! `x-idemgen-ignore: [rule-id, ...]`: silences rules on the document root,
//! a path item or an operation, then reports the entries that silenced
//! nothing (`unused-ignore`).
//!
//! A finding is under a node's ignore list when its JSON pointer is that
//! node's pointer or below it, or when it is about one of that node's
//! operations (a finding about an inherited document-level value points at
//! the document's `x-idempotency`, but names the operation).

use crate::contract::suggest::closest;
use crate::spec::node::pointer_join;
use crate::spec::operations::Operation;
use crate::spec::{Node, Span, Value, Workspace};

use super::diagnostic::{Diagnostic, Severity};
use super::sink::location;
use super::{LintOptions, RULES};

/// The extension's name.
pub const KEY: &str = "x-idemgen-ignore";

const UNUSED_IGNORE: &str = "unused-ignore";

/// One node's ignore list.
struct Scope {
    /// Pointer of the node (`""` for the root).
    pointer: String,
    /// Names of the operations the node holds (all of them for the root).
    operations: Vec<String>,
    /// `Some` for an operation's own list: findings about it are named so.
    operation: Option<String>,
    root: bool,
    entries: Vec<Entry>,
    /// Problems with the list itself (not a list, not strings).
    malformed: Vec<(Span, String, String)>,
}

struct Entry {
    rule: String,
    span: Span,
    pointer: String,
    used: bool,
}

impl Scope {
    fn covers(&self, diagnostic: &Diagnostic) -> bool {
        if self.root {
            return true;
        }
        if diagnostic
            .operation
            .as_ref()
            .is_some_and(|name| self.operations.contains(name))
        {
            return true;
        }
        diagnostic.pointer == self.pointer
            || diagnostic
                .pointer
                .strip_prefix(&self.pointer)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

/// Drops the findings an ignore list covers and adds `unused-ignore`
/// findings for entries that covered none. Returns how many were dropped.
pub fn apply(
    workspace: &Workspace,
    operations: &[Operation<'_>],
    options: &LintOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> usize {
    let mut scopes = scopes(workspace, operations);
    if scopes.is_empty() {
        return 0;
    }
    let before = diagnostics.len();
    diagnostics.retain(|diagnostic| !silence(&mut scopes, diagnostic));
    let silenced = before - diagnostics.len();

    let severity = match options.severities.get(UNUSED_IGNORE) {
        Some(None) => return silenced,
        Some(Some(severity)) => *severity,
        None => super::rule(UNUSED_IGNORE).map_or(Severity::Warning, |rule| rule.severity),
    };
    let mut unused = Vec::new();
    for scope in &scopes {
        let place = match &scope.operation {
            Some(name) => format!("on {name}"),
            None if scope.root => "on the document".to_string(),
            None => format!("on path item `{}`", unescape_last(&scope.pointer)),
        };
        for (span, pointer, message) in &scope.malformed {
            unused.push(finding(
                workspace,
                scope,
                severity,
                (*span, pointer),
                (
                    message.clone(),
                    "not a list of rule ids",
                    Some(format!(
                        "write `{KEY}: [rule-id, ...]`, e.g. `{KEY}: [missing-key-undeclared]`"
                    )),
                ),
            ));
        }
        for entry in scope.entries.iter().filter(|entry| !entry.used) {
            let known = super::rule(&entry.rule).is_some();
            let (message, help) = if entry.rule == UNUSED_IGNORE {
                continue;
            } else if !known {
                let suggestion = closest(&entry.rule, RULES.iter().map(|rule| rule.id));
                (
                    format!(
                        "`{KEY}` {place} names `{}`, which is not a rule",
                        entry.rule
                    ),
                    Some(match suggestion {
                        Some(name) => format!("did you mean `{name}`? `idemgen rules` lists them"),
                        None => "`idemgen rules` lists the rule ids".to_string(),
                    }),
                )
            } else if matches!(options.severities.get(&entry.rule), Some(None)) {
                (
                    format!(
                        "`{}` is turned off, so ignoring it {place} silences nothing",
                        entry.rule
                    ),
                    Some("remove the entry, or add `unused-ignore` to the list to keep it on purpose".to_string()),
                )
            } else {
                (
                    format!(
                        "`{}` is ignored {place} but reports nothing there",
                        entry.rule
                    ),
                    Some("remove the entry: the problem it excused is gone, and it would hide the next one unreviewed".to_string()),
                )
            };
            unused.push(finding(
                workspace,
                scope,
                severity,
                (entry.span, &entry.pointer),
                (
                    message,
                    if known {
                        "silences nothing"
                    } else {
                        "not a rule"
                    },
                    help,
                ),
            ));
        }
    }
    // An `unused-ignore` entry keeps deliberate ignores quiet in its scope.
    unused.retain(|diagnostic| !silence(&mut scopes, diagnostic));
    diagnostics.extend(unused);
    silenced
}

/// Whether an ignore list covers this finding; marks the entries that do.
fn silence(scopes: &mut [Scope], diagnostic: &Diagnostic) -> bool {
    let mut silenced = false;
    for scope in scopes.iter_mut() {
        if !scope.covers(diagnostic) {
            continue;
        }
        for entry in &mut scope.entries {
            if entry.rule == diagnostic.rule {
                entry.used = true;
                silenced = true;
            }
        }
    }
    silenced
}

/// An `unused-ignore` finding at `span`, about `scope`'s operation (if any).
fn finding(
    workspace: &Workspace,
    scope: &Scope,
    severity: Severity,
    (span, pointer): (Span, &str),
    (message, label, help): (String, &str, Option<String>),
) -> Diagnostic {
    Diagnostic {
        rule: UNUSED_IGNORE,
        severity,
        message,
        location: location(workspace, span),
        pointer: pointer.to_string(),
        operation: scope.operation.clone(),
        help,
        label: Some(label.into()),
    }
}

/// Every ignore list in the document: root, path items, operations.
fn scopes(workspace: &Workspace, operations: &[Operation<'_>]) -> Vec<Scope> {
    let mut scopes = Vec::new();
    let all: Vec<String> = operations.iter().map(Operation::name).collect();
    if let Some(list) = workspace.root().get(KEY) {
        scopes.push(scope(list, String::new(), all, None, true));
    }
    let mut seen_items: Vec<String> = Vec::new();
    for operation in operations {
        let item_pointer = operation
            .pointer
            .rsplit_once('/')
            .map_or(String::new(), |(item, _)| item.to_string());
        if !seen_items.contains(&item_pointer) {
            if let Some(list) = operation.path_item.get(KEY) {
                let names = operations
                    .iter()
                    .filter(|other| std::ptr::eq(other.path_item, operation.path_item))
                    .map(Operation::name)
                    .collect();
                scopes.push(scope(list, item_pointer.clone(), names, None, false));
            }
            seen_items.push(item_pointer);
        }
        if let Some(list) = operation.node.get(KEY) {
            scopes.push(scope(
                list,
                operation.pointer.clone(),
                vec![operation.name()],
                Some(operation.name()),
                false,
            ));
        }
    }
    scopes
}

fn scope(
    list: &Node,
    pointer: String,
    operations: Vec<String>,
    operation: Option<String>,
    root: bool,
) -> Scope {
    let list_pointer = pointer_join(&pointer, KEY);
    let mut entries = Vec::new();
    let mut malformed = Vec::new();
    let mut add = |node: &Node, pointer: String| match &node.value {
        Value::Str(id) => entries.push(Entry {
            rule: id.trim().to_string(),
            span: node.span,
            pointer,
            used: false,
        }),
        _ => malformed.push((
            node.span,
            pointer,
            format!("`{KEY}` entries must be rule ids, found {}", node.kind()),
        )),
    };
    match &list.value {
        Value::Seq(items) => {
            for (index, item) in items.iter().enumerate() {
                add(item, pointer_join(&list_pointer, &index.to_string()));
            }
        }
        Value::Str(_) => add(list, list_pointer),
        _ => malformed.push((
            list.span,
            list_pointer,
            format!("`{KEY}` must be a list of rule ids, found {}", list.kind()),
        )),
    }
    Scope {
        pointer,
        operations,
        operation,
        root,
        entries,
        malformed,
    }
}

/// The path of a path item's pointer, for messages (`/paths/~1pay` → `/pay`).
fn unescape_last(pointer: &str) -> String {
    pointer
        .rsplit('/')
        .next()
        .unwrap_or(pointer)
        .replace("~1", "/")
        .replace("~0", "~")
}
