//! The one analysis every command shares: each operation of a document
//! with its merged `x-idempotency` contract, read once. Lint rules, the
//! window review, `ddl`, `gen` and `probe` all start from [`analyse`].

pub mod context;
pub mod request_inputs;
pub mod state;

use crate::Workspace;
use crate::contract::model::Defaults;
use crate::contract::parse::{ContractError, parse_block};
use crate::contract::{Contract, Origin, RawContract};
use crate::operations::{Operation, operations};

pub use context::OperationContext;
pub use request_inputs::{InputLocation, RequestInput};
pub use state::ContractState;

/// A document's operations with their merged contracts.
pub struct Analysis<'a> {
    /// The document-level `x-idempotency` block, if it is a mapping.
    pub document_contract: Option<RawContract>,
    /// Problems in the document-level block.
    pub document_errors: Vec<ContractError>,
    pub operations: Vec<AnalysedOperation<'a>>,
}

/// One operation, what its contract says and the problems in its block.
pub struct AnalysedOperation<'a> {
    pub operation: Operation<'a>,
    pub state: ContractState,
    /// Problems in the operation's own block, and required fields missing
    /// after merging.
    pub errors: Vec<ContractError>,
}

impl<'a> AnalysedOperation<'a> {
    /// The merged contract, when the operation has a readable one.
    pub fn contract(&self) -> Option<&Contract> {
        self.state.contract()
    }

    /// The operation with the spec look-ups, for rules and the generator.
    pub fn context<'s>(&'s self, workspace: &'s Workspace) -> OperationContext<'s> {
        OperationContext {
            workspace,
            operation: &self.operation,
            state: &self.state,
            contract_errors: &self.errors,
        }
    }

    /// Whether `--op` names it: its operationId (or generated name), or
    /// `METHOD /path`.
    pub fn is_named(&self, wanted: &str) -> bool {
        let operation = &self.operation;
        wanted == operation.name() || wanted == format!("{} {}", operation.method, operation.path)
    }
}

impl Analysis<'_> {
    /// The operations that have a readable contract, with it.
    pub fn contracted(&self) -> impl Iterator<Item = (&AnalysedOperation<'_>, &Contract)> {
        self.operations
            .iter()
            .filter_map(|analysed| Some((analysed, analysed.contract()?)))
    }

    /// The operations with a readable contract that `--op` names (`wanted`),
    /// or all of them when it names none.
    pub fn selected<'s>(
        &'s self,
        wanted: &'s [String],
    ) -> impl Iterator<Item = (&'s AnalysedOperation<'s>, &'s Contract)> {
        self.contracted().filter(move |(analysed, _)| {
            wanted.is_empty() || wanted.iter().any(|name| analysed.is_named(name))
        })
    }

    /// Every readable contract, in document order.
    pub fn contracts(&self) -> Vec<&Contract> {
        self.contracted().map(|(_, contract)| contract).collect()
    }
}

/// Reads every operation's contract, merged over the document's and
/// completed with `defaults`.
pub fn analyse(workspace: &Workspace, defaults: Defaults) -> Analysis<'_> {
    let mut document_errors = Vec::new();
    let document_contract = workspace.root().get("x-idempotency").and_then(|block| {
        if block.as_map().is_some() {
            Some(parse_block(block, "/x-idempotency", &mut document_errors))
        } else {
            document_errors.push(ContractError {
                origin: Origin {
                    span: block.span,
                    pointer: "/x-idempotency".into(),
                },
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
    let operations = operations(workspace)
        .into_iter()
        .map(|operation| {
            let (state, errors) = state::read(
                &operation,
                document_contract.as_ref().unwrap_or(&empty),
                defaults,
            );
            AnalysedOperation {
                operation,
                state,
                errors,
            }
        })
        .collect();
    Analysis {
        document_contract,
        document_errors,
        operations,
    }
}
