//! Reading and validating the idempotency key, and the scope that
//! namespaces it.

use regex::Regex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::contract::{Contract, Source};
use crate::fingerprint::{hash_part, hex};
use crate::reply::Request;

impl Source {
    /// The value this source names in `request`, if present.
    pub fn value(&self, request: &Request) -> Option<String> {
        match self {
            Source::Header(name) => request
                .headers
                .get(*name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string),
            Source::Query(name) => request.query.get(*name).cloned(),
            Source::Body(pointer) => body_text(&request.body, pointer),
            Source::Principal => request
                .principal
                .as_ref()
                .map(|principal| principal.id.clone()),
        }
    }
}

/// What a request carries where its contract's key travels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyValue {
    /// Nothing there: a missing key (refused when the key is required).
    Absent,
    Present(String),
    /// Something there that cannot be a key (bytes that are not visible
    /// ASCII, a key sent twice, a JSON value that is not a string or a
    /// number, a control character or line separator): always refused, even where the key is
    /// optional, since reading it as "no key" would run every retry's
    /// business step again.
    Unreadable(String),
}

/// Reads the key from where `source` says it travels.
pub(crate) fn read_key(source: &Source, request: &Request) -> KeyValue {
    let value = match source {
        Source::Header(name) => {
            let mut values = request.headers.get_all(*name).iter();
            let first = values.next();
            // A client library that adds the header again on each retry
            // sends the same value twice: one key. Two values are none.
            if values.any(|value| Some(value) != first) {
                return KeyValue::Unreadable(format!(
                    "the key header `{name}` is sent more than once, with different values"
                ));
            }
            match first {
                None => return KeyValue::Absent,
                Some(value) => match value.to_str() {
                    Ok(text) => match header_key(text) {
                        Ok(key) => key,
                        Err(why) => {
                            return KeyValue::Unreadable(format!(
                                "the key header `{name}` is a malformed Structured Field String: {why}"
                            ));
                        }
                    },
                    Err(_) => {
                        return KeyValue::Unreadable(format!(
                            "the key header `{name}` is not visible ASCII"
                        ));
                    }
                },
            }
        }
        Source::Query(name) => {
            let mut values = request
                .query_pairs
                .iter()
                .filter(|(pair_name, _)| pair_name == name)
                .map(|(_, value)| value);
            let first = values.next();
            if values.any(|value| Some(value) != first) {
                return KeyValue::Unreadable(format!(
                    "the key query parameter `{name}` is sent more than once, with different values"
                ));
            }
            match first {
                None => return KeyValue::Absent,
                Some(value) => value.clone(),
            }
        }
        Source::Body(pointer) => {
            if request.body.trim_ascii().is_empty() {
                return KeyValue::Absent;
            }
            let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
                return KeyValue::Unreadable(format!(
                    "the key field `{pointer}` cannot be read: the body is not JSON"
                ));
            };
            match body.pointer(pointer) {
                None | Some(Value::Null) => return KeyValue::Absent,
                Some(Value::String(text)) => text.clone(),
                // Integers are exact; a float or a bigger number could
                // round into another request's key.
                Some(Value::Number(number)) if number.is_i64() || number.is_u64() => {
                    number.to_string()
                }
                Some(_) => {
                    return KeyValue::Unreadable(format!(
                        "the key field `{pointer}` must be a string or an integer"
                    ));
                }
            }
        }
        Source::Principal => {
            return match &request.principal {
                Some(principal) => KeyValue::Present(principal.id.clone()),
                None => KeyValue::Absent,
            };
        }
    };
    // U+2028 and U+2029 too: the schema's `pattern`, read as JSON Schema
    // reads it (ECMA-262), has `.` stop at them as at a line break.
    if value
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return KeyValue::Unreadable(
            "the key contains a control character or a line separator".to_string(),
        );
    }
    KeyValue::Present(value)
}

