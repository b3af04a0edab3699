//! The claim / finish / reclaim state machine. Every idempotent request
//! runs as
//!
//! 1. [`Idempotency::begin`] (or [`Idempotency::begin_typed`]): validate the key, fingerprint the request,
//!    read its record (a completed one inside its window is replayed from
//!    that read alone, and one with another fingerprint is a conflict),
//!    and otherwise claim the key with one atomic statement that commits on its own,
//!    so that a duplicate sees the claim at once (in progress →
//!    `Retry-After`); a duplicate that reaches this process while it runs
//!    the key's first attempt waits for that attempt's committed answer
//!    instead ([`crate::single_flight`]);
//! 2. the business function, inside a transaction ([`Call::parts`]);
//! 3. [`Call::finish`]: store the answer with an UPDATE fenced on this
//!    attempt's claim token, in the business transaction, then commit.
//!
//! Who owns a key is decided by the claim statement itself (its claim token
//! returned, or on MySQL no unique violation) or by reading the claim token
//! back, never by an affected-row count (MySQL reports 1 for a duplicate
//! too). Retrying after a recorded failure, taking over an in-progress
//! record whose lease (`server.max-processing`) ran out, and reusing a key
//! whose window ended are conditional UPDATEs fenced on the claim token and
//! status that were read, so one of many concurrent requests wins. Losing a
//! race on the database (unique violation, serialization failure,
//! deadlock) is an answer (in progress or replay), never a 500.
//!
//! Only a business answer (a non-2xx [`Reply`]) is recorded as a failure.
//! Everything else that stops an attempt (the database unreachable, no
//! connection in time, a lost race inside the business step, the lease
//! running out, an error returned by the business function) rolls the
//! business write back and releases the claim at once, so a retry with the
//! same key runs it again: a client told "retry" is never answered
//! "conflict" for it later.

use std::error::Error;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use regex::Regex;
use tokio::time::Instant;

use crate::NotImplemented;
use crate::contract::{ClaimMode, Contract};
use crate::db::{self, Db, Dialect, Failure, Kept, Pool, PoolConnection, Tx, classify};
use crate::in_place::in_place;
use crate::input::{FormLists, JoinedList};
use crate::fingerprint::fingerprint_of;
use crate::key;
use crate::metrics::{
    Census, Collector, Counters, LostRace, Measured, OperationMetrics, RefusalReason, Rejection,
    Wait,
};
use crate::outcome::{self, Outcome};
use crate::problem::ProblemKind;
use crate::reachability::Reachability;
use crate::reply::{DEFAULT_MAX_STORED_ANSWER_BYTES, IntoRequest, Reply, Request};
use crate::response_headers;
use crate::security::Security;
use crate::single_flight::{Joined, Lead, SingleFlight, StoredAnswer};
use crate::store::{
    COMPLETED, FAILED, Finish, IN_PROGRESS, NewClaim, Reclaim, Record, RecordStore, StoreError,
};

pub use crate::response_headers::REPLAYED_HEADER;

/// How often one request tries to claim before answering "in progress".
const CLAIM_ATTEMPTS: usize = 3;

/// The shortest wait of a claim inside the business transaction for
/// another attempt's claim of the key (MySQL counts whole seconds).
const SHORTEST_CLAIM_WAIT: Duration = Duration::from_secs(1);

/// The savepoint after a claim inside the business transaction, which a
/// business failure under `failed: reject` rolls back to, so that the
/// failure is recorded in the same transaction as the claim.
const CLAIM_SAVEPOINT: &str = "SAVEPOINT idemgen_claim";
const ROLLBACK_TO_CLAIM: &str = "ROLLBACK TO SAVEPOINT idemgen_claim";

/// How long releasing a claim may take before the request is answered
/// anyway (the lease ends on its own).
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Between two tries of a release that lost a race.
const RELEASE_RETRY_PAUSE: Duration = Duration::from_millis(10);

/// How long a business transaction's completion and COMMIT may take by
/// default ([`Idempotency::with_commit_timeout`]).
pub const DEFAULT_COMMIT_TIMEOUT: Duration = Duration::from_secs(5);

/// One endpoint: its name in logs, its `operation` label in metrics, its
/// contract (`None`: not idempotent, served in a plain transaction) and
/// its counters. Declare it as a `static`.
pub struct Operation {
    /// The operationId (or `METHOD /path`), for logs.
    pub name: &'static str,
    /// The `operation` label of its metrics.
    pub label: &'static str,
    pub contract: Option<Contract>,
    /// Who may call it ([`Security::OPEN`] unless [`Operation::secured`]).
    pub security: Security,
    /// What happened to its requests (`GET /metrics` serves them).
    pub counters: Counters,
    /// Its latencies, refusals, lost races and answers (`GET /metrics`).
    pub metrics: OperationMetrics,
    /// The lists of its form body declared joined in one text
    /// ([`Operation::joined_form_lists`]).
    pub form_lists: &'static [JoinedList],
    /// The properties of its form body that are lists of scalars
    /// ([`Operation::form_list_fields`]).
    pub form_list_fields: &'static [&'static str],
    /// The properties of its form body sent as JSON text
    /// ([`Operation::form_json_fields`]).
    pub form_json_fields: &'static [&'static str],
    key_regex: OnceLock<Regex>,
}

impl Operation {
    /// An endpoint whose key is claimed under `contract`.
    ///
    /// # Panics
    ///
    /// When the window is shorter than the lease (at compile time for a
    /// `static`): a record would expire while its first attempt still
    /// holds it, and a duplicate would claim the key and run the business
    /// step a second time. `idemgen lint` refuses such a contract too.
    pub const fn idempotent(
        name: &'static str,
        label: &'static str,
        contract: Contract,
    ) -> Operation {
        assert!(
            contract.window_ms >= contract.lease_ms,
            "the window (Contract::window_ms) must be at least the lease (Contract::lease_ms)"
        );
        Operation {
            name,
            label,
            contract: Some(contract),
            security: Security::OPEN,
            counters: Counters::new(),
            metrics: OperationMetrics::new(),
            form_lists: &[],
            form_list_fields: &[],
            form_json_fields: &[],
            key_regex: OnceLock::new(),
        }
    }

    /// An endpoint without a key: its business function runs in a
    /// transaction that commits on a 2xx answer.
    pub const fn plain(name: &'static str, label: &'static str) -> Operation {
        Operation {
            name,
            label,
            contract: None,
            security: Security::OPEN,
            counters: Counters::new(),
            metrics: OperationMetrics::new(),
            form_lists: &[],
            form_list_fields: &[],
            form_json_fields: &[],
            key_regex: OnceLock::new(),
        }
    }

    /// This endpoint, callable only by the callers `security` admits. The
    /// service checks it with [`crate::authenticate`] before
    /// [`Idempotency::begin`]; the engine refuses (`401`) a request that
    /// reaches it without a principal, so a handler that skipped the check
    /// claims nothing.
    pub const fn secured(mut self, security: Security) -> Operation {
        self.security = security;
        self
    }

    /// This endpoint, its form body's `lists` declared joined in one text
    /// (`tags=a,b`): read with [`Request::joined_form_checked_as`], and
    /// split so for the fingerprint too, so that `tags=a,b` and
    /// `tags=a&tags=b` are one request, as they are one list. A
    /// `multipart/form-data` body's lists joined in one part
    /// ([`crate::Part::joined`]) are named here too, for the fingerprint.
    pub const fn joined_form_lists(mut self, lists: &'static [JoinedList]) -> Operation {
        self.form_lists = lists;
        self
    }

    /// This endpoint, the `fields` of its form body lists of scalars: one
    /// item sent as its key (`tags=a`) is fingerprinted as the list of one
    /// the business code reads, as `tags[0]=a` is, so the two layouts are
    /// one request.
    pub const fn form_list_fields(mut self, fields: &'static [&'static str]) -> Operation {
        self.form_list_fields = fields;
        self
    }

    /// This endpoint, the `fields` of its form body sent as JSON text (a
    /// JSON `contentType` in its `encoding`): read with
    /// [`Request::encoded_form_checked_as`], and read as JSON for the
    /// fingerprint too, so that two spellings of one document are one
    /// request.
    pub const fn form_json_fields(mut self, fields: &'static [&'static str]) -> Operation {
        self.form_json_fields = fields;
        self
    }
}

/// The engine: a pool and its record table. Cheap to clone.
#[derive(Clone)]
pub struct Idempotency {
    pool: Pool,
    records: RecordStore,
    clock_margin_ms: i64,
    /// The largest answer body stored; an answer over it is refused.
    max_stored_answer: usize,
    /// How long completing and committing the business transaction may take.
    commit_timeout: Duration,
    /// Shared by the clones: whether the database was found down.
    reachability: Arc<Reachability>,
    /// The record table's size, as last sampled.
    census: Arc<Census>,
    /// The first attempts this process runs, which duplicates wait on.
    flights: Arc<SingleFlight>,
    /// Connections whose read answered a request (a replay), for the next
    /// request: no release ping in between.
    kept: Arc<Kept>,
}

/// A request that owns its key (or needs none) and may run its business
/// function; [`Call::finish`] ends it.
pub struct Call {
    engine: Idempotency,
    operation: &'static Operation,
    tx: Tx,
    request: Request,
    claim: Option<Claim>,
    /// When the lease ends by this process's clock (it started before the
    /// claim, so it ends before the record's lease does).
    deadline: Option<Instant>,
    /// How long the claim took, and when the business step began.
    claim_time: Option<Duration>,
    business_started: Instant,
    /// This process's first attempt of the key: its committed answer is
    /// passed to the duplicates waiting on it.
    lead: Option<Lead>,
}

