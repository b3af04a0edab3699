//! Every rule, one per file. Each file's `//!` header is the text
//! `idemgen rule ID` prints.

mod prelude {
    pub use crate::context::DocumentContext;
    pub use crate::rule::Check;
    pub(crate) use crate::rule::declare_rule;
    pub use crate::sink::Sink;
    pub use idemgen_spec::analysis::{ContractState, OperationContext};
    pub use idemgen_spec::contract::Origin;
    pub use idemgen_spec::contract::duration::format_ms;
}

pub mod auth_responses_undeclared;
pub mod conflict_undeclared;
pub mod contract_invalid;
pub mod duplicate_key;
pub mod failed_policy_undeclared;
pub mod fingerprint_misses_input;
pub mod idempotency_on_safe_method;
pub mod in_progress_not_retryable;
pub mod in_transaction_calls_out;
pub mod key_param_missing;
pub mod key_predictable;
pub mod key_prefix_missing;
pub mod key_schema_mismatch;
pub mod key_too_long;
pub mod missing_idempotency;
pub mod missing_key_undeclared;
pub mod naturally_idempotent_write;
pub mod ref_unresolved;
pub mod replay_alert_too_high;
pub mod replay_schema_missing;
pub mod replay_unauthenticated;
pub mod retry_after_missing;
pub mod retry_after_not_whole_seconds;
pub mod retry_after_out_of_range;
pub mod set_cookie_replayed;
pub mod store_cross_database;
pub mod store_identifier_invalid;
pub mod store_volatile;
pub mod undeclared_key_header;
pub mod unused_ignore;
pub mod window_below_retry_span;
pub mod window_missing;
pub mod window_too_short;

use super::rule::Rule;

/// All rules, in the order `idemgen rules` lists them.
pub const RULES: &[Rule] = &[
    contract_invalid::RULE,
    missing_idempotency::RULE,
    naturally_idempotent_write::RULE,
    idempotency_on_safe_method::RULE,
    undeclared_key_header::RULE,
    key_param_missing::RULE,
    key_prefix_missing::RULE,
    key_predictable::RULE,
    replay_unauthenticated::RULE,
    auth_responses_undeclared::RULE,
    key_too_long::RULE,
    key_schema_mismatch::RULE,
    window_missing::RULE,
    window_too_short::RULE,
    window_below_retry_span::RULE,
    in_progress_not_retryable::RULE,
    retry_after_missing::RULE,
    retry_after_out_of_range::RULE,
    retry_after_not_whole_seconds::RULE,
    fingerprint_misses_input::RULE,
    conflict_undeclared::RULE,
    failed_policy_undeclared::RULE,
    replay_schema_missing::RULE,
    missing_key_undeclared::RULE,
    store_volatile::RULE,
    store_cross_database::RULE,
    store_identifier_invalid::RULE,
    in_transaction_calls_out::RULE,
    replay_alert_too_high::RULE,
    ref_unresolved::RULE,
    duplicate_key::RULE,
    unused_ignore::RULE,
    set_cookie_replayed::RULE,
];
