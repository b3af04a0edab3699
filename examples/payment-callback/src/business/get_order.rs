//! getOrder: GET /orders/{order_no}
//!
//! Reads an order and its payment state.

use crate::models::{
    GetOrderParams, GetOrderResponse as Response, Order as OrderView, OrderStatus,
};
use crate::{BusinessError, Request, Tx};

/// An order row.
#[derive(Debug)]
pub struct Order {
    pub order_no: String,
    pub amount: i64,
    pub status: String,
    pub txn_id: Option<String>,
    pub paid_at: Option<i64>,
}

pub async fn handle(
    tx: &mut Tx,
    params: GetOrderParams,
    _request: &Request,
) -> Result<Response, BusinessError> {
    let response = match find(tx, &params.order_no).await? {
        Some(order) => Response::Ok(OrderView {
            order_no: order.order_no,
            amount: order.amount,
            status: if order.status == "PAID" {
                OrderStatus::Paid
            } else {
                OrderStatus::Unpaid
            },
            txn_id: order.txn_id,
            paid_at: order.paid_at.and_then(chrono::DateTime::from_timestamp_millis),
        }),
        None => Response::NotFound(super::on_pay_callback::problem(
            404,
            "unknown order",
            &format!("no order `{}` exists", params.order_no),
        )),
    };
    Ok(response)
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
