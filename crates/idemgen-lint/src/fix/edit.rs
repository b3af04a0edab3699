//! Text edits at the loader's positions: replace a scalar, add an entry
//! to a mapping, add an item to a list, in the style the file already uses
//! (YAML block or flow, JSON pretty or compact, the siblings' indentation
//! and key quoting). Nothing outside the edited range changes.

use idemgen_spec::json_escapes::looks_like_json;
use idemgen_spec::quoted::quoted_scalar_end;
use idemgen_spec::{Entry, FileId, LoadProblem, Node, SourceFile, Span, Value, Workspace};

use super::emit::{Emit, yaml_key};
use super::{Edit, Offer};

/// YAML's white space: blanks and line breaks. Rust's `trim` also takes
/// a vertical tab, a form feed or U+0085, which are text to YAML (a plain
/// scalar may be nothing else).
const YAML_SPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Collects the edits of one fix.
pub struct Editor<'a> {
    workspace: &'a Workspace,
    edits: Vec<Edit>,
    /// An edit was refused, so the fix would be partial.
    refused: bool,
}

impl<'a> Editor<'a> {
    pub fn new(workspace: &'a Workspace) -> Self {
        Editor {
            workspace,
            edits: Vec::new(),
            refused: false,
        }
    }

    /// The fix, or `None` when nothing was edited. How safe it is is the
    /// rule's to say (its `declare_rule!`), not the builder's.
    pub fn finish(self, title: impl Into<String>) -> Option<Offer> {
        (!self.refused && !self.edits.is_empty()).then(|| Offer {
            title: title.into(),
            edits: merge_insertions(self.edits),
        })
    }

