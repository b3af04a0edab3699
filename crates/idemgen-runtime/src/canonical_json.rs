//! Canonical JSON for request fingerprints: RFC 8785 (JCS) with exact
//! numbers.
//!
//! Two bodies that mean the same JSON value must fingerprint alike, and two
//! that differ must not. JCS gets the first half right for strings, objects
//! and whitespace (members sorted by UTF-16 code units, one escaping of
//! strings, no insignificant whitespace), but it reads numbers as IEEE
//! doubles, so `18446744073709551616` and `18446744073709551617` become the
//! same text and a different payment would replay the first one's answer.
//! Here a number keeps its exact decimal value: `1`, `1.0`, `1e0` and
//! `10E-1` are all written `1`, and distinct values are never merged. The
//! layout of a number is JCS's (ECMAScript's `Number.prototype.toString`
//! applied to the exact digits), so for every number a double holds exactly
//! in its shortest form the output is byte-for-byte JCS.
//!
//! Input JCS cannot canonicalise is refused rather than guessed at: invalid
//! UTF-8, lone surrogate escapes, and duplicate member names (a JSON parser
//! keeps one of them, but which one differs between parsers, so the same
//! bytes could mean two requests).

use std::fmt;

/// Nesting deeper than this is refused (the parser recurses).
pub(crate) const MAX_DEPTH: usize = 128;

/// Numbers whose exponent (in scientific notation, `1.5e+9` → 9) is beyond
/// this are refused: such numbers are not payments. The bound is on the
/// value, not on the exponent as written, so every spelling of one value
/// is refused or accepted alike and a canonical form reads back as itself.
const MAX_EXPONENT: i64 = 1_000_000_000;

/// Exponents as written beyond this are refused while reading, which keeps
/// the arithmetic exact; a body is too short for digits to bring such an
/// exponent back within [`MAX_EXPONENT`].
const MAX_WRITTEN_EXPONENT: i64 = 2 * MAX_EXPONENT;

/// Why a body has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CanonicalJsonError {
    /// Byte offset into the body.
    pub offset: usize,
    pub reason: Reason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Not JSON at all: what was expected there.
    Syntax(&'static str),
    /// An object names the same member twice.
    DuplicateMember(String),
    /// A `\uD800`-style escape without its other half.
    LoneSurrogate,
    TooDeep,
    ExponentTooLarge,
}

impl fmt::Display for CanonicalJsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            Reason::Syntax(expected) => {
                write!(
                    f,
                    "invalid JSON at byte {}: expected {expected}",
                    self.offset
                )
            }
            Reason::DuplicateMember(name) => write!(
                f,
                "the member {name:?} appears twice in one object (byte {})",
                self.offset
            ),
            Reason::LoneSurrogate => write!(
                f,
                "a \\u escape at byte {} is half of a surrogate pair",
                self.offset
            ),
            Reason::TooDeep => write!(
                f,
                "nesting deeper than {MAX_DEPTH} levels at byte {}",
                self.offset
            ),
            Reason::ExponentTooLarge => {
                write!(
                    f,
                    "a number's exponent is out of range at byte {}",
                    self.offset
                )
            }
        }
    }
}

impl std::error::Error for CanonicalJsonError {}

/// The canonical form of the JSON text `body`: `{ "b": 1.0, "a": [1e2,
/// "\u00e9"] }` is `{"a":[100,"é"],"b":1}`; `{"a":1,"a":2}` is refused.
pub(crate) fn canonicalize(body: &[u8]) -> Result<Vec<u8>, CanonicalJsonError> {
    let mut parser = Parser {
        input: body,
        at: 0,
        depth: 0,
    };
    let mut out = Vec::with_capacity(body.len());
    parser.skip_whitespace();
    parser.value(&mut out)?;
    parser.skip_whitespace();
    if parser.at != body.len() {
        return Err(parser.error(Reason::Syntax("the end of the body")));
    }
    Ok(out)
}

