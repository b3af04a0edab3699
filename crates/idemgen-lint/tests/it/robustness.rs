//! Mutated, truncated and random inputs never panic or hang: they load and
//! lint, or end in a load error.

use std::path::Path;

use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;
use proptest::prelude::*;

use crate::support::workspace_root;

const EXAMPLE: &str = include_str!("../../../../examples/payment-callback/openapi.yaml");
const WRONG_TYPES: &str = include_str!("../../../../tests/fixtures/lint/wrong-types.yaml");

fn check(text: String) {
    let path = workspace_root().join("tests/fixtures/mutated.yaml");
    if let Ok(workspace) = Workspace::from_text(&path, "mutated.yaml".into(), text) {
        let result = lint(&workspace, &LintOptions::default());
        for diagnostic in result.diagnostics {
            assert!(diagnostic.location.line >= 1 && diagnostic.location.column >= 1);
            // A fix's edits stay inside the text and on character boundaries.
            let text = &workspace.files[0].source.text;
            for edit in diagnostic.fix.iter().flat_map(|fix| &fix.edits) {
                assert!(edit.start <= edit.end && edit.end <= text.len(), "{edit:?}");
                assert!(text.is_char_boundary(edit.start) && text.is_char_boundary(edit.end));
            }
        }
    }
}

fn json_twin() -> String {
    let workspace =
        Workspace::from_text(Path::new("x.yaml"), "x.yaml".into(), EXAMPLE.into()).unwrap();
    workspace.root().to_json().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn truncated_documents(cut in 0usize..EXAMPLE.len()) {
        let mut end = cut;
        while !EXAMPLE.is_char_boundary(end) { end -= 1; }
        check(EXAMPLE[..end].to_string());
    }

    #[test]
    fn byte_edits(edits in prop::collection::vec((0usize..4096, any::<char>()), 1..8), which in 0usize..3) {
        let source = match which { 0 => EXAMPLE.to_string(), 1 => WRONG_TYPES.to_string(), _ => json_twin() };
        let mut chars: Vec<char> = source.chars().collect();
        for (at, c) in edits {
            let at = at % chars.len();
            if c.is_ascii_digit() { chars.remove(at); } else { chars[at] = c; }
        }
        check(chars.into_iter().collect());
    }

    #[test]
    fn line_shuffles(swaps in prop::collection::vec((0usize..200, 0usize..200), 1..6)) {
        let mut lines: Vec<&str> = EXAMPLE.lines().collect();
        for (a, b) in swaps {
            let (a, b) = (a % lines.len(), b % lines.len());
            lines.swap(a, b);
        }
        check(lines.join("\n"));
    }

    #[test]
    fn random_contract_values(value in r#"[-a-z0-9:{}\[\],%. ]{0,40}"#, field in 0usize..12) {
        let fields = [
            "window", "profile", "key", "client", "server", "responses", "store", "monitoring",
            "fingerprint", "key: {format", "client: {retries", "responses: {in-progress",
        ];
        let field = fields[field];
        let closing = if field.contains('{') { "}" } else { "" };
        let block = format!("      x-idempotency:\n        {field}: {value}{closing}\n");
        let text = EXAMPLE.replacen("      x-idempotency:\n", &block, 1);
        check(text);
    }
}
