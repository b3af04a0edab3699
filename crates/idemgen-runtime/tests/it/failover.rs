//! Following the primary through a multi-host `DATABASE_URL`, in every
//! `target_session_attrs` a service may ask for (`any`, what a URL without
//! the attribute means, `read-write` and `primary`): the first host is a
//! TCP proxy in front of the real server, the second the server itself.
//! Payments go through the first host; when it dies (the proxy closes its
//! listener and every connection, as a crashed host would), the pool moves
//! to the second and payments are answered again, without a restart.

#![cfg(feature = "postgres")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{NO_MIGRATIONS, Table, body_text, key, pay};
use axum::http::StatusCode;
use idemgen_runtime::{Contract, Idempotency, Operation, Reply};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

static PAY: Operation = Operation::idempotent(
    "onPay",
    "on_pay",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 5_000),
);

/// A host that can die: a proxy to `upstream`, counting the connections it
/// took. Dropping the task set closes the listener and every connection.
struct Host {
    port: u16,
    connections: Arc<AtomicUsize>,
    tasks: JoinSet<()>,
}

impl Host {
    async fn start(upstream: String) -> Host {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut relays = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let upstream = upstream.clone();
                relays.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Host {
            port,
            connections,
            tasks,
        }
    }

    fn kill(&mut self) {
        self.tasks.abort_all();
    }
}

/// `url`'s `host:port`, and `url` with `hosts` (a comma-separated list) in
/// its place and `attrs` as its query.
fn with_hosts(url: &str, hosts: &str, attrs: &str) -> (String, String) {
    let after_at = url
        .rfind('@')
        .map_or(url.find("//").unwrap() + 2, |at| at + 1);
    let rest = &url[after_at..];
    let end = rest.find('/').unwrap_or(rest.len());
    let path = rest[end..].split('?').next().unwrap();
    let query = if attrs.is_empty() {
        String::new()
    } else {
        format!("?target_session_attrs={attrs}")
    };
    (
        rest[..end].to_string(),
        format!("{}{hosts}{path}{query}", &url[..after_at]),
    )
}

async fn pay_once(engine: &Idempotency) -> axum::response::Response {
    let mut call = match engine.begin(&PAY, pay(&key())).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let (tx, _) = call.parts();
    if let Err(error) = sqlx::query("SELECT 1").execute(&mut **tx).await {
        return call.finish(Err::<Reply, _>(error)).await;
    }
    call.finish(Ok::<_, sqlx::Error>(Reply::json(
        StatusCode::CREATED,
        &json!({"paid": 100}),
    )))
    .await
}

/// One payment that must be answered 201.
async fn pays(engine: &Idempotency) {
    let answer = pay_once(engine).await;
    let status = answer.status();
    assert_eq!(status, StatusCode::CREATED, "{}", body_text(answer).await);
}

