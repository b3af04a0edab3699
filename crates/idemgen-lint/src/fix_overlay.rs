//! `lint --fix --overlay OUT`: the fixes as an OpenAPI Overlay 1.1
//! document instead of edits to the spec.
//!
//! The fixes are applied in memory as `--fix` applies them; the overlay is
//! then the difference between the root document before and after, tree
//! against tree, so every fixable rule is covered by one mechanism and the
//! overlay means exactly what the in-place fix means. A key that is new is
//! added by an `update` of its parent mapping; a changed mapping is
//! compared key by key; items added at the end of a list are appended one
//! action each; any other changed value is removed, then added again to its
//! parent (an `update` merges rather than replaces). Targets are RFC 9535
//! JSONPath: `.name` where the name is letters, digits and `_`, else
//! `['name']` with `'` and `\` escaped.
//!
//! Overlays target the root document only (JSONPath does not follow
//! `$ref`), so fixes to a file the root references are not in the overlay:
//! [`OverlayFixes::left_out`] names those files.

use std::path::{Component, Path};

use idemgen_spec::{LoadError, Node, Value};

use crate::fix::emit::{Emit, yaml_block_entries};
use crate::fix_loop::FixOutcome;

/// The overlay `--fix --overlay` writes.
#[derive(Debug, Clone)]
pub struct OverlayFixes {
    pub text: String,
    pub actions: usize,
    /// Referenced files the fixes changed, which the overlay cannot reach.
    pub left_out: Vec<String>,
}

/// One step into the document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Update(Vec<Step>, Emit),
    Remove(Vec<Step>),
}

/// The overlay for `outcome` (the result of fixing the spec at `spec`), to
/// be written to `out`: YAML, or JSON when `out` ends in `.json`.
pub fn overlay_fixes(
    spec: &Path,
    outcome: &FixOutcome,
    out: &Path,
) -> Result<OverlayFixes, Box<LoadError>> {
    let (actions, left_out) = fix_actions(spec, outcome)?;
    let count = actions.len();
    let spec_name = spec.file_name().map_or_else(
        || spec.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    let root = idemgen_spec::normalize_absolute(spec);
    let document = Emit::map([
        ("overlay", Emit::str("1.1.0")),
        (
            "info",
            Emit::map([
                ("title", Emit::str(format!("idemgen fixes for {spec_name}"))),
                ("version", Emit::str("1.0.0")),
            ]),
        ),
        (
            "extends",
            Emit::str(relative_to(&root, &idemgen_spec::normalize_absolute(out))),
        ),
        (
            "actions",
            Emit::Seq(actions.into_iter().map(action_emit).collect()),
        ),
    ]);
    let text = if is_json(out) {
        format!("{}\n", document.json_pretty("", "  "))
    } else {
        let Emit::Map(entries) = &document else {
            unreachable!("the document is a mapping")
        };
        format!("{}\n", yaml_block_entries(entries, 0, 2))
    };
    Ok(OverlayFixes {
        text,
        actions: count,
        left_out,
    })
}

/// The overlay `out` whose text is `existing`, with the actions for
/// `outcome` appended: `outcome` is the spec fixed as it reads through
/// `out` (and the overlays before it), so what the new actions change
/// comes after what `out` already says. Everything in `existing` is kept
/// byte for byte (the placeholders a person filled in, comments, layout).
/// `Err` says why the actions cannot be appended: `actions` is not the
/// last thing in the file, or a YAML flow list.
pub fn append_fixes(
    spec: &Path,
    outcome: &FixOutcome,
    out: &Path,
    existing: &str,
) -> Result<OverlayFixes, String> {
    let (actions, left_out) = fix_actions(spec, outcome).map_err(|error| error.message)?;
    let count = actions.len();
    if count == 0 {
        return Ok(OverlayFixes {
            text: existing.to_string(),
            actions: 0,
            left_out,
        });
    }
    let display = out.display().to_string();
    // Positions are counted in characters after a byte-order mark; the
    // mark and the file's line ends are kept.
    let (mark, body) = match existing.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", existing),
    };
    let newline = if body.contains("\r\n") { "\r\n" } else { "\n" };
    let source =
        idemgen_spec::SourceFile::new(out.to_path_buf(), display.clone(), body.to_string());
    let byte = |char_index: u32| source.byte_offset(char_index as usize);
    let tree = idemgen_spec::parse_tree(&display, body).map_err(|error| error.message)?;
    let Some(Value::Seq(items)) = tree.get("actions").map(|list| &list.value) else {
        return Err("it has no `actions` list".to_string());
    };
    let list = tree.get("actions").expect("read above").span;
    let text = if is_json(out) {
        // After the last item (or inside `[]`), at the items' indentation.
        let (at, indent, separator) = match items.last() {
            Some(last) => (
                byte(last.span.end),
                column_of(body, byte(last.span.start)),
                ",",
            ),
            None => (
                byte(list.start) + 1,
                column_of(body, byte(list.start)) + 2,
                "",
            ),
        };
        let indent = " ".repeat(indent);
        let added: Vec<String> = actions
            .into_iter()
            .map(|action| {
                format!(
                    "{newline}{indent}{}",
                    action_emit(action)
                        .json_pretty(&indent, "  ")
                        .replace('\n', newline)
                )
            })
            .collect();
        format!(
            "{mark}{}{separator}{}{}",
            &body[..at],
            added.join(","),
            &body[at..]
        )
    } else {
        let start = byte(list.start);
        if body.as_bytes().get(start) != Some(&b'-') {
            return Err("its `actions` is a flow list (`[...]`), not a block list".to_string());
        }
        if !only_comments(&body[byte(list.end)..]) {
            return Err("`actions` is not the last thing in it".to_string());
        }
        let dash = column_of(body, start);
        let added: Vec<String> = actions
            .into_iter()
            .map(|action| {
                format!(
                    "{}{}",
                    " ".repeat(dash),
                    action_emit(action).yaml_seq_item(dash, 2)
                )
                .replace('\n', newline)
            })
            .collect();
        // Nothing of the file is trimmed: blank lines at its end may be a
        // kept (`|+`) scalar's.
        let ending = if body.is_empty() || body.ends_with('\n') {
            ""
        } else {
            newline
        };
        format!("{mark}{body}{ending}{}{newline}", added.join(newline))
    };
    // The appended text must read as the same overlay and the new actions.
    let reread = idemgen_spec::parse_tree(&display, text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|error| error.message)?;
    match reread.get("actions").map(|list| &list.value) {
        Some(Value::Seq(all)) if all.len() == items.len() + count => {}
        _ => return Err("appending to it would not keep its actions".to_string()),
    }
    Ok(OverlayFixes {
        text,
        actions: count,
        left_out,
    })
}

