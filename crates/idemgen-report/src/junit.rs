//! `--format junit`: JUnit XML, for CI systems that show test results
//! (GitLab, Jenkins, Azure Pipelines, test-report actions).
//!
//! One `<testsuite>` per linted file; in it one `<testcase>` per operation
//! and rule (`onPayCallback: window-too-short`) and one per document-level
//! rule (`(document): duplicate-key`). A testcase with an error-level
//! finding fails; warnings and notes leave it passing and are listed in its
//! `<system-out>`. Every finding is one line,
//! `error[window-too-short] spec.yaml:14:17: message`. A file that could
//! not be read is a suite of its own whose one testcase errs.

use std::collections::BTreeMap;

use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};

use idemgen_diagnostics::{Diagnostic, Report, Severity};

/// The testcase name of document-level findings.
pub const DOCUMENT: &str = "(document)";

pub fn render(report: &Report) -> String {
    let mut junit = quick_junit::Report::new("idemgen");
    let mut covered = vec![false; report.diagnostics.len()];
    for linted in &report.linted {
        let range = linted.findings.start.min(report.diagnostics.len())
            ..linted.findings.end.min(report.diagnostics.len());
        for index in range.clone() {
            covered[index] = true;
        }
        let findings: Vec<&Diagnostic> = report.diagnostics[range].iter().collect();
        junit.add_test_suite(suite(report, &linted.file, &linted.operations, &findings));
    }
    let rest: Vec<&Diagnostic> = report
        .diagnostics
        .iter()
        .zip(&covered)
        .filter(|(_, covered)| !**covered)
        .map(|(diagnostic, _)| diagnostic)
        .collect();
    if !rest.is_empty() {
        junit.add_test_suite(suite(report, "idemgen", &[], &rest));
    }
    // A file that could not be read: one suite with one erroring case, so
    // the CI's test view shows it rather than nothing.
    for failure in &report.load_failures {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status
            .set_message(failure.message.as_str())
            .set_type("load-error")
            .set_description(format!("{} (help: {})", failure.message, failure.help));
        let mut case = TestCase::new(format!("{}: could not be read", failure.file), status);
        case.set_classname(failure.file.as_str());
        let mut suite = TestSuite::new(failure.file.as_str());
        suite.add_test_case(case);
        junit.add_test_suite(suite);
    }
    let mut text = junit
        .to_string()
        .unwrap_or_else(|error| format!("<!-- cannot write JUnit XML: {error} -->\n"));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn suite(
    report: &Report,
    file: &str,
    operations: &[String],
    findings: &[&Diagnostic],
) -> TestSuite {
    // (operation or `(document)`, rule) → its findings, in testcase order.
    type Cases<'d> = Vec<((String, &'static str), Vec<&'d Diagnostic>)>;
    let mut cases: Cases<'_> = Vec::new();
    let mut index: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut add_case = |key: (String, &'static str), cases: &mut Cases<'_>| {
        *index.entry(key.clone()).or_insert_with(|| {
            cases.push((key, Vec::new()));
            cases.len() - 1
        })
    };
    for id in &report.rules {
        if report.rule(id).is_some_and(|rule| rule.per_document) {
            add_case((DOCUMENT.to_string(), id), &mut cases);
        }
    }
    for operation in operations {
        for id in &report.rules {
            if report.rule(id).is_some_and(|rule| rule.per_operation) {
                add_case((operation.clone(), id), &mut cases);
            }
        }
    }
    for diagnostic in findings {
        let owner = diagnostic
            .operation
            .clone()
            .unwrap_or_else(|| DOCUMENT.to_string());
        let at = add_case((owner, diagnostic.rule), &mut cases);
        cases[at].1.push(diagnostic);
    }
    let mut suite = TestSuite::new(file);
    suite.add_property(Property::new("errors", count(findings, Severity::Error)));
    suite.add_property(Property::new(
        "warnings",
        count(findings, Severity::Warning),
    ));
    suite.add_property(Property::new("operations", operations.len().to_string()));
    for ((owner, rule), found) in cases {
        let name = format!("{owner}: {rule}");
        let lines: Vec<String> = found.iter().map(|diagnostic| line(diagnostic)).collect();
        let first_error = found
            .iter()
            .find(|diagnostic| diagnostic.severity == Severity::Error);
        let status = match first_error {
            Some(error) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_message(error.message.as_str())
                    .set_type(rule)
                    .set_description(lines.join("\n"));
                status
            }
            None => TestCaseStatus::success(),
        };
        let mut case = TestCase::new(name, status);
        case.set_classname(file);
        if first_error.is_none() && !lines.is_empty() {
            case.set_system_out(lines.join("\n"));
        }
        suite.add_test_case(case);
    }
    suite
}

fn count(findings: &[&Diagnostic], severity: Severity) -> String {
    findings
        .iter()
        .filter(|diagnostic| diagnostic.severity == severity)
        .count()
        .to_string()
}

/// `error[window-too-short] spec.yaml:14:17: message (help: …)`.
pub fn line(diagnostic: &Diagnostic) -> String {
    let location = &diagnostic.location;
    let mut text = format!(
        "{}[{}] {}:{}:{}: {}",
        diagnostic.severity.as_str(),
        diagnostic.rule,
        location.file,
        location.line,
        location.column,
        diagnostic.message.replace('\n', " ")
    );
    if let Some(help) = &diagnostic.help {
        text.push_str(&format!(" (help: {})", help.replace('\n', " ")));
    }
    text
}
