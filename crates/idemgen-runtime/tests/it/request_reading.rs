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
