//! The headers a spec declares on a response are stored with the record
//! and replayed with it, byte for byte; the ones that belong to one
//! exchange (`Set-Cookie`, `Date`) are sent once and never replayed. On
//! this build's database (SQLite always; MariaDB or PostgreSQL with
//! `--features mysql|postgres` and their URL), and on a table created
//! before the record kept headers, brought up to date by the migrations a
//! generated service runs at start.

use crate::created_headers_models::{CreateOrderCreatedBody, CreateOrderResponse};
use crate::support::{self, MIGRATIONS, Table, body_text, claim, key, pay, skipped};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use idemgen_runtime::{Contract, Dialect, Idempotency, Operation, REPLAYED_HEADER, Reply};

static CREATE: Operation = Operation::idempotent(
    "createOrder",
    "create_order",
    Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 3_000),
);

/// The typed `Created` response of `createOrder`, as the business code of
/// a service generated from `tests/codegen_fixtures/created-headers.yaml`
/// returns it (its models are idemgen's output for that spec), turned into
/// the answer as the generated handler does.
fn created() -> Reply {
    let response = CreateOrderResponse::Created {
        body: CreateOrderCreatedBody {
            order_no: "A-1".into(),
        },
        location: "/orders/A-1".into(),
        etag: Some("\"v1\"".into()),
        x_stock_left: None,
        set_cookie: Some("session=abc; HttpOnly".into()),
    };
    let headers = response.headers().unwrap();
    Reply::typed(
        response.status(),
        response.content_type(),
        response.into_body(),
    )
    .unwrap()
    .with_headers(headers)
    .unwrap()
}

fn header<'r>(response: &'r Response, name: &str) -> Option<&'r HeaderValue> {
    response.headers().get(name)
}

/// A first answer and its replay: same status, content type, body,
/// `Location` and `ETag`; the cookie of the first exchange only.
async fn first_and_replay(engine: &Idempotency) {
    let key = key();
    let call = claim(&CREATE, engine, pay(&key)).await;
    let first = call.answer(created()).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    assert_eq!(header(&first, "location").unwrap(), "/orders/A-1");
    assert_eq!(header(&first, "etag").unwrap(), "\"v1\"");
    assert_eq!(
        header(&first, "set-cookie").unwrap(),
        "session=abc; HttpOnly"
    );
    assert!(header(&first, REPLAYED_HEADER).is_none());
    let first_content_type = header(&first, "content-type").cloned();
    let first_body = body_text(first).await;

    let replay = engine
        .begin(&CREATE, pay(&key))
        .await
        .err()
        .expect("a replay");
    assert_eq!(replay.status(), StatusCode::CREATED);
    assert_eq!(header(&replay, REPLAYED_HEADER).unwrap(), "true");
    assert_eq!(
        header(&replay, "location").unwrap().as_bytes(),
        b"/orders/A-1"
    );
    assert_eq!(header(&replay, "etag").unwrap().as_bytes(), b"\"v1\"");
    assert_eq!(header(&replay, "content-type").cloned(), first_content_type);
    assert!(header(&replay, "set-cookie").is_none(), "a cookie replayed");
    let replayed: Vec<&str> = replay.headers().keys().map(|name| name.as_str()).collect();
    assert_eq!(
        replayed,
        ["content-type", "location", "etag", REPLAYED_HEADER],
        "only the declared headers come back"
    );
    assert_eq!(body_text(replay).await, first_body);
}

#[tokio::test]
async fn a_201_is_replayed_with_its_location_and_etag() {
    let Some(table) = Table::new().await else {
        return;
    };
    first_and_replay(&table.engine().await).await;
}

/// A record stored before the column existed (no headers) replays as it
/// always did once the table is migrated.
#[tokio::test]
async fn a_table_created_before_headers_were_stored_works_once_migrated() {
    let Some(table) = Table::migrated_to(1).await else {
        return;
    };
    let refused = Idempotency::new(table.pool.clone(), &table.name)
        .await
        .err()
        .expect("the old table lacks response_headers")
        .to_string();
    assert!(refused.contains("ALTER TABLE"), "{refused}");

    let body = match Dialect::BUILT {
        Dialect::Postgres => "decode('7b7d', 'hex')",
        Dialect::Sqlite | Dialect::Mysql => "X'7b7d'",
    };
    table
        .sql(&format!(
            "INSERT INTO {{t}} (scope, idem_key, fingerprint, status, claim_token, \
             lease_expires_at, expires_at, response_status, response_content_type, \
             response_body, created_at, updated_at) VALUES ('create_order', \
             'pay:00000000-0000-4000-8000-000000000000', 'old', 'completed', 'token', \
             0, 99999999999999, 201, 'application/json', {body}, 0, 0)"
        ))
        .await;
    table.migrate(MIGRATIONS[1]).await;
    let engine = table.engine().await;
    let old: Option<Vec<u8>> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT response_headers FROM {} WHERE fingerprint = 'old'",
        table.name
    )))
    .fetch_one(&table.pool)
    .await
    .unwrap();
    assert_eq!(old, None, "an old record has no stored headers");
    first_and_replay(&engine).await;
}

