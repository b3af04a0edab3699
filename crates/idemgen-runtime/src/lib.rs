//! Exactly-once HTTP endpoints on axum + sqlx.
//!
//! A retried or duplicated request must not run its business write twice.
//! "Check, then write" loses that race: two instances both see "absent" and
//! both write. This crate claims the request's idempotency key with one
//! atomic statement on a unique index, runs the business function in a
//! transaction, and stores the answer in that same transaction, fenced on
//! the claim. Duplicates get "in progress" (`429` + `Retry-After`) while
//! the first attempt runs and the stored answer, byte for byte, after it
//! succeeded; the same key with a different request is a conflict (`409`).
//!
//! [`Idempotency`] is the engine; [`Operation`] and [`Contract`] describe an
//! endpoint; a business function receives the open transaction ([`Tx`])
//! and the [`Request`] and returns a [`Reply`]. The record table lives in
//! the business database (its DDL is what `idemgen ddl` prints).
//!
//! A handler starts with one of two calls, which differ in what they check
//! before the key is claimed:
//!
//! - [`Idempotency::begin`]: the key (and the caller, see
//!   [`authenticate`]); the business function reads the request itself;
//! - [`Idempotency::begin_typed`]: also the typed input, decoded by a
//!   closure (e.g. with [`Request::body_as`]), so a request that fails its
//!   schema is answered `400`/`422` with no record written and the key
//!   still unused.
//!
//! Both take the request as axum hands it over or already read and
//! authenticated ([`IntoRequest`]), and return a [`Call`] to run the
//! business function in, or the answer to send instead (a replay, "in
//! progress", a conflict). [`Reply::from_parts`] stores exactly the bytes
//! a typed response serialised to.
//!
//! One database per build, chosen by a Cargo feature: `sqlite` (default),
//! `mysql` (MySQL and MariaDB) or `postgres`; each turns on `engine`.
//! Without one the crate is only its own [`sources`], which `idemgen gen`
//! copies into a generated project, and [`decimal`], with which it reads a
//! spec's numeric limits as the engine checks them.
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! use axum::http::StatusCode;
//! use idemgen_runtime::{Contract, Idempotency, Operation, Reply};
//!
//! static PAY: Operation = Operation::idempotent(
//!     "pay",
//!     "pay",
//!     Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 60_000, 3_000),
//! );
//! # let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
//! # sqlx::raw_sql(idemgen_runtime::doc_support::SQLITE_DDL).execute(&pool).await.unwrap();
//! let engine = Idempotency::new(pool, "idempotent_record").await?;
//! let request = || {
//!     axum::http::Request::post("/pay")
//!         .header("Idempotency-Key", "pay:1b4e28ba-2fa1-41d2-883f-0016d3cca427")
//!         .body(axum::body::Body::from(r#"{"amount": 100}"#))
//!         .unwrap()
//! };
//!
//! // The first request claims the key and runs the business function.
//! let mut call = engine.begin(&PAY, request()).await.expect("a fresh key");
//! let (tx, _request) = call.parts();
//! sqlx::query("INSERT INTO payments (amount) VALUES (100)")
//!     .execute(&mut **tx)
//!     .await?;
//! let reply = Reply::json(StatusCode::CREATED, &serde_json::json!({"paid": 100}));
//! let first = call.finish(Ok::<_, sqlx::Error>(reply)).await;
//! assert_eq!(first.status(), StatusCode::CREATED);
//!
//! // A retry gets the stored answer; the business function does not run.
//! let replay = engine.begin(&PAY, request()).await.err().expect("an answer");
//! assert_eq!(replay.status(), StatusCode::CREATED);
//! assert_eq!(replay.headers()["idempotent-replayed"], "true");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

// Only what a service (or, for `decimal`, the generator) uses is public;
// the rest says `pub(crate)`.
#![warn(unreachable_pub)]
// Without a database feature the engine these docs link to is not built.
#![cfg_attr(not(feature = "engine"), allow(rustdoc::broken_intra_doc_links))]

/// Items of the engine, compiled with a database feature (each turns on
/// `engine`); without one the crate is only [`sources`] and [`decimal`].
macro_rules! engine {
    ($($item:item)*) => {
        $(
            #[cfg(feature = "engine")]
            $item
        )*
    };
}

pub mod decimal;
pub mod sources;

#[cfg(all(feature = "engine", feature = "otel"))]
pub mod otel;

