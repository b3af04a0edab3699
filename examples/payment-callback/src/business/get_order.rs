//! getOrder: GET /orders/{order_no}
//!
//! Reads an order and its payment state.

use axum::http::StatusCode;
use serde::Serialize;

use crate::Tx;
use crate::http::{Reply, Request};
use crate::idempotency::rfc3339;

/// An order row.
#[derive(Debug)]
pub struct Order {
    pub order_no: String,
    pub amount: i64,
    pub status: String,
    pub txn_id: Option<String>,
    pub paid_at: Option<i64>,
}

#[derive(Debug, Serialize)]
struct OrderView {
    order_no: String,
    amount: i64,
    status: String,
    txn_id: Option<String>,
    paid_at: Option<String>,
}

pub async fn handle(tx: &mut Tx, request: &Request) -> Result<Reply, sqlx::Error> {
    let order_no = request.path_param("order_no").unwrap_or_default();
    let reply = match find(tx, order_no).await? {
        Some(order) => Reply::json(
            StatusCode::OK,
            &OrderView {
                order_no: order.order_no,
                amount: order.amount,
                status: order.status.to_ascii_lowercase(),
                txn_id: order.txn_id,
                paid_at: order.paid_at.map(rfc3339),
            },
        ),
        None => Reply::problem(
            StatusCode::NOT_FOUND,
            "unknown order",
            &format!("no order `{order_no}` exists"),
        ),
    };
    Ok(reply)
}

/// The order `order_no`, if it exists.
pub async fn find(tx: &mut Tx, order_no: &str) -> Result<Option<Order>, sqlx::Error> {
    let order = crate::per_dialect! {
        sqlite: sqlx::query_as!(
            Order,
            "SELECT order_no, amount, status, txn_id, paid_at FROM orders WHERE order_no = ?1",
            order_no,
        ),
        mysql: sqlx::query_as!(
            Order,
            "SELECT order_no, amount, status, txn_id, paid_at FROM orders WHERE order_no = ?",
            order_no,
        ),
        postgres: sqlx::query_as!(
            Order,
            "SELECT order_no, amount, status, txn_id, paid_at FROM orders WHERE order_no = $1",
            order_no,
        ),
    }
    .fetch_optional(&mut **tx)
    .await?;
    Ok(order)
}
