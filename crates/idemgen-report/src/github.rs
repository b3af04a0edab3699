//! `--format github`: one GitHub Actions workflow command per finding, so
//! each shows as an annotation on the pull request's diff.
//!
//! `::error file=spec.yaml,line=14,col=17,endColumn=20,title=window-too-short (onPayCallback)::message`
//!
//! Errors are `::error`, warnings `::warning`, notes `::notice`. The last
//! line is the plain summary, which the log shows as it is.

use idemgen_diagnostics::{Diagnostic, Report, Severity};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for failure in &report.load_failures {
        let mut properties = vec![format!(
            "file={}",
            escape_property(&super::checkout_relative(&failure.file))
        )];
        if let (Some(line), Some(column)) = (failure.line, failure.column) {
            properties.push(format!("line={line}"));
            properties.push(format!("col={column}"));
        }
        properties.push(format!(
            "title={}",
            escape_property("idemgen: the file could not be read")
        ));
        out.push_str(&format!(
            "::error {}::{}\n",
            properties.join(","),
            escape_data(&format!("{}\nhelp: {}", failure.message, failure.help))
        ));
    }
    for diagnostic in &report.diagnostics {
        out.push_str(&annotation(report, diagnostic));
        out.push('\n');
    }
    out.push_str(&super::totals::summary(report));
    out.push_str(&super::totals::notes(report));
    out.push('\n');
    out
}

/// One workflow command.
pub fn annotation(report: &Report, diagnostic: &Diagnostic) -> String {
    let command = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let location = &diagnostic.location;
    let file = super::checkout_relative(&location.file);
    let mut properties = vec![
        format!("file={}", escape_property(&file)),
        format!("line={}", location.line),
        format!("col={}", location.column),
    ];
    if let Some(text) = report.sources.get(&location.file) {
        let end = (location.offset + location.length).min(text.len());
        if let Some(snippet) = text.get(location.offset..end) {
            let width = snippet.chars().count().max(1);
            properties.push(format!("endColumn={}", location.column + width));
        }
    }
    let title = match &diagnostic.operation {
        Some(operation) => format!("{} ({operation})", diagnostic.rule),
        None => diagnostic.rule.to_string(),
    };
    properties.push(format!("title={}", escape_property(&title)));
    let mut message = diagnostic.message.clone();
    if let Some(help) = &diagnostic.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    message.push_str(&format!("\nidemgen rule {}", diagnostic.rule));
    format!(
        "::{command} {}::{}",
        properties.join(","),
        escape_data(&message)
    )
}

/// Escapes a command's message, as `@actions/core` does.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a command property's value, as `@actions/core` does.
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_actions_core() {
        assert_eq!(escape_data("50% of\nit"), "50%25 of%0Ait");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
