//! `x-idemgen-ignore: [rule-id, ...]`: silences rules on the document root,
//! a path item or an operation, then reports the entries that silenced
//! nothing (`unused-ignore`).
//!
//! A finding is under a node's ignore list when its JSON pointer is that
//! node's pointer or below it, or when it is about one of that node's
//! operations (a finding about an inherited document-level value points at
//! the document's `x-idempotency`, but names the operation).

use std::collections::{HashMap, HashSet};

use idemgen_spec::contract::suggest::closest;
use idemgen_spec::node::pointer_join;
use idemgen_spec::operations::Operation;
use idemgen_spec::{Node, Span, Value, Workspace};

use super::sink::location;
use super::{LintOptions, RULES};
use idemgen_diagnostics::{Diagnostic, Severity};

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
    /// Rule id → indices into `entries`.
    by_rule: HashMap<String, Vec<usize>>,
    /// Problems with the list itself (not a list, not strings).
    malformed: Vec<(Span, String, String)>,
}

/// Which scopes can cover a finding, looked up by its pointer's prefixes
/// and its operation, so suppression costs O(depth) per finding however
/// many operations and ignore lists a document has.
struct ScopeIndex {
    roots: Vec<usize>,
    by_pointer: HashMap<String, Vec<usize>>,
    by_operation: HashMap<String, Vec<usize>>,
}

impl ScopeIndex {
    fn new(scopes: &[Scope]) -> ScopeIndex {
        let mut index = ScopeIndex {
            roots: Vec::new(),
            by_pointer: HashMap::new(),
            by_operation: HashMap::new(),
        };
        for (at, scope) in scopes.iter().enumerate() {
            if scope.root {
                index.roots.push(at);
                continue;
            }
            index
                .by_pointer
                .entry(scope.pointer.clone())
                .or_default()
                .push(at);
            for name in &scope.operations {
                index.by_operation.entry(name.clone()).or_default().push(at);
            }
        }
        index
    }

    /// The scopes that cover `diagnostic`, each once.
    fn covering(&self, diagnostic: &Diagnostic) -> Vec<usize> {
        let mut found = self.roots.clone();
        if let Some(name) = &diagnostic.operation {
            found.extend(self.by_operation.get(name).into_iter().flatten());
        }
        let pointer = diagnostic.pointer.as_str();
        let prefixes = pointer
            .match_indices('/')
            .map(|(at, _)| &pointer[..at])
            .chain(std::iter::once(pointer));
        for prefix in prefixes {
            found.extend(self.by_pointer.get(prefix).into_iter().flatten());
        }
        found.sort_unstable();
        found.dedup();
        found
    }
}

struct Entry {
    rule: String,
    span: Span,
    pointer: String,
    used: bool,
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
    let index = ScopeIndex::new(&scopes);
    let before = diagnostics.len();
    diagnostics.retain(|diagnostic| !silence(&mut scopes, &index, diagnostic));
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
    unused.retain(|diagnostic| !silence(&mut scopes, &index, diagnostic));
    diagnostics.extend(unused);
    silenced
}

/// Whether an ignore list covers this finding; marks the entries that do.
fn silence(scopes: &mut [Scope], index: &ScopeIndex, diagnostic: &Diagnostic) -> bool {
    let mut silenced = false;
    for at in index.covering(diagnostic) {
        let scope = &mut scopes[at];
        let Some(entries) = scope.by_rule.get(diagnostic.rule) else {
            continue;
        };
        for &entry in entries {
            scope.entries[entry].used = true;
            silenced = true;
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
        fix: None,
        related: Vec::new(),
    }
}

/// Every ignore list in the document: root, path items, operations.
fn scopes(workspace: &Workspace, operations: &[Operation<'_>]) -> Vec<Scope> {
    let mut scopes = Vec::new();
    let all: Vec<String> = operations.iter().map(Operation::name).collect();
    if let Some(list) = workspace.root().get(KEY) {
        scopes.push(scope(list, String::new(), all, None, true));
    }
    let mut seen_items: HashSet<String> = HashSet::new();
    let mut names_by_item: HashMap<*const Node, Vec<String>> = HashMap::new();
    for operation in operations {
        names_by_item
            .entry(std::ptr::from_ref(operation.path_item))
            .or_default()
            .push(operation.name());
    }
    for operation in operations {
        let item_pointer = operation
            .pointer
            .rsplit_once('/')
            .map_or(String::new(), |(item, _)| item.to_string());
        if seen_items.insert(item_pointer.clone()) {
            if let Some(list) = operation.path_item.get(KEY) {
                let names = names_by_item
                    .get(&std::ptr::from_ref(operation.path_item))
                    .cloned()
                    .unwrap_or_default();
                scopes.push(scope(list, item_pointer, names, None, false));
            }
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
    let mut by_rule: HashMap<String, Vec<usize>> = HashMap::new();
    for (at, entry) in entries.iter().enumerate() {
        by_rule.entry(entry.rule.clone()).or_default().push(at);
    }
    Scope {
        pointer,
        operations,
        operation,
        root,
        entries,
        by_rule,
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
