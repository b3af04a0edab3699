//! Starts the payment-callback service; see `src/lib.rs` for its settings.
#![cfg_attr(rustfmt, rustfmt::skip)]

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match payment_callback::serve().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // It could not start: a setting, the database or the address is
        // wrong, and the message says which.
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::from(2)
        }
    }
}
