//! One handler per operation: claim (idempotent operations), run the
//! business function in `src/business/`, finish.

use axum::Router;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{MethodFilter, on};

use crate::{App, business, operations};

/// Every operation's route.
pub fn router() -> Router<App> {
    Router::new()
        .route("/callbacks/pay", on(MethodFilter::POST, on_pay_callback))
        .route("/orders/{order_no}", on(MethodFilter::GET, get_order))
}

// onPayCallback: POST /callbacks/pay
// Payment-succeeded callback from the payment provider
async fn on_pay_callback(State(app): State<App>, request: Request) -> Response {
    let mut call = match app.begin(&operations::ON_PAY_CALLBACK, request).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let (tx, request) = call.parts();
    let outcome = business::on_pay_callback::handle(tx, request).await;
    call.finish(outcome).await
}

// getOrder: GET /orders/{order_no}
// Read an order
async fn get_order(State(app): State<App>, request: Request) -> Response {
    let mut call = match app.begin(&operations::GET_ORDER, request).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let (tx, request) = call.parts();
    let outcome = business::get_order::handle(tx, request).await;
    call.finish(outcome).await
}
