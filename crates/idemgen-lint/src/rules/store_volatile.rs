//! # store-volatile
//!
//! **What it checks.** `store.engine` is a database, not a cache: Redis,
//! Valkey, KeyDB, Dragonfly, Memcached, Hazelcast or anything called a
//! cache is an error.
//!
//! **Why it matters.** Idempotency records must commit in the same local
//! transaction as the business write. A cache cannot join that
//! transaction, and it loses keys on failover or eviction: the retry that
//! arrives next finds no key, and the money moves twice. A cache may sit in
//! front of the record table, never instead of it.
//!
//! **Example fix.** `store: {engine: redis}` becomes
//! `store: {dialect: mysql}` with the record table in the business database.
use super::prelude::*;

declare_rule!(
    "store_volatile.rs",
    "store-volatile",
    Error,
    "store.engine is Redis, Memcached or another cache",
    Check::Operation(check)
);

const VOLATILE: [&str; 9] = [
    "redis",
    "valkey",
    "keydb",
    "dragonfly",
    "memcache",
    "hazelcast",
    "ignite",
    "cache",
    "memory",
];

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let Some(engine) = &contract.engine else {
        return;
    };
    let lower = engine.value.to_ascii_lowercase();
    if !VOLATILE.iter().any(|volatile| lower.contains(volatile)) {
        return;
    }
    sink.report(
        &engine.origin,
        format!(
            "{}: store engine `{}` is a cache: it cannot commit with the business write and loses keys on failover",
            context.name(),
            engine.value
        ),
    )
    .with_help("keep the records in the business database (`store.dialect: mysql | postgres | sqlite`)");
}
