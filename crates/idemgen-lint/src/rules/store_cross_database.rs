//! # store-cross-database
//!
//! **What it checks.** `store.business-database` (the database the
//! operation's business tables live in) equals `store.database` (the one
//! that holds the record table).
//!
//! **Why it matters.** Marking the record "completed" and writing the
//! business rows must commit together. Across two databases that needs a
//! distributed transaction; without one, a crash between the two commits
//! leaves a payment with no record (paid again on retry) or a record with
//! no payment (never paid).
//!
//! **Example fix.** Put the record table in the business database:
//! `store: {database: payments, business-database: payments}`.
use super::prelude::*;

declare_rule!(
    "store_cross_database.rs",
    "store-cross-database",
    Error,
    "store.business-database differs from store.database",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let (Some(database), Some(business)) = (&contract.database, &contract.business_database) else {
        return;
    };
    if database.value == business.value {
        return;
    }
    sink.report(
        &business.origin,
        format!(
            "{}: records live in `{}` but the business write goes to `{}`: they cannot commit in one transaction",
            context.name(),
            database.value,
            business.value
        ),
    )
    .with_help(format!("create the record table in `{}`", business.value));
}
