//! The JSON fast path builds exactly the tree the YAML parser builds:
//! same values, same positions, same duplicate keys, for every JSON spec
//! of the corpus and for edge cases.

use std::path::PathBuf;

use idemgen_spec::{FileId, Node, Value};

use crate::support::workspace_root;

fn same(fast: &Node, slow: &Node, path: &str) {
    assert_eq!(fast.span, slow.span, "span at {path}");
    match (&fast.value, &slow.value) {
        (Value::Map(a), Value::Map(b)) => {
            assert_eq!(a.len(), b.len(), "size at {path}");
            for (x, y) in a.iter().zip(b.iter()) {
                assert_eq!(x.key, y.key, "key at {path}");
                assert_eq!(x.key_span, y.key_span, "key span at {path}/{}", x.key);
                same(&x.value, &y.value, &format!("{path}/{}", x.key));
            }
        }
        (Value::Seq(a), Value::Seq(b)) => {
            assert_eq!(a.len(), b.len(), "size at {path}");
            for (at, (x, y)) in a.iter().zip(b.iter()).enumerate() {
                same(x, y, &format!("{path}/{at}"));
            }
        }
        (Value::Float(a), Value::Float(b)) => {
            assert!(a == b || (a.is_nan() && b.is_nan()), "{path}")
        }
        (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "value at {path}"),
    }
}

/// Whether the fast path took the text.
fn check(text: &str, name: &str) -> bool {
    // As the loader does before either parser sees the text.
    let rewritten = idemgen_spec::json_escapes::rewrite_surrogates(text);
    let text = rewritten.as_deref().unwrap_or(text);
    let slow = idemgen_spec::parse::parse(FileId(0), text);
    let fast = idemgen_spec::json_parse::parse(FileId(0), text);
    match (fast, slow) {
        (Some(Ok(fast)), Ok(slow)) => {
            same(&fast.root, &slow.root, name);
            let keys = |parsed: &idemgen_spec::parse::Parsed| {
                parsed
                    .duplicates
                    .iter()
                    .map(|d| (d.key.clone(), d.first, d.again))
                    .collect::<Vec<_>>()
            };
            assert_eq!(keys(&fast), keys(&slow), "{name}: duplicates");
            true
        }
        (None, _) => false, // handed to the YAML parser
        (Some(fast), slow) => panic!(
            "{name}: fast {:?} vs slow {:?}",
            fast.map(drop).map_err(|e| e.message),
            slow.map(drop).map_err(|e| e.message)
        ),
    }
}

#[test]
fn edge_cases_match_the_yaml_parser() {
    for (name, text) in [
        ("empty containers", r#"{"a": {}, "b": [], "c": [{}, []]}"#),
        (
            "scalars",
            r#"[true, false, null, 0, -1, 1.5, 2e10, -0.5E-3, "", "x"]"#,
        ),
        (
            "escapes",
            r#"{"a\"b": "tab\tnew\nline \u00e9 \ud83d\ude00 \/ \\"}"#,
        ),
        ("unicode", "{\"ké\": \"välue 😀\", \"b\": [\"ü\"]}"),
        (
            "pretty",
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {\n    \"c\": \"d\"\n  }\n}\n",
        ),
        (
            "crlf",
            "{\r\n  \"a\": 1,\r\n  \"b\": [\r\n    2\r\n  ]\r\n}\r\n",
        ),
        ("duplicates", r#"{"a": 1, "a": 2}"#),
        ("spaced colon", "{\"a\" : 1, \"b\"\n: [2 , 3 ] }"),
        (
            "minified",
            r#"{"openapi":"3.1.0","paths":{"/x":{"post":{"x-idempotency":{"window":"1m"}}}}}"#,
        ),
    ] {
        assert!(check(text, name), "{name} is JSON");
    }
    // Not strict JSON: left to the YAML parser.
    for text in [
        r#"{"a": 1,}"#,
        "{a: 1}",
        "[1] # c",
        r#"{"a": 01}"#,
        "{\"a\": \"x\ny\"}",
    ] {
        assert!(
            idemgen_spec::json_parse::parse(FileId(0), text).is_none(),
            "{text}"
        );
    }
}

/// Found by the `yaml_json` fuzz target: JSON forbids raw control
/// characters in strings, and the fast path took `"3.\x01\0"` as a string
/// the YAML parser refuses. Such text is the YAML parser's to accept or
/// refuse with its message.
#[test]
fn raw_control_characters_in_strings_are_left_to_the_yaml_parser() {
    for (name, text) in [
        ("SOH and NUL", "{\"openapi\": \"3.\u{1}\u{0}0\"}"),
        ("NUL", "[\"\u{0}\"]"),
        ("escape char", "{\"a\u{1b}\": 1}"),
        ("tab", "{\"a\": \"x\ty\"}"),
        ("after an escape", "[\"\\n\u{7}\"]"),
    ] {
        check(text, name);
        assert!(
            idemgen_spec::json_parse::parse(FileId(0), text).is_none(),
            "{name}: not JSON"
        );
    }
}

#[test]
fn every_json_spec_of_the_corpus_gets_the_same_tree() {
    let mut dirs = vec![workspace_root().join("tests/corpus/specs")];
    dirs.push(
        std::env::var_os("IDEMGEN_CORPUS")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace_root().join("../shared/corpus"))
            .join("specs"),
    );
    let mut checked = 0;
    let mut fast = 0;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            fast += usize::from(check(&text, &path.display().to_string()));
            checked += 1;
        }
    }
    assert!(checked > 0, "no JSON spec found");
    // Every JSON spec of the corpus is strict JSON.
    assert_eq!(fast, checked);
}

