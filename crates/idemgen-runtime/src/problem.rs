//! The runtime's own refusals as RFC 9457 problem details: one kind per
//! reason a request is refused or stopped, each with a stable `type` URI
//! (`urn:idemgen:problem:<kind>`) and a fixed `title`, so a client can tell
//! "send a key" from "wait, in progress" from "this key was used for
//! another request" without reading the prose of `detail`. The IETF
//! Idempotency-Key draft asks for problem details on its 400, 409 and 422
//! answers; the runtime gives them on every answer of its own.
//!
//! A business function's answers are its own: [`crate::Reply::problem`]
//! writes `type: about:blank` unless it says otherwise.

use axum::http::StatusCode;

/// The media type of every problem (RFC 9457).
pub(crate) const CONTENT_TYPE: &str = "application/problem+json";

macro_rules! problem_kinds {
    ($($(#[$doc:meta])* $kind:ident = $slug:literal, $title:literal;)*) => {
        /// Why the runtime answered instead of the business function.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ProblemKind {
            $($(#[$doc])* $kind,)*
        }

        impl ProblemKind {
            /// Every kind, in the order the documentation lists them.
            pub const ALL: &'static [ProblemKind] = &[$(ProblemKind::$kind,)*];

            /// The kind's name, the last part of its `type` URI.
            pub const fn name(self) -> &'static str {
                match self {
                    $(ProblemKind::$kind => $slug,)*
                }
            }

            /// The problem's `type`: stable across versions, so clients
            /// may branch on it.
            pub const fn type_uri(self) -> &'static str {
                match self {
                    $(ProblemKind::$kind => concat!("urn:idemgen:problem:", $slug),)*
                }
            }

            /// The problem's `title`: the same for every answer of the kind.
            pub const fn title(self) -> &'static str {
                match self {
                    $(ProblemKind::$kind => $title,)*
                }
            }
        }
    };
}

problem_kinds! {
    /// The contract requires a key and the request has none.
    MissingKey = "missing-key", "missing idempotency key";
    /// A key that is not one: a malformed Structured Field String, the
    /// wrong form or length, sent twice with different values.
    InvalidKey = "invalid-key", "invalid idempotency key";
    /// A request with the same key is still being processed.
    InProgress = "request-in-progress", "request in progress";
    /// The key was used with a different request.
    KeyReused = "key-reused", "idempotency key reused";
    /// The first request with the key failed and `failed: reject` holds it.
    EarlierAttemptFailed = "earlier-attempt-failed", "earlier attempt failed";
    /// No credentials, or credentials that were refused (401).
    Unauthenticated = "unauthenticated", "unauthenticated";
    /// A known caller that may not call the operation (403).
    Forbidden = "forbidden", "forbidden";
    /// A `key.scope` value that is missing, repeated or empty.
    InvalidScope = "invalid-scope", "invalid scope";
    /// A JSON body with a name twice, which two readers could read apart.
    AmbiguousBody = "ambiguous-body", "ambiguous request body";
    /// A body that is not JSON.
    InvalidBody = "invalid-body", "invalid request body";
    /// JSON that does not fit the operation's schema.
    SchemaMismatch = "schema-mismatch", "request does not match its schema";
    /// A value the database refused to store or compare (a string with a
    /// byte its encoding cannot hold, too long for its column, a number
    /// out of range, a CHECK constraint): the request is at fault.
    ValueRefused = "value-refused", "value refused";
    /// A path, query or header parameter that does not fit its schema.
    InvalidParameters = "invalid-parameters", "invalid parameters";
    /// A body declared as something other than UTF-8 JSON: another media
    /// type or charset, or a content coding (415).
    UnsupportedMediaType = "unsupported-media-type", "unsupported media type";
    /// A transfer coding other than `chunked`, which is all hyper undoes
    /// (501).
    UnsupportedTransferCoding = "unsupported-transfer-coding", "transfer coding not implemented";
    /// A body over the size limit (413).
    BodyTooLarge = "body-too-large", "request body too large";
    /// A body that did not arrive in time (408).
    BodyTooSlow = "body-too-slow", "request body too slow";
    /// Too many request bodies being read at once (503, `Retry-After`).
    Overloaded = "overloaded", "server overloaded";
    /// No database connection or answer in time: retry after `Retry-After`.
    ServerBusy = "server-busy", "server busy";
    /// An operation without a key lost a database race to another request.
    ConcurrentRequest = "concurrent-request", "conflict with another request";
    /// The database is unreachable: retry after `Retry-After`.
    DatabaseUnavailable = "database-unavailable", "database unavailable";
    /// The business step outlived its lease and was rolled back.
    ProcessingTooLong = "processing-too-long", "processing took too long";
    /// The commit's outcome is unknown: retry with the same key only.
    OutcomeUnknown = "outcome-unknown", "outcome unknown";
    /// An answer whose body is over the engine's stored-answer limit
    /// ([`crate::Idempotency::with_max_stored_answer`]): its business
    /// write was rolled back, and retrying cannot help (507).
    AnswerTooLarge = "answer-too-large", "answer too large to store";
    /// Anything else that stopped the request; nothing was committed
    /// unless `detail` says otherwise.
    InternalError = "internal-error", "internal error";
    /// The operation's business logic is not written yet (501).
    NotImplemented = "not-implemented", "not implemented";
    /// No operation is served at the request's path (404).
    NotFound = "not-found", "not found";
    /// The path is served, not with the request's method (405, with `Allow`).
    MethodNotAllowed = "method-not-allowed", "method not allowed";
}

impl ProblemKind {
    /// The problem's body: `type`, `title`, `status` and `detail`, as
    /// `application/problem+json`. [`crate::Reply::refusal`] makes it an
    /// answer.
    pub fn body(self, status: StatusCode, detail: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "type": self.type_uri(),
            "title": self.title(),
            "status": status.as_u16(),
            "detail": detail,
        }))
        .expect("serialising to memory cannot fail")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_kind_has_its_own_type_and_title() {
        let types: HashSet<&str> = ProblemKind::ALL.iter().map(|k| k.type_uri()).collect();
        let titles: HashSet<&str> = ProblemKind::ALL.iter().map(|k| k.title()).collect();
        assert_eq!(types.len(), ProblemKind::ALL.len());
        assert_eq!(titles.len(), ProblemKind::ALL.len());
        for kind in ProblemKind::ALL {
            assert_eq!(
                kind.type_uri(),
                format!("urn:idemgen:problem:{}", kind.name())
            );
            assert!(
                kind.name()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{kind:?}"
            );
        }
    }
}
