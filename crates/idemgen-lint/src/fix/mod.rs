//! Building fixes: where a finding's [`Fix`] comes from. [`edit`] turns
//! positions into text edits that keep the rest of a file byte for byte,
//! [`emit`] writes new YAML or JSON, and [`builders`] holds each fixable
//! rule's fix.

pub mod builders;
pub mod edit;
pub mod emit;

use idemgen_spec::contract::model::Dialect;

pub use idemgen_diagnostics::{Applicability, Edit, Fix};

/// The values an unsafe fix writes into a new document-level
/// `x-idempotency` block when the document has none
/// (`--timeout`, `--retries`, `--max-processing`, `--dialect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixDefaults {
    pub timeout_ms: u64,
    pub retries_ms: Vec<u64>,
    pub max_processing_ms: u64,
    pub dialect: Option<Dialect>,
}

impl Default for FixDefaults {
    /// Conservative: a 30 s client timeout, three retries after 1 s, 2 s
    /// and 4 s, and 30 s of worst-case processing, so the window derived
    /// from them (2m14s) errs on the long side.
    fn default() -> Self {
        FixDefaults {
            timeout_ms: 30_000,
            retries_ms: vec![1_000, 2_000, 4_000],
            max_processing_ms: 30_000,
            dialect: None,
        }
    }
}
