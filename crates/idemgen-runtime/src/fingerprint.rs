//! The request fingerprint: SHA-256 over the parts the contract names,
//! the body as canonical JSON ([`crate::canonical_json`]).

use sha2::{Digest, Sha256};

use crate::canonical_json::{self, CanonicalJsonError, Reason};
use crate::contract::{Contract, Fingerprint, Source};
use crate::input::FormLists;
use crate::reply::Request;
use crate::security::Security;

/// What a fingerprint never hashes, even where its part is included.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LeftOut<'a> {
    /// Query parameters that carry credentials (API keys).
    pub(crate) query: &'a [&'a str],
    /// Headers that carry credentials, and the key's own header (any
    /// case); `Authorization`, `Accept` and `Content-Type` are always left
    /// out (OpenAPI ignores header parameters of those names).
    pub(crate) headers: &'a [&'a str],
}

impl LeftOut<'_> {
    fn header(&self, name: &str) -> bool {
        ["authorization", "accept", "content-type"]
            .iter()
            .any(|ignored| name.eq_ignore_ascii_case(ignored))
            || self
                .headers
                .iter()
                .any(|left_out| left_out.eq_ignore_ascii_case(name))
    }
}

/// The fingerprint the engine records for `request` to an operation with
/// `contract` and `security`: credentials and the key's header left out.
pub(crate) fn fingerprint_of(
    contract: &Contract,
    security: &Security,
    form_lists: FormLists<'_>,
    request: &Request,
) -> Result<String, CanonicalJsonError> {
    let query: Vec<&str> = security.query_credentials().collect();
    // Only a contract that hashes headers needs to know which to leave
    // out: nearly none does, and this runs on every request.
    let mut headers: Vec<&str> = Vec::new();
    if !contract.fingerprint.headers.is_empty() {
        headers.extend(security.header_credentials());
        if let Source::Header(key) = contract.key {
            headers.push(key);
        }
    }
    fingerprint_without(
        &contract.fingerprint,
        request,
        &LeftOut {
            query: &query,
            headers: &headers,
        },
        form_lists,
    )
}

