//! Security before idempotency, against a real database (SQLite always,
//! MariaDB or PostgreSQL with `--features mysql|postgres` and
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL`): a request no scheme
//! admits is refused before its key is read, leaving no record, no
//! business write and its key unused; keys scoped by `principal` are one
//! caller's; credentials stay out of records and logs.

use std::sync::{Arc, Mutex};

use crate::support::{Table, body_text, key};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use idemgen_runtime::{
    ApiKeyIn, Contract, Credential, Fingerprint, Idempotency, Operation, Principal, Refusal, Reply,
    Scheme, SchemeKind, Security, Source, Verify, authenticate,
};
use serde_json::json;

const BEARER: Scheme = Scheme {
    name: "bearerAuth",
    kind: SchemeKind::Bearer,
    realm: "",
};
const QUERY_KEY: Scheme = Scheme {
    name: "queryKey",
    kind: SchemeKind::ApiKey {
        location: ApiKeyIn::Query,
        name: "api_key",
    },
    realm: "",
};

static SECURITY: Security = Security {
    alternatives: &[&[BEARER], &[QUERY_KEY]],
};

/// Keys scoped by principal; the query (but not its credential) is part
/// of the fingerprint.
static PAY: Operation = Operation::idempotent(
    "pay",
    "pay",
    Contract {
        scope: &[Source::Principal],
        fingerprint: Fingerprint {
            query: true,
            ..Fingerprint::DEFAULT
        },
        ..Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 3_000)
    },
)
.secured(SECURITY);

const ALICE_TOKEN: &str = "alice-s3cret-token";
const BOB_TOKEN: &str = "bob-s3cret-token";
const ALICE_QUERY_KEY: &str = "alice-s3cret-query-key";

/// Two callers, each with a token; anything else is refused.
struct Tokens;

impl Verify for Tokens {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        _request: &idemgen_runtime::Request,
    ) -> Result<Principal, Refusal> {
        let id = match credential {
            Credential::Bearer(token) if token == ALICE_TOKEN => "alice",
            Credential::Bearer(token) if token == BOB_TOKEN => "bob",
            Credential::ApiKey(key) if key == ALICE_QUERY_KEY => "alice",
            Credential::Missing => return Err(Refusal::missing(scheme)),
            _ => return Err(Refusal::unauthenticated("unknown credential")),
        };
        Ok(Principal::new(id, scheme.name))
    }
}

/// What a generated handler does: read, authenticate, then claim; the
/// business write counts rows in `{table}_writes`.
async fn handle(engine: &Idempotency, writes: &str, request: axum::extract::Request) -> Response {
    let mut request = match idemgen_runtime::Request::read(request).await {
        Ok(request) => request,
        Err(answer) => return answer,
    };
    match authenticate(&PAY.security, &Tokens, &request).await {
        Ok(principal) => request.principal = principal,
        Err(answer) => return answer,
    }
    let mut call = match engine.begin(&PAY, request).await {
        Ok(call) => call,
        Err(answer) => return answer,
    };
    let (tx, request) = call.parts();
    let principal = request.principal.clone().expect("authenticated");
    let written = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO {writes} (who) VALUES ('{}')",
        principal.id
    )))
    .execute(&mut **tx)
    .await;
    let reply = written.map(|_| {
        Reply::json(
            StatusCode::CREATED,
            &json!({ "paid_by": principal.id, "marker": uuid::Uuid::new_v4().to_string() }),
        )
    });
    call.finish(reply).await
}

struct Fixture {
    table: Table,
    engine: Idempotency,
    writes: String,
}

impl Fixture {
    async fn new() -> Option<Fixture> {
        let table = Table::new().await?;
        let engine = table.engine().await;
        let writes = format!("{}_writes", table.name);
        table
            .sql(&format!("CREATE TABLE {writes} (who VARCHAR(64) NOT NULL)"))
            .await;
        Some(Fixture {
            table,
            engine,
            writes,
        })
    }

    async fn send(&self, request: axum::extract::Request) -> Response {
        handle(&self.engine, &self.writes, request).await
    }

    async fn count(&self, from: &str) -> i64 {
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {from}")))
            .fetch_one(&self.table.pool)
            .await
            .unwrap()
    }

    async fn records(&self) -> i64 {
        self.count(&self.table.name).await
    }

    async fn business_writes(&self) -> i64 {
        self.count(&self.writes).await
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if crate::support::server_variable().is_none() {
            return;
        }
        crate::support::run_detached(
            &self.table.url,
            format!("DROP TABLE IF EXISTS {}", self.writes),
        );
    }
}

fn pay(key: &str, authorization: Option<&str>) -> axum::extract::Request {
    let builder = Request::post("/pay?page=1")
        .header("content-type", "application/json")
        .header("Idempotency-Key", key);
    let builder = match authorization {
        Some(value) => builder.header(header::AUTHORIZATION, value),
        None => builder,
    };
    builder.body(Body::from(r#"{"amount": 100}"#)).unwrap()
}

#[tokio::test]
async fn unauthenticated_and_wrongly_authenticated_requests_leave_nothing() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let key = key();
    for authorization in [
        None,
        Some("Bearer wrong-token"),
        Some("Basic YWxpY2U6Z29vZA=="),
        Some("Bearer"),
    ] {
        let refused = fixture.send(pay(&key, authorization)).await;
        assert_eq!(
            refused.status(),
            StatusCode::UNAUTHORIZED,
            "{authorization:?}"
        );
        assert_eq!(refused.headers()[header::WWW_AUTHENTICATE], "Bearer");
        assert_eq!(
            refused.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
    }
    // A malformed key is refused for its credentials first: nothing about
    // the key is told to a caller who is not authenticated.
    let refused = fixture.send(pay("not-a-key", None)).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(fixture.records().await, 0);
    assert_eq!(fixture.business_writes().await, 0);

    // The key was not consumed: its owner's first request runs.
    let paid = fixture
        .send(pay(&key, Some(&format!("Bearer {ALICE_TOKEN}"))))
        .await;
    assert_eq!(paid.status(), StatusCode::CREATED);
    assert_eq!(fixture.records().await, 1);
    assert_eq!(fixture.business_writes().await, 1);
}

#[tokio::test]
async fn the_engine_refuses_a_request_that_skipped_the_security_check() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let refused = fixture
        .engine
        .begin(&PAY, pay(&key(), None))
        .await
        .err()
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(fixture.records().await, 0);
}

#[tokio::test]
async fn one_key_under_two_principals_is_two_first_requests() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let key = key();
    let alice = fixture
        .send(pay(&key, Some(&format!("Bearer {ALICE_TOKEN}"))))
        .await;
    assert_eq!(alice.status(), StatusCode::CREATED);
    let alice_body = body_text(alice).await;

    // Bob, same key and body: a fresh request, not Alice's answer, not 409.
    let bob = fixture
        .send(pay(&key, Some(&format!("Bearer {BOB_TOKEN}"))))
        .await;
    assert_eq!(bob.status(), StatusCode::CREATED);
    assert!(
        bob.headers()
            .get(idemgen_runtime::REPLAYED_HEADER)
            .is_none()
    );
    let bob_body = body_text(bob).await;
    assert!(bob_body.contains(r#""paid_by":"bob""#), "{bob_body}");
    assert_ne!(alice_body, bob_body);

    // Each retry replays its own principal's answer.
    let alice_again = fixture
        .send(pay(&key, Some(&format!("Bearer {ALICE_TOKEN}"))))
        .await;
    assert_eq!(
        alice_again.headers()[idemgen_runtime::REPLAYED_HEADER],
        "true"
    );
    assert_eq!(body_text(alice_again).await, alice_body);
    let bob_again = fixture
        .send(pay(&key, Some(&format!("Bearer {BOB_TOKEN}"))))
        .await;
    assert_eq!(body_text(bob_again).await, bob_body);
    assert_eq!(fixture.records().await, 2);
    assert_eq!(fixture.business_writes().await, 2);

    // Alice through her query key is the same principal: a replay, and
    // the key in the query is not part of the fingerprint (no 409).
    let by_query_key = fixture
        .send(
            Request::post(format!("/pay?page=1&api_key={ALICE_QUERY_KEY}"))
                .header("content-type", "application/json")
                .header("Idempotency-Key", &key)
                .body(Body::from(r#"{"amount": 100}"#))
                .unwrap(),
        )
        .await;
    assert_eq!(by_query_key.status(), StatusCode::CREATED);
    assert_eq!(body_text(by_query_key).await, alice_body);
}

/// Every log line of the test, at every level.
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

#[tokio::test]
async fn credentials_reach_neither_records_nor_logs() {
    let Some(fixture) = Fixture::new().await else {
        return;
    };
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let key = key();
    let bearer = format!("Bearer {ALICE_TOKEN}");
    let first = fixture.send(pay(&key, Some(&bearer))).await;
    assert_eq!(first.status(), StatusCode::CREATED);
    fixture.send(pay(&key, Some(&bearer))).await;
    let query = Request::post(format!("/pay?page=1&api_key={ALICE_QUERY_KEY}"))
        .header("content-type", "application/json")
        .header("Idempotency-Key", &key)
        .body(Body::from(r#"{"amount": 100}"#))
        .unwrap();
    fixture.send(query).await;
    fixture
        .send(pay(
            &format!("pay:{}", uuid::Uuid::new_v4()),
            Some("Bearer wrong-s3cret"),
        ))
        .await;
    // The engine's own refusal logs, too.
    let _ = fixture.engine.begin(&PAY, pay(&key, Some(&bearer))).await;

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("unauthenticated"),
        "the capture saw the engine's log: {logs}"
    );
    for secret in [ALICE_TOKEN, ALICE_QUERY_KEY, "wrong-s3cret"] {
        assert!(!logs.contains(secret), "{secret} logged: {logs}");
    }

    // Every column that could hold a secret, as text (VARBINARY on MySQL).
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT scope, idem_key, fingerprint, response_content_type, response_body FROM {}",
        fixture.table.name
    )))
    .fetch_all(&fixture.table.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    let text = |column: usize| -> String {
        use sqlx::Row;
        rows[0]
            .try_get::<Option<String>, _>(column)
            .map(Option::unwrap_or_default)
            .or_else(|_| {
                rows[0]
                    .try_get::<Option<Vec<u8>>, _>(column)
                    .map(|bytes| String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
            })
            .unwrap()
    };
    let scope = text(0);
    let stored: Vec<String> = (0..5).map(text).collect();
    let stored = stored.join(" ");
    assert!(stored.contains("paid_by"), "the body was read: {stored}");
    for secret in [ALICE_TOKEN, ALICE_QUERY_KEY, "Bearer", "api_key"] {
        assert!(!stored.contains(secret), "{secret} stored: {stored}");
    }
    // The principal's id is hashed into the scope, not stored in clear.
    assert!(!scope.contains("alice"), "{scope}");
}

#[tokio::test]
async fn the_refusal_is_a_problem_the_client_can_act_on() {
    let refused = authenticate(
        &PAY.security,
        &Tokens,
        &idemgen_runtime::Request::new(axum::http::Method::POST, "/pay"),
    )
    .await
    .err()
    .unwrap()
    .into_response();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let body = body_text(refused).await;
    assert!(body.contains("Authorization: Bearer"), "{body}");
}

/// `[{queryKey: []}, {}]`: a caller who sends no key is anonymous; a caller
/// whose key is refused is refused, never let in as anonymous.
#[tokio::test]
async fn a_refused_credential_is_not_admitted_as_anonymous() {
    static KEY_OR_ANONYMOUS: Security = Security {
        alternatives: &[&[QUERY_KEY], &[]],
    };
    let read = |uri: &str| {
        let uri = uri.to_string();
        async move {
            idemgen_runtime::Request::read(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap()
        }
    };
    let anonymous = read("/pay").await;
    assert_eq!(
        authenticate(&KEY_OR_ANONYMOUS, &Tokens, &anonymous)
            .await
            .map(|principal| principal.is_none())
            .ok(),
        Some(true)
    );
    let known = read(&format!("/pay?api_key={ALICE_QUERY_KEY}")).await;
    let alice = authenticate(&KEY_OR_ANONYMOUS, &Tokens, &known)
        .await
        .ok()
        .flatten()
        .expect("alice's key admits her");
    assert_eq!(alice.id, "alice");
    let wrong = read("/pay?api_key=stolen-or-mistyped").await;
    let refused = authenticate(&KEY_OR_ANONYMOUS, &Tokens, &wrong)
        .await
        .expect_err("a refused key is not anonymous");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    // Without a configured check, secured operations fail closed, and the
    // anonymous alternative still admits a caller who sent nothing.
    let refused = authenticate(&SECURITY, &idemgen_runtime::NoVerifier, &known)
        .await
        .expect_err("nothing is verified without a check");
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(
        authenticate(&KEY_OR_ANONYMOUS, &idemgen_runtime::NoVerifier, &anonymous)
            .await
            .is_ok_and(|principal| principal.is_none())
    );
}
