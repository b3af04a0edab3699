//! `--as NAME='Header: value'`: the credentials of the principals the probe
//! acts as, and keeping them out of everything it prints.
//!
//! The first principal sends every request of the other checks; the
//! `principals` check sends the first one's key as each of the others, and
//! the `unauthenticated` check sends a request without any of their headers.
//! No message here quotes what the user wrote after `=`: it is a secret.

use crate::server_text::CUT;

/// One `--as` name and its headers, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub headers: Vec<(String, String)>,
}

impl Principal {
    /// `` `Authorization` header ``, the header names only.
    pub fn header_names(&self) -> String {
        let names: Vec<String> = self
            .headers
            .iter()
            .map(|(name, _)| format!("`{name}`"))
            .collect();
        format!(
            "{} header{}",
            names.join(", "),
            if names.len() == 1 { "" } else { "s" }
        )
    }
}

/// Groups the `--as` values by NAME, in the order each NAME first appears
/// (so `--as alice='A: 1' --as bob='A: 2' --as alice='B: 3'` gives alice
/// two headers). Errors name the principal and the flag, never a value.
pub fn parse(values: &[String]) -> Result<Vec<Principal>, String> {
    let mut principals: Vec<Principal> = Vec::new();
    for (position, text) in values.iter().enumerate() {
        let (name, header) = text.split_once('=').ok_or_else(|| {
            format!(
                "--as (#{}): write it as NAME='Header: value', e.g. --as alice='Authorization: Bearer …'",
                position + 1
            )
        })?;
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
        {
            return Err(format!(
                "--as (#{}): the part before `=` is not a principal name (letters, digits, `-`, `_`, `.`, `@`); write NAME='Header: value', e.g. --as alice='Authorization: Bearer …'",
                position + 1
            ));
        }
        let (header, value) = header.split_once(':').ok_or_else(|| {
            format!(
                "--as {name}: write the credential as a header, NAME='Header: value', e.g. --as {name}='Authorization: Bearer …'"
            )
        })?;
        let header = header.trim();
        let value = value.trim();
        if header.is_empty() || !header.bytes().all(idemgen_spec::http_token::is_token_byte) {
            return Err(format!(
                "--as {name}: the text before `:` is not a header name (letters, digits, `-`); write --as {name}='Header: value'"
            ));
        }
        if value.is_empty() {
            return Err(format!(
                "--as {name}: the `{header}` header has no value; write --as {name}='{header}: value'"
            ));
        }
        let header = (header.to_string(), value.to_string());
        match principals.iter_mut().find(|known| known.name == name) {
            Some(known) => {
                if known
                    .headers
                    .iter()
                    .any(|(existing, _)| existing.eq_ignore_ascii_case(&header.0))
                {
                    return Err(format!(
                        "--as {name}: the `{}` header is given twice for `{name}`; give each header once",
                        header.0
                    ));
                }
                known.headers.push(header);
            }
            None => principals.push(Principal {
                name: name.to_string(),
                headers: vec![header],
            }),
        }
    }
    for (index, principal) in principals.iter().enumerate() {
        for other in &principals[index + 1..] {
            if same_credentials(principal, other) {
                return Err(format!(
                    "--as {} and --as {} send the same credentials, so they are one principal to the service; give {} the credentials of another principal",
                    principal.name, other.name, other.name
                ));
            }
        }
    }
    Ok(principals)
}

fn same_credentials(one: &Principal, other: &Principal) -> bool {
    sorted_headers(one) == sorted_headers(other)
}

/// Headers with lower-case names, sorted: equal for the same credentials.
fn sorted_headers(principal: &Principal) -> Vec<(String, &str)> {
    let mut headers: Vec<(String, &str)> = principal
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.as_str()))
        .collect();
    headers.sort();
    headers
}

/// What [`redact`] replaces a credential with.
pub const REDACTED: &str = "[redacted]";

/// Shortest credential text looked for in what the service answered:
/// shorter ones (`X-User: 7`) would match unrelated text.
const MIN_SECRET: usize = 6;

/// The texts to keep out of the report: each header value, and the
/// credential after an auth scheme (`Bearer abc…` → `abc…`), for a service
/// that echoes it in an answer.
pub fn secrets(principals: &[Principal]) -> Vec<String> {
    let mut secrets: Vec<String> = Vec::new();
    for (_, value) in principals.iter().flat_map(|principal| &principal.headers) {
        secrets.push(value.clone());
        if let Some((_, credential)) = value.split_once(' ') {
            secrets.push(credential.trim().to_string());
        }
    }
    secrets.retain(|secret| secret.chars().count() >= MIN_SECRET);
    // Longest first, so a value goes whole before its credential part.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    secrets.dedup();
    secrets
}

/// Shortest beginning of a credential looked for right before a cut
/// (`sk_…`); two characters could be anything.
const MIN_CUT_PREFIX: usize = 3;

