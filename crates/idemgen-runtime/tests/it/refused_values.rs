//! A value the database refuses (PostgreSQL's NUL and invalid byte
//! sequences, a string too long for its column, a number out of its
//! column's range, a CHECK constraint, and MariaDB's and SQLite's
//! equivalents) is the client's to fix: a `400` problem naming what was
//! refused, never a 500, logged once as a warning; the business write is
//! rolled back and the attempt recorded as a failure, so a retry with the
//! same key is refused again rather than answered 500.

use std::sync::{Arc, Mutex};

use crate::support::{Table, body_text, key, post_json, run_detached};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use idemgen_runtime::{Contract, Dialect, Idempotency, Operation, Reply};
use serde::Deserialize;
use serde_json::json;
use tower::ServiceExt;

const KEY_PATTERN: &str =
    "^pay:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

static ADD: Operation = Operation::idempotent(
    "addLine",
    "add_line",
    Contract::header("pay:{uuid}", KEY_PATTERN, 60_000, 3_000),
);

static FIND: Operation = Operation::plain("findLine", "find_line");

#[derive(Deserialize)]
struct Line {
    code: String,
    qty: i64,
}

/// A record table and a business table beside it whose columns refuse
/// what the tests send: `code` holds 8 characters, `qty` is a SMALLINT
/// that must be positive.
struct Fixture {
    table: Table,
    engine: Idempotency,
    business: String,
}

impl Fixture {
    async fn new() -> Option<Fixture> {
        let table = Table::new().await?;
        let engine = table.engine().await;
        let business = format!("{}_lines", table.name);
        let ddl = match Dialect::BUILT {
            Dialect::Mysql => format!(
                "CREATE TABLE {business} (code VARCHAR(8) CHARACTER SET utf8mb4 NOT NULL, \
                 qty SMALLINT NOT NULL, CONSTRAINT {business}_qty CHECK (qty > 0))"
            ),
            Dialect::Sqlite | Dialect::Postgres => format!(
                "CREATE TABLE {business} (code VARCHAR(8) NOT NULL, \
                 qty SMALLINT NOT NULL CONSTRAINT {business}_qty CHECK (qty > 0))"
            ),
        };
        table.sql(&ddl).await;
        Some(Fixture {
            table,
            engine,
            business,
        })
    }

    fn placeholders(&self) -> (&'static str, &'static str) {
        match Dialect::BUILT {
            Dialect::Postgres => ("$1", "$2"),
            Dialect::Mysql | Dialect::Sqlite => ("?", "?"),
        }
    }

    /// `POST /lines` with `body` under `key`: the line is inserted in the
    /// business transaction and a database error is handed to `finish`,
    /// as a generated service's business code does with `?`.
    async fn add(&self, key: &str, body: &str) -> Response {
        let mut request = post_json("/lines", Some(key), &json!({}));
        *request.body_mut() = Body::from(body.to_string());
        let (mut call, line) = match self
            .engine
            .begin_typed(&ADD, request, |request| request.body_as::<Line>())
            .await
        {
            Ok(claimed) => claimed,
            Err(answer) => return answer,
        };
        let (p1, p2) = self.placeholders();
        let (tx, _) = call.parts();
        let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO {} (code, qty) VALUES ({p1}, {p2})",
            self.business
        )))
        .bind(&line.code)
        .bind(line.qty)
        .execute(&mut **tx)
        .await;
        call.finish(inserted.map(|_| Reply::json(StatusCode::CREATED, &json!({"code": line.code}))))
            .await
    }

    async fn count(&self, sql: &str) -> i64 {
        let sql = sql
            .replace("{t}", &self.table.name)
            .replace("{b}", &self.business);
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
            .fetch_one(&self.table.pool)
            .await
            .unwrap()
    }

    /// `GET /lines/{code}` served by a router, so the path is decoded as
    /// a service decodes it (`%00` is NUL); looked up in a plain
    /// transaction.
    async fn find(&self, path: &str) -> Response {
        let engine = self.engine.clone();
        let business = self.business.clone();
        let (p1, _) = self.placeholders();
        let router = axum::Router::new().route(
            "/lines/{code}",
            axum::routing::get(move |request: axum::extract::Request| async move {
                let mut call = match engine.begin(&FIND, request).await {
                    Ok(call) => call,
                    Err(answer) => return answer,
                };
                let (tx, request) = call.parts();
                let code = request.path_param("code").unwrap_or_default().to_string();
                let found = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!(
                    "SELECT COUNT(*) FROM {business} WHERE code = {p1}"
                )))
                .bind(code)
                .fetch_one(&mut **tx)
                .await;
                call.finish(
                    found.map(|found| Reply::json(StatusCode::OK, &json!({"found": found}))),
                )
                .await
            }),
        );
        router
            .oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if Dialect::BUILT != Dialect::Sqlite {
            run_detached(
                &self.table.url,
                format!("DROP TABLE IF EXISTS {}", self.business),
            );
        }
    }
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }
}