/// The clock margin of an engine on a MariaDB Galera cluster unless set:
/// its nodes' clocks are kept close by NTP (milliseconds), and a second
/// covers one that drifted or was stepped, for a second's delay of a
/// takeover or a purge.
pub const GALERA_CLOCK_MARGIN: Duration = Duration::from_secs(1);

/// The refusal of an answer whose body of `bytes` bytes is over the
/// stored-answer `limit`.
fn answer_too_large(bytes: usize, limit: usize) -> Reply {
    Reply::refusal(
        ProblemKind::AnswerTooLarge,
        StatusCode::INSUFFICIENT_STORAGE,
        &format!(
            "the answer is {bytes} bytes, more than the {limit} bytes an answer may have to be \
             stored; its business write was rolled back, and retrying will not help: the same \
             request gives the same answer, which cannot be stored either"
        ),
    )
}

/// Why an attempt stopped without an answer of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    LostRace,
    Unavailable,
    DeadlineExceeded,
    /// The database refused a value of the request ([`Failure::Refused`]).
    Refused,
    Error,
}

struct Claim {
    scope: String,
    key: String,
    fingerprint: String,
    token: String,
    /// Taken over from an attempt whose lease ran out.
    taken_over: bool,
    /// Written in the business transaction ([`ClaimMode::InTransaction`]):
    /// its rollback takes the claim away, with nothing to release.
    in_transaction: bool,
    /// Inserted by the claim statement, which then ended its own bounded
    /// wait for another transaction's claim of the key (in a transaction).
    inserted: bool,
}

enum Decision {
    Answer(Response),
    Reclaim(Reason),
}

#[derive(Debug, Clone, Copy)]
enum Reason {
    Expired,
    RetryAfterFailure,
    /// The attempt that held it stopped and released it.
    Released,
    /// Its lease ran out: the attempt that held it died or hangs.
    Takeover,
}

impl Idempotency {
    /// The engine for the record table `table` (a plain SQL identifier)
    /// in `pool`'s database; fails if the table does not fit the
    /// statements.
    ///
    /// The clock margin starts at 0 (one server, one clock), or at
    /// [`GALERA_CLOCK_MARGIN`] on a MariaDB Galera cluster, whose nodes
    /// keep their own clocks; [`Idempotency::with_clock_margin`] sets it.
    pub async fn new(pool: Pool, table: &str) -> Result<Idempotency, StoreError> {
        let records = RecordStore::new(&pool, table).await?;
        if let Some(warning) = db::commit_durability_warning(&pool).await {
            tracing::warn!("{warning}");
        }
        let clock_margin_ms = if db::is_galera(&pool).await {
            tracing::info!(
                margin_ms = GALERA_CLOCK_MARGIN.as_millis() as u64,
                "a Galera cluster: leases and windows get a clock margin (CLOCK_MARGIN_MS sets it)"
            );
            GALERA_CLOCK_MARGIN.as_millis() as i64
        } else {
            0
        };
        let kept = Arc::new(Kept::default());
        Kept::give_back_in_time(&kept, &pool);
        Ok(Idempotency {
            pool,
            records,
            clock_margin_ms,
            max_stored_answer: DEFAULT_MAX_STORED_ANSWER_BYTES,
            commit_timeout: DEFAULT_COMMIT_TIMEOUT,
            reachability: Arc::default(),
            census: Arc::default(),
            flights: Arc::default(),
            kept,
        })
    }

