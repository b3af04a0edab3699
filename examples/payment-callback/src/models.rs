//! Types generated from the schemas of Payment callbacks.
//!
//! `idemgen gen` rewrites this file: change the spec, not this file.
//! Names follow the API's names and doc comments its Markdown, so
//! the clippy lints about those are allowed here.
#![cfg_attr(rustfmt, rustfmt::skip)]
#![allow(
    clippy::enum_variant_names,
    clippy::large_enum_variant,
    clippy::doc_lazy_continuation
)]
use serde::{Deserialize, Serialize};

/// The path, query and header parameters of `getOrder` (GET /orders/{order_no}).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetOrderParams {
    /// The merchant's order number.
    ///
    /// Path parameter `order_no`.
    pub order_no: String,
}

/// The responses of `getOrder` (GET /orders/{order_no}).
#[derive(Debug, Clone, PartialEq)]
pub enum GetOrderResponse {
    /// `200`: The order and its payment state.
    Ok(Order),
    /// `400`: The order number breaks its schema (longer than 64 characters).
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `400` when the parameters cannot be read or break the spec.
    BadRequest(Problem),
    /// `401`: The `X-Signature` header is missing, malformed, outside the server's tolerance, or not the HMAC-SHA256 of its timestamp and the (empty) body under the shared secret.
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `401` when the request carries no credential `src/auth.rs` accepts.
    Unauthorized(Problem),
    /// `404`: No order with this number.
    NotFound(Problem),
}

impl GetOrderResponse {
    /// The status code this response is sent with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Ok(_) => 200,
            Self::BadRequest(_) => 400,
            Self::Unauthorized(_) => 401,
            Self::NotFound(_) => 404,
        }
    }

    /// The media type of the body; `None` when the response has no content.
    pub fn content_type(&self) -> Option<&'static str> {
        match self {
            Self::Ok(_) => Some("application/json"),
            Self::BadRequest(_) => Some("application/problem+json"),
            Self::Unauthorized(_) => Some("application/problem+json"),
            Self::NotFound(_) => Some("application/problem+json"),
        }
    }

    /// The body as sent: JSON bodies are serialised once, here, so the
    /// bytes sent and the bytes stored for a replay are the same.
    pub fn into_body(self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            Self::Ok(body) => serde_json::to_vec(&body),
            Self::BadRequest(body) => serde_json::to_vec(&body),
            Self::Unauthorized(body) => serde_json::to_vec(&body),
            Self::NotFound(body) => serde_json::to_vec(&body),
        }
    }
}

/// The path, query and header parameters of `onPayCallback` (POST /callbacks/pay).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnPayCallbackParams {
    /// Identifies one payment event across the provider's retries:
    /// `pay:` + the payment date (`yyyyMMdd`) + `:` + a random UUID v4,
    /// e.g. `pay:20240615:0f8fad5b-d9cb-469f-a165-70867728950e`. The
    /// provider must send the same key for every retry of one event and
    /// a new one for every new event. Absent, malformed or longer than
    /// 128 characters: `400`.
    ///
    /// Header `Idempotency-Key`.
    #[serde(rename = "Idempotency-Key")]
    pub idempotency_key: String,
}

/// The responses of `onPayCallback` (POST /callbacks/pay).
#[derive(Debug, Clone, PartialEq)]
pub enum OnPayCallbackResponse {
    /// `200`: The order is paid. A retry with the same key after success gets
    /// this same answer replayed from the idempotency record (same
    /// status, content type and body), marked with
    /// `Idempotent-Replayed: true`.
    Ok(PaymentResult),
    /// `400`: The `Idempotency-Key` header is missing, does not match `pay:{yyyyMMdd}:{uuid}`, or is longer than 128 characters. Nothing was recorded; send the request again with a valid key.
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `400` when the parameters or the body cannot be read or break the spec.
    /// - `400` when the idempotency key is missing or malformed.
    BadRequest(Problem),
    /// `401`: The `X-Signature` header is missing, malformed, outside the server's tolerance (300 s by default), or not the HMAC-SHA256 of its timestamp and the body under the shared secret. Nothing was processed or recorded, and the key is still unused.
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `401` when the request carries no credential `src/auth.rs` accepts.
    Unauthorized(Problem),
    /// `404`: No order `order_no` exists. The failure is recorded; a retry with the same key may try again.
    NotFound(Problem),
    /// `409`: This `Idempotency-Key` was already used with a different request body. The first request's result stands; nothing was overwritten. Use a new key for a new payment event.
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `409` when the key was used with a different request, or by a first request that failed and may not be retried.
    Conflict(Problem),
    /// `413`: The request body is larger than the limit (1 MiB); it was neither processed nor recorded.
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `413` when the body is larger than the service accepts.
    PayloadTooLarge(Problem),
    /// `429`: A request with this `Idempotency-Key` is still being processed. Nothing was done for this copy; retry after `Retry-After` seconds to get the first request's result.
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `429` with `Retry-After`, while another request with the same key is in progress.
    /// - `429` with `Retry-After`, when the database is too busy to claim the key.
    TooManyRequests(Problem),
}

