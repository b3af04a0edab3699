//! # key-predictable
//!
//! **What it checks.** `key.format` contains an unpredictable segment
//! (`{uuid}`, `{ulid}`, or `{random:N}` with N ≥ 16). A format made only of
//! `{date}`, `{timestamp}`, `{seq}` (and `{random:N}` with fewer than 16
//! bytes, which can be brute-forced) is an error. A format whose only
//! other source is `{field:…}` (a value from the request body, such as the
//! provider's transaction id) is a warning unless `key.scope` namespaces it
//! (`principal` or any other source counts). A format whose randomness
//! is an `{opaque}` or `{sf-string}` key the client chose is always a
//! warning: the server cannot check how much entropy a client-chosen key
//! carries (`1` and a UUID are both valid opaque keys).
//!
//! **Why it matters.** Two clients that build the same guessable key (two
//! orders in the same millisecond, a counter reset after a deploy) collide:
//! the second payment is answered with the first one's stored response and
//! never runs. Guessable keys also let one caller replay another's answer.
//!
//! **Example fix.** `format: "pay:{date}:{seq}"` becomes
//! `format: "pay:{date}:{uuid}"`; for keys taken from business data, scope
//! them by the verified caller: `scope: [principal]` (a caller-set scope
//! such as `header:X-Merchant-Id` keeps honest clients apart, but see
//! `replay-unauthenticated`). For `{opaque}` and `{sf-string}` keys, tell
//! clients to send a UUID v4 (or 128 random bits), and `scope:
//! [principal]` keeps one careless client's keys from colliding with
//! another's.
use super::prelude::*;
use idemgen_spec::contract::key_template::Predictability;

declare_rule!(
    "key_predictable.rs",
    "key-predictable",
    Error,
    "key.format has only guessable segments ({date}, {timestamp}, {seq}, {random:N<16})",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(key) = context.key() else {
        return;
    };
    let format = &key.format.value.source;
    match key.format.value.predictability() {
        Predictability::Unpredictable => {}
        Predictability::Guessable => {
            sink.report(
                &key.format.origin,
                format!(
                    "{}: key format `{format}` is guessable: no segment carries enough randomness",
                    context.name()
                ),
            )
            .with_help(
                "add `{uuid}`, `{ulid}` or `{random:16}`; `{date}`, `{timestamp}`, `{seq}` and `{random:N}` under 16 bytes can be guessed",
            );
        }
        Predictability::FieldDerived if key.scope.is_empty() => {
            sink.report_milder(
                &key.format.origin,
                format!(
                    "{}: key format `{format}` comes only from request fields and has no `key.scope`",
                    context.name()
                ),
            )
            .with_help("namespace it by the verified caller, `scope: [principal]`, or add `{uuid}`");
        }
        Predictability::FieldDerived => {}
        Predictability::ClientChosen => {
            sink.report_milder(
                &key.format.origin,
                format!(
                    "{}: key format `{format}` is chosen by the client: the server cannot check that it is unpredictable",
                    context.name()
                ),
            )
            .with_help(
                "a key the client chooses (`{opaque}`, `{sf-string}`) is any ASCII text, so `1` passes as well as a UUID; document that clients must send a UUID v4 (or 128 random bits), and scope keys by the verified caller, `scope: [principal]`, so one client's weak keys cannot collide with another's",
            );
        }
    }
}
