//! A finding: which rule, how bad, what to say and exactly where.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A place in a source file. `line` and `column` are 1-based (columns in
/// characters); `offset` and `length` are bytes, for snippets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
    #[serde(skip)]
    pub offset: usize,
    #[serde(skip)]
    pub length: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable kebab-case rule id, e.g. `window-too-short`.
    pub rule: &'static str,
    pub severity: Severity,
    /// One line that names the operation and shows the numbers.
    pub message: String,
    pub location: Location,
    /// JSON pointer of the offending value in the root document's logical
    /// tree (through `$ref`s), stable when lines move.
    pub pointer: String,
    /// The operation's operationId, else `METHOD /path`; `None` for
    /// document-level findings.
    pub operation: Option<String>,
    /// What to do about it.
    pub help: Option<String>,
    /// Short text shown under the snippet's underline.
    pub label: Option<String>,
    /// Text edits that resolve the finding, when the rule knows them.
    pub fix: Option<crate::Fix>,
    /// Other places that matter to the finding: for a finding about an
    /// operation whose key is a shared component, where that component is
    /// declared (the finding itself points at the operation).
    pub related: Vec<Related>,
}

/// A place related to a finding, with what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Related {
    pub location: Location,
    /// JSON pointer of the place: in the root document's tree, or, in a
    /// referenced file, that file's path relative to the root document's
    /// directory, `#`, and the pointer within it.
    pub pointer: String,
    /// What is there (`the key is declared here`).
    pub message: String,
}

/// Builder-style setters, so a rule can write
/// `sink.report(..).with_help(..).with_fix(..)`.
impl Diagnostic {
    pub fn with_help(&mut self, help: impl Into<String>) -> &mut Self {
        self.help = Some(help.into());
        self
    }

    pub fn with_label(&mut self, label: impl Into<String>) -> &mut Self {
        self.label = Some(label.into());
        self
    }

    /// Adds a place related to the finding.
    pub fn with_related(&mut self, related: Related) -> &mut Self {
        self.related.push(related);
        self
    }

    /// Attaches the fix that resolves the finding, if there is one.
    pub fn with_fix(&mut self, fix: Option<crate::Fix>) -> &mut Self {
        self.fix = fix;
        self
    }
}

/// Everything one lint run found, plus what reporters need to show it.
#[derive(Debug, Default)]
pub struct Report {
    pub diagnostics: Vec<Diagnostic>,
    /// Number of root files linted.
    pub files: usize,
    /// Number of operations seen in them.
    pub operations: usize,
    /// Text of every file a diagnostic points into, by display name.
    pub sources: std::collections::BTreeMap<String, std::sync::Arc<str>>,
    /// Each root file linted with its operations' names, in document order
    /// (reporters that list passing checks, such as JUnit, need them).
    pub linted: Vec<LintedFile>,
    /// Ids of the rules that ran (not turned off), in registry order.
    pub rules: Vec<&'static str>,
    /// What reporters may say about any rule (its summary, docs, scope):
    /// filled from the rule registry by whoever runs the lint, so that
    /// reporters need not depend on the rules themselves.
    pub rule_info: Vec<RuleInfo>,
    /// Findings left out because the baseline already had them.
    pub baseline_matched: usize,
    /// Findings silenced by `x-idemgen-ignore`.
    pub suppressed: usize,
    /// Root files that could not be read or parsed: nothing in them was
    /// linted, which every format says rather than reporting them clean.
    pub load_failures: Vec<LoadFailure>,
}

/// A root file that could not be read or parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailure {
    pub file: String,
    /// Line and column (1-based) where the parser stopped, when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
    pub help: String,
}

/// A rule as reporters describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleInfo {
    /// Stable kebab-case id, e.g. `window-too-short`.
    pub id: &'static str,
    /// Its default severity.
    pub severity: Severity,
    /// One line: what the rule checks.
    pub summary: &'static str,
    /// The rule file's source; its leading `//!` lines are the documentation.
    pub source: &'static str,
    /// Whether it checks the document as a whole (once per file).
    pub per_document: bool,
    /// Whether it checks each operation.
    pub per_operation: bool,
}

impl RuleInfo {
    /// The long explanation `idemgen rule ID` prints: the rule file's
    /// leading `//!` documentation, as Markdown.
    pub fn docs(&self) -> String {
        let mut docs = String::new();
        for line in self.source.lines() {
            let Some(text) = line.strip_prefix("//!") else {
                break;
            };
            docs.push_str(text.strip_prefix(' ').unwrap_or(text));
            docs.push('\n');
        }
        docs.trim().to_string()
    }
}

/// One linted root file and the names of its operations.
#[derive(Debug, Clone, Default)]
pub struct LintedFile {
    pub file: String,
    pub operations: Vec<String>,
    /// Which of [`Report::diagnostics`] came from this file (and the files
    /// it references).
    pub findings: std::ops::Range<usize>,
}

impl Report {
    /// What the run knows of rule `id`, if anything.
    pub fn rule(&self, id: &str) -> Option<&RuleInfo> {
        self.rule_info.iter().find(|rule| rule.id == id)
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity == severity)
            .count()
    }

    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }
}
