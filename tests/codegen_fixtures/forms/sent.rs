//! Real requests to the generated `checkout` operation: values sent in
//! each parameter style and a bracketed form arrive typed in the business
//! code (which echoes them); values that do not parse are 400 problems;
//! the generated client writes every style as the service reads it. A
//! form value that breaks the spec's keywords (`payByForm`) is a 422
//! problem naming its pointer and the keyword, and claims no key.

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

/// Stripe's nested `deepObject` parameters: arrays of objects and
/// objects of objects arrive as their types, brackets percent-encoded or
/// not, and `tax_rates=` (empty) as the union's empty text.
#[tokio::test]
async fn nested_deep_objects_arrive_typed() {
    let query = "?subscription_items[0][price]=p_1&subscription_items[0][quantity]=2\
                 &subscription_items[0][tax_rates][]=txr_1&subscription_items%5B1%5D%5Bprice%5D=p_2\
                 &subscription_items[1][tax_rates]=&automatic_tax[enabled]=true\
                 &automatic_tax[liability][type]=self&default_tax_rates[0]=txr_2\
                 &default_tax_rates[1]=txr_3";
    let (status, echoed) = send(&format!("{PATH}{query}"), None, "amount=1").await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(
        echoed["params"]["subscription_items"],
        json!([
            {"price": "p_1", "quantity": 2, "tax_rates": ["txr_1"]},
            {"price": "p_2", "tax_rates": ""},
        ])
    );
    assert_eq!(
        echoed["params"]["automatic_tax"],
        json!({"enabled": true, "liability": {"type": "self"}})
    );
    assert_eq!(echoed["params"]["default_tax_rates"], json!(["txr_2", "txr_3"]));
    let cleared = format!("{PATH}?default_tax_rates=");
    let (status, echoed) = send(&cleared, None, "amount=1").await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed["params"]["default_tax_rates"], json!(""));
}

#[tokio::test]
async fn a_deep_object_parameter_also_takes_its_scalar() {
    let (status, echoed) = send(&format!("{PATH}?created=1650000000"), None, "amount=1").await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed["params"]["created"], json!(1650000000));
    assert_eq!(echoed["body"], json!({"amount": 1}));
}

