//! The spec crate's integration tests, one binary: loading and parsing
//! through the crate's public API.

mod fingerprint_include;
mod hostile;
mod json_fast_path;
mod schema;
mod support;
