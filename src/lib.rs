//! idemgen: makes API idempotency a checked contract.
//!
//! Data flows one way: [`spec`] loads files into positioned trees,
//! [`contract`] reads each operation's `x-idempotency` into a typed model,
//! [`lint`] runs the rules over it, and [`report`] shows the findings.
//! [`window`] holds the window math that rules and `idemgen window` share.

pub mod cli;
pub mod codegen;
pub mod config;
pub mod contract;
pub mod lint;
pub mod probe;
pub mod report;
pub mod spec;
pub mod window;
