//! The spec and what it promises: [`Workspace::load`] reads files into
//! positioned trees with every `$ref` checked, [`contract`] reads an
//! `x-idempotency` block into a typed model, [`analysis`] merges each
//! operation's contract once for every command, and [`window`] holds the
//! window math that the rules and `idemgen window` share.
//!
//! Loading: one [`Workspace`] holds the root document and every file it
//! references, each parsed once. Nothing is inlined: consumers follow
//! `$ref`s with [`Workspace::deref`], so every node keeps the position of
//! the file it was written in.

pub mod analysis;
pub mod contract;
pub mod http_token;
pub mod json_escapes;
pub mod json_parse;
pub mod key_names;
pub mod node;
pub mod operations;
pub mod overlay;
pub mod parse;
pub mod quoted;
pub mod refs;
pub mod security;
mod source;
mod version;
pub mod window;

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

pub use node::{Entry, Mapping, Node, Span, Value};
pub use overlay::OverlayWarning;
pub use source::{FileId, SourceFile, lines_by_yaml};
pub use version::OpenApiVersion;

use refs::{RefProblem, split_ref};

/// Largest file accepted (8 copies of the Stripe spec's paths still fit).
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// Most files one document may pull in through `$ref`s.
pub const MAX_FILES: usize = 20_000;
/// Most text one document and the files it pulls in may hold together:
/// the per-file limit alone would let `$ref`s read 20,000 files of 32 MiB.
pub const MAX_WORKSPACE_BYTES: usize = 128 * 1024 * 1024;
/// Most `$ref` problems reported per document.
const MAX_REF_PROBLEMS: usize = 1000;
/// Longest chain of `$ref`s to `$ref`s followed before giving up.
const MAX_REF_HOPS: usize = 64;

/// A problem that makes the input unusable: exit code 2.
#[derive(Debug)]
pub struct LoadError {
    pub file: String,
    pub message: String,
    pub help: String,
    /// Byte offset, line (1-based) and column (1-based), when known.
    pub location: Option<(usize, usize, usize)>,
    /// The file's text, for a snippet.
    pub text: Option<String>,
}

/// A problem found while loading that lint reports as a finding.
#[derive(Debug, Clone)]
pub enum LoadProblem {
    DuplicateKey {
        key: String,
        first: Span,
        again: Span,
    },
    Ref {
        reference: String,
        at: Span,
        message: String,
        /// Remote references are merely unchecked, not wrong.
        remote: bool,
    },
}

pub struct LoadedFile {
    pub source: SourceFile,
    pub root: Node,
}

pub struct Workspace {
    pub files: Vec<LoadedFile>,
    pub version: OpenApiVersion,
    pub problems: Vec<LoadProblem>,
    /// `(file that holds the $ref, its file part)` → the file it names.
    ref_files: HashMap<(FileId, Box<str>), FileId>,
    /// Each file's OpenAPI 3.2 `$self`, the base of its relative `$ref`s.
    bases: Vec<Option<Box<str>>>,
    /// Overlay documents applied to the root, in order. Their files are
    /// loaded (so findings can point into them), but what their actions
    /// wrote now lives in the root's tree: a `$ref` there is the root's.
    pub overlays: Vec<FileId>,
    /// Overlay actions that changed nothing.
    pub overlay_warnings: Vec<OverlayWarning>,
    /// How many operations have an `x-idempotency` mapping of their own,
    /// counted on first use (a fix asks it for every operation without
    /// one, which would otherwise walk every operation each time).
    contract_blocks: std::sync::OnceLock<usize>,
    /// Bytes of text loaded so far, against [`MAX_WORKSPACE_BYTES`].
    text_bytes: usize,
}

impl Workspace {
    /// The loaded file diagnostics and edits call `display`.
    pub fn file_named(&self, display: &str) -> Option<&LoadedFile> {
        self.files
            .iter()
            .find(|loaded| loaded.source.display == display)
    }

    /// How many operations have an `x-idempotency` mapping of their own
    /// (not counting the document-level block).
    pub fn operations_with_a_contract_block(&self) -> usize {
        *self.contract_blocks.get_or_init(|| {
            operations::operations(self)
                .iter()
                .filter(|operation| operations::has_contract_block(operation))
                .count()
        })
    }

