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