impl OnPayCallbackResponse {
    /// The status code this response is sent with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Ok(_) => 200,
            Self::BadRequest(_) => 400,
            Self::Unauthorized(_) => 401,
            Self::NotFound(_) => 404,
            Self::Conflict(_) => 409,
            Self::PayloadTooLarge(_) => 413,
            Self::TooManyRequests(_) => 429,
        }
    }

    /// The media type of the body; `None` when the response has no content.
    pub fn content_type(&self) -> Option<&'static str> {
        match self {
            Self::Ok(_) => Some("application/json"),
            Self::BadRequest(_) => Some("application/problem+json"),
            Self::Unauthorized(_) => Some("application/problem+json"),
            Self::NotFound(_) => Some("application/problem+json"),
            Self::Conflict(_) => Some("application/problem+json"),
            Self::PayloadTooLarge(_) => Some("application/problem+json"),
            Self::TooManyRequests(_) => Some("application/problem+json"),
        }
    }

    /// The body as sent: JSON bodies are serialised once, here, so the
    /// bytes sent and the bytes stored for a replay are the same.
    pub fn into_body(self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            Self::Ok(body) => serde_json::to_vec(&body),
            Self::BadRequest(body) => serde_json::to_vec(&body),
            Self::Unauthorized(body) => serde_json::to_vec(&body),
            Self::NotFound(body) => serde_json::to_vec(&body),
            Self::Conflict(body) => serde_json::to_vec(&body),
            Self::PayloadTooLarge(body) => serde_json::to_vec(&body),
            Self::TooManyRequests(body) => serde_json::to_vec(&body),
        }
    }
}

/// An order and its payment state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub order_no: String,
    /// Amount due, in the currency's smallest unit.
    pub amount: i64,
    pub status: OrderStatus,
    /// Transaction that paid the order, once paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_id: Option<String>,
    /// When the order was paid, once paid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Order {
    /// A `Order` of its required fields; the others are absent.
    pub fn new(order_no: String, amount: i64, status: OrderStatus) -> Self {
        Order {
            order_no,
            amount,
            status,
            txn_id: None,
            paid_at: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    Unpaid,
    Paid,
}

impl std::fmt::Display for OrderStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            match *self {
                OrderStatus::Unpaid => "unpaid",
                OrderStatus::Paid => "paid",
            },
        )
    }
}

impl std::str::FromStr for OrderStatus {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "unpaid" => Ok(OrderStatus::Unpaid),
            "paid" => Ok(OrderStatus::Paid),
            other => Err(format!("`{other}` is not a value of OrderStatus")),
        }
    }
}

/// Payment notification sent by the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PayCallback {
    /// The provider's transaction id.
    pub txn_id: String,
    /// The merchant's order number being paid.
    pub order_no: String,
    /// Amount paid, in the currency's smallest unit (e.g. cents).
    pub amount: i64,
    /// Payment date, `yyyyMMdd`; the same date appears in the key.
    pub date: String,
}

/// The answer stored with the key and replayed to every retry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PaymentResult {
    /// The order that was paid.
    pub order_no: String,
    /// The provider's transaction id that paid it.
    pub txn_id: String,
    /// Amount paid, in the currency's smallest unit.
    pub amount: i64,
    /// The order's payment state after this callback.
    pub status: PaymentResultStatus,
    /// When the payment was recorded (first attempt, not the replay).
    pub paid_at: chrono::DateTime<chrono::Utc>,
}

/// The order's payment state after this callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentResultStatus {
    Paid,
}

impl std::fmt::Display for PaymentResultStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            match *self {
                PaymentResultStatus::Paid => "paid",
            },
        )
    }
}

impl std::str::FromStr for PaymentResultStatus {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value {
            "paid" => Ok(PaymentResultStatus::Paid),
            other => Err(format!("`{other}` is not a value of PaymentResultStatus")),
        }
    }
}

/// RFC 9457 problem details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// Format: `uri-reference`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