    /// Loads `path` and every file its `$ref`s reach.
    pub fn load(path: &Path) -> Result<Workspace, Box<LoadError>> {
        Workspace::load_with(path, &HashMap::new())
    }

    /// Like [`Workspace::load`], with the text of some files (by their
    /// absolute, normalised path) taken from `overlay` instead of the disk:
    /// how fixes are checked before anything is written.
    pub fn load_with(
        path: &Path,
        overlay: &HashMap<PathBuf, String>,
    ) -> Result<Workspace, Box<LoadError>> {
        Workspace::load_with_overlays(path, overlay, &[])
    }

    /// Like [`Workspace::load_with`], with the Overlay documents `overlays`
    /// applied to the root document, in order, before anything reads it.
    pub fn load_with_overlays(
        path: &Path,
        overlay: &HashMap<PathBuf, String>,
        overlays: &[PathBuf],
    ) -> Result<Workspace, Box<LoadError>> {
        let display = path.display().to_string();
        let real_path = normalize_absolute(path);
        let text = match overlay.get(&real_path) {
            Some(text) => text.clone(),
            None => read_text(path, &display)?,
        };
        Workspace::from_text_with(path, display, text, overlay, overlays)
    }

    /// Loads a root document from text already in memory (its relative
    /// `$ref`s are read from `path`'s directory).
    pub fn from_text(
        path: &Path,
        display: String,
        text: String,
    ) -> Result<Workspace, Box<LoadError>> {
        Workspace::from_text_with(path, display, text, &HashMap::new(), &[])
    }

    fn from_text_with(
        path: &Path,
        display: String,
        text: String,
        overlay: &HashMap<PathBuf, String>,
        overlays: &[PathBuf],
    ) -> Result<Workspace, Box<LoadError>> {
        let real_path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let root_dir = normalize(real_path.parent().unwrap_or(Path::new("/")));
        let mut workspace = Workspace {
            files: Vec::new(),
            version: OpenApiVersion::V3_1,
            problems: Vec::new(),
            ref_files: HashMap::new(),
            bases: Vec::new(),
            overlays: Vec::new(),
            overlay_warnings: Vec::new(),
            contract_blocks: std::sync::OnceLock::new(),
            text_bytes: 0,
        };
        workspace.add_file(normalize(&real_path), display, text)?;
        for overlay_path in overlays {
            workspace.apply_overlay(overlay_path, overlay)?;
        }
        let root = &workspace.files[0];
        workspace.version = version::detect(&root.root).map_err(|unsupported| {
            let span = unsupported.node.span;
            let mut error = located_error(
                &root.source,
                span.start as usize,
                span.line as usize,
                span.col as usize,
            );
            error.message = unsupported.message;
            error.help = unsupported.help;
            Box::new(error)
        })?;
        workspace.bases[0] = workspace.self_uri(FileId(0));
        workspace.load_referenced_files(&root_dir, overlay)?;
        workspace.check_ref_targets();
        Ok(workspace)
    }

    /// Reads one Overlay document and applies it to the root's tree.
    fn apply_overlay(
        &mut self,
        path: &Path,
        texts: &HashMap<PathBuf, String>,
    ) -> Result<(), Box<LoadError>> {
        let display = path.display().to_string();
        let real = normalize_absolute(path);
        let text = match texts.get(&real) {
            Some(text) => text.clone(),
            None => read_text(path, &display)?,
        };
        let id = self.add_file(real, display, text)?;
        self.overlays.push(id);
        let (root, rest) = self.files.split_at_mut(1);
        let overlay = &rest[rest.len() - 1];
        let warnings = overlay::apply(
            &mut root[0].root,
            &overlay.root,
            &overlay.source,
            &root[0].source.path,
        )?;
        self.overlay_warnings.extend(warnings);
        Ok(())
    }

    /// The file whose `$ref`s a node written in `file` follows: the root
    /// for what an overlay wrote into it.
    fn home(&self, file: FileId) -> FileId {
        if self.overlays.contains(&file) {
            FileId(0)
        } else {
            file
        }
    }

