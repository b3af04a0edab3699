//! Where rules put findings: turns an [`Origin`] into a file location and
//! stamps the rule id, severity and operation.

use std::collections::HashSet;

use idemgen_spec::contract::Origin;
use idemgen_spec::{Span, Workspace};

use idemgen_diagnostics::{Diagnostic, Location, Severity};

pub struct Sink<'a> {
    pub(super) workspace: &'a Workspace,
    pub(super) rule: &'static str,
    pub(super) severity: Severity,
    pub(super) operation: Option<String>,
    /// Ids of the rules turned off for this run.
    pub(super) rules_off: &'a HashSet<&'static str>,
    pub(super) out: &'a mut Vec<Diagnostic>,
    /// What unsafe fixes write into a new document-level block.
    pub(super) fix_defaults: &'a crate::fix::FixDefaults,
    /// What the rule worked out once for the document ([`Sink::once`]).
    pub(super) memo: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl<'a> Sink<'a> {
    /// What unsafe fixes write into a new document-level block (from
    /// `--timeout`, `--retries`, `--max-processing`, `--dialect`).
    pub fn fix_defaults(&self) -> &'a crate::fix::FixDefaults {
        self.fix_defaults
    }
}

impl Sink<'_> {
    /// `compute`'s value, worked out at the rule's first call of `once`
    /// for this document and kept for its others: what a rule reads of
    /// the whole document (every other operation, say) then costs one
    /// pass, not one per operation. A rule keeps one such value, of one
    /// type: asking for another type is a bug in the rule (it panics in a
    /// debug build).
    pub fn once<T: Clone + Send + Sync + 'static>(&mut self, compute: impl FnOnce() -> T) -> T {
        if let Some(memo) = &self.memo {
            let kept = memo.downcast_ref::<T>();
            debug_assert!(
                kept.is_some(),
                "rule {} keeps two kinds of value",
                self.rule
            );
            if let Some(value) = kept {
                return value.clone();
            }
        }
        let value = compute();
        self.memo = Some(Box::new(value.clone()));
        value
    }

    /// Whether the rule `id` runs in this lint (it is not turned off), so a
    /// general rule can leave an operation to a more specific one.
    pub fn rule_runs(&self, id: &str) -> bool {
        !self.rules_off.contains(id)
    }

    /// Reports a finding at `origin` with the rule's severity.
    pub fn report(&mut self, origin: &Origin, message: impl Into<String>) -> &mut Diagnostic {
        self.report_as(self.severity, origin, message)
    }

    /// Reports a milder form of the rule's finding: one level below its
    /// severity (an error becomes a warning).
    pub fn report_milder(
        &mut self,
        origin: &Origin,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let severity = match self.severity {
            Severity::Error => Severity::Warning,
            _ => Severity::Info,
        };
        self.report_as(severity, origin, message)
    }

    fn report_as(
        &mut self,
        severity: Severity,
        origin: &Origin,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let location = location(self.workspace, origin.span);
        self.out.push(Diagnostic {
            rule: self.rule,
            severity,
            message: message.into(),
            location,
            pointer: origin.pointer.clone(),
            operation: self.operation.clone(),
            help: None,
            label: None,
            fix: None,
            related: Vec::new(),
        });
        self.out.last_mut().expect("just pushed")
    }
}

/// A pointer for a label: a file other than the root's by its name only,
/// so the text does not depend on where the checkout is.
pub(crate) fn shown(pointer: &str) -> String {
    match pointer.split_once('#') {
        Some((file, inner)) => {
            let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
            format!("`{name}#{inner}`")
        }
        None => format!("`{pointer}`"),
    }
}

/// A span as a location; the underline stops at the end of the first line
/// so a whole mapping is not highlighted.
pub fn location(workspace: &Workspace, span: Span) -> Location {
    let file = workspace.file(span.file);
    let offset = file.byte_offset(span.start as usize);
    let end = file.byte_offset(span.end as usize).max(offset);
    // By YAML's lines (a `\r` alone ends one) and its blanks (a vertical
    // tab is text).
    let text = file.text_by_lines();
    let first_line_end = text[offset..end].find('\n').map_or(end, |at| offset + at);
    let trimmed = text[offset..first_line_end].trim_end_matches([' ', '\t', '\r']);
    Location {
        file: file.display.clone(),
        line: span.line as usize,
        column: span.col as usize + 1,
        offset,
        length: trimmed
            .len()
            .max(1)
            .min(file.text.len().saturating_sub(offset)),
    }
}
