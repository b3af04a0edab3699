//! Reading a request's parts before any engine step: what cannot be read
//! is refused with a problem that says what was wrong.

use crate::support::body_text;
use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::Value;
use tower::ServiceExt;

async fn read(request: axum::extract::Request) -> Response {
    match idemgen_runtime::Request::read(request).await {
        Ok(read) => read
            .path_param("order_no")
            .unwrap_or("none")
            .to_string()
            .into_response(),
        Err(refused) => refused,
    }
}

async fn get_order(uri: &str) -> (StatusCode, String) {
    let router = Router::new().route("/orders/{order_no}", get(read));
    let response = router
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    (response.status(), body_text(response).await)
}

/// A path segment that is not UTF-8 once percent-decoded (`%ff`) was read
/// as no parameter at all, and the service then said the parameter was
/// missing. It is refused, naming the parameter.
#[tokio::test]
async fn a_path_parameter_that_is_not_utf8_is_refused_by_name() {
    assert_eq!(
        get_order("/orders/ORD%2D7").await,
        (StatusCode::OK, "ORD-7".to_string())
    );
    let (status, body) = get_order("/orders/%ff%fe").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let problem: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(problem["type"], "urn:idemgen:problem:invalid-parameters");
    assert_eq!(
        problem["detail"],
        "path parameter `order_no` is not UTF-8 text once percent-decoded"
    );
}

/// The query value as the runtime reads it, or the refusal.
async fn read_query(uri: &str) -> (StatusCode, String) {
    async fn tenant(request: axum::extract::Request) -> Response {
        match idemgen_runtime::Request::read(request).await {
            Ok(read) => {
                let pairs = read.query_pairs.clone();
                let last = read.query.get("tenant").cloned().unwrap_or_default();
                format!("{pairs:?} {last}").into_response()
            }
            Err(refused) => refused,
        }
    }
    let router = Router::new().route("/notes", get(tenant));
    let response = router
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    (response.status(), body_text(response).await)
}

/// `?tenant=%ff` and `?tenant=%fe` were both read as `"\u{fffd}"`: two
/// tenants (or keys, or fingerprinted queries) sent apart became one, and
/// the second was replayed the first one's answer. A query that is not
/// UTF-8 once percent-decoded is refused, as a path segment is.
#[tokio::test]
async fn a_query_value_that_is_not_utf8_is_refused_not_merged_with_another() {
    assert_eq!(
        read_query("/notes?tenant=caf%C3%A9+1").await,
        (
            StatusCode::OK,
            r#"[("tenant", "café 1")] café 1"#.to_string()
        )
    );
    for uri in ["/notes?tenant=%ff", "/notes?tenant=%fe", "/notes?a=1&%ff=x"] {
        let (status, body) = read_query(uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        let problem: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(problem["type"], "urn:idemgen:problem:invalid-parameters");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("is not UTF-8 text once percent-decoded"),
            "{uri}: {body}"
        );
    }
    // A literal U+FFFD, sent percent-encoded, is text like any other.
    assert_eq!(
        read_query("/notes?tenant=%EF%BF%BD").await,
        (
            StatusCode::OK,
            "[(\"tenant\", \"\u{fffd}\")] \u{fffd}".to_string()
        )
    );
}

/// A body whose headers say it is not JSON as sent (another media type, a
/// charset other than UTF-8, a content coding) was read as UTF-8 JSON all
/// the same: `charset=utf-16` or `Content-Encoding: gzip` over plain JSON
/// bytes went through as if neither were said. Such a body is refused
/// with 415 before anything is claimed; JSON under any `…+json` type, or
/// with no `Content-Type` at all, is read.
#[test]
fn a_body_declared_as_something_other_than_json_is_415() {
    #[derive(serde::Deserialize)]
    struct Pay {
        #[allow(dead_code)]
        amount: u32,
    }
    let request = |headers: &[(&str, &str)]| {
        let mut request = idemgen_runtime::Request::new(axum::http::Method::POST, "/pay");
        request.body = r#"{"amount": 5}"#.into();
        for (name, value) in headers {
            request.headers.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        request
    };
    for headers in [
        &[][..],
        &[("content-type", "application/json")],
        &[("content-type", "Application/JSON; charset=\"UTF-8\"")],
        &[("content-type", "application/merge-patch+json")],
        // ASP.NET's generated specs declare `text/json` beside
        // `application/json`; a client may send either.
        &[("content-type", "text/json")],
        &[
            ("content-type", "application/json"),
            ("content-encoding", "identity"),
        ],
        // An empty list element is no coding (RFC 9110, section 5.6.1).
        &[
            ("content-type", "application/json"),
            ("content-encoding", ""),
        ],
    ] {
        assert!(request(headers).body_as::<Pay>().is_ok(), "{headers:?}");
    }
    for headers in [
        &[("content-type", "text/plain")][..],
        &[("content-type", "application/x-www-form-urlencoded")],
        &[("content-type", "application/json; charset=utf-16")],
        &[("content-type", "application/jsonx")],
        &[("content-type", "/json")],
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
    ] {
        let refused = request(headers).body_as_or::<Pay>(400).err().unwrap();
        assert_eq!(
            refused.status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{headers:?}"
        );
        assert_eq!(refused.content_type, "application/problem+json");
        let problem: Value = serde_json::from_slice(&refused.body).unwrap();
        assert_eq!(
            problem["type"], "urn:idemgen:problem:unsupported-media-type",
            "{headers:?}"
        );
    }
}