    /// Whether `file` is an Overlay document rather than part of the API.
    pub fn is_overlay(&self, file: FileId) -> bool {
        self.overlays.contains(&file)
    }

    pub fn root(&self) -> &Node {
        &self.files[0].root
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize].source
    }

    /// JSON pointer of the innermost node that starts at `span`, found by
    /// descending through the nodes whose spans contain it. Pointers into
    /// referenced files are prefixed with the file's path relative to the
    /// root document's directory and `#` (`shared/parameters.yaml#/Key`).
    pub fn pointer_at(&self, span: Span) -> String {
        if self.is_overlay(span.file) {
            // Written by an overlay: where it landed in the root's tree.
            return pointer_of_span(&self.files[0].root, span).unwrap_or_default();
        }
        let loaded = &self.files[span.file.0 as usize];
        let mut pointer = String::new();
        let mut node = &loaded.root;
        // Children are in source order, so the one holding `span` is found
        // by binary search on where each starts.
        loop {
            let (segment, child, starts_here) = match &node.value {
                Value::Map(entries) => {
                    let after = entries.partition_point(|entry| entry.key_span.start <= span.start);
                    let Some(entry) = after.checked_sub(1).map(|at| &entries[at]) else {
                        break;
                    };
                    let starts_here =
                        entry.key_span.start == span.start || entry.value.span.start == span.start;
                    (entry.key.to_string(), &entry.value, starts_here)
                }
                Value::Seq(items) => {
                    let after = items.partition_point(|item| item.span.start <= span.start);
                    let Some(at) = after.checked_sub(1) else {
                        break;
                    };
                    (
                        at.to_string(),
                        &items[at],
                        items[at].span.start == span.start,
                    )
                }
                _ => break,
            };
            let past_end = child.span.end > child.span.start && span.start >= child.span.end;
            if past_end && !starts_here {
                break;
            }
            pointer = node::pointer_join(&pointer, &segment);
            if starts_here {
                break;
            }
            node = child;
        }
        if span.file.0 == 0 {
            pointer
        } else {
            format!("{}#{pointer}", self.relative_name(loaded))
        }
    }

    /// A referenced file's path relative to the root document's directory,
    /// with `/` between its parts: the same in every checkout and from
    /// every working directory, so pointers (and the baselines that match
    /// findings by them) do not depend on where the spec tree lies or how
    /// its path was written on the command line.
    fn relative_name(&self, loaded: &LoadedFile) -> String {
        let root_dir = self.files[0].source.path.parent().unwrap_or(Path::new(""));
        match loaded.source.path.strip_prefix(root_dir) {
            Ok(relative) => relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
            // Only files inside the root's directory are read; a workspace
            // made otherwise keeps the name it was given.
            Err(_) => loaded.source.display.clone(),
        }
    }

    /// Follows `$ref`s from `node` to the node they name. A node without a
    /// `$ref` is returned as it is; `None` when the chain dangles or loops.
    pub fn deref<'a>(&'a self, node: &'a Node) -> Option<&'a Node> {
        let mut current = node;
        for _ in 0..MAX_REF_HOPS {
            let Some(reference) = current.get("$ref").and_then(Node::as_str) else {
                return Some(current);
            };
            current = self.ref_target(current.span.file, reference)?;
        }
        None
    }

    /// Why following `$ref`s from `node` never reaches a value, if it does not.
    fn chain_problem(&self, node: &Node) -> Option<&'static str> {
        let mut seen: Vec<(FileId, u32)> = Vec::new();
        let mut current = node;
        for _ in 0..MAX_REF_HOPS {
            // A node without `$ref` is a value: the chain is fine.
            let reference = current.get("$ref").and_then(Node::as_str)?;
            let place = (current.span.file, current.span.start);
            if seen.contains(&place) {
                return Some("it is part of a cycle of references that never reaches a value");
            }
            seen.push(place);
            current = match self.ref_target(current.span.file, reference) {
                Some(next) => next,
                None => return Some("it leads to a reference that names nothing"),
            };
        }
        Some("it starts a chain of more than 64 references to references")
    }

    /// The `$self` of a 3.2 document's file, if it declares one.
    fn self_uri(&self, file: FileId) -> Option<Box<str>> {
        if self.version != OpenApiVersion::V3_2 {
            return None;
        }
        let root = &self.files[file.0 as usize].root;
        root.get("$self").and_then(Node::as_str).map(Into::into)
    }

    /// A `$ref` written in `file` as the loader follows it (see
    /// [`refs::rebase`]).
    fn rebased<'r>(&self, file: FileId, reference: &'r str) -> std::borrow::Cow<'r, str> {
        refs::rebase(
            reference,
            self.bases.get(file.0 as usize).and_then(Option::as_deref),
        )
    }

    /// The node a `$ref` string written in `file` names.
    pub fn ref_target(&self, file: FileId, reference: &str) -> Option<&Node> {
        let file = self.home(file);
        let reference = self.rebased(file, reference);
        let target = split_ref(&reference).ok()?;
        let target_file = if target.file.is_empty() {
            file
        } else {
            *self.ref_files.get(&(file, target.file.into()))?
        };
        refs::evaluate(&self.files[target_file.0 as usize].root, &target.pointer)
    }

    fn add_file(
        &mut self,
        path: PathBuf,
        display: String,
        text: String,
    ) -> Result<FileId, Box<LoadError>> {
        self.text_bytes += text.len();
        if self.text_bytes > MAX_WORKSPACE_BYTES {
            let root = self
                .files
                .first()
                .map_or(&display, |root| &root.source.display);
            return Err(LoadError::plain(
                root,
                format!(
                    "the document and the files its `$ref`s reach hold more than {} MiB of text (the limit was passed at {display})",
                    MAX_WORKSPACE_BYTES / (1024 * 1024)
                ),
                "split the API into smaller documents, or bundle only what it uses",
            ));
        }
        let id = FileId(self.files.len() as u32);
        let source = SourceFile::new(path, display, text);
        let parsed = parse_text(id, &source.text).map_err(|error| {
            let mut located = located_error(&source, error.index, error.line, error.col);
            located.message = error.message;
            located.help = error.help;
            Box::new(located)
        })?;
        for duplicate in parsed.duplicates {
            self.problems.push(LoadProblem::DuplicateKey {
                key: duplicate.key,
                first: duplicate.first,
                again: duplicate.again,
            });
        }
        self.files.push(LoadedFile {
            source,
            root: parsed.root,
        });
        let base = self.self_uri(id);
        self.bases.push(base);
        Ok(id)
    }

    /// Breadth-first over external `$ref`s: each file is read and parsed once.
    fn load_referenced_files(
        &mut self,
        root_dir: &Path,
        overlay: &HashMap<PathBuf, String>,
    ) -> Result<(), Box<LoadError>> {
        let real_root = &std::fs::canonicalize(root_dir).unwrap_or_else(|_| root_dir.to_path_buf());
        let mut by_path: HashMap<PathBuf, FileId> = HashMap::new();
        by_path.insert(self.files[0].source.path.clone(), FileId(0));
        let mut queue = VecDeque::from([FileId(0)]);
        while let Some(file) = queue.pop_front() {
            let mut external = Vec::new();
            let base = self.bases[file.0 as usize].clone();
            collect_refs(
                &self.files[file.0 as usize].root,
                &mut |reference, span| match split_ref(&refs::rebase(reference, base.as_deref())) {
                    Err(RefProblem::Remote) => self.problems.push(LoadProblem::Ref {
                        reference: reference.into(),
                        at: span,
                        message:
                            "remote references are not fetched, so what they name is not checked"
                                .into(),
                        remote: true,
                    }),
                    Err(RefProblem::Malformed(why)) => self.problems.push(LoadProblem::Ref {
                        reference: reference.into(),
                        at: span,
                        message: why,
                        remote: false,
                    }),
                    Ok(target) if !target.file.is_empty() => {
                        external.push((target.file.to_string(), reference.to_string(), span));
                    }
                    Ok(_) => {}
                },
            );
            let (base_dir, base_display) = {
                let source = &self.files[file.0 as usize].source;
                (
                    source.path.parent().unwrap_or(Path::new("/")).to_path_buf(),
                    Path::new(&source.display)
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_default(),
                )
            };
            for (relative, reference, span) in external {
                if self
                    .ref_files
                    .contains_key(&(file, relative.as_str().into()))
                {
                    continue;
                }
                let decoded = refs::percent_decode(&relative).unwrap_or_else(|| relative.clone());
                let path = normalize(&base_dir.join(&decoded));
                // Lexically inside, and still inside once symlinks are
                // followed: a link must not lead out of the spec's tree.
                let inside = path.starts_with(root_dir)
                    && std::fs::canonicalize(&path)
                        .map_or(true, |real| real.starts_with(real_root));
                if !inside {
                    self.problems.push(LoadProblem::Ref {
                        reference,
                        at: span,
                        message: "it leaves the directory of the root document, so it is not read"
                            .into(),
                        remote: false,
                    });
                    continue;
                }
                let id = match by_path.get(&path) {
                    Some(&id) => id,
                    None => {
                        if !path.is_file() {
                            self.problems.push(LoadProblem::Ref {
                                reference,
                                at: span,
                                message: not_a_file(
                                    &path,
                                    &normalize(&base_display.join(&decoded))
                                        .display()
                                        .to_string(),
                                    &decoded,
                                ),
                                remote: false,
                            });
                            continue;
                        }
                        if self.files.len() >= MAX_FILES {
                            return Err(LoadError::plain(
                                &self.files[0].source.display,
                                format!("the document references more than {MAX_FILES} files"),
                                "bundle the document, or split it into smaller APIs",
                            ));
                        }
                        let display = normalize(&base_display.join(&decoded))
                            .display()
                            .to_string();
                        let text = match overlay.get(&path) {
                            Some(text) => text.clone(),
                            None => read_text(&path, &display)?,
                        };
                        let id = self.add_file(path.clone(), display, text)?;
                        by_path.insert(path, id);
                        queue.push_back(id);
                        id
                    }
                };
                self.ref_files.insert((file, relative.into()), id);
            }
        }
        Ok(())
    }

    /// Reports `$ref`s whose pointer names nothing, or that only loop.
    fn check_ref_targets(&mut self) {
        let mut problems = Vec::new();
        for loaded in self
            .files
            .iter()
            .filter(|loaded| !self.overlays.contains(&loaded.root.span.file))
        {
            collect_refs(&loaded.root, &mut |reference, span| {
                if problems.len() >= MAX_REF_PROBLEMS {
                    return;
                }
                let rebased = self.rebased(self.home(span.file), reference);
                let Ok(target) = split_ref(&rebased) else {
                    return;
                };
                if !target.file.is_empty()
                    && !self
                        .ref_files
                        .contains_key(&(self.home(span.file), target.file.into()))
                {
                    return; // already reported: missing or refused file
                }
                let message = match self.ref_target(span.file, reference) {
                    None => format!("nothing is at `#{}`", target.pointer),
                    Some(node) => match self.chain_problem(node) {
                        Some(problem) => problem.into(),
                        None => return,
                    },
                };
                problems.push(LoadProblem::Ref {
                    reference: reference.into(),
                    at: span,
                    message,
                    remote: false,
                });
            });
        }
        self.problems.extend(problems);
        // Keep every duplicate-key problem (already capped per file) and at
        // most MAX_REF_PROBLEMS reference problems.
        let mut refs_seen = 0;
        self.problems.retain(|problem| match problem {
            LoadProblem::Ref { .. } => {
                refs_seen += 1;
                refs_seen <= MAX_REF_PROBLEMS
            }
            LoadProblem::DuplicateKey { .. } => true,
        });
    }
}

