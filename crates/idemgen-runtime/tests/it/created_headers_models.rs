//! Types generated from the schemas of Created headers.
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateOrderCreatedBody {
    pub order_no: String,
}

/// The path, query and header parameters of `createOrder` (POST /orders).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateOrderParams {
    /// Header `Idempotency-Key`.
    #[serde(rename = "Idempotency-Key")]
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateOrderRequest {
    pub item: String,
}

/// The responses of `createOrder` (POST /orders).
#[derive(Debug, Clone, PartialEq)]
pub enum CreateOrderResponse {
    /// `201`: created
    Created {
        body: CreateOrderCreatedBody,
        /// Where the new order is.
        ///
        /// Header `Location`.
        location: String,
        /// Header `ETag`.
        etag: Option<String>,
        /// Header `X-Stock-Left`.
        x_stock_left: Option<i64>,
        /// Header `Set-Cookie`.
        set_cookie: Option<String>,
    },
    /// `400`: the key is missing or malformed
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `400` when the parameters or the body cannot be read or break the spec.
    /// - `400` when the idempotency key is missing or malformed.
    BadRequest,
    /// `409`: the key was used with another request
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `409` when the key was used with a different request, or by a first request that failed and may not be retried.
    Conflict,
    /// `422`: the body does not match its schema
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `422` when the body does not fit its schema.
    UnprocessableEntity,
    /// `429`: in progress
    ///
    /// The engine sends this status itself (return this variant only for reasons of your own):
    /// - `429` with `Retry-After`, while another request with the same key is in progress.
    /// - `429` with `Retry-After`, when the database is too busy to claim the key.
    TooManyRequests,
}

impl CreateOrderResponse {
    /// The status code this response is sent with.
    pub fn status(&self) -> u16 {
        match self {
            Self::Created { .. } => 201,
            Self::BadRequest => 400,
            Self::Conflict => 409,
            Self::UnprocessableEntity => 422,
            Self::TooManyRequests => 429,
        }
    }

    /// The media type of the body; `None` when the response has no content.
    pub fn content_type(&self) -> Option<&'static str> {
        match self {
            Self::Created { .. } => Some("application/json"),
            Self::BadRequest => None,
            Self::Conflict => None,
            Self::UnprocessableEntity => None,
            Self::TooManyRequests => None,
        }
    }

    /// The headers this response sets, each as sent: sent, stored with an
    /// idempotent answer and replayed with it (`Set-Cookie` and `Date` are
    /// sent but never replayed).
    pub fn headers(&self) -> Result<Vec<(&'static str, String)>, serde_json::Error> {
        let mut headers = Vec::new();
        if let Self::Created { location, etag, x_stock_left, set_cookie, .. } = self {
            headers.push(("Location", header_text(location)?));
            if let Some(value) = etag {
                headers.push(("ETag", header_text(value)?));
            }
            if let Some(value) = x_stock_left {
                headers.push(("X-Stock-Left", header_text(value)?));
            }
            if let Some(value) = set_cookie {
                headers.push(("Set-Cookie", header_text(value)?));
            }
        }
        Ok(headers)
    }

    /// The body as sent: JSON bodies are serialised once, here, so the
    /// bytes sent and the bytes stored for a replay are the same.
    pub fn into_body(self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            Self::Created { body, .. } => serde_json::to_vec(&body),
            Self::BadRequest => Ok(Vec::new()),
            Self::Conflict => Ok(Vec::new()),
            Self::UnprocessableEntity => Ok(Vec::new()),
            Self::TooManyRequests => Ok(Vec::new()),
        }
    }
}

/// A header's value as sent: a string as is, a number or boolean as JSON
/// writes it, an array's items joined by commas (OpenAPI's `simple`
/// style), anything else as JSON.
fn header_text(value: &impl serde::Serialize) -> Result<String, serde_json::Error> {
    fn text(value: serde_json::Value) -> String {
        match value {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        }
    }
    let text = match serde_json::to_value(value)? {
        serde_json::Value::Array(items) => {
            items.into_iter().map(text).collect::<Vec<_>>().join(",")
        }
        other => text(other),
    };
    Ok(text)
}
