//! `lint --fix --unsafe-fixes` brings real APIs under contract: Adyen
//! Checkout, Square, PayPal Checkout Orders v2 and Twilio (from the full
//! corpus when it is there; the committed subset's Adyen Transfers and
//! PayPal files otherwise). Afterwards no `undeclared-key-header` is left
//! but those that offered no fix (a read that takes a key, a key nested in
//! each entry of a bulk request or in a multipart part, which no one
//! request-level contract can name), no error is new but the placeholders
//! for the timing the spec does not state (and none once they are filled
//! in), everything the original said is still said, no key the API already
//! takes is made required or has its schema narrowed (no new or changed
//! `pattern` or `maxLength`), and a second run changes nothing.

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
        // The only new errors are the placeholders for the timing the
        // spec does not state: the fix guesses none, and the guessed
        // contract does not lint clean until a person fills them in.
        let new_errors: Vec<_> = errors(&after)
            .difference(&errors(&before))
            .cloned()
            .collect();
        let placeholders = placeholder_errors(&path);
        assert!(
            !placeholders.is_empty(),
            "{name}: no timing is stated, so placeholders are left"
        );
        let not_placeholders: Vec<_> = new_errors
            .iter()
            .filter(|finding| !placeholders.contains(finding))
            .collect();
        assert!(
            not_placeholders.is_empty(),
            "{name}: new errors {not_placeholders:?}"
        );
        let new_tree = Workspace::load(&path).unwrap().root().to_json();
        assert_eq!(
            tree::first_loss(&old_tree, &new_tree, ""),
            None,
            "{name}: the original content is intact"
        );
        assert!(tree::contains(&old_tree, &new_tree));
        let narrowed = narrowed_keys(&old_tree, &new_tree);
        assert!(
            narrowed.is_empty(),
            "{name}: existing keys made required or their schema narrowed: {narrowed:#?}"
        );

        let again = fix_document(&path, &LintOptions::default(), true).unwrap();
        assert!(
            again.files.is_empty(),
            "{name}: a second run changes nothing"
        );

        // A person fills the placeholders in: then no error is new.
        let text = std::fs::read_to_string(&path).unwrap();
        let filled = fill_placeholders(&text);
        assert_ne!(filled, text, "{name}");
        std::fs::write(&path, filled).unwrap();
        let new_errors: Vec<_> = errors(&findings(&path))
            .difference(&errors(&before))
            .cloned()
            .collect();
        assert!(
            new_errors.is_empty(),
            "{name}: new errors once filled in {new_errors:?}"
        );
    }
}

/// The `contract-invalid` errors about a placeholder a fix wrote.
fn placeholder_errors(path: &Path) -> BTreeSet<Finding> {
    let workspace = Workspace::load(path).unwrap_or_else(|e| panic!("{}", e.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.rule == "contract-invalid" && d.message.contains("still a placeholder"))
        .map(|d| (d.rule.to_string(), d.operation, d.pointer))
        .collect()
}

/// The text with every placeholder replaced by a value, as a person
/// would write them (the same in YAML and JSON: the fix quotes them).
pub(crate) fn fill_placeholders(text: &str) -> String {
    use idemgen_spec::contract::placeholder::text as placeholder;
    [
        ("client.timeout", "\"10s\""),
        ("client.retries", "[\"1s\", \"2s\"]"),
        ("server.max-processing", "\"20s\""),
        ("window", "\"24h\""),
    ]
    .iter()
    .fold(text.to_string(), |text, (field, value)| {
        text.replace(&format!("\"{}\"", placeholder(field)), value)
    })
}

/// Every key (a parameter or body property that carries one, as
/// `idemgen_spec::key_names` recognises them) of `old` that `new` made
/// required or whose schema it narrowed (a `pattern` or `maxLength` that
/// is new or changed), as JSON pointers into `new`.
fn narrowed_keys(old: &serde_json::Value, new: &serde_json::Value) -> Vec<String> {
    use idemgen_spec::key_names::is_idempotency_key;
    use serde_json::Value;
    fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
        let mut node = node;
        for _ in 0..16 {
            let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
                break;
            };
            let Some(target) = reference
                .strip_prefix('#')
                .and_then(|pointer| root.pointer(pointer))
            else {
                break;
            };
            node = target;
        }
        node
    }
    fn shape(root: &Value, schema: Option<&Value>) -> (Option<Value>, Option<Value>) {
        let schema = schema.map(|schema| resolve(root, schema));
        let field = |name| schema.and_then(|schema| schema.get(name)).cloned();
        (field("pattern"), field("maxLength"))
    }
    fn walk(roots: (&Value, &Value), nodes: (&Value, &Value), at: &str, out: &mut Vec<String>) {
        let ((old_root, new_root), (old, new)) = (roots, nodes);
        match (old, new) {
            (Value::Object(o), Value::Object(n)) => {
                let name = o.get("name").and_then(Value::as_str);
                let description = o.get("description").and_then(Value::as_str);
                let is_parameter = o.get("in").and_then(Value::as_str).is_some();
                if let (Some(name), true) = (name, is_parameter)
                    && is_idempotency_key(name, description)
                {
                    if o.get("required") != n.get("required") {
                        out.push(format!("{at}/required"));
                    }
                    if shape(old_root, o.get("schema")) != shape(new_root, n.get("schema")) {
                        out.push(format!("{at}/schema"));
                    }
                }
                if let (Some(Value::Object(old_properties)), Some(new_properties)) =
                    (o.get("properties"), n.get("properties"))
                {
                    let required = |schema: &serde_json::Map<String, Value>, name: &str| {
                        schema
                            .get("required")
                            .and_then(Value::as_array)
                            .is_some_and(|names| names.iter().any(|n| n == name))
                    };
                    for (name, field) in old_properties {
                        let description = resolve(old_root, field)
                            .get("description")
                            .and_then(Value::as_str);
                        if !is_idempotency_key(name, description) {
                            continue;
                        }
                        if required(o, name) != required(n, name) {
                            out.push(format!("{at}/required ({name})"));
                        }
                        if shape(old_root, Some(field)) != shape(new_root, new_properties.get(name))
                        {
                            out.push(format!("{at}/properties/{name}"));
                        }
                    }
                }
                for (key, value) in o {
                    if let Some(n) = n.get(key) {
                        let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                        walk(roots, (value, n), &here, out);
                    }
                }
            }
            (Value::Array(o), Value::Array(n)) => {
                for (index, (o, n)) in o.iter().zip(n).enumerate() {
                    walk(roots, (o, n), &format!("{at}/{index}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk((old, new), (old, new), "", &mut out);
    out
}