impl LoadError {
    pub fn plain(file: &str, message: String, help: &str) -> Box<LoadError> {
        Box::new(LoadError {
            file: file.to_string(),
            message,
            help: help.to_string(),
            location: None,
            text: None,
        })
    }
}

pub(crate) fn located_error(
    source: &SourceFile,
    char_index: usize,
    line: usize,
    col: usize,
) -> LoadError {
    LoadError {
        file: source.display.clone(),
        message: String::new(),
        help: String::new(),
        location: Some((source.byte_offset(char_index), line.max(1), col + 1)),
        text: Some(source.text.clone()),
    }
}

/// The tree of one file's text. Strict JSON takes the fast path (the YAML
/// parser builds the same tree for it, only slower); anything else goes to
/// the YAML parser. JSON allows surrogate escapes (`\uD83D\uDE00`) that
/// YAML refuses, so only when the YAML parser refuses the text is it read
/// once more with them rewritten (`json_escapes`): that rewrite tells
/// strings apart by counting quotes, which text that is not JSON can fool
/// (a quote inside a plain scalar), and must not touch what loads as it is.
fn parse_text(file: FileId, text: &str) -> Result<parse::Parsed, parse::ParseError> {
    let json = json_escapes::looks_like_json(text);
    if let Some(parsed) = json.then(|| json_parse::parse(file, text)).flatten() {
        return parsed;
    }
    let refused = match parse::parse(file, text) {
        Ok(parsed) => return Ok(parsed),
        Err(error) => error,
    };
    let Some(rewritten) = json
        .then(|| json_escapes::rewrite_surrogates(text))
        .flatten()
    else {
        return Err(refused);
    };
    match json_parse::parse(file, &rewritten).unwrap_or_else(|| parse::parse(file, &rewritten)) {
        Ok(parsed) if rewritten.only_in_strings(&parsed.root) => Ok(parsed),
        _ => Err(refused),
    }
}

