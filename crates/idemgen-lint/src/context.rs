//! What document-level rules see. Operation-level rules see an
//! [`OperationContext`](idemgen_spec::analysis::OperationContext).

use idemgen_spec::Workspace;
use idemgen_spec::contract::RawContract;
use idemgen_spec::contract::parse::ContractError;

/// The document as a whole, for document-level rules.
pub struct DocumentContext<'a> {
    pub workspace: &'a Workspace,
    /// The document-level `x-idempotency` block, if any.
    pub document_contract: Option<&'a RawContract>,
    /// Problems in the document-level block.
    pub contract_errors: &'a [ContractError],
}
