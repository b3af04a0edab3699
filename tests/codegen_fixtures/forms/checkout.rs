//! Echoes what the business code received, so the test reads the typed
//! values the parameters and the form were parsed into.

use crate::models;
use crate::{BusinessError, Request, Tx};

pub async fn handle(
    _tx: &mut Tx,
    body: models::CheckoutRequest,
    params: models::CheckoutParams,
    _request: &Request,
) -> Result<models::CheckoutResponse, BusinessError> {
    Ok(models::CheckoutResponse::Ok(serde_json::json!({
        "body": body,
        "params": params,
    })))
}