    /// The margin past a lease or window before a record changes hands.
    pub fn clock_margin(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.clock_margin_ms).unwrap_or(0))
    }

    /// Waits `margin` beyond a lease or a window before a record changes
    /// hands or is purged. One database server has one clock and needs
    /// none; on a cluster whose nodes keep their own clocks (MariaDB
    /// Galera), set it to the worst offset between them (what NTP keeps
    /// them within), so a node whose clock runs ahead cannot take over a
    /// live claim.
    pub fn with_clock_margin(mut self, margin: Duration) -> Idempotency {
        self.clock_margin_ms = i64::try_from(margin.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// How long completing and committing a business transaction may take
    /// (by default [`DEFAULT_COMMIT_TIMEOUT`], 5 s).
    pub fn commit_timeout(&self) -> Duration {
        self.commit_timeout
    }

    /// Gives the completion and COMMIT of a business transaction at most
    /// `timeout`. A COMMIT with no answer by then (a primary cut off from
    /// its synchronous standby, a frozen or partitioned server) is
    /// answered `503` with the problem type `outcome-unknown` and
    /// `Retry-After`: it may still happen, so the client retries with the
    /// same key, never a new one. Without a deadline such a request, and
    /// its connection, would wait for as long as the server does.
    pub fn with_commit_timeout(mut self, timeout: Duration) -> Idempotency {
        self.commit_timeout = timeout;
        self
    }

    /// The largest answer body stored (by default
    /// [`DEFAULT_MAX_STORED_ANSWER_BYTES`], 1 MiB).
    pub fn max_stored_answer(&self) -> usize {
        self.max_stored_answer
    }

    /// Stores answer bodies of up to `bytes` bytes. An answer (a success,
    /// or a business refusal that would be recorded) whose body is larger
    /// is refused with `507` and the problem type
    /// `answer-too-large`: its business write is rolled back and the
    /// attempt recorded as failed (as `failed:` says), since a retry would
    /// produce the same answer. `Err` when the record table's body column
    /// cannot hold `bytes` on this build's database
    /// ([`Dialect::largest_stored_answer`]).
    pub fn with_max_stored_answer(mut self, bytes: usize) -> Result<Idempotency, String> {
        let largest = Dialect::BUILT.largest_stored_answer();
        if bytes > largest {
            return Err(format!(
                "a stored answer of {bytes} bytes does not fit the record table's response_body \
                 column on {}, which holds at most {largest} bytes; set a smaller limit",
                Dialect::BUILT.title()
            ));
        }
        self.max_stored_answer = bytes;
        Ok(self)
    }

    /// The pool requests run on.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Admits the request and opens the business transaction: checks its
    /// key and, for an idempotent operation, claims it. `Err` is the answer
    /// to send instead of running the business function (a replay, "in
    /// progress", a conflict, a refused key).
    ///
    /// `request` is either the axum request (read here, bounded by
    /// [`crate::MAX_BODY_BYTES`] and [`crate::BODY_READ_TIMEOUT`]) or a
    /// [`Request`] already read, e.g. to authenticate it first with
    /// [`crate::authenticate`].
    pub async fn begin(
        &self,
        operation: &'static Operation,
        request: impl IntoRequest,
    ) -> Result<Call, Response> {
        let request = request
            .into_request()
            .await
            .map_err(|answer| unread(operation, answer))?;
        let admitted = admit(operation, &request)?;
        let (call, ()) = self
            .begin_admitted(operation, request, admitted, |_| Ok(()))
            .await?;
        Ok(call)
    }

    /// [`Idempotency::begin`] for typed input: `decode` turns the request
    /// into the business function's input (its body and parameters checked
    /// against their schemas, e.g. with [`Request::body_as`]) *before* the
    /// key is claimed, so a request it refuses (its `Err` reply, typically
    /// 400 or 422) writes no record and leaves the key unused: the client
    /// may fix the request and send it again with the same key. A keyed
    /// request's record is read first: a replay, a conflict or the
    /// in-progress answer is sent from it without running `decode`, so the
    /// parts of the request its fingerprint leaves out (by default the
    /// query and headers) are not checked on a replay.
    pub async fn begin_typed<I>(
        &self,
        operation: &'static Operation,
        request: impl IntoRequest,
        decode: impl FnOnce(&Request) -> Result<I, Reply>,
    ) -> Result<(Call, I), Response> {
        let request = request
            .into_request()
            .await
            .map_err(|answer| unread(operation, answer))?;
        // The key is checked first, so a request without one gets the
        // contract's answer for that, whatever else is wrong with it.
        let admitted = admit(operation, &request)?;
        self.begin_admitted(operation, request, admitted, decode)
            .await
    }

    /// Claims the key `admit` read from `request` (none: the operation has
    /// no contract, or the key is optional and absent) and opens the
    /// business transaction; `decode` makes the business function's input,
    /// after the read that may answer a keyed request, else first.
    async fn begin_admitted<I>(
        &self,
        operation: &'static Operation,
        request: Request,
        admitted: Option<Admitted>,
        decode: impl FnOnce(&Request) -> Result<I, Reply>,
    ) -> Result<(Call, I), Response> {
        let started = Instant::now();
        let claims = admitted.is_some();
        // Boxed: its state (the claim's statements) is the largest of a
        // request's ([`crate::in_place`]).
        let begun =
            in_place(|| self.claim_and_begin(operation, request, admitted, decode, started)).await;
        let took = started.elapsed();
        // A request its input refused (after the read that found no
        // answer) claimed nothing: there is no claim to time.
        let claims = claims && !begun.as_ref().is_err_and(outcome::is_refused);
        if claims {
            operation
                .metrics
                .observe_claim(operation.contract.as_ref(), took);
        }
        match begun {
            Ok((mut call, input)) => {
                call.claim_time = claims.then_some(took);
                call.business_started = Instant::now();
                Ok((call, input))
            }
            Err(answer) => {
                outcome::count(&operation.metrics, &answer);
                Err(outcome::timed(answer, Outcome::Failed, |observed| {
                    observed.claim = claims.then_some(took);
                }))
            }
        }
    }

    /// [`Idempotency::begin_admitted`] without its measures.
    async fn claim_and_begin<I>(
        &self,
        operation: &'static Operation,
        request: Request,
        admitted: Option<Admitted>,
        decode: impl FnOnce(&Request) -> Result<I, Reply>,
        started: Instant,
    ) -> Result<(Call, I), Response> {
        // Without a key there is no record to answer from: the input is
        // decoded first, and a request it refuses touches no connection.
        let input = match &admitted {
            Some(_) => Input::AfterTheRead(decode),
            None => Input::Decoded(decoded(operation, &request, decode)?),
        };
        // While the database is known to be down, answer at once rather
        // than wait out the lease on a connection that cannot come.
        if self.reachability.still_down(&self.pool).await {
            return Err(self.stopped(
                operation,
                operation.contract.as_ref(),
                Stop::Unavailable,
                None,
            ));
        }
        let Some(contract) = &operation.contract else {
            let input = input.decode(operation, &request)?;
            return match db::begin(&self.pool).await {
                Ok(tx) => Ok((
                    Call {
                        engine: self.clone(),
                        operation,
                        tx,
                        request,
                        claim: None,
                        deadline: None,
                        claim_time: None,
                        business_started: started,
                        lead: None,
                    },
                    input,
                )),
                Err(error) => Err(self.stopped(operation, None, stop_for(&error), Some(&error))),
            };
        };
        // Waiting for a connection counts against the lease: a claim that
        // cannot be made in that time is not made.
        let lease = Duration::from_millis(u64::try_from(contract.lease_ms).unwrap_or(0));
        let deadline = started + lease;
        let lead = match &admitted {
            Some(admitted) => self.follow(operation, contract, admitted, deadline).await?,
            None => None,
        };
        // One connection for the read, the claim and the business
        // transaction: one kept after a replay's read if there is one.
        let acquired = match self.kept.take(&self.pool) {
            Some(lent) => Ok(Ok(lent)),
            None => {
                let moves = self.kept.moves();
                tokio::time::timeout_at(deadline, db::acquire(&self.pool))
                    .await
                    .map(|acquired| acquired.map(|connection| self.kept.lend(connection, moves)))
            }
        };
        let mut lent = match acquired {
            Ok(Ok(lent)) => lent,
            // No connection in time: busy, or no host that takes writes
            // (a demoted primary refuses new connections): the probe tells.
            Ok(Err(sqlx::Error::PoolTimedOut)) => {
                return Err(self.pool_timed_out(operation, contract).await);
            }
            Ok(Err(error)) => {
                return Err(self.stopped(
                    operation,
                    Some(contract),
                    stop_for(&error),
                    Some(&error),
                ));
            }
            // The pool's own wait, cut short by the lease.
            Err(_) => return Err(self.pool_timed_out(operation, contract).await),
        };
        // A replay is answered from one read, before the input is decoded
        // and before any transaction begins (on MySQL a transaction's first
        // read would fix the snapshot the claim's read-back sees).
        if let Some(admitted) = &admitted {
            let read =
                self.answer_from_one_read(operation, contract, admitted, &mut lent.connection);
            match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(Some(answer))) => {
                    // The read finished and nothing is open on the
                    // connection: the next keyed request may take it.
                    self.kept.keep(&self.pool, lent);
                    return Err(answer);
                }
                Ok(Ok(None)) => {}
                Ok(Err(stopped)) => return Err(stopped),
                Err(_) => return Err(self.timed_out(operation, contract).await),
            }
        }
        let mut connection = lent.connection;
        let input = input.decode(operation, &request)?;
        let admitted = match (contract.claim, admitted) {
            (ClaimMode::InTransaction, Some(admitted)) => {
                let claimed =
                    self.claim_in_transaction(operation, contract, admitted, connection, deadline);
                let (claim, tx) = match tokio::time::timeout_at(deadline, claimed).await {
                    Ok(claimed) => claimed?,
                    Err(_) => return Err(self.timed_out(operation, contract).await),
                };
                let mut request = request;
                request.downstream_key = Some(key::downstream_key(
                    self.records.table(),
                    &claim.scope,
                    &claim.key,
                    &claim.fingerprint,
                ));
                return Ok((
                    Call {
                        engine: self.clone(),
                        operation,
                        tx,
                        request,
                        claim: Some(claim),
                        deadline: Some(deadline),
                        claim_time: None,
                        business_started: started,
                        lead,
                    },
                    input,
                ));
            }
            (_, admitted) => admitted,
        };
        let claim = match admitted {
            None => None,
            Some(admitted) => {
                // Outside any transaction: the claim commits on its own.
                let claimed = self.claim_on(operation, contract, admitted, &mut connection, None);
                match tokio::time::timeout_at(deadline, claimed).await {
                    Ok(claim) => Some(claim?),
                    Err(_) => return Err(self.timed_out(operation, contract).await),
                }
            }
        };
        let mut request = request;
        request.downstream_key = claim.as_ref().map(|claim| {
            key::downstream_key(
                self.records.table(),
                &claim.scope,
                &claim.key,
                &claim.fingerprint,
            )
        });
        let began = tokio::time::timeout_at(deadline, db::begin_on(connection)).await;
        match began {
            Ok(Ok(tx)) => Ok((
                Call {
                    engine: self.clone(),
                    operation,
                    tx,
                    request,
                    claim,
                    deadline: Some(deadline),
                    claim_time: None,
                    business_started: started,
                    lead,
                },
                input,
            )),
            Ok(Err(error)) => {
                if let Some(claim) = &claim {
                    self.release(operation, claim).await;
                }
                Err(self.stopped(operation, Some(contract), stop_for(&error), Some(&error)))
            }
            Err(_) => {
                if let Some(claim) = &claim {
                    self.release(operation, claim).await;
                }
                Err(self.timed_out(operation, contract).await)
            }
        }
    }

    /// Joins this process's attempts of the admitted key. A duplicate of
    /// one that is running waits for it ([`follow_wait`]) and is answered
    /// with its committed answer, as a replay; `Ok` with the lead when
    /// this request is the first, `Ok(None)` when it goes to the database
    /// on its own.
    async fn follow(
        &self,
        operation: &'static Operation,
        contract: &Contract,
        admitted: &Admitted,
        deadline: Instant,
    ) -> Result<Option<Lead>, Response> {
        let joined = self.flights.join(
            operation.name,
            &admitted.scope,
            &admitted.key,
            &admitted.fingerprint,
        );
        match joined {
            Joined::Lead(lead) => Ok(Some(lead)),
            Joined::Alone => Ok(None),
            Joined::Follow(follower) => {
                let until = deadline.min(Instant::now() + follow_wait(contract));
                match follower.answer(until).await {
                    Some(answer) => {
                        operation.counters.replays.inc();
                        operation.counters.duplicates_joined.inc();
                        Err(replay_answer(
                            Some(answer.status),
                            Some(&answer.content_type),
                            &answer.body,
                            answer.headers.as_deref(),
                            contract,
                        ))
                    }
                    None => Ok(None),
                }
            }
        }
    }

    /// The answer to a request whose lease ran out before the database
    /// answered: `429` when the server is up but busy (or stalled, as a
    /// Galera cluster is while it evicts a dead node), `503` when a probe
    /// cannot connect to it, so the client retries on another instance.
    async fn timed_out(&self, operation: &Operation, contract: &Contract) -> Response {
        self.reachability.probe(&self.pool).await;
        self.stopped(operation, Some(contract), Stop::Unavailable, None)
    }

    /// The answer to a request that got no connection from the pool in
    /// time, counted as a pool wait: `429`, busy. On PostgreSQL the pool
    /// also refuses new connections to a host that takes no writes (a
    /// demoted primary), so a probe tells busy from down there. Elsewhere a
    /// probe has nothing to add, and on SQLite opening a connection waits
    /// on the very lock the pool does, which would read as down.
    async fn pool_timed_out(&self, operation: &Operation, contract: &Contract) -> Response {
        if Dialect::BUILT == Dialect::Postgres {
            self.reachability.probe(&self.pool).await;
        }
        let waited = sqlx::Error::PoolTimedOut;
        self.stopped(operation, Some(contract), Stop::Unavailable, Some(&waited))
    }

    /// The answer to an attempt that stopped without one of its own; it
    /// tells the client to retry with the same key.
    fn stopped(
        &self,
        operation: &Operation,
        contract: Option<&Contract>,
        stop: Stop,
        error: Option<&sqlx::Error>,
    ) -> Response {
        let retry_after = contract.map_or(1, |contract| contract.retry_after_secs);
        let answer = match stop {
            Stop::LostRace => {
                tracing::debug!(operation = operation.name, ?error, "lost a race");
                match contract {
                    Some(contract) => {
                        operation.counters.in_progress.inc();
                        in_progress(contract)
                    }
                    None => outcome::waited(
                        retry_later(ProblemKind::ConcurrentRequest, 503, retry_after),
                        Wait::Lock,
                    ),
                }
            }
            Stop::Unavailable => {
                // Waited in vain for a connection or an answer from a
                // server that is up: busy, not down. Without an error it
                // is the claim's answer the lease ran out waiting for.
                let wait = match error {
                    Some(sqlx::Error::PoolTimedOut) => Some(Wait::Pool),
                    Some(_) => None,
                    None => Some(Wait::Claim),
                };
                let waited = wait.is_some();
                if let Some(wait) = wait.filter(|_| !self.reachability.down()) {
                    tracing::warn!(
                        operation = operation.name,
                        wait = wait.label(),
                        "no database connection or answer in time"
                    );
                    outcome::waited(retry_later(ProblemKind::ServerBusy, 429, retry_after), wait)
                } else {
                    tracing::error!(operation = operation.name, ?error, "database unavailable");
                    if !waited {
                        self.probe_in_background();
                    }
                    retry_later(ProblemKind::DatabaseUnavailable, 503, retry_after)
                }
            }
            Stop::DeadlineExceeded => {
                tracing::error!(
                    operation = operation.name,
                    "the attempt ran past server.max-processing; rolled back"
                );
                retry_later(ProblemKind::ProcessingTooLong, 503, retry_after)
            }
            Stop::Refused => outcome::reject(
                refused_value(operation, error).into_response(),
                Rejection::Refused,
            ),
            Stop::Error => {
                tracing::error!(operation = operation.name, ?error, "database error");
                problem(ProblemKind::InternalError, 
                    500,
                    "the request failed and nothing was committed; it may be retried with the same key",
                )
            }
        };
        // A lost race is answered "in progress", marked so already.
        outcome::mark(answer, Outcome::Failed)
    }

    /// A connection broke: finds out in the background whether the server
    /// is gone, so the next requests need not wait out their lease to
    /// learn it.
    /// The answer to a COMMIT that got no answer within the commit
    /// timeout: its outcome is unknown.
    fn commit_unanswered(&self, operation: &Operation, contract: Option<&Contract>) -> Response {
        tracing::error!(
            operation = operation.name,
            timeout = ?self.commit_timeout,
            "commit outcome unknown: no answer within the commit timeout"
        );
        self.probe_in_background();
        let retry_after = contract.map_or(1, |contract| contract.retry_after_secs);
        let what = format!(
            "the database did not answer within {:?}",
            self.commit_timeout
        );
        outcome::mark(outcome_unknown(retry_after, &what), Outcome::Failed)
    }

    fn probe_in_background(&self) {
        let (reachability, pool) = (self.reachability.clone(), self.pool.clone());
        tokio::spawn(async move { reachability.probe(&pool).await });
    }

    /// Ends this attempt's lease at once, so a retry need not wait for it;
    /// best effort (the lease ends anyway), given at most [`RELEASE_WAIT`]
    /// so that a request on a database that went away is answered. A lost
    /// race (a serialization failure where SERIALIZABLE is the default) is
    /// tried again: the release changes only this claim's own row.
    async fn release(&self, operation: &Operation, claim: &Claim) {
        if claim.in_transaction {
            return;
        }
        let released = tokio::time::timeout(RELEASE_WAIT, async {
            loop {
                let released = self
                    .records
                    .release(
                        &self.pool,
                        &claim.scope,
                        &claim.key,
                        &claim.token,
                        self.clock_margin_ms,
                    )
                    .await;
                match released {
                    Err(error) if classify(&error) == Failure::LostRace => {
                        tokio::time::sleep(RELEASE_RETRY_PAUSE).await;
                    }
                    released => return released,
                }
            }
        })
        .await;
        let error = match released {
            Ok(Ok(_)) => return,
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {RELEASE_WAIT:?}"),
        };
        tracing::warn!(
            operation = operation.name,
            %error,
            "claim not released; the key becomes claimable when its lease ends"
        );
    }

    /// Claims the key inside the business transaction it begins on
    /// `connection` ([`ClaimMode::InTransaction`]): one commit for the
    /// claim and the work. A duplicate's claim waits on the key's unique
    /// index for this one's transaction to end (at most the in-progress
    /// `Retry-After`, at least [`SHORTEST_CLAIM_WAIT`], never past
    /// `deadline`), then replays its answer, or claims the key if it
    /// rolled back; a wait that runs out, or a deadlock between waiters,
    /// is answered "in progress".
    async fn claim_in_transaction(
        &self,
        operation: &'static Operation,
        contract: &Contract,
        admitted: Admitted,
        connection: PoolConnection,
        deadline: Instant,
    ) -> Result<(Claim, Tx), Response> {
        let mut tx = match db::begin_on(connection).await {
            Ok(tx) => tx,
            // SQLite: another writer held the database for the whole busy
            // timeout (a first attempt of this key, or any other write).
            Err(error) if classify(&error) == Failure::LostRace => {
                operation.metrics.lost_race(LostRace::Claim);
                operation.counters.in_progress.inc();
                return Err(in_progress(contract));
            }
            Err(error) => {
                return Err(self.stopped(operation, Some(contract), stop_for(&error), Some(&error)));
            }
        };
        let wait = Duration::from_secs(contract.retry_after_secs)
            .max(SHORTEST_CLAIM_WAIT)
            .min(deadline.saturating_duration_since(Instant::now()));
        let claimed = self
            .claim_on(operation, contract, admitted, &mut tx, Some(wait))
            .await;
        let ready = match &claimed {
            Ok(claim) => {
                let ended = if claim.inserted {
                    Ok(())
                } else {
                    self.records.end_claim_wait(&mut tx).await
                };
                match ended {
                    Ok(()) if contract.retry_failed => Ok(()),
                    Ok(()) => sqlx::raw_sql(CLAIM_SAVEPOINT)
                        .execute(&mut *tx)
                        .await
                        .map(drop),
                    Err(error) => Err(error),
                }
            }
            Err(_) => Ok(()),
        };
        match (claimed, ready) {
            (Ok(claim), Ok(())) => Ok((claim, tx)),
            (Ok(_), Err(error)) => {
                let _ = tx.rollback().await;
                Err(self.stopped(operation, Some(contract), stop_for(&error), Some(&error)))
            }
            (Err(answer), _) => {
                let _ = tx.rollback().await;
                Err(answer)
            }
        }
    }

    /// The answer when one read settles the request: a replay (or a key
    /// reused with another request) is answered with no write and no
    /// commit. Reading first is not "check, then write": nothing is
    /// written on what this read saw, and every other record, or none,
    /// goes on to the atomic claim. `Err`: the read failed, with the
    /// answer for that.
    async fn answer_from_one_read(
        &self,
        operation: &'static Operation,
        contract: &Contract,
        admitted: &Admitted,
        connection: &mut <Db as sqlx::Database>::Connection,
    ) -> Result<Option<Response>, Response> {
        let Admitted {
            key,
            scope,
            fingerprint,
        } = admitted;
        if let Some(record) = self.read(&mut *connection, operation, scope, key).await?
            && settled(&record, fingerprint, self.clock_margin_ms)
            && let Decision::Answer(answer) =
                decide(operation, contract, &record, fingerprint, self.clock_margin_ms)
        {
            return Ok(Some(answer));
        }
        Ok(None)
    }

    /// The atomic claim on `connection`: committed on its own (`wait` is
    /// `None`), or in the transaction open on it, waiting at most `wait`
    /// for another attempt's claim of the key.
    async fn claim_on(
        &self,
        operation: &'static Operation,
        contract: &Contract,
        admitted: Admitted,
        connection: &mut <Db as sqlx::Database>::Connection,
        wait: Option<Duration>,
    ) -> Result<Claim, Response> {
        let Admitted {
            key,
            scope,
            fingerprint,
        } = admitted;
        let counters = &operation.counters;
        let in_transaction = wait.is_some();
        // In a transaction, a lost race (a wait that ran out, a deadlock)
        // may have ended it (PostgreSQL aborts it, InnoDB rolls a deadlock
        // victim back): nothing more can run in it, and the key is held.
        let lost_in_transaction = |error: &sqlx::Error| {
            operation.metrics.lost_race(LostRace::Claim);
            tracing::debug!(operation = operation.name, %error, "claim in transaction lost a race");
            counters.in_progress.inc();
            in_progress(contract)
        };
        // Every token this request wrote: a claim whose read-back failed is
        // still recognised as ours on the next attempt.
        let mut written: Vec<String> = Vec::new();

        for _ in 0..CLAIM_ATTEMPTS {
            let token = new_token();
            written.push(token.clone());
            let claim = NewClaim {
                scope: &scope,
                key: &key,
                fingerprint: &fingerprint,
                token: &token,
                lease_ms: contract.lease_ms,
                window_ms: contract.window_ms,
            };
            let claimed = match wait {
                None => self.records.claim(&mut *connection, &claim).await,
                Some(wait) => {
                    self.records
                        .claim_in_transaction(&mut *connection, &claim, wait)
                        .await
                }
            };
            match claimed {
                Ok(true) => {
                    counters.first_attempts.inc();
                    return Ok(Claim {
                        scope,
                        key,
                        fingerprint,
                        token,
                        taken_over: false,
                        in_transaction,
                        inserted: true,
                    });
                }
                // Someone else holds the key: read it back below.
                Ok(false) => {}
                Err(error) => match classify(&error) {
                    Failure::LostRace if in_transaction => {
                        return Err(lost_in_transaction(&error));
                    }
                    Failure::LostRace => {
                        operation.metrics.lost_race(LostRace::Claim);
                        tracing::debug!(operation = operation.name, %error, "claim lost a race");
                    }
                    failure => {
                        return Err(self.stopped(
                            operation,
                            Some(contract),
                            stop_of(failure),
                            Some(&error),
                        ));
                    }
                },
            }
            let record = match self
                .read_for_claim(&mut *connection, operation, contract, &scope, &key, in_transaction)
                .await?
            {
                Some(record) => record,
                None => continue,
            };
            if written.contains(&record.claim_token) {
                counters.first_attempts.inc();
                return Ok(Claim {
                    scope,
                    key,
                    fingerprint,
                    token: record.claim_token,
                    taken_over: false,
                    in_transaction,
                    inserted: false,
                });
            }
            let reason = match decide(
                operation,
                contract,
                &record,
                &fingerprint,
                self.clock_margin_ms,
            ) {
                Decision::Answer(answer) => return Err(answer),
                Decision::Reclaim(reason) => reason,
            };
            let token = new_token();
            written.push(token.clone());
            let reclaim = Reclaim {
                claim: NewClaim {
                    token: &token,
                    ..claim
                },
                old_token: &record.claim_token,
                old_status: &record.status,
                margin_ms: self.clock_margin_ms,
            };
            if let Err(error) = self.records.reclaim(&mut *connection, &reclaim).await {
                let failure = classify(&error);
                if failure == Failure::LostRace && in_transaction {
                    return Err(lost_in_transaction(&error));
                }
                if failure != Failure::LostRace {
                    return Err(self.stopped(
                        operation,
                        Some(contract),
                        stop_of(failure),
                        Some(&error),
                    ));
                }
            }
            let won = self
                .read_for_claim(&mut *connection, operation, contract, &scope, &key, in_transaction)
                .await?
                .is_some_and(|record| record.claim_token == token);
            if won {
                match reason {
                    Reason::Takeover => counters.takeovers.inc(),
                    Reason::Released => {
                        counters.first_attempts.inc();
                        counters.reclaims_after_release.inc();
                    }
                    Reason::Expired | Reason::RetryAfterFailure => counters.first_attempts.inc(),
                }
                tracing::info!(
                    operation = operation.name,
                    ?reason,
                    "claimed an existing key"
                );
                return Ok(Claim {
                    scope,
                    key,
                    fingerprint,
                    token,
                    taken_over: matches!(reason, Reason::Takeover),
                    in_transaction,
                    inserted: false,
                });
            }
            // Another request reclaimed it first (or the reclaim itself
            // lost a race on the database).
            operation.metrics.lost_race(LostRace::Reclaim);
        }
        counters.in_progress.inc();
        Err(in_progress(contract))
    }

    /// [`Idempotency::read`] inside the claim. In the business transaction
    /// (`in_transaction`) a lost race on the read is the attempt's end,
    /// answered "in progress": a deadlock may have ended the transaction
    /// (InnoDB rolls its victim back), and on MySQL every statement after
    /// it, the claim and the business write included, would then commit
    /// on its own, with no transaction to take the claim away with the
    /// work (a history of the fault suite booked one request twice, with a
    /// 500 "transaction ended" between, which this explains).
    async fn read_for_claim(
        &self,
        connection: &mut <Db as sqlx::Database>::Connection,
        operation: &Operation,
        contract: &Contract,
        scope: &str,
        key: &str,
        in_transaction: bool,
    ) -> Result<Option<Record>, Response> {
        let read = self.records.read(&mut *connection, scope, key).await;
        match read {
            Err(error) if in_transaction && classify(&error) == Failure::LostRace => {
                operation.metrics.lost_race(LostRace::Read);
                tracing::debug!(operation = operation.name, %error, "claim in transaction lost a race on its read");
                operation.counters.in_progress.inc();
                Err(in_progress(contract))
            }
            read => self.read_answered(operation, read),
        }
    }

    /// Reads a record; a lost race reads as "no record yet".
    async fn read<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = Db>,
        operation: &Operation,
        scope: &str,
        key: &str,
    ) -> Result<Option<Record>, Response> {
        let read = self.records.read(executor, scope, key).await;
        self.read_answered(operation, read)
    }

    /// A read's record, where a lost race is "no record yet" and any other
    /// failure the attempt's answer.
    // The error is the answer to send, as from the async readers that call
    // this: boxing it would only move the allocation.
    #[allow(clippy::result_large_err)]
    fn read_answered(
        &self,
        operation: &Operation,
        read: Result<Option<Record>, sqlx::Error>,
    ) -> Result<Option<Record>, Response> {
        match read {
            Ok(record) => Ok(record),
            Err(error) => match classify(&error) {
                Failure::LostRace => {
                    operation.metrics.lost_race(LostRace::Read);
                    Ok(None)
                }
                failure => Err(self.stopped(
                    operation,
                    operation.contract.as_ref(),
                    stop_of(failure),
                    Some(&error),
                )),
            },
        }
    }

    /// Whether `claim` is still this attempt's in-progress record.
    async fn still_holds(&self, operation: &Operation, claim: &Claim) -> bool {
        matches!(
            self.read(&self.pool, operation, &claim.scope, &claim.key).await,
            Ok(Some(record)) if record.claim_token == claim.token && record.status == IN_PROGRESS
        )
    }

    /// The answer for a key someone else holds now.
    async fn answer_from_record(&self, operation: &Operation, claim: &Claim) -> Response {
        let contract = operation
            .contract
            .as_ref()
            .expect("only idempotent operations hold claims");
        match self
            .read(&self.pool, operation, &claim.scope, &claim.key)
            .await
        {
            Ok(Some(record)) => {
                match decide(
                    operation,
                    contract,
                    &record,
                    &claim.fingerprint,
                    self.clock_margin_ms,
                ) {
                    Decision::Answer(answer) => answer,
                    Decision::Reclaim(_) => {
                        operation.counters.in_progress.inc();
                        in_progress(contract)
                    }
                }
            }
            Ok(None) => {
                operation.counters.in_progress.inc();
                in_progress(contract)
            }
            Err(answer) => answer,
        }
    }

    /// Rolls the business write in `tx` back and records `reply` as the
    /// attempt's failure. A claim written in that transaction goes with
    /// the rollback: under `failed: retry` that frees the key for the
    /// retry, as a recorded failure would; under `failed: reject` the
    /// transaction returns to the savepoint after the claim and commits
    /// the failure with it, so a duplicate waiting on the key is refused.
    async fn roll_back_failure(
        &self,
        operation: &Operation,
        mut tx: Tx,
        claim: Option<&Claim>,
        reply: &Reply,
    ) {
        let retry_failed = operation
            .contract
            .as_ref()
            .is_none_or(|contract| contract.retry_failed);
        let claim = match claim {
            Some(claim) if claim.in_transaction && !retry_failed => claim,
            claim => {
                if let Err(error) = tx.rollback().await {
                    tracing::warn!(operation = operation.name, %error, "rollback failed");
                }
                match claim {
                    Some(claim) if claim.in_transaction => operation.counters.failures.inc(),
                    Some(claim) => self.record_failure(operation, claim, reply).await,
                    None => {}
                }
                return;
            }
        };
        operation.counters.failures.inc();
        let finish = Finish {
            status: FAILED,
            reply,
            scope: &claim.scope,
            key: &claim.key,
            token: &claim.token,
        };
        let commit_by = Instant::now() + self.commit_timeout;
        let recorded = async {
            sqlx::raw_sql(ROLLBACK_TO_CLAIM).execute(&mut *tx).await?;
            self.records.finish(&mut *tx, &finish).await?;
            tx.commit().await
        };
        let error = match db::within(commit_by, recorded).await {
            Some(Ok(())) => return,
            Some(Err(error)) => error.to_string(),
            None => format!("no answer within {:?}", self.commit_timeout),
        };
        // The transaction, claim included, is rolled back when its
        // connection is dropped: the key is free again.
        tracing::warn!(
            operation = operation.name,
            %error,
            "failure not recorded; the claim was rolled back with the work"
        );
    }

    async fn record_failure(&self, operation: &Operation, claim: &Claim, reply: &Reply) {
        operation.counters.failures.inc();
        let finish = Finish {
            status: FAILED,
            reply,
            scope: &claim.scope,
            key: &claim.key,
            token: &claim.token,
        };
        match self.records.finish(&self.pool, &finish).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                operation = operation.name,
                "failure not recorded: the claim was taken over"
            ),
            Err(error) => tracing::warn!(
                operation = operation.name,
                %error,
                "failure not recorded; the key becomes claimable when its lease ends"
            ),
        }
    }
}

