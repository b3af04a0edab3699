//! The W3C trace context (`traceparent`, `tracestate`) a request came
//! with, passed on unchanged to the downstream calls its business step
//! makes when this service records no span of its own in the trace (built
//! without the `otel` feature, or with no OTLP endpoint): the downstream
//! service then continues the caller's trace, as if this one were not
//! traced at all, rather than start a new one.

use axum::http::HeaderMap;
use axum::http::header::HeaderName;

const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The `traceparent` and `tracestate` headers of `incoming` when it names a
/// valid trace (one `traceparent` by the W3C format); else none: an
/// invalid one is dropped, as a tracer would, not passed further.
pub(crate) fn passed_on(incoming: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut parents = incoming.get_all(TRACEPARENT).iter();
    let (Some(parent), None) = (parents.next(), parents.next()) else {
        return headers;
    };
    if !parent.to_str().is_ok_and(is_valid_traceparent) {
        return headers;
    }
    headers.insert(TRACEPARENT, parent.clone());
    for state in incoming.get_all(TRACESTATE) {
        headers.append(TRACESTATE, state.clone());
    }
    headers
}

/// `version-traceid-parentid-flags` in lower-case hex, trace and parent
/// not all zeros, version not `ff`; a later version may add fields after
/// the flags, version `00` may not.
fn is_valid_traceparent(value: &str) -> bool {
    let fields: Vec<&str> = value.split('-').collect();
    let hex = |field: &str, length: usize| {
        field.len() == length
            && field
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    };
    let nonzero = |field: &str| field.bytes().any(|byte| byte != b'0');
    match fields.as_slice() {
        [version, trace, parent, flags, rest @ ..] => {
            hex(version, 2)
                && *version != "ff"
                && (rest.is_empty() || *version != "00")
                && hex(trace, 32)
                && nonzero(trace)
                && hex(parent, 16)
                && nonzero(parent)
                && hex(flags, 2)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents_are_checked_by_the_w3c_format() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(is_valid_traceparent(good));
        assert!(is_valid_traceparent(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"
        ));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert!(!is_valid_traceparent(bad), "{bad}");
        }
    }
}
