//! The lint crate's integration tests, one binary: each module drives the
//! engine, rules and fixes through the crate's public API.

mod applicability;
mod auth_responses;
mod claim_mode;
mod fix_keeps;
mod opaque_keys;
mod openapi_3_2;
mod refs;
mod retry_after;
mod robustness;
mod security;
mod support;
