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
    /// Whether lines end in `\r\n`, found on first use: fixes ask once
    /// per edit, and a search of a 4 MB file per edit adds up.
    crlf: std::sync::OnceLock<bool>,
    /// Whether a `\r` breaks a line alone, found on first use, for the
    /// same reason.
    lone_cr: std::sync::OnceLock<bool>,
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
            crlf: std::sync::OnceLock::new(),
            lone_cr: std::sync::OnceLock::new(),
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

    /// Whether the file's lines end in `\r\n`.
    pub fn uses_crlf(&self) -> bool {
        *self.crlf.get_or_init(|| self.text.contains("\r\n"))
    }

    /// Whether the text has a `\r` not followed by `\n`: a line break of
    /// its own in YAML, where lines counted by `\n` disagree.
    pub fn has_lone_cr(&self) -> bool {
        *self.lone_cr.get_or_init(|| {
            self.text
                .match_indices('\r')
                .any(|(at, _)| self.text.as_bytes().get(at + 1) != Some(&b'\n'))
        })
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
