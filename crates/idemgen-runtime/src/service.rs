//! What every service around the engine needs: `GET /healthz`,
//! `GET /metrics`, the background purge, and serving until Ctrl-C or
//! SIGTERM.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::Semaphore;

use crate::engine::{Idempotency, Operation};
use crate::metrics;
use crate::problem::ProblemKind;
use crate::reply::Reply;
use crate::run_to_end::RunToEndService;

/// Records deleted per purge statement.
pub const PURGE_BATCH: i64 = 500;

#[derive(Clone)]
struct Probes {
    idempotency: Idempotency,
    operations: &'static [&'static Operation],
}

/// `GET /healthz` (200 `ok` while the database answers, else 503) and
/// `GET /metrics` (the Prometheus text of `operations`' measures and the
/// record table's size), to merge into
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
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        metrics::render(probes.idempotency.collector(probes.operations)),
    )
}

/// `router` with problem answers where axum would send an empty body: a
/// path nothing serves (404) and a method its path does not take (405;
/// axum still adds `Allow`). Call it on the finished router, since the
/// 405 answer reaches only the routes registered before it.
pub fn with_problem_fallbacks(router: Router) -> Router {
    router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

async fn not_found(uri: axum::http::Uri) -> Response {
    Reply::refusal(
        ProblemKind::NotFound,
        StatusCode::NOT_FOUND,
        &format!("no operation is served at `{}`", uri.path()),
    )
    .into_response()
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    Reply::refusal(
        ProblemKind::MethodNotAllowed,
        StatusCode::METHOD_NOT_ALLOWED,
        &format!(
            "`{}` does not take {method}; `Allow` lists the methods it does",
            uri.path()
        ),
    )
    .into_response()
}

/// Purges expired records every `every` (at least a second) in the
/// background, counting first the records that got stuck since the last
/// purge, then samples the record table's size for `GET /metrics`.
pub fn spawn_purge(idempotency: Idempotency, every: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every.max(Duration::from_secs(1)));
        loop {
            ticks.tick().await;
            // Before the purge, which may delete a record stuck since the
            // last tick whose window has ended too.
            if let Err(error) = idempotency.sample_stuck().await {
                tracing::warn!(%error, "counting stuck idempotency records failed");
            }
            match idempotency.purge_expired(PURGE_BATCH).await {
                Ok(0) => {}
                Ok(deleted) => tracing::info!(deleted, "purged expired idempotency records"),
                Err(error) => tracing::warn!(%error, "purging expired idempotency records failed"),
            }
            if let Err(error) = idempotency.sample_census().await {
                tracing::warn!(%error, "counting idempotency records failed");
            }
        }
    })
}

/// Logs to standard output with `RUST_LOG` as the filter (default `info`),
/// in colour on a terminal. Built with the `otel` feature, also exports
/// each request's span over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set
/// (see [`crate::otel`]), whatever `RUST_LOG` says.
pub fn init_logging() {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::stdout().is_terminal())
        .with_filter(filter);
    let subscriber = tracing_subscriber::registry().with(logs);
    // Spans are exported whatever RUST_LOG keeps in the logs: a service
    // that logs only warnings still traces its requests.
    #[cfg(feature = "otel")]
    let subscriber = subscriber.with(
        crate::otel::layer_from_env()
            .map(|layer| layer.with_filter(tracing_subscriber::filter::LevelFilter::INFO)),
    );
    subscriber.init();
}

/// How long a client may take to send a request's headers, and how long
/// an idle keep-alive connection stays open (hyper times both with one
/// timer): long enough for proxies that keep upstream connections 60 s,
/// short enough that a client trickling its headers (slowloris) cannot hold
/// a connection for good.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(75);

/// How long shutting down waits for requests in flight.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How much a client may make the server hold before it has been told
/// who it is: the defaults of [`Limits`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// The default bound on bytes of request bodies read at once: 64 bodies
/// of the largest size, or many thousands of the small ones callbacks
/// send.
pub const DEFAULT_BODY_BYTES_IN_FLIGHT: usize = 64 * crate::reply::MAX_BODY_BYTES;

/// Largest request head (request line and headers) hyper buffers; a
/// longer one is answered 431. Also the most hyper buffers of a body
/// ahead of the reader.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What [`serve`] bounds, so that clients, authenticated or not, cannot
/// make it hold memory without end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once. One past them is answered `503` with
    /// `Retry-After` and closed, its request unread.
    pub max_connections: usize,
    /// Bytes of request bodies being read at once, over all connections.
    /// A request whose body would take the total past them is answered
    /// `503` with `Retry-After`, its body unread (a declared length counts
    /// before anything is read, a chunked body as it arrives).
    pub body_bytes_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            body_bytes_in_flight: DEFAULT_BODY_BYTES_IN_FLIGHT,
        }
    }
}

