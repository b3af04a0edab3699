//! What every service around the engine needs: `GET /healthz`,
//! `GET /metrics`, the background purge, and serving until Ctrl-C or
//! SIGTERM.

use std::io::IsTerminal;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::engine::{Idempotency, Operation};
use crate::metrics;

/// Records deleted per purge statement.
pub const PURGE_BATCH: i64 = 500;

#[derive(Clone)]
struct Probes {
    idempotency: Idempotency,
    operations: &'static [&'static Operation],
}

/// `GET /healthz` (200 `ok` while the database answers, else 503) and
/// `GET /metrics` (the Prometheus counters of `operations`), to merge into
/// a service's router.
pub fn health_and_metrics(
    idempotency: Idempotency,
    operations: &'static [&'static Operation],
) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_text))
        .with_state(Probes {
            idempotency,
            operations,
        })
}

async fn healthz(State(probes): State<Probes>) -> impl IntoResponse {
    match sqlx::query("SELECT 1")
        .execute(probes.idempotency.pool())
        .await
    {
        Ok(_) => (StatusCode::OK, "ok\n"),
        Err(error) => {
            tracing::warn!(%error, "health check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable\n")
        }
    }
}

async fn metrics_text(State(probes): State<Probes>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics::render(probes.operations),
    )
}

/// Purges expired records every `every` (at least a second) in the
/// background.
pub fn spawn_purge(idempotency: Idempotency, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every.max(Duration::from_secs(1)));
        loop {
            ticks.tick().await;
            match idempotency.purge_expired(PURGE_BATCH).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "purged expired idempotency records"),
                Err(error) => tracing::warn!(%error, "purging expired idempotency records failed"),
            }
        }
    })
}

/// Logs to standard output with `RUST_LOG` as the filter (default `info`),
/// in colour on a terminal.
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_ansi(std::io::stdout().is_terminal())
        .init();
}

/// Serves `router` on `listen_addr` until Ctrl-C or SIGTERM, letting
/// requests in flight finish.
pub async fn serve(listen_addr: &str, router: Router) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen_addr).await?;
    tracing::info!(address = %listener.local_addr()?, "listening");
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown())
        .await
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}
