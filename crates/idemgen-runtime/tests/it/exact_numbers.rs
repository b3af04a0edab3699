//! A body's numbers are read by their exact decimal value: an integer
//! field takes a whole number however it is written, and refuses one
//! that is not whole however close its nearest float is, naming the
//! field. The value the business code decodes is the one the request's
//! fingerprint covers.

use crate::support::{Table, body_text, key, post_json};
use axum::body::Body;
use axum::http::{Method, StatusCode};
use idemgen_runtime::fuzzing::fingerprint;
use idemgen_runtime::{Contract, Operation, Reply, Request, Security};
use proptest::prelude::*;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Pay {
    amount: u64,
}

#[derive(Debug, Deserialize)]
struct Signed {
    amount: i64,
}

#[derive(Debug, Deserialize)]
struct Basket {
    items: Vec<Item>,
}

#[derive(Debug, Deserialize)]
struct Item {
    qty: u32,
    price: f64,
}

fn request(body: &str) -> Request {
    Request {
        body: body.to_string().into(),
        ..Request::new(Method::POST, "/pay")
    }
}

fn refusal(refused: Reply) -> (StatusCode, String) {
    (
        refused.status,
        String::from_utf8_lossy(&refused.body).into_owned(),
    )
}

const KEY_PATTERN: &str =
    "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

const CONTRACT: Contract = Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000);

static PAY: Operation = Operation::idempotent("onPay", "on_pay", CONTRACT);