/// `text` with every secret replaced by [`REDACTED`], also a secret that an
/// excerpt cut: its beginning right before the cut mark (`…`).
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_string();
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), REDACTED);
        }
    }
    if !text.contains(CUT) {
        return text;
    }
    let mut redacted = String::with_capacity(text.len());
    let mut pieces = text.split(CUT).peekable();
    while let Some(piece) = pieces.next() {
        if pieces.peek().is_none() {
            redacted.push_str(piece);
            break;
        }
        match cut_secret(piece, secrets) {
            0 => redacted.push_str(piece),
            len => {
                redacted.push_str(&piece[..piece.len() - len]);
                redacted.push_str(REDACTED);
            }
        }
        redacted.push(CUT);
    }
    redacted
}

/// Length in bytes of the longest beginning of a secret that `text` ends
/// with (at least [`MIN_CUT_PREFIX`] characters), or 0.
fn cut_secret(text: &str, secrets: &[String]) -> usize {
    secrets
        .iter()
        .flat_map(|secret| {
            secret
                .char_indices()
                .skip(MIN_CUT_PREFIX)
                .map(|(end, _)| &secret[..end])
        })
        .filter(|beginning| text.ends_with(beginning))
        .map(str::len)
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(values: &[&str]) -> Vec<String> {
        values.iter().map(|value| value.to_string()).collect()
    }

    #[test]
    fn groups_headers_by_name_in_order_of_first_appearance() {
        let principals = parse(&args(&[
            "alice=Authorization: Bearer A",
            "bob=Authorization: Bearer B",
            "alice=X-Org: acme",
        ]))
        .unwrap();
        assert_eq!(
            principals,
            vec![
                Principal {
                    name: "alice".into(),
                    headers: vec![
                        ("Authorization".into(), "Bearer A".into()),
                        ("X-Org".into(), "acme".into()),
                    ],
                },
                Principal {
                    name: "bob".into(),
                    headers: vec![("Authorization".into(), "Bearer B".into())],
                },
            ]
        );
        assert_eq!(
            principals[0].header_names(),
            "`Authorization`, `X-Org` headers"
        );
    }

    #[test]
    fn errors_never_quote_the_credential() {
        for (given, expected) in [
            ("Authorization: Bearer s3cr3t-token", "write it as NAME="),
            (
                "Authorization: Basic YWxpY2U6cHc=",
                "is not a principal name",
            ),
            (
                "alice=Bearer s3cr3t-token",
                "write the credential as a header",
            ),
            ("alice=Bearer s3cr3t-token: x", "is not a header name"),
            ("alice=Authorization:", "has no value"),
        ] {
            let error = parse(&args(&[given])).unwrap_err();
            assert!(error.contains(expected), "{given}: {error}");
            assert!(!error.contains("s3cr3t"), "{error}");
            assert!(!error.contains("YWxp"), "{error}");
        }
    }

    #[test]
    fn two_names_with_the_same_credentials_are_refused() {
        let error = parse(&args(&[
            "alice=Authorization: Bearer A",
            "bob=authorization: Bearer A",
        ]))
        .unwrap_err();
        assert!(error.contains("--as alice and --as bob"), "{error}");
        let error = parse(&args(&[
            "alice=Authorization: Bearer A",
            "alice=authorization: Bearer B",
        ]))
        .unwrap_err();
        assert!(error.contains("given twice"), "{error}");
    }

    #[test]
    fn redacts_values_and_the_credential_after_the_scheme() {
        let principals = parse(&args(&[
            "alice=Authorization: Bearer alice-token-1",
            "bob=X-User: 7",
        ]))
        .unwrap();
        let secrets = secrets(&principals);
        assert_eq!(secrets, vec!["Bearer alice-token-1", "alice-token-1"]);
        assert_eq!(
            redact(
                r#"{"seen":"Bearer alice-token-1","token":"alice-token-1","n":7}"#,
                &secrets
            ),
            r#"{"seen":"[redacted]","token":"[redacted]","n":7}"#
        );
    }

    #[test]
    fn redacts_a_credential_an_excerpt_cut() {
        let principals = parse(&args(&[
            "alice=Authorization: Bearer sk_live_0123456789abcdefghijklmnopqrstuvwxyzSECRET",
        ]))
        .unwrap();
        let secrets = secrets(&principals);
        let body = format!(
            r#"{{"debug":"{} saw Bearer sk_live_0123456789abcdefghijklmnopqrstuvwxyzSECRET"}}"#,
            "x".repeat(120)
        );
        let excerpt = crate::http::excerpt(body.as_bytes());
        assert!(
            excerpt.ends_with("saw Bearer sk_live_0123456789…"),
            "{excerpt}"
        );
        let shown = redact(&format!("200 OK: {excerpt} (then more)"), &secrets);
        assert!(shown.ends_with("saw [redacted]… (then more)"), "{shown}");
        assert!(!shown.contains("sk_"), "{shown}");
        // The credential alone, cut after the scheme.
        assert_eq!(redact("token sk_live_01…", &secrets), "token [redacted]…");
        // Two characters could be anything; a cut elsewhere is left alone.
        assert_eq!(redact("Be… and sk…", &secrets), "Be… and sk…");
        assert_eq!(redact("plain text…", &secrets), "plain text…");
    }
}
