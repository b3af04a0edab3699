//! The lint engine: builds each operation's merged contract once, then runs
//! every rule over the document and its operations.

use std::collections::{HashMap, HashSet};

use idemgen_spec::Workspace;
use idemgen_spec::analysis::{Analysis, analyse};
use idemgen_spec::contract::model::Defaults;
use idemgen_spec::operations::Operation;

use idemgen_diagnostics::{Diagnostic, Severity};

use crate::context::DocumentContext;
use crate::rule::Rule;
use crate::rules::RULES;
use crate::sink::Sink;
use crate::suppress;

/// How a run is configured: defaults for the contract and per-rule
/// severities (`None` turns a rule off).
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    pub defaults: Defaults,
    pub severities: HashMap<String, Option<Severity>>,
    /// What unsafe fixes write into a new document-level block.
    pub fix_defaults: crate::fix::FixDefaults,
    /// Spec (absolute, normalised path) → the Overlay documents applied to
    /// it before it is read (idemgen.toml's `[overlays]`): how the editor
    /// loads a spec.
    pub overlays: HashMap<std::path::PathBuf, Vec<std::path::PathBuf>>,
}

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.id == id)
}

/// Everything one document yields: its findings and operation count.
pub struct DocumentLint {
    pub diagnostics: Vec<Diagnostic>,
    pub operations: usize,
    /// Each operation's name (operationId, else `METHOD /path`), in order.
    pub operation_names: Vec<String>,
    /// Findings silenced by `x-idemgen-ignore`.
    pub suppressed: usize,
}

pub fn lint(workspace: &Workspace, options: &LintOptions) -> DocumentLint {
    let Analysis {
        document_contract,
        document_errors,
        operations,
    } = analyse(workspace, options.defaults);
    let mut diagnostics = Vec::new();
    // Which rules are off, so a general rule can leave an operation to a
    // more specific one only when that one runs.
    let rules_off: HashSet<&'static str> = RULES
        .iter()
        .filter(|rule| matches!(options.severities.get(rule.id), Some(None)))
        .map(|rule| rule.id)
        .collect();
    for rule in RULES {
        let severity = match options.severities.get(rule.id) {
            Some(None) => continue,
            Some(Some(severity)) => *severity,
            None => rule.severity,
        };
        let mut sink = Sink {
            workspace,
            rule: rule.id,
            severity,
            operation: None,
            rules_off: &rules_off,
            out: &mut diagnostics,
            fix_defaults: &options.fix_defaults,
            memo: None,
        };
        if let Some(check) = rule.check.document() {
            check(
                &DocumentContext {
                    workspace,
                    document_contract: document_contract.as_ref(),
                    contract_errors: &document_errors,
                },
                &mut sink,
            );
        }
        if let Some(check) = rule.check.operation() {
            for analysed in &operations {
                sink.operation = Some(analysed.operation.name());
                check(&analysed.context(workspace), &mut sink);
            }
        }
    }
    let operations: Vec<Operation<'_>> = operations
        .into_iter()
        .map(|analysed| analysed.operation)
        .collect();
    let suppressed = suppress::apply(workspace, &operations, options, &mut diagnostics);
    diagnostics.sort_by(|a, b| {
        (
            &a.location.file,
            a.location.line,
            a.location.column,
            a.rule,
            &a.message,
        )
            .cmp(&(
                &b.location.file,
                b.location.line,
                b.location.column,
                b.rule,
                &b.message,
            ))
    });
    diagnostics.dedup();
    DocumentLint {
        diagnostics,
        operations: operations.len(),
        operation_names: operations.iter().map(Operation::name).collect(),
        suppressed,
    }
}
