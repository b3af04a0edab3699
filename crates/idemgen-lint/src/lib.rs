//! The lint engine and its rules: each operation's merged contract is built
//! once, then every rule runs over the document and its operations.
//!
//! Modules depend one way: [`rules`] build their fixes through [`fix`];
//! [`engine`] runs the rules; [`fix_loop`] (what `lint --fix` does) runs the
//! engine again after each round of edits, and [`diff`] shows what it changed.

pub mod baseline;
pub mod config;
pub mod context;
pub mod diff;
mod engine;
pub mod fix;
pub mod fix_loop;
pub mod fix_overlay;
pub mod rule;
mod rules;
pub mod sink;
pub mod suppress;
pub mod write_shape;

pub use engine::{DocumentLint, LintOptions, lint, rule};
pub use rules::RULES;