impl Limits {
    /// The defaults, with `MAX_CONNECTIONS` and `MAX_BODY_BYTES_IN_FLIGHT`
    /// when set; a value that is not a positive whole number is an error
    /// naming the variable.
    pub fn from_env() -> Result<Limits, String> {
        let read = |variable: &str, default: usize| match std::env::var(variable) {
            Err(_) => Ok(default),
            Ok(text) => text
                .parse::<usize>()
                .ok()
                .filter(|value| *value > 0)
                .ok_or_else(|| format!("{variable} must be a positive whole number, not `{text}`")),
        };
        let defaults = Limits::default();
        Ok(Limits {
            max_connections: read("MAX_CONNECTIONS", defaults.max_connections)?,
            body_bytes_in_flight: read("MAX_BODY_BYTES_IN_FLIGHT", defaults.body_bytes_in_flight)?,
        })
    }
}

/// Serves `router` on `listen_addr` (HTTP/1.1) until Ctrl-C or SIGTERM,
/// letting requests in flight finish (for up to [`DRAIN_TIMEOUT`]).
/// Headers must arrive within [`HEADER_READ_TIMEOUT`], bodies within
/// [`crate::BODY_READ_TIMEOUT`]; connections and bodies in flight are
/// bounded by [`Limits::from_env`].
pub async fn serve(listen_addr: &str, router: Router) -> std::io::Result<()> {
    let limits = Limits::from_env()
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
    serve_with(listen_addr, router, HEADER_READ_TIMEOUT, limits).await
}

/// [`serve`] with another header (and keep-alive idle) timeout and the
/// default [`Limits`].
pub async fn serve_with_header_timeout(
    listen_addr: &str,
    router: Router,
    header_timeout: Duration,
) -> std::io::Result<()> {
    serve_with(listen_addr, router, header_timeout, Limits::default()).await
}

/// [`serve`] with the header (and keep-alive idle) timeout and limits
/// given.
pub async fn serve_with(
    listen_addr: &str,
    router: Router,
    header_timeout: Duration,
    limits: Limits,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let listener = tokio::net::TcpListener::bind(listen_addr).await?;
    tracing::info!(address = %listener.local_addr()?, ?limits, "listening");
    give_memory_back_after_bursts();
    // Each request carries its server's budget to `Request::read`.
    let router = router.layer(axum::Extension(crate::in_flight::InFlight::new(
        limits.body_bytes_in_flight,
    )));
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let turning_away = Arc::new(Semaphore::new(TURNING_AWAY));
    let mut builder = hyper::server::conn::http1::Builder::new();
    // `half_close`: a client that shuts down its sending side once its
    // request is sent (`shutdown(SHUT_WR)`) still gets the answer; without
    // it the request ran (a payment was made) and the answer was dropped.
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD_BYTES)
        .half_close(true);
    let graceful = GracefulShutdown::new();
    let mut shutting_down = std::pin::pin!(shutdown());
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A connection reset before it was accepted: the next one.
                Err(error) if is_connection_error(&error) => continue,
                // Out of file descriptors, say: wait rather than spin.
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
            () = &mut shutting_down => break,
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            // Past the limit: answered 503 from a few bytes of memory, or,
            // when even those answers are too many, closed.
            if let Ok(permit) = turning_away.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    turn_away(stream).await;
                    drop(permit);
                });
            }
            continue;
        };
        let service = RunToEndService(TowerToHyperService::new(router.clone()));
        // No upgrades (WebSocket): the services this serves have none.
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(permit);
        });
    }
    // Refuse new connections at once, so a load balancer fails over
    // instead of waiting on a server that is draining.
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after {DRAIN_TIMEOUT:?}; stopping anyway");
    }
    #[cfg(feature = "otel")]
    let _ = tokio::task::spawn_blocking(crate::otel::flush_traces).await;
    Ok(())
}

/// glibc's malloc raises the size from which it maps an allocation on its
/// own each time it frees a mapped one, and trims its heaps only past twice
/// that: after a burst of megabyte request bodies, every later one comes
/// from the heaps, and a few small allocations left between them keep
/// hundreds of megabytes from the system for good (measured: 189 MB held
/// after 600 bodies, none in flight). Fixed thresholds (glibc's initial
/// 128 KiB) map every large body on its own and trim the heaps once they
/// have that much free at the top, so the memory goes back when the burst
/// is over (13 MB). Other allocators and systems are left as they are.
fn give_memory_back_after_bursts() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const THRESHOLD: libc::c_int = 128 * 1024;
        // SAFETY: `mallopt` only sets malloc's parameters (it takes the
        // arena locks itself) and changes no allocation already made.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD);
        }
    }
}

/// Connections past [`Limits::max_connections`] answered at once; past
/// these they are closed without an answer.
const TURNING_AWAY: usize = 64;

/// Answers a connection past [`Limits::max_connections`] `503` with
/// `Retry-After` without reading its request, then reads (and drops) what
/// the client still sends for up to a second, so that closing does not
/// reset the connection before the client has read the answer.
async fn turn_away(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let body = Reply::refusal(
        ProblemKind::Overloaded,
        StatusCode::SERVICE_UNAVAILABLE,
        "too many connections are open; retry after `Retry-After`",
    )
    .body;
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: {}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        crate::problem::CONTENT_TYPE,
        body.len()
    );
    let answered = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(&body).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answered).await;
}

fn is_connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
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
