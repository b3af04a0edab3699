//! One handler per operation: check its security, claim (idempotent
//! operations), run the business function in `src/business/`, finish.
#![cfg_attr(rustfmt, rustfmt::skip)]

use axum::Router;
use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::middleware::from_fn_with_state;
use axum::response::Response;
use axum::routing::{MethodFilter, on};
use idemgen_runtime::{
    AnswerConstraints, Check, Constraint, Param, Reply, Scalar, observe, within_lease,
};

use crate::{App, business, models, operations};

/// Every operation's route, each request in a span of its own that
/// `GET /metrics` and the traces read (`idemgen_runtime::observe`).
pub fn router() -> Router<App> {
    Router::new()
        .route(
            "/callbacks/pay",
            on(
                MethodFilter::POST,
                on_pay_callback
                    .layer(from_fn_with_state(&operations::ON_PAY_CALLBACK, observe)),
            ),
        )
        .route(
            "/orders/{order_no}",
            on(
                MethodFilter::GET,
                get_order.layer(from_fn_with_state(&operations::GET_ORDER, observe)),
            ),
        )
}

/// The spec's validation keywords on a JSON answer of schema `PaymentResult`.
static PAYMENT_RESULT_CHECKS: &[Constraint] = &[
    Constraint {
        at: "/order_no",
        check: Check::MaxLength(64),
    },
    Constraint {
        at: "/txn_id",
        check: Check::MaxLength(64),
    },
    Constraint {
        at: "/amount",
        check: Check::Minimum("1"),
    },
];

/// The spec's validation keywords on a JSON answer of schema `Order`.
static ORDER_CHECKS: &[Constraint] = &[
    Constraint {
        at: "/order_no",
        check: Check::MaxLength(64),
    },
    Constraint {
        at: "/amount",
        check: Check::Minimum("1"),
    },
    Constraint {
        at: "/txn_id",
        check: Check::MaxLength(64),
    },
];

/// The spec's validation keywords on the body of `onPayCallback` that its
/// types do not hold, checked before the body is decoded.
static ON_PAY_CALLBACK_BODY: &[Constraint] = &[
    Constraint {
        at: "/txn_id",
        check: Check::MaxLength(64),
    },
    Constraint {
        at: "/order_no",
        check: Check::MaxLength(64),
    },
    Constraint {
        at: "/amount",
        check: Check::Minimum("1"),
    },
    Constraint {
        at: "/amount",
        check: Check::Maximum("9007199254740991"),
    },
    Constraint {
        at: "/date",
        check: Check::Pattern("^[0-9]{8}$"),
    },
];

/// The spec's validation keywords on the JSON bodies `onPayCallback` answers
/// with: an answer the business function builds that breaks one is a 500,
/// rolled back (the key can be retried), never sent or stored.
static ON_PAY_CALLBACK_ANSWERS: &[AnswerConstraints] = &[
    AnswerConstraints {
        status: "200",
        media_type: "application/json",
        constraints: PAYMENT_RESULT_CHECKS,
    },
];

// onPayCallback: POST /callbacks/pay
// Payment-succeeded callback from the payment provider
async fn on_pay_callback(State(app): State<App>, request: Request) -> Response {
    // Who may call it (providerSignature) is checked first: a request
    // that fails is answered 401 or 403 and leaves no record.
    let request = match app.authenticate(&operations::ON_PAY_CALLBACK, request).await {
        Ok(request) => request,
        Err(answer) => return answer,
    };

    // The typed input is read before the key is claimed: a request that
    // does not match the spec's schemas is answered 400 and leaves no
    // record.
    let begun = app
        .idempotency
        .begin_typed(
            &operations::ON_PAY_CALLBACK,
            request,
            |request| {
                let params: models::OnPayCallbackParams = request
                    .params_as(&[Param::header("Idempotency-Key", Scalar::String)])?;
                let body = request
                    .body_checked_as::<models::PayCallback>(400, ON_PAY_CALLBACK_BODY)?;
                Ok((body, params))
            },
        )
        .await;
    let (mut call, (body, params)) = match begun {
        Ok(begun) => begun,
        Err(answer) => return answer,
    };

    // The business function runs under the lease (`server.max-processing`):
    // past it, it is stopped and rolled back, and the key can be retried.
    let deadline = call.deadline();
    let (tx, request) = call.parts();
    let business = business::on_pay_callback::handle(tx, body, params, request);
    match within_lease(deadline, business).await {
        Some(outcome) => {
            let reply = outcome
                .and_then(|response| {
                    Reply::typed_checked(
                        response.status(),
                        response.content_type(),
                        response.into_body(),
                        ON_PAY_CALLBACK_ANSWERS,
                    )
                });
            call.finish(reply).await
        }
        None => call.lease_expired().await,
    }
}

/// The spec's validation keywords on the parameters of `getOrder`
/// that their types do not hold (pointers from the parameter names).
static GET_ORDER_PARAMS: &[Constraint] = &[
    Constraint {
        at: "/order_no",
        check: Check::MaxLength(64),
    },
];

/// The spec's validation keywords on the JSON bodies `getOrder` answers
/// with: an answer the business function builds that breaks one is a 500,
/// rolled back, never sent.
static GET_ORDER_ANSWERS: &[AnswerConstraints] = &[
    AnswerConstraints {
        status: "200",
        media_type: "application/json",
        constraints: ORDER_CHECKS,
    },
];

// getOrder: GET /orders/{order_no}
// Read an order
async fn get_order(State(app): State<App>, request: Request) -> Response {
    // Who may call it (providerSignature) is checked first: a request
    // that fails is answered 401 or 403.
    let request = match app.authenticate(&operations::GET_ORDER, request).await {
        Ok(request) => request,
        Err(answer) => return answer,
    };

    // The typed input is read before the business function runs: a request
    // that does not match the spec's schemas is answered 400.
    let begun = app
        .idempotency
        .begin_typed(
            &operations::GET_ORDER,
            request,
            |request| {
                let params: models::GetOrderParams = request
                    .params_checked_as(
                        &[Param::path("order_no", Scalar::String)],
                        GET_ORDER_PARAMS,
                    )?;
                Ok(params)
            },
        )
        .await;
    let (mut call, params) = match begun {
        Ok(begun) => begun,
        Err(answer) => return answer,
    };

    // The business function runs under the lease (`server.max-processing`):
    // past it, it is stopped and rolled back.
    let deadline = call.deadline();
    let (tx, request) = call.parts();
    let business = business::get_order::handle(tx, params, request);
    match within_lease(deadline, business).await {
        Some(outcome) => {
            let reply = outcome
                .and_then(|response| {
                    Reply::typed_checked(
                        response.status(),
                        response.content_type(),
                        response.into_body(),
                        GET_ORDER_ANSWERS,
                    )
                });
            call.finish(reply).await
        }
        None => call.lease_expired().await,
    }
}
