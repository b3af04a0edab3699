//! idemgen: makes API idempotency a checked contract.
//!
//! Data flows one way: [`spec`] loads files into positioned trees,
//! [`contract`] reads an `x-idempotency` block into a typed model,
//! [`analysis`] merges each operation's contract once for every command,
//! [`lint`] runs the rules over it, and [`report`] shows the findings.
//! [`window`] holds the window math that rules and `idemgen window` share;
//! [`fix`] turns findings into text edits for `idemgen lint --fix`.

pub mod analysis;
pub mod cli;
pub mod codegen;
pub mod config;
pub mod contract;
pub mod fix;
pub mod lint;
pub mod lsp;
pub mod probe;
pub mod report;
pub mod spec;
pub mod window;
