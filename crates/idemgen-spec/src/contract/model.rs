//! The typed `x-idempotency` contract of one operation, after merging the
//! operation's block over the document's and applying defaults.
//!
//! Every value remembers where it came from ([`Origin`]), so a finding
//! about an inherited value points at the document-level field.

use crate::Span;

use super::key_template::KeyTemplate;
use super::profile::Profile;

/// Where a value was written (or, for a default, the block it applies to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub span: Span,
    /// JSON pointer in the root document's logical tree.
    pub pointer: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Located<T> {
    pub fn new(value: T, origin: Origin) -> Self {
        Located { value, origin }
    }

    /// A default value, placed at the block (or field) it applies to.
    pub fn at(origin: &Origin, value: T) -> Self {
        Located {
            value,
            origin: origin.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLocation {
    Header,
    Query,
    Body,
}

impl KeyLocation {
    pub fn name(self) -> &'static str {
        match self {
            KeyLocation::Header => "header",
            KeyLocation::Query => "query",
            KeyLocation::Body => "body",
        }
    }
}

/// A value that namespaces keys: one the caller sends
/// (`header:X-Tenant`, `body:/account_id`) or the verified principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeSource {
    /// Carried by the request, so set by whoever sends it.
    Request(RequestScope),
    /// `principal`: the id of the principal the security check verified.
    Principal,
}

/// A scope value read from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestScope {
    pub location: KeyLocation,
    /// Header or query parameter name, or JSON pointer into the body.
    pub name: String,
}

