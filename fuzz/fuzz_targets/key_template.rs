//! Key templates, differentially: the Rust regex the service checks keys
//! with and the portable `pattern` written into the spec's schemas (read
//! here by an ECMA-262 engine, with and without the `u` flag, as JSON
//! Schema validators and client generators read it) accept the same keys.
//! Candidate keys are the template filled in with arbitrary or well-formed
//! segment values, and arbitrary text.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use idemgen_spec::contract::key_template::{KeyTemplate, Segment};
use libfuzzer_sys::fuzz_target;

/// A value for a `{...}` segment: well formed for its kind, or anything.
fn sample(u: &mut Unstructured<'_>, segment: &str) -> arbitrary::Result<String> {
    if u.ratio(1, 3)? {
        return String::arbitrary(u);
    }
    Ok(match segment.split(':').next().unwrap_or("") {
        "uuid" => "1b4e28ba-2fa1-41d2-883f-0016d3cca427".into(),
        "ulid" => "01ARZ3NDEKTSV4RRFFQ69G5FAV".into(),
        "date" => "20261204".into(),
        "timestamp" => "1733300000000".into(),
        "seq" => "42".into(),
        "random" => {
            let bytes: usize = segment
                .split(':')
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(16);
            "aB3-_"
                .repeat(bytes)
                .chars()
                .take((bytes * 4).div_ceil(3))
                .collect()
        }
        _ => String::arbitrary(u)?,
    })
}

/// The template with each segment replaced by a sample value.
fn fill(u: &mut Unstructured<'_>, source: &str) -> arbitrary::Result<String> {
    let mut key = String::new();
    let mut rest = source;
    while let Some(open) = rest.find('{') {
        key.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        key.push_str(&sample(u, &rest[open + 1..open + close])?);
        rest = &rest[open + close + 1..];
    }
    key.push_str(rest);
    Ok(key)
}

fn ecma_matches(regex: &regress::Regex, key: &str) -> bool {
    regex.find(key).is_some()
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let Ok(source) = String::arbitrary(&mut u) else {
        return;
    };
    let Ok(template) = KeyTemplate::parse(&source) else {
        return;
    };
    let rust = regex::Regex::new(&template.regex())
        .unwrap_or_else(|error| panic!("{source:?}: the regex does not compile: {error}"));
    let pattern = template.schema_pattern();
    let rust_schema = regex::Regex::new(&pattern).unwrap_or_else(|error| {
        panic!("{source:?}: the schema pattern {pattern:?} is no Rust regex: {error}")
    });
    let ecma = regress::Regex::new(&pattern).unwrap_or_else(|error| {
        panic!("{source:?}: the schema pattern {pattern:?} is no ECMA-262 regex: {error}")
    });
    let ecma_unicode = regress::Regex::with_flags(&pattern, "u").unwrap_or_else(|error| {
        panic!("{source:?}: the schema pattern {pattern:?} is no ECMA-262 regex under the u flag: {error}")
    });
    if !template
        .segments()
        .any(|segment| matches!(segment, Segment::Field(_)))
    {
        assert_eq!(
            KeyTemplate::from_pattern(&pattern).map(|read| read.schema_pattern()),
            Some(pattern.clone()),
            "{source:?}: its schema pattern does not read back as a template"
        );
    }
    assert!(
        template.pattern_matches(&pattern),
        "{source:?}: its own schema pattern does not match it"
    );
    for _ in 0..4 {
        let key = if u.ratio(3, 4).unwrap_or(false) {
            fill(&mut u, &source)
        } else {
            String::arbitrary(&mut u)
        };
        let Ok(key) = key else { break };
        // The service refuses a key with a control character or a line
        // separator before it matches anything (`Unreadable`): not a key
        // either engine sees.
        if key
            .chars()
            .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
        {
            continue;
        }
        let server = rust.is_match(&key);
        for (engine, accepts) in [
            (
                "Rust regex on the schema pattern",
                rust_schema.is_match(&key),
            ),
            ("ECMA-262", ecma_matches(&ecma, &key)),
            (
                "ECMA-262 with the u flag",
                ecma_matches(&ecma_unicode, &key),
            ),
        ] {
            assert_eq!(
                server,
                accepts,
                "template {source:?}: the server's regex {} {key:?} but {engine} on {pattern:?} {}",
                if server { "accepts" } else { "refuses" },
                if accepts { "accepts it" } else { "refuses it" },
            );
        }
    }
});