/// The key a header value carries. The IETF Idempotency-Key draft sends
/// it as an RFC 8941 Structured Field String (`"8e03978e-…"`: printable
/// ASCII between double quotes, `\"` and `\\` its only escapes); Stripe
/// and most clients send it bare. Both are one key: the text between the
/// quotes, unescaped, is the key, stored and compared as the bare form
/// would be. A value that opens a quote and is not a whole sf-string is
/// refused, never read as a bare key that happens to start with `"`.
/// `Err` says what is wrong.
pub(crate) fn header_key(value: &str) -> Result<String, String> {
    let Some(quoted) = value.strip_prefix('"') else {
        return Ok(value.to_string());
    };
    let mut key = String::with_capacity(quoted.len());
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('"' | '\\')) => key.push(escaped),
                _ => return Err("only `\\\"` and `\\\\` may be escaped".to_string()),
            },
            '"' if chars.as_str().is_empty() => return Ok(key),
            // Parameters (`;name=value`) or a second item: the draft
            // defines none.
            '"' => return Err("there is text after the closing quote".to_string()),
            ' '..='~' => key.push(c),
            _ => return Err("it holds a character that is not printable ASCII".to_string()),
        }
    }
    Err("the closing quote is missing".to_string())
}

/// The idempotency key for downstream calls made on behalf of one key:
/// the same for every attempt of one request, distinct per service (its
/// record table), operation and scope (both in `scope`, itself a hash) and
/// request (its fingerprint), so a key reused after its window for another
/// request is another call downstream.
pub(crate) fn downstream_key(table: &str, scope: &str, key: &str, fingerprint: &str) -> String {
    let mut hasher = Sha256::new();
    hash_part(&mut hasher, b"idemgen downstream key");
    hash_part(&mut hasher, table.as_bytes());
    hash_part(&mut hasher, scope.as_bytes());
    hash_part(&mut hasher, key.as_bytes());
    hash_part(&mut hasher, fingerprint.as_bytes());
    hex(&hasher.finalize())
}

/// The text of the body's field at `pointer` (a string, or a number as
/// written).
pub(crate) fn body_text(body: &[u8], pointer: &str) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    match value.pointer(pointer)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Checks `key` against the contract: length, template, and the segments
/// that must repeat a body field. `Err` says what is wrong, for the client.
pub(crate) fn validate(
    contract: &Contract,
    regex: &Regex,
    key: &str,
    request: &Request,
) -> Result<(), String> {
    if key.len() > contract.max_key_len {
        return Err(format!(
            "the key is longer than {} bytes",
            contract.max_key_len
        ));
    }
    let Some(captures) = regex.captures(key) else {
        return Err(format!(
            "the key does not have the form `{}`",
            contract.key_format
        ));
    };
    for (group, pointer) in contract.key_fields {
        let part = captures.get(*group).map(|part| part.as_str());
        if part != body_text(&request.body, pointer).as_deref() {
            return Err(format!(
                "the key's `{{field:{pointer}}}` part must equal the request body's `{pointer}`"
            ));
        }
    }
    Ok(())
}

/// The key's namespace: the operation, then every `scope` value, hashed.
///
/// A key is one operation's key: without the operation in the namespace,
/// a contract whose fingerprint leaves out method and path would replay
/// one operation's answer to another. A scope value that is missing, sent
/// twice, empty or not a string or integer is refused (`Err` says which
/// and why), never read as "no scope": that would put every tenant that
/// omits it into one shared namespace. Header values count byte for byte,
/// so `X-Tenant: Zürich` sent as Latin-1 or UTF-8 are two tenants, never
/// the same empty one.
pub(crate) fn scope_of(
    operation: &str,
    contract: &Contract,
    request: &Request,
) -> Result<String, String> {
    let mut hasher = Sha256::new();
    hash_part(&mut hasher, operation.as_bytes());
    for source in contract.scope {
        let value = scope_value(source, request)?;
        if value.is_empty() {
            return Err(format!("{} is empty", source.describe()));
        }
        hash_part(&mut hasher, &value);
    }
    Ok(hex(&hasher.finalize()))
}

