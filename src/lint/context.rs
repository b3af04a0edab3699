//! What document-level rules see. Operation-level rules see an
//! [`OperationContext`](crate::analysis::OperationContext).

use crate::contract::RawContract;
use crate::contract::parse::ContractError;
use crate::spec::Workspace;

/// The document as a whole, for document-level rules.
pub struct DocumentContext<'a> {
    pub workspace: &'a Workspace,
    /// The document-level `x-idempotency` block, if any.
    pub document_contract: Option<&'a RawContract>,
    /// Problems in the document-level block.
    pub contract_errors: &'a [ContractError],
}
