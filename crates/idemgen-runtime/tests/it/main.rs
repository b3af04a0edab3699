//! The runtime's integration tests, one binary: the engine against this
//! build's database (SQLite always; MariaDB or PostgreSQL with
//! `--no-default-features --features mysql|postgres` and
//! `IDEMGEN_TEST_MYSQL_URL` / `IDEMGEN_TEST_PG_URL`), the hand-written
//! example over HTTP, and the races, faults and slow clients around it.
//! A module whose server is not configured prints `SKIPPED: why`.

mod commit_outcome;
mod engine;
mod galera_lost_races;
mod hand_written;
mod ietf_draft;
mod lost_races;
mod purge_races;
mod security;
mod slow_clients;
mod support;
