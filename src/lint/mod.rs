//! The lint engine: builds each operation's merged contract once, then runs
//! every rule over the document and its operations.

pub mod baseline;
pub mod context;
pub mod diagnostic;
pub mod rule;
pub mod rules;
pub mod sink;
pub mod suppress;

use std::collections::HashMap;

use crate::contract::model::Defaults;
use crate::contract::parse::{ContractError, parse_block};
use crate::contract::{Contract, Origin, RawContract};
use crate::spec::operations::{Operation, operations};
use crate::spec::{Value, Workspace};

use context::{ContractState, DocumentContext, OperationContext};
use diagnostic::{Diagnostic, Severity};
use rule::Rule;
use sink::Sink;

pub use rules::RULES;

/// How a run is configured: defaults for the contract and per-rule
/// severities (`None` turns a rule off).
#[derive(Debug, Clone, Default)]
pub struct LintOptions {
    pub defaults: Defaults,
    pub severities: HashMap<String, Option<Severity>>,
}

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.id == id)
}

/// Everything one document yields: its findings and operation count.
pub struct DocumentLint {
    pub diagnostics: Vec<Diagnostic>,
    pub operations: usize,
    /// Each operation's name (operationId, else `METHOD /path`), in order.
    pub operation_names: Vec<String>,
    /// Findings silenced by `x-idemgen-ignore`.
    pub suppressed: usize,
}

/// Each operation with its merged contract, read once for every consumer
/// (rules, the window review, code generation).
pub struct Analysis<'a> {
    pub document_contract: Option<RawContract>,
    pub document_errors: Vec<ContractError>,
    pub operations: Vec<Operation<'a>>,
    /// Parallel to `operations`: what each says and the problems in its block.
    pub states: Vec<(ContractState, Vec<ContractError>)>,
}

pub fn analyse<'a>(workspace: &'a Workspace, defaults: Defaults) -> Analysis<'a> {
    let mut document_errors = Vec::new();
    let document_contract =
        workspace.root().get("x-idempotency").and_then(|block| {
            if block.as_map().is_some() {
                Some(parse_block(block, "/x-idempotency", &mut document_errors))
            } else {
                document_errors.push(ContractError {
                origin: Origin { span: block.span, pointer: "/x-idempotency".into() },
                message: format!(
                    "the document-level `x-idempotency` must be a mapping of defaults, found {}",
                    block.kind()
                ),
                help: None,
            });
                None
            }
        });
    let empty = RawContract::default();
    let operations = operations(workspace);
    let states = operations
        .iter()
        .map(|operation| {
            contract_state(
                operation,
                document_contract.as_ref().unwrap_or(&empty),
                defaults,
            )
        })
        .collect();
    Analysis {
        document_contract,
        document_errors,
        operations,
        states,
    }
}

pub fn lint(workspace: &Workspace, options: &LintOptions) -> DocumentLint {
    let Analysis {
        document_contract,
        document_errors,
        operations,
        states,
    } = analyse(workspace, options.defaults);
    let mut diagnostics = Vec::new();
    for rule in RULES {
        let severity = match options.severities.get(rule.id) {
            Some(None) => continue,
            Some(Some(severity)) => *severity,
            None => rule.severity,
        };
        let mut sink = Sink {
            workspace,
            rule: rule.id,
            severity,
            operation: None,
            out: &mut diagnostics,
        };
        if let Some(check) = rule.check.document() {
            check(
                &DocumentContext {
                    workspace,
                    document_contract: document_contract.as_ref(),
                    contract_errors: &document_errors,
                },
                &mut sink,
            );
        }
        if let Some(check) = rule.check.operation() {
            {
                for (operation, (state, errors)) in operations.iter().zip(&states) {
                    sink.operation = Some(operation.name());
                    check(
                        &OperationContext {
                            workspace,
                            operation,
                            state,
                            contract_errors: errors,
                        },
                        &mut sink,
                    );
                }
            }
        }
    }
    let suppressed = suppress::apply(workspace, &operations, options, &mut diagnostics);
    diagnostics.sort_by(|a, b| {
        (
            &a.location.file,
            a.location.line,
            a.location.column,
            a.rule,
            &a.message,
        )
            .cmp(&(
                &b.location.file,
                b.location.line,
                b.location.column,
                b.rule,
                &b.message,
            ))
    });
    diagnostics.dedup();
    DocumentLint {
        diagnostics,
        operations: operations.len(),
        operation_names: operations.iter().map(Operation::name).collect(),
        suppressed,
    }
}

/// Reads an operation's `x-idempotency` and merges it over the document's.
fn contract_state(
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
    let contract = Contract::resolve(merged, origin, defaults);
    (ContractState::Present(Box::new(contract)), errors)
}