    fn source(&self, file: FileId) -> &'a SourceFile {
        self.workspace.file(file)
    }

    /// A file's text with YAML's line breaks as `\n` (a lone `\r` is one),
    /// which is how this editor finds lines; offsets are the file's.
    fn text(&self, file: FileId) -> &'a str {
        self.source(file).text_by_lines()
    }

    fn byte(&self, file: FileId, char_index: u32) -> usize {
        self.source(file).byte_offset(char_index as usize)
    }

    /// Whether the file is written as JSON: it starts with a bracket that
    /// opens its root, not a YAML block mapping whose first key is a flow
    /// mapping (`{a: 1}: b`).
    fn is_json(&self, file: FileId) -> bool {
        looks_like_json(self.text(file))
            && self
                .workspace
                .files
                .get(file.0 as usize)
                .is_some_and(|loaded| !starts_at_its_first_child(&loaded.root))
    }

    /// The node's text after any `&anchor` or `!tag`.
    fn body(&self, node: &Node) -> &'a str {
        let text = self.text(node.span.file);
        let mut rest = &text[self.byte(node.span.file, node.span.start).min(text.len())..];
        // An anchor or a tag ends at a blank or a flow indicator
        // (`&a{…}` is an anchored flow mapping); a verbatim tag
        // (`!<…>`) at its `>`.
        while rest.starts_with(['&', '!']) {
            let end = match rest.strip_prefix("!<") {
                Some(verbatim) => verbatim.find('>').map_or(rest.len(), |at| at + 3),
                None => rest
                    .find([' ', '\n', '\t', '\r', '{', '}', '[', ']', ','])
                    .unwrap_or(rest.len()),
            };
            rest = rest[end..].trim_start_matches([' ', '\t', '\n', '\r']);
        }
        rest
    }

    /// An alias (`*name`) shares its text with the anchor: editing through
    /// it would edit the wrong place.
    fn is_alias(&self, node: &Node) -> bool {
        self.body(node).starts_with('*')
    }

    /// Minified JSON: no space after `:` where the file has its first one.
    fn is_tight(&self, file: FileId) -> bool {
        let text = self.text(file);
        self.is_json(file)
            && text
                .find("\":")
                .is_some_and(|at| !text[at + 2..].starts_with([' ', '\t', '\n', '\r']))
    }

    fn has_duplicate_key(&self, file: FileId) -> bool {
        self.workspace.problems.iter().any(|problem| {
            matches!(problem, LoadProblem::DuplicateKey { again, .. } if again.file == file)
        })
    }

    fn is_flow(&self, node: &Node) -> bool {
        self.is_json(node.span.file)
            || (self.body(node).starts_with(['{', '[']) && !starts_at_its_first_child(node))
    }

    fn push(&mut self, file: FileId, start: usize, end: usize, replacement: String) {
        // A mapping with a key twice: the tree keeps one copy, the text
        // has both, and parsers disagree on which wins, so an edit could
        // land in the copy nobody reads and come back every pass. Such a
        // file gets no fix until `duplicate-key` is settled.
        if self.has_duplicate_key(file) {
            self.refused = true;
            return;
        }
        let display = self.source(file).display.clone();
        let mut replacement = match self.source(file).line_break_at(start) {
            "\n" => replacement,
            line_break => replacement.replace('\n', line_break),
        };
        // A plain scalar may end in an indicator after a blank (`$ -`),
        // which the parser reads again as a scalar's start when a flow
        // indicator follows it at once (`$ -,` does not load): a blank
        // keeps the comma apart. It goes after any such last character,
        // blank before it or not, as it changes no value.
        if replacement.starts_with(',') && self.text(file)[..start].ends_with(['-', '?', ':']) {
            replacement.insert(0, ' ');
        }
        // Two insertions at one point made by one fix are one insertion.
        self.edits.push(Edit {
            file: display,
            start,
            end,
            replacement,
        });
    }

    /// Adds the first entry (or item) to an empty flow collection, whose
    /// opening bracket ends at `at`; a second one this fix adds there
    /// follows the first, after a comma.
    fn push_into_empty(&mut self, file: FileId, at: usize, text: String, comma: &str) {
        let display = &self.source(file).display;
        let earlier = self
            .edits
            .iter_mut()
            .find(|edit| &edit.file == display && edit.start == at && edit.end == at);
        match earlier {
            Some(edit) => {
                edit.replacement.push_str(comma);
                edit.replacement.push_str(&text);
            }
            None => self.push(file, at, at, text),
        }
    }

    /// Replaces the scalar written at `span` with `value`.
    pub fn replace_scalar(&mut self, span: Span, value: &Emit) -> Option<()> {
        self.replace_scalar_noting(span, value, None)
    }

    /// [`Editor::replace_scalar`], with `# note` written after the value
    /// where a YAML comment can go: a block entry alone on its line with
    /// no comment yet (JSON has no comments, and text after a value in a
    /// flow collection would comment out the rest of it).
    pub fn replace_scalar_noting(
        &mut self,
        span: Span,
        value: &Emit,
        note: Option<&str>,
    ) -> Option<()> {
        let start = self.byte(span.file, span.start);
        let end = self.value_end_at(span);
        let old = &self.text(span.file)[start..end];
        // A value without text of its own (a flow key with neither `:`
        // nor value, `{retries, …}`) has nothing to replace: writing there
        // would glue the value to the key.
        if old.is_empty() || old.starts_with(['*', '&', '!', '|', '>']) || old.contains('\n') {
            return None;
        }
        let text = if self.is_json(span.file) {
            value.json_compact()
        } else if old.starts_with('\'') {
            match value {
                Emit::Str(text) => format!("'{}'", text.replace('\'', "''")),
                other => other.yaml_flow(),
            }
        } else if old.starts_with('"') {
            value.json_compact()
        } else {
            value.yaml_flow()
        };
        let note = note.filter(|_| !self.is_json(span.file)).filter(|_| {
            let whole = self.text(span.file);
            let line_start = whole[..start].rfind('\n').map_or(0, |at| at + 1);
            let line_end = whole[end..].find('\n').map_or(whole.len(), |at| end + at);
            let before = &whole[line_start..start];
            let after = &whole[end..line_end];
            after.trim().is_empty() && !before.contains(['{', '[', ',', '#'])
        });
        let text = match note {
            Some(note) => format!("{text}  # {note}"),
            None => text,
        };
        if text != old {
            self.push(span.file, start, end, text);
        }
        Some(())
    }

    /// Makes `path` under the mapping `node` hold `value`: replaces the
    /// scalar there, or adds the missing part of the path (as nested
    /// mappings). `$ref`s on the way are followed, so the file that holds
    /// each node is the one edited.
    pub fn set(&mut self, node: &Node, path: &[&str], value: Emit) -> Option<()> {
        let mut current = self.workspace.deref(node)?;
        for (at, segment) in path.iter().enumerate() {
            match current.entry(segment) {
                Some(entry) if at + 1 == path.len() => {
                    let empty = entry.value.span.start == entry.value.span.end;
                    return match &entry.value.value {
                        // `key:` with nothing after it has no text to replace.
                        Value::Map(_) | Value::Seq(_) => None,
                        Value::Null if empty => None,
                        _ => self.replace_scalar(entry.value.span, &value),
                    };
                }
                Some(entry) => current = self.workspace.deref(&entry.value)?,
                None => {
                    let nested = path[at + 1..]
                        .iter()
                        .rev()
                        .fold(value, |inner, key| Emit::map([(*key, inner)]));
                    return self.insert(current, None, segment, &nested);
                }
            }
        }
        None
    }

    /// Adds `key: value` to the mapping `map`, after the entry `after`
    /// (default: the last one).
    pub fn insert(
        &mut self,
        map: &Node,
        after: Option<&str>,
        key: &str,
        value: &Emit,
    ) -> Option<()> {
        let entries = map.as_map()?;
        if self.is_alias(map) || map.get(key).is_some() {
            return None;
        }
        let file = map.span.file;
        let anchor = after
            .and_then(|name| entries.iter().find(|entry| &*entry.key == name))
            .or(entries.last());
        if !self.is_flow(map) {
            let anchor = anchor?;
            let column = self.block_column(entries)?;
            let quote = self.quote_of(&entries[0]);
            let at = self.line_end_after(anchor);
            let unit = self.yaml_unit(file);
            let text = format!(
                "\n{}{}:{}",
                " ".repeat(column),
                yaml_key(key, quote),
                value.yaml_block_value(column, unit)
            );
            self.push(file, at, at, text);
            return Some(());
        }
        let json = self.is_json(file);
        let tight = self.is_tight(file);
        let (colon, comma) = if tight { (":", ",") } else { (": ", ", ") };
        let write_key = |quote| {
            if json {
                Emit::str(key).json_compact()
            } else {
                yaml_key(key, quote)
            }
        };
        match anchor {
            None => {
                let open = self.byte(file, map.span.start)
                    + self.text(file)[self.byte(file, map.span.start)..].find('{')?;
                let body = if json {
                    value.json_inline(tight)
                } else {
                    value.yaml_flow()
                };
                let entry = format!("{}{colon}{body}", write_key(None));
                self.push_into_empty(file, open + 1, entry, comma);
            }
            Some(entry) => {
                // After the last value, but inside the braces: a key with
                // no value (`{a:!b}`) has an empty value the parser places
                // past the closing brace.
                let close = self.value_end(map).saturating_sub(1);
                let text = self.text(file);
                let before_brace = if text.as_bytes().get(close) == Some(&b'}') {
                    close
                } else {
                    usize::MAX
                };
                let mut at = self.value_end(&entry.value).min(before_brace);
                // A key with no value before the brace (`{a: }`, `{a :}`)
                // has an empty value the parser places at its key or at
                // its `:`: the new entry goes before the brace, after the
                // `:`, and before a trailing comma there (`{a: , }`), or
                // the comma would be written twice.
                let key_end = self.byte(file, entry.key_span.end);
                if (at <= key_end || is_empty_value(&entry.value)) && before_brace != usize::MAX {
                    // A brace before the last key is not this mapping's:
                    // its end was misread, so there is no safe place.
                    if key_end > before_brace {
                        return None;
                    }
                    at = trailing_comma(&text[key_end..before_brace])
                        .map_or(before_brace, |comma| key_end + comma);
                }
                let quote = self.quote_of(&entries[0]);
                let text = match self.line_indent(file, entry.key_span) {
                    Some(indent) if entry.key_span.line != map.span.line => {
                        let body = if json {
                            value.json_pretty(&indent, &self.json_unit(file))
                        } else {
                            value.yaml_flow()
                        };
                        format!(",\n{indent}{}: {body}", write_key(quote))
                    }
                    _ => {
                        let body = if json {
                            value.json_inline(tight)
                        } else {
                            value.yaml_flow()
                        };
                        format!("{comma}{}{colon}{body}", write_key(quote))
                    }
                };
                self.push(file, at, at, text);
            }
        }
        Some(())
    }

    /// Appends `item` to the list `holder[key]`, creating the list when the
    /// key is absent.
    pub fn append(&mut self, holder: &Node, key: &str, item: Emit) -> Option<()> {
        let holder = self.workspace.deref(holder)?;
        let Some(list) = holder.get(key) else {
            return self.insert(holder, None, key, &Emit::Seq(vec![item]));
        };
        let items = list.as_seq()?;
        if self.is_alias(list) {
            return None;
        }
        let file = list.span.file;
        let json = self.is_json(file);
        if !self.is_flow(list) {
            let last = items.last()?;
            let first = items.first()?;
            // An empty item (`- ` alone, or before a comment) has a span
            // the parser places at whatever comes next, so neither the
            // list's column nor its end can be read off it: no edit.
            if is_empty_value(first) || is_empty_value(last) {
                return None;
            }
            let line_start = self.line_start(file, first.span);
            let prefix = &self.text(file)[line_start..self.byte(file, first.span.start)];
            let dash = prefix.rfind('-')?;
            let column = prefix[..dash].chars().count();
            let at = self.line_end_after_node(last);
            let text = format!(
                "\n{}{}",
                " ".repeat(column),
                item.yaml_seq_item(column, self.yaml_unit(file))
            );
            self.push(file, at, at, text);
            return Some(());
        }
        let tight = self.is_tight(file);
        let render = |editor: &Self, indent: Option<&str>| match (json, indent) {
            (true, Some(indent)) => item.json_pretty(indent, &editor.json_unit(file)),
            (true, None) => item.json_inline(tight),
            (false, _) => item.yaml_flow(),
        };
        match items.last() {
            None => {
                let start = self.byte(file, list.span.start);
                let open = start + self.text(file)[start..].find('[')?;
                let text = render(self, None);
                let comma = if tight { "," } else { ", " };
                self.push_into_empty(file, open + 1, text, comma);
            }
            Some(last) => {
                let at = self.value_end(last);
                let text = match self.line_indent(file, last.span) {
                    Some(indent) if last.span.line != list.span.line => {
                        format!(",\n{indent}{}", render(self, Some(&indent)))
                    }
                    _ => format!("{}{}", if tight { "," } else { ", " }, render(self, None)),
                };
                self.push(file, at, at, text);
            }
        }
        Some(())
    }

    /// The quote character of an existing key, to write new keys alike.
    fn quote_of(&self, entry: &Entry) -> Option<char> {
        let file = entry.key_span.file;
        self.text(file)[self.byte(file, entry.key_span.start)..]
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\''))
    }

    /// The column a block mapping's entries start at: the least of its
    /// keys' columns. An explicit key (`? key`) counts at its `?`, and one
    /// written on the line after its `?` (`? # note` then the key) sits
    /// further in than the mapping, as no plain key or `?` does.
    fn block_column(&self, entries: &[Entry]) -> Option<usize> {
        entries
            .iter()
            // An empty key's span is placed wherever the parser was.
            .filter(|entry| entry.key_span.start != entry.key_span.end)
            .map(|entry| self.entry_column(entry))
            .min()
            .or_else(|| entries.first().map(|entry| self.entry_column(entry)))
    }

    /// The column an entry starts at: its key's, or for an explicit key
    /// (`? key`) the `?`'s, two before the key.
    fn entry_column(&self, entry: &Entry) -> usize {
        let file = entry.key_span.file;
        let start = self.line_start(file, entry.key_span);
        let before = &self.text(file)[start..self.byte(file, entry.key_span.start)];
        match before.trim_end_matches([' ', '\t']).strip_suffix('?') {
            Some(ahead) if ahead.is_empty() || ahead.ends_with([' ', '\t']) => {
                ahead.chars().count()
            }
            _ => entry.key_span.col as usize,
        }
    }

    fn line_start(&self, file: FileId, span: Span) -> usize {
        let text = self.text(file);
        let at = self.byte(file, span.start);
        text[..at].rfind('\n').map_or(0, |newline| newline + 1)
    }

    /// The whitespace before `span` on its line, if only whitespace is.
    fn line_indent(&self, file: FileId, span: Span) -> Option<String> {
        let start = self.line_start(file, span);
        let prefix = &self.text(file)[start..self.byte(file, span.start)];
        prefix
            .chars()
            .all(|c| c == ' ' || c == '\t')
            .then(|| prefix.to_string())
    }

    /// Where the text of a mapping entry ends: the end of the line that
    /// holds its last value (after any trailing comment).
    fn line_end_after(&self, entry: &Entry) -> usize {
        if is_empty_value(&entry.value) {
            return self.line_end_after_key(entry);
        }
        self.line_end_after_node(&entry.value)
    }

    /// The end of the line of an entry's key and its `:` (for an entry
    /// with an empty value).
    fn line_end_after_key(&self, entry: &Entry) -> usize {
        let file = entry.key_span.file;
        self.end_of_line(file, self.past_indicator(file, entry.key_span.end))
    }

    fn line_end_after_node(&self, node: &Node) -> usize {
        let mut node = node;
        loop {
            if self.is_alias(node) || self.is_flow(node) {
                break;
            }
            match &node.value {
                Value::Map(entries) => match entries.last() {
                    Some(entry) => {
                        if is_empty_value(&entry.value) {
                            return self.line_end_after_key(entry);
                        }
                        node = &entry.value;
                    }
                    None => break,
                },
                Value::Seq(items) => match items.last() {
                    Some(item) => node = item,
                    None => break,
                },
                _ => break,
            }
        }
        let end = self.value_end(node);
        self.end_of_line(node.span.file, end)
    }

    /// Past the `:` that follows a key ending at `key_end`. An empty key
    /// (a line holding only `:`) has an empty span before its `:`; without
    /// this, trimming back from it would cross into the line above.
    fn past_indicator(&self, file: FileId, key_end: u32) -> usize {
        let text = self.text(file);
        let at = self.byte(file, key_end).min(text.len());
        let blanks = text[at..].len() - text[at..].trim_start_matches([' ', '\t']).len();
        match text[at + blanks..].starts_with(':') {
            true => at + blanks + 1,
            false => at,
        }
    }

    /// From `at`, back over trailing whitespace, then forward to the end
    /// of that line.
    fn end_of_line(&self, file: FileId, at: usize) -> usize {
        let text = self.text(file);
        let content_end = text[..at.min(text.len())]
            .trim_end_matches(YAML_SPACE)
            .len();
        match text[content_end..].find('\n') {
            // Before a CRLF's `\r`, so the inserted line ends the same way.
            Some(newline) if text[..content_end + newline].ends_with('\r') => {
                content_end + newline - 1
            }
            Some(newline) => content_end + newline,
            None => text.len(),
        }
    }

    fn value_end_at(&self, span: Span) -> usize {
        self.value_end(&Node {
            value: Value::Null,
            span,
        })
    }

    /// Where a value's own text ends: quoted scalars at their closing
    /// quote (the parser's span also covers trailing blanks), plain ones
    /// before trailing blanks, flow collections after their bracket.
    fn value_end(&self, node: &Node) -> usize {
        let file = node.span.file;
        let text = self.text(file);
        let start = self.byte(file, node.span.start).min(text.len());
        let end = self.byte(file, node.span.end).min(text.len()).max(start);
        // A flow collection ends at its closing bracket, also after an
        // anchor or a tag (`! {…}`); its span may run on over a comment
        // after it, and text added there would be commented out. One that
        // starts at its first key (a pair whose key is a flow mapping,
        // `{a: 1}: 8`) is not one: the brace is the key's.
        if matches!(node.value, Value::Map(_) | Value::Seq(_)) && !starts_at_its_first_child(node) {
            let body = self.body(node);
            if body.starts_with(['{', '[']) {
                let open = text.len() - body.len();
                return self
                    .source(file)
                    .flow_end(open, || flow_end(text, open))
                    .unwrap_or(start + text[start..end].trim_end_matches(YAML_SPACE).len());
            }
        }
        match text[start..].chars().next() {
            // An empty value in a flow collection (a key with no `:`
            // before `,`) has a span the parser starts at the indicator
            // after it: it ends where it starts.
            Some(',' | '}' | ']') if matches!(node.value, Value::Null) => start,
            // A mapping without braces (a block one, or a pair in a flow
            // sequence, `[a: b]`, `["a": b]`) ends where its last value
            // does: its span may run on over a comment after it, and one
            // that starts with a quoted key is not a quoted scalar.
            Some(_) if matches!(node.value, Value::Map(_) | Value::Seq(_)) => {
                let trimmed = start + text[start..end].trim_end_matches(YAML_SPACE).len();
                match &node.value {
                    Value::Map(entries) => match entries.last() {
                        Some(entry) if is_empty_value(&entry.value) => {
                            self.past_indicator(file, entry.key_span.end)
                        }
                        Some(entry) => self.value_end(&entry.value),
                        None => trimmed,
                    },
                    Value::Seq(items) => items.last().map_or(trimmed, |item| self.value_end(item)),
                    _ => trimmed,
                }
            }
            Some('"' | '\'') => quoted_scalar_end(text, start).unwrap_or(end),
            // A quoted scalar after a tag or an anchor ends at its closing
            // quote, as one without does (its span may run on past a
            // comma); a block scalar's text may hold ` #`, and so may
            // other tagged text: their spans are taken as they are.
            Some('!' | '&') if self.body(node).starts_with(['"', '\'']) => {
                let quote = text.len() - self.body(node).len();
                quoted_scalar_end(text, quote).unwrap_or(end)
            }
            Some('|' | '>' | '!' | '&') => {
                start + text[start..end].trim_end_matches(YAML_SPACE).len()
            }
            // A plain scalar ends before a comment (` #` cannot be part of
            // one), which its span may cover.
            _ if after_block_header(&text[..start]) => {
                start + text[start..end].trim_end_matches(YAML_SPACE).len()
            }
            _ => {
                let body = &text[start..end];
                let body = comment_start(body).map_or(body, |at| &body[..at]);
                start + body.trim_end_matches(YAML_SPACE).len()
            }
        }
    }

    /// Indentation step of a YAML file: how much deeper the root's first
    /// nested block mapping is indented (default 2).
    fn yaml_unit(&self, file: FileId) -> usize {
        self.workspace
            .files
            .get(file.0 as usize)
            .and_then(|loaded| {
                loaded.root.as_map()?.iter().find_map(|entry| {
                    let first = entry.value.as_map()?.first()?;
                    let step = first.key_span.col.checked_sub(entry.key_span.col)?;
                    (step > 0 && first.key_span.line != entry.key_span.line)
                        .then_some(step as usize)
                })
            })
            .unwrap_or(2)
    }

    /// Indentation step of a JSON file: the root's first key's indent.
    fn json_unit(&self, file: FileId) -> String {
        self.workspace
            .files
            .get(file.0 as usize)
            .and_then(|loaded| {
                let first = loaded.root.as_map()?.first()?;
                if first.key_span.line == loaded.root.span.line {
                    return None;
                }
                self.line_indent(file, first.key_span)
                    .filter(|indent| !indent.is_empty())
            })
            .unwrap_or_else(|| "  ".to_string())
    }
}