impl Idempotency {
    /// Deletes expired records in batches of `batch` until none is left;
    /// returns how many. Expiry itself is decided by the claim, not by
    /// this: it only keeps the table small.
    pub async fn purge_expired(&self, batch: i64) -> Result<u64, sqlx::Error> {
        let mut total = 0;
        loop {
            let deleted = self
                .records
                .purge(&self.pool, self.clock_margin_ms, batch)
                .await?;
            total += deleted;
            if deleted < u64::try_from(batch).unwrap_or(0) {
                return Ok(total);
            }
        }
    }

    /// Counts the records, and those in progress past their lease, for
    /// `GET /metrics` (the purge task calls it after each purge).
    pub async fn sample_census(&self) -> Result<(), sqlx::Error> {
        let (records, past_lease) = self
            .records
            .census(&self.pool, self.clock_margin_ms)
            .await?;
        self.census.records.store(records, Ordering::Relaxed);
        self.census.past_lease.store(past_lease, Ordering::Relaxed);
        Ok(())
    }

    /// Counts the records that got stuck in progress since the last call
    /// (`idempotency_records_stuck_total`); the purge task calls it before
    /// each purge. The first call only marks where counting starts.
    pub async fn sample_stuck(&self) -> Result<(), sqlx::Error> {
        let since = self.census.stuck_seen_until.load(Ordering::Relaxed);
        let since = (since != i64::MIN).then_some(since);
        let (stuck, bound) = self
            .records
            .newly_stuck(&self.pool, self.clock_margin_ms, since)
            .await?;
        self.census.stuck.add(u64::try_from(stuck).unwrap_or(0));
        self.census.stuck_seen_until.store(bound, Ordering::Relaxed);
        Ok(())
    }

