//! The open documents: their text as the editor has it (edits applied in
//! order), and conversion between LSP positions (UTF-16 code units per
//! line) and byte offsets.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::{Position, Range, TextDocumentContentChangeEvent, Uri};

/// One open document.
pub struct Document {
    pub uri: Uri,
    pub path: Option<PathBuf>,
    pub version: i32,
    pub text: String,
}

/// Open documents by URI.
#[derive(Default)]
pub struct Documents {
    open: HashMap<String, Document>,
}

impl Documents {
    pub fn open(&mut self, uri: Uri, version: i32, text: String) {
        let path = uri_to_path(&uri);
        self.open.insert(
            uri.as_str().to_string(),
            Document {
                uri,
                path,
                version,
                text,
            },
        );
    }

    pub fn close(&mut self, uri: &Uri) {
        self.open.remove(uri.as_str());
    }

    pub fn get(&self, uri: &Uri) -> Option<&Document> {
        self.open.get(uri.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Document> {
        self.open.values()
    }

    /// Applies a `didChange`'s edits in order. A range that does not fit
    /// the text (a client out of step) is clamped, never a panic.
    pub fn change(
        &mut self,
        uri: &Uri,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) {
        let Some(document) = self.open.get_mut(uri.as_str()) else {
            return;
        };
        // One index for the whole message, kept up to date edit by edit:
        // rebuilding it for each of a "replace all"'s thousands of edits
        // would scan the whole text each time.
        let mut index: Option<LineIndex> = None;
        for change in changes {
            match change.range {
                None => {
                    document.text = change.text;
                    index = None;
                }
                Some(range) => {
                    let index = index.get_or_insert_with(|| LineIndex::new(&document.text));
                    // An inverted range is read the right way round, as
                    // clients' own document models read it.
                    let from = index.offset(&document.text, range.start);
                    let to = index.offset(&document.text, range.end);
                    let (start, end) = (from.min(to), from.max(to));
                    document.text.replace_range(start..end, &change.text);
                    index.replace(&document.text, start, end, &change.text);
                }
            }
        }
        document.version = version;
    }

    /// Every open document's text by path: what the loader reads instead of
    /// the disk, so unsaved edits in referenced files count.
    pub fn overlay(&self) -> HashMap<PathBuf, String> {
        self.open
            .values()
            .filter_map(|document| {
                let path = idemgen_spec::normalize(document.path.as_ref()?);
                Some((path, document.text.clone()))
            })
            .collect()
    }
}

/// Byte offset of each line's start, for position conversion. Lines end
/// at `\n`, `\r\n` or a `\r` alone, as LSP (and YAML) count them.
pub struct LineIndex {
    starts: Vec<usize>,
}

/// Whether a line starts at byte `at` of `text`: after a `\n`, or after a
/// `\r` that no `\n` follows.
fn starts_a_line(text: &[u8], at: usize) -> bool {
    match at.checked_sub(1).map(|before| text[before]) {
        Some(b'\n') => true,
        Some(b'\r') => text.get(at) != Some(&b'\n'),
        _ => false,
    }
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        starts.extend((1..=bytes.len()).filter(|&at| starts_a_line(bytes, at)));
        LineIndex { starts }
    }

    /// Follows `[start, end)` of the text being replaced by `inserted`;
    /// `text` is the text after. Line starts before the edit stay, those
    /// after it move by the difference in length, and those in between
    /// are found again (one byte either side too: a `\r` before the edit
    /// and a `\n` after it may now be one line break, or no longer).
    pub fn replace(&mut self, text: &str, start: usize, end: usize, inserted: &str) {
        let new_end = start + inserted.len();
        let first = self.starts.partition_point(|&line| line < start.max(1));
        let after = self.starts.partition_point(|&line| line <= end + 1);
        let moved: Vec<usize> = self.starts[after..]
            .iter()
            .map(|&line| line - end + new_end)
            .collect();
        self.starts.truncate(first);
        let bytes = text.as_bytes();
        self.starts.extend(
            (start.max(1)..=(new_end + 1).min(bytes.len())).filter(|&at| starts_a_line(bytes, at)),
        );
        self.starts.extend(moved);
    }

    /// The byte offset of an LSP position, clamped to the line and text.
    /// A line ends before its line break, all of a `\r\n` (as the protocol
    /// and clients count it): between the two is no position.
    pub fn offset(&self, text: &str, position: Position) -> usize {
        let Some(&line_start) = self.starts.get(position.line as usize) else {
            return text.len();
        };
        let line_end = self
            .starts
            .get(position.line as usize + 1)
            .map_or(text.len(), |next| {
                let crlf = *next >= line_start + 2 && &text.as_bytes()[next - 2..*next] == b"\r\n";
                if crlf { next - 2 } else { next - 1 }
            });
        let mut units = 0u32;
        for (at, character) in text[line_start..line_end].char_indices() {
            if units >= position.character {
                return line_start + at;
            }
            units += character.len_utf16() as u32;
        }
        line_end
    }

    /// The LSP position of a byte offset (clamped to the text).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|start| *start <= offset) - 1;
        let character = text[self.starts[line]..offset]
            .chars()
            .map(|c| c.len_utf16() as u32)
            .sum();
        Position::new(line as u32, character)
    }

