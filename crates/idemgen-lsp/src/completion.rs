//! Completion inside `x-idempotency` blocks of YAML documents: field names
//! at each level, and the values of the fields that take one of a few
//! words (profiles, dialects, `key.in`, ...) or `{segments}` in
//! `key.format`.
//!
//! The text is read line by line, not parsed: while a field is being typed
//! the document is usually not valid YAML. Indentation gives the chain of
//! keys above the cursor. Flow mappings (`key: {in: header}`) and JSON
//! documents get no completion.

use lsp_types::{CompletionItem, CompletionItemKind, Position};

use super::documents::LineIndex;
use idemgen_lint::suppress::KEY as IGNORE_KEY;
use idemgen_spec::contract::key_template::SEGMENT_NAMES;
use idemgen_spec::contract::model::Dialect;
use idemgen_spec::contract::parse::{CHOICES, SECTIONS};
use idemgen_spec::contract::profile::Profile;

const BLOCK_KEY: &str = "x-idempotency";

pub fn complete(text: &str, position: Position) -> Vec<CompletionItem> {
    let index = LineIndex::new(text);
    let cursor = index.offset(text, position);
    let line_start = index.offset(text, Position::new(position.line, 0));
    let before = &text[line_start..cursor];
    let (indent, is_item, typed) = split_line(before);
    // Lines as the index counts them: a `\r` alone ends one too.
    let lines = text[..line_start]
        .split(['\n', '\r'])
        .rev()
        .filter(|line| !line.is_empty());
    let Some(section) = section_above(lines, indent) else {
        // Outside any block: offer the extensions themselves.
        return if typed.contains(':') {
            Vec::new()
        } else {
            [BLOCK_KEY, IGNORE_KEY]
                .iter()
                .map(|key| field(key, "idemgen"))
                .collect()
        };
    };
    match typed.split_once(':') {
        Some((key, value)) => values(&join(&section, key.trim()), value),
        None if is_item => values(&section.join("."), typed),
        None => SECTIONS
            .iter()
            .find(|(name, _)| *name == section.join("."))
            .map(|(_, fields)| fields.iter().map(|name| field(name, BLOCK_KEY)).collect())
            .unwrap_or_default(),
    }
}

/// A line's indentation, whether it is a list item, and what follows.
fn split_line(line: &str) -> (usize, bool, &str) {
    let rest = line.trim_start_matches(' ');
    let indent = line.len() - rest.len();
    match rest.strip_prefix("- ") {
        Some(item) => (indent + 2, true, item.trim_start()),
        None => (indent, false, rest),
    }
}

/// The keys between the nearest `x-idempotency:` above and the cursor's
/// indentation, e.g. `["key"]`; `None` when the cursor is in no block.
fn section_above<'t>(
    lines: impl Iterator<Item = &'t str>,
    mut indent: usize,
) -> Option<Vec<String>> {
    let mut keys = Vec::new();
    for line in lines {
        let (line_indent, _, rest) = split_line(line);
        if rest.is_empty() || rest.starts_with('#') || line_indent >= indent {
            continue;
        }
        let key = rest.split_once(':')?.0.trim().trim_matches(['"', '\'']);
        if key == BLOCK_KEY {
            keys.reverse();
            return Some(keys);
        }
        keys.push(key.to_string());
        indent = line_indent;
        if indent == 0 {
            return None;
        }
    }
    None
}

fn join(section: &[String], key: &str) -> String {
    if section.is_empty() {
        key.to_string()
    } else {
        format!("{}.{key}", section.join("."))
    }
}

