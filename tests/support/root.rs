//! The repository's root directory, for the test targets that read its
//! files or run its tools.

use std::path::PathBuf;

/// The directory of the root `Cargo.toml`.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