    pub fn range(&self, text: &str, start: usize, end: usize) -> Range {
        Range::new(self.position(text, start), self.position(text, end))
    }
}

/// The file a `file:` URI names; `None` for other schemes.
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    // `file:///path` on Unix; `file:///C:/path` on Windows.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    let decoded = idemgen_spec::refs::percent_decode(path)?;
    #[cfg(windows)]
    let decoded = decoded.trim_start_matches('/').to_string();
    Some(PathBuf::from(decoded))
}

/// The `file:` URI of a path.
pub fn path_to_uri(path: &Path) -> Option<Uri> {
    let absolute = std::path::absolute(path).ok()?;
    let mut text = String::from("file://");
    let path = absolute.to_string_lossy().replace('\\', "/");
    if !path.starts_with('/') {
        text.push('/');
    }
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' | b':' => {
                text.push(byte as char)
            }
            other => text.push_str(&format!("%{other:02X}")),
        }
    }
    Uri::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_line_index_follows_edits_as_a_fresh_one_would_see_them() {
        let mut text = "a\nbb\n\nccc\nd".to_string();
        let mut index = super::LineIndex::new(&text);
        // (start, end, inserted): inside a line, over line breaks, at the
        // ends, a deletion, an insertion of several lines.
        for (start, end, inserted) in [
            (1, 1, "x"),
            (0, 5, "q\n"),
            (3, 3, "\n\nz\n"),
            (text.len() - 1, text.len() - 1, "\ne"),
            (2, 6, ""),
            (0, 0, "\n"),
            // A lone `\r` breaks a line; one before a `\n` does not.
            (1, 1, "\rr"),
            (2, 2, "\n"),
            (2, 3, ""),
            (0, 0, "x\r"),
            (text.len(), text.len(), "\r"),
        ] {
            let end = end.min(text.len());
            let start = start.min(end);
            text.replace_range(start..end, inserted);
            index.replace(&text, start, end, inserted);
            assert_eq!(
                index.starts,
                super::LineIndex::new(&text).starts,
                "{text:?}"
            );
        }
    }

    /// Every edit of every short text made of `a`, `\r` and `\n`: the
    /// index after the edit is the one the new text would get.
    #[test]
    fn the_line_index_follows_every_edit_around_carriage_returns() {
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = texts
                .iter()
                .filter(|text| text.len() == texts.last().unwrap().len())
                .flat_map(|text| ["a", "\r", "\n"].map(|c| format!("{text}{c}")))
                .collect();
            texts.extend(longer);
        }
        for text in &texts {
            for end in 0..=text.len() {
                for start in 0..=end {
                    for inserted in ["", "\r", "\n", "\r\n", "a\r", "\nb"] {
                        let mut edited = text.clone();
                        edited.replace_range(start..end, inserted);
                        let mut index = super::LineIndex::new(text);
                        index.replace(&edited, start, end, inserted);
                        assert_eq!(
                            index.starts,
                            super::LineIndex::new(&edited).starts,
                            "{text:?} [{start}, {end}) ← {inserted:?}"
                        );
                    }
                }
            }
        }
    }

    use super::*;

    #[test]
    fn positions_count_utf16_units_and_round_trip() {
        let text = "a: é\nb: 😀x\n";
        let index = LineIndex::new(text);
        let x = text.find('x').unwrap();
        assert_eq!(index.position(text, x), Position::new(1, 5));
        assert_eq!(index.offset(text, Position::new(1, 5)), x);
        // Past the line's end clamps to it; past the last line, to the text.
        assert_eq!(index.offset(text, Position::new(0, 99)), 3 + 'é'.len_utf8());
        assert_eq!(index.offset(text, Position::new(9, 0)), text.len());
    }

    #[test]
    fn incremental_edits_apply_in_order() {
        let uri = Uri::from_str("file:///tmp/a.yaml").unwrap();
        let mut documents = Documents::default();
        documents.open(uri.clone(), 1, "window: 16s\n".into());
        let edit = |line, from, to, text: &str| TextDocumentContentChangeEvent {
            range: Some(Range::new(
                Position::new(line, from),
                Position::new(line, to),
            )),
            range_length: None,
            text: text.into(),
        };
        documents.change(
            &uri,
            2,
            vec![edit(0, 8, 10, "18"), edit(0, 11, 11, " # ok")],
        );
        let document = documents.get(&uri).unwrap();
        assert_eq!(document.text, "window: 18s # ok\n");
        assert_eq!(document.version, 2);
        assert_eq!(document.path.as_deref(), Some(Path::new("/tmp/a.yaml")));
    }

    /// `text` after one `didChange` that replaces `start..end` (line,
    /// character) with `inserted`.
    fn edited(text: &str, start: (u32, u32), end: (u32, u32), inserted: &str) -> String {
        let uri = Uri::from_str("file:///tmp/a.yaml").unwrap();
        let mut documents = Documents::default();
        documents.open(uri.clone(), 1, text.into());
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(
                Position::new(start.0, start.1),
                Position::new(end.0, end.1),
            )),
            range_length: None,
            text: inserted.into(),
        };
        documents.change(&uri, 2, vec![change]);
        documents.get(&uri).unwrap().text.clone()
    }

    /// A character past a line's end means its end, before the line
    /// break: never between the `\r` and `\n` of a CRLF, which would
    /// split the break in two.
    #[test]
    fn a_position_past_the_end_of_a_crlf_line_is_before_its_line_break() {
        let text = "a: 1\r\nb: 2\r\n";
        assert_eq!(edited(text, (0, 5), (0, 5), "x"), "a: 1x\r\nb: 2\r\n");
        assert_eq!(edited(text, (0, 99), (0, 99), "x"), "a: 1x\r\nb: 2\r\n");
        assert_eq!(edited(text, (0, 3), (0, 5), "2"), "a: 2\r\nb: 2\r\n");
        // Joining two lines from past the first one's end.
        assert_eq!(edited(text, (0, 5), (1, 0), " "), "a: 1 b: 2\r\n");
        let index = LineIndex::new(text);
        assert_eq!(index.offset(text, Position::new(0, 5)), 4);
        assert_eq!(index.offset(text, Position::new(1, 9)), 10);
    }

    /// An end before the start names the same text as the range written
    /// the right way round (as clients' own document models read it).
    #[test]
    fn an_inverted_range_replaces_the_text_between_its_ends() {
        assert_eq!(
            edited("window: 16s\n", (0, 11), (0, 8), "18s"),
            "window: 18s\n"
        );
        assert_eq!(edited("a\nb\nc\n", (2, 0), (1, 0), ""), "a\nc\n");
    }

    #[test]
    fn paths_and_uris_round_trip() {
        let path = Path::new("/tmp/my api/spec#1.yaml");
        let uri = path_to_uri(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/my%20api/spec%231.yaml");
        assert_eq!(uri_to_path(&uri).as_deref(), Some(path));
    }
}