/// Whether `before` (the text before a scalar's span) ends with a block
/// scalar's header (`|`, `>-`, `|2+`, a comment after it): the scalar's
/// span then starts at its content, where ` #` is text, not a comment.
fn after_block_header(before: &str) -> bool {
    let line = before
        .trim_end_matches(YAML_SPACE)
        .rsplit('\n')
        .next()
        .unwrap_or("");
    let line = comment_start(line)
        .map_or(line, |at| &line[..at])
        .trim_end_matches(YAML_SPACE);
    let token = line.rsplit([' ', '\t']).next().unwrap_or("");
    token.starts_with(['|', '>'])
        && token[1..]
            .chars()
            .all(|c| c.is_ascii_digit() || c == '-' || c == '+')
}

/// Whether `node` is a value written as nothing (`a:` or `- ` with no
/// text): its span is empty, and the parser places it at whatever comes
/// next, so no position can be read off it.
fn is_empty_value(node: &Node) -> bool {
    matches!(node.value, Value::Null) && node.span.start == node.span.end
}

/// Whether `node` starts where its first item or key does: a block
/// collection whose span the parser starts at its first item's content
/// (a sequence at its key's indentation, `- {…}`), which a `{` or `[`
/// there does not make a flow one.
fn starts_at_its_first_child(node: &Node) -> bool {
    match &node.value {
        Value::Seq(items) => items
            .first()
            .is_some_and(|item| item.span.start == node.span.start),
        Value::Map(entries) => entries
            .first()
            .is_some_and(|entry| entry.key_span.start == node.span.start),
        _ => false,
    }
}