engine! {
    mod canonical_json;
    pub mod constraints;
    mod contract;
    mod db;
    mod engine;
    mod fingerprint;
    mod in_flight;
    mod in_place;
    mod input;
    mod key;
    mod metrics;
    mod multipart;
    pub mod outcome;
    mod principal;
    mod problem;
    mod reachability;
    mod reply;
    mod run_to_end;
    mod request_span;
    mod response_headers;
    mod security;
    pub mod service;
    mod single_flight;
    mod store;
    mod time;
    mod trace_context;

    pub use constraints::{AnswerConstraints, Check, Chosen, Constraint};
    pub use contract::{ClaimMode, Contract, Fingerprint, Source};
    pub use db::{
        ConnectError, Db, Dialect, Pool, Tx, commit_durability_warning, connect,
        connect_with_pool_size,
    };
    pub use engine::{
        Call, DEFAULT_COMMIT_TIMEOUT, GALERA_CLOCK_MARGIN, Idempotency, Operation, REPLAYED_HEADER,
        within_lease,
    };
    pub use input::{
        JoinedList, Param, PathAffix, Properties, Scalar, Shape, Style, with_path_affixes,
    };
    pub use multipart::Part;
    pub use metrics::{Counter, Counters, OperationMetrics, RefusalReason, Rejection, Wait};
    pub use request_span::observe;
    pub use principal::Principal;
    pub use problem::ProblemKind;
    pub use reply::{
        BODY_READ_TIMEOUT, DEFAULT_MAX_STORED_ANSWER_BYTES, IntoRequest, MAX_BODY_BYTES, Reply, Request,
    };
    pub use security::{
        ApiKeyIn, Credential, NoVerifier, Refusal, Scheme, SchemeKind, Security, Verify, authenticate,
        read_authenticated,
    };
    pub use store::StoreError;
    pub use time::{now_ms, rfc3339};

    /// An error a business function may return besides its answers: anything
    /// (a database error, a downstream client's). The transaction is rolled
    /// back and the claim released, so a retry with the same key runs again;
    /// the client gets `500`, or `503`/`429` with `Retry-After` when the
    /// database was unreachable or busy.
    pub type BusinessError = Box<dyn std::error::Error + Send + Sync>;

    /// The error of a business function nobody has written yet: answered `501`
    /// naming the file to write, rolled back, and the claim released.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct NotImplemented(pub &'static str);

    impl std::fmt::Display for NotImplemented {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "write this operation's business logic in {}", self.0)
        }
    }

    impl std::error::Error for NotImplemented {}

    /// Re-exported so that code written against this crate names the same
    /// versions it was built with.
    pub use {axum, sqlx};

    /// The parsers that read what a client sends (key, scope, credentials,
    /// the canonical JSON of the body), for the fuzz targets in `fuzz/`:
    /// not part of the API a service uses, and free to change.
    #[doc(hidden)]
    pub mod fuzzing {
        use crate::key::{self, KeyValue};
        use crate::{Contract, Credential, Request, Scheme, Security, Source};

        /// The canonical form of `body`, or why it has none.
        pub fn canonicalize(body: &[u8]) -> Result<Vec<u8>, String> {
            crate::canonical_json::canonicalize(body).map_err(|error| error.to_string())
        }

        /// The request's fingerprint under `contract` for an operation
        /// with `security`, or why it is refused.
        pub fn fingerprint(
            contract: &Contract,
            security: &Security,
            request: &Request,
        ) -> Result<String, String> {
            form_fingerprint(contract, security, &[], &[], &[], request)
        }

        /// [`fingerprint`] for an operation whose form body declares the
        /// lists `form_lists` joined in one text, whose properties
        /// `list_fields` are lists of scalars and `json_fields` JSON text.
        pub fn form_fingerprint(
            contract: &Contract,
            security: &Security,
            form_lists: &[crate::JoinedList],
            list_fields: &[&str],
            json_fields: &[&str],
            request: &Request,
        ) -> Result<String, String> {
            let lists = crate::input::FormLists {
                joined: form_lists,
                fields: list_fields,
                json: json_fields,
            };
            crate::fingerprint::fingerprint_of(contract, security, lists, request)
                .map_err(|error| error.to_string())
        }

        /// The form `body` as the reader takes it once the lists of
        /// `joined` are split into their items.
        pub fn split_joined(body: &[u8], joined: &[crate::JoinedList]) -> Vec<u8> {
            crate::input::split_joined(body, joined).into_owned()
        }

        /// The key `source` reads: `Ok(None)` when absent, `Err` when
        /// unreadable.
        pub fn read_key(source: &Source, request: &Request) -> Result<Option<String>, String> {
            match key::read_key(source, request) {
                KeyValue::Absent => Ok(None),
                KeyValue::Present(key) => Ok(Some(key)),
                KeyValue::Unreadable(why) => Err(why),
            }
        }

        /// Checks `key` against the contract's length, pattern and fields.
        pub fn validate_key(contract: &Contract, key: &str, request: &Request) -> Result<(), String> {
            let regex = regex::Regex::new(contract.key_pattern).map_err(|error| error.to_string())?;
            key::validate(contract, &regex, key, request)
        }

        /// The key's namespace for `operation`, or why the scope is refused.
        pub fn scope(operation: &str, contract: &Contract, request: &Request) -> Result<String, String> {
            key::scope_of(operation, contract, request)
        }

        /// The credential `scheme` reads from `request`.
        pub fn credential(scheme: &Scheme, request: &Request) -> Credential {
            crate::security::credential(scheme, request)
        }

        /// An axum request read as a service reads it (`Err`: the answer
        /// sent instead, e.g. a body over the limit).
        pub fn read(request: axum::extract::Request) -> Result<Request, axum::http::StatusCode> {
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("a current-thread runtime")
                .block_on(Request::read(request))
                .map_err(|response| response.status())
        }
    }

    /// The record table for the examples in these docs (the same DDL
    /// `idemgen ddl --db sqlite` prints), plus a business table.
    #[doc(hidden)]
    pub mod doc_support {
        pub const SQLITE_DDL: &str = "
            CREATE TABLE idempotent_record (
                id INTEGER PRIMARY KEY,
                scope TEXT NOT NULL,
                idem_key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed')),
                claim_token TEXT NOT NULL,
                lease_expires_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL,
                response_status INTEGER,
                response_content_type TEXT,
                response_body BLOB,
                response_headers BLOB,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                CONSTRAINT uq_idempotent_record_scope_key UNIQUE (scope, idem_key)
            );
            CREATE INDEX ix_idempotent_record_expires_at ON idempotent_record (expires_at);
            CREATE TABLE payments (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL);
        ";
    }
}
