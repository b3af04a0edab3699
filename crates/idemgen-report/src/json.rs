//! `--format json`: one JSON object, exactly as the contract specifies.

use serde_json::{Value, json};

use idemgen_diagnostics::Report;

pub fn render(report: &Report) -> String {
    let diagnostics: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|diagnostic| {
            let mut value = json!({
                "rule": diagnostic.rule,
                "severity": diagnostic.severity.as_str(),
                "message": diagnostic.message,
                "file": diagnostic.location.file,
                "line": diagnostic.location.line,
                "column": diagnostic.location.column,
                "pointer": diagnostic.pointer,
                "operation": diagnostic.operation,
                "help": diagnostic.help,
            });
            // An added field, only where there is something to say: a
            // finding without related places is exactly the contract's.
            if !diagnostic.related.is_empty() {
                value["related"] = diagnostic
                    .related
                    .iter()
                    .map(|related| {
                        json!({
                            "message": related.message,
                            "file": related.location.file,
                            "line": related.location.line,
                            "column": related.location.column,
                            "pointer": related.pointer,
                        })
                    })
                    .collect();
            }
            value
        })
        .collect();
    let mut document = json!({
        "diagnostics": diagnostics,
        "summary": summary(report),
    });
    // Only when a file could not be read, so a clean run's document is
    // exactly the contract's.
    if !report.load_failures.is_empty() {
        document["load_errors"] = report
            .load_failures
            .iter()
            .map(|failure| {
                json!({
                    "file": failure.file,
                    "line": failure.line,
                    "column": failure.column,
                    "message": failure.message,
                    "help": failure.help,
                })
            })
            .collect();
    }
    let mut text = serde_json::to_string_pretty(&document).expect("JSON values always serialise");
    text.push('\n');
    text
}

/// The counts every JSON document of a lint run ends with.
pub fn summary(report: &Report) -> Value {
    json!({
        "errors": report.errors(),
        "warnings": report.warnings(),
        "files": report.files,
        "operations": report.operations,
    })
}
