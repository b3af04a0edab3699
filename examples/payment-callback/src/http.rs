//! What a business function receives ([`Request`]) and returns ([`Reply`]).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest request body read, and largest response body stored (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// One decoded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The request path, e.g. `/orders/42`.
    pub path: String,
    /// Path parameters by name, e.g. `order_no` for `/orders/{order_no}`.
    pub path_params: HashMap<String, String>,
    pub query: HashMap<String, String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Request {
    /// The JSON body as `T`; on failure a `400` problem to return as is.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Reply> {
        serde_json::from_slice(&self.body).map_err(|error| {
            Reply::problem(
                StatusCode::BAD_REQUEST,
                "invalid request body",
                &error.to_string(),
            )
        })
    }

    pub fn path_param(&self, name: &str) -> Option<&str> {
        self.path_params.get(name).map(String::as_str)
    }
}

/// The answer of one request: what the client gets, and what an idempotent
/// operation stores and replays (status, content type and body only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON body.
    pub fn json(status: StatusCode, value: &impl Serialize) -> Reply {
        Reply {
            status,
            content_type: "application/json".into(),
            body: serde_json::to_vec(value).expect("serialising to memory cannot fail"),
        }
    }

    /// An RFC 9457 problem (`application/problem+json`).
    pub fn problem(status: StatusCode, title: &str, detail: &str) -> Reply {
        Reply {
            status,
            content_type: "application/problem+json".into(),
            body: serde_json::to_vec(&serde_json::json!({
                "type": "about:blank",
                "title": title,
                "status": status.as_u16(),
                "detail": detail,
            }))
            .expect("serialising to memory cannot fail"),
        }
    }

    /// The answer of a business function nobody has written yet.
    pub fn not_implemented(file: &str) -> Reply {
        Reply::problem(
            StatusCode::NOT_IMPLEMENTED,
            "not implemented",
            &format!("write this operation's business logic in {file}"),
        )
    }

    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body).into_response();
        if let Ok(value) = HeaderValue::from_str(&self.content_type) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        response
    }
}
