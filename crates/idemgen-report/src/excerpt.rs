//! The few lines around a finding, cut down so that a minified JSON line
//! (one 3 MB line) prints as a short window instead of the whole line, with
//! the file's real line and (character) column in the header.

use miette::{MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};

/// Lines longer than this many characters are cut to a window.
const MAX_LINE_CHARS: usize = 160;
/// How much of a cut line to keep before the finding.
const KEEP_BEFORE: usize = 60;
const CONTEXT_LINES: usize = 2;

/// A snippet of a file, with what miette needs to label it.
#[derive(Debug)]
pub struct Excerpt {
    name: String,
    text: String,
    /// 0-based line number, in the file, of the excerpt's first line.
    first_line: usize,
    /// The finding's 0-based character column in the file.
    column: usize,
    /// The finding's place inside `text`.
    pub span: SourceSpan,
}

impl Excerpt {
    /// The excerpt around `length` bytes at `offset` in `source`, which is
    /// on the 1-based `line` at the 1-based character `column`.
    pub fn new(
        name: &str,
        source: &str,
        offset: usize,
        length: usize,
        line: usize,
        column: usize,
    ) -> Excerpt {
        let offset = floor_char_boundary(source, offset.min(source.len()));
        let finding_start = line_start(source, offset);
        let mut starts = vec![finding_start];
        while starts.len() <= CONTEXT_LINES && starts[0] > 0 {
            let previous = line_start(source, starts[0] - 1);
            starts.insert(0, previous);
        }
        let finding_line = starts.len() - 1;
        let mut lines: Vec<(usize, &str)> = starts
            .iter()
            .map(|&start| (start, line_at(source, start).0))
            .collect();
        let mut next = line_at(source, finding_start).1;
        for _ in 0..CONTEXT_LINES {
            if next >= source.len() {
                break;
            }
            let (text, after) = line_at(source, next);
            lines.push((next, text));
            next = after;
        }

        let mut text = String::new();
        let mut span = SourceSpan::from((0, 0));
        for (index, (start, line)) in lines.into_iter().enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let focus = if index == finding_line {
                offset - start
            } else {
                0
            };
            let (shown, focus_in_shown) = window(line, focus);
            if index == finding_line {
                let room = shown.len().saturating_sub(focus_in_shown).max(1);
                span = SourceSpan::from((text.len() + focus_in_shown, length.clamp(1, room)));
            }
            text.push_str(&shown);
            text.push('\n');
        }
        Excerpt {
            name: name.to_string(),
            text,
            first_line: line.saturating_sub(1).saturating_sub(finding_line),
            column: column.saturating_sub(1),
            span,
        }
    }
}

/// A line cut to about `MAX_LINE_CHARS` characters around the byte `focus`,
/// with `…` where text was left out; also where `focus` is in the result.
/// Works in bytes and walks only the characters it keeps, so a 3 MB line
/// costs no more than a short one.
fn window(line: &str, focus: usize) -> (String, usize) {
    if line.len() <= MAX_LINE_CHARS {
        return (line.to_string(), focus);
    }
    let focus = floor_char_boundary(line, focus.min(line.len()));
    let start = line[..focus]
        .char_indices()
        .rev()
        .nth(KEEP_BEFORE - 1)
        .map_or(0, |(at, _)| at);
    let end = line[start..]
        .char_indices()
        .nth(MAX_LINE_CHARS)
        .map_or(line.len(), |(at, _)| start + at);
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    let focus_in_shown = shown.len() + (focus - start);
    shown.push_str(&line[start..end]);
    if end < line.len() {
        shown.push('…');
    }
    (shown, focus_in_shown)
}

/// Whether a line break ends at byte `at`: a `\n`, or a `\r` that no `\n`
/// follows (YAML's line breaks; a CRLF's `\r` is part of its `\n`'s).
fn breaks_at(bytes: &[u8], at: usize) -> bool {
    match bytes[at] {
        b'\n' => true,
        b'\r' => bytes.get(at + 1) != Some(&b'\n'),
        _ => false,
    }
}

/// Where the line holding byte `at` starts.
fn line_start(source: &str, at: usize) -> usize {
    let bytes = source.as_bytes();
    (0..at.min(bytes.len()))
        .rev()
        .find(|&before| breaks_at(bytes, before))
        .map_or(0, |line_break| line_break + 1)
}

/// The line starting at `start`, without its line break, and where the
/// next line starts.
fn line_at(source: &str, start: usize) -> (&str, usize) {
    let bytes = source.as_bytes();
    match (start..bytes.len()).find(|&at| breaks_at(bytes, at)) {
        Some(line_break) => (&source[start..line_break], line_break + 1),
        None => (&source[start..], bytes.len() + 1),
    }
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self.text.as_str().read_span(span, before, after)?;
        // The header names the finding's real column, in characters.
        let column = if span.offset() == self.span.offset() {
            self.column
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            inner.line_count(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_become_a_window_around_the_finding() {
        let long = format!("{{\"a\": \"{}\", \"window\": 10}}", "x".repeat(100_000));
        let offset = long.find("10").unwrap();
        let column = long[..offset].chars().count() + 1;
        let excerpt = Excerpt::new("min.json", &long, offset, 2, 1, column);
        assert!(excerpt.text.len() < 400, "{}", excerpt.text.len());
        let at = excerpt.span.offset();
        assert_eq!(&excerpt.text[at..at + 2], "10");
        let header = excerpt.read_span(&excerpt.span, 0, 0).unwrap();
        assert_eq!(
            (header.line(), header.column()),
            (0, long[..offset].chars().count())
        );
    }

    #[test]
    fn a_carriage_return_alone_ends_a_line() {
        let text = "a: 1\rb: 2\rc: 3\rd: 4\r";
        let offset = text.find("c:").unwrap();
        let excerpt = Excerpt::new("x.yaml", text, offset, 1, 3, 1);
        assert_eq!(excerpt.text, "a: 1\nb: 2\nc: 3\nd: 4\n");
        let at = excerpt.span.offset();
        assert_eq!(&excerpt.text[at..at + 1], "c");
        let header = excerpt.read_span(&excerpt.span, 0, 0).unwrap();
        assert_eq!((header.line(), header.column()), (2, 0));
    }

    #[test]
    fn columns_count_characters() {
        let text = "a: 1\nserver: {\"ééé\": 1, max-processing: 3}\nb: 2\n";
        let offset = text.find("3}").unwrap();
        let excerpt = Excerpt::new("x.yaml", text, offset, 1, 2, 36);
        let header = excerpt.read_span(&excerpt.span, 0, 0).unwrap();
        assert_eq!((header.line(), header.column()), (1, 35));
        assert!(excerpt.text.starts_with("a: 1\n"));
    }
}
