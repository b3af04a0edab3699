//! Echoes what the business code received, so the test reads the typed
//! values the parts were read into.

use crate::models;
use crate::{BusinessError, Request, Tx};

pub async fn handle(
    _tx: &mut Tx,
    body: models::UploadFileRequest,
    _params: models::UploadFileParams,
    _request: &Request,
) -> Result<models::UploadFileResponse, BusinessError> {
    Ok(models::UploadFileResponse::Ok(serde_json::json!({
        "body": body,
    })))
}