/// A service generated before records kept headers, with a migration of
/// its project's own (`0002_orders`), started again after `idemgen gen`:
/// its migrator finds `0001` and `0002` applied and unchanged, applies
/// `20261204000000_record_response_headers`, and the service serves and
/// replays headers. In a database of its own (the migrator's bookkeeping
/// table is per database).
#[tokio::test]
async fn a_service_restarted_on_an_old_table_migrates_it_at_start() {
    let Some(database) = Database::new().await else {
        return;
    };
    let old = database.migrator(1).await;
    let pool = idemgen_runtime::connect(&database.url, &old)
        .await
        .expect("the old service starts");
    assert!(
        Idempotency::new(pool.clone(), "idempotent_record")
            .await
            .is_err()
    );
    pool.close().await;

    let new = database.migrator(MIGRATIONS.len()).await;
    let pool = idemgen_runtime::connect(&database.url, &new)
        .await
        .expect("the regenerated service starts on the old table");
    let engine = Idempotency::new(pool.clone(), "idempotent_record")
        .await
        .expect("the migrated table fits the statements");
    first_and_replay(&engine).await;
    pool.close().await;
}

/// A database for one test: a fresh SQLite file, or a database created on
/// the server (dropped afterwards), and a directory of the first
/// migrations.
struct Database {
    url: String,
    dir: std::path::PathBuf,
    drop_sql: Option<(String, String)>,
}

impl Database {
    async fn new() -> Option<Database> {
        let name = format!("idem_mig_{}", uuid::Uuid::new_v4().simple());
        let dir = std::env::temp_dir().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let Some(variable) = support::server_variable() else {
            let url = format!("sqlite://{}", dir.join("service.db").display());
            return Some(Database {
                url,
                dir,
                drop_sql: None,
            });
        };
        let Ok(server) = std::env::var(variable) else {
            skipped(&format!("set {variable} to run"));
            return None;
        };
        let admin = idemgen_runtime::connect(&server, &support::NO_MIGRATIONS)
            .await
            .expect("connect");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await
            .expect("create a database");
        admin.close().await;
        // The server URL with this database instead of its own.
        let (base, query) = server.split_once('?').unwrap_or((&server, ""));
        let base = &base[..base.rfind('/').expect("a URL with a database")];
        let mut url = format!("{base}/{name}");
        if !query.is_empty() {
            url = format!("{url}?{query}");
        }
        let drop_sql = match Dialect::BUILT {
            Dialect::Postgres => format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            _ => format!("DROP DATABASE IF EXISTS {name}"),
        };
        Some(Database {
            url,
            dir,
            drop_sql: Some((server, drop_sql)),
        })
    }

    /// The migrator of a service whose project holds the first `count` of
    /// idemgen's migrations, as `idemgen gen` writes them, and one of the
    /// project's own, numbered next after idemgen's first as a user does.
    async fn migrator(&self, count: usize) -> sqlx::migrate::Migrator {
        let dir = self.dir.join(format!("migrations-{count}"));
        std::fs::create_dir_all(&dir).unwrap();
        let names = [
            "0001_idempotency_records.sql",
            "20261204000000_record_response_headers.sql",
            "20261205000000_record_in_progress.sql",
        ];
        for (name, sql) in names.iter().zip(&MIGRATIONS[..count]) {
            std::fs::write(dir.join(name), sql).unwrap();
        }
        std::fs::write(
            dir.join("0002_orders.sql"),
            "CREATE TABLE orders (id INTEGER PRIMARY KEY);\n",
        )
        .unwrap();
        sqlx::migrate::Migrator::new(dir.as_path()).await.unwrap()
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some((server, sql)) = self.drop_sql.take() {
            support::run_detached(&server, sql);
        }
    }
}

static MARKED_ITS_OWN_WAY: Operation = Operation::idempotent(
    "createOrder",
    "create_order",
    Contract {
        replayed_header: Some("Idempotency-Replayed"),
        ..Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 3_000)
    },
);

static UNMARKED: Operation = Operation::idempotent(
    "createOrder",
    "create_order",
    Contract {
        replayed_header: None,
        ..Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 3_000)
    },
);

/// `responses.replayed-header`: a replay carries the mark the contract
/// names and no other, or none when the contract declares replays
/// unmarked; a first answer never carries one.
#[tokio::test]
async fn a_replay_carries_the_mark_the_contract_names() {
    let Some(table) = Table::new().await else {
        return;
    };
    let engine = table.engine().await;
    for (operation, mark) in [
        (&MARKED_ITS_OWN_WAY, Some("idempotency-replayed")),
        (&UNMARKED, None),
    ] {
        let key = key();
        let first = claim(operation, &engine, pay(&key))
            .await
            .answer(created())
            .await;
        assert_eq!(first.status(), StatusCode::CREATED);
        let replay = engine
            .begin(operation, pay(&key))
            .await
            .err()
            .expect("a replay");
        assert_eq!(replay.status(), StatusCode::CREATED);
        let mut expected = vec!["content-type", "location", "etag"];
        expected.extend(mark);
        let replayed: Vec<&str> = replay.headers().keys().map(|name| name.as_str()).collect();
        assert_eq!(replayed, expected, "{mark:?}");
        if let Some(mark) = mark {
            assert_eq!(header(&replay, mark).unwrap(), "true");
            assert!(header(&first, mark).is_none());
        }
    }
}