impl ScopeSource {
    /// The request-carried source, or `None` for `principal`.
    pub fn request(&self) -> Option<&RequestScope> {
        match self {
            ScopeSource::Request(scope) => Some(scope),
            ScopeSource::Principal => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Canonical {
    Json,
    Raw,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FingerprintPart {
    Method,
    Path,
    Query,
    /// The operation's declared header parameters, but for the key's
    /// header and credentials.
    Headers,
    Body,
}

impl FingerprintPart {
    pub fn name(self) -> &'static str {
        match self {
            FingerprintPart::Method => "method",
            FingerprintPart::Path => "path",
            FingerprintPart::Query => "query",
            FingerprintPart::Headers => "headers",
            FingerprintPart::Body => "body",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailedPolicy {
    Retry,
    Reject,
}

/// When the claim of a key commits (`store.claim`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimMode {
    /// The claim commits on its own before the business step, so a
    /// duplicate sees the in-progress record at once and its lease guards
    /// calls to other systems: two commits per first write.
    Committed,
    /// The claim is written inside the business transaction: one commit,
    /// and a rollback or crash takes the claim away with the work. For
    /// business steps whose work is all in this database.
    InTransaction,
}

impl ClaimMode {
    pub const NAMES: [&'static str; 2] = ["committed", "in-transaction"];

    pub fn parse(name: &str) -> Option<ClaimMode> {
        match name {
            "committed" => Some(ClaimMode::Committed),
            "in-transaction" => Some(ClaimMode::InTransaction),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClaimMode::Committed => "committed",
            ClaimMode::InTransaction => "in-transaction",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Mysql,
    Postgres,
    Sqlite,
}

impl Dialect {
    pub const ALL: [Dialect; 3] = [Dialect::Mysql, Dialect::Postgres, Dialect::Sqlite];
    pub const NAMES: [&'static str; 3] = ["mysql", "postgres", "sqlite"];

    /// The dialect named `name` or one of its aliases; the same names work
    /// in a spec, in `idemgen.toml` and on every command line.
    pub fn parse(name: &str) -> Option<Dialect> {
        Dialect::ALL
            .into_iter()
            .find(|dialect| dialect.name() == name || dialect.aliases().contains(&name))
    }

    /// Other names for it: MariaDB speaks the MySQL dialect.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Dialect::Mysql => &["mariadb"],
            Dialect::Postgres => &["postgresql"],
            Dialect::Sqlite => &[],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Mysql => "mysql",
            Dialect::Postgres => "postgres",
            Dialect::Sqlite => "sqlite",
        }
    }

    /// Longest key (bytes) the dialect's unique index on
    /// `(scope, idem_key)` holds with the scope column's width.
    pub fn max_key_bytes(self) -> u64 {
        match self {
            // InnoDB DYNAMIC rows: 3072-byte index prefix; VARBINARY keys
            // and a 64-byte scope hash leave this much for the key.
            Dialect::Mysql => 3072 - 64,
            // A btree entry must fit in a third of an 8 KiB page.
            Dialect::Postgres => 2704 - 64,
            Dialect::Sqlite => 1_000_000,
        }
    }
}

/// How a service tells a replayed answer from a first one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayMark {
    /// A header whose value is `true` (or the structured-field `?1`).
    Header(String),
    /// No mark: replays look like first answers (`replayed-header: none`).
    Unmarked,
}

impl ReplayMark {
    /// The header's name, if replays carry one.
    pub fn header(&self) -> Option<&str> {
        match self {
            ReplayMark::Header(name) => Some(name),
            ReplayMark::Unmarked => None,
        }
    }
}

/// One block exactly as written: every field optional, nothing defaulted.
/// Merging is `operation.field.or(document.field)` for each leaf, which is
/// the field-by-field recursive merge with lists replaced whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawContract {
    pub profile: Option<Located<Profile>>,
    pub key_in: Option<Located<KeyLocation>>,
    pub key_name: Option<Located<String>>,
    pub key_format: Option<Located<KeyTemplate>>,
    pub key_max_length: Option<Located<u64>>,
    pub key_scope: Option<Located<Vec<Located<ScopeSource>>>>,
    pub window: Option<Located<u64>>,
    pub client_timeout: Option<Located<u64>>,
    pub client_retries: Option<Located<Vec<Located<u64>>>>,
    pub client_jitter: Option<Located<u64>>,
    pub server_max_processing: Option<Located<u64>>,
    pub server_downstream: Option<Located<Vec<Located<String>>>>,
    pub fingerprint_canonical: Option<Located<Canonical>>,
    pub fingerprint_include: Option<Located<Vec<FingerprintPart>>>,
    pub in_progress_status: Option<Located<u16>>,
    pub in_progress_retry_after: Option<Located<u64>>,
    pub failed: Option<Located<FailedPolicy>>,
    pub conflict_status: Option<Located<u16>>,
    pub missing_key_status: Option<Located<u16>>,
    pub replayed_header: Option<Located<ReplayMark>>,
    pub store_dialect: Option<Located<Dialect>>,
    pub store_engine: Option<Located<String>>,
    pub store_table: Option<Located<String>>,
    pub store_database: Option<Located<String>>,
    pub store_business_database: Option<Located<String>>,
    pub store_claim: Option<Located<ClaimMode>>,
    /// Percent, e.g. `0.1` for `0.1%`.
    pub replay_rate_alert: Option<Located<f64>>,
    /// Fields present but invalid (reported as `contract-invalid`), by
    /// dotted name, so other rules do not also call them missing.
    pub invalid: Vec<&'static str>,
}

macro_rules! merge_fields {
    ($op:expr, $doc:expr, $($field:ident = $name:literal),* $(,)?) => {
        RawContract {
            $($field: if $op.is_invalid($name) {
                None
            } else {
                $op.$field.clone().or_else(|| $doc.$field.clone())
            },)*
            invalid: $op.invalid.iter().chain(&$doc.invalid).copied().collect(),
        }
    };
}

impl RawContract {
    /// This block over `document`'s: the operation wins field by field. A
    /// field the operation wrote but got wrong does not fall back to the
    /// document's value: it is reported, and rules stay quiet about it.
    pub fn merged_over(&self, document: &RawContract) -> RawContract {
        merge_fields!(
            self,
            document,
            profile = "profile",
            key_in = "key.in",
            key_name = "key.name",
            key_format = "key.format",
            key_max_length = "key.max-length",
            key_scope = "key.scope",
            window = "window",
            client_timeout = "client.timeout",
            client_retries = "client.retries",
            client_jitter = "client.jitter",
            server_max_processing = "server.max-processing",
            server_downstream = "server.downstream",
            fingerprint_canonical = "fingerprint.canonical",
            fingerprint_include = "fingerprint.include",
            in_progress_status = "responses.in-progress.status",
            in_progress_retry_after = "responses.in-progress.retry-after",
            failed = "responses.failed",
            conflict_status = "responses.conflict",
            missing_key_status = "responses.missing-key",
            replayed_header = "responses.replayed-header",
            store_dialect = "store.dialect",
            store_engine = "store.engine",
            store_table = "store.table",
            store_database = "store.database",
            store_business_database = "store.business-database",
            store_claim = "store.claim",
            replay_rate_alert = "monitoring.replay-rate-alert",
        )
    }

    /// Whether `field` (dotted) or the section holding it was invalid here.
    fn is_invalid(&self, field: &str) -> bool {
        self.invalid.iter().any(|bad| {
            field == *bad
                || field
                    .strip_prefix(*bad)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
    }
}

/// The key: where it travels, what it looks like, how long it may be.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    pub location: Located<KeyLocation>,
    pub name: Located<String>,
    pub format: Located<KeyTemplate>,
    pub max_length: Located<u64>,
    pub scope: Vec<Located<ScopeSource>>,
}

/// An operation's merged contract with defaults applied. Required fields
/// that are still absent stay `None`; rules report them.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// The operation's own `x-idempotency` block.
    pub block: Origin,
    pub profile: Located<Profile>,
    /// `None` when `key.in`, `key.name` or `key.format` is missing.
    pub key: Option<KeySpec>,
    pub window_ms: Option<Located<u64>>,
    pub timeout_ms: Option<Located<u64>>,
    pub retries_ms: Located<Vec<Located<u64>>>,
    pub jitter_ms: Located<u64>,
    pub max_processing_ms: Option<Located<u64>>,
    /// The other systems the business step calls (`server.downstream`;
    /// none unless listed).
    pub downstream: Located<Vec<Located<String>>>,
    pub canonical: Located<Canonical>,
    pub fingerprint: Located<Vec<FingerprintPart>>,
    pub in_progress_status: Located<u16>,
    pub retry_after_ms: Located<u64>,
    pub failed: Located<FailedPolicy>,
    pub conflict_status: Located<u16>,
    /// `None` when the profile makes the key optional (`stripe`).
    pub missing_key_status: Option<Located<u16>>,
    /// How a replayed answer is marked (`responses.replayed-header`).
    pub replayed_header: Located<ReplayMark>,
    pub dialect: Located<Dialect>,
    pub engine: Option<Located<String>>,
    pub table: Located<String>,
    pub database: Option<Located<String>>,
    pub business_database: Option<Located<String>>,
    /// When the claim commits (`store.claim`, default `committed`).
    pub claim: Located<ClaimMode>,
    pub replay_rate_alert: Located<f64>,
    pub invalid: Vec<&'static str>,
}

pub const DEFAULT_MAX_KEY_LENGTH: u64 = 128;
pub const DEFAULT_RETRY_AFTER_MS: u64 = 1000;
/// The header a generated service marks its replays with.
pub const DEFAULT_REPLAYED_HEADER: &str = "Idempotent-Replayed";
pub const DEFAULT_TABLE: &str = "idempotent_record";
pub const DEFAULT_REPLAY_RATE_ALERT: f64 = 0.1;

/// Defaults that a project's configuration can change.
#[derive(Debug, Clone, Copy, Default)]
pub struct Defaults {
    pub profile: Option<Profile>,
    pub dialect: Option<Dialect>,
}

impl Contract {
    /// Applies defaults to a merged block; `block` is the operation's own.
    pub fn resolve(raw: RawContract, block: Origin, defaults: Defaults) -> Contract {
        let profile = raw.profile.unwrap_or_else(|| {
            Located::at(&block, defaults.profile.unwrap_or(Profile::RetryAfter))
        });
        let profile_origin = profile.origin.clone();
        let key = match (raw.key_in, raw.key_name, raw.key_format) {
            (Some(location), Some(name), Some(format)) => Some(KeySpec {
                location,
                name,
                format,
                max_length: raw
                    .key_max_length
                    .unwrap_or_else(|| Located::at(&block, DEFAULT_MAX_KEY_LENGTH)),
                scope: raw.key_scope.map(|scope| scope.value).unwrap_or_default(),
            }),
            _ => None,
        };
        Contract {
            key,
            window_ms: raw.window,
            timeout_ms: raw.client_timeout,
            retries_ms: raw
                .client_retries
                .unwrap_or_else(|| Located::at(&block, Vec::new())),
            jitter_ms: raw.client_jitter.unwrap_or_else(|| Located::at(&block, 0)),
            max_processing_ms: raw.server_max_processing,
            downstream: raw
                .server_downstream
                .unwrap_or_else(|| Located::at(&block, Vec::new())),
            canonical: raw
                .fingerprint_canonical
                .unwrap_or_else(|| Located::at(&block, Canonical::Json)),
            fingerprint: raw.fingerprint_include.unwrap_or_else(|| {
                Located::at(
                    &block,
                    vec![
                        FingerprintPart::Method,
                        FingerprintPart::Path,
                        FingerprintPart::Body,
                    ],
                )
            }),
            in_progress_status: raw.in_progress_status.unwrap_or_else(|| {
                Located::at(&profile_origin, profile.value.in_progress_status())
            }),
            retry_after_ms: raw
                .in_progress_retry_after
                .unwrap_or_else(|| Located::at(&block, DEFAULT_RETRY_AFTER_MS)),
            failed: raw
                .failed
                .unwrap_or_else(|| Located::at(&block, FailedPolicy::Retry)),
            conflict_status: raw
                .conflict_status
                .unwrap_or_else(|| Located::at(&profile_origin, profile.value.conflict_status())),
            missing_key_status: raw.missing_key_status.or_else(|| {
                profile
                    .value
                    .missing_key_status()
                    .map(|status| Located::at(&profile_origin, status))
            }),
            replayed_header: raw.replayed_header.unwrap_or_else(|| {
                Located::at(
                    &block,
                    ReplayMark::Header(DEFAULT_REPLAYED_HEADER.to_string()),
                )
            }),
            dialect: raw.store_dialect.unwrap_or_else(|| {
                Located::at(&block, defaults.dialect.unwrap_or(Dialect::Sqlite))
            }),
            engine: raw.store_engine,
            table: raw
                .store_table
                .unwrap_or_else(|| Located::at(&block, DEFAULT_TABLE.to_string())),
            business_database: raw
                .store_business_database
                .or_else(|| raw.store_database.clone()),
            database: raw.store_database,
            claim: raw
                .store_claim
                .unwrap_or_else(|| Located::at(&block, ClaimMode::Committed)),
            replay_rate_alert: raw
                .replay_rate_alert
                .unwrap_or_else(|| Located::at(&block, DEFAULT_REPLAY_RATE_ALERT)),
            invalid: raw.invalid,
            profile,
            block,
        }
    }

    pub fn retry_delays(&self) -> Vec<u64> {
        self.retries_ms
            .value
            .iter()
            .map(|delay| delay.value)
            .collect()
    }
}
