//! The `x-idempotency` contract: typed model, parsing, merging, defaults.

pub mod duration;
pub mod key_template;
pub mod model;
pub mod parse;
pub mod placeholder;
pub mod profile;
pub mod suggest;

pub use model::{Contract, Located, Origin, RawContract, ReplayMark};