struct Parser<'a> {
    input: &'a [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, reason: Reason) -> CanonicalJsonError {
        CanonicalJsonError {
            offset: self.at,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8, what: &'static str) -> Result<(), CanonicalJsonError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(Reason::Syntax(what)))
        }
    }

    fn value(&mut self, out: &mut Vec<u8>) -> Result<(), CanonicalJsonError> {
        match self.peek() {
            Some(b'{') => self.nested(out, Self::object),
            Some(b'[') => self.nested(out, Self::array),
            Some(b'"') => {
                let text = self.string()?;
                write_string(&text, out);
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => self.number(out),
            Some(b't') => self.literal(b"true", out),
            Some(b'f') => self.literal(b"false", out),
            Some(b'n') => self.literal(b"null", out),
            _ => Err(self.error(Reason::Syntax("a JSON value"))),
        }
    }

    fn nested(
        &mut self,
        out: &mut Vec<u8>,
        parse: fn(&mut Self, &mut Vec<u8>) -> Result<(), CanonicalJsonError>,
    ) -> Result<(), CanonicalJsonError> {
        if self.depth == MAX_DEPTH {
            return Err(self.error(Reason::TooDeep));
        }
        self.depth += 1;
        let result = parse(self, out);
        self.depth -= 1;
        result
    }

    fn literal(
        &mut self,
        word: &'static [u8],
        out: &mut Vec<u8>,
    ) -> Result<(), CanonicalJsonError> {
        if self.input[self.at..].starts_with(word) {
            self.at += word.len();
            out.extend_from_slice(word);
            Ok(())
        } else {
            Err(self.error(Reason::Syntax("true, false or null")))
        }
    }

    fn object(&mut self, out: &mut Vec<u8>) -> Result<(), CanonicalJsonError> {
        self.at += 1; // {
        let mut members: Vec<(Vec<u16>, String, Vec<u8>, usize)> = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                self.skip_whitespace();
                if self.peek() != Some(b'"') {
                    return Err(self.error(Reason::Syntax("a member name in quotes")));
                }
                let name_at = self.at;
                let name = self.string()?;
                self.skip_whitespace();
                self.expect(b':', "':' after a member name")?;
                self.skip_whitespace();
                let mut value = Vec::new();
                self.value(&mut value)?;
                members.push((name.encode_utf16().collect(), name, value, name_at));
                self.skip_whitespace();
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(self.error(Reason::Syntax("',' or '}'"))),
                }
            }
        }
        // JCS orders members by the UTF-16 code units of their names.
        members.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(pair) = members.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            let later = pair[0].3.max(pair[1].3);
            return Err(CanonicalJsonError {
                offset: later,
                reason: Reason::DuplicateMember(pair[0].1.clone()),
            });
        }
        out.push(b'{');
        for (i, (_, name, value, _)) in members.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_string(name, out);
            out.push(b':');
            out.extend_from_slice(value);
        }
        out.push(b'}');
        Ok(())
    }

    fn array(&mut self, out: &mut Vec<u8>) -> Result<(), CanonicalJsonError> {
        self.at += 1; // [
        out.push(b'[');
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.at += 1;
            out.push(b']');
            return Ok(());
        }
        loop {
            self.skip_whitespace();
            self.value(out)?;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    out.push(b',');
                }
                Some(b']') => {
                    self.at += 1;
                    out.push(b']');
                    return Ok(());
                }
                _ => return Err(self.error(Reason::Syntax("',' or ']'"))),
            }
        }
    }

    /// A string token, unescaped.
    fn string(&mut self) -> Result<String, CanonicalJsonError> {
        self.at += 1; // "
        let mut text = String::new();
        loop {
            let start = self.at;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.at += 1;
            }
            let run = std::str::from_utf8(&self.input[start..self.at]).map_err(|error| {
                CanonicalJsonError {
                    offset: start + error.valid_up_to(),
                    reason: Reason::Syntax("UTF-8 text"),
                }
            })?;
            text.push_str(run);
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(text);
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(&mut text)?;
                }
                Some(_) => {
                    return Err(self.error(Reason::Syntax("an escaped control character")));
                }
                None => return Err(self.error(Reason::Syntax("the closing '\"'"))),
            }
        }
    }

    fn escape(&mut self, text: &mut String) -> Result<(), CanonicalJsonError> {
        let simple = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let escape_at = self.at - 1;
                self.at += 1;
                let unit = self.hex4()?;
                let code = match unit {
                    0xD800..=0xDBFF => {
                        if !self.input[self.at..].starts_with(b"\\u") {
                            return Err(CanonicalJsonError {
                                offset: escape_at,
                                reason: Reason::LoneSurrogate,
                            });
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(CanonicalJsonError {
                                offset: escape_at,
                                reason: Reason::LoneSurrogate,
                            });
                        }
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
                    }
                    0xDC00..=0xDFFF => {
                        return Err(CanonicalJsonError {
                            offset: escape_at,
                            reason: Reason::LoneSurrogate,
                        });
                    }
                    unit => u32::from(unit),
                };
                text.push(char::from_u32(code).expect("surrogates are excluded above"));
                return Ok(());
            }
            _ => return Err(self.error(Reason::Syntax("a valid escape"))),
        };
        self.at += 1;
        text.push(simple);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, CanonicalJsonError> {
        let digits = self
            .input
            .get(self.at..self.at + 4)
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| {
                u16::from_str_radix(digits, 16)
                    .ok()
                    .filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))
            })
            .ok_or_else(|| self.error(Reason::Syntax("four hex digits")))?;
        self.at += 4;
        Ok(digits)
    }

    fn digits(&mut self) -> &[u8] {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        &self.input[start..self.at]
    }

    /// A number, written by its exact decimal value.
    fn number(&mut self, out: &mut Vec<u8>) -> Result<(), CanonicalJsonError> {
        let start = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let integer = self.digits().to_vec();
        if integer.is_empty() || (integer.len() > 1 && integer[0] == b'0') {
            return Err(self.error(Reason::Syntax("a number without leading zeros")));
        }
        let mut fraction = Vec::new();
        if self.peek() == Some(b'.') {
            self.at += 1;
            fraction = self.digits().to_vec();
            if fraction.is_empty() {
                return Err(self.error(Reason::Syntax("digits after '.'")));
            }
        }
        let mut exponent: i64 = 0;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let sign = match self.peek() {
                Some(b'-') => {
                    self.at += 1;
                    -1
                }
                Some(b'+') => {
                    self.at += 1;
                    1
                }
                _ => 1,
            };
            let digits_at = self.at;
            let digits = self.digits();
            if digits.is_empty() {
                return Err(self.error(Reason::Syntax("digits in the exponent")));
            }
            for &digit in digits {
                exponent = exponent * 10 + i64::from(digit - b'0');
                if exponent > MAX_WRITTEN_EXPONENT {
                    return Err(CanonicalJsonError {
                        offset: digits_at,
                        reason: Reason::ExponentTooLarge,
                    });
                }
            }
            exponent *= sign;
        }
        // value = digits × 10^exponent, with the fraction folded in.
        let mut digits = integer;
        digits.extend_from_slice(&fraction);
        exponent -= fraction.len() as i64;
        let first = digits.iter().position(|&d| d != b'0');
        let Some(first) = first else {
            out.push(b'0'); // 0, -0, 0.000e5: all zero (JCS writes -0 as 0)
            return Ok(());
        };
        let last = digits
            .iter()
            .rposition(|&d| d != b'0')
            .expect("a non-zero digit");
        exponent += (digits.len() - 1 - last) as i64;
        let significant = &digits[first..=last];
        let scientific = exponent + significant.len() as i64 - 1;
        if scientific.abs() > MAX_EXPONENT {
            return Err(CanonicalJsonError {
                offset: start,
                reason: Reason::ExponentTooLarge,
            });
        }
        if negative {
            out.push(b'-');
        }
        write_number(significant, exponent, out);
        Ok(())
    }
}

