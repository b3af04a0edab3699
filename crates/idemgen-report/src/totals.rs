//! The totals line every text report ends with (`2 errors, 1 warning in 1
//! file (3 operations)`, then what the counts leave out). Its own module
//! so the pretty report and `--statistics` can both end with it without
//! depending on each other.

use idemgen_diagnostics::{Report, Severity};

/// What the counts leave out: `; 2 silenced by x-idemgen-ignore; 3 findings
/// already in the baseline not shown`, or nothing.
pub fn notes(report: &Report) -> String {
    let mut notes = String::new();
    if report.suppressed > 0 {
        notes.push_str(&format!(
            "; {} silenced by x-idemgen-ignore",
            report.suppressed
        ));
    }
    match report.baseline_matched {
        0 => {}
        1 => notes.push_str("; 1 finding already in the baseline not shown"),
        matched => notes.push_str(&format!(
            "; {matched} findings already in the baseline not shown"
        )),
    }
    notes
}

/// `2 errors, 1 warning in 1 file (3 operations)`, then `; 1 file could
/// not be read` when one could not.
pub fn summary(report: &Report) -> String {
    let plural =
        |count: usize, word: &str| format!("{count} {word}{}", if count == 1 { "" } else { "s" });
    let infos = report.count(Severity::Info);
    let mut counts = vec![
        plural(report.errors(), "error"),
        plural(report.warnings(), "warning"),
    ];
    if infos > 0 {
        counts.push(plural(infos, "note"));
    }
    let mut summary = format!(
        "{} in {} ({})",
        counts.join(", "),
        plural(report.files, "file"),
        plural(report.operations, "operation")
    );
    match report.load_failures.len() {
        0 => {}
        1 => summary.push_str("; 1 file could not be read"),
        failed => summary.push_str(&format!("; {failed} files could not be read")),
    }
    summary
}