/// The actions that turn the fixed root document's `before` into its
/// `after`, and the referenced files the fixes changed (out of reach).
fn fix_actions(
    spec: &Path,
    outcome: &FixOutcome,
) -> Result<(Vec<Action>, Vec<String>), Box<LoadError>> {
    let root = idemgen_spec::normalize_absolute(spec);
    let mut actions = Vec::new();
    let mut left_out = Vec::new();
    for file in &outcome.files {
        if file.path != root {
            left_out.push(file.display.clone());
            continue;
        }
        let before = idemgen_spec::parse_tree(&file.display, &file.before)?;
        let after = idemgen_spec::parse_tree(&file.display, &file.after)?;
        diff(&before, &after, &mut Vec::new(), &mut actions);
    }
    Ok((actions, left_out))
}

fn is_json(out: &Path) -> bool {
    out.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("json"))
}

/// The column of byte `at` in `text`, counted in bytes from its line's
/// start (indentation is spaces).
fn column_of(text: &str, at: usize) -> usize {
    at - text[..at].rfind('\n').map_or(0, |newline| newline + 1)
}

/// Whether `text` holds only blank lines and YAML comments.
fn only_comments(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || line.starts_with('#')
    })
}

fn action_emit(action: Action) -> Emit {
    match action {
        Action::Update(path, value) => Emit::Map(vec![
            ("target".into(), Emit::str(target(&path))),
            ("update".into(), value),
        ]),
        Action::Remove(path) => Emit::Map(vec![
            ("target".into(), Emit::str(target(&path))),
            ("remove".into(), Emit::Bool(true)),
        ]),
    }
}