/// ECMAScript's Number::toString layout for `digits × 10^exponent`, where
/// `digits` has no leading or trailing zeros.
fn write_number(digits: &[u8], exponent: i64, out: &mut Vec<u8>) {
    let k = digits.len() as i64;
    // The position of the decimal point relative to the first digit.
    let n = exponent + k;
    if k <= n && n <= 21 {
        out.extend_from_slice(digits);
        out.extend(std::iter::repeat_n(b'0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (whole, part) = digits.split_at(n as usize);
        out.extend_from_slice(whole);
        out.push(b'.');
        out.extend_from_slice(part);
    } else if -6 < n && n <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-n) as usize));
        out.extend_from_slice(digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if n - 1 < 0 { b'-' } else { b'+' });
        out.extend_from_slice((n - 1).unsigned_abs().to_string().as_bytes());
    }
}

/// A string as JCS writes it: only `"`, `\` and control characters escaped.
fn write_string(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for ch in text.chars() {
        match ch {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\r' => out.extend_from_slice(b"\\r"),
            ch if (ch as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", ch as u32).as_bytes());
            }
            ch => {
                let mut buffer = [0; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        String::from_utf8(canonicalize(text.as_bytes()).unwrap()).unwrap()
    }

    fn reason(text: &[u8]) -> Reason {
        canonicalize(text).unwrap_err().reason
    }

    #[test]
    fn members_are_sorted_numbers_exact_and_duplicates_refused() {
        assert_eq!(
            canon(r#"{ "b": 1.0, "a": [1e2, "\u00e9"] }"#),
            r#"{"a":[100,"é"],"b":1}"#
        );
        assert!(canonicalize(br#"{"a":1,"a":2}"#).is_err());
    }

    /// Numbers against ECMAScript, the layout RFC 8785 (JCS) prescribes:
    /// `tests/data/jcs-numbers.txt` holds doubles written by
    /// `toExponential()` and by `JSON.stringify` in Node.js (made by
    /// `scripts/jcs-numbers.js`).
    #[test]
    fn numbers_match_ecmascript() {
        let vectors = include_str!("../tests/data/jcs-numbers.txt");
        let mut checked = 0;
        for line in vectors.lines() {
            let (input, expected) = line.split_once(' ').expect("two columns");
            assert_eq!(canon(input), expected, "{input}");
            checked += 1;
        }
        assert!(checked > 1000, "only {checked} vectors");
    }

    #[test]
    fn equal_numbers_are_written_alike() {
        for text in ["1", "1.0", "1e0", "10E-1", "0.1e1", "1.000", "100e-2"] {
            assert_eq!(canon(text), "1", "{text}");
        }
        for text in ["0", "-0", "0.0", "0e10", "-0.000e-3"] {
            assert_eq!(canon(text), "0", "{text}");
        }
        assert_eq!(canon("1500"), canon("1.5e3"));
        assert_eq!(canon("-2.50"), "-2.5");
    }

    #[test]
    fn distinct_numbers_never_collide() {
        assert_eq!(canon("18446744073709551616"), "18446744073709551616");
        assert_ne!(canon("18446744073709551616"), canon("18446744073709551617"));
        assert_ne!(canon("0.1"), canon("0.1000000000000000055511151231257827"));
        assert_ne!(canon("9007199254740993"), canon("9007199254740992"));
    }

    /// The examples of RFC 8785 appendix B whose input digits are the
    /// double's shortest form: exact numbers give JCS's bytes.
    #[test]
    fn numbers_use_the_ecmascript_layout() {
        let cases = [
            ("1e+30", "1e+30"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000000000000000000000000001", "1e-27"),
            ("333333333.33333329", "333333333.33333329"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345678901", "123456789012345678901"),
            ("0.000001", "0.000001"),
            ("0.0000001", "1e-7"),
            ("-1.5e-7", "-1.5e-7"),
            ("295147905179352830000", "295147905179352830000"),
            ("5e-324", "5e-324"),
        ];
        for (input, expected) in cases {
            assert_eq!(canon(input), expected, "{input}");
        }
    }

    #[test]
    fn objects_are_sorted_by_utf16_code_units() {
        // RFC 8785 §3.2.3: "\u20ac" (€, 0x20AC) sorts before "\ud83d\ude00"
        // (😀, 0xD83D ...) although its UTF-8 and code point order differ.
        let text = r#"{"\ud83d\ude00":1,"\u20ac":2,"\r":3,"1":4,"\u0080":5,"\u00f6":6,"a":7}"#;
        assert_eq!(
            canon(text),
            "{\"\\r\":3,\"1\":4,\"a\":7,\"\u{80}\":5,\"ö\":6,\"€\":2,\"😀\":1}"
        );
    }

    #[test]
    fn whitespace_and_escapes_are_normalised() {
        assert_eq!(
            canon(" { \"a\" : [ 1 , \"\\u0041\\/\\u001f\\t\" ] } "),
            r#"{"a":[1,"A/\u001f\t"]}"#
        );
        assert_eq!(canon(r#""\"\\""#), r#""\"\\""#);
        assert_eq!(canon("[true,false,null,[],{}]"), "[true,false,null,[],{}]");
    }

    #[test]
    fn duplicate_members_are_refused() {
        assert_eq!(
            reason(br#"{"a":1,"b":2,"a":3}"#),
            Reason::DuplicateMember("a".into())
        );
        // The same name spelled two ways is still the same name.
        assert_eq!(
            reason(br#"{"a":1,"\u0061":2}"#),
            Reason::DuplicateMember("a".into())
        );
        assert!(canonicalize(br#"{"a":{"a":1},"b":{"a":2}}"#).is_ok());
    }

    #[test]
    fn what_is_not_canonicalisable_is_refused() {
        assert_eq!(reason(br#""\ud800""#), Reason::LoneSurrogate);
        assert_eq!(reason(br#""\udc00\ud800""#), Reason::LoneSurrogate);
        assert!(matches!(reason(b"\"\xff\""), Reason::Syntax(_)));
        assert!(matches!(reason(b"\"a\nb\""), Reason::Syntax(_)));
        for bad in [
            "", "01", "1.", ".5", "-", "1e", "[1,]", "{\"a\"}", "{} x", "tru", "NaN",
        ] {
            assert!(
                matches!(reason(bad.as_bytes()), Reason::Syntax(_)),
                "{bad:?}"
            );
        }
        assert_eq!(reason(b"1e9999999999"), Reason::ExponentTooLarge);
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(reason(deep.as_bytes()), Reason::TooDeep);
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(canonicalize(fine.as_bytes()).is_ok());
    }

    #[test]
    fn error_names_the_byte() {
        let error = canonicalize(br#"{"a":1,"a":2}"#).unwrap_err();
        assert_eq!(error.offset, 7);
        assert!(error.to_string().contains("appears twice"), "{error}");
    }

    /// What serde_json writes for any finite double canonicalises to the
    /// same bytes as JCS would (shortest round-trip digits).
    #[test]
    fn agrees_with_shortest_double_formatting() {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = f64::from_bits(state);
            if !value.is_finite() {
                continue;
            }
            let written = serde_json::to_string(&value).unwrap();
            let ours = canon(&written);
            // Both sides are the exact shortest digits; the layouts must
            // agree with each other when read back as doubles.
            let back: f64 = ours.parse().unwrap();
            assert_eq!(back, value, "{written} -> {ours}");
            assert_eq!(canon(&ours), ours, "idempotent for {written}");
        }
    }
}
