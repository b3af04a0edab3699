//! Every operation of the spec with its resolved `x-idempotency` contract
//! and the security schemes that may call it.
#![cfg_attr(rustfmt, rustfmt::skip)]

use idemgen_runtime::{ClaimMode, Contract, Fingerprint, Operation, Security, Source};

/// The spec's `components.securitySchemes` that operations require;
/// `src/auth.rs` verifies their credentials.
pub mod schemes {
    use idemgen_runtime::{ApiKeyIn, Scheme, SchemeKind};

    /// `providerSignature`: apiKey in the header 'X-Signature'.
    pub const PROVIDER_SIGNATURE: Scheme = Scheme {
        name: "providerSignature",
        kind: SchemeKind::ApiKey {
            location: ApiKeyIn::Header,
            name: "X-Signature",
        },
        realm: "Payment callbacks",
    };
}

/// Every operation, in the spec's order.
pub static ALL: &[&Operation] = &[&ON_PAY_CALLBACK, &GET_ORDER];

// onPayCallback: POST /callbacks/pay
//
// Payment-succeeded callback from the payment provider
//
// Marks the order `order_no` as paid by transaction `txn_id`, exactly
// once per `Idempotency-Key`.
//
// - First request with a key: the key is claimed atomically (one
//   `INSERT ... ON CONFLICT DO NOTHING` on a unique index, never
//   "SELECT, then INSERT"), the order is updated, and the answer is
//   stored with the key in the same transaction.
// - A copy that arrives while the first attempt is still running gets
//   `429` with `Retry-After: 1`; it is never told "200" before the
//   payment is recorded.
// - A copy that arrives after success gets the stored `200` answer
//   again, byte for byte, with `Idempotent-Replayed: true`.
// - If the first attempt failed, a retry with the same key may claim
//   it again and run the payment (only one of several concurrent
//   retries wins).
// - The same key with a different body is `409`: nothing is
//   overwritten.
//
// Keys are remembered for 18 s: twice the longest time from the first
// attempt to the end of the last retry.
pub static ON_PAY_CALLBACK: Operation = Operation::idempotent(
        "onPayCallback",
        "on_pay_callback",
        Contract {
            key: Source::Header("Idempotency-Key"),
            key_format: "pay:{date}:{uuid}",
            key_pattern: "^pay:([0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])):([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12})$",
            key_fields: &[],
            max_key_len: 128,
            key_required: true,
            missing_key_status: 400,
            scope: &[],
            window_ms: 18000,
            lease_ms: 3000,
            client_timeout_ms: 5000,
            retry_after_secs: 1,
            in_progress_status: 429,
            conflict_status: 409,
            retry_failed: true,
            fingerprint: Fingerprint {
                method: true,
                path: true,
                query: false,
                headers: &[],
                body: true,
                canonical_json: true,
            },
            replayed_header: Some("Idempotent-Replayed"),
            claim: ClaimMode::Committed,
        },
    )
    .secured(Security {
        // providerSignature
        alternatives: &[&[schemes::PROVIDER_SIGNATURE]],
    });

// getOrder: GET /orders/{order_no}
//
// Read an order
//
// A safe, read-only request that needs no idempotency key; repeat it
// as often as you like. Signed like a callback (`X-Signature` over
// `<t>.` and the empty body): an order's payment state and the
// provider's transaction id are not for whoever guesses an order
// number.
pub static GET_ORDER: Operation = Operation::plain("getOrder", "get_order")
    .secured(Security {
        // providerSignature
        alternatives: &[&[schemes::PROVIDER_SIGNATURE]],
    });
