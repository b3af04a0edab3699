//! The business logic of `create_order` for the service generated from
//! `../created-headers.yaml` (scripts/schemathesis.sh copies it over the
//! generated file): a 201 with the headers a create sends.

// createOrder: POST /orders

use crate::models;
use crate::{BusinessError, Request, Tx};

/// Numbers the order from the key (each key is one order) and answers
/// `201 Created` with its `Location` and `ETag`; no table is written.
pub async fn handle(
    tx: &mut Tx,
    body: models::CreateOrderRequest,
    params: models::CreateOrderParams,
    request: &Request,
) -> Result<models::CreateOrderResponse, BusinessError> {
    let _ = (tx, request);
    let order_no = params
        .idempotency_key
        .trim_start_matches("order:")
        .to_string();
    Ok(models::CreateOrderResponse::Created {
        location: format!("/orders/{order_no}"),
        etag: Some(format!("\"{}\"", body.item.len())),
        x_stock_left: None,
        set_cookie: None,
        body: models::CreateOrderCreatedBody { order_no },
    })
}
