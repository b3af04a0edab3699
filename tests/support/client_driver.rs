//! The program `tests/it/client.rs` runs: one call of the generated
//! client's `on_pay_callback`, then one JSON line saying how it ended and
//! every attempt made. Not a module of the tests: `support/client.rs`
//! writes it into a crate of its own that depends on the generated client.
//!
//! Usage: client-driver BASE_URL ORDER_NO AMOUNT [FIRST_SEND_AGO_MS]
//!
//! With FIRST_SEND_AGO_MS, the call resumes a key prepared that long ago,
//! as a process restarted after a crash would.

use pay_client::{Client, Key, Outcome, Prepared, Tried, models};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (base, order, amount, ago) = match args.as_slice() {
        [_, base, order, amount] => (base, order, amount, None),
        [_, base, order, amount, ago] => (base, order, amount, Some(ago)),
        _ => panic!("usage: client-driver BASE_URL ORDER_NO AMOUNT [FIRST_SEND_AGO_MS]"),
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
    let key = match ago {
        None => Key::New,
        Some(ago) => {
            let prepared = client.prepare_on_pay_callback(&body).expect("a key");
            let ago: u64 = ago.parse().expect("milliseconds");
            Key::Prepared(Prepared::new(prepared.key, prepared.first_send_unix_ms - ago))
        }
    };
    let report = match client.on_pay_callback(key, &params, &body).await {
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
