//! A loaded file's text and the mapping from the parser's character
//! positions to the byte offsets that editors and `miette` need.

use std::path::PathBuf;

/// Index of a file inside a [`crate::Workspace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// Every this many characters we remember the byte offset, so converting a
/// character index costs at most this many steps even on a one-line
/// (minified JSON) file.
const CHECKPOINT_EVERY: usize = 1024;

#[derive(Debug)]
pub struct SourceFile {
    /// Where the file really is, used to resolve relative `$ref`s.
    pub path: PathBuf,
    /// How the file is named in diagnostics: as the user wrote it, or
    /// relative to the root file's directory for referenced files.
    pub display: String,
    pub text: String,
    /// Byte offset of every `CHECKPOINT_EVERY`-th character; empty when
    /// the text is ASCII and characters are bytes.
    checkpoints: Vec<usize>,
    /// The one line break the file uses, found on first use (`None` when
    /// it mixes them): fixes ask once per edit, and a search of a 4 MB file
    /// per edit adds up.
    line_break: std::sync::OnceLock<Option<&'static str>>,
    /// The text with lone `\r`s made `\n` (see `text_by_lines`), made on
    /// first use; `None` when it has none and is the text itself.
    by_lines: std::sync::OnceLock<Option<String>>,
    /// Where the flow collection opening at a byte ends, as the fix engine
    /// found it: every fix that adds to the document's root asks for the
    /// root's end, a scan of the whole file each time.
    flow_ends: std::sync::Mutex<std::collections::HashMap<usize, Option<usize>>>,
}

impl SourceFile {
    pub fn new(path: PathBuf, display: String, text: String) -> Self {
        let checkpoints = if text.is_ascii() {
            Vec::new()
        } else {
            text.char_indices()
                .step_by(CHECKPOINT_EVERY)
                .map(|(byte, _)| byte)
                .collect()
        };
        SourceFile {
            path,
            display,
            text,
            checkpoints,
            line_break: std::sync::OnceLock::new(),
            by_lines: std::sync::OnceLock::new(),
            flow_ends: Default::default(),
        }
    }

    /// The end of the flow collection opening at byte `start`, from
    /// `find` the first time it is asked for.
    pub fn flow_end(&self, start: usize, find: impl FnOnce() -> Option<usize>) -> Option<usize> {
        let mut known = self
            .flow_ends
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *known.entry(start).or_insert_with(find)
    }

    /// The line break of the line that holds byte `at`: `\n`, `\r\n`, or
    /// `\r` alone (a line break of its own in YAML); for the last line, the
    /// one before it; `\n` in a file of one line. Text a fix adds there
    /// ends its lines the same way, also in a file that mixes them.
    pub fn line_break_at(&self, at: usize) -> &'static str {
        let only = *self.line_break.get_or_init(|| {
            let mut kinds = line_breaks(self.text.as_bytes(), 0);
            let first = kinds.next();
            match first {
                Some(kind) if kinds.any(|other| other != kind) => None,
                Some(kind) => Some(kind),
                None => Some("\n"),
            }
        });
        if let Some(kind) = only {
            return kind;
        }
        let bytes = self.text.as_bytes();
        let at = at.min(bytes.len());
        if let Some(kind) = line_breaks(bytes, at).next() {
            return kind;
        }
        let before = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n' || b == b'\r')
            .map_or(0, |last| {
                if bytes[last] == b'\n' && last > 0 && bytes[last - 1] == b'\r' {
                    last - 1
                } else {
                    last
                }
            });
        line_breaks(bytes, before).next().unwrap_or("\n")
    }

    /// The text with every `\r` that breaks a line alone (not before a
    /// `\n`) made `\n`. YAML breaks lines there; code that finds lines by
    /// `\n` (the fix editor, the report's excerpts) then sees YAML's lines,
    /// and since one byte replaces one, every offset still holds.
    pub fn text_by_lines(&self) -> &str {
        self.by_lines
            .get_or_init(|| {
                let bytes = self.text.as_bytes();
                let lone = |at: usize| bytes.get(at + 1) != Some(&b'\n');
                self.text
                    .match_indices('\r')
                    .any(|(at, _)| lone(at))
                    .then(|| lines_by_yaml(&self.text))
            })
            .as_deref()
            .unwrap_or(&self.text)
    }

    /// Byte offset of the character at `char_index` (clamped to the end).
    pub fn byte_offset(&self, char_index: usize) -> usize {
        if self.checkpoints.is_empty() {
            return char_index.min(self.text.len());
        }
        let slot = char_index / CHECKPOINT_EVERY;
        let Some(&start) = self.checkpoints.get(slot) else {
            return self.text.len();
        };
        let rest = char_index - slot * CHECKPOINT_EVERY;
        self.text[start..]
            .char_indices()
            .nth(rest)
            .map_or(self.text.len(), |(offset, _)| start + offset)
    }
}

/// The line breaks of `text` from byte `from` on, in order.
fn line_breaks(text: &[u8], from: usize) -> impl Iterator<Item = &'static str> + '_ {
    let mut at = from;
    std::iter::from_fn(move || {
        let found = at
            + text
                .get(at..)?
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')?;
        let kind = match (text[found], text.get(found + 1)) {
            (b'\r', Some(b'\n')) => "\r\n",
            (b'\r', _) => "\r",
            _ => "\n",
        };
        at = found + kind.len();
        Some(kind)
    })
}

/// `text` with every `\r` not followed by `\n` made `\n`: the same length,
/// so offsets into one are offsets into the other.
pub fn lines_by_yaml(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices('\r') {
        if bytes.get(at + 1) != Some(&b'\n') {
            out.push_str(&text[copied..at]);
            out.push('\n');
            copied = at + 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> SourceFile {
        SourceFile::new("a.yaml".into(), "a.yaml".into(), text.to_string())
    }

    #[test]
    fn a_lone_carriage_return_is_a_line_break_of_the_same_length() {
        let cr = source("a: 1\rb: é\r\nc: 3\r");
        assert_eq!(cr.text_by_lines(), "a: 1\nb: é\r\nc: 3\n");
        assert_eq!(cr.text_by_lines().len(), cr.text.len());
        let crlf = source("a: 1\r\nb: 2\r\n");
        assert_eq!(crlf.text_by_lines(), crlf.text);
    }

    #[test]
    fn a_line_break_is_the_one_of_the_line_at_hand() {
        assert_eq!(source("a: 1\rb: 2\r").line_break_at(0), "\r");
        assert_eq!(source("a: 1\r\nb: 2\r\n").line_break_at(7), "\r\n");
        assert_eq!(source("a: 1").line_break_at(2), "\n");
        // A first line in LF, then CRLF: each line its own, the last line
        // (no break of its own) the one before it.
        let mixed = source("a: 1\nb: 2\r\nc: 3\rd: 4");
        assert_eq!(mixed.line_break_at(2), "\n");
        assert_eq!(mixed.line_break_at(4), "\n");
        assert_eq!(mixed.line_break_at(6), "\r\n");
        assert_eq!(mixed.line_break_at(9), "\r\n");
        assert_eq!(mixed.line_break_at(13), "\r");
        assert_eq!(mixed.line_break_at(18), "\r");
        assert_eq!(mixed.line_break_at(99), "\r");
    }
}
