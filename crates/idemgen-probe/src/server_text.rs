//! Text the service chose (bodies, header values, its transport errors),
//! made safe to print: the probe talks to servers it does not control, and
//! their bytes reach terminals, CI logs and XML. Every piece of server text
//! goes through [`printable`] before a report shows it.

/// Characters a body excerpt keeps.
pub const BODY_CHARS: usize = 160;
/// Characters a header value keeps (a `Retry-After`, a `Content-Type`).
pub const HEADER_CHARS: usize = 80;
/// Marks where [`printable`] cut the text; [`crate::principal::redact`]
/// also looks for a credential's beginning right before it.
pub const CUT: char = '…';

/// `text` on one line, at most `max_chars` characters plus [`CUT`] when it
/// was longer, with what could act on a terminal or hide text replaced:
/// control characters (C0, DEL, C1; line breaks and tabs among them) and
/// the line and paragraph separators become a space, so the text stays one
/// line; format characters (bidi overrides and isolates, zero-width ones,
/// the byte-order mark…) and noncharacters (U+FFFE, U+FFFF, U+FDD0–U+FDEF…)
/// become `�`, so the reader sees something invisible was there. What comes
/// out is also valid in XML 1.0.
pub fn printable(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)) + 3);
    for (count, c) in text.chars().enumerate() {
        if count == max_chars {
            out.push(CUT);
            break;
        }
        out.push(match c {
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => ' ',
            c if is_format(c) || is_noncharacter(c) => '\u{FFFD}',
            c => c,
        });
    }
    out
}

/// Unicode's noncharacters: U+FDD0–U+FDEF and the last two code points of
/// every plane.
fn is_noncharacter(c: char) -> bool {
    let code = c as u32;
    (0xFDD0..=0xFDEF).contains(&code) || code & 0xFFFE == 0xFFFE
}

/// General category Cf (format), as of Unicode 15.1: invisible characters
/// that change how the text around them shows.
fn is_format(c: char) -> bool {
    const FORMAT: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let code = c as u32;
    FORMAT
        .iter()
        .any(|&(first, last)| (first..=last).contains(&code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_spaces_and_invisible_characters_show() {
        assert_eq!(
            printable("a\u{1b}[31mb\r\nc\u{7f}d\u{9b}31me\u{2028}f", 100),
            "a [31mb  c d 31me f"
        );
        for invisible in [
            '\u{202E}',
            '\u{202A}',
            '\u{2066}',
            '\u{2069}',
            '\u{200B}',
            '\u{200F}',
            '\u{FEFF}',
            '\u{FFFE}',
            '\u{FFFF}',
            '\u{FDD0}',
            '\u{1FFFF}',
            '\u{10FFFE}',
            '\u{E0041}',
        ] {
            assert_eq!(printable(&format!("x{invisible}y"), 100), "x\u{FFFD}y");
        }
        assert_eq!(
            printable("plain: é, 中, 😀, \u{FFFD}", 100),
            "plain: é, 中, 😀, \u{FFFD}"
        );
    }

    #[test]
    fn cuts_at_the_bound_with_a_mark() {
        assert_eq!(printable("abcdef", 6), "abcdef");
        assert_eq!(printable("abcdefg", 6), "abcdef…");
        let huge = "9".repeat(60_000);
        assert_eq!(
            printable(&huge, HEADER_CHARS).chars().count(),
            HEADER_CHARS + 1
        );
    }

    #[test]
    fn what_comes_out_is_valid_xml_text() {
        let every: String = (0..=0x10FFFF).filter_map(char::from_u32).collect();
        let allowed = |c: char| {
            matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
                || c >= '\u{10000}'
        };
        assert!(printable(&every, usize::MAX).chars().all(allowed));
    }
}
