//! Turning operation and directory names into Rust identifiers, package
//! names and comment text that cannot break the generated code.

use std::collections::HashSet;
use std::path::Path;

/// Rust's strict and reserved keywords (2024 edition), plus the primitive
/// names that read badly as functions.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe",
    "use", "where", "while", "abstract", "become", "box", "do", "final", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield", "union",
];

/// Names the generated modules already use next to the operations'.
const RESERVED: &[&str] = &[
    "router", "all", "healthz", "metrics", "main", "lib", "tests",
];

/// `snake_case` words of `text`: camelCase and any non-alphanumeric run
/// split words, and an acronym is one word (`threeDSPaymentData` →
/// `three_ds_payment_data`); accented Latin letters lose their accents;
/// other non-ASCII letters become `uXXXX` so that distinct names stay
/// distinct.
pub fn snake_case(text: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut previous: Option<char> = None;
    let folded: Vec<Folded> = text.chars().map(fold).collect();
    for (index, c) in folded.iter().enumerate() {
        let next = match folded.get(index + 1) {
            Some(Folded::Ascii(next)) => Some(*next),
            _ => None,
        };
        match *c {
            Folded::Ascii(c) if c.is_ascii_alphanumeric() => {
                let boundary = match previous {
                    Some(p) => {
                        c.is_ascii_uppercase()
                            && (p.is_ascii_lowercase()
                                || p.is_ascii_digit()
                                // The last capital of an acronym starts the
                                // next word: `DSPayment` → `ds_payment`
                                // (one capital is no acronym: `ETag`).
                                || (p.is_ascii_uppercase()
                                    && word.len() > 1
                                    && next.is_some_and(|n| n.is_ascii_lowercase())))
                    }
                    None => false,
                };
                if boundary && !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                word.push(c.to_ascii_lowercase());
                previous = Some(c);
            }
            Folded::Other(code) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                words.push(format!("u{code:x}"));
                previous = None;
            }
            Folded::Ascii(_) | Folded::Skip => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                previous = None;
            }
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.join("_")
}

#[derive(Clone, Copy)]
enum Folded {
    Ascii(char),
    /// A letter or digit with no ASCII form: its code point.
    Other(u32),
    Skip,
}

fn fold(c: char) -> Folded {
    if c.is_ascii() {
        return Folded::Ascii(c);
    }
    const TABLE: &[(&str, char)] = &[
        ("àáâãäåāăą", 'a'),
        ("ÀÁÂÃÄÅĀĂĄ", 'A'),
        ("çćĉċč", 'c'),
        ("ÇĆĈĊČ", 'C'),
        ("ďđ", 'd'),
        ("ĎĐ", 'D'),
        ("èéêëēĕėęě", 'e'),
        ("ÈÉÊËĒĔĖĘĚ", 'E'),
        ("ìíîïĩīĭįı", 'i'),
        ("ÌÍÎÏĨĪĬĮİ", 'I'),
        ("ñńņňŉ", 'n'),
        ("ÑŃŅŇ", 'N'),
        ("òóôõöøōŏő", 'o'),
        ("ÒÓÔÕÖØŌŎŐ", 'O'),
        ("ùúûüũūŭůűų", 'u'),
        ("ÙÚÛÜŨŪŬŮŰŲ", 'U'),
        ("ýÿŷ", 'y'),
        ("ÝŸŶ", 'Y'),
        ("śŝşšß", 's'),
        ("ŚŜŞŠ", 'S'),
        ("źżž", 'z'),
        ("ŹŻŽ", 'Z'),
        ("ğĝġģ", 'g'),
        ("ĞĜĠĢ", 'G'),
        ("łĺļľŀ", 'l'),
        ("ŁĹĻĽĿ", 'L'),
        ("ŕŗř", 'r'),
        ("ŔŖŘ", 'R'),
        ("ţťŧ", 't'),
        ("ŢŤŦ", 'T'),
    ];
    for (from, to) in TABLE {
        if from.contains(c) {
            return Folded::Ascii(*to);
        }
    }
    if c.is_alphanumeric() {
        Folded::Other(c as u32)
    } else {
        Folded::Skip
    }
}

/// Gives each name a valid, unique snake_case identifier, in order:
/// keywords get a trailing `_`, a leading digit an `op_` prefix, an empty
/// name `operation`, and a name already taken `_2`, `_3`, ….
pub struct Identifiers {
    taken: HashSet<String>,
}

impl Default for Identifiers {
    fn default() -> Self {
        Identifiers {
            taken: RESERVED.iter().map(|name| name.to_string()).collect(),
        }
    }
}

