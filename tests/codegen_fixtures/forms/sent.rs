//! Real requests to the generated `checkout` operation: values sent in
//! each parameter style and a bracketed form arrive typed in the business
//! code (which echoes them); values that do not parse are 400 problems.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use forms::App;

async fn send(path: &str, trace: Option<&str>, form: &str) -> (StatusCode, Value) {
    let file = std::env::temp_dir().join(format!("forms-test-{}.db", uuid::Uuid::new_v4()));
    let app = App::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("connect and migrate");
    let mut request =
        Request::post(path).header("content-type", "application/x-www-form-urlencoded");
    if let Some(trace) = trace {
        request = request.header("x-trace", trace);
    }
    let answer = app
        .router()
        .oneshot(request.body(Body::from(form.to_string())).unwrap())
        .await
        .unwrap();
    let status = answer.status();
    let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX)
        .await
        .unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

const PATH: &str = "/checkout/1,2/.a.b/;point=x,5,y,north";
const FORM: &str = "amount=1999&metadata[order_id]=6735&items[0][price]=p_1&items[0][quantity]=2\
                    &items%5B1%5D%5Bprice%5D=p+2&expand[]=customer&expand[]=invoice";

#[tokio::test]
async fn every_style_and_the_form_arrive_typed() {
    let query = "?created[gt]=1650000000&created[lt]=1700000000&tags=x|y&sizes=10%2020\
                 &colors=red,blue&page=1&page=2";
    let (status, echoed) = send(&format!("{PATH}{query}"), Some("id=7,span=abc"), FORM).await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(
        echoed,
        json!({
            "body": {
                "amount": 1999,
                "metadata": {"order_id": "6735"},
                "items": [{"price": "p_1", "quantity": 2}, {"price": "p 2"}],
                "expand": ["customer", "invoice"],
            },
            "params": {
                "ids": [1, 2],
                "labels": ["a", "b"],
                "point": {"x": 5, "y": "north"},
                "created": {"gt": 1650000000, "lt": 1700000000},
                "tags": ["x", "y"],
                "sizes": [10, 20],
                "colors": ["red", "blue"],
                "page": [1, 2],
                "X-Trace": {"id": 7, "span": "abc"},
            },
        })
    );
}

#[tokio::test]
async fn a_deep_object_parameter_also_takes_its_scalar() {
    let (status, echoed) = send(&format!("{PATH}?created=1650000000"), None, "amount=1").await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed["params"]["created"], json!(1650000000));
    assert_eq!(echoed["body"], json!({"amount": 1}));
}

#[tokio::test]
async fn values_that_do_not_parse_are_400_problems_naming_them() {
    for (path, form, names) in [
        (PATH.to_string(), "amount=many", "amount"),
        (
            PATH.to_string(),
            "amount=1&items[0][quantity]=2",
            "`items[0]`: missing field `price`",
        ),
        (PATH.to_string(), "amount=1&amount=2", "amount"),
        (format!("{PATH}?created[gt]=soon"), "amount=1", "created"),
        (format!("{PATH}?sizes=10%20big"), "amount=1", "sizes"),
        (
            "/checkout/1,x/.a.b/;point=x,5".to_string(),
            "amount=1",
            "ids",
        ),
        (
            "/checkout/1/a.b/;point=x,5".to_string(),
            "amount=1",
            "labels",
        ),
        ("/checkout/1/.a/point=x,5".to_string(), "amount=1", "point"),
    ] {
        let (status, problem) = send(&path, None, form).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {form}: {problem}");
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(names), "{path} {form}: {problem}");
    }
}
