//! OpenAPI 3.2 documents load and lint: `$self` is the base of `$ref`s,
//! `query` is a safe method, `additionalOperations` are unsafe custom
//! methods, and `in: querystring` parameters carry query keys.

use std::path::Path;

use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

use crate::support::workspace_root;

fn findings(path: &Path) -> Vec<(String, String)> {
    let workspace = Workspace::load(path).unwrap_or_else(|error| panic!("{}", error.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .map(|d| (d.rule.to_string(), d.operation.unwrap_or_default()))
        .collect()
}

fn fixture(name: &str) -> std::path::PathBuf {
    workspace_root().join("tests/fixtures/v3_2").join(name)
}

#[test]
fn a_3_2_document_lints_with_its_new_features() {
    let found = findings(&fixture("openapi.yaml"));
    let expected = [
        ("idempotency-on-safe-method", "searchPayments"),
        ("missing-idempotency", "copyPayment"),
    ];
    let mut found_sorted = found.clone();
    found_sorted.sort();
    assert_eq!(
        found_sorted,
        expected.map(|(rule, op)| (rule.to_string(), op.to_string())),
        "no ref-unresolved (`$self` resolves both refs locally), no key-param-missing (the query key is a querystring field)"
    );
}

#[test]
fn operations_include_query_and_custom_methods() {
    let workspace = Workspace::load(&fixture("openapi.yaml")).unwrap();
    let operations = idemgen_spec::operations::operations(&workspace);
    let methods: Vec<(String, bool, bool)> = operations
        .iter()
        .map(|op| (op.method.clone(), op.is_safe(), op.is_write()))
        .collect();
    assert_eq!(
        methods,
        [
            ("POST".to_string(), false, true),
            ("QUERY".to_string(), true, false),
            ("COPY".to_string(), false, true),
            ("PURGE".to_string(), false, true),
            ("POST".to_string(), false, true),
        ]
    );
    assert_eq!(
        operations[2].pointer,
        "/paths/~1payments/additionalOperations/COPY"
    );
}

#[test]
fn without_self_an_absolute_ref_stays_remote() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("openapi.yaml"))
        .unwrap()
        .replace("$self: https://api.example.com/v1/openapi.yaml\n", "");
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, text).unwrap();
    std::fs::copy(fixture("common.yaml"), dir.path().join("common.yaml")).unwrap();
    let found = findings(&path);
    assert!(
        found.iter().any(|(rule, _)| rule == "ref-unresolved"),
        "{found:?}"
    );
}

#[test]
fn query_and_additional_operations_are_not_operations_before_3_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(
        &path,
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    query: {responses: {'200': {description: ok}}}\n    additionalOperations:\n      COPY: {responses: {'200': {description: ok}}}\n",
    )
    .unwrap();
    let workspace = Workspace::load(&path).unwrap();
    assert!(idemgen_spec::operations::operations(&workspace).is_empty());
}
