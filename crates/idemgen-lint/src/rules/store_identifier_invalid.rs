//! # store-identifier-invalid
//!
//! **What it checks.** `store.table` is a plain SQL identifier: a letter or
//! `_`, then letters, digits or `_`, at most 63 characters, and not a
//! reserved word.
//!
//! **Why it matters.** The name goes into generated DDL and queries on
//! three databases. Quoting rules differ between them, so a name with
//! spaces, dots, quotes or a reserved word works on one and breaks (or
//! worse, injects SQL) on another.
//!
//! **Example fix.** `table: "idempotent record"` becomes
//! `table: idempotent_record`.
use super::prelude::*;

declare_rule!(
    "store_identifier_invalid.rs",
    "store-identifier-invalid",
    Error,
    "store.table is not a plain SQL identifier",
    Check::Operation(check)
);

const RESERVED: [&str; 16] = [
    "select",
    "insert",
    "update",
    "delete",
    "table",
    "from",
    "where",
    "order",
    "group",
    "user",
    "key",
    "index",
    "primary",
    "unique",
    "references",
    "check",
];

/// Whether `name` can be used unquoted on MySQL, PostgreSQL and SQLite.
pub fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_');
    starts_well
        && name.len() <= 63
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&name.to_ascii_lowercase().as_str())
}

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let table = &contract.table;
    if is_plain_identifier(&table.value) {
        return;
    }
    sink.report(
        &table.origin,
        format!(
            "{}: store table `{}` is not a plain SQL identifier",
            context.name(),
            table.value
        ),
    )
    .with_help("use letters, digits and `_`, starting with a letter, e.g. `idempotent_record`");
}
