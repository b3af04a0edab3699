//! What the modules of `tests/it` share. The files here are also included
//! one by one (`#[path]`) by the benches, so each stands on its own:
//! `exactly_once.rs` brings `build.rs` (with `root.rs`), `skip.rs` and
//! `server_url.rs`, and this module re-exports them from there.

pub mod client;
pub mod corpus;
pub mod exactly_once;
pub mod fault_proxy;
pub mod lsp_client;
pub mod restart;
pub mod run;
pub mod tree;

pub use exactly_once::{build, server_url, skip};

pub use build::root;
