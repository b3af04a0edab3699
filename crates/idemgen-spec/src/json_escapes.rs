//! JSON allows `\uD83D\uDE00` (a UTF-16 surrogate pair) inside strings;
//! YAML, whose parser we use for JSON too, does not. This rewrites each
//! pair as YAML's 32-bit escape `\U0001F600`, and a lone surrogate as
//! `\uFFFD`, keeping every position the parser reports unchanged: the two
//! characters a pair loses are re-added as spaces after the string's
//! closing quote, where JSON ignores them. Strings are told apart by
//! counting quotes, so the loader rewrites only text that the YAML parser
//! refuses as it is (strict JSON never gets here: the fast path reads the
//! escapes itself).

/// Whether the text starts like a JSON document: `{` or `[` after JSON's
/// whitespace only. Other characters Rust calls whitespace (a form feed,
/// U+0085) are text to YAML, where `\f{"a": 1}: b` is a block mapping
/// whose first key starts with the form feed.
pub fn looks_like_json(text: &str) -> bool {
    text.trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with(['{', '['])
}

/// The text with surrogate escapes rewritten, or `None` when it has none.
pub fn rewrite_surrogates(text: &str) -> Option<String> {
    if !has_surrogate_escape(text) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    let mut in_string = false;
    let mut pending_padding = 0;
    let mut copied_from = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => {
                in_string = !in_string;
                index += 1;
                if !in_string && pending_padding > 0 {
                    out.push_str(&text[copied_from..index]);
                    out.extend(std::iter::repeat_n(' ', pending_padding));
                    pending_padding = 0;
                    copied_from = index;
                }
            }
            b'\\' if in_string => {
                let high = escape_value(bytes, index);
                match high {
                    Some(high @ 0xD800..=0xDBFF) => {
                        out.push_str(&text[copied_from..index]);
                        match escape_value(bytes, index + 6) {
                            Some(low @ 0xDC00..=0xDFFF) => {
                                let scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                                out.push_str(&format!("\\U{scalar:08X}"));
                                pending_padding += 2;
                                index += 12;
                            }
                            _ => {
                                out.push_str("\\uFFFD");
                                index += 6;
                            }
                        }
                        copied_from = index;
                    }
                    Some(0xDC00..=0xDFFF) => {
                        out.push_str(&text[copied_from..index]);
                        out.push_str("\\uFFFD");
                        index += 6;
                        copied_from = index;
                    }
                    // Any other escape: skip it whole so `\\` and `\"` are
                    // not mistaken for the start of another escape or quote.
                    _ => index += 2,
                }
            }
            _ => index += 1,
        }
    }
    out.push_str(&text[copied_from.min(text.len())..]);
    Some(out)
}

fn has_surrogate_escape(text: &str) -> bool {
    text.as_bytes()
        .windows(3)
        .any(|window| window[0] == b'\\' && window[1] == b'u' && matches!(window[2], b'd' | b'D'))
}

/// The value of a `\uXXXX` escape starting at `index`.
fn escape_value(bytes: &[u8], index: usize) -> Option<u32> {
    let escape = bytes.get(index..index + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(&escape[2..]).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_whitespace_may_come_before_a_json_document() {
        assert!(looks_like_json(" \t\r\n{\"a\": 1}"));
        assert!(looks_like_json("[1]"));
        assert!(!looks_like_json("\u{c}{\"a\": 1}: b"));
        assert!(!looks_like_json("\u{85}[1]"));
        assert!(!looks_like_json("# c\n{}"));
    }

    #[test]
    fn pairs_become_32_bit_escapes_with_padding() {
        let text = r#"{"a": "x\uD83D\uDE00y", "b": 1}"#;
        let rewritten = rewrite_surrogates(text).unwrap();
        assert_eq!(rewritten, r#"{"a": "x\U0001F600y"  , "b": 1}"#);
        assert_eq!(rewritten.len(), text.len());
    }

    #[test]
    fn lone_surrogates_and_escaped_backslashes() {
        assert_eq!(
            rewrite_surrogates(r#"["\uD800"]"#).unwrap(),
            r#"["\uFFFD"]"#
        );
        let text = r#"["\\uD83D", "\uDE00"]"#;
        assert_eq!(
            rewrite_surrogates(text).unwrap(),
            r#"["\\uD83D", "\uFFFD"]"#
        );
        assert_eq!(rewrite_surrogates(r#"{"a": "plain"}"#), None);
    }
}