fn scope_value(source: &Source, request: &Request) -> Result<Vec<u8>, String> {
    match source {
        // Only the security check sets it; without one there is no
        // principal, and no shared "anonymous" namespace either.
        Source::Principal => request
            .principal
            .as_ref()
            .map(|principal| principal.id.as_bytes().to_vec())
            .ok_or_else(|| {
                format!(
                    "{} is missing: the request is not authenticated",
                    source.describe()
                )
            }),
        Source::Header(name) => {
            let mut values = request.headers.get_all(*name).iter();
            match (values.next(), values.next()) {
                (Some(value), None) => Ok(value.as_bytes().to_vec()),
                (None, _) => Err(format!("{} is missing", source.describe())),
                (Some(_), Some(_)) => Err(format!("{} is sent more than once", source.describe())),
            }
        }
        Source::Query(name) => {
            let mut values = request
                .query_pairs
                .iter()
                .filter(|(pair_name, _)| pair_name == name);
            match (values.next(), values.next()) {
                (Some((_, value)), None) => Ok(value.as_bytes().to_vec()),
                (None, _) => Err(format!("{} is missing", source.describe())),
                (Some(_), Some(_)) => Err(format!("{} is sent more than once", source.describe())),
            }
        }
        Source::Body(pointer) => {
            let body: Value = serde_json::from_slice(&request.body).map_err(|_| {
                format!("{} cannot be read: the body is not JSON", source.describe())
            })?;
            match body.pointer(pointer) {
                Some(Value::String(text)) => Ok(text.as_bytes().to_vec()),
                // Integers are exact in serde_json (i64 or u64); a float
                // or a bigger number could round into another tenant's.
                Some(Value::Number(number)) if number.is_i64() || number.is_u64() => {
                    Ok(number.to_string().into_bytes())
                }
                Some(_) => Err(format!(
                    "{} must be a string or an integer",
                    source.describe()
                )),
                None => Err(format!("{} is missing", source.describe())),
            }
        }
    }
}

