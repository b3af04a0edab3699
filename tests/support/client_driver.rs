//! The program `tests/it/client.rs` runs: one call of the generated
//! client's `on_pay_callback`, then one JSON line saying how it ended and
//! every attempt made. Not a module of the tests: `support/client.rs`
//! writes it into a crate of its own that depends on the generated client.
//!
//! Usage: client-driver BASE_URL ORDER_NO AMOUNT

use pay_client::{Client, Key, Outcome, Tried, models};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, base, order, amount] = args.as_slice() else {
        panic!("usage: client-driver BASE_URL ORDER_NO AMOUNT");
    };
    let client = Client::new(base).expect("a base URL");
    // The key is the client's to make: this field is replaced.
    let params = models::OnPayCallbackParams {
        idempotency_key: String::new(),
    };
    let body = models::PayCallback {
        txn_id: format!("TXN-{order}"),
        order_no: order.clone(),
        amount: amount.parse().expect("an amount"),
        date: "20240615".to_string(),
    };
    let report = match client.on_pay_callback(Key::New, &params, &body).await {
        Ok(answer) => serde_json::json!({
            "ok": true,
            "status": status_of(&answer.response),
            "replayed": answer.replayed,
            "key": answer.key(),
            "attempts": attempts(&answer.call.attempts),
        }),
        Err(error) => serde_json::json!({
            "ok": false,
            "error": error.to_string(),
            "key": error.key(),
            "attempts": error.call().map_or(serde_json::json!([]), |call| attempts(&call.attempts)),
        }),
    };
    println!("{report}");
}

fn status_of(response: &models::OnPayCallbackResponse) -> u16 {
    response.status()
}

/// Each attempt: when it started (ms after the first) and how it ended.
fn attempts(attempts: &[Tried]) -> serde_json::Value {
    attempts
        .iter()
        .map(|tried| {
            let outcome = match &tried.outcome {
                Outcome::Answered { status } => format!("answered {status}"),
                Outcome::InProgress { retry_after } => {
                    format!("in-progress {}", retry_after.map_or(0, |wait| wait.as_millis()))
                }
                Outcome::Retryable { status, .. } => format!("retryable {status}"),
                Outcome::TimedOut => "timed-out".to_string(),
                Outcome::NotSent(_) => "not-sent".to_string(),
                Outcome::Connection(_) => "connection".to_string(),
            };
            serde_json::json!({"at_ms": tried.at.as_millis() as u64, "outcome": outcome})
        })
        .collect()
}
