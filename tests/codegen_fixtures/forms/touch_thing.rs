//! Echoes the path parameter the business code received, typed and as
//! the request holds it, so the test sees that `.json` was cut off.

use crate::models;
use crate::{BusinessError, Request, Tx};

pub async fn handle(
    _tx: &mut Tx,
    params: models::TouchThingParams,
    request: &Request,
) -> Result<models::TouchThingResponse, BusinessError> {
    Ok(models::TouchThingResponse::Ok(serde_json::json!({
        "id": params.id,
        "path_param": request.path_param("id"),
    })))
}