/// Where a comment starts in `text`: a `#` at its start or after a blank.
fn comment_start(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find(|&at| {
        bytes[at] == b'#' && (at == 0 || matches!(bytes[at - 1], b' ' | b'\t' | b'\n' | b'\r'))
    })
}

/// Where the comma in `gap` is, the text between a flow entry without a
/// value and its collection's closing bracket (blanks, the `:`, comments,
/// a tag or anchor, none of which can hold a comma outside a comment).
fn trailing_comma(gap: &str) -> Option<usize> {
    let mut line_start = 0;
    for line in gap.split_inclusive('\n') {
        let code = &line[..comment_start(line).unwrap_or(line.len())];
        if let Some(comma) = code.find(',') {
            return Some(line_start + comma);
        }
        line_start += line.len();
    }
    None
}

/// The end (after its closing bracket) of the flow collection that opens
/// at `start`, skipping quoted scalars and comments; `None` when it does
/// not close.
fn flow_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut at = start;
    // The last character that was not a blank, the one before it, and
    // whether a blank came since: a quote opens a quoted scalar only where
    // a scalar can start, after a `:` only past a blank or a JSON-like key
    // (`in:"x` is one plain scalar, `"in":"x"` a key and its value).
    let mut previous = b'{';
    let mut before_previous = b'{';
    let mut blank_since = false;
    while at < bytes.len() {
        let byte = bytes[at];
        let scalar_can_start = match previous {
            b'{' | b'[' | b',' | b'?' => true,
            b':' => blank_since || matches!(before_previous, b'"' | b'\'' | b'}' | b']'),
            _ => false,
        };
        match byte {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            b'"' | b'\'' if scalar_can_start => {
                // To the closing quote, which the steps below pass.
                at = quoted_scalar_end(text, at).map_or(bytes.len(), |end| end - 1);
            }
            // A tag or an anchor (`! "…"`, `&a "…"`): a scalar may still
            // start after it, so what came before it is kept.
            b'!' | b'&' if scalar_can_start => {
                at += match text[at..].strip_prefix("!<") {
                    Some(verbatim) => verbatim.find('>').map_or(text.len() - at, |end| end + 3),
                    None => text[at..]
                        .find([' ', '\t', '\n', '\r', '{', '}', '[', ']', ','])
                        .unwrap_or(text.len() - at),
                };
                continue;
            }
            b'#' if at == start || matches!(bytes[at - 1], b' ' | b'\t' | b'\n' | b'\r') => {
                at += text[at..].find('\n').unwrap_or(text.len() - at);
                continue;
            }
            _ => {}
        }
        if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
            blank_since = true;
        } else {
            before_previous = previous;
            previous = byte;
            blank_since = false;
        }
        at += 1;
    }
    None
}