#[tokio::test]
async fn a_time_or_a_word_is_read_as_either() {
    for (sent, read) in [("1700000000", json!(1700000000)), ("now", json!("now"))] {
        let path = format!("{PATH}?trial_end={sent}");
        let (status, echoed) = send(&path, None, "amount=1").await;
        assert_eq!(status, StatusCode::OK, "{echoed}");
        assert_eq!(echoed["params"]["trial_end"], read, "{echoed}");
    }
    let (status, echoed) = send(&format!("{PATH}?trial_end=soon"), None, "amount=1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{echoed}");
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
        (
            format!("{PATH}?trial_end=1&trial_end=2"),
            "amount=1",
            "`trial_end` was sent more than once",
        ),
        (
            format!("{PATH}?subscription_items[0][price]=p&subscription_items[0][quantity]=two"),
            "amount=1",
            "`subscription_items[0][quantity]` must be an integer, not `two`",
        ),
        (
            format!("{PATH}?subscription_items[0][quantity]=2"),
            "amount=1",
            "`subscription_items[0]`: missing field `price`",
        ),
        (
            format!("{PATH}?automatic_tax[enabled]=true&automatic_tax[liability][type]=nobody"),
            "amount=1",
            "`automatic_tax.liability.type`: unknown variant `nobody`",
        ),
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

/// The service on a database file of its own, over HTTP: its address and
/// the file.
async fn serve_over_http() -> (std::net::SocketAddr, std::path::PathBuf) {
    let file = std::env::temp_dir().join(format!("forms-test-{}.db", uuid::Uuid::new_v4()));
    let app = App::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("connect and migrate");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = app.router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (address, file)
}

/// The generated client, over HTTP: each parameter is written in its
/// declared style and the form as `serde_qs` writes it, and the service
/// reads back the very values sent.
#[tokio::test]
async fn the_generated_client_writes_every_style_the_service_reads() {
    use forms_client::models;
    let (address, file) = serve_over_http().await;
    let client = forms_client::Client::new(&format!("http://{address}")).unwrap();
    let mut params = models::CheckoutParams::new(
        vec![1, 2],
        vec!["a b".into(), "c".into()],
        models::CheckoutParamsPoint {
            x: Some(5),
            y: Some("north".into()),
        },
    );
    params.created = Some(models::CheckoutParamsCreated::Variant2(
        models::CheckoutParamsCreatedVariant2 {
            gt: Some(1650000000),
            lt: Some(1700000000),
        },
    ));
    params.subscription_items = Some(vec![
        models::CheckoutParamsSubscriptionItemsItem {
            price: "p 1".into(),
            quantity: Some(2),
            tax_rates: Some(models::CheckoutParamsSubscriptionItemsItemTaxRates::StringList(
                vec!["txr_1".into(), "txr_2".into()],
            )),
        },
        models::CheckoutParamsSubscriptionItemsItem::new("p_2".into()),
    ]);
    let mut automatic_tax = models::CheckoutParamsAutomaticTax::new(true);
    automatic_tax.liability = Some(models::CheckoutParamsAutomaticTaxLiability {
        r#type: models::CheckoutParamsAutomaticTaxLiabilityType::Account,
        account: Some("acct_1".into()),
    });
    params.automatic_tax = Some(automatic_tax);
    params.tags = Some(vec!["x".into(), "y z".into()]);
    params.sizes = Some(vec![10, 20]);
    params.colors = Some(vec!["red".into(), "blue".into()]);
    params.page = Some(vec![1, 2]);
    params.x_trace = Some(models::CheckoutParamsXTrace {
        id: Some(7),
        span: Some("abc".into()),
    });
    let mut body = models::CheckoutRequest::new(1999);
    body.metadata = Some([("order_id".to_string(), "6735".to_string())].into());
    body.items = Some(vec![models::CheckoutRequestItemsItem {
        price: "p 1".into(),
        quantity: Some(2),
    }]);
    body.expand = Some(vec!["customer".into(), "invoice".into()]);
    let call = |params: models::CheckoutParams| {
        let (client, body) = (client.clone(), body.clone());
        async move {
            let answer = client.checkout(&params, &body).await.expect("an answer");
            match answer.response {
                models::CheckoutResponse::Ok(echoed) => echoed,
                other => panic!("not a 200: {other:?}"),
            }
        }
    };
    let echoed = call(params.clone()).await;
    assert_eq!(
        echoed,
        json!({
            "body": {
                "amount": 1999,
                "metadata": {"order_id": "6735"},
                "items": [{"price": "p 1", "quantity": 2}],
                "expand": ["customer", "invoice"],
            },
            "params": {
                "ids": [1, 2],
                "labels": ["a b", "c"],
                "point": {"x": 5, "y": "north"},
                "created": {"gt": 1650000000, "lt": 1700000000},
                "subscription_items": [
                    {"price": "p 1", "quantity": 2, "tax_rates": ["txr_1", "txr_2"]},
                    {"price": "p_2"},
                ],
                "automatic_tax": {
                    "enabled": true,
                    "liability": {"type": "account", "account": "acct_1"},
                },
                "tags": ["x", "y z"],
                "sizes": [10, 20],
                "colors": ["red", "blue"],
                "page": [1, 2],
                "X-Trace": {"id": 7, "span": "abc"},
            },
        })
    );
    // The deep object's scalar alternative is sent under its own name.
    params.created = Some(models::CheckoutParamsCreated::Integer(1650000000));
    let echoed = call(params).await;
    assert_eq!(echoed["params"]["created"], json!(1650000000));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

#[tokio::test]
async fn a_union_takes_its_number_variant_from_the_form_text() {
    for (form, delay_days, percent) in [
        ("amount=1&delay_days=7&percent=25.5", json!(7), json!(25.5)),
        ("amount=1&delay_days=minimum&percent=0.5", json!("minimum"), json!(0.5)),
        // An optional field's empty value is the `""` variant.
        ("amount=1&delay_days=8&percent=", json!(8), json!("")),
    ] {
        let (status, echoed) = send(PATH, None, form).await;
        assert_eq!(status, StatusCode::OK, "{form}: {echoed}");
        assert_eq!(echoed["body"]["delay_days"], delay_days, "{form}");
        assert_eq!(echoed["body"]["percent"], percent, "{form}");
    }
    let (status, problem) = send(PATH, None, "amount=1&delay_days=soon").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().contains("delay_days"), "{problem}");
}

async fn pay(app: &App, key: &str, form: &str) -> (StatusCode, Option<String>, Value) {
    let request = Request::post("/payments")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("idempotency-key", key)
        .body(Body::from(form.to_string()))
        .unwrap();
    answer_of(app, request).await
}

/// `request`'s status, `Idempotent-Replayed` header and JSON body.
async fn answer_of(app: &App, request: Request<Body>) -> (StatusCode, Option<String>, Value) {
    let answer = app.router().oneshot(request).await.unwrap();
    let status = answer.status();
    let replayed = answer
        .headers()
        .get("idempotent-replayed")
        .map(|value| value.to_str().unwrap().to_string());
    let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, replayed, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_form_value_breaking_a_keyword_is_a_422_before_the_key_is_claimed() {
    let file = std::env::temp_dir().join(format!("forms-test-{}.db", uuid::Uuid::new_v4()));
    let app = App::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("connect and migrate");
    for (form, expected) in [
        ("amount=-5&currency=EUR", "/amount breaks `minimum`"),
        ("amount=0&currency=EUR", "/amount breaks `minimum`"),
        // 2^53 + 3: its nearest float is 2^53 + 4, a multiple of 5 over
        // `maximum` by 4; compared as itself it is over by 3.
        ("amount=9007199254740995&currency=EUR", "/amount breaks `maximum`"),
        ("amount=12&currency=EUR", "/amount breaks `multipleOf`"),
        ("amount=5&currency=eur", "/currency breaks `pattern`"),
        ("amount=5&currency=EUR&memo=123456789", "/memo breaks `maxLength`"),
        ("amount=5&currency=EUR&priority=4", "/priority breaks `enum`"),
        ("amount=5&currency=EUR&tags[]=a&tags[]=b&tags[]=c", "/tags breaks `maxItems`"),
        ("amount=5&currency=EUR&tags[]=a&tags[]=a", "/tags breaks `uniqueItems`"),
        ("amount=5&currency=EUR&tags[]=a&tags[]=", "/tags/1 breaks `minLength`"),
    ] {
        let key = format!("pay:{}", uuid::Uuid::new_v4());
        let (status, _, problem) = pay(&app, &key, form).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{form}: {problem}");
        assert_eq!(problem["type"], "urn:idemgen:problem:schema-mismatch", "{form}: {problem}");
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with(expected), "{form}: {expected} in {detail}");
        // Nothing was claimed: the same key with a form that fits is a
        // first attempt, run and answered, not a conflict.
        let (status, replayed, echoed) = pay(&app, &key, "amount=5&currency=EUR").await;
        assert_eq!(status, StatusCode::OK, "{form}, then under its key: {echoed}");
        assert_eq!(replayed, None, "{form}: a first attempt");
        assert_eq!(echoed, json!({"body": {"amount": 5, "currency": "EUR"}}));
        let (status, replayed, _) = pay(&app, &key, "amount=5&currency=EUR").await;
        assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")), "{form}");
    }
    // On the boundary: `minimum` exactly, `maxLength` exactly, the largest
    // amount allowed; a type that does not fit is a 422 too.
    let fits = "amount=5&currency=EUR&memo=12345678&priority=3&tags[]=a&tags[]=b";
    let (status, _, echoed) = pay(&app, "pay:00000000-0000-4000-8000-000000000001", fits).await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed["body"]["memo"], "12345678");
    // The list of two sent as its key repeated (OpenAPI's default `form`
    // style) is the same list, so the same request: a replay.
    let repeated = "amount=5&currency=EUR&memo=12345678&priority=3&tags=a&tags=b";
    let (status, replayed, echoed) =
        pay(&app, "pay:00000000-0000-4000-8000-000000000001", repeated).await;
    assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")), "{echoed}");
    assert_eq!(echoed["body"]["tags"], json!(["a", "b"]));
    // A list of one is a list however laid out: `tags=a` (its key), then
    // `tags[0]=a` and `tags[]=a` under the same key, are one request.
    let one = "amount=5&currency=EUR&tags=a";
    let (status, replayed, echoed) = pay(&app, "pay:00000000-0000-4000-8000-000000000005", one).await;
    assert_eq!((status, replayed), (StatusCode::OK, None), "{echoed}");
    assert_eq!(echoed["body"]["tags"], json!(["a"]));
    for layout in ["amount=5&currency=EUR&tags[0]=a", "tags%5B%5D=a&currency=EUR&amount=5"] {
        let (status, replayed, again) = pay(&app, "pay:00000000-0000-4000-8000-000000000005", layout).await;
        assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")), "{layout}: {again}");
        assert_eq!(again, echoed);
    }
    // So is a joined list of one: `codes=7`, then `codes[0]=7`.
    let (status, replayed, echoed) = pay(&app, "pay:00000000-0000-4000-8000-000000000006", "amount=5&currency=EUR&codes=7").await;
    assert_eq!((status, replayed), (StatusCode::OK, None), "{echoed}");
    let (status, replayed, _) = pay(&app, "pay:00000000-0000-4000-8000-000000000006", "amount=5&currency=EUR&codes[0]=7").await;
    assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")));
    let (status, _, problem) = pay(&app, "pay:00000000-0000-4000-8000-000000000005", "amount=5&currency=EUR&tags=b").await;
    assert_eq!(status, StatusCode::CONFLICT, "another item is another request: {problem}");
    let (status, _, problem) = pay(&app, &format!("pay:{}", uuid::Uuid::new_v4()), "amount=5&currency=EUR&tags=a&tags=b&tags=c").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().starts_with("/tags breaks `maxItems`"), "{problem}");
    // `codes`, declared `pipeDelimited`, is split at `|` (encoded or not),
    // each item read and checked as the integer it is; joined or with its
    // key repeated, it is one list, so one request: a replay.
    let joined = "amount=5&currency=EUR&codes=1|2%7C3";
    let (status, replayed, echoed) = pay(&app, "pay:00000000-0000-4000-8000-000000000004", joined).await;
    assert_eq!((status, replayed), (StatusCode::OK, None), "{echoed}");
    assert_eq!(echoed["body"]["codes"], json!([1, 2, 3]));
    let repeated = "codes=1&codes=2&codes=3&currency=EUR&amount=5";
    let (status, replayed, echoed) = pay(&app, "pay:00000000-0000-4000-8000-000000000004", repeated).await;
    assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")), "{echoed}");
    let other = "amount=5&currency=EUR&codes=3|2|1";
    let (status, _, problem) = pay(&app, "pay:00000000-0000-4000-8000-000000000004", other).await;
    assert_eq!(status, StatusCode::CONFLICT, "another order is another request: {problem}");
    let (status, _, problem) = pay(&app, &format!("pay:{}", uuid::Uuid::new_v4()), "amount=5&currency=EUR&codes=1|0").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().starts_with("/codes/1 breaks `minimum`"), "{problem}");
    // `details`, declared JSON text, is read as the JSON it holds, its
    // values checked; another spelling of that document is a replay.
    let details = "amount=5&currency=EUR&details=%7B%22order%22%3A7%2C%22lines%22%3A%5B%22a%22%5D%7D";
    let key = "pay:00000000-0000-4000-8000-000000000007";
    let (status, replayed, echoed) = pay(&app, key, details).await;
    assert_eq!((status, replayed), (StatusCode::OK, None), "{echoed}");
    assert_eq!(echoed["body"]["details"], json!({"order": 7, "lines": ["a"]}));
    let respelt = "details=%7B+%22lines%22%3A+%5B%22a%22%5D%2C+%22order%22%3A+7.0+%7D&currency=EUR&amount=5";
    let (status, replayed, again) = pay(&app, key, respelt).await;
    assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")), "{again}");
    let (status, _, problem) = pay(&app, key, "amount=5&currency=EUR&details=%7B%22order%22%3A8%7D").await;
    assert_eq!(status, StatusCode::CONFLICT, "another document is another request: {problem}");
    for (form, expected) in [
        ("amount=5&currency=EUR&details=%7B%22order%22%3A0%7D", "/details/order breaks `minimum`"),
        ("amount=5&currency=EUR&details=order%3D7", "`details` must be a JSON document"),
        ("amount=5&currency=EUR&details=%7B%22lines%22%3A%5B%22a%22%5D%7D", "missing field `order`"),
    ] {
        let (status, _, problem) = pay(&app, &format!("pay:{}", uuid::Uuid::new_v4()), form).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{form}: {problem}");
        assert!(problem["detail"].as_str().unwrap_or_default().contains(expected), "{form}: {expected} in {problem}");
    }
    let largest = "amount=9007199254740990&currency=EUR";
    let (status, _, echoed) = pay(&app, "pay:00000000-0000-4000-8000-000000000002", largest).await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed["body"]["amount"], json!(9007199254740990_i64));
    let (status, _, problem) = pay(&app, "pay:00000000-0000-4000-8000-000000000003", "amount=five&currency=EUR").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().contains("amount"), "{problem}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

