//! The probe report as a table for people, JSON for scripts and JUnit XML
//! for CI test views.

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
use serde_json::{Value, json};

use super::{Outcome, Report};

pub fn table(report: &Report) -> String {
    let mut out = match report.base_urls.as_slice() {
        [one] => format!("idemgen probe {} against {one}\n", report.spec),
        all => format!(
            "idemgen probe {} against {} instances: {}\n",
            report.spec,
            all.len(),
            all.join(", ")
        ),
    };
    for operation in &report.operations {
        out.push_str(&format!(
            "\n{} ({} {}, profile {})\n",
            operation.name, operation.method, operation.path, operation.profile
        ));
        for line in &operation.request {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(why) = &operation.skipped {
            out.push_str(&format!("  SKIP  not probed: {why}\n"));
            continue;
        }
        let width = operation
            .checks
            .iter()
            .map(|check| check.id.len())
            .max()
            .unwrap_or(0);
        for check in &operation.checks {
            let label = match check.outcome {
                Outcome::Pass => "PASS",
                Outcome::Fail => "FAIL",
                Outcome::NotApplicable => "N/A ",
            };
            out.push_str(&format!(
                "  {label}  {:width$}  {}\n",
                check.id, check.summary
            ));
            let pad = " ".repeat(width + 10);
            for line in &check.evidence {
                out.push_str(&format!("{pad}- {line}\n"));
            }
            for line in &check.warnings {
                out.push_str(&format!("{pad}warning: {line}\n"));
            }
        }
    }
    out.push_str(&format!(
        "\n{} passed, {} failed, {} not applicable, {} warning{} ({} requests in {:.1} s)\n",
        report.count(Outcome::Pass),
        report.count(Outcome::Fail),
        report.count(Outcome::NotApplicable),
        report.warnings(),
        if report.warnings() == 1 { "" } else { "s" },
        report.requests,
        report.elapsed.as_secs_f64()
    ));
    out
}

pub fn json(report: &Report) -> Value {
    let operations: Vec<Value> = report
        .operations
        .iter()
        .map(|operation| {
            json!({
                "operation": operation.name,
                "method": operation.method,
                "path": operation.path,
                "profile": operation.profile,
                "request": operation.request,
                "skipped": operation.skipped,
                "checks": operation.checks.iter().map(check_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "spec": report.spec,
        "base_url": report.base_urls.first(),
        "base_urls": report.base_urls,
        "operations": operations,
        "summary": {
            "passed": report.count(Outcome::Pass),
            "failed": report.count(Outcome::Fail),
            "not_applicable": report.count(Outcome::NotApplicable),
            "warnings": report.warnings(),
            "requests": report.requests,
            "elapsed_ms": report.elapsed.as_millis() as u64,
            "stopped_early": report.stopped_early(),
        },
    })
}

/// One check; `effects` (with `--observe`) only where counted, so a
/// report without it is as it always was.
fn check_json(check: &super::CheckResult) -> Value {
    let mut value = json!({
        "check": check.id,
        "outcome": check.outcome.name(),
        "summary": check.summary,
        "evidence": check.evidence,
        "warnings": check.warnings,
    });
    if !check.effects.is_empty() {
        value["effects"] = check
            .effects
            .iter()
            .map(|count| {
                json!({
                    "read": count.read,
                    "pointer": count.pointer,
                    "before": count.before,
                    "after": count.after,
                })
            })
            .collect();
    }
    value
}

/// One `<testsuite>` per operation, one `<testcase>` per check: a failed
/// check fails, a not-applicable one is skipped; warnings go to
/// `<system-out>`.
pub fn junit(report: &Report) -> String {
    let mut junit = quick_junit::Report::new("idemgen probe");
    for operation in &report.operations {
        let mut suite = TestSuite::new(xml_text(&format!(
            "{} ({} {})",
            operation.name, operation.method, operation.path
        )));
        if let Some(why) = &operation.skipped {
            let mut case = TestCase::new("probe", TestCaseStatus::skipped());
            case.set_system_out(xml_text(why));
            suite.add_test_case(case);
        }
        for check in &operation.checks {
            let status = match check.outcome {
                Outcome::Pass => TestCaseStatus::success(),
                Outcome::NotApplicable => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(xml_text(&check.summary));
                    status
                }
                Outcome::Fail => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status.set_message(xml_text(check.evidence.first().unwrap_or(&check.summary)));
                    status.set_description(xml_text(&check.evidence.join("\n")));
                    status
                }
            };
            let mut case = TestCase::new(check.id, status);
            case.set_classname(xml_text(&operation.name));
            let mut out = check.summary.clone();
            for warning in &check.warnings {
                out.push_str(&format!("\nwarning: {warning}"));
            }
            case.set_system_out(xml_text(&out));
            suite.add_test_case(case);
        }
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

/// `text` with the characters XML 1.0 cannot hold replaced by `�`: server
/// text comes [`printable`](crate::server_text::printable) already, but a
/// spec's names and the user's values reach the report too (an
/// operationId may hold any escaped character).
fn xml_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' => c,
            c if c >= '\u{10000}' => c,
            _ => '\u{FFFD}',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::server_text::{HEADER_CHARS, printable};
    use crate::{CheckResult, OperationReport};

    #[test]
    fn junit_is_valid_xml_whatever_the_text_holds() {
        let hostile = "a\u{FFFE}b\u{FFFF}c\u{1}d\u{1b}[31me\u{9b}f\u{202E}g\u{DFFFF}";
        let check = |outcome| CheckResult {
            id: "replay",
            outcome,
            summary: format!("raw {hostile}"),
            evidence: vec![
                format!("raw {hostile}"),
                format!("shown {}", printable(hostile, HEADER_CHARS)),
            ],
            warnings: vec![format!("raw {hostile}")],
            stopped_early: false,
            effects: Vec::new(),
        };
        let operation = |name: &str, skipped: Option<String>| OperationReport {
            name: name.into(),
            method: "POST".into(),
            path: "/pay".into(),
            profile: "stripe".into(),
            request: Vec::new(),
            skipped,
            checks: vec![
                check(Outcome::Pass),
                check(Outcome::Fail),
                check(Outcome::NotApplicable),
            ],
        };
        let report = Report {
            spec: "openapi.yaml".into(),
            base_urls: vec!["http://127.0.0.1:1".into()],
            operations: vec![
                operation(&format!("op{hostile}"), None),
                operation("skipped", Some(format!("raw {hostile}"))),
            ],
            requests: 1,
            elapsed: Duration::ZERO,
        };
        let xml = junit(&report);
        let document =
            roxmltree::Document::parse(&xml).unwrap_or_else(|error| panic!("{error}\n{xml}"));
        let failure = document
            .descendants()
            .find(|node| node.has_tag_name("failure"))
            .unwrap();
        let message = failure.attribute("message").unwrap();
        assert!(
            message.starts_with("raw a\u{FFFD}b\u{FFFD}c\u{FFFD}d"),
            "{message}"
        );
        let description = failure.text().unwrap();
        assert!(
            description.contains("shown a\u{FFFD}b\u{FFFD}c d [31me f\u{FFFD}g\u{FFFD}"),
            "{description}"
        );
        // The parser does refuse what XML forbids.
        assert!(roxmltree::Document::parse("<a>\u{FFFE}</a>").is_err());
    }
}
