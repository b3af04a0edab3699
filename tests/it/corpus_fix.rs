//! `lint --fix --unsafe-fixes` brings real APIs under contract: Adyen
//! Checkout, Square, PayPal Checkout Orders v2 and Twilio (from the full
//! corpus when it is there; the committed subset's Adyen Transfers and
//! PayPal files otherwise). Afterwards no `undeclared-key-header` is left
//! but those that offered no fix (a read that takes a key, a key nested in
//! each entry of a bulk request or in a multipart part, which no one
//! request-level contract can name), no error is new, everything the original said is still said, and a
//! second run changes nothing.

use crate::support::root;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use idemgen_diagnostics::Severity;
use idemgen_lint::fix_loop::fix_document;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

use crate::support::corpus::full_corpus_dir;
use crate::support::tree;

const FULL: [&str; 4] = [
    "adyen-CheckoutService-v71.yaml",
    "square-api.json",
    "paypal-checkout_orders_v2.json",
    "twilio-twilio_api_v2010.yaml",
];

const SUBSET: [&str; 3] = [
    "adyen-TransferService-v4.yaml",
    "paypal-checkout_orders_v1.json",
    "paypal-catalogs_products_v1.json",
];

/// The spec at `index` of the list in use; `None` past its end.
fn spec(index: usize) -> Option<PathBuf> {
    let full = full_corpus_dir()
        .map(|dir| dir.join("specs"))
        .filter(|full| FULL.iter().all(|file| full.join(file).is_file()));
    if let Some(full) = full {
        FULL.get(index).map(|file| full.join(file))
    } else {
        eprintln!("the full corpus is not there: fixing the committed subset");
        let subset = root().join("tests/corpus/specs");
        SUBSET.get(index).map(|file| subset.join(file))
    }
}

type Finding = (String, Option<String>, String);

fn findings(path: &Path) -> Vec<(Finding, Severity)> {
    let workspace = Workspace::load(path).unwrap_or_else(|e| panic!("{}", e.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .map(|d| ((d.rule.to_string(), d.operation, d.pointer), d.severity))
        .collect()
}

/// The `undeclared-key-header` findings of the original that come with
/// no fix.
fn unfixable_key_findings(path: &Path) -> BTreeSet<Finding> {
    let workspace = Workspace::load(path).unwrap_or_else(|e| panic!("{}", e.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.rule == "undeclared-key-header" && d.fix.is_none())
        .map(|d| (d.rule.to_string(), d.operation, d.pointer))
        .collect()
}

fn errors(found: &[(Finding, Severity)]) -> BTreeSet<Finding> {
    found
        .iter()
        .filter(|(_, severity)| *severity == Severity::Error)
        .map(|(finding, _)| finding.clone())
        .collect()
}

// One test per spec, so the large ones are fixed in parallel.
#[test]
fn adyen_checkout_or_transfers() {
    check(0);
}

#[test]
fn square_or_paypal_checkout_v1() {
    check(1);
}

#[test]
fn paypal_checkout_v2_or_catalogs() {
    check(2);
}

#[test]
fn twilio() {
    check(3);
}

fn check(index: usize) {
    if let Some(spec) = spec(index) {
        let name = spec.file_name().unwrap().to_string_lossy().to_string();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(&name);
        std::fs::copy(&spec, &path).unwrap();
        let before = findings(&path);
        assert!(
            before
                .iter()
                .any(|((rule, ..), _)| rule == "undeclared-key-header"),
            "{name}: its vendor key is recognised"
        );
        let old_tree = Workspace::load(&path).unwrap().root().to_json();

        let outcome = fix_document(&path, &LintOptions::default(), true).unwrap();
        assert!(!outcome.unfinished, "{name}: fixes converge");
        assert_eq!(outcome.files.len(), 1, "{name}");
        std::fs::write(&path, &outcome.files[0].after).unwrap();

        let after = findings(&path);
        let unfixable = unfixable_key_findings(&spec);
        let left: Vec<_> = after
            .iter()
            .filter(|((rule, ..), _)| rule == "undeclared-key-header")
            .filter(|(finding, _)| !unfixable.contains(finding))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
        let new_errors: Vec<_> = errors(&after)
            .difference(&errors(&before))
            .cloned()
            .collect();
        assert!(new_errors.is_empty(), "{name}: new errors {new_errors:?}");
        let new_tree = Workspace::load(&path).unwrap().root().to_json();
        assert_eq!(
            tree::first_loss(&old_tree, &new_tree, ""),
            None,
            "{name}: the original content is intact"
        );
        assert!(tree::contains(&old_tree, &new_tree));

        let again = fix_document(&path, &LintOptions::default(), true).unwrap();
        assert!(
            again.files.is_empty(),
            "{name}: a second run changes nothing"
        );
    }
}