async fn touch(app: &App, path: &str, key: &str) -> (StatusCode, Option<String>, Value) {
    let request = Request::post(path)
        .header("idempotency-key", key)
        .body(Body::empty())
        .unwrap();
    answer_of(app, request).await
}

/// `/things/{id}.json` is routed at `/things/{id}`: the business code sees
/// `abc` for `/things/abc.json` (its `maxLength: 3` checked on `abc`), and
/// `/things/abc` is a 404 that claims nothing.
#[tokio::test]
async fn a_suffixed_path_parameter_arrives_cut_and_a_bare_one_is_not_found() {
    let file = std::env::temp_dir().join(format!("forms-test-{}.db", uuid::Uuid::new_v4()));
    let app = App::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("connect and migrate");
    let key = format!("thing:{}", uuid::Uuid::new_v4());
    for bare in ["/things/abc", "/things/abc.xml", "/things/.json"] {
        let (status, _, problem) = touch(&app, bare, &key).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{bare}: {problem}");
        assert_eq!(problem["type"], "urn:idemgen:problem:not-found", "{bare}: {problem}");
    }
    // The key is unused: the 404s claimed nothing.
    let (status, replayed, echoed) = touch(&app, "/things/abc.json", &key).await;
    assert_eq!((status, replayed), (StatusCode::OK, None), "{echoed}");
    assert_eq!(echoed, json!({"id": "abc", "path_param": "abc"}));
    let (status, replayed, echoed) = touch(&app, "/things/abc.json", &key).await;
    assert_eq!((status, replayed.as_deref()), (StatusCode::OK, Some("true")), "{echoed}");
    assert_eq!(echoed, json!({"id": "abc", "path_param": "abc"}));
    let (status, _, problem) = touch(&app, "/things/abcd.json", &format!("thing:{}", uuid::Uuid::new_v4())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert!(problem["detail"].as_str().unwrap_or_default().contains("maxLength"), "{problem}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// The generated client sends a flat form (`payByForm`: scalars and a list
/// of texts) with the list's key repeated, OpenAPI's default `form` style,
/// and a form that nests (`checkout`) in brackets; a list declared joined
/// in one text as one text in either; the service reads them all.
#[tokio::test]
async fn the_client_repeats_a_flat_forms_keys_and_brackets_a_nested_one() {
    use forms_client::models;
    let (address, file) = serve_over_http().await;
    // The signer sees each attempt's body bytes: what went on the wire.
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = sent.clone();
    let client = forms_client::Client::new(&format!("http://{address}"))
        .unwrap()
        .with_signer(move |_, _, body| {
            seen.lock().unwrap().push(String::from_utf8_lossy(body).into_owned());
            reqwest::header::HeaderMap::new()
        });
    let params = models::PayByFormParams {
        idempotency_key: String::new(),
    };
    // `body` paid: the form echoed by the business code, and as sent.
    let pay = async |body: &models::PayByFormRequest| {
        let answer = client
            .pay_by_form(forms_client::Key::New, &params, body)
            .await
            .expect("an answer");
        let models::PayByFormResponse::Ok(echoed) = answer.response else {
            panic!("not a 200: {:?}", answer.response);
        };
        let form = sent.lock().unwrap().last().cloned().expect("a body sent");
        (echoed, form)
    };
    let mut body = models::PayByFormRequest::new(5, "EUR".into());
    body.tags = Some(vec!["a b".into(), "c".into()]);
    let (echoed, form) = pay(&body).await;
    assert_eq!(
        echoed,
        json!({"body": {"amount": 5, "currency": "EUR", "tags": ["a b", "c"]}})
    );
    let pairs: Vec<&str> = form.split('&').collect();
    assert!(pairs.contains(&"tags=c"), "{form}");
    assert_eq!(pairs.iter().filter(|pair| pair.starts_with("tags=")).count(), 2, "{form}");
    assert!(!form.contains('[') && !form.contains("%5B"), "{form}");
    // One item is its key once, read as a list of one.
    body.tags = Some(vec!["solo".into()]);
    let (echoed, form) = pay(&body).await;
    assert_eq!(echoed["body"]["tags"], json!(["solo"]));
    assert!(form.split('&').any(|pair| pair == "tags=solo"), "{form}");
    // A list declared `pipeDelimited` is one text, its items joined.
    body.codes = Some(vec![1, 22]);
    let (echoed, form) = pay(&body).await;
    assert_eq!(echoed["body"]["codes"], json!([1, 22]));
    assert!(form.split('&').any(|pair| pair == "codes=1%7C22"), "{form}");
    // A field declared JSON text is sent as its JSON document, in a form
    // that stays flat.
    body.details = Some(models::PayByFormRequestDetails {
        order: 7,
        lines: Some(vec!["a&b".into()]),
    });
    let (echoed, form) = pay(&body).await;
    assert_eq!(echoed["body"]["details"], json!({"order": 7, "lines": ["a&b"]}));
    let details: Vec<&str> = form.split('&').filter(|pair| pair.starts_with("details")).collect();
    assert_eq!(details.len(), 1, "{form}");
    let text = details[0].strip_prefix("details=").unwrap();
    let document: Value = serde_json::from_slice(&percent_decoded(text)).expect("JSON text");
    assert_eq!(document, json!({"order": 7, "lines": ["a&b"]}), "{form}");
    assert!(form.split('&').any(|pair| pair == "tags=solo"), "{form}");
    // The nested form keeps its brackets.
    let mut checkout = models::CheckoutRequest::new(1999);
    checkout.expand = Some(vec!["customer".into()]);
    let coupons = ["a", "b c", "x&y=z", "50%", "é+ü", ""];
    checkout.coupons = Some(coupons.iter().map(|coupon| coupon.to_string()).collect());
    checkout.items = Some(vec![models::CheckoutRequestItemsItem {
        price: "p_1".into(),
        quantity: None,
    }]);
    let params = models::CheckoutParams::new(
        vec![1],
        vec!["a".into()],
        models::CheckoutParamsPoint { x: Some(5), y: None },
    );
    let answer = client.checkout(&params, &checkout).await.expect("an answer");
    match answer.response {
        models::CheckoutResponse::Ok(echoed) => {
            assert_eq!(echoed["body"]["expand"], json!(["customer"]));
            assert_eq!(echoed["body"]["items"], json!([{"price": "p_1"}]));
            assert_eq!(echoed["body"]["coupons"], json!(coupons));
        }
        other => panic!("not a 200: {other:?}"),
    }
    let form = sent.lock().unwrap().last().cloned().expect("a body sent");
    assert!(form.contains("expand[0]=customer") || form.contains("expand%5B0%5D=customer"), "{form}");
    // Its list declared joined by commas is one text, not in brackets.
    let coupons: Vec<&str> = form.split('&').filter(|pair| pair.starts_with("coupons")).collect();
    assert_eq!(coupons.len(), 1, "{form}");
    assert!(
        coupons[0].starts_with("coupons=a%2Cb+c%2C") || coupons[0].starts_with("coupons=a%2Cb%20c%2C"),
        "{form}"
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// Form text decoded: `+` is a space, `%XX` its byte.
fn percent_decoded(text: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        match (byte, after.get(..2)) {
            (b'%', Some(hex)) => {
                bytes.push(u8::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).unwrap());
                rest = &after[2..];
            }
            (b'+', _) => {
                bytes.push(b' ');
                rest = after;
            }
            _ => {
                bytes.push(byte);
                rest = after;
            }
        }
    }
    bytes
}
