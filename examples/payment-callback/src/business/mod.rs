//! Your part: one business function per operation, each in its own file.
//! idemgen creates a file once and never overwrites it; this list is
//! regenerated.
#![cfg_attr(rustfmt, rustfmt::skip)]

// onPayCallback: POST /callbacks/pay
// Payment-succeeded callback from the payment provider
pub mod on_pay_callback;

// getOrder: GET /orders/{order_no}
// Read an order
pub mod get_order;
