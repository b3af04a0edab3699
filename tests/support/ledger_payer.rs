//! The program the client topology of the fault suite runs, several at a
//! time: a payer built on the client `idemgen gen --client` generates from
//! the ledger's spec (`tests/it/nemesis/clients.rs`), paying a list of transfers one after
//! another the way the client's README says to: prepare the key, store it
//! durably, then call; after a restart, resume every stored key that has
//! no outcome yet. Not a module of the tests: `tests/it/nemesis/clients.rs` writes it into a
//! crate of its own that depends on the generated client.
//!
//! Usage: ledger-payer BASE_URL PLAN STORE
//! - PLAN: one transfer a line, `nonce amount pause_ms`: the pause comes
//!   before the transfer (a payer's work between payments).
//! - STORE: the durable key store, JSON lines appended and synced: a
//!   `prepared` line before the first send of a key, an `outcome` line
//!   when its call ends. The test reads it after the history.

use std::io::Write;

use ledger_client::{Call, Error, Key, Outcome, Prepared, models};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, base, plan, store] = args.as_slice() else {
        panic!("usage: ledger-payer BASE_URL PLAN STORE");
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(pay_all(base, plan, store));
}

async fn pay_all(base: &str, plan: &str, store: &str) {
    let client = ledger_client::Client::new(base).expect("a base URL");
    let plan = std::fs::read_to_string(plan).expect("the plan");
    let stored = std::fs::read_to_string(store).unwrap_or_default();
    let mut lines: Vec<serde_json::Value> = stored
        .lines()
        // A line cut short by a kill mid-write is not a record.
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(store)
        .expect("the store");
    for line in plan.lines().filter(|line| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [nonce, amount, pause_ms] = fields.as_slice() else {
            panic!("a plan line is `nonce amount pause_ms`: {line}");
        };
        let nonce = *nonce;
        let body = models::Transfer {
            nonce: nonce.to_string(),
            amount: amount.parse().expect("an amount"),
        };
        let of_nonce = |kind: &str| {
            lines
                .iter()
                .find(|line| line["nonce"] == nonce && line["kind"] == kind)
                .cloned()
        };
        if of_nonce("outcome").is_some() {
            continue;
        }
        let pause = pause_ms.parse().expect("a pause in ms");
        tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
        let (prepared, resumed) = match of_nonce("prepared") {
            Some(line) => (
                Prepared::new(
                    line["key"].as_str().expect("a stored key"),
                    line["first_send_unix_ms"].as_u64().expect("a stored time"),
                ),
                true,
            ),
            None => {
                let prepared = client.prepare_transfer(&body).expect("a key");
                let line = serde_json::json!({
                    "kind": "prepared",
                    "nonce": nonce,
                    "key": prepared.key,
                    "first_send_unix_ms": prepared.first_send_unix_ms,
                });
                append(&mut file, &line);
                lines.push(line);
                (prepared, false)
            }
        };
        // The key is the client's to place: this field is replaced.
        let params = models::TransferParams {
            idempotency_key: String::new(),
        };
        let result = client.transfer(Key::Prepared(prepared), &params, &body).await;
        let mut line = serde_json::json!({
            "kind": "outcome",
            "nonce": nonce,
            "resumed": resumed,
            "at_unix_ms": now_ms(),
        });
        let call = match &result {
            Ok(answer) => {
                line["outcome"] = "ok".into();
                line["status"] = answer.response.status().into();
                line["receipt"] = match &answer.response {
                    models::TransferResponse::Created(receipt) => receipt.receipt.clone().into(),
                    _ => serde_json::Value::Null,
                };
                line["replayed"] = answer.replayed.into();
                &answer.call
            }
            Err(error) => {
                line["outcome"] = match error {
                    Error::Conflict { .. } => "conflict",
                    Error::Refused { .. } => "refused",
                    Error::GaveUp { .. } => "gave-up",
                    Error::WindowClosed { .. } => "window-closed",
                    Error::Unreadable { .. } => "unreadable",
                    Error::Undeclared { .. } => "undeclared",
                    Error::Request(_) => "request",
                }
                .into();
                line["error"] = error.to_string().into();
                match error.call() {
                    Some(call) => call,
                    None => &Call::default(),
                }
            }
        };
        line["maybe_carried_out"] = call.maybe_carried_out().into();
        line["attempts"] = call
            .attempts
            .iter()
            .map(|tried| {
                serde_json::json!({
                    "unix_ms": tried.unix_ms,
                    "outcome": describe(&tried.outcome),
                })
            })
            .collect();
        append(&mut file, &line);
        lines.push(line);
    }
}

/// Appends `line` and syncs it to disk before anything else happens: a
/// key stored this way survives a SIGKILL right after.
fn append(file: &mut std::fs::File, line: &serde_json::Value) {
    let mut text = line.to_string();
    text.push('\n');
    file.write_all(text.as_bytes()).expect("the store is writable");
    file.sync_data().expect("the store syncs");
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Answered { status } => format!("answered {status}"),
        Outcome::InProgress { .. } => "in-progress".to_string(),
        Outcome::Retryable { status, .. } => format!("retryable {status}"),
        Outcome::TimedOut => "timed-out".to_string(),
        Outcome::NotSent(_) => "not-sent".to_string(),
        Outcome::Connection(_) => "connection".to_string(),
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}
