//! An operation's idempotency contract, as plain constants: where the key
//! travels and what it looks like, how long it is remembered, what the
//! fingerprint covers and which statuses answer a duplicate.
//!
//! idemgen writes one [`Contract`] per operation from the spec's
//! `x-idempotency` block; a hand-written service writes it directly.

/// Where a value travels in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A header, by name (case-insensitive).
    Header(&'static str),
    /// A query parameter, by name.
    Query(&'static str),
    /// A JSON pointer into the request body (a string, or a number as written).
    Body(&'static str),
    /// The id of the verified [`crate::Principal`] (scope only): unlike the
    /// others, a value the caller cannot choose.
    Principal,
}

/// What the request fingerprint covers: the same key with a different
/// fingerprint is a conflict, never a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub method: bool,
    pub path: bool,
    pub query: bool,
    /// The header parameters hashed (the contract's `headers`: the
    /// operation's declared ones), by name, case-insensitively. The key's
    /// own header and credentials (`Authorization`, a scheme's API-key
    /// header, `Cookie` when a scheme's key travels in one) are never
    /// hashed, even when listed. Empty: no header is.
    pub headers: &'static [&'static str],
    pub body: bool,
    /// Hash the body as canonical JSON (sorted keys, no whitespace), so that
    /// a retry that re-serialises the same document is still the same request.
    pub canonical_json: bool,
}

impl Fingerprint {
    /// Method, path and body (as canonical JSON): the contract's default.
    pub const DEFAULT: Fingerprint = Fingerprint {
        method: true,
        path: true,
        query: false,
        headers: &[],
        body: true,
        canonical_json: true,
    };
}

/// When the claim of a key commits (the contract's `store.claim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimMode {
    /// The claim commits on its own before the business step: a duplicate
    /// sees the in-progress record at once, and its lease keeps a second
    /// attempt away while the first calls other systems. Two commits per
    /// first write.
    Committed,
    /// The claim is written in the business transaction: one commit per
    /// first write. A duplicate waits on the key's unique index (bounded by
    /// `Retry-After`, at least a second) for the first attempt to commit,
    /// then replays its answer, or to roll back, then claims it; past the
    /// wait it is answered "in progress". A rollback or a crash takes the
    /// claim away with the work, so it fits business steps whose effects
    /// are all in this database.
    InTransaction,
}

/// How one idempotent operation treats its key.
#[derive(Debug, Clone, Copy)]
pub struct Contract {
    /// Where the key travels.
    pub key: Source,
    /// The key's template (`key.format`), shown in messages.
    pub key_format: &'static str,
    /// The anchored regular expression a valid key matches.
    pub key_pattern: &'static str,
    /// Capture groups of `key_pattern` that must equal a body field
    /// (`{field:/pointer}` segments): `(group, pointer)`.
    pub key_fields: &'static [(usize, &'static str)],
    /// Longest key accepted, in bytes.
    pub max_key_len: usize,
    /// `false`: a request without a key is served without a record.
    pub key_required: bool,
    /// The answer to a missing or invalid key.
    pub missing_key_status: u16,
    /// Values that namespace the key (tenant, principal).
    pub scope: &'static [Source],
    /// How long a key is remembered, in milliseconds.
    pub window_ms: i64,
    /// How long an in-progress claim is held before another request may
    /// take it over (`server.max-processing`), in milliseconds.
    pub lease_ms: i64,
    /// `client.timeout` in milliseconds (0: the contract has none): a bound
    /// of the request histogram, to compare the service's latency with,
    /// and of how long a duplicate waits in memory for its key's first
    /// attempt (half of it).
    pub client_timeout_ms: i64,
    /// `Retry-After` of the in-progress answer, in seconds.
    pub retry_after_secs: u64,
    /// The answer to a duplicate while the first attempt runs.
    pub in_progress_status: u16,
    /// The answer to a key reused with a different request.
    pub conflict_status: u16,
    /// `true`: a recorded failure may be claimed again (`failed: retry`);
    /// `false`: it is refused with the conflict status (`failed: reject`).
    pub retry_failed: bool,
    pub fingerprint: Fingerprint,
    /// The header that marks a replayed answer `true`
    /// (`responses.replayed-header`); `None`: replays are not marked.
    pub replayed_header: Option<&'static str>,
    /// When the claim commits.
    pub claim: ClaimMode,
}

impl Contract {
    /// A contract with the usual answers (400 for a bad key, 429 with
    /// `Retry-After: 1` in progress, 409 on conflict, failures retryable,
    /// a claim committed on its own)
    /// for a required `Idempotency-Key` header matching `key_pattern`.
    ///
    /// ```
    /// use idemgen_runtime::Contract;
    ///
    /// const PAY: Contract = Contract {
    ///     window_ms: 60_000,
    ///     ..Contract::header("pay:{uuid}", "^pay:[0-9a-f-]{36}$", 18_000, 3_000)
    /// };
    /// assert_eq!(PAY.lease_ms, 3_000);
    /// ```
    pub const fn header(
        key_format: &'static str,
        key_pattern: &'static str,
        window_ms: i64,
        lease_ms: i64,
    ) -> Contract {
        Contract {
            key: Source::Header("Idempotency-Key"),
            key_format,
            key_pattern,
            key_fields: &[],
            max_key_len: 255,
            key_required: true,
            missing_key_status: 400,
            scope: &[],
            window_ms,
            lease_ms,
            client_timeout_ms: 0,
            retry_after_secs: 1,
            in_progress_status: 429,
            conflict_status: 409,
            retry_failed: true,
            fingerprint: Fingerprint::DEFAULT,
            replayed_header: Some("Idempotent-Replayed"),
            claim: ClaimMode::Committed,
        }
    }
}
