//! What every test module here shares.

use std::path::PathBuf;

/// The workspace root: the examples, schemas and fixtures the tests read
/// live there, shared with the binary's tests.
pub fn workspace_root() -> PathBuf {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .parent()
        .and_then(|crates| crates.parent())
        .expect("a crate lives in <workspace>/crates/<name>")
        .to_path_buf()
}

#[path = "../../../../tests/support/tree.rs"]
mod tree;

#[path = "../../../../tests/support/fix_keeps.rs"]
mod fix_keeps;

/// Runs `lint --fix --unsafe-fixes` on `text` (as `name`) and checks what
/// the `fix` fuzz target checks (`tests/support/fix_keeps.rs`). Returns the
/// fixed text (the original when nothing changed).
pub fn fix_keeping_the_rest(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    fix_keeps::fix_keeping_the_rest(&dir.path().join(name), text)
        .unwrap_or_else(|| panic!("the original does not load:\n{text}"))
}

/// Checks that `text` (as `name`) does not load because one of its keys is
/// a list or a mapping: such an input never reaches the fix engine.
pub fn refused_for_a_key_that_is_not_a_string(name: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    match idemgen_spec::Workspace::load(&path) {
        Ok(_) => panic!("a key that is a list or a mapping loaded:\n{text}"),
        Err(error) => assert!(
            error
                .message
                .contains("keys in an OpenAPI document are strings"),
            "{}",
            error.message
        ),
    }
}

/// `idemgen lint`'s findings on `text`, read as `spec.yaml`.
pub fn findings(text: &str) -> Vec<idemgen_diagnostics::Diagnostic> {
    let workspace = idemgen_spec::Workspace::from_text(
        std::path::Path::new("/nonexistent/spec.yaml"),
        "spec.yaml".into(),
        text.to_string(),
    )
    .unwrap_or_else(|error| panic!("{}: {text}", error.message));
    idemgen_lint::lint(&workspace, &idemgen_lint::LintOptions::default()).diagnostics
}
