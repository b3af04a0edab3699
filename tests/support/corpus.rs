//! Where the corpus of published specs is.

use std::path::PathBuf;

use super::root;

/// The full corpus (`IDEMGEN_CORPUS`, else beside the project), when it is
/// there: a directory with its `MANIFEST.tsv`.
pub fn full_corpus_dir() -> Option<PathBuf> {
    [
        std::env::var_os("IDEMGEN_CORPUS").map(PathBuf::from),
        Some(root().join("../shared/corpus")),
    ]
    .into_iter()
    .flatten()
    .find(|dir| dir.join("MANIFEST.tsv").is_file())
}
