//! The heuristics of `missing-idempotency`, `naturally-idempotent-write` and
//! `undeclared-key-header`, measured against corpus operations judged by
//! hand (`tests/data/precision/labels.tsv`): each row names an operation of
//! a payment API's spec, the finding it got when it was judged, the rule
//! that should report it (`none` when nothing should) and why. The test
//! prints precision and recall per rule and fails when a rule's precision
//! falls below the floor its page states. The specs are the full corpus's
//! (they are not all licensed for this repository); without it the test
//! prints SKIPPED.

use crate::support::corpus::full_corpus_dir;
use crate::support::root;
use std::collections::BTreeMap;
use std::path::Path;

use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

/// The rules measured, with the precision their pages promise (percent).
const FLOORS: &[(&str, u32)] = &[
    ("missing-idempotency", 80),
    ("undeclared-key-header", 80),
    ("naturally-idempotent-write", 80),
];

struct Label {
    spec: String,
    operation: String,
    expected: String,
}

fn labels() -> Vec<Label> {
    let text =
        std::fs::read_to_string(root().join("tests/data/precision/labels.tsv")).expect("labels");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('\t').collect();
    assert_eq!(
        header,
        [
            "spec",
            "method",
            "path",
            "operation",
            "finding",
            "expected",
            "reason"
        ]
    );
    lines
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            assert_eq!(fields.len(), 7, "{line}");
            assert!(!fields[6].trim().is_empty(), "no reason given: {line}");
            let known = FLOORS.iter().any(|(rule, _)| *rule == fields[5]) || fields[5] == "none";
            assert!(known, "unknown expected rule: {line}");
            Label {
                spec: fields[0].to_string(),
                operation: fields[3].to_string(),
                expected: fields[5].to_string(),
            }
        })
        .collect()
}

/// Each labelled operation's findings of the measured rules at their
/// default level (a rule's milder note, an info of a warning rule, is not
/// counted as that rule's finding).
fn findings(corpus: &Path, labels: &[Label]) -> BTreeMap<(String, String), Vec<&'static str>> {
    let mut by_spec: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for label in labels {
        by_spec
            .entry(&label.spec)
            .or_default()
            .push(&label.operation);
    }
    let mut found = BTreeMap::new();
    for (spec, operations) in by_spec {
        let path = corpus.join("specs").join(spec);
        let workspace =
            Workspace::load(&path).unwrap_or_else(|error| panic!("{spec}: {}", error.message));
        let result = lint(&workspace, &LintOptions::default());
        for operation in operations {
            let rules: Vec<&'static str> = result
                .diagnostics
                .iter()
                .filter(|d| d.operation.as_deref() == Some(operation))
                .filter(|d| {
                    FLOORS.iter().any(|(rule, _)| *rule == d.rule)
                        && d.severity == idemgen_lint::rule(d.rule).unwrap().severity
                })
                .map(|d| d.rule)
                .collect();
            assert!(
                result.operation_names.iter().any(|name| name == operation),
                "{spec}: no operation {operation}"
            );
            found.insert((spec.to_string(), operation.to_string()), rules);
        }
    }
    found
}

#[test]
fn heuristics_keep_the_precision_their_pages_state() {
    let Some(corpus) = full_corpus_dir() else {
        eprintln!(
            "SKIPPED: the labelled sample's specs are in the full corpus, not beside the project (set IDEMGEN_CORPUS)"
        );
        return;
    };
    let labels = labels();
    assert!(
        labels.len() >= 60,
        "only {} labelled findings",
        labels.len()
    );
    let found = findings(&corpus, &labels);
    let mut report = Vec::new();
    let mut below = Vec::new();
    for (rule, floor) in FLOORS {
        let (mut reported, mut right, mut expected) = (0, 0, 0);
        let mut wrong = Vec::new();
        for label in &labels {
            let fired = found[&(label.spec.clone(), label.operation.clone())].contains(rule);
            let should = label.expected == *rule;
            reported += usize::from(fired);
            right += usize::from(fired && should);
            expected += usize::from(should);
            if fired && !should {
                wrong.push(format!("{} {}", label.spec, label.operation));
            }
        }
        let precision = percent(right, reported);
        report.push(format!(
            "{rule}: precision {right}/{reported} = {precision} %, recall {right}/{expected} = {} %",
            percent(right, expected)
        ));
        if precision < *floor {
            below.push(format!(
                "{rule}: precision {precision} % is below its floor of {floor} %; reported but judged otherwise: {wrong:#?}"
            ));
        }
    }
    println!("{}", report.join("\n"));
    assert!(below.is_empty(), "{}", below.join("\n"));
}

fn percent(part: usize, whole: usize) -> u32 {
    // A rule that reports nothing in the sample is wrong nowhere.
    (part * 100)
        .checked_div(whole)
        .map_or(100, |share| share as u32)
}