/// The fingerprint of `request`: 64 lowercase hex digits. Each part is
/// length-prefixed, so parts cannot run into each other.
///
/// A JSON body is hashed in its canonical form, so a retry that
/// re-serialises the same document (other key order, whitespace, `1.0`
/// for `1`) is the same request. A body that is not JSON is hashed as
/// sent, except a form (`application/x-www-form-urlencoded`), hashed as
/// the tree it is read as ([`crate::input::canonical_form`]): a retry that
/// reorders its fields or spells a bracket `%5B` is the same request; a
/// `multipart/form-data` body likewise
/// ([`crate::multipart::canonical_multipart`]), whatever its boundary. A
/// JSON body that names one member twice, or holds half a
/// surrogate pair, has no single meaning: it is refused (`Err`), since two
/// parsers could read two different requests from it.
///
/// The header parameters `include` names are hashed by name (lowercase,
/// in order), each with every value in the order sent, so an absent
/// header is not an empty one and `X-Currency: EUR` is not `USD`.
///
/// What `left_out` names (API keys sent in the query or a header,
/// `Authorization`, the key's own header) is left out: a credential is
/// never hashed into a record, and a rotated key does not turn a retry
/// into a conflict. A form's `form_lists` are hashed as they are read
/// (split where joined, a list of one however sent).
pub(crate) fn fingerprint_without(
    include: &Fingerprint,
    request: &Request,
    left_out: &LeftOut<'_>,
    form_lists: FormLists<'_>,
) -> Result<String, CanonicalJsonError> {
    let mut hasher = Sha256::new();
    if include.method {
        hash_part(&mut hasher, request.method.as_str().as_bytes());
    }
    if include.path {
        hash_part(&mut hasher, request.path.as_bytes());
    }
    if include.query {
        // Every pair, a parameter's items in the order sent (`?a=1&a=2` is
        // not `?a=2&a=1`, nor `?a=2`; nor is `?a[1]=y&a[0]=x` the other
        // order, since `a`, `a[]` and `a[N]` are read as items in the order
        // sent). Parameters, and the members of a `deepObject` one
        // (`created[gt]`, `items[0][price]`), are read by name, so
        // canonically those names are in order: `?a=1&b=2` is `?b=2&a=1`
        // and `?c[gt]=1&c[lt]=2` is `?c[lt]=2&c[gt]=1`, while a member's
        // index is part of its name (`items[0]` is not `items[1]`).
        let mut pairs: Vec<&(String, String)> = request
            .query_pairs
            .iter()
            .filter(|(name, _)| !left_out.query.contains(&name.as_str()))
            .collect();
        if include.canonical_json {
            pairs.sort_by(|a, b| read_by(&a.0).cmp(&read_by(&b.0)));
        }
        let mut text = Vec::new();
        for (name, value) in pairs {
            hash_part_into(&mut text, name.as_bytes());
            hash_part_into(&mut text, value.as_bytes());
        }
        hash_part(&mut hasher, &text);
    }
    let headers = hashed_headers(include, left_out);
    if !headers.is_empty() {
        // Hashed only when there is a header to hash: listing `headers`
        // for an operation that declares none keeps its records'
        // fingerprints.
        let mut text = Vec::new();
        for name in &headers {
            hash_part_into(&mut text, name.as_bytes());
            let values = request.headers.get_all(name.as_str());
            let count = values.iter().count() as u64;
            text.extend_from_slice(&count.to_be_bytes());
            for value in values {
                hash_part_into(&mut text, value.as_bytes());
            }
        }
        hash_part(&mut hasher, &text);
    }
    if include.body {
        let form = if !include.canonical_json {
            None
        } else if crate::input::is_form(&request.headers) {
            crate::input::canonical_form(&request.body, form_lists)
        } else if crate::multipart::is_multipart(&request.headers) {
            crate::multipart::canonical_multipart(&request.headers, &request.body, form_lists.joined)
        } else {
            None
        };
        if let Some(form) = form {
            // What `Request::form_as` or `Request::multipart_as` reads,
            // not its spelling.
            hash_part(&mut hasher, &form);
        } else if include.canonical_json {
            match canonical_json::canonicalize(&request.body) {
                Ok(canonical) => hash_part(&mut hasher, &canonical),
                Err(error) if refused(&error) => return Err(error),
                Err(_) => hash_part(&mut hasher, &request.body),
            }
        } else {
            hash_part(&mut hasher, &request.body);
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// The header names `include` lists, lowercase, sorted and each once, but
/// for those `left_out` names.
fn hashed_headers(include: &Fingerprint, left_out: &LeftOut<'_>) -> Vec<String> {
    let mut names: Vec<String> = include
        .headers
        .iter()
        .filter(|name| !left_out.header(name))
        .map(|name| name.to_ascii_lowercase())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The parameter a query pair belongs to: its name up to the first `[`
/// (`created[gt]`, `expand[]` and `expand[0]` are pairs of `created` and
/// `expand`).
fn parameter_of(name: &str) -> &str {
    name.split('[').next().unwrap_or(name)
}

/// What a query pair is read by: its parameter, and for a member of a
/// `deepObject` one its whole name. An item (`expand`, `expand[]`,
/// `expand[0]`) has no name of its own: items are read in the order sent.
fn read_by(name: &str) -> (&str, &str) {
    let parameter = parameter_of(name);
    let brackets = &name[parameter.len()..];
    let item = brackets.is_empty()
        || brackets
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|index| index.bytes().all(|byte| byte.is_ascii_digit()));
    (parameter, if item { "" } else { name })
}

/// JSON whose meaning is ambiguous; anything else that fails to
/// canonicalise is not JSON and is hashed byte for byte.
fn refused(error: &CanonicalJsonError) -> bool {
    matches!(
        error.reason,
        Reason::DuplicateMember(_) | Reason::LoneSurrogate
    )
}

pub(crate) fn hash_part(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

fn hash_part_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Lower-case hex, two digits a byte (one allocation: this runs for every
/// request's fingerprint and scope).
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    /// Fingerprints with nothing to leave out.
    fn fingerprint(include: &Fingerprint, request: &Request) -> Result<String, CanonicalJsonError> {
        fingerprint_without(include, request, &LeftOut::default(), FormLists::default())
    }

    use super::*;

    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        let every: Vec<u8> = (0..=255).collect();
        let expected: String = every.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(hex(&every), expected);
    }

    fn request(method: &str, path: &str, body: &str) -> Request {
        Request {
            method: method.parse().unwrap(),
            path: path.into(),
            path_params: Default::default(),
            query: Default::default(),
            query_pairs: Default::default(),
            headers: Default::default(),
            body: body.to_string().into(),
            principal: None,
            downstream_key: None,
        }
    }

    fn print(include: &Fingerprint, request: &Request) -> String {
        fingerprint(include, request).unwrap()
    }

    #[test]
    fn reordered_json_is_the_same_request_and_other_parts_are_not() {
        let all = Fingerprint::DEFAULT;
        let first = print(&all, &request("POST", "/pay", r#"{"a": 1, "b": 2}"#));
        assert_eq!(first.len(), 64);
        assert_eq!(
            first,
            print(&all, &request("POST", "/pay", r#"{"b":2,"a":1}"#))
        );
        assert_ne!(
            first,
            print(&all, &request("POST", "/pay", r#"{"a": 1, "b": 3}"#))
        );
        assert_ne!(
            first,
            print(&all, &request("PUT", "/pay", r#"{"a": 1, "b": 2}"#))
        );
        let raw = Fingerprint {
            canonical_json: false,
            ..all
        };
        assert_ne!(
            print(&raw, &request("POST", "/pay", r#"{"a": 1, "b": 2}"#)),
            print(&raw, &request("POST", "/pay", r#"{"b":2,"a":1}"#))
        );
    }

    #[test]
    fn parts_cannot_run_into_each_other() {
        let all = Fingerprint::DEFAULT;
        assert_ne!(
            print(&all, &request("POST", "/pa", "y")),
            print(&all, &request("POST", "/p", "ay"))
        );
    }

    #[test]
    fn equal_numbers_are_one_request_and_distinct_ones_never_collide() {
        let all = Fingerprint::DEFAULT;
        let pay = |body: &str| print(&all, &request("POST", "/pay", body));
        assert_eq!(pay(r#"{"amount": 1}"#), pay(r#"{"amount": 1.0}"#));
        assert_eq!(pay(r#"{"amount": 1}"#), pay(r#"{"amount": 1e0}"#));
        assert_ne!(
            pay(r#"{"amount": 18446744073709551616}"#),
            pay(r#"{"amount": 18446744073709551617}"#)
        );
        assert_ne!(
            pay(r#"{"amount": 0.1}"#),
            pay(r#"{"amount": 0.10000000000000001}"#)
        );
    }

    #[test]
    fn ambiguous_json_is_refused_and_other_bodies_hash_as_sent() {
        let all = Fingerprint::DEFAULT;
        let error = fingerprint(&all, &request("POST", "/pay", r#"{"a": 1, "a": 2}"#)).unwrap_err();
        assert!(error.to_string().contains("appears twice"), "{error}");
        assert!(fingerprint(&all, &request("POST", "/pay", r#""\ud800""#)).is_err());
        assert_ne!(
            print(&all, &request("POST", "/pay", "amount=1")),
            print(&all, &request("POST", "/pay", "amount=2"))
        );
    }

    #[test]
    fn query_credentials_are_left_out() {
        let include = Fingerprint {
            query: true,
            ..Fingerprint::DEFAULT
        };
        let api_key = LeftOut {
            query: &["api_key"],
            ..LeftOut::default()
        };
        let with_key = |key: &str| {
            let mut request = request("POST", "/pay", "{}");
            request.query_pairs = vec![
                ("page".to_string(), "1".to_string()),
                ("api_key".to_string(), key.to_string()),
            ];
            fingerprint_without(&include, &request, &api_key, FormLists::default()).unwrap()
        };
        assert_eq!(with_key("old-secret"), with_key("new-secret"));
        let mut other_page = request("POST", "/pay", "{}");
        other_page.query_pairs = vec![("page".to_string(), "2".to_string())];
        assert_ne!(
            with_key("old-secret"),
            fingerprint_without(&include, &other_page, &api_key, FormLists::default()).unwrap()
        );
    }

    /// A request to `POST /pay` with `headers`, as sent, in order.
    fn with_headers(headers: &[(&str, &str)]) -> Request {
        let mut sent = request("POST", "/pay", "{}");
        for (name, value) in headers {
            sent.headers.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        sent
    }

    #[test]
    fn declared_headers_count_and_undeclared_ones_do_not() {
        let include = Fingerprint {
            headers: &["X-Currency", "x-region"],
            ..Fingerprint::DEFAULT
        };
        let print_headers = |headers: &[(&str, &str)]| print(&include, &with_headers(headers));
        let eur = print_headers(&[("x-currency", "EUR")]);
        assert_ne!(eur, print_headers(&[("x-currency", "USD")]));
        // Absent is not empty, and neither is the default fingerprint.
        assert_ne!(print_headers(&[]), print_headers(&[("x-currency", "")]));
        assert_ne!(eur, print(&Fingerprint::DEFAULT, &with_headers(&[("x-currency", "EUR")])));
        // A header the contract does not list is not hashed.
        assert_eq!(eur, print_headers(&[("x-currency", "EUR"), ("x-trace", "1")]));
        // Every value counts, in the order sent.
        let both = print_headers(&[("x-region", "eu"), ("x-region", "us")]);
        assert_ne!(both, print_headers(&[("x-region", "us"), ("x-region", "eu")]));
        assert_ne!(both, print_headers(&[("x-region", "eu")]));
        // A value cannot run into the next header's name.
        assert_ne!(
            print_headers(&[("x-currency", "EURx-region"), ("x-region", "")]),
            print_headers(&[("x-currency", "EUR"), ("x-region", "x-region")])
        );
    }

    #[test]
    fn header_case_and_the_order_of_different_headers_do_not_count() {
        let mixed = Fingerprint {
            headers: &["x-region", "X-Currency"],
            ..Fingerprint::DEFAULT
        };
        let lower = Fingerprint {
            headers: &["x-currency", "X-REGION", "x-currency"],
            ..Fingerprint::DEFAULT
        };
        let first = print(
            &mixed,
            &with_headers(&[("X-Currency", "EUR"), ("x-region", "eu")]),
        );
        assert_eq!(
            first,
            print(&lower, &with_headers(&[("X-REGION", "eu"), ("x-currency", "EUR")]))
        );
        // A value's case is the value's.
        assert_ne!(
            first,
            print(&lower, &with_headers(&[("x-region", "EU"), ("x-currency", "EUR")]))
        );
    }

    #[test]
    fn the_key_header_and_credentials_are_left_out() {
        let include = Fingerprint {
            headers: &[
                "Accept",
                "Authorization",
                "Content-Type",
                "Idempotency-Key",
                "X-Api-Key",
                "X-Currency",
            ],
            ..Fingerprint::DEFAULT
        };
        let left_out = LeftOut {
            headers: &["idempotency-key", "X-API-KEY"],
            ..LeftOut::default()
        };
        // OpenAPI ignores `Accept` and `Content-Type` header parameters:
        // a retry that asks for another media type is the same request.
        let print_sent = |key: &str, token: &str, api_key: &str, accept: &str| {
            let sent = with_headers(&[
                ("idempotency-key", key),
                ("authorization", token),
                ("x-api-key", api_key),
                ("accept", accept),
                ("content-type", accept),
                ("x-currency", "EUR"),
            ]);
            fingerprint_without(&include, &sent, &left_out, FormLists::default()).unwrap()
        };
        let first = print_sent("pay:1", "Bearer old", "old", "application/json");
        assert_eq!(first, print_sent("pay:2", "Bearer new", "new", "*/*"));
        let only_currency = Fingerprint {
            headers: &["x-currency"],
            ..Fingerprint::DEFAULT
        };
        assert_eq!(
            first,
            print(&only_currency, &with_headers(&[("x-currency", "EUR")]))
        );
        // Listing nothing but left-out headers hashes no header part.
        let nothing = Fingerprint {
            headers: &["Idempotency-Key", "authorization"],
            ..Fingerprint::DEFAULT
        };
        assert_eq!(
            fingerprint_without(&nothing, &with_headers(&[("authorization", "t")]), &left_out, FormLists::default())
                .unwrap(),
            print(&Fingerprint::DEFAULT, &with_headers(&[]))
        );
    }

    #[test]
    fn an_operations_security_and_key_decide_what_is_left_out() {
        use crate::security::{ApiKeyIn, Scheme, SchemeKind};
        static SCHEMES: [Scheme; 2] = [
            Scheme {
                name: "signature",
                kind: SchemeKind::ApiKey {
                    location: ApiKeyIn::Header,
                    name: "X-Signature",
                },
                realm: "",
            },
            Scheme {
                name: "session",
                kind: SchemeKind::ApiKey {
                    location: ApiKeyIn::Cookie,
                    name: "sid",
                },
                realm: "",
            },
        ];
        static SECURITY: Security = Security {
            alternatives: &[&SCHEMES],
        };
        let contract = Contract {
            fingerprint: Fingerprint {
                headers: &["x-signature", "cookie", "idempotency-key", "x-currency"],
                ..Fingerprint::DEFAULT
            },
            ..Contract::header("pay:{opaque}", "^pay:.+$", 60_000, 3_000)
        };
        let print_sent = |signature: &str, cookie: &str, key: &str, currency: &str| {
            let sent = with_headers(&[
                ("x-signature", signature),
                ("cookie", cookie),
                ("idempotency-key", key),
                ("x-currency", currency),
            ]);
            fingerprint_of(&contract, &SECURITY, FormLists::default(), &sent).unwrap()
        };
        let first = print_sent("s1", "sid=a", "pay:1", "EUR");
        assert_eq!(first, print_sent("s2", "sid=b", "pay:2", "EUR"));
        assert_ne!(first, print_sent("s1", "sid=a", "pay:1", "USD"));
        // Without the schemes, the signature and the cookie are inputs.
        assert_ne!(
            fingerprint_of(
                &contract,
                &Security::OPEN,
                FormLists::default(),
                &with_headers(&[("x-signature", "s1"), ("x-currency", "EUR")])
            )
            .unwrap(),
            fingerprint_of(
                &contract,
                &Security::OPEN,
                FormLists::default(),
                &with_headers(&[("x-signature", "s2"), ("x-currency", "EUR")])
            )
            .unwrap()
        );
    }

    #[test]
    fn repeated_query_parameters_count_in_order_and_names_do_not() {
        let include = Fingerprint {
            query: true,
            ..Fingerprint::DEFAULT
        };
        let print_query = |include: &Fingerprint, pairs: &[(&str, &str)]| {
            let mut request = request("POST", "/pay", "{}");
            request.query_pairs = pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect();
            print(include, &request)
        };
        let with_query = |pairs: &[(&str, &str)]| print_query(&include, pairs);
        let both = with_query(&[("a", "1"), ("a", "2")]);
        assert_ne!(both, with_query(&[("a", "2"), ("a", "1")]));
        assert_ne!(both, with_query(&[("a", "2")]));
        // Other names in another order are the same parameters.
        assert_eq!(
            with_query(&[("b", "x"), ("a", "1"), ("c", "y"), ("a", "2")]),
            with_query(&[("a", "1"), ("c", "y"), ("a", "2"), ("b", "x")])
        );
        // One parameter's bracketed pairs keep the order sent: they are
        // read as items in that order, whatever the index says.
        assert_ne!(
            with_query(&[("e[1]", "b"), ("e[0]", "a")]),
            with_query(&[("e[0]", "a"), ("e[1]", "b")])
        );
        assert_ne!(
            with_query(&[("e", "a"), ("e[]", "b")]),
            with_query(&[("e[]", "b"), ("e", "a")])
        );
        assert_eq!(
            with_query(&[("z", "1"), ("e[]", "a"), ("e", "b")]),
            with_query(&[("e[]", "a"), ("z", "1"), ("e", "b")])
        );
        // A nested `deepObject` parameter's members are read by name, in
        // any order, and an item's place by its index.
        let items = with_query(&[("a[0][x]", "1"), ("a[0][y]", "2"), ("a[1][x]", "3")]);
        assert_eq!(
            items,
            with_query(&[("a[1][x]", "3"), ("a[0][y]", "2"), ("a[0][x]", "1")])
        );
        assert_ne!(
            items,
            with_query(&[("a[0][x]", "3"), ("a[0][y]", "2"), ("a[1][x]", "1")])
        );
        assert_eq!(
            with_query(&[("c[gt]", "1"), ("c[lt]", "2")]),
            with_query(&[("c[lt]", "2"), ("c[gt]", "1")])
        );
        // A list inside keeps its order.
        assert_ne!(
            with_query(&[("a[0][t][]", "x"), ("a[0][t][]", "y")]),
            with_query(&[("a[0][t][]", "y"), ("a[0][t][]", "x")])
        );
        let as_sent = Fingerprint {
            canonical_json: false,
            ..include
        };
        let sent = |pairs: &[(&str, &str)]| print_query(&as_sent, pairs);
        assert_ne!(sent(&[("a", "1"), ("b", "2")]), sent(&[("b", "2"), ("a", "1")]));
        assert_ne!(
            with_query(&[("a", "1&b")]),
            with_query(&[("a", "1"), ("b", "")])
        );
    }

    #[test]
    fn forms_that_read_the_same_are_the_same_request() {
        let all = Fingerprint::DEFAULT;
        let form = |body: &str| {
            let mut sent = request("POST", "/pay", body);
            sent.headers.insert(
                "content-type",
                "application/x-www-form-urlencoded".parse().unwrap(),
            );
            print(&all, &sent)
        };
        let first = form("amount=5&metadata[order]=6735&items[0][price]=p");
        assert_eq!(first, form("items%5B0%5D%5Bprice%5D=p&metadata[order]=6735&amount=5"));
        assert_ne!(first, form("amount=6&metadata[order]=6735&items[0][price]=p"));
        // The same text sent as another media type is hashed as sent.
        assert_ne!(
            print(&all, &request("POST", "/pay", "amount=5&b=1")),
            print(&all, &request("POST", "/pay", "b=1&amount=5"))
        );
    }
}