/// One document's text as a positioned tree (file 0), without following
/// `$ref`s or checking the OpenAPI version: what a fix changed compares
/// tree to tree.
pub fn parse_tree(display: &str, text: &str) -> Result<Node, Box<LoadError>> {
    parse_text(FileId(0), text)
        .map(|parsed| parsed.root)
        .map_err(|error| {
            let source = SourceFile::new(
                PathBuf::from(display),
                display.to_string(),
                text.to_string(),
            );
            let mut located = located_error(&source, error.index, error.line, error.col);
            located.message = error.message;
            located.help = error.help;
            Box::new(located)
        })
}

/// Reads a file as UTF-8 text within the size limit.
fn read_text(path: &Path, display: &str) -> Result<String, Box<LoadError>> {
    let metadata = std::fs::metadata(path).map_err(|error| {
        LoadError::plain(
            display,
            format!("cannot read the file: {error}"),
            "check the path",
        )
    })?;
    if metadata.is_dir() {
        return Err(LoadError::plain(
            display,
            "is a directory, not a file".into(),
            "pass the root document of the API, for example openapi.yaml",
        ));
    }
    let too_large = || {
        LoadError::plain(
            display,
            format!(
                "the file is larger than the {} MiB limit",
                MAX_FILE_BYTES / (1024 * 1024)
            ),
            "split the API description into several files",
        )
    };
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    // Read at most one byte past the limit: pipes and devices report no
    // length, so the metadata check alone would not bound them.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|error| {
            LoadError::plain(
                display,
                format!("cannot read the file: {error}"),
                "check the path and its permissions",
            )
        })?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large());
    }
    decode(bytes, display)
}

