//! onPayCallback: POST /callbacks/pay
//!
//! The article's payment callback: mark the order paid and log the payment,
//! in the transaction that also completes the idempotency record, so the
//! payment and its record commit together or not at all.

use std::sync::LazyLock;
use std::time::Duration;

use crate::models::{
    OnPayCallbackParams, OnPayCallbackResponse as Response, PayCallback, PaymentResult,
    PaymentResultStatus, Problem,
};
use crate::{BusinessError, Request, Tx};
use chrono::SubsecRound;

/// `DOWNSTREAM_DELAY_MS`: time spent "calling downstream" inside the
/// business step (default 0), to watch duplicates arrive mid-payment. A
/// real downstream call (a refund, a ledger service) would send
/// `request.downstream_key` as its idempotency key: the same for every
/// attempt of this callback's key, so an attempt cut off at the lease and
/// its retry are one call downstream. Never the claim token, which is new
/// on every attempt.
static DOWNSTREAM_DELAY: LazyLock<Duration> = LazyLock::new(|| {
    let millis = std::env::var("DOWNSTREAM_DELAY_MS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    Duration::from_millis(millis)
});

/// `callback` matches the spec's `PayCallback` (a request that does not is
/// answered 400 before its key is claimed); the bounds serde cannot check
/// are checked here.
pub async fn handle(
    tx: &mut Tx,
    callback: PayCallback,
    _params: OnPayCallbackParams,
    _request: &Request,
) -> Result<Response, BusinessError> {
    if callback.amount < 1
        || callback.date.len() != 8
        || !callback.date.bytes().all(|byte| byte.is_ascii_digit())
    {
        return Ok(Response::BadRequest(problem(
            400,
            "invalid callback",
            "`amount` must be at least 1 and `date` must be yyyyMMdd",
        )));
    }
    if !DOWNSTREAM_DELAY.is_zero() {
        tokio::time::sleep(*DOWNSTREAM_DELAY).await;
    }

    // Milliseconds: what the orders table keeps, and `getOrder` answers.
    let paid_at = chrono::Utc::now().trunc_subsecs(3);
    let paid_at_ms = paid_at.timestamp_millis();
    // One conditional UPDATE, never "SELECT, then UPDATE": only an unpaid
    // order with this amount becomes paid.
    let paid = crate::per_dialect! {
        sqlite: sqlx::query!(
            "UPDATE orders SET status = 'PAID', txn_id = ?1, paid_at = ?2 \
             WHERE order_no = ?3 AND amount = ?4 AND status = 'UNPAID'",
            callback.txn_id,
            paid_at_ms,
            callback.order_no,
            callback.amount,
        ),
        mysql: sqlx::query!(
            "UPDATE orders SET status = 'PAID', txn_id = ?, paid_at = ? \
             WHERE order_no = ? AND amount = ? AND status = 'UNPAID'",
            callback.txn_id,
            paid_at_ms,
            callback.order_no,
            callback.amount,
        ),
        postgres: sqlx::query!(
            "UPDATE orders SET status = 'PAID', txn_id = $1, paid_at = $2 \
             WHERE order_no = $3 AND amount = $4 AND status = 'UNPAID'",
            callback.txn_id,
            paid_at_ms,
            callback.order_no,
            callback.amount,
        ),
    }
    .execute(&mut **tx)
    .await?
    .rows_affected()
        == 1;
    if !paid {
        return Ok(explain_unpaid(tx, &callback).await?);
    }

    crate::per_dialect! {
        sqlite: sqlx::query!(
            "INSERT INTO paid_log (order_no, txn_id, amount, paid_at) VALUES (?1, ?2, ?3, ?4)",
            callback.order_no,
            callback.txn_id,
            callback.amount,
            paid_at_ms,
        ),
        mysql: sqlx::query!(
            "INSERT INTO paid_log (order_no, txn_id, amount, paid_at) VALUES (?, ?, ?, ?)",
            callback.order_no,
            callback.txn_id,
            callback.amount,
            paid_at_ms,
        ),
        postgres: sqlx::query!(
            "INSERT INTO paid_log (order_no, txn_id, amount, paid_at) VALUES ($1, $2, $3, $4)",
            callback.order_no,
            callback.txn_id,
            callback.amount,
            paid_at_ms,
        ),
    }
    .execute(&mut **tx)
    .await?;

    Ok(Response::Ok(PaymentResult {
        order_no: callback.order_no,
        txn_id: callback.txn_id,
        amount: callback.amount,
        status: PaymentResultStatus::Paid,
        paid_at,
    }))
}

/// Why the order was not marked paid: unknown (404, recorded as failed so a
/// retry succeeds once the order exists), already paid, or another amount.
async fn explain_unpaid(tx: &mut Tx, callback: &PayCallback) -> Result<Response, sqlx::Error> {
    let order = super::get_order::find(tx, &callback.order_no).await?;
    let response = match order {
        None => Response::NotFound(problem(
            404,
            "unknown order",
            &format!("no order `{}` exists", callback.order_no),
        )),
        Some(order) if order.status == "PAID" => Response::Conflict(problem(
            409,
            "order already paid",
            &format!(
                "order `{}` was paid by transaction `{}`",
                order.order_no,
                order.txn_id.unwrap_or_default()
            ),
        )),
        Some(order) => Response::BadRequest(problem(
            400,
            "amount mismatch",
            &format!(
                "order `{}` is due {}, the callback paid {}",
                order.order_no, order.amount, callback.amount
            ),
        )),
    };
    Ok(response)
}

/// An RFC 9457 problem.
pub fn problem(status: i64, title: &str, detail: &str) -> Problem {
    Problem {
        r#type: Some("about:blank".into()),
        title: Some(title.into()),
        status: Some(status),
        detail: Some(detail.into()),
    }
}
