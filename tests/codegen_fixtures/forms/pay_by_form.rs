//! Echoes the form the business code received, so the test sees which
//! values got past the spec's keywords.

use crate::models;
use crate::{BusinessError, Request, Tx};

pub async fn handle(
    _tx: &mut Tx,
    body: models::PayByFormRequest,
    _params: models::PayByFormParams,
    _request: &Request,
) -> Result<models::PayByFormResponse, BusinessError> {
    Ok(models::PayByFormResponse::Ok(serde_json::json!({
        "body": body,
    })))
}
