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
                "checks": operation.checks.iter().map(|check| json!({
                    "check": check.id,
                    "outcome": check.outcome.name(),
                    "summary": check.summary,
                    "evidence": check.evidence,
                    "warnings": check.warnings,
                })).collect::<Vec<_>>(),
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

/// One `<testsuite>` per operation, one `<testcase>` per check: a failed
/// check fails, a not-applicable one is skipped; warnings go to
/// `<system-out>`.
pub fn junit(report: &Report) -> String {
    let mut junit = quick_junit::Report::new("idemgen probe");
    for operation in &report.operations {
        let mut suite = TestSuite::new(format!(
            "{} ({} {})",
            operation.name, operation.method, operation.path
        ));
        if let Some(why) = &operation.skipped {
            let mut case = TestCase::new("probe", TestCaseStatus::skipped());
            case.set_system_out(why.as_str());
            suite.add_test_case(case);
        }
        for check in &operation.checks {
            let status = match check.outcome {
                Outcome::Pass => TestCaseStatus::success(),
                Outcome::NotApplicable => {
                    let mut status = TestCaseStatus::skipped();
                    status.set_message(check.summary.as_str());
                    status
                }
                Outcome::Fail => {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status.set_message(
                        check
                            .evidence
                            .first()
                            .map_or(check.summary.as_str(), String::as_str),
                    );
                    status.set_description(check.evidence.join("\n"));
                    status
                }
            };
            let mut case = TestCase::new(check.id, status);
            case.set_classname(operation.name.as_str());
            let mut out = check.summary.clone();
            for warning in &check.warnings {
                out.push_str(&format!("\nwarning: {warning}"));
            }
            case.set_system_out(out);
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