/// The longest identifier generated code declares, suffixes included:
/// a name past it is cut at a word boundary.
pub const MAX_IDENTIFIER: usize = 60;

/// `name` cut at its last word boundary (a `_`, or a capital starting a
/// word) at or before `max` bytes; as is when it fits. ASCII only, as
/// every generated identifier is.
pub fn bounded(name: String, max: usize) -> String {
    if name.len() <= max || !name.is_ascii() {
        return name;
    }
    let bytes = name.as_bytes();
    let cut = (1..=max)
        .rev()
        .find(|&at| bytes[at] == b'_' || (bytes[at].is_ascii_uppercase() && at > 0))
        .unwrap_or(max);
    name[..cut].trim_end_matches('_').to_string()
}

impl Identifiers {
    pub fn assign(&mut self, name: &str) -> String {
        // Room for `_2` and for the `_PARAMS` of the statics named after it.
        let mut base = bounded(snake_case(name), MAX_IDENTIFIER - 10);
        if base.is_empty() {
            base = "operation".into();
        }
        if base.starts_with(|c: char| c.is_ascii_digit()) {
            base = format!("op_{base}");
        }
        if KEYWORDS.contains(&base.as_str()) || RESERVED.contains(&base.as_str()) {
            base.push('_');
        }
        let mut candidate = base.clone();
        let mut n = 2;
        while !self.taken.insert(candidate.clone()) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        candidate
    }
}

/// Text made safe for the inside of a `//` comment: one entry per line,
/// with control characters and bidirectional overrides removed (they
/// could end the comment or disguise the code around it).
pub fn comment_lines(text: &str) -> Vec<String> {
    text.replace("\r\n", "\n")
        .split([
            '\n', '\r', '\u{0b}', '\u{0c}', '\u{85}', '\u{2028}', '\u{2029}',
        ])
        .map(|line| {
            line.chars()
                .filter(|c| !c.is_control() && !is_bidi_control(*c))
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect()
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A Rust string literal holding `text` exactly.
pub fn rust_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || is_bidi_control(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Rust character literal holding `text`, one character.
pub fn rust_char(text: &str) -> String {
    let string = rust_string(text);
    format!("'{}'", string[1..string.len() - 1].replace('\'', "\\'"))
}

/// A Cargo package name from the directory name: lower-case letters,
/// digits, `-` and `_`, starting with a letter.
pub fn package_name(dir: &Path) -> String {
    let base = dir
        .canonicalize()
        .ok()
        .and_then(|dir| {
            dir.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .or_else(|| {
            dir.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let name = snake_case(&base).replace('_', "-");
    if name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name
    } else if name.is_empty() {
        "service".into()
    } else {
        format!("service-{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn character_literals_parse_back_to_their_character() {
        for c in ['-', '\'', '"', '\\', '\n', '支', '\u{202e}'] {
            let literal = rust_char(&c.to_string());
            let parsed: syn::LitChar = syn::parse_str(&literal).unwrap();
            assert_eq!(parsed.value(), c, "{literal}");
        }
    }

    #[test]
    fn hostile_names() {
        let mut ids = Identifiers::default();
        assert_eq!(ids.assign("onPayCallback"), "on_pay_callback");
        assert_eq!(ids.assign("on pay-callback!"), "on_pay_callback_2");
        assert_eq!(ids.assign("type"), "type_");
        assert_eq!(ids.assign("self"), "self_");
        assert_eq!(ids.assign("3dSecure"), "op_3d_secure");
        assert_eq!(ids.assign("créerPaiement"), "creer_paiement");
        assert_eq!(ids.assign("支付"), "u652f_u4ed8");
        assert_eq!(ids.assign("!!!"), "operation");
        assert_eq!(ids.assign(""), "operation_2");
        assert_eq!(ids.assign("router"), "router_");
        assert_eq!(ids.assign("HTTPServer"), "http_server");
        assert_eq!(
            ids.assign("getThreeDSRequestorInfo"),
            "get_three_ds_requestor_info"
        );
        let long = ids.assign(&"listEveryPaymentMethodOfTheMerchantAccount".repeat(3));
        assert!(
            long.len() <= 50 && long.starts_with("list_every_payment"),
            "{long}"
        );
    }

    #[test]
    fn comments_cannot_escape() {
        let lines = comment_lines("a\nb\r\nc\u{2028}d */ \u{202e}e");
        assert_eq!(lines, ["a", "b", "c", "d */ e"]);
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(rust_string("a\"b\\c\n"), r#""a\"b\\c\n""#);
    }
}