    /// What `GET /metrics` serves for `operations` and this engine's table.
    pub(crate) fn collector(&self, operations: &'static [&'static Operation]) -> Collector {
        Collector {
            operations: operations
                .iter()
                .map(|operation| Measured {
                    label: operation.label,
                    idempotent: operation.contract.is_some(),
                    counters: &operation.counters,
                    metrics: &operation.metrics,
                })
                .collect(),
            table: self.records.table().to_string(),
            census: self.census.clone(),
        }
    }
}

impl Call {
    /// The request, as read.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The open transaction and the request, for the business function.
    pub fn parts(&mut self) -> (&mut Tx, &Request) {
        (&mut self.tx, &self.request)
    }

    /// The idempotency key to give downstream services (a payment
    /// provider, another idempotent API) for this request: the same for
    /// every attempt of one key (`None` for an operation without a key).
    /// An attempt cancelled past `server.max-processing` may already have
    /// charged downstream; the retry that takes over sends the same key
    /// there, so the downstream service recognises the charge instead of
    /// making a second one. Derived from the operation, the scope and the
    /// key (64 hex digits), so it reveals none of them and two operations'
    /// or tenants' keys never share one.
    pub fn downstream_key(&self) -> Option<&str> {
        self.request.downstream_key.as_deref()
    }

