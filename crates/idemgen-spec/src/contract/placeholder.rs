//! Placeholders: what a fix writes where the contract needs a number the
//! spec does not state (the client's timeout and retries, the server's
//! worst processing time, the window). A guess there would look like a
//! decision, and `idemgen lint` would then approve a contract nobody
//! made; a placeholder is a string such as `TODO: the client's timeout
//! per attempt` that `contract-invalid` reports as an error, naming the
//! field and what to decide, until a person writes the value.

/// How every placeholder starts.
pub const PREFIX: &str = "TODO:";

/// The fields a fix may leave as placeholders, with what the placeholder
/// says and the decision its error asks for.
const FIELDS: [(&str, &str, &str); 4] = [
    (
        "client.timeout",
        "TODO: the client's timeout per attempt",
        "decide how long a client waits for one attempt before giving up, and write it as a duration (e.g. `timeout: 10s`)",
    ),
    (
        "client.retries",
        "TODO: the client's delay before each retry",
        "decide how often and after what backoff a client retries, and write the delays as a list (e.g. `retries: [1s, 2s, 4s]`, or `[]` for none)",
    ),
    (
        "server.max-processing",
        "TODO: the server's worst time for one attempt",
        "decide the longest one attempt may take on the server (database and downstream calls), and write it as a duration (e.g. `max-processing: 30s`)",
    ),
    (
        "window",
        "TODO: how long a finished key is remembered",
        "decide how long the server keeps a finished key, and write it as a duration no shorter than `idemgen window` computes from the client's timeout and retries and the server's processing time (e.g. `window: 24h`)",
    ),
];

/// The placeholder a fix writes for `field` (`client.timeout`,
/// `client.retries`, `server.max-processing` or `window`).
pub fn text(field: &str) -> &'static str {
    FIELDS
        .iter()
        .find(|(name, ..)| *name == field)
        .map_or(PREFIX, |(_, text, _)| text)
}

/// Whether a field's value is a placeholder left to fill in.
pub fn is_placeholder(value: &str) -> bool {
    value.trim_start().starts_with("TODO")
}

/// The error and help `contract-invalid` gives for a placeholder in
/// `field`.
pub fn problem(field: &str) -> (String, String) {
    let decide = FIELDS
        .iter()
        .find(|(name, ..)| *name == field)
        .map_or("write the value", |(.., decide)| decide);
    (
        format!(
            "`{field}` is still a placeholder: idemgen's fix could not find it in the spec and does not guess it"
        ),
        format!("{decide}; until then this is an error"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_reads_as_one_and_names_its_decision() {
        for field in [
            "client.timeout",
            "client.retries",
            "server.max-processing",
            "window",
        ] {
            assert!(is_placeholder(text(field)), "{field}");
            assert!(text(field).starts_with(PREFIX));
            let (message, help) = problem(field);
            assert!(message.contains(field), "{message}");
            assert!(help.starts_with("decide"), "{help}");
        }
        assert!(!is_placeholder("10s"));
    }
}
