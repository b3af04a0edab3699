//! Starts the payment-callback service; see `src/lib.rs` for its settings.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match payment_callback::serve().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
