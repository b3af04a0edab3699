//! What every layer says about a spec: findings ([`Diagnostic`]) with
//! their [`Severity`] and [`Location`], the [`Report`] of a run, and the
//! [`Fix`]es (text [`Edit`]s with an [`Applicability`]) that resolve them.
//!
//! It depends on nothing else in idemgen, so rules, reporters, the editor
//! integration and the CLI can all speak it without depending on each other.

mod diagnostic;
mod fix;

pub use diagnostic::{
    Diagnostic, LintedFile, LoadFailure, Location, Related, Report, RuleInfo, Severity,
};
pub use fix::{Applicability, Edit, Fix};