mod generated {
    use proptest::prelude::*;
    use serde_json::Value as Json;

    fn json() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            (-1e6f64..1e6).prop_map(Json::from),
            "[a-z \\\\\"é😀\\t\\n\u{1}/]{0,12}".prop_map(Json::String),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                prop::collection::vec(("[a-zé\\\\\" ]{0,6}", inner), 0..6)
                    .prop_map(|entries| Json::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Any JSON document, compact or pretty, gives the same tree both ways.
        #[test]
        fn any_json_gets_the_same_tree(value in json()) {
            let compact = serde_json::to_string(&value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            for text in [compact, pretty] {
                if matches!(value, Json::Object(_) | Json::Array(_)) {
                    prop_assert!(super::check(&text, "generated"), "{}", text);
                } else {
                    super::check(&text, "generated");
                }
            }
        }
    }
}

/// JSON's surrogate escapes, which YAML refuses, wherever they are: in
/// strict JSON (the fast path reads them), in JSON-looking YAML (read once
/// more with them rewritten), and outside any string of text that fools a
/// quote count, where the rewrite must not run: the `fix` fuzz target
/// found a key read as `"  /refunds"`, the rewrite's padding put inside it.
#[test]
fn surrogate_escapes_are_read_and_never_move_other_text() {
    let read = |text: &str| {
        idemgen_spec::parse_tree("a.json", text)
            .unwrap_or_else(|error| panic!("{text}: {}", error.message))
            .to_json()
    };
    assert_eq!(read(r#"{"x": "\ud83d\ude00", "y": 1}"#)["x"], "😀");
    assert_eq!(read(r#"{"x": "\ud800", "y": 1}"#)["x"], "\u{fffd}");
    // Not strict JSON (a trailing comma): YAML, with the pair rewritten.
    let trailing = read(r#"{"x": "\ud83d\ude00", "y": 1, }"#);
    assert_eq!((&trailing["x"], &trailing["y"]), (&"😀".into(), &1.into()));
    // A quote inside a plain scalar, then an escape outside any string.
    let fooled = read("{\"a\": b\", \"c\": x\\ud83d\\ude00, \"/refunds\": 1}");
    let keys: Vec<&String> = fooled.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["/refunds", "a", "c"], "{fooled}");
    assert_eq!(fooled["c"], "x\\ud83d\\ude00");
    // Two stray quotes turn the count around and back: the rewrite reached
    // a plain scalar (`c`) and padded a key (`d`) before it rewrote the
    // real string (`f`), and the text then loaded with a wrong key and
    // value. Such a text is refused with the YAML parser's own error.
    let text = r#"{"a": b", "c": x\ud83d\ude00, "d": e", "f": "\ud83d\ude00"}"#;
    assert!(
        idemgen_spec::parse_tree("a.json", text).is_err(),
        "{text} was read as {:?}",
        idemgen_spec::parse_tree("a.json", text).map(|root| root.to_json())
    );
}
