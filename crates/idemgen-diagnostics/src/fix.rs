//! Fixes: what `idemgen lint --fix` applies.
//!
//! A [`Fix`] is a titled list of text edits (file, byte range,
//! replacement) attached to the finding it resolves, with how safe it is
//! to apply unattended. Edits are computed from the loader's positions, so
//! everything outside their ranges (comments, key order, quoting,
//! indentation, flow or block style) stays byte for byte; an editor
//! integration can offer the same fixes as code actions.

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