/// Appends the actions that turn `before` into `after` (both mappings).
fn diff(before: &Node, after: &Node, path: &mut Vec<Step>, actions: &mut Vec<Action>) {
    let (Some(old), Some(new)) = (before.as_map(), after.as_map()) else {
        return;
    };
    for entry in old {
        if after.get(&entry.key).is_none() {
            actions.push(Action::Remove(child(
                path,
                Step::Key(entry.key.to_string()),
            )));
        }
    }
    let mut added = Vec::new();
    for entry in new {
        let Some(was) = before.get(&entry.key) else {
            added.push((entry.key.to_string(), Emit::of_node(&entry.value)));
            continue;
        };
        let now = &entry.value;
        if was.to_json() == now.to_json() {
            continue;
        }
        path.push(Step::Key(entry.key.to_string()));
        let in_place = changed_in_place(was, now, path, actions);
        path.pop();
        if !in_place {
            actions.push(Action::Remove(child(
                path,
                Step::Key(entry.key.to_string()),
            )));
            added.push((entry.key.to_string(), Emit::of_node(now)));
        }
    }
    if !added.is_empty() {
        actions.push(Action::Update(path.clone(), Emit::Map(added)));
    }
}

/// Appends the actions for a value that changed at `path` and stays where
/// it is (a mapping changed key by key, a list changed item by item or
/// grown at its end); `false` when it must be replaced instead.
fn changed_in_place(
    was: &Node,
    now: &Node,
    path: &mut Vec<Step>,
    actions: &mut Vec<Action>,
) -> bool {
    match (&was.value, &now.value) {
        (Value::Map(_), Value::Map(_)) => {
            diff(was, now, path, actions);
            true
        }
        (Value::Seq(old), Value::Seq(new)) if new.len() >= old.len() => {
            let items_fit = old.iter().zip(new).all(|(a, b)| {
                a.to_json() == b.to_json() || (a.as_map().is_some() && b.as_map().is_some())
            });
            // An appended list would be spread into items by the tools
            // that apply overlays: replace the whole list then.
            if !items_fit || new[old.len()..].iter().any(|item| item.as_seq().is_some()) {
                return false;
            }
            for (at, (a, b)) in old.iter().zip(new).enumerate() {
                if a.to_json() != b.to_json() {
                    path.push(Step::Index(at));
                    diff(a, b, path, actions);
                    path.pop();
                }
            }
            for item in &new[old.len()..] {
                actions.push(Action::Update(path.clone(), Emit::of_node(item)));
            }
            true
        }
        _ => false,
    }
}

fn child(path: &[Step], step: Step) -> Vec<Step> {
    let mut path = path.to_vec();
    path.push(step);
    path
}

/// An RFC 9535 query for `path`: `$.paths['/orders'].post['x-idempotency']`.
fn target(path: &[Step]) -> String {
    let mut text = String::from("$");
    for step in path {
        match step {
            Step::Index(index) => text.push_str(&format!("[{index}]")),
            Step::Key(key) if is_shorthand(key) => {
                text.push('.');
                text.push_str(key);
            }
            Step::Key(key) => {
                text.push_str("['");
                for c in key.chars() {
                    match c {
                        '\'' => text.push_str("\\'"),
                        '\\' => text.push_str("\\\\"),
                        '\u{8}' => text.push_str("\\b"),
                        '\u{c}' => text.push_str("\\f"),
                        '\n' => text.push_str("\\n"),
                        '\r' => text.push_str("\\r"),
                        '\t' => text.push_str("\\t"),
                        c if (c as u32) < 0x20 => text.push_str(&format!("\\u{:04x}", c as u32)),
                        c => text.push(c),
                    }
                }
                text.push_str("']");
            }
        }
    }
    text
}

