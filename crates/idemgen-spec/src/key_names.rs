//! Which header, query parameter or body field is an idempotency key, from
//! its name and description, as real APIs spell them: `Idempotency-Key`,
//! `X-Idempotency-Key`, `Idempotency-Token`, `idempotency_key` (Square),
//! `IdempotencyKey` (Twilio), `PayPal-Request-Id`, or a request id whose
//! description says it deduplicates. An ordinary request id used for
//! tracing (`X-Request-Id`) is not a key.

/// Names that are idempotency keys whatever their description says, in
/// squashed form (lower case, letters and digits only).
const KNOWN_KEYS: [&str; 1] = [
    // PayPal: "The server stores keys for 6 hours" (documented as its
    // idempotency header).
    "paypalrequestid",
];

/// Name endings that make an identifier a key when its description says
/// it deduplicates retries.
const ID_LIKE_ENDINGS: [&str; 5] = ["requestid", "requestkey", "token", "key", "id"];

/// Phrases in a description that mean "retries with this value are
/// deduplicated".
const DEDUP_PHRASES: [&str; 6] = [
    "idempoten",
    "deduplicat",
    "duplicate request",
    "duplicate submission",
    "stores keys",
    "same key",
];

/// Whether a parameter or body field named `name`, described by
/// `description`, carries an idempotency key.
pub fn is_idempotency_key(name: &str, description: Option<&str>) -> bool {
    let squashed = squash(name);
    if squashed.contains("idempoten") || KNOWN_KEYS.contains(&squashed.as_str()) {
        return true;
    }
    let Some(description) = description else {
        return false;
    };
    let description = description.to_ascii_lowercase();
    ID_LIKE_ENDINGS
        .iter()
        .any(|ending| squashed.ends_with(ending))
        && DEDUP_PHRASES
            .iter()
            .any(|phrase| description.contains(phrase))
        && !describes_tracing_only(&description)
}

/// "Unique id of this request for tracing/logging/support": the id names
/// the attempt, so a retry carries a new one.
fn describes_tracing_only(description: &str) -> bool {
    !description.contains("idempoten")
        && ["trac", "correlat", "log", "debug", "support"]
            .iter()
            .any(|word| description.contains(word))
}

fn squash(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::is_idempotency_key;

    #[test]
    fn vendor_names_are_keys() {
        for name in [
            "Idempotency-Key",
            "X-Idempotency-Key",
            "Idempotency-Token",
            "idempotency_key",
            "IdempotencyKey",
            "PayPal-Request-Id",
            "x-idempotent-id",
        ] {
            assert!(is_idempotency_key(name, None), "{name}");
        }
    }

    #[test]
    fn request_ids_count_only_when_described_as_deduplicating() {
        assert!(!is_idempotency_key("X-Request-Id", None));
        assert!(!is_idempotency_key(
            "X-Request-Id",
            Some("A unique id for this request, for tracing and support.")
        ));
        assert!(!is_idempotency_key(
            "request_id",
            Some("Identifier of the request, returned in logs")
        ));
        assert!(is_idempotency_key(
            "X-Client-Request-Id",
            Some("Retries with the same value are treated as one request: the idempotency key.")
        ));
        assert!(is_idempotency_key(
            "ClientToken",
            Some(
                "Unique, case-sensitive identifier that you provide to ensure the idempotency of the request."
            )
        ));
        assert!(is_idempotency_key(
            "dedup_id",
            Some("Used to deduplicate retried submissions.")
        ));
        assert!(!is_idempotency_key(
            "customer_id",
            Some("The customer who pays.")
        ));
    }
}
