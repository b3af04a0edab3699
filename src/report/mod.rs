//! Reporters turn a [`Report`](crate::lint::diagnostic::Report) into text.
//! They know nothing about rules beyond the registry's metadata.

pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod pretty;
pub mod sarif;
