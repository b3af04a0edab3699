//! Fixes: what `idemgen lint --fix` applies.
//!
//! A [`Fix`] is a titled list of text edits (file, byte range,
//! replacement) attached to the finding it resolves, with how safe it is
//! to apply unattended. Edits are computed from the loader's positions, so
//! everything outside their ranges (comments, key order, quoting,
//! indentation, flow or block style) stays byte for byte; an editor
//! integration can offer the same fixes as code actions.

pub mod apply;
pub mod diff;
pub mod edit;
pub mod emit;
pub mod rules;

use crate::contract::model::Dialect;

/// Whether a fix keeps the API's meaning (safe) or guesses at it (unsafe:
/// applied only with `--unsafe-fixes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Applicability {
    Safe,
    Unsafe,
}

impl Applicability {
    pub fn as_str(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

/// Replace the bytes `start..end` of `file` (a display name, as in
/// diagnostics) with `replacement`; `start == end` inserts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Edit {
    pub file: String,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

impl Edit {
    /// Whether two edits touch the same text (two different insertions at
    /// one point conflict too: their order would be a guess).
    pub fn conflicts_with(&self, other: &Edit) -> bool {
        self.file == other.file
            && self != other
            && self.start <= other.end
            && other.start <= self.end
            && !(self.start < self.end
                && other.start < other.end
                && (self.end == other.start || other.end == self.start))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fix {
    /// What the fix does, in the imperative ("Declare response 429 ...").
    pub title: String,
    pub applicability: Applicability,
    pub edits: Vec<Edit>,
}

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