/// Pays through the first host, kills it, and returns how long after the
/// kill the first payment was answered 201 again, and what was answered
/// meanwhile.
async fn fail_over(attrs: &str) -> Option<(Duration, Vec<u16>)> {
    let table = Table::new().await?;
    let (server, _) = with_hosts(&table.url, "", "");
    let mut first = Host::start(server.clone()).await;
    let hosts = format!("127.0.0.1:{},{server}", first.port);
    let (_, url) = with_hosts(&table.url, &hosts, attrs);
    let pool = idemgen_runtime::connect_with_pool_size(&url, &NO_MIGRATIONS, Some(4))
        .await
        .unwrap_or_else(|error| panic!("connect to {url}: {error}"));
    let engine = Idempotency::new(pool, &table.name).await.unwrap();
    for _ in 0..5 {
        pays(&engine).await;
    }
    assert!(
        first.connections.load(Ordering::SeqCst) > 0,
        "the pool wrote through the first host"
    );
    first.kill();
    let killed = Instant::now();
    let mut meanwhile = Vec::new();
    loop {
        let answer = pay_once(&engine).await;
        if answer.status() == StatusCode::CREATED {
            return Some((killed.elapsed(), meanwhile));
        }
        meanwhile.push(answer.status().as_u16());
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "{url}: no payment answered from the second host 20 s after the first died; \
             {} answers meanwhile, the last {}",
            meanwhile.len(),
            meanwhile.last().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_kind_follows_the_second_host_when_the_first_dies() {
    for attrs in ["", "any", "read-write", "primary"] {
        let Some((took, meanwhile)) = fail_over(attrs).await else {
            return;
        };
        let named = if attrs.is_empty() {
            "(none: any)"
        } else {
            attrs
        };
        eprintln!(
            "target_session_attrs={named}: paying again {took:.1?} after the first host died; \
             answered meanwhile: {meanwhile:?}"
        );
        assert!(
            meanwhile.iter().all(|status| matches!(status, 503 | 429)),
            "{named}: only 503 or 429 while failing over, never a 500 or a stored failure: \
             {meanwhile:?}"
        );
    }
}

/// A service whose sessions commit with `synchronous_commit` off (set for
/// the role, the database or, here, the connection) is told at start that
/// acknowledged answers can be lost; one with the default is not.
#[tokio::test]
async fn a_session_that_commits_without_waiting_is_warned_about() {
    let Some(table) = Table::new().await else {
        return;
    };
    assert_eq!(
        idemgen_runtime::commit_durability_warning(&table.pool).await,
        None
    );
    for (setting, says) in [("off", "crash"), ("local", "failover")] {
        let separator = if table.url.contains('?') { '&' } else { '?' };
        let url = format!(
            "{}{separator}options=-c%20synchronous_commit%3D{setting}",
            table.url
        );
        let pool = idemgen_runtime::connect(&url, &NO_MIGRATIONS)
            .await
            .unwrap();
        let warning = idemgen_runtime::commit_durability_warning(&pool)
            .await
            .unwrap_or_else(|| panic!("synchronous_commit={setting} is warned about"));
        assert!(warning.contains(&format!("`{setting}`")), "{warning}");
        assert!(warning.contains(says), "{warning}");
    }
}

/// A primary demoted under the service (its sessions become read-only, the
/// connections it had are closed) is not a busy server: with no other host
/// that takes writes, requests are answered 503 `database-unavailable`,
/// retry elsewhere, not 429 `server-busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_primary_is_unavailable_not_busy() {
    let Some(table) = Table::new().await else {
        return;
    };
    let database = format!("idem_demoted_{}", uuid::Uuid::new_v4().simple());
    table.sql(&format!("CREATE DATABASE {database}")).await;
    let (server, _) = with_hosts(&table.url, "", "");
    let url = format!(
        "{}{server}/{database}?target_session_attrs=read-write",
        &table.url[..table
            .url
            .rfind('@')
            .map_or(table.url.find("//").unwrap() + 2, |at| at + 1)]
    );
    let pool = idemgen_runtime::connect(&url, &NO_MIGRATIONS)
        .await
        .unwrap_or_else(|error| panic!("connect to {url}: {error}"));
    for migration in crate::support::MIGRATIONS {
        sqlx::raw_sql(sqlx::AssertSqlSafe(
            migration.replace("idempotent_record", "records"),
        ))
        .execute(&pool)
        .await
        .unwrap();
    }
    let engine = Idempotency::new(pool.clone(), "records").await.unwrap();
    pays(&engine).await;

    // Demoted: new sessions are read-only, the old ones are gone.
    table
        .sql(&format!(
            "ALTER DATABASE {database} SET default_transaction_read_only = on; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'"
        ))
        .await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let answer = pay_once(&engine).await;
        let status = answer.status();
        let text = body_text(answer).await;
        statuses.push(status.as_u16());
        if status == StatusCode::CREATED {
            panic!("a payment was answered 201 by a read-only server: {text}");
        }
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
        assert!(text.contains("database-unavailable"), "{text}");
    }
    pool.close().await;
    table
        .sql(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'"
        ))
        .await;
    table
        .sql(&format!("DROP DATABASE IF EXISTS {database}"))
        .await;
}