/// Which databases refuse a value, and the words that name what they
/// refused.
struct Case {
    body: &'static str,
    refused_by: &'static [Dialect],
    named: &'static str,
}

const ALL: &[Dialect] = &[Dialect::Sqlite, Dialect::Mysql, Dialect::Postgres];
const SERVERS: &[Dialect] = &[Dialect::Mysql, Dialect::Postgres];

const CASES: &[Case] = &[
    // The issue's `"txn_id": "T\u0000X"`: PostgreSQL's text holds no NUL.
    Case {
        body: r#"{"code": "T\u0000X", "qty": 1}"#,
        refused_by: &[Dialect::Postgres],
        named: "invalid byte sequence",
    },
    Case {
        body: r#"{"code": "TOO-LONG-CODE", "qty": 1}"#,
        refused_by: SERVERS,
        named: "too long",
    },
    Case {
        body: r#"{"code": "BIG", "qty": 100000}"#,
        refused_by: SERVERS,
        named: "out of range",
    },
    Case {
        body: r#"{"code": "NEG", "qty": -5}"#,
        refused_by: ALL,
        named: "_qty",
    },
];

#[tokio::test]
async fn a_value_the_database_refuses_is_a_400_naming_it_and_a_recorded_failure() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    for case in CASES {
        let key = key();
        let before = fixture.count("SELECT COUNT(*) FROM {b}").await;
        let answer = fixture.add(&key, case.body).await;
        let status = answer.status();
        let content_type = answer.headers().get("content-type").cloned();
        let text = body_text(answer).await;
        let logs = captured.take();
        if !case.refused_by.contains(&Dialect::BUILT) {
            assert_eq!(status, StatusCode::CREATED, "{}: {text}", case.body);
            continue;
        }
        assert_eq!(status, StatusCode::BAD_REQUEST, "{}: {text}", case.body);
        assert_eq!(content_type.unwrap(), "application/problem+json");
        assert!(text.contains("urn:idemgen:problem:value-refused"), "{text}");
        assert!(
            text.to_lowercase().contains(case.named),
            "{}: the problem names what was refused: {text}",
            case.body
        );
        // Logged once, as a warning; nothing at ERROR.
        assert_eq!(
            logs.matches("the database refused a value").count(),
            1,
            "{}: {logs}",
            case.body
        );
        assert!(logs.contains(" WARN "), "{logs}");
        assert!(!logs.contains("ERROR"), "{}: {logs}", case.body);
        // Rolled back, and recorded as a failure.
        let after = fixture.count("SELECT COUNT(*) FROM {b}").await;
        assert_eq!(after, before, "{}", case.body);
        let failed = fixture
            .count(&format!(
                "SELECT COUNT(*) FROM {{t}} WHERE status = 'failed' AND idem_key = '{key}'"
            ))
            .await;
        assert_eq!(failed, 1, "{}", case.body);
        // `failed: retry`: the retry runs again and is refused again.
        let again = fixture.add(&key, case.body).await;
        assert_eq!(again.status(), StatusCode::BAD_REQUEST, "{}", case.body);
        assert!(body_text(again).await.contains("value-refused"));
        captured.take();
    }
    // A good line still goes through.
    let answer = fixture.add(&key(), r#"{"code": "OK", "qty": 1}"#).await;
    assert_eq!(answer.status(), StatusCode::CREATED);
}

/// The issue's `GET /orders/%00`: a lookup by a value the database cannot
/// compare is a `400` on PostgreSQL, and simply not found elsewhere.
#[tokio::test]
async fn a_lookup_by_a_value_the_database_refuses_is_a_400() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let answer = fixture.find("/lines/%00").await;
    let status = answer.status();
    let text = body_text(answer).await;
    if Dialect::BUILT == Dialect::Postgres {
        assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
        assert!(text.contains("value-refused"), "{text}");
        assert!(text.contains("invalid byte sequence"), "{text}");
    } else {
        assert_eq!(status, StatusCode::OK, "{text}");
        assert_eq!(text, r#"{"found":0}"#);
    }
    let answer = fixture.find("/lines/A%2D1").await;
    assert_eq!(answer.status(), StatusCode::OK);
}
