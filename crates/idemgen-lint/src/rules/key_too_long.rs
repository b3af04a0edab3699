//! # key-too-long
//!
//! **What it checks.** The longest key `key.format` admits fits in
//! `key.max-length` (a `{field:…}` segment counts its schema's `maxLength`,
//! and is unbounded without one), and `key.max-length` fits in the unique
//! index of `store.dialect`.
//!
//! **Why it matters.** Servers refuse keys longer than `max-length`, so a
//! template that can produce longer keys makes valid requests fail. A
//! column wider than the index can hold either fails the migration or, on
//! engines that truncate, makes distinct keys collide.
//!
//! **Example fix.** `format: "pay:{date}:{uuid}"` needs 49 characters:
//! raise `max-length` to 64, or give `{field:/txn_id}` a `maxLength`.
use super::prelude::*;
use idemgen_spec::contract::key_template::Segment;

declare_rule!(
    "key_too_long.rs",
    "key-too-long",
    Error,
    "the key template's longest key exceeds key.max-length, or max-length exceeds the dialect's index",
    Check::Operation(check)
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let Some(contract) = context.contract() else {
        return;
    };
    let Some(key) = &contract.key else { return };
    let max_length = key.max_length.value;
    let field_len = |pointer: &str| context.max_length(context.request_field(pointer)?);
    match key.format.value.max_len(field_len) {
        Some(longest) if longest as u64 > max_length => {
            sink.report(
                &key.format.origin,
                format!(
                    "{}: key format `{}` produces keys up to {longest} characters, more than max-length {max_length}",
                    context.name(),
                    key.format.value.source
                ),
            )
            .with_help(format!("raise `key.max-length` to at least {longest}, or shorten the template"));
        }
        Some(_) => {}
        None => {
            let unbounded: Vec<String> = key
                .format
                .value
                .segments()
                .filter_map(|segment| match segment {
                    Segment::Field(pointer) if field_len(pointer).is_none() => {
                        Some(format!("`{{field:{pointer}}}`"))
                    }
                    _ => None,
                })
                .collect();
            sink.report(
                &key.format.origin,
                format!(
                    "{}: key format `{}` has no upper length ({} has no maxLength), so keys can exceed max-length {max_length}",
                    context.name(),
                    key.format.value.source,
                    unbounded.join(", ")
                ),
            )
            .with_help("give each field the key is built from a `maxLength` in the request schema");
        }
    }
    let index_limit = contract.dialect.value.max_key_bytes();
    if max_length > index_limit {
        sink.report(
            &key.max_length.origin,
            format!(
                "{}: max-length {max_length} exceeds the {index_limit} bytes a {} unique index can hold",
                context.name(),
                contract.dialect.value.name()
            ),
        )
        .with_help(format!("lower `key.max-length` to {index_limit} or less"));
    }
}
