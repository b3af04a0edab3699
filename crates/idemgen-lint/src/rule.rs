//! What every rule is: an id, a default severity, its documentation and a
//! check over one operation or the whole document.

use super::context::DocumentContext;
use super::sink::Sink;
use crate::fix::Offer;
use idemgen_diagnostics::{Fix, RuleInfo, Severity};
use idemgen_spec::analysis::OperationContext;

pub enum Check {
    /// Runs once per linted document.
    Document(fn(&DocumentContext<'_>, &mut Sink<'_>)),
    /// Runs once per operation.
    Operation(fn(&OperationContext<'_>, &mut Sink<'_>)),
    /// Runs once per document and once per operation.
    Both(
        fn(&DocumentContext<'_>, &mut Sink<'_>),
        fn(&OperationContext<'_>, &mut Sink<'_>),
    ),
}

impl Check {
    pub fn document(&self) -> Option<fn(&DocumentContext<'_>, &mut Sink<'_>)> {
        match self {
            Check::Document(check) | Check::Both(check, _) => Some(*check),
            Check::Operation(_) => None,
        }
    }

    pub fn operation(&self) -> Option<fn(&OperationContext<'_>, &mut Sink<'_>)> {
        match self {
            Check::Operation(check) | Check::Both(_, check) => Some(*check),
            Check::Document(_) => None,
        }
    }
}

pub struct Rule {
    /// Stable kebab-case id, e.g. `window-too-short`.
    pub id: &'static str,
    pub severity: Severity,
    /// One line: what the rule checks.
    pub summary: &'static str,
    /// The rule file's source; its leading `//!` lines are the documentation.
    pub source: &'static str,
    pub check: Check,
    /// Whether its findings come with a fix, and how safe that fix is.
    pub fix: Option<idemgen_diagnostics::Applicability>,
}

impl Rule {
    /// What reporters need to know of this rule.
    pub fn info(&self) -> RuleInfo {
        RuleInfo {
            id: self.id,
            severity: self.severity,
            summary: self.summary,
            source: self.source,
            per_document: self.check.document().is_some(),
            per_operation: self.check.operation().is_some(),
        }
    }

    /// The fix a finding of this rule carries: the builder's edits with the
    /// applicability this rule declares (`fix = Safe|Unsafe` in its
    /// `declare_rule!`), the one place it is stated. A rule that declares
    /// none offers no fix: the offer is dropped, and a debug build stops so
    /// the rule's tests find it.
    pub fn offered(&self, offer: Option<Offer>) -> Option<Fix> {
        debug_assert!(
            offer.is_none() || self.fix.is_some(),
            "rule {} offers a fix but its declare_rule! has no `fix = Safe|Unsafe`",
            self.id
        );
        offer
            .zip(self.fix)
            .map(|(offer, applicability)| offer.into_fix(applicability))
    }

    /// The long explanation `idemgen rule ID` prints: the rule file's
    /// leading `//!` documentation, as Markdown.
    pub fn docs(&self) -> String {
        self.info().docs()
    }
}

/// Declares a rule from inside its own file, taking the file's documentation.
macro_rules! declare_rule {
    ($file:literal, $id:literal, $severity:ident, $summary:literal, $check:expr) => {
        pub const RULE: $crate::rule::Rule = $crate::rule::Rule {
            id: $id,
            severity: ::idemgen_diagnostics::Severity::$severity,
            summary: $summary,
            source: include_str!($file),
            check: $check,
            fix: None,
        };
    };
    ($file:literal, $id:literal, $severity:ident, $summary:literal, $check:expr, fix = $fix:ident) => {
        pub const RULE: $crate::rule::Rule = $crate::rule::Rule {
            id: $id,
            severity: ::idemgen_diagnostics::Severity::$severity,
            summary: $summary,
            source: include_str!($file),
            check: $check,
            fix: Some(::idemgen_diagnostics::Applicability::$fix),
        };
    };
}
pub(crate) use declare_rule;
