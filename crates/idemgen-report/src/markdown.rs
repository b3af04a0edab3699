//! `--format markdown`: a summary to post as a pull-request comment.
//!
//! A heading with the counts, a table of findings (severity, rule,
//! operation, place, message) and, folded, what each rule that fired means.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use idemgen_diagnostics::{Report, Severity};

/// Most table rows; the rest are counted, not listed (comments have a size limit).
pub const MAX_ROWS: usize = 200;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let icon = if report.errors() > 0 || !report.load_failures.is_empty() {
        "❌"
    } else if report.warnings() > 0 {
        "⚠️"
    } else {
        "✅"
    };
    let _ = writeln!(
        out,
        "### {icon} idemgen: {}\n",
        super::totals::summary(report)
    );
    if report.suppressed > 0 {
        let _ = writeln!(
            out,
            "{} silenced by `x-idemgen-ignore`.\n",
            plural(report.suppressed, "finding")
        );
    }
    if report.baseline_matched > 0 {
        let _ = writeln!(
            out,
            "Only new findings are shown: {} already in the baseline {} left out.\n",
            report.baseline_matched,
            if report.baseline_matched == 1 {
                "is"
            } else {
                "are"
            }
        );
    }
    for failure in &report.load_failures {
        let place = match (failure.line, failure.column) {
            (Some(line), Some(column)) => format!("{}:{line}:{column}", failure.file),
            _ => failure.file.clone(),
        };
        let _ = writeln!(
            out,
            "❌ **`{}` could not be read**: {} ({})\n",
            place.replace('`', "'"),
            failure.message,
            failure.help
        );
    }
    if report.diagnostics.is_empty() {
        let _ = match report.load_failures.is_empty() {
            true => writeln!(out, "No findings."),
            false => writeln!(out, "No findings in the files that could be read."),
        };
        return out;
    }
    let _ = writeln!(out, "| Severity | Rule | Operation | Location | Message |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    for diagnostic in report.diagnostics.iter().take(MAX_ROWS) {
        let severity = match diagnostic.severity {
            Severity::Error => "❌ error",
            Severity::Warning => "⚠️ warning",
            Severity::Info => "ℹ️ note",
        };
        let location = &diagnostic.location;
        let _ = writeln!(
            out,
            "| {severity} | `{}` | {} | `{}:{}:{}` | {} |",
            diagnostic.rule,
            diagnostic
                .operation
                .as_deref()
                .map(|operation| format!("`{}`", cell(operation)))
                .unwrap_or_else(|| "(document)".into()),
            cell(&location.file),
            location.line,
            location.column,
            cell(&diagnostic.message),
        );
    }
    if report.diagnostics.len() > MAX_ROWS {
        let _ = writeln!(
            out,
            "\n…and {} more; run `idemgen lint` locally for all of them.",
            report.diagnostics.len() - MAX_ROWS
        );
    }
    let mut fired: BTreeMap<&str, usize> = BTreeMap::new();
    for diagnostic in &report.diagnostics {
        *fired.entry(diagnostic.rule).or_default() += 1;
    }
    let _ = writeln!(out, "\n<details><summary>What the rules mean</summary>\n");
    for (id, count) in fired {
        let summary = report.rule(id).map_or("", |rule| rule.summary);
        let _ = writeln!(
            out,
            "- `{id}` ({count}×): {summary}. Details: `idemgen rule {id}`."
        );
    }
    let _ = writeln!(out, "\n</details>");
    out
}

/// Text safe inside a table cell: no pipes or line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn plural(count: usize, word: &str) -> String {
    format!("{count} {word}{}", if count == 1 { "" } else { "s" })
}
