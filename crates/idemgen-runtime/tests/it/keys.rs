//! What the service reads as a key, against what the spec's schema
//! `pattern` admits (ECMA-262, as JSON Schema validators and clients read
//! it).

use idemgen_runtime::Source;
use idemgen_runtime::axum::http::Method;
use idemgen_runtime::fuzzing::read_key;
use idemgen_runtime::{Request, fuzzing};

/// From the `key_template` fuzz target's first crash: for a `{field:…}`
/// segment the server's regex (`.+?`; Rust's `.` is anything but `\n`)
/// accepted `\r` where the schema's `.+` refuses it under ECMA-262, whose
/// `.` stops at every line terminator. `\r` is a control character, which
/// the service already refused; U+2028 and U+2029 are not, and got
/// through. They are now refused as unreadable too, before any pattern.
#[test]
fn a_key_with_a_line_separator_is_refused_like_a_control_character() {
    for separator in ['\u{2028}', '\u{2029}'] {
        let mut request = Request::new(Method::POST, "/pay");
        request.query_pairs = vec![("key".into(), format!("order-1{separator}x"))];
        let read = read_key(&Source::Query("key"), &request);
        assert!(read.is_err(), "{separator:?}: {read:?}");
    }
    let mut request = Request::new(Method::POST, "/pay");
    request.query_pairs = vec![("key".into(), "order-1 é".into())];
    assert_eq!(
        fuzzing::read_key(&Source::Query("key"), &request),
        Ok(Some("order-1 é".into()))
    );
}
