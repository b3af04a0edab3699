//! Code actions on a finding: its `lint --fix` edit (safe fixes are the
//! preferred quick fix, unsafe ones plain), and an `x-idemgen-ignore` entry
//! for its rule on the operation (or the document) it is about.

use std::collections::HashMap;

use lsp_types::{CodeAction, CodeActionKind, CodeActionOrCommand, TextEdit, Uri, WorkspaceEdit};

use super::diagnostics::to_lsp;
use super::documents::{LineIndex, path_to_uri};
use idemgen_diagnostics::Diagnostic;
use idemgen_lint::LintOptions;
use idemgen_lint::fix::edit::Editor;
use idemgen_lint::fix::emit::Emit;
use idemgen_lint::fix::{Applicability, Edit, Fix};
use idemgen_lint::suppress::KEY as IGNORE_KEY;
use idemgen_spec::Workspace;
use idemgen_spec::operations::operations;

/// The actions for the findings in the root document whose underline
/// touches the bytes `start..=end`.
pub fn actions(
    workspace: &Workspace,
    options: &LintOptions,
    (start, end): (usize, usize),
) -> Vec<CodeActionOrCommand> {
    let root = &workspace.files[0].source;
    let index = LineIndex::new(&root.text);
    let findings = idemgen_lint::lint(workspace, options).diagnostics;
    let mut actions = Vec::new();
    for finding in findings.iter().filter(|finding| {
        let location = &finding.location;
        location.file == root.display
            && location.offset <= end
            && start <= location.offset + location.length
    }) {
        let range = index.range(
            &root.text,
            finding.location.offset,
            finding.location.offset + finding.location.length,
        );
        let diagnostic = to_lsp(finding, range);
        if let Some(fix) = &finding.fix {
            if let Some(action) = action(workspace, fix, &diagnostic) {
                actions.push(action);
            }
        }
        if let Some(fix) = ignore_fix(workspace, finding) {
            if let Some(mut action) = action(workspace, &fix, &diagnostic) {
                if let CodeActionOrCommand::CodeAction(action) = &mut action {
                    action.is_preferred = None;
                }
                actions.push(action);
            }
        }
    }
    actions
}

fn action(
    workspace: &Workspace,
    fix: &Fix,
    diagnostic: &lsp_types::Diagnostic,
) -> Option<CodeActionOrCommand> {
    let safe = fix.applicability == Applicability::Safe;
    Some(CodeActionOrCommand::CodeAction(CodeAction {
        title: if safe {
            fix.title.clone()
        } else {
            format!("{} (unsafe: review the guess)", fix.title)
        },
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        edit: Some(workspace_edit(workspace, &fix.edits)?),
        is_preferred: safe.then_some(true),
        ..CodeAction::default()
    }))
}

/// Edits by file display name as an LSP workspace edit.
// `WorkspaceEdit::changes` is keyed by `Uri`, whose only interior
// mutability is a parse cache that hashing and equality ignore.
#[allow(clippy::mutable_key_type)]
pub fn workspace_edit(workspace: &Workspace, edits: &[Edit]) -> Option<WorkspaceEdit> {
    let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    for edit in edits {
        let loaded = workspace.file_named(&edit.file)?;
        let text = &loaded.source.text;
        let range = LineIndex::new(text).range(text, edit.start, edit.end);
        changes
            .entry(path_to_uri(&loaded.source.path)?)
            .or_default()
            .push(TextEdit::new(range, edit.replacement.clone()));
    }
    Some(WorkspaceEdit {
        changes: Some(changes),
        ..WorkspaceEdit::default()
    })
}

/// Adds the finding's rule to the `x-idemgen-ignore` list of the operation
/// it is about, or of the document for document-level findings.
fn ignore_fix(workspace: &Workspace, finding: &Diagnostic) -> Option<Fix> {
    let all = operations(workspace);
    let (holder, place) = match &finding.operation {
        Some(name) => (
            all.iter().find(|operation| &operation.name() == name)?.node,
            name.as_str(),
        ),
        None => (workspace.root(), "the document"),
    };
    let mut editor = Editor::new(workspace);
    editor.append(holder, IGNORE_KEY, Emit::str(finding.rule))?;
    editor
        .finish(format!(
            "Ignore `{}` on {place} ({IGNORE_KEY})",
            finding.rule
        ))
        .map(|offer| offer.into_fix(Applicability::Safe))
}
