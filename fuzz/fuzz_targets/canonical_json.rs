//! The canonical JSON behind request fingerprints, by an independent
//! property (no second canonicaliser keeps exact numbers): a body and any
//! re-spacing, member reordering, re-escaping of its strings or other
//! spelling of its numbers have the same canonical form; a change to any
//! one value gives another. The canonical form is its own canonical form
//! and is JSON.
#![no_main]

use arbitrary::Unstructured;
use idemgen_runtime::fuzzing::canonicalize;
use libfuzzer_sys::fuzz_target;

/// A JSON value with numbers kept as written (the canonical form's text).
#[derive(Clone, Debug)]
enum Json {
    Literal(&'static str),
    Number(String),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Reads canonical JSON: compact, strings escaped only where JCS escapes.
struct Reader<'t> {
    text: &'t str,
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> u8 {
        self.text.as_bytes()[self.at]
    }

    fn value(&mut self) -> Json {
        match self.peek() {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                while self.peek() != b'}' {
                    if self.peek() == b',' {
                        self.at += 1;
                    }
                    let name = self.string();
                    assert_eq!(self.peek(), b':');
                    self.at += 1;
                    members.push((name, self.value()));
                }
                self.at += 1;
                Json::Object(members)
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                while self.peek() != b']' {
                    if self.peek() == b',' {
                        self.at += 1;
                    }
                    items.push(self.value());
                }
                self.at += 1;
                Json::Array(items)
            }
            b'"' => Json::Str(self.string()),
            _ => {
                for literal in ["true", "false", "null"] {
                    if self.text[self.at..].starts_with(literal) {
                        self.at += literal.len();
                        return Json::Literal(literal);
                    }
                }
                let start = self.at;
                while self.at < self.text.len() && b"-+.eE0123456789".contains(&self.peek()) {
                    self.at += 1;
                }
                Json::Number(self.text[start..self.at].to_string())
            }
        }
    }

    fn string(&mut self) -> String {
        let value: String = serde_json::Deserializer::from_str(&self.text[self.at..])
            .into_iter::<String>()
            .next()
            .expect("a string")
            .expect("canonical strings are JSON strings");
        // Skip the string's text: the shortest prefix that reads back as it.
        let rest = &self.text[self.at + 1..];
        let mut escaped = false;
        for (offset, c) in rest.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '"' if !escaped => {
                    self.at += 1 + offset + 1;
                    return value;
                }
                _ => escaped = false,
            }
        }
        panic!("an unterminated string in canonical output");
    }
}

/// Another spelling of the same number: exponent, trailing zeros.
fn respell(number: &str, choice: u8) -> String {
    let (mantissa, exponent) = match number.split_once('e') {
        Some((mantissa, exponent)) => (mantissa, exponent.parse::<i64>().expect("an exponent")),
        None => (number, 0),
    };
    let integer = !mantissa.contains('.');
    match choice % 4 {
        1 => format!("{mantissa}E{exponent:+}"),
        2 if integer => format!("{mantissa}.000e{exponent}"),
        2 => format!("{mantissa}00e{exponent}"),
        3 if integer && mantissa.trim_start_matches('-') != "0" => {
            format!("{mantissa}0e{}", exponent - 1)
        }
        _ => number.to_string(),
    }
}

/// Gives the `n`th scalar (in document order) another value; `false`
/// while fewer than `n + 1` scalars have been passed.
fn change(value: &mut Json, n: &mut usize) -> bool {
    match value {
        Json::Array(items) => items.iter_mut().any(|item| change(item, n)),
        Json::Object(members) => members.iter_mut().any(|(_, value)| change(value, n)),
        _ if *n > 0 => {
            *n -= 1;
            false
        }
        Json::Literal(literal) => {
            *literal = match *literal {
                "true" => "false",
                "false" => "null",
                _ => "true",
            };
            true
        }
        Json::Number(number) => {
            *number = match number.strip_prefix('-') {
                Some(positive) => positive.to_string(),
                None if number == "0" => "1".to_string(),
                None => format!("-{number}"),
            };
            true
        }
        Json::Str(text) => {
            text.push('x');
            true
        }
    }
}

/// Writes `value` back with arbitrary spacing, member order, escapes and
/// number spellings.
fn write(value: &Json, u: &mut Unstructured<'_>, out: &mut String) {
    let space = |u: &mut Unstructured<'_>, out: &mut String| {
        for _ in 0..u.int_in_range(0..=2).unwrap_or(0) {
            out.push(*u.choose(&[' ', '\n', '\t', '\r']).unwrap_or(&' '));
        }
    };
    space(u, out);
    match value {
        Json::Literal(literal) => out.push_str(literal),
        Json::Number(number) => out.push_str(&respell(number, u.arbitrary().unwrap_or(0))),
        Json::Str(text) => {
            out.push('"');
            for c in text.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 || u.ratio(1, 8).unwrap_or(false) => {
                        let mut units = [0u16; 2];
                        for unit in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Json::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, u, out);
                space(u, out);
            }
            out.push(']');
        }
        Json::Object(members) => {
            let mut order: Vec<&(String, Json)> = members.iter().collect();
            if u.ratio(1, 2).unwrap_or(false) {
                order.reverse();
            } else if order.len() > 1 {
                let at = u.choose_index(order.len()).unwrap_or(0);
                order.rotate_left(at);
            }
            out.push('{');
            for (position, (name, member)) in order.into_iter().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                write(&Json::Str(name.clone()), u, out);
                space(u, out);
                out.push(':');
                write(member, u, out);
                space(u, out);
            }
            out.push('}');
        }
    }
}

/// Scalars in a value.
fn count(value: &Json) -> usize {
    match value {
        Json::Array(items) => items.iter().map(count).sum(),
        Json::Object(members) => members.iter().map(|(_, value)| count(value)).sum(),
        _ => 1,
    }
}

fuzz_target!(|bytes: &[u8]| {
    let split = bytes
        .iter()
        .position(|byte| *byte == 0xFF)
        .unwrap_or(bytes.len());
    let Ok(canonical) = canonicalize(&bytes[..split]) else {
        return;
    };
    let text = std::str::from_utf8(&canonical).expect("canonical JSON is UTF-8");
    assert_eq!(
        canonicalize(&canonical).as_deref(),
        Ok(&canonical[..]),
        "the canonical form {text:?} is not its own canonical form"
    );
    let mut reader = Reader { text, at: 0 };
    let value = reader.value();
    assert_eq!(
        reader.at,
        text.len(),
        "trailing text in the canonical form {text:?}"
    );

    let mut u = Unstructured::new(bytes.get(split + 1..).unwrap_or_default());
    let mut same = String::new();
    write(&value, &mut u, &mut same);
    assert_eq!(
        canonicalize(same.as_bytes()).as_deref(),
        Ok(&canonical[..]),
        "{same:?} says what {text:?} says, but canonicalises otherwise"
    );
    if count(&value) == 0 {
        return;
    }
    let Ok(which) = u.int_in_range(0..=count(&value) - 1) else {
        return;
    };
    let mut other = value.clone();
    assert!(
        change(&mut other, &mut { which }),
        "no scalar {which} in {text:?}"
    );
    let mut changed = String::new();
    write(&other, &mut u, &mut changed);
    if let Ok(other) = canonicalize(changed.as_bytes()) {
        assert_ne!(
            other, canonical,
            "{changed:?} changes a value of {text:?} yet canonicalises alike"
        );
    }
});