    /// This attempt's claim token (`None` for an operation without a key):
    /// the fence of this attempt's claim, new on every attempt, including a
    /// takeover after a lease ran out. Use it to tell attempts apart (logs,
    /// a fencing check of your own); never as a downstream idempotency key,
    /// since a retry would get a new one and be charged again: that is
    /// [`Call::downstream_key`].
    pub fn claim_token(&self) -> Option<&str> {
        self.claim.as_ref().map(|claim| claim.token.as_str())
    }

    /// When this attempt's lease (`server.max-processing`, counted from
    /// before the claim) runs out; [`within_lease`] stops the business
    /// function there.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Runs `business` (the business function, borrowing this call's
    /// transaction and request) until the lease's deadline. `None` when it
    /// ran past it: it was dropped there, which cancels it, and
    /// [`Call::lease_expired`] rolls back and releases the key.
    ///
    /// ```ignore
    /// let deadline = call.deadline();
    /// let (tx, request) = call.parts();
    /// match idemgen_runtime::within_lease(deadline, handle(tx, request)).await {
    ///     Some(outcome) => call.finish(outcome).await,
    ///     None => call.lease_expired().await,
    /// }
    /// ```
    pub async fn lease_expired(self) -> Response {
        let operation = self.operation;
        let business = self.business_started.elapsed();
        operation
            .metrics
            .observe_business(operation.contract.as_ref(), business);
        let claim = self.claim_time;
        let ending = Instant::now();
        let answer = in_place(|| self.stop(Stop::DeadlineExceeded, None)).await;
        outcome::count(&operation.metrics, &answer);
        outcome::timed(answer, Outcome::Failed, |observed| {
            observed.claim = claim;
            observed.business = Some(business);
            observed.commit = Some(ending.elapsed());
        })
    }

    /// Ends the request with `reply`: [`Call::finish`] for a business
    /// function that cannot fail.
    pub async fn answer(self, reply: Reply) -> Response {
        self.finish(Ok::<Reply, std::convert::Infallible>(reply))
            .await
    }

    /// Ends the request with the business function's outcome: a success is
    /// stored (fenced on the claim token) and committed with the business
    /// write; a business answer that is not a success rolls the business
    /// write back and is recorded as a failure; an error rolls back and
    /// releases the claim, so a retry runs again.
    pub async fn finish<E>(self, outcome: Result<Reply, E>) -> Response
    where
        E: Into<Box<dyn Error + Send + Sync>>,
    {
        let business = self.business_started.elapsed();
        self.operation
            .metrics
            .observe_business(self.operation.contract.as_ref(), business);
        let claim = self.claim_time;
        let taken_over = self.claim.as_ref().is_some_and(|claim| claim.taken_over);
        let finishing = Instant::now();
        let operation = self.operation;
        let answer = in_place(|| self.store_and_commit(outcome)).await;
        outcome::count(&operation.metrics, &answer);
        // Unmarked: this attempt's own answer, stored (a success) or
        // recorded as a failure.
        let outcome = match (answer.status().is_success(), taken_over) {
            (true, false) => Outcome::First,
            (true, true) => Outcome::Takeover,
            (false, _) => Outcome::Failed,
        };
        outcome::timed(answer, outcome, |observed| {
            observed.claim = claim;
            observed.business = Some(business);
            observed.commit = Some(finishing.elapsed());
        })
    }

    /// [`Call::finish`] without its measures.
    async fn store_and_commit<E>(self, outcome: Result<Reply, E>) -> Response
    where
        E: Into<Box<dyn Error + Send + Sync>>,
    {
        let reply = match outcome {
            // Not a database's failure, nor one a retry could avoid: the
            // same business step gives the same answer. Rolled back and
            // recorded as a failure, like a business refusal.
            Ok(reply) if reply.body.len() > self.engine.max_stored_answer => {
                let limit = self.engine.max_stored_answer;
                tracing::error!(
                    operation = self.operation.name,
                    bytes = reply.body.len(),
                    limit,
                    "the answer is too large to store; rolled back and refused (raise the \
                     stored-answer limit, MAX_STORED_ANSWER_BYTES in a generated service, or \
                     make the answer smaller)"
                );
                answer_too_large(reply.body.len(), limit)
            }
            Ok(reply) => reply,
            Err(error) => {
                let error: Box<dyn Error + Send + Sync> = error.into();
                if let Some(missing) = error.downcast_ref::<NotImplemented>() {
                    tracing::warn!(operation = self.operation.name, "{missing}");
                    let reply = Reply::not_implemented(missing.0);
                    self.abandon().await;
                    return reply.into_response();
                }
                let database = database_error(error.as_ref());
                let stop = database.map_or(Stop::Error, stop_for);
                if stop == Stop::Refused {
                    return self.refused(database).await;
                }
                if stop == Stop::LostRace {
                    self.operation.metrics.lost_race(LostRace::Business);
                }
                if stop == Stop::Error {
                    tracing::error!(operation = self.operation.name, %error, "business function failed");
                }
                return self.stop(stop, database).await;
            }
        };
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
        {
            return self.stop(Stop::DeadlineExceeded, None).await;
        }

        let Call {
            engine,
            operation,
            mut tx,
            request: _,
            claim,
            lead,
            ..
        } = self;
        let commit_by = Instant::now() + engine.commit_timeout;
        let Some(claim) = claim else {
            let done = if reply.is_success() {
                let Some(done) = db::within(commit_by, tx.commit()).await else {
                    return engine.commit_unanswered(operation, None);
                };
                done
            } else {
                tx.rollback().await
            };
            return match done {
                Ok(()) => reply.into_response(),
                Err(error) => engine.stopped(operation, None, stop_for(&error), Some(&error)),
            };
        };
        let contract = operation.contract.as_ref();

        if !reply.is_success() {
            engine
                .roll_back_failure(operation, tx, Some(&claim), &reply)
                .await;
            return reply.into_response();
        }

        let finish = Finish {
            status: COMPLETED,
            reply: &reply,
            scope: &claim.scope,
            key: &claim.key,
            token: &claim.token,
        };
        let completing = async {
            match engine.records.complete(&mut *tx, &finish).await {
                // On PostgreSQL, a business step that wrote nothing looks
                // like one that ended its transaction: ask, and complete in
                // the transaction that is still open.
                Ok(false) if Dialect::BUILT == Dialect::Postgres => {
                    match engine.records.transaction_is_open(&mut tx).await {
                        Ok(true) => engine.records.finish(&mut *tx, &finish).await,
                        other => other,
                    }
                }
                completed => completed,
            }
        };
        // Nothing is committed yet: the transaction is rolled back (when
        // the connection is dropped) and the claim released for the retry.
        let Some(completed) = db::within(commit_by, completing).await else {
            drop(tx);
            engine.release(operation, &claim).await;
            return engine.stopped(operation, contract, Stop::Unavailable, None);
        };
        match completed {
            Ok(true) => {}
            Ok(false) if engine.still_holds(operation, &claim).await => {
                // The fence held, so the completion matched nothing
                // because the transaction was no longer open: business
                // code ended it. What it committed or rolled back is
                // unknown here; nothing is recorded, and the claim stands
                // until its lease ends rather than invite an immediate
                // second run.
                let _ = tx.rollback().await;
                tracing::error!(
                    operation = operation.name,
                    "the business function ended its transaction itself (a COMMIT or ROLLBACK, \
                     DDL that commits implicitly, or a deadlock it did not propagate); nothing \
                     was recorded"
                );
                return problem(ProblemKind::InternalError, 
                    500,
                    "the request's transaction ended before its answer could be stored; its \
                     effect is unknown. A retry with the same key runs again once the \
                     request's lease has ended",
                );
            }
            Ok(false) => {
                let _ = tx.rollback().await;
                operation.metrics.lost_race(LostRace::TakenOver);
                tracing::warn!(
                    operation = operation.name,
                    "the claim was taken over after its lease ran out; rolled back"
                );
                return engine.answer_from_record(operation, &claim).await;
            }
            Err(error) => {
                let _ = tx.rollback().await;
                // Release the claim, so the retry runs at once instead of
                // after the lease. The release is fenced on this attempt's
                // token: if a takeover is what made the completion fail (a
                // serialization failure, a lock wait), it matches nothing.
                engine.release(operation, &claim).await;
                // The answer being stored is the business code's, not the
                // client's: a value of it the table refuses is a bug here.
                let stop = match stop_for(&error) {
                    Stop::Refused => Stop::Error,
                    stop => stop,
                };
                if stop == Stop::LostRace {
                    operation.metrics.lost_race(LostRace::Commit);
                    return engine.answer_from_record(operation, &claim).await;
                }
                return engine.stopped(operation, contract, stop, Some(&error));
            }
        }
        let Some(committed) = db::within(commit_by, tx.commit()).await else {
            // The COMMIT may still happen, so the claim is not released:
            // a retry with the same key is answered "in progress" until
            // the lease ends, then gets the stored answer or runs again.
            return engine.commit_unanswered(operation, contract);
        };
        match committed {
            Ok(()) => {
                if let Some(lead) = lead.filter(Lead::followed) {
                    lead.land(StoredAnswer {
                        status: reply.status.as_u16(),
                        content_type: reply.content_type.clone(),
                        body: reply.body.clone(),
                        headers: response_headers::encode(&reply.headers),
                    });
                }
                reply.into_response()
            }
            // The database refused the commit: nothing was written, and the
            // claim (committed on its own) is released for the retry.
            Err(error) if stop_for(&error) == Stop::LostRace => {
                operation.metrics.lost_race(LostRace::Commit);
                engine.release(operation, &claim).await;
                engine.answer_from_record(operation, &claim).await
            }
            // The server answered the COMMIT with an error of its own (a
            // deferred constraint, say): it rolled back, certainly.
            Err(error @ sqlx::Error::Database(_))
                if matches!(classify(&error), Failure::Other | Failure::Refused) =>
            {
                engine.release(operation, &claim).await;
                engine.stopped(operation, contract, stop_for(&error), Some(&error))
            }
            // The commit's outcome is unknown (the connection broke while
            // it ran, the server went away): it may have happened. The release only matches a
            // record still in progress, so it cannot undo a commit that
            // happened; a retry with the same key gets the stored answer if
            // it did, and runs again if it did not. A new key could pay
            // twice, and the answer says so.
            Err(error) => {
                engine.release(operation, &claim).await;
                tracing::error!(operation = operation.name, %error, "commit outcome unknown");
                engine.probe_in_background();
                let retry_after = contract.map_or(1, |contract| contract.retry_after_secs);
                outcome::mark(
                    outcome_unknown(retry_after, "the database connection broke"),
                    Outcome::Failed,
                )
            }
        }
    }