/// Insertions written one after another at one offset become one edit.
/// Their texts go deepest first (stable otherwise): at the end of an
/// operation that also ends the document, the operation's new entries
/// come before the document's, or they would land inside its block. At
/// one indentation a sequence item goes before a mapping entry: a block
/// sequence may sit at its key's indentation (`parameters:` then `- …`
/// under it), and an item after the next key would belong to nothing.
fn merge_insertions(edits: Vec<Edit>) -> Vec<Edit> {
    let mut merged: Vec<Edit> = Vec::new();
    let mut group: Vec<Edit> = Vec::new();
    let flush = |group: &mut Vec<Edit>, merged: &mut Vec<Edit>| {
        group.sort_by_key(|edit| {
            let first_line = first_line(&edit.replacement);
            let item = first_line.trim_start_matches(YAML_SPACE).starts_with("- ");
            (std::cmp::Reverse(indent(first_line)), !item)
        });
        let mut parts = group.drain(..);
        if let Some(mut first) = parts.next() {
            for part in parts {
                first.replacement.push_str(&part.replacement);
            }
            merged.push(first);
        }
    };
    for edit in edits {
        let joins = group
            .first()
            .is_some_and(|first| first.file == edit.file && first.start == edit.start);
        if !(joins && edit.start == edit.end) {
            flush(&mut group, &mut merged);
        }
        if edit.start == edit.end {
            group.push(edit);
        } else {
            merged.push(edit);
        }
    }
    flush(&mut group, &mut merged);
    merged
}

/// The first line an insertion starts (its text after the leading line
/// break).
fn first_line(insertion: &str) -> &str {
    insertion
        .trim_start_matches([',', '\r', '\n'])
        .split('\n')
        .next()
        .unwrap_or("")
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}
