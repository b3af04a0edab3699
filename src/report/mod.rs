//! Reporters turn a [`Report`](crate::lint::diagnostic::Report) into text.
//! They know nothing about rules beyond the registry's metadata.

pub mod json;
pub mod pretty;
