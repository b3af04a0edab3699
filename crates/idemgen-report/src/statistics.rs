//! `lint --statistics`: how many findings each rule produced, most first,
//! like ruff's `--statistics`; and the one-line version the pretty report
//! ends with when it is long.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::json;

use idemgen_diagnostics::{Report, Severity};

/// Findings of one rule at one severity (a rule can report a milder form,
/// so one rule may have two rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCount {
    pub rule: &'static str,
    pub severity: Severity,
    pub count: usize,
}

/// Counts per rule and severity: most findings first, then errors before
/// warnings, then by rule id.
pub fn counts(report: &Report) -> Vec<RuleCount> {
    let mut by_rule: HashMap<(&'static str, Severity), usize> = HashMap::new();
    for diagnostic in &report.diagnostics {
        *by_rule
            .entry((diagnostic.rule, diagnostic.severity))
            .or_default() += 1;
    }
    let mut counts: Vec<RuleCount> = by_rule
        .into_iter()
        .map(|((rule, severity), count)| RuleCount {
            rule,
            severity,
            count,
        })
        .collect();
    counts.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.severity.cmp(&a.severity))
            .then(a.rule.cmp(b.rule))
    });
    counts
}

fn rule_summary(report: &Report, rule: &str) -> &'static str {
    report.rule(rule).map_or("", |rule| rule.summary)
}

/// The table: count, rule, severity and what the rule checks, then the
/// usual totals line.
///
/// ```text
/// 198  missing-idempotency    warning  a POST or PATCH has no x-idempotency (and is not `false`)
///  24  undeclared-key-header  warning  an operation declares an Idempotency-Key-like parameter …
/// 0 errors, 222 warnings in 1 file (468 operations)
/// ```
pub fn render_text(report: &Report) -> String {
    let counts = counts(report);
    let count_width = counts
        .iter()
        .map(|row| row.count.to_string().len())
        .max()
        .unwrap_or(0);
    let rule_width = counts.iter().map(|row| row.rule.len()).max().unwrap_or(0);
    let mut out = String::new();
    for row in &counts {
        let _ = writeln!(
            out,
            "{:>count_width$}  {:<rule_width$}  {:<7}  {}",
            row.count,
            row.rule,
            row.severity.as_str(),
            rule_summary(report, row.rule),
        );
    }
    let _ = writeln!(
        out,
        "{}{}",
        super::totals::summary(report),
        super::totals::notes(report)
    );
    out
}

/// `{"statistics": [{"rule", "severity", "count", "summary"}], "summary":
/// {…}}`, the summary as in `--format json`.
pub fn render_json(report: &Report) -> String {
    let rows: Vec<serde_json::Value> = counts(report)
        .iter()
        .map(|row| {
            json!({
                "rule": row.rule,
                "severity": row.severity.as_str(),
                "count": row.count,
                "summary": rule_summary(report, row.rule),
            })
        })
        .collect();
    let document = json!({
        "statistics": rows,
        "summary": super::json::summary(report),
    });
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always serialise");
    text.push('\n');
    text
}

/// Above this many findings the pretty report is longer than a screen
/// (each finding takes about ten lines), so it ends with [`one_line`].
pub const LONG_REPORT: usize = 10;

/// `by rule: 198 missing-idempotency, 24 undeclared-key-header` (counts
/// per rule whatever the severity, most first).
pub fn one_line(report: &Report) -> String {
    let mut per_rule: Vec<(&'static str, usize)> = Vec::new();
    for row in counts(report) {
        match per_rule.iter_mut().find(|(rule, _)| *rule == row.rule) {
            Some((_, count)) => *count += row.count,
            None => per_rule.push((row.rule, row.count)),
        }
    }
    per_rule.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = per_rule
        .iter()
        .map(|(rule, count)| format!("{count} {rule}"))
        .collect();
    format!("by rule: {}", parts.join(", "))
}
