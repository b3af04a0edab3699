//! The runtime's integration tests, one binary: the engine against this
//! build's database (SQLite always; MariaDB or PostgreSQL with
//! `--no-default-features --features mysql|postgres` and
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL`), the hand-written
//! example over HTTP, and the races, faults and slow clients around it.
//! A module whose server is not configured prints `SKIPPED: why`.

mod bounded_memory;
mod canonical_json;
mod claim_in_transaction;
mod claim_read_deadlock;
mod clients_that_leave;
mod commit_outcome;
// idemgen's models for `tests/codegen_fixtures/created-headers.yaml`, as a
// generated service has them; the tests use only its response.
#[allow(dead_code)]
mod created_headers_models;
mod decimal_limits;
mod engine;
mod exact_numbers;
mod failover;
mod form_keywords;
mod galera_lost_races;
mod hand_written;
mod heap_only_completion;
mod ietf_draft;
mod keys;
mod lost_races;
mod metrics;
#[cfg(feature = "otel")]
mod otel;
mod purge_races;
mod refused_values;
mod rejections;
mod replay_cost;
mod request_reading;
mod response_headers;
mod security;
mod single_flight;
mod slow_clients;
mod support;
mod trace_context;
