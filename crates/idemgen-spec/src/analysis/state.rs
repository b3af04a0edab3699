//! What an operation says about idempotency: its `x-idempotency` read and
//! merged over the document's defaults.

use crate::Value;
use crate::contract::model::{Defaults, KeyLocation};
use crate::contract::parse::{ContractError, parse_block};
use crate::contract::{Contract, Origin, RawContract};
use crate::operations::Operation;

/// What an operation says about idempotency.
#[derive(Debug)]
pub enum ContractState {
    /// No `x-idempotency` on the operation.
    Absent,
    /// `x-idempotency: false`.
    OptedOut(Origin),
    /// A block that could not be read at all (reported as `contract-invalid`).
    Unreadable(Origin),
    Present(Box<Contract>),
}

impl ContractState {
    /// The merged contract, when there is one.
    pub fn contract(&self) -> Option<&Contract> {
        match self {
            ContractState::Present(contract) => Some(contract),
            _ => None,
        }
    }
}

/// Reads an operation's `x-idempotency` and merges it over the document's.
pub fn read(
    operation: &Operation<'_>,
    document: &RawContract,
    defaults: Defaults,
) -> (ContractState, Vec<ContractError>) {
    let Some(block) = operation.node.get("x-idempotency") else {
        return (ContractState::Absent, Vec::new());
    };
    let pointer = format!("{}/x-idempotency", operation.pointer);
    let origin = Origin {
        span: block.span,
        pointer: pointer.clone(),
    };
    let mut errors = Vec::new();
    let own = match &block.value {
        Value::Bool(false) => return (ContractState::OptedOut(origin), errors),
        Value::Bool(true) => RawContract::default(),
        Value::Map(_) => parse_block(block, &pointer, &mut errors),
        _ => {
            errors.push(ContractError {
                origin: origin.clone(),
                message: format!(
                    "`x-idempotency` must be a mapping (or `false` to opt out), found {}",
                    block.kind()
                ),
                help: Some(
                    "write the contract as a mapping, e.g. `x-idempotency: {key: …, window: 18s}`"
                        .into(),
                ),
            });
            return (ContractState::Unreadable(origin), errors);
        }
    };
    let merged = own.merged_over(document);
    let mut missing: Vec<&str> = Vec::new();
    for (present, field) in [
        (merged.key_in.is_some(), "key.in"),
        (merged.key_name.is_some(), "key.name"),
        (merged.key_format.is_some(), "key.format"),
    ] {
        if !present && !merged.invalid.contains(&field) {
            missing.push(field);
        }
    }
    if !missing.is_empty() {
        errors.push(ContractError {
            origin: origin.clone(),
            message: format!(
                "missing required field{} {}",
                if missing.len() > 1 { "s" } else { "" },
                missing.iter().map(|field| format!("`{field}`")).collect::<Vec<_>>().join(", ")
            ),
            help: Some("say where the client sends the key and what it looks like, e.g. `key: {in: header, name: Idempotency-Key, format: \"pay:{uuid}\"}`".into()),
        });
    }
    if let (Some(location), Some(name)) = (&merged.key_in, &merged.key_name) {
        if let Some((message, help)) = key_name_problem(location.value, &name.value) {
            errors.push(ContractError {
                origin: name.origin.clone(),
                message,
                help: Some(help),
            });
        }
    }
    let contract = Contract::resolve(merged, origin, defaults);
    (ContractState::Present(Box::new(contract)), errors)
}

/// What is wrong with a key's `name`: empty, or for a header not a field
/// name (RFC 9110 `token`: no blank, colon, line break or non-ASCII), which
/// no client can send and a generated service could not even name.
fn key_name_problem(location: KeyLocation, name: &str) -> Option<(String, String)> {
    if name.is_empty() {
        return Some((
            "`key.name` is empty".into(),
            "name the header, query parameter or body field that carries the key, e.g. `name: Idempotency-Key`".into(),
        ));
    }
    let bad = crate::http_token::first_non_token_char(name)?;
    (location == KeyLocation::Header).then(|| {
        (
            format!("`key.name` {name:?} is not an HTTP header name: it holds {bad:?}"),
            "a header name is letters, digits and `!#$%&'*+-.^_`|~` only (RFC 9110 token), e.g. `Idempotency-Key`".into(),
        )
    })
}
