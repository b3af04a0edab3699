//! The headers of an answer besides its content type: which a business
//! function may send, which are stored with the record and replayed, and
//! how they are stored.
//!
//! A generated service puts only the headers its spec declares on a
//! response into [`crate::Reply::headers`], so an undeclared header never
//! reaches the record. Of those, the ones that belong to one exchange and
//! not to the answer are sent but never stored: a replay gets the
//! server's own `Date`, the engine's replay mark, and no cookie
//! (a session set up again by a retry would be a second login). The
//! headers that frame the message are the server's alone and are not
//! even sent.
//!
//! Stored, they are an HTTP/1.1 field block: `name: value` lines ending in
//! CRLF, names in lower case, values as bytes (a field value holds no CR,
//! LF or NUL, so the lines cannot be confused), in the order sent. `NULL`
//! when there are none, as in records written before the column existed.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// Marks an answer replayed from the record, unless the contract names
/// another header (`Contract::replayed_header`) or none.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// Headers a business answer never sets: they frame the message or mark a
/// replay, which is the server's and the engine's job. The content type is
/// the reply's own field.
const NEVER_SENT: &[&str] = &[
    "connection",
    "content-length",
    "content-type",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    REPLAYED_HEADER,
];

/// Headers sent with the first answer but never stored or replayed: they
/// describe that one exchange (a cookie, the time it was sent, when to come
/// back), not the result a replay repeats.
const SENT_NOT_STORED: &[&str] = &["set-cookie", "date", "retry-after"];

/// Whether a business answer may send `name` at all.
pub(crate) fn may_send(name: &HeaderName) -> bool {
    !NEVER_SENT.contains(&name.as_str())
}

/// Whether `name` is stored with the record and replayed.
pub(crate) fn is_stored(name: &HeaderName) -> bool {
    may_send(name) && !SENT_NOT_STORED.contains(&name.as_str())
}

/// The headers of `headers` a record keeps, as a field block; `None` when
/// there are none.
pub(crate) fn encode(headers: &[(HeaderName, HeaderValue)]) -> Option<Vec<u8>> {
    let mut block = Vec::new();
    for (name, value) in headers.iter().filter(|(name, _)| is_stored(name)) {
        block.extend_from_slice(name.as_str().as_bytes());
        block.extend_from_slice(b": ");
        block.extend_from_slice(value.as_bytes());
        block.extend_from_slice(b"\r\n");
    }
    (!block.is_empty()).then_some(block)
}

/// The headers of a stored field block. A line that is not a header (a
/// table edited by hand) is skipped rather than failing the replay.
pub(crate) fn decode(block: &[u8]) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = Vec::new();
    for line in block.split(|byte| *byte == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|byte| *byte == b':') else {
            continue;
        };
        let value = &line[colon + 1..];
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&line[..colon]),
            HeaderValue::from_bytes(value),
        ) && is_stored(&name)
        {
            headers.push((name, value));
        }
    }
    headers
}

/// Adds the headers a business answer may send to `response_headers`.
pub(crate) fn send(headers: &[(HeaderName, HeaderValue)], response_headers: &mut HeaderMap) {
    for (name, value) in headers.iter().filter(|(name, _)| may_send(name)) {
        response_headers.append(name.clone(), value.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &[u8])]) -> Vec<(HeaderName, HeaderValue)> {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    HeaderValue::from_bytes(value).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_stored_block_reads_back_byte_for_byte() {
        let headers = map(&[
            ("location", b"/orders/42"),
            ("etag", b"\"v1\""),
            ("link", b"</a>; rel=\"next\""),
            ("link", b"</b>; rel=\"prev\""),
            ("x-note", b"  spaced: with a colon \xe9"),
        ]);
        let block = encode(&headers).unwrap();
        assert!(block.starts_with(b"location: /orders/42\r\netag: \"v1\"\r\n"));
        assert_eq!(decode(&block), headers);
    }

    #[test]
    fn per_exchange_and_framing_headers_are_never_stored() {
        let headers = map(&[
            ("set-cookie", b"session=1"),
            ("date", b"Fri, 04 Dec 2026 11:00:00 GMT"),
            ("retry-after", b"1"),
            ("content-length", b"3"),
            ("content-type", b"text/plain"),
            ("idempotent-replayed", b"true"),
            ("transfer-encoding", b"chunked"),
        ]);
        assert_eq!(encode(&headers), None);
        let mut sent = HeaderMap::new();
        send(&headers, &mut sent);
        let names: Vec<&str> = sent.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["set-cookie", "date", "retry-after"]);
        // Nor does a block written by hand bring them back.
        assert!(decode(b"set-cookie: a=b\r\ncontent-length: 9\r\n").is_empty());
    }

    #[test]
    fn no_headers_store_nothing() {
        assert_eq!(encode(&[]), None);
        assert!(decode(b"").is_empty());
        assert!(decode(b"not a header\r\n").is_empty());
    }
}
