//! Building fixes: where a finding's [`Fix`] comes from. [`edit`] turns
//! positions into text edits that keep the rest of a file byte for byte,
//! [`emit`] writes new YAML or JSON, and [`builders`] holds each fixable
//! rule's fix.

pub mod builders;
pub mod edit;
pub mod emit;

use idemgen_spec::contract::model::Dialect;

pub use idemgen_diagnostics::{Applicability, Edit, Fix};

/// A fix as a rule's builder makes it: what it does and its edits. How
/// safe it is, the rule states once, in its `declare_rule!` (`fix = Safe`
/// or `fix = Unsafe`); [`Rule::offered`](crate::rule::Rule::offered) takes
/// it from there, so no builder can say otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    pub title: String,
    pub edits: Vec<Edit>,
}

impl Offer {
    /// The fix, for a fix no rule offers (an editor's "ignore this
    /// finding" action); a rule's fix takes its rule's declaration through
    /// [`Rule::offered`](crate::rule::Rule::offered).
    pub fn into_fix(self, applicability: Applicability) -> Fix {
        Fix {
            title: self.title,
            applicability,
            edits: self.edits,
        }
    }
}

/// The values an unsafe fix writes into a new contract where the
/// document states none (`--timeout`, `--retries`, `--max-processing`,
/// `--dialect`). What is `None` here and not in the spec is not guessed:
/// the fix writes a placeholder ([`placeholder`]) that lints as an error
/// until a person writes the value.
///
/// [`placeholder`]: idemgen_spec::contract::placeholder
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FixDefaults {
    pub timeout_ms: Option<u64>,
    pub retries_ms: Option<Vec<u64>>,
    pub max_processing_ms: Option<u64>,
    pub dialect: Option<Dialect>,
}