    /// Rolls back, releases the claim and answers "retry".
    async fn stop(self, stop: Stop, error: Option<&sqlx::Error>) -> Response {
        let engine = self.engine.clone();
        let operation = self.operation;
        self.abandon().await;
        engine.stopped(operation, operation.contract.as_ref(), stop, error)
    }

    /// The business write met a database that refused a value of the
    /// request: rolled back, and answered `400` like a business refusal,
    /// so recorded as a failure (`failed: retry` runs a retry again and
    /// it is refused again; `failed: reject` answers the conflict).
    async fn refused(self, error: Option<&sqlx::Error>) -> Response {
        let Call {
            engine,
            operation,
            tx,
            claim,
            ..
        } = self;
        let reply = refused_value(operation, error);
        engine
            .roll_back_failure(operation, tx, claim.as_ref(), &reply)
            .await;
        outcome::reject(reply.into_response(), Rejection::Refused)
    }

    /// Rolls back and releases the claim, so a retry runs again.
    async fn abandon(self) {
        let Call {
            engine,
            operation,
            tx,
            claim,
            ..
        } = self;
        if let Err(error) = tx.rollback().await {
            tracing::debug!(operation = operation.name, %error, "rollback failed");
        }
        if let Some(claim) = &claim {
            engine.release(operation, claim).await;
        }
    }
}

/// A key that passed its contract's checks, and what it is claimed under.
struct Admitted {
    key: String,
    scope: String,
    fingerprint: String,
}

/// Checks `request`'s key, scope and body against `operation`'s contract
/// without touching the database: `None` when there is nothing to claim
/// (no contract, or an optional key that is absent), `Err` the answer to a
/// key, scope or body the contract refuses.
// The error is the answer to send, made once per refused request: boxing
// it would only move the allocation.
#[allow(clippy::result_large_err)]
fn admit(operation: &Operation, request: &Request) -> Result<Option<Admitted>, Response> {
    let scoped_by_principal = operation
        .contract
        .as_ref()
        .is_some_and(|contract| contract.scope.contains(&crate::Source::Principal));
    if (scoped_by_principal || !operation.security.is_open()) && request.principal.is_none() {
        tracing::warn!(
            operation = operation.name,
            "refused a request that reached the engine unauthenticated"
        );
        return Err(refuse(
            operation,
            RefusalReason::Unauthenticated,
            problem(ProblemKind::Unauthenticated, 401, "this operation requires credentials"),
        ));
    }
    let Some(contract) = &operation.contract else {
        return Ok(None);
    };
    let key = match key::read_key(&contract.key, request) {
        key::KeyValue::Present(key) => key,
        key::KeyValue::Absent if !contract.key_required => return Ok(None),
        key::KeyValue::Absent => {
            return Err(refuse(
                operation,
                RefusalReason::MissingKey,
                problem(
                    ProblemKind::MissingKey,
                    contract.missing_key_status,
                    &format!("send a key of the form `{}`", contract.key_format),
                ),
            ));
        }
        key::KeyValue::Unreadable(why) => {
            return Err(refuse(
                operation,
                RefusalReason::MalformedKey,
                problem(ProblemKind::InvalidKey, contract.missing_key_status, &why),
            ));
        }
    };
    let regex = operation.key_regex.get_or_init(|| {
        Regex::new(contract.key_pattern).expect("a contract's key pattern is a valid regex")
    });
    if let Err(why) = key::validate(contract, regex, &key, request) {
        return Err(refuse(
            operation,
            RefusalReason::MalformedKey,
            problem(ProblemKind::InvalidKey, contract.missing_key_status, &why),
        ));
    }
    let scope = key::scope_of(operation.name, contract, request).map_err(|why| {
        refuse(
            operation,
            RefusalReason::InvalidScope,
            problem(ProblemKind::InvalidScope, 400, &why),
        )
    })?;
    let fingerprint = fingerprint_of(
        contract,
        &operation.security,
        FormLists {
            joined: operation.form_lists,
            fields: operation.form_list_fields,
            json: operation.form_json_fields,
        },
        request,
    )
        .map_err(|error| {
        refuse(
            operation,
            RefusalReason::SchemaInvalid,
            problem(ProblemKind::AmbiguousBody, 400, &error.to_string()),
        )
    })?;
    Ok(Some(Admitted {
        key,
        scope,
        fingerprint,
    }))
}

/// Waits for `work` until `deadline` (none: no limit); `None` when the
/// deadline passed first, and `work` was dropped, which cancels it.
pub async fn within_lease<T>(
    deadline: Option<Instant>,
    work: impl Future<Output = T>,
) -> Option<T> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, work).await.ok(),
        None => Some(work.await),
    }
}

/// The answer to a value the database refused, which it names (the
/// database's own words: `value too long for type character varying(64)`,
/// `Data too long for column 'txn_id'`, a CHECK constraint's name), logged
/// once as a warning: the client is at fault, but a schema that lets such
/// a value through to the database says less than the database does.
fn refused_value(operation: &Operation, error: Option<&sqlx::Error>) -> Reply {
    let what = match error {
        Some(sqlx::Error::Database(error)) => {
            let message = error.message();
            let line = message.lines().next().unwrap_or_default();
            match line.char_indices().nth(200) {
                Some((end, _)) => format!("{}…", &line[..end]),
                None => line.to_string(),
            }
        }
        Some(error) => error.to_string(),
        None => "a value of the request".to_string(),
    };
    tracing::warn!(
        operation = operation.name,
        refused = %what,
        "the database refused a value of the request; answered 400"
    );
    Reply::refusal(
        ProblemKind::ValueRefused,
        StatusCode::BAD_REQUEST,
        &format!(
            "the database refused a value of this request ({what}); nothing was committed, \
             and the same request would be refused again"
        ),
    )
}

/// The database error somewhere in `error`'s chain, if any.
fn database_error<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a sqlx::Error> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(database) = error.downcast_ref::<sqlx::Error>() {
            return Some(database);
        }
        next = error.source();
    }
    None
}

fn stop_for(error: &sqlx::Error) -> Stop {
    stop_of(classify(error))
}

fn stop_of(failure: Failure) -> Stop {
    match failure {
        Failure::LostRace => Stop::LostRace,
        Failure::Unavailable => Stop::Unavailable,
        Failure::Refused => Stop::Refused,
        Failure::Other => Stop::Error,
    }
}

