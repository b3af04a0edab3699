//! A dangling `$ref` is an error where a path or webhook reaches it, and a
//! warning in a component nothing uses.

use idemgen_diagnostics::Severity;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

use crate::support::workspace_root;

#[test]
fn a_dangling_ref_no_path_reaches_is_a_warning() {
    let path = workspace_root().join("tests/fixtures/lint/unreachable-ref.yaml");
    let workspace = Workspace::load(&path).unwrap_or_else(|error| panic!("{}", error.message));
    let found: Vec<(String, Severity)> = lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.rule == "ref-unresolved")
        .map(|d| (d.pointer, d.severity))
        .collect();
    assert_eq!(
        found,
        [
            (
                "/components/schemas/Amount/properties/currency/$ref".to_string(),
                Severity::Error
            ),
            (
                "/components/schemas/Legacy/properties/old/$ref".to_string(),
                Severity::Warning
            ),
        ]
    );
}
