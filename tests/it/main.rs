//! The `idemgen` package's integration tests, one binary: a module per
//! area (the CLI, formats, fixes, the book, generated code, the
//! exactly-once suites, ...), all sharing `tests/support`. One binary links
//! the dependencies once instead of once per file; run one area with a
//! filter, e.g. `cargo test --test it cli::`.

#[path = "../support/mod.rs"]
mod support;

mod alerts;
mod baseline;
mod book;
mod cli;
mod client;
mod codegen;
mod config;
mod corpus;
mod corpus_fix;
mod exactly_once;
mod faults;
mod fix;
mod formats;
mod formats_ci;
mod forms;
mod galera;
mod gen_cargo_toml;
mod gen_layout;
mod gen_report;
mod generated;
mod help;
mod lsp;
mod lsp_neovim;
mod multipart;
mod nemesis;
mod overlay;
mod pg_crash;
mod pg_failover;
mod placeholders;
mod precision;
mod probe;
mod suppress;
mod tidy;
mod types;
mod types_compile;
mod types_corpus;
mod types_names;
