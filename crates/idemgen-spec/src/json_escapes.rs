//! JSON allows `\uD83D\uDE00` (a UTF-16 surrogate pair) inside strings;
//! YAML, whose parser we use for JSON too, does not. This rewrites each
//! pair as YAML's 32-bit escape `\U0001F600`, and a lone surrogate as
//! `\uFFFD`, keeping every position the parser reports unchanged: the two
//! characters a pair loses are re-added as spaces after the string's
//! closing quote, where JSON ignores them. Strings are told apart by
//! counting quotes, so the loader rewrites only text that the YAML parser
//! refuses as it is (strict JSON never gets here: the fast path reads the
//! escapes itself), and keeps what it reads only when every rewritten
//! escape is inside a double-quoted string of the tree read
//! ([`Rewritten::only_in_strings`]): a quote in a plain scalar turns the
//! count around.

use crate::node::{Node, Value};
use crate::quoted::quoted_scalar_end;

/// Whether the text starts like a JSON document: `{` or `[` after JSON's
/// whitespace only. Other characters Rust calls whitespace (a form feed,
/// U+0085) are text to YAML, where `\f{"a": 1}: b` is a block mapping
/// whose first key starts with the form feed.
pub fn looks_like_json(text: &str) -> bool {
    text.trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with(['{', '['])
}

/// A text with its surrogate escapes rewritten.
pub struct Rewritten {
    pub text: String,
    /// Where each rewritten escape starts, in bytes (the same in the text
    /// before and after).
    escapes: Vec<usize>,
}

impl std::ops::Deref for Rewritten {
    type Target = str;

    fn deref(&self) -> &str {
        &self.text
    }
}

impl Rewritten {
    /// Whether every rewritten escape is inside a double-quoted scalar (a
    /// value or a key) of `root`, the tree read from [`Rewritten::text`].
    /// When the quote count was fooled, one is not: it was in a plain
    /// scalar, whose text the rewrite changed, or outside any scalar.
    pub fn only_in_strings(&self, root: &Node) -> bool {
        let mut starts = Vec::new();
        collect_string_starts(root, &mut starts);
        starts.sort_unstable();
        starts.dedup();
        // Character indices to byte offsets, in one walk of the text.
        let mut bytes_at = Vec::with_capacity(starts.len());
        let mut wanted = starts.iter().peekable();
        for (char_index, (byte, _)) in self.text.char_indices().enumerate() {
            while wanted
                .next_if(|&&start| start as usize == char_index)
                .is_some()
            {
                bytes_at.push(byte);
            }
            if wanted.peek().is_none() {
                break;
            }
        }
        let strings: Vec<(usize, usize)> = bytes_at
            .into_iter()
            .filter(|&start| self.text.as_bytes().get(start) == Some(&b'"'))
            .filter_map(|start| Some((start, quoted_scalar_end(&self.text, start)?)))
            .collect();
        self.escapes.iter().all(|&escape| {
            let after = strings.partition_point(|&(start, _)| start < escape);
            after > 0 && escape < strings[after - 1].1
        })
    }
}

/// The character index of every string scalar and every key.
fn collect_string_starts(node: &Node, starts: &mut Vec<u32>) {
    match &node.value {
        Value::Str(_) => starts.push(node.span.start),
        Value::Map(entries) => {
            for entry in entries {
                starts.push(entry.key_span.start);
                collect_string_starts(&entry.value, starts);
            }
        }
        Value::Seq(items) => {
            for item in items {
                collect_string_starts(item, starts);
            }
        }
        _ => {}
    }
}

/// The text with surrogate escapes rewritten, or `None` when it has none.
pub fn rewrite_surrogates(text: &str) -> Option<Rewritten> {
    if !has_surrogate_escape(text) {
        return None;
    }
    let bytes = text.as_bytes();
    let mut escapes = Vec::new();
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
                        escapes.push(index);
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
                        escapes.push(index);
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
    Some(Rewritten { text: out, escapes })
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
        let rewritten = rewrite_surrogates(text).unwrap().text;
        assert_eq!(rewritten, r#"{"a": "x\U0001F600y"  , "b": 1}"#);
        assert_eq!(rewritten.len(), text.len());
    }

    #[test]
    fn lone_surrogates_and_escaped_backslashes() {
        assert_eq!(
            rewrite_surrogates(r#"["\uD800"]"#).unwrap().text,
            r#"["\uFFFD"]"#
        );
        let text = r#"["\\uD83D", "\uDE00"]"#;
        assert_eq!(
            rewrite_surrogates(text).unwrap().text,
            r#"["\\uD83D", "\uFFFD"]"#
        );
        assert!(rewrite_surrogates(r#"{"a": "plain"}"#).is_none());
    }
}