/// The issue's cases: an order due 100 was marked paid for
/// `99.99999999999999` and `100.0000000000000001`, whose nearest floats
/// are 100. Each is refused, as is a number beyond any float, and the
/// problem names the field.
#[test]
fn a_number_that_is_not_whole_is_refused_whatever_its_nearest_float() {
    for amount in [
        "99.99999999999999",
        "100.0000000000000001",
        "100.00000000000000000000000000000000000001",
        "99.999999999999999999e0",
        "1.0000000000000000001e2",
        "100.4",
        "1e400",
        "-1e400",
        "1e2000000000",
        "1e-400",
    ] {
        let body = format!(r#"{{"amount": {amount}, "order": "A-1"}}"#);
        let refused = request(&body).body_as::<Pay>().expect_err(amount);
        let (status, text) = refusal(refused);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{amount}: {text}");
        assert!(text.contains("schema-mismatch"), "{amount}: {text}");
        assert!(text.contains("`amount`"), "{amount}: {text}");
        let (status, _) = refusal(request(&body).body_as_or::<Pay>(400).expect_err(amount));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{amount}");
    }
}

#[test]
fn a_whole_number_fits_an_integer_field_in_every_spelling() {
    for amount in [
        "100",
        "100.0",
        "1e2",
        "1E+2",
        "1.00e2",
        "10000e-2",
        "0.1e3",
        "100.000000000000000000000",
    ] {
        let body = format!(r#"{{"amount": {amount}}}"#);
        assert_eq!(
            request(&body).body_as::<Pay>().unwrap().amount,
            100,
            "{amount}"
        );
    }
    for (amount, value) in [
        ("-0.0", 0),
        ("-1.0e0", -1),
        ("9223372036854775807.0", i64::MAX),
        ("-9.223372036854775808e18", i64::MIN),
    ] {
        let body = format!(r#"{{"amount": {amount}}}"#);
        assert_eq!(
            request(&body).body_as::<Signed>().unwrap().amount,
            value,
            "{amount}"
        );
    }
    // One past the type's range is refused, not wrapped or rounded.
    for amount in [
        "9223372036854775808",
        "9223372036854775808.0",
        "-9.223372036854775809e18",
    ] {
        let body = format!(r#"{{"amount": {amount}}}"#);
        let (status, text) = refusal(request(&body).body_as::<Signed>().expect_err(amount));
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{amount}: {text}");
        assert!(text.contains("`amount`"), "{amount}: {text}");
    }
}

/// The refusal names the field however deep it is; a `number` field still
/// takes the nearest float.
#[test]
fn nested_fields_are_named_and_number_fields_take_the_nearest_float() {
    let (status, text) = refusal(
        request(
            r#"{"items": [{"qty": 1, "price": 0.1}, {"qty": 2.0000000000000001, "price": 1}]}"#,
        )
        .body_as::<Basket>()
        .unwrap_err(),
    );
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
    assert!(text.contains("`items[1].qty`"), "{text}");
    let basket = request(r#"{"items": [{"qty": 3e0, "price": 99.99999999999999}]}"#)
        .body_as::<Basket>()
        .unwrap();
    assert_eq!(basket.items[0].qty, 3);
    assert_eq!(basket.items[0].price, 99.99999999999999);
}

/// Not JSON is still `400`, with serde_json's words for where; a member
/// named twice has no single meaning (the fingerprint refuses it too).
/// A number beyond any float in a member the type ignores leaves no value
/// to check the keywords on: the body is refused, naming the member, not
/// let past `minimum` with an amount of 0. Without keywords the type
/// alone decides, as before.
#[test]
fn a_number_beyond_any_float_is_not_let_past_the_keywords() {
    const AT_LEAST_ONE: &[idemgen_runtime::Constraint] = &[idemgen_runtime::Constraint {
        at: "/amount",
        check: idemgen_runtime::Check::Minimum("1"),
    }];
    let body = r#"{"amount": 0, "note": 1e400}"#;
    let refused = request(body)
        .body_checked_as::<Pay>(422, AT_LEAST_ONE)
        .unwrap_err();
    let (status, problem) = refusal(refused);
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem.contains("`note`: number out of range"), "{problem}");
    assert!(
        problem.contains("the keywords cannot be checked"),
        "{problem}"
    );
    let paid: Pay = request(body).body_checked_as(422, &[]).unwrap();
    assert_eq!(paid.amount, 0);
}

#[test]
fn a_body_that_is_not_json_is_still_a_bad_request() {
    for (body, kind) in [
        (r#"{"amount": 1"#, "invalid-body"),
        (r#"{"amount": 01}"#, "invalid-body"),
        ("[1e400", "invalid-body"),
        (r#"{"amount": 1, "amount": 2}"#, "ambiguous-body"),
        (r#"{"amount": 1, "memo": "\ud800"}"#, "ambiguous-body"),
    ] {
        let (status, text) = refusal(request(body).body_as::<Pay>().expect_err(body));
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {text}");
        assert!(text.contains(kind), "{body}: {text}");
    }
}

/// A decimal text near an integer `n`, and whether its value is exactly
/// `n`: `n.000`, `n.0001` (off by a little, away from zero), `(n-1).999`
/// (off by a little, towards zero), and `n` in scientific notation with
/// its point moved, with or without a last digit past it.
fn near_integer() -> impl Strategy<Value = (i64, String, bool)> {
    let n = prop_oneof![
        -1_000i64..1_000,
        -(1i64 << 53)..(1i64 << 53),
        any::<i64>().prop_filter("an i64 written without its sign", |n| *n != i64::MIN),
    ];
    (n, 0usize..30, 1u8..10, 0usize..24, 0u8..5).prop_map(|(n, zeros, digit, shift, shape)| {
        let sign = if n < 0 { "-" } else { "" };
        let whole = n.unsigned_abs().to_string();
        let tail = "0".repeat(zeros);
        match shape {
            0 => (n, format!("{sign}{whole}.0{tail}"), true),
            1 => (n, format!("{sign}{whole}.{tail}{digit}"), false),
            2 if n != 0 => {
                let below = (n.unsigned_abs() - 1).to_string();
                (n, format!("{sign}{below}.{}9", "9".repeat(zeros)), false)
            }
            _ => {
                // |n| = mantissa × 10^shift
                let mantissa = if shift == 0 {
                    format!("{whole}.0")
                } else if shift < whole.len() {
                    let (int, frac) = whole.split_at(whole.len() - shift);
                    format!("{int}.{frac}")
                } else {
                    format!("0.{}{whole}", "0".repeat(shift - whole.len()))
                };
                if shape == 4 {
                    (n, format!("{sign}{mantissa}{tail}{digit}e{shift}"), false)
                } else {
                    (n, format!("{sign}{mantissa}{tail}e+{shift}"), true)
                }
            }
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// Whatever the text, an `i64` field gets exactly `n` when the text's
    /// value is `n`, and a refusal naming the field otherwise; and the
    /// fingerprint agrees: the text fingerprints as `n` does exactly when
    /// it is read as `n`.
    #[test]
    fn decimal_text_near_an_integer_is_read_exactly((n, text, exact) in near_integer()) {
        let body = format!(r#"{{"amount":{text}}}"#);
        let same_print = fingerprint(&CONTRACT, &Security::OPEN, &request(&body))
            == fingerprint(&CONTRACT, &Security::OPEN, &request(&format!(r#"{{"amount":{n}}}"#)));
        prop_assert_eq!(same_print, exact, "{}", text);
        match request(&body).body_as::<Signed>() {
            Ok(read) => {
                prop_assert!(exact, "{} was read as {}", text, read.amount);
                prop_assert_eq!(read.amount, n, "{}", text);
            }
            Err(refused) => {
                let (status, detail) = refusal(refused);
                prop_assert!(!exact, "{} was refused: {}", text, detail);
                prop_assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
                prop_assert!(detail.contains("`amount`"), "{}", detail);
            }
        }
    }
}

/// Through the engine on this build's database: the inexact amount is
/// refused before the claim, so no record is left and the corrected
/// request pays with the same key.
#[tokio::test]
async fn an_inexact_amount_is_refused_before_the_key_is_claimed() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    let key = key();
    for amount in ["99.99999999999999", "100.0000000000000001", "1e400"] {
        let mut sent = post_json("/pay", Some(&key), &serde_json::json!({}));
        *sent.body_mut() = Body::from(format!(r#"{{"amount": {amount}}}"#));
        let refused = match engine
            .begin_typed(&PAY, sent, |request| request.body_as::<Pay>())
            .await
        {
            Ok(_) => panic!("{amount} was accepted"),
            Err(refused) => refused,
        };
        assert_eq!(
            refused.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{amount}"
        );
        assert!(body_text(refused).await.contains("`amount`"), "{amount}");
        let records = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM {}",
            table.name
        )))
        .fetch_one(&table.pool)
        .await
        .unwrap();
        assert_eq!(records, 0, "{amount}");
    }
    let mut sent = post_json("/pay", Some(&key), &serde_json::json!({}));
    *sent.body_mut() = Body::from(r#"{"amount": 1.00e2}"#);
    let (call, pay) = match engine
        .begin_typed(&PAY, sent, |request| request.body_as::<Pay>())
        .await
    {
        Ok(claimed) => claimed,
        Err(answer) => panic!("1.00e2 was refused: {}", answer.status()),
    };
    assert_eq!(pay.amount, 100);
    let done = call
        .answer(Reply::json(
            StatusCode::OK,
            &serde_json::json!({"paid": pay.amount}),
        ))
        .await;
    assert_eq!(body_text(done).await, r#"{"paid":100}"#);
}