impl Source {
    /// How a client is told where this value travels.
    fn describe(&self) -> String {
        match self {
            Source::Header(name) => format!("the scope header `{name}`"),
            Source::Query(name) => format!("the scope query parameter `{name}`"),
            Source::Body(pointer) => format!("the scope field `{pointer}` of the body"),
            Source::Principal => "the scope `principal`".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Contract;

    fn request(body: &str) -> Request {
        Request {
            method: axum::http::Method::POST,
            path: "/pay".into(),
            path_params: Default::default(),
            query: Default::default(),
            query_pairs: Default::default(),
            headers: Default::default(),
            body: body.to_string().into(),
            principal: None,
            downstream_key: None,
        }
    }

    #[test]
    fn length_template_and_field_segments_are_checked() {
        let contract = Contract {
            key_fields: &[(1, "/order")],
            max_key_len: 20,
            ..Contract::header("pay:{field:/order}", "^pay:([a-z0-9]+)$", 1, 1)
        };
        let regex = Regex::new(contract.key_pattern).unwrap();
        let body = request(r#"{"order": "o42"}"#);
        assert_eq!(validate(&contract, &regex, "pay:o42", &body), Ok(()));
        assert!(
            validate(&contract, &regex, "pay:o43", &body)
                .unwrap_err()
                .contains("must equal the request body's `/order`")
        );
        assert!(
            validate(&contract, &regex, "PAY:o42", &body)
                .unwrap_err()
                .contains("does not have the form")
        );
        assert!(
            validate(&contract, &regex, &format!("pay:{}", "o".repeat(20)), &body)
                .unwrap_err()
                .contains("longer than 20 bytes")
        );
    }

    #[test]
    fn a_key_that_is_there_but_unreadable_is_never_absent() {
        let header = |value: &[u8]| {
            let mut request = request("{}");
            request.headers.insert(
                "idempotency-key",
                axum::http::HeaderValue::from_bytes(value).unwrap(),
            );
            read_key(&Source::Header("Idempotency-Key"), &request)
        };
        assert_eq!(header(b"pay:1"), KeyValue::Present("pay:1".into()));
        assert!(matches!(header(b"pay:\xe9t\xe9"), KeyValue::Unreadable(_)));
        let mut twice = request("{}");
        twice
            .headers
            .append("idempotency-key", "a".parse().unwrap());
        twice
            .headers
            .append("idempotency-key", "b".parse().unwrap());
        assert!(matches!(
            read_key(&Source::Header("Idempotency-Key"), &twice),
            KeyValue::Unreadable(_)
        ));
        assert_eq!(
            read_key(&Source::Header("Idempotency-Key"), &request("{}")),
            KeyValue::Absent
        );
        let mut repeated = request("{}");
        for _ in 0..2 {
            repeated
                .headers
                .append("idempotency-key", "a".parse().unwrap());
        }
        assert_eq!(
            read_key(&Source::Header("Idempotency-Key"), &repeated),
            KeyValue::Present("a".into())
        );

        let body = |text: &str| read_key(&Source::Body("/key"), &request(text));
        assert_eq!(body(r#"{"key": "k1"}"#), KeyValue::Present("k1".into()));
        assert_eq!(body(r#"{"key": 42}"#), KeyValue::Present("42".into()));
        for absent in ["", " \n", "{}", r#"{"key": null}"#] {
            assert_eq!(body(absent), KeyValue::Absent, "{absent}");
        }
        for unreadable in [
            r#"{"key": true}"#,
            r#"{"key": []}"#,
            r#"{"key": {}}"#,
            r#"{"key": "a\u0000b"}"#,
            r#"{"key": 12345678901234567890123}"#,
            r#"{"key": 1.5}"#,
            "not json",
        ] {
            assert!(
                matches!(body(unreadable), KeyValue::Unreadable(_)),
                "{unreadable}"
            );
        }
    }

    #[test]
    fn a_quoted_key_is_the_bare_key() {
        let uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        assert_eq!(header_key(uuid).as_deref(), Ok(uuid));
        assert_eq!(header_key(&format!("\"{uuid}\"")).as_deref(), Ok(uuid));
        assert_eq!(header_key(r#""a\"b\\c""#).as_deref(), Ok(r#"a"b\c"#));
        assert_eq!(header_key(r#""""#).as_deref(), Ok(""));
        // Bare keys are taken as sent, quotes inside included.
        assert_eq!(header_key(r#"a"b"#).as_deref(), Ok(r#"a"b"#));
        for malformed in [
            r#""abc"#,
            r#""abc\""#,
            r#""a\nb""#,
            r#""abc";p=1"#,
            r#""abc" "def""#,
            "\"caf\u{e9}\"",
            "\"a\tb\"",
        ] {
            assert!(header_key(malformed).is_err(), "{malformed}");
        }
        let mut quoted = request("{}");
        quoted.headers.insert(
            "idempotency-key",
            axum::http::HeaderValue::from_static("\"pay:1"),
        );
        let KeyValue::Unreadable(why) = read_key(&Source::Header("Idempotency-Key"), &quoted)
        else {
            panic!("a malformed sf-string is no key");
        };
        assert!(why.contains("the closing quote is missing"), "{why}");
        quoted.headers.insert(
            "idempotency-key",
            axum::http::HeaderValue::from_static("\"pay:1\""),
        );
        assert_eq!(
            read_key(&Source::Header("Idempotency-Key"), &quoted),
            KeyValue::Present("pay:1".into())
        );
    }

    #[test]
    fn the_downstream_key_is_stable_and_namespaced() {
        let key = downstream_key("records", "scope-a", "pay:1", "f1");
        assert_eq!(key, downstream_key("records", "scope-a", "pay:1", "f1"));
        assert_ne!(key, downstream_key("other", "scope-a", "pay:1", "f1"));
        assert_ne!(key, downstream_key("records", "scope-b", "pay:1", "f1"));
        assert_ne!(key, downstream_key("records", "scope-a", "pay:2", "f1"));
        assert_ne!(key, downstream_key("records", "scope-a", "pay:1", "f2"));
        assert_eq!(key.len(), 64);
        assert!(!key.contains("pay"));
    }

    #[test]
    fn numbers_in_the_body_count_as_written() {
        assert_eq!(body_text(br#"{"n": 1e3}"#, "/n").as_deref(), Some("1000.0"));
        assert_eq!(body_text(br#"{"n": 42}"#, "/n").as_deref(), Some("42"));
        assert_eq!(body_text(br#"{"n": true}"#, "/n"), None);
    }

    fn scope(contract: &Contract, request: &Request) -> Result<String, String> {
        scope_of("op", contract, request)
    }

    #[test]
    fn scopes_are_exact_or_refused() {
        let contract = Contract {
            scope: &[Source::Header("X-Tenant")],
            ..Contract::header("k:{uuid}", "^k:.*$", 1, 1)
        };
        let tenant = |value: &[u8]| {
            let mut request = request("{}");
            request.headers.insert(
                "x-tenant",
                axum::http::HeaderValue::from_bytes(value).unwrap(),
            );
            scope(&contract, &request)
        };
        let zurich_utf8 = tenant("Zürich".as_bytes()).unwrap();
        let zurich_latin1 = tenant(b"Z\xfcrich").unwrap();
        let malmo = tenant("Malmö".as_bytes()).unwrap();
        assert_ne!(zurich_utf8, zurich_latin1);
        assert_ne!(zurich_utf8, malmo);
        assert_eq!(zurich_utf8, tenant("Zürich".as_bytes()).unwrap());
        let missing = scope(&contract, &request("{}")).unwrap_err();
        assert_eq!(missing, "the scope header `X-Tenant` is missing");
        assert!(tenant(b"").unwrap_err().contains("is empty"));
        let mut twice = request("{}");
        twice.headers.append("x-tenant", "a".parse().unwrap());
        twice.headers.append("x-tenant", "b".parse().unwrap());
        assert!(
            scope(&contract, &twice)
                .unwrap_err()
                .contains("more than once")
        );
    }

    #[test]
    fn body_scopes_are_strings_or_integers() {
        let contract = Contract {
            scope: &[Source::Body("/tenant")],
            ..Contract::header("k:{uuid}", "^k:.*$", 1, 1)
        };
        let of = |body: &str| scope(&contract, &request(body));
        assert_eq!(of(r#"{"tenant": "42"}"#), of(r#"{"tenant": 42}"#));
        assert_ne!(
            of(r#"{"tenant": 42}"#).unwrap(),
            of(r#"{"tenant": 43}"#).unwrap()
        );
        for refused in [
            r#"{"tenant": 4.2}"#,
            r#"{"tenant": true}"#,
            r#"{"tenant": null}"#,
            "{}",
            "not json",
        ] {
            assert!(of(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn principals_namespace_keys_and_none_is_refused() {
        let contract = Contract {
            scope: &[Source::Principal],
            ..Contract::header("k:{uuid}", "^k:.*$", 1, 1)
        };
        let as_caller = |id: Option<&str>| {
            let mut request = request("{}");
            request.principal = id.map(|id| crate::Principal::new(id, "bearer"));
            scope(&contract, &request)
        };
        let alice = as_caller(Some("alice")).unwrap();
        assert_ne!(alice, as_caller(Some("bob")).unwrap());
        assert_eq!(alice, as_caller(Some("alice")).unwrap());
        assert!(!alice.contains("alice"), "the id is hashed: {alice}");
        assert!(as_caller(None).unwrap_err().contains("not authenticated"));
        assert!(as_caller(Some("")).unwrap_err().contains("is empty"));
    }

    #[test]
    fn the_operation_is_part_of_the_namespace() {
        let contract = Contract::header("k:{uuid}", "^k:.*$", 1, 1);
        let body = request("{}");
        assert_ne!(
            scope_of("pay", &contract, &body).unwrap(),
            scope_of("refund", &contract, &body).unwrap()
        );
    }
}