/// Whether RFC 9535's `.name` shorthand can spell `key` (ASCII subset).
fn is_shorthand(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `spec` as a relative reference from the overlay file at `out`
/// (`extends` is resolved against the overlay's location).
fn relative_to(spec: &Path, out: &Path) -> String {
    let from: Vec<Component> = out
        .parent()
        .map_or_else(Vec::new, |dir| dir.components().collect());
    let to: Vec<Component> = spec.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return spec.display().to_string();
    }
    let mut parts: Vec<String> = vec!["..".to_string(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|part| part.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_quote_the_names_shorthand_cannot_spell() {
        let path = [
            Step::Key("paths".into()),
            Step::Key("/orders/{id}".into()),
            Step::Key("post".into()),
            Step::Key("x-idempotency".into()),
            Step::Key("it's ~ \\".into()),
            Step::Index(2),
        ];
        assert_eq!(
            target(&path),
            "$.paths['/orders/{id}'].post['x-idempotency']['it\\'s ~ \\\\'][2]"
        );
    }

    #[test]
    fn extends_is_relative_to_the_overlay() {
        assert_eq!(
            relative_to(
                Path::new("/a/api/openapi.yaml"),
                Path::new("/a/overlays/fix.yaml")
            ),
            "../api/openapi.yaml"
        );
        assert_eq!(
            relative_to(Path::new("/a/openapi.yaml"), Path::new("/a/fix.yaml")),
            "openapi.yaml"
        );
    }

    fn tree(text: &str) -> Node {
        idemgen_spec::parse_tree("t.yaml", text).unwrap()
    }

    #[test]
    fn new_keys_update_the_parent_and_changed_scalars_are_replaced() {
        let before = tree("a:\n  b: 1\n  list: [1]\n  gone: x\n");
        let after = tree("a:\n  b: 2\n  list: [1, {k: v}]\n  new: {c: d}\n");
        let mut actions = Vec::new();
        diff(&before, &after, &mut Vec::new(), &mut actions);
        let a = || Step::Key("a".into());
        assert_eq!(
            actions,
            vec![
                Action::Remove(vec![a(), Step::Key("gone".into())]),
                Action::Remove(vec![a(), Step::Key("b".into())]),
                Action::Update(
                    vec![a(), Step::Key("list".into())],
                    Emit::map([("k", Emit::str("v"))])
                ),
                Action::Update(
                    vec![a()],
                    Emit::map([
                        ("b", Emit::Int(2)),
                        ("new", Emit::map([("c", Emit::str("d"))]))
                    ])
                ),
            ]
        );
    }

    /// What a person wrote is kept byte for byte when actions are
    /// appended: a byte-order mark, CRLF line ends, text that is not ASCII
    /// (positions are characters, slicing is bytes) and a kept (`|+`)
    /// scalar's blank lines at the end.
    #[test]
    fn appending_keeps_every_byte_of_the_overlay() {
        use crate::fix_loop::FixedFile;
        let spec = std::env::temp_dir().join("append-test/openapi.yaml");
        let outcome = FixOutcome {
            files: vec![FixedFile {
                path: idemgen_spec::normalize_absolute(&spec),
                display: "openapi.yaml".into(),
                before: "openapi: 3.1.0\npaths: {}\n".into(),
                after: "openapi: 3.1.0\npaths: {}\nx-new: 1\n".into(),
            }],
            applied: 1,
            ..FixOutcome::default()
        };
        let existing = "\u{feff}overlay: 1.1.0\r\ninfo: {title: Prix en €, version: '1'}\r\n\
                        actions:\r\n  - target: $.info\r\n    update:\r\n      \
                        description: |+\r\n        kept\r\n\r\n\r\n";
        let out = spec.with_file_name("fix.overlay.yaml");
        let appended = append_fixes(&spec, &outcome, &out, existing).unwrap();
        assert_eq!(appended.actions, 1);
        assert!(appended.text.starts_with(existing), "{:?}", appended.text);
        let added = &appended.text[existing.len()..];
        assert_eq!(added, "  - target: $\r\n    update: {x-new: 1}\r\n");

        let json = "{\n  \"overlay\": \"1.1.0\",\n  \"info\": {\"title\": \"€\", \"version\": \"1\"},\n  \
                    \"actions\": [\n    {\"target\": \"$.info\", \"remove\": true}\n  ]\n}\n";
        let out = spec.with_file_name("fix.overlay.json");
        let appended = append_fixes(&spec, &outcome, &out, json).unwrap();
        let reread: serde_json::Value = serde_json::from_str(&appended.text).unwrap();
        assert_eq!(
            reread["actions"].as_array().unwrap().len(),
            2,
            "{}",
            appended.text
        );
        assert_eq!(reread["actions"][1]["update"]["x-new"], 1);
        assert_eq!(reread["info"]["title"], "€");
    }
}
