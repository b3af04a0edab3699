//! The request fingerprint: SHA-256 over the parts the contract names,
//! the body as canonical JSON ([`crate::canonical_json`]).

use sha2::{Digest, Sha256};

use crate::canonical_json::{self, CanonicalJsonError, Reason};
use crate::contract::Fingerprint;
use crate::reply::Request;

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
/// The query parameters named in `secrets` (API keys sent in the query)
/// are left out: a credential is never hashed into a record, and a
/// rotated key does not turn a retry into a conflict.
pub(crate) fn fingerprint_without(
    include: &Fingerprint,
    request: &Request,
    secrets: &[&str],
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
            .filter(|(name, _)| !secrets.contains(&name.as_str()))
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
    if include.body {
        let form = if !include.canonical_json {
            None
        } else if crate::input::is_form(&request.headers) {
            crate::input::canonical_form(&request.body)
        } else if crate::multipart::is_multipart(&request.headers) {
            crate::multipart::canonical_multipart(&request.headers, &request.body)
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
    /// Fingerprints with no secrets to leave out.
    fn fingerprint(include: &Fingerprint, request: &Request) -> Result<String, CanonicalJsonError> {
        fingerprint_without(include, request, &[])
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
        let with_key = |key: &str| {
            let mut request = request("POST", "/pay", "{}");
            request.query_pairs = vec![
                ("page".to_string(), "1".to_string()),
                ("api_key".to_string(), key.to_string()),
            ];
            fingerprint_without(&include, &request, &["api_key"]).unwrap()
        };
        assert_eq!(with_key("old-secret"), with_key("new-secret"));
        let mut other_page = request("POST", "/pay", "{}");
        other_page.query_pairs = vec![("page".to_string(), "2".to_string())];
        assert_ne!(
            with_key("old-secret"),
            fingerprint_without(&include, &other_page, &["api_key"]).unwrap()
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