/// Whether a record read before any claim settles the request, with the
/// answer the claim would reach too: a completed record inside its window
/// with this request's fingerprint (the replay), any record inside its
/// window with another fingerprint (the conflict), or a record in progress
/// under a lease that has not ended (in progress: a duplicate in a burst
/// costs one read, not a claim that fails). Inside its window a record
/// never changes its fingerprint (only an expired record is reclaimed for
/// another request) nor leaves `completed` (reclaims, finishes and
/// releases match only other states), so reading it later, after a failed
/// claim, would give the same answer. A record in progress may finish or
/// be released a moment after the read: "in progress" was true when read,
/// and nothing is written on it.
fn settled(record: &Record, fingerprint: &str, margin_ms: i64) -> bool {
    let in_window = record.expires_at.saturating_add(margin_ms) > record.db_now;
    let leased = record.status == IN_PROGRESS && record.lease_running(margin_ms);
    in_window && (record.fingerprint != fingerprint || record.status == COMPLETED || leased)
}

fn decide(
    operation: &Operation,
    contract: &Contract,
    record: &Record,
    fingerprint: &str,
    margin_ms: i64,
) -> Decision {
    let counters = &operation.counters;
    // The database's clock, read with the record, decides.
    let now = record.db_now;
    if record.expires_at.saturating_add(margin_ms) <= now {
        // Past the window the key is new, whatever it was used for.
        return Decision::Reclaim(Reason::Expired);
    }
    if record.fingerprint != fingerprint {
        counters.conflicts.inc();
        return Decision::Answer(conflict(
            operation,
            problem(
                ProblemKind::KeyReused,
                contract.conflict_status,
                "this key was used with a different request; the first request's result stands",
            ),
        ));
    }
    match record.status.as_str() {
        COMPLETED => {
            counters.replays.inc();
            Decision::Answer(replay(record, contract))
        }
        FAILED if contract.retry_failed => Decision::Reclaim(Reason::RetryAfterFailure),
        FAILED => {
            counters.conflicts.inc();
            Decision::Answer(conflict(
                operation,
                problem(
                    ProblemKind::EarlierAttemptFailed,
                    contract.conflict_status,
                    "the first request with this key failed; send a new key to try again",
                ),
            ))
        }
        _ if !record.lease_running(margin_ms) => {
            if record.released(margin_ms) {
                Decision::Reclaim(Reason::Released)
            } else {
                Decision::Reclaim(Reason::Takeover)
            }
        }
        _ => {
            counters.in_progress.inc();
            Decision::Answer(in_progress(contract))
        }
    }
}

/// How long a duplicate waits in memory for the running first attempt of
/// its key: at most the in-progress `Retry-After`, and at most half the
/// client's timeout where the contract declares one, so that a client
/// whose first try timed out still hears "in progress" from the database
/// (which answers it next) before its retry times out too.
fn follow_wait(contract: &Contract) -> Duration {
    let retry_after = Duration::from_secs(contract.retry_after_secs);
    match u64::try_from(contract.client_timeout_ms) {
        Ok(timeout_ms) if timeout_ms > 0 => retry_after.min(Duration::from_millis(timeout_ms / 2)),
        _ => retry_after,
    }
}

/// The stored answer: status, content type, body and stored headers,
/// marked as a replay where the contract names a mark.
fn replay(record: &Record, contract: &Contract) -> Response {
    replay_answer(
        record.response_status,
        record.response_content_type.as_deref(),
        record.response_body.as_deref().unwrap_or_default(),
        record.response_headers.as_deref(),
        contract,
    )
}

/// A stored answer's parts sent as a replay.
fn replay_answer(
    status: Option<u16>,
    content_type: Option<&str>,
    body: &[u8],
    stored_headers: Option<&[u8]>,
    contract: &Contract,
) -> Response {
    let status = status
        .and_then(|status| StatusCode::from_u16(status).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body.to_vec()).into_response();
    let headers = response.headers_mut();
    match content_type
        .filter(|value| !value.is_empty())
        .and_then(|value| HeaderValue::from_str(value).ok())
    {
        Some(value) => {
            headers.insert(header::CONTENT_TYPE, value);
        }
        None => {
            headers.remove(header::CONTENT_TYPE);
        }
    }
    if let Some(block) = stored_headers {
        response_headers::send(&response_headers::decode(block), headers);
    }
    // A name the contract's parser accepted is a valid header name.
    if let Some(name) = contract
        .replayed_header
        .and_then(|name| HeaderName::from_bytes(name.as_bytes()).ok())
    {
        headers.insert(name, HeaderValue::from_static("true"));
    }
    outcome::mark(response, Outcome::Replay)
}

fn in_progress(contract: &Contract) -> Response {
    let mut response = problem(ProblemKind::InProgress, 
        contract.in_progress_status,
        "a request with this key is still being processed; retry after the Retry-After delay",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(contract.retry_after_secs),
    );
    outcome::mark(response, Outcome::InProgress)
}

/// `answer`, counted and marked as refused for `refusal`.
fn refuse(operation: &Operation, refusal: RefusalReason, answer: Response) -> Response {
    let answer = refused(operation, refusal, answer);
    outcome::count(&operation.metrics, &answer);
    answer
}

/// `answer`, marked as refused for `refusal`, to be counted with the
/// other answers of [`Idempotency::begin_admitted`].
fn refused(operation: &Operation, refusal: RefusalReason, answer: Response) -> Response {
    operation.metrics.refused(refusal);
    let answer = outcome::reject(answer, Rejection::Refused);
    outcome::mark(answer, Outcome::Refused(refusal))
}

/// The business function's input: decoded before anything else when no
/// record can answer the request, else after the read that may.
enum Input<I, D> {
    Decoded(I),
    AfterTheRead(D),
}

impl<I, D: FnOnce(&Request) -> Result<I, Reply>> Input<I, D> {
    // The error is the answer to send, as `admit`'s is.
    #[allow(clippy::result_large_err)]
    fn decode(self, operation: &Operation, request: &Request) -> Result<I, Response> {
        match self {
            Input::Decoded(input) => Ok(input),
            Input::AfterTheRead(decode) => decoded(operation, request, decode),
        }
    }
}

/// `decode`'s input of `request`; its refusal marked as a schema refusal.
#[allow(clippy::result_large_err)]
fn decoded<I>(
    operation: &Operation,
    request: &Request,
    decode: impl FnOnce(&Request) -> Result<I, Reply>,
) -> Result<I, Response> {
    decode(request).map_err(|reply| {
        refused(operation, RefusalReason::SchemaInvalid, reply.into_response())
    })
}

/// `answer` to a request whose body could not be read (too large, too
/// slow), counted and marked as refused.
fn unread(operation: &Operation, answer: Response) -> Response {
    let reason = match answer.status() {
        StatusCode::PAYLOAD_TOO_LARGE => RefusalReason::TooLarge,
        _ => RefusalReason::Other,
    };
    // Too many bodies being read at once: the server is busy.
    let answer = match answer.status() {
        StatusCode::SERVICE_UNAVAILABLE => {
            outcome::waited(outcome::reject(answer, Rejection::Busy), Wait::Bodies)
        }
        _ => answer,
    };
    refuse(operation, reason, answer)
}

/// `answer` to a key reused with another request (or after a failure that
/// may not be retried): a conflict, and a refusal.
fn conflict(operation: &Operation, answer: Response) -> Response {
    operation.metrics.refused(RefusalReason::Conflict);
    outcome::mark(answer, Outcome::Conflict)
}

/// The problem `kind` as the answer, with a contract's status (one that
/// is not an HTTP status answers 400).
fn problem(kind: ProblemKind, status: u16, detail: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    outcome::reject(
        Reply::refusal(kind, status, detail).into_response(),
        Rejection::of_problem(kind),
    )
}

/// A problem with `Retry-After`: nothing was processed, try again.
fn retry_later(kind: ProblemKind, status: u16, retry_after_secs: u64) -> Response {
    let mut response = problem(kind, 
        status,
        "the request was not processed; retry it with the same key after the Retry-After delay",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

/// A `503` for a commit that may or may not have happened: retry with the
/// same key, never a new one.
/// The answer to a COMMIT whose outcome is unknown, because `what`
/// happened while it ran.
fn outcome_unknown(retry_after_secs: u64, what: &str) -> Response {
    let mut response = problem(
        ProblemKind::OutcomeUnknown,
        503,
        &format!(
            "{what} while the request was committing: it may have been processed. Retry it \
             with the same key after the Retry-After delay (never with a new key): the retry \
             gets the stored answer if it was processed, and runs it if not"
        ),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

fn new_token() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicate_waits_at_most_the_retry_after_and_half_the_client_timeout() {
        let contract = |retry_after_secs, client_timeout_ms| Contract {
            retry_after_secs,
            client_timeout_ms,
            ..Contract::header("k", "^k$", 60_000, 10_000)
        };
        assert_eq!(follow_wait(&contract(1, 0)), Duration::from_secs(1));
        assert_eq!(follow_wait(&contract(1, 5_000)), Duration::from_secs(1));
        assert_eq!(follow_wait(&contract(5, 1_000)), Duration::from_millis(500));
        assert_eq!(follow_wait(&contract(1, -1)), Duration::from_secs(1));
    }

    #[test]
    #[should_panic(expected = "must be at least the lease")]
    fn a_window_shorter_than_the_lease_is_refused() {
        let _ = Operation::idempotent(
            "pay",
            "pay",
            Contract::header("pay:{uuid}", "^pay:.*$", 2_000, 3_000),
        );
    }
}
