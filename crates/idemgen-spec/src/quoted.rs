//! Where a quoted scalar's text ends, read as YAML reads it: in a
//! double-quoted one a backslash escapes the next character, in a
//! single-quoted one a quote is doubled. The loader's surrogate rewrite
//! and the fix editor both ask it, so they agree on what is inside a
//! string.

/// The byte just past the closing quote of the scalar whose opening quote
/// (`"` or `'`) is at byte `start`; `None` when no quote is there or the
/// scalar does not close.
pub fn quoted_scalar_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let quote = *bytes.get(start)?;
    if !matches!(quote, b'"' | b'\'') {
        return None;
    }
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if quote == b'"' => at += 1,
            b'\'' if quote == b'\'' && bytes.get(at + 1) == Some(&b'\'') => at += 1,
            closing if closing == quote => return Some(at + 1),
            _ => {}
        }
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::quoted_scalar_end;

    #[test]
    fn escapes_and_doubled_quotes_stay_inside() {
        let text = r#"a: "x\"y" 'it''s' "\\" 'open"#;
        assert_eq!(quoted_scalar_end(text, 3), Some(9));
        assert_eq!(quoted_scalar_end(text, 10), Some(17));
        assert_eq!(quoted_scalar_end(text, 18), Some(22));
        assert_eq!(quoted_scalar_end(text, 23), None);
        assert_eq!(quoted_scalar_end(text, 0), None);
        assert_eq!(quoted_scalar_end("\"é\\é\"", 0), Some(7));
    }
}
