//! Numbers against ECMAScript, the layout RFC 8785 (JCS) prescribes:
//! `tests/data/jcs-numbers.txt` holds doubles written by `toExponential()`
//! and by `JSON.stringify` in Node.js (made by `scripts/jcs-numbers.js`).

use idemgen_runtime::canonical_json::canonicalize;

#[test]
fn numbers_match_ecmascript() {
    let vectors = include_str!("data/jcs-numbers.txt");
    let mut checked = 0;
    for line in vectors.lines() {
        let (input, expected) = line.split_once(' ').expect("two columns");
        let ours = canonicalize(input.as_bytes()).expect("a number");
        assert_eq!(String::from_utf8(ours).unwrap(), expected, "{input}");
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} vectors");
}