/// UTF-8 with an optional byte-order mark; anything else is refused.
pub fn decode(mut bytes: Vec<u8>, display: &str) -> Result<String, Box<LoadError>> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        bytes.drain(..3);
    } else if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(LoadError::plain(
            display,
            "the file is UTF-16 encoded".into(),
            "save it as UTF-8",
        ));
    } else if looks_wide_without_a_byte_order_mark(&bytes) {
        return Err(LoadError::plain(
            display,
            "the file looks UTF-16 or UTF-32 encoded (NUL bytes among its first characters)".into(),
            "save it as UTF-8",
        ));
    }
    String::from_utf8(bytes).map_err(|error| {
        LoadError::plain(
            display,
            format!(
                "the file is not UTF-8 text (invalid byte at offset {})",
                error.utf8_error().valid_up_to()
            ),
            "save it as UTF-8; binary files are not API descriptions",
        )
    })
}

/// Whether the first four bytes are ASCII text written in UTF-16 or UTF-32
/// (RFC 4627's detection: where the NULs fall tells the encoding). A NUL
/// is never part of a YAML or JSON text, so UTF-8 text does not start so.
fn looks_wide_without_a_byte_order_mark(bytes: &[u8]) -> bool {
    let [a, b, c, d] = match bytes.get(..4) {
        Some(&[a, b, c, d]) => [a, b, c, d],
        _ => return false,
    };
    let nul = [a == 0, b == 0, c == 0, d == 0];
    let wide = matches!(
        nul,
        [true, false, true, false]
            | [false, true, false, true]
            | [true, true, true, false]
            | [false, true, true, true]
    );
    wide && [a, b, c, d].iter().all(u8::is_ascii)
}