/// The values a field takes; `typed` is what follows its colon.
fn values(field: &str, typed: &str) -> Vec<CompletionItem> {
    let words: &[&str] = match field {
        "profile" => &Profile::NAMES,
        "store.dialect" => &Dialect::NAMES,
        "key.format" => {
            // Inside an unclosed `{`: the segment names.
            let open = typed.rfind('{');
            if open.is_none_or(|at| typed[at..].contains('}')) {
                return Vec::new();
            }
            return SEGMENT_NAMES
                .iter()
                .map(|name| CompletionItem {
                    label: format!("{{{name}}}"),
                    kind: Some(CompletionItemKind::SNIPPET),
                    filter_text: Some((*name).to_string()),
                    insert_text: Some(format!("{name}}}")),
                    detail: Some("key.format segment".into()),
                    ..CompletionItem::default()
                })
                .collect();
        }
        other => CHOICES
            .iter()
            .find(|(name, _)| *name == other)
            .map_or(&[][..], |(_, words)| words),
    };
    words
        .iter()
        .map(|word| CompletionItem {
            label: (*word).to_string(),
            kind: Some(CompletionItemKind::ENUM_MEMBER),
            detail: Some(field.to_string()),
            ..CompletionItem::default()
        })
        .collect()
}

fn field(name: &str, detail: &str) -> CompletionItem {
    CompletionItem {
        label: name.to_string(),
        kind: Some(CompletionItemKind::FIELD),
        detail: Some(detail.to_string()),
        insert_text: Some(format!("{name}: ")),
        ..CompletionItem::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str) -> Vec<String> {
        let at = text.find('|').expect("a cursor");
        let text = text.replace('|', "");
        let index = LineIndex::new(&text);
        complete(&text, index.position(&text, at))
            .into_iter()
            .map(|item| item.label)
            .collect()
    }

    const HEAD: &str = "paths:\n  /pay:\n    post:\n      x-idempotency:\n";

    #[test]
    fn fields_at_each_level() {
        let top = labels(&format!("{HEAD}        wi|"));
        assert!(top.contains(&"window".to_string()), "{top:?}");
        let key = labels(&format!(
            "{HEAD}        key:\n          in: header\n          |"
        ));
        assert_eq!(key, ["in", "name", "format", "max-length", "scope"]);
        let outside = labels("paths:\n  /pay:\n    post:\n      x-|");
        assert_eq!(outside, [BLOCK_KEY, IGNORE_KEY]);
        // Lines that end in a `\r` alone, or in `\r\n`, are lines too.
        for line_break in ["\r", "\r\n"] {
            let text = format!("{HEAD}        key:\n          in: header\n          |")
                .replace('\n', line_break);
            assert_eq!(
                labels(&text),
                ["in", "name", "format", "max-length", "scope"],
                "{line_break:?}"
            );
        }
    }

    #[test]
    fn values_of_choice_fields_and_segments() {
        assert_eq!(
            labels(&format!("{HEAD}        profile: |")),
            Profile::NAMES.to_vec()
        );
        assert_eq!(
            labels(&format!("{HEAD}        store:\n          dialect: |")),
            Dialect::NAMES.to_vec()
        );
        assert_eq!(
            labels(&format!("{HEAD}        key:\n          in: |")),
            ["header", "query", "body"]
        );
        let segments = labels(&format!("{HEAD}        key:\n          format: \"pay:{{|"));
        assert!(segments.contains(&"{uuid}".to_string()), "{segments:?}");
        assert!(
            labels(&format!(
                "{HEAD}        key:\n          format: \"pay:{{uuid}}|"
            ))
            .is_empty()
        );
        assert_eq!(
            labels(&format!(
                "{HEAD}        fingerprint:\n          include:\n            - |"
            )),
            ["method", "path", "query", "headers", "body"]
        );
    }

    /// The words offered are the ones the contract parser accepts.
    #[test]
    fn every_offered_choice_parses() {
        for (field, words) in CHOICES {
            for word in words.iter() {
                let (section, key) = field.split_once('.').unwrap();
                let value = if key == "include" {
                    format!("[{word}]")
                } else {
                    word.to_string()
                };
                let yaml = format!("{section}:\n  {key}: {value}\n");
                let parsed = idemgen_spec::parse::parse(idemgen_spec::FileId(0), &yaml).unwrap();
                let mut errors = Vec::new();
                idemgen_spec::contract::parse::parse_block(&parsed.root, "", &mut errors);
                assert!(
                    errors.iter().all(|error| !error.message.contains(word)),
                    "{field}: {word}: {:?}",
                    errors.iter().map(|e| &e.message).collect::<Vec<_>>()
                );
            }
        }
    }
}
