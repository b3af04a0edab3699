//! # key-prefix-missing
//!
//! **What it checks.** `key.format` starts with a literal business prefix:
//! a name that starts with a letter, then `:` (for example `pay:`).
//!
//! **Why it matters.** Keys from different businesses share one record
//! table. Without a prefix, a refund and a payment that happen to carry
//! the same UUID or the same provider transaction id collide, and one of
//! them is answered with the other's stored response. A prefix also makes
//! the records readable when someone investigates an incident.
//!
//! Under the `ietf-draft` and `stripe` profiles a format of just
//! `{opaque}` or `{sf-string}` is exempt: there the client chooses the whole key (a UUID, a
//! nanoid), as those protocols define it, so no server-side prefix can be
//! required of it; every key is namespaced by its operation (and `scope`)
//! in the record table, so a payment and a refund still cannot collide.
//! Under `retry-after` the rule stays: the server shapes its keys.
//!
//! **Example fix.** `format: "{uuid}"` becomes `format: "pay:{uuid}"`.
use super::prelude::*;
use idemgen_spec::contract::profile::Profile;

declare_rule!(
    "key_prefix_missing.rs",
    "key-prefix-missing",
    Error,
    "key.format does not start with a literal business prefix such as `pay:`",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(key) = context.key() else {
        return;
    };
    if key.format.value.has_business_prefix() {
        return;
    }
    let client_chosen = context.contract().is_some_and(|contract| {
        matches!(contract.profile.value, Profile::IetfDraft | Profile::Stripe)
    });
    if client_chosen && key.format.value.is_opaque() {
        return;
    }
    sink.report(
        &key.format.origin,
        format!(
            "{}: key format `{}` has no business prefix",
            context.name(),
            key.format.value.source
        ),
    )
    .with_help(format!(
        "start it with a name and a colon, e.g. `pay:{}`",
        key.format.value.source
    ));
}