/// Calls `visit` with every `$ref` string in a tree, skipping example
/// data (`example`, `examples` lists, an Example Object's `value`), where
/// a `$ref` key is payload, not a reference.
fn collect_refs(node: &Node, visit: &mut impl FnMut(&str, Span)) {
    #[derive(Clone, Copy, PartialEq)]
    enum Place {
        Normal,
        /// The mapping under `examples:`: each value is an Example Object.
        ExampleMap,
        /// An Example Object: its `value` is data.
        Example,
    }
    let mut stack = vec![(node, Place::Normal)];
    while let Some((node, place)) = stack.pop() {
        match &node.value {
            Value::Map(entries) => {
                for entry in entries {
                    let key = &*entry.key;
                    if key == "$ref" {
                        if let Some(reference) = entry.value.as_str() {
                            visit(reference, entry.value.span);
                        }
                        continue;
                    }
                    let child = match (place, key) {
                        (Place::Example, "value") | (_, "example") => continue,
                        (Place::ExampleMap, _) => Place::Example,
                        (_, "examples") if entry.value.as_seq().is_some() => continue,
                        (_, "examples") => Place::ExampleMap,
                        _ => Place::Normal,
                    };
                    stack.push((&entry.value, child));
                }
            }
            Value::Seq(items) => stack.extend(items.iter().map(|item| (item, Place::Normal))),
            _ => {}
        }
    }
}

/// JSON pointer of the node or key that starts at `span`, found by a
/// full walk: nodes an overlay wrote are not in source order.
fn pointer_of_span(root: &Node, span: Span) -> Option<String> {
    let mut stack = vec![(root, String::new())];
    while let Some((node, pointer)) = stack.pop() {
        if node.span == span {
            return Some(pointer);
        }
        match &node.value {
            Value::Map(entries) => {
                for entry in entries.iter() {
                    let child = node::pointer_join(&pointer, &entry.key);
                    if entry.key_span == span {
                        return Some(child);
                    }
                    stack.push((&entry.value, child));
                }
            }
            Value::Seq(items) => {
                for (at, item) in items.iter().enumerate() {
                    stack.push((item, node::pointer_join(&pointer, &at.to_string())));
                }
            }
            _ => {}
        }
    }
    None
}

/// Resolves `.` and `..` without touching the file system, keeping leading
/// `..` of relative paths.
/// Why a `$ref`'s file is not read: missing, a directory, or not a regular
/// file (a pipe or a device, which could block or never end). `shown` is
/// its path as the user sees it, `written` as the `$ref` spells it.
fn not_a_file(path: &Path, shown: &str, written: &str) -> String {
    let shown = if shown.is_empty() { written } else { shown };
    match std::fs::metadata(path) {
        Err(_) => format!("the file {shown} does not exist"),
        Ok(metadata) if metadata.is_dir() => format!("`{written}` is a directory, not a file"),
        Ok(_) => format!("{shown} is not a regular file (a pipe or a device), so it is not read"),
    }
}

/// `path` made absolute against the working directory (as it is, if
/// that cannot be read), then [`normalize`]d: two spellings of one file
/// compare equal.
pub fn normalize_absolute(path: &Path) -> PathBuf {
    normalize(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_normal =
                    matches!(out.components().next_back(), Some(Component::Normal(_)));
                if last_is_normal {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}
