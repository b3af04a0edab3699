//! OpenAPI Overlay documents (1.0 and 1.1) applied to the root document's
//! positioned tree before anything reads the contract.
//!
//! Targets are RFC 9535 JSONPath queries (`serde_json_path`), evaluated on
//! a JSON copy of the tree; the normalized paths they return lead back to
//! the positioned nodes, which are changed in place. A value an action
//! writes keeps the span it has in the overlay file, so a finding about it
//! points at the overlay's line and column; a value `copy` takes from the
//! spec keeps the spec's span.
//!
//! Semantics (Overlay 1.1): actions apply in order, each to every node its
//! target selects. `remove: true` takes the node out of its mapping or
//! list. `update` merges a mapping into a mapping (recursively, as 1.1
//! says: a key only the update has is added; on a key both have, a mapping
//! is merged into a mapping, a list is concatenated to a list and a scalar
//! replaces a scalar, and any other pair is an error), appends to a list
//! it targets (the items of a list, or the value itself), and replaces a
//! scalar with a scalar. `copy` is `update` with the value of
//! the one node its own JSONPath selects. A target that selects nothing is
//! a warning. Only the root document is targeted: `$ref`s are not
//! followed, exactly as other overlay tools see the document.

use serde_json::Value as Json;
use serde_json_path::JsonPath;

use crate::node::{Node, Value};
use crate::parse::{MAX_DEPTH, MAX_NODES};
use crate::source::SourceFile;
use crate::{LoadError, located_error};

/// Most steps a query may take, which the query engine may hold at once:
/// with a `..`, the sum over every node of its depth (what `$..*` visits),
/// times the deepest depth for each further `..` (each one visits every
/// node below every node the one before it reached); without, the number
/// of values; either way times the selectors of every union (`[0,0,0]`
/// reaches one node three times).
const MAX_QUERY_STEPS: usize = 50_000_000;

/// An overlay action that did nothing, with where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayWarning {
    pub file: String,
    /// 1-based line and column of the action's `target`.
    pub line: usize,
    pub col: usize,
    pub message: String,
}

impl std::fmt::Display for OverlayWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

/// One step of a normalized path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Index(usize),
    Key(String),
}

enum Change<'a> {
    Remove,
    Update(&'a Node),
    Copy(JsonPath, &'a Node),
}

struct Action<'a> {
    number: usize,
    target_text: &'a str,
    target_node: &'a Node,
    target: JsonPath,
    change: Change<'a>,
}

/// Applies the overlay document `overlay` (parsed from `source`) to `root`.
pub(crate) fn apply(
    root: &mut Node,
    overlay: &Node,
    source: &SourceFile,
) -> Result<Vec<OverlayWarning>, Box<LoadError>> {
    let actions = read_actions(overlay, source)?;
    let mut warnings = Vec::new();
    let mut mirror = root.to_json();
    let mut shape = Shape::of(&mirror);
    for action in &actions {
        let too_far = |node: &Node, query: &str, steps: Option<usize>| {
            error_at(
                source,
                node,
                match steps {
                    Some(steps) => format!(
                        "action {}: `{query}` would take about {steps} steps over this document (each `..` visits every node below the nodes the query reached before it, each union selector reaches its nodes again), more than the {MAX_QUERY_STEPS} allowed",
                        action.number
                    ),
                    None => format!(
                        "action {}: `{query}` holds a query from the root (`$`) inside a filter, which would read the whole document again for every node the filter tests",
                        action.number
                    ),
                },
                "name the path down to the nodes, with one `..` at most and filters that test the current node (`@`), e.g. `$.paths..parameters[?@.in == 'header']`",
            )
        };
        if let Err(steps) = shape.query_cost(&mirror, action.target_text) {
            return Err(too_far(action.target_node, action.target_text, steps));
        }
        let paths = select(&action.target, &mirror);
        if paths.is_empty() {
            warnings.push(OverlayWarning {
                file: source.display.clone(),
                line: action.target_node.span.line as usize,
                col: action.target_node.span.col as usize + 1,
                message: format!(
                    "action {}: target `{}` selects nothing in the spec, so the action changes nothing",
                    action.number, action.target_text
                ),
            });
            continue;
        }
        let value = match &action.change {
            Change::Remove => {
                if paths.iter().any(Vec::is_empty) {
                    return Err(error_at(
                        source,
                        action.target_node,
                        format!(
                            "action {}: `remove` cannot remove the whole document",
                            action.number
                        ),
                        "target a node inside the document, e.g. `$.paths['/orders']`",
                    ));
                }
                let mut paths = paths;
                // Later list items first, so earlier indices stay valid.
                paths.sort_by(|a, b| b.cmp(a));
                paths.dedup();
                for path in &paths {
                    remove_node(root, path);
                    remove_json(&mut mirror, path);
                }
                shape = Shape::of(&mirror);
                continue;
            }
            Change::Update(value) => (*value).clone(),
            Change::Copy(from, copy_node) => {
                let from_text = copy_node.as_str().unwrap_or_default();
                if let Err(steps) = shape.query_cost(&mirror, from_text) {
                    return Err(too_far(copy_node, from_text, steps));
                }
                let sources = select(from, &mirror);
                let [path] = sources.as_slice() else {
                    return Err(error_at(
                        source,
                        copy_node,
                        format!(
                            "action {}: `copy` must select exactly one node, and `{}` selects {}",
                            action.number,
                            copy_node.as_str().unwrap_or_default(),
                            sources.len()
                        ),
                        "make the `copy` query name a single node, e.g. `$.components.schemas.Order`",
                    ));
                };
                node_at(root, path)
                    .cloned()
                    .unwrap_or_else(|| (*copy_node).clone())
            }
        };
        // Where an error about what this action writes points: the copy's
        // query, or the target.
        let place = match &action.change {
            Change::Copy(_, node) => *node,
            _ => action.target_node,
        };
        // Bounded before anything is written: an action applied to many
        // nodes, or a copy of a list into itself repeated, grows the
        // document without end.
        let added = Shape::of(&value.to_json());
        for path in &paths {
            shape.values = shape.values.saturating_add(added.values);
            shape.depth = shape.depth.max(path.len() + added.depth);
        }
        if shape.values > MAX_NODES || shape.depth > MAX_DEPTH {
            return Err(error_at(
                source,
                place,
                format!(
                    "action {}: the document would hold more than {MAX_NODES} values or nest deeper than {MAX_DEPTH} levels",
                    action.number
                ),
                "apply the change to fewer nodes, and never copy a node into itself",
            ));
        }
        for path in &paths {
            let Some(target) = node_at_mut(root, path) else {
                continue;
            };
            if let Err(why) = merge(target, &value) {
                return Err(error_at(
                    source,
                    place,
                    format!("action {}: {why} at {}", action.number, normalized(path)),
                    "an update merges a mapping into a mapping, concatenates a list to a list and replaces a scalar with a scalar; to replace a value of another type, remove it in one action and add it to its parent in the next",
                ));
            }
        }
        // The mirror follows once per node changed, not once per time a
        // union reached it.
        let mut changed = paths;
        changed.sort();
        changed.dedup();
        for path in &changed {
            let Some(json) = node_at(root, path).map(Node::to_json) else {
                continue;
            };
            if let Some(slot) = json_at_mut(&mut mirror, path) {
                *slot = json;
            }
        }
    }
    Ok(warnings)
}

/// How large a JSON tree is, for the limits above. An update or a copy
/// adds its value's size for every node it reaches (an upper bound: a
/// merge may replace rather than add); a remove counts the tree again.
struct Shape {
    values: usize,
    depth: usize,
}

impl Shape {
    fn of(json: &Json) -> Shape {
        let mut shape = Shape {
            values: 0,
            depth: 0,
        };
        walk(json, |depth| {
            shape.values += 1;
            shape.depth = shape.depth.max(depth);
        });
        shape
    }

    /// Whether `query` may run over `mirror`: `Err(Some(steps))` when it
    /// would take more than [`MAX_QUERY_STEPS`], `Err(None)` when a filter
    /// in it queries from the root.
    fn query_cost(&self, mirror: &Json, query: &str) -> Result<(), Option<usize>> {
        let reading = read_query(query);
        if reading.root_in_filter {
            return Err(None);
        }
        let base = if reading.descendants == 0 {
            self.values
        } else {
            let mut depths = 0usize;
            walk(mirror, |depth| depths = depths.saturating_add(depth));
            (1..reading.descendants)
                .fold(depths, |steps, _| steps.saturating_mul(self.depth.max(1)))
        };
        let steps = base.saturating_mul(reading.union_reach);
        if steps > MAX_QUERY_STEPS {
            return Err(Some(steps));
        }
        Ok(())
    }
}

/// Calls `visit` with the depth of every value in `json` (the root's is 0),
/// without recursion.
fn walk(json: &Json, mut visit: impl FnMut(usize)) {
    let mut stack = vec![(json, 0usize)];
    while let Some((json, depth)) = stack.pop() {
        visit(depth);
        match json {
            Json::Array(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            Json::Object(members) => stack.extend(members.values().map(|value| (value, depth + 1))),
            _ => {}
        }
    }
}

/// What makes a JSONPath query costly, read off its text outside string
/// literals (the query has parsed already).
struct QueryReading {
    /// Descendant segments (`..`), filters included.
    descendants: usize,
    /// The product of the selectors of every bracket (`[0,1]` is 2).
    union_reach: usize,
    /// A `$` after the first character: a query from the root inside a
    /// filter, run again for every node the filter tests.
    root_in_filter: bool,
}

fn read_query(query: &str) -> QueryReading {
    let bytes = query.trim_start().as_bytes();
    let mut reading = QueryReading {
        descendants: 0,
        union_reach: 1,
        root_in_filter: false,
    };
    // The selectors counted so far in each open bracket, and how many
    // parentheses (function arguments, groupings) are open inside it.
    let mut brackets: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            quote @ (b'"' | b'\'') => {
                at += 1;
                while at < bytes.len() && bytes[at] != quote {
                    at += if bytes[at] == b'\\' { 2 } else { 1 };
                }
            }
            b'.' if bytes.get(at + 1) == Some(&b'.') => {
                reading.descendants += 1;
                at += 1;
            }
            b'$' if at > 0 => reading.root_in_filter = true,
            b'[' => brackets.push((1, 0)),
            b'(' => {
                if let Some((_, parens)) = brackets.last_mut() {
                    *parens += 1;
                }
            }
            b')' => {
                if let Some((_, parens)) = brackets.last_mut() {
                    *parens = parens.saturating_sub(1);
                }
            }
            b',' => {
                if let Some((selectors, 0)) = brackets.last_mut() {
                    *selectors += 1;
                }
            }
            b']' => {
                if let Some((selectors, _)) = brackets.pop() {
                    reading.union_reach = reading.union_reach.saturating_mul(selectors);
                }
            }
            _ => {}
        }
        at += 1;
    }
    reading
}

/// Checks the document's shape and parses every action's JSONPath.
fn read_actions<'a>(
    overlay: &'a Node,
    source: &SourceFile,
) -> Result<Vec<Action<'a>>, Box<LoadError>> {
    const DOCUMENT_HELP: &str = "an Overlay document is a mapping with `overlay: 1.1.0`, `info` (title, version) and a list of `actions`; give the OpenAPI document itself as the command's spec argument";
    if overlay.as_map().is_none() {
        return Err(error_at(
            source,
            overlay,
            format!("not an Overlay document: it is {}", overlay.kind()),
            DOCUMENT_HELP,
        ));
    }
    let version = match overlay.get("overlay") {
        None => {
            return Err(error_at(
                source,
                overlay,
                "not an Overlay document: it has no `overlay` field".into(),
                DOCUMENT_HELP,
            ));
        }
        Some(node) => match overlay_version(node) {
            Some(minor) => minor,
            None => {
                return Err(error_at(
                    source,
                    node,
                    "this Overlay version is not supported".into(),
                    "idemgen applies Overlay 1.0.x and 1.1.x documents: write `overlay: 1.1.0`",
                ));
            }
        },
    };
    match overlay.get("info") {
        Some(info) if info.as_map().is_some() => {}
        Some(info) => {
            return Err(error_at(
                source,
                info,
                format!("`info` must be a mapping, not {}", info.kind()),
                "write `info: {title: My overlay, version: 1.0.0}`",
            ));
        }
        None => {
            return Err(error_at(
                source,
                overlay,
                "the Overlay document has no `info`".into(),
                "add `info: {title: My overlay, version: 1.0.0}`",
            ));
        }
    }
    let items = match overlay.get("actions") {
        Some(actions) => match actions.as_seq() {
            Some(items) if !items.is_empty() => items,
            _ => {
                return Err(error_at(
                    source,
                    actions,
                    "`actions` must be a non-empty list".into(),
                    "list the actions, each with a `target` and an `update`, `remove` or `copy`",
                ));
            }
        },
        None => {
            return Err(error_at(
                source,
                overlay,
                "the Overlay document has no `actions`".into(),
                "add `actions:`, a list of actions each with a `target` and an `update`, `remove` or `copy`",
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(at, item)| read_action(at + 1, item, version, source))
        .collect()
}

/// The minor version of a supported `overlay: 1.x.y`.
fn overlay_version(node: &Node) -> Option<u8> {
    let text = node.as_str()?;
    let rest = text.strip_prefix("1.")?;
    let (minor, patch) = rest.split_once('.')?;
    let minor = match minor {
        "0" => 0,
        "1" => 1,
        _ => return None,
    };
    (!patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit())).then_some(minor)
}

fn read_action<'a>(
    number: usize,
    item: &'a Node,
    version: u8,
    source: &SourceFile,
) -> Result<Action<'a>, Box<LoadError>> {
    const ACTION_HELP: &str = "an action is a mapping with `target` (a JSONPath such as `$.paths['/orders'].post`) and one of `update`, `remove: true` or `copy`";
    let Some(entries) = item.as_map() else {
        return Err(error_at(
            source,
            item,
            format!("action {number} is {}, not a mapping", item.kind()),
            ACTION_HELP,
        ));
    };
    for entry in entries {
        let key = &*entry.key;
        if !matches!(key, "target" | "description" | "update" | "remove" | "copy")
            && !key.starts_with("x-")
        {
            let mut error = error_at(
                source,
                &entry.value,
                format!("action {number} has an unknown field `{key}`"),
                ACTION_HELP,
            );
            error.location = Some((
                source.byte_offset(entry.key_span.start as usize),
                entry.key_span.line as usize,
                entry.key_span.col as usize + 1,
            ));
            return Err(error);
        }
    }
    let Some(target_node) = item.get("target") else {
        return Err(error_at(
            source,
            item,
            format!("action {number} has no `target`"),
            ACTION_HELP,
        ));
    };
    let (target_text, target) = query(number, "target", target_node, source)?;
    let remove = match item.get("remove") {
        None => false,
        Some(node) => match node.as_bool() {
            Some(flag) => flag,
            None => {
                return Err(error_at(
                    source,
                    node,
                    format!(
                        "action {number}: `remove` must be true or false, not {}",
                        node.kind()
                    ),
                    "write `remove: true`",
                ));
            }
        },
    };
    // Overlay 1.1: remove wins over update, update over copy.
    let change = if remove {
        Change::Remove
    } else if let Some(update) = item.get("update") {
        Change::Update(update)
    } else if let Some(copy) = item.get("copy") {
        if version == 0 {
            return Err(error_at(
                source,
                copy,
                format!(
                    "action {number}: `copy` is an Overlay 1.1 action, but the document says 1.0"
                ),
                "write `overlay: 1.1.0` at the top",
            ));
        }
        let (_, from) = query(number, "copy", copy, source)?;
        Change::Copy(from, copy)
    } else {
        return Err(error_at(
            source,
            item,
            format!("action {number} neither updates, removes nor copies anything"),
            ACTION_HELP,
        ));
    };
    Ok(Action {
        number,
        target_text,
        target_node,
        target,
        change,
    })
}

/// Parses a JSONPath field; an error points at the offending character.
fn query<'a>(
    number: usize,
    field: &str,
    node: &'a Node,
    source: &SourceFile,
) -> Result<(&'a str, JsonPath), Box<LoadError>> {
    let Some(text) = node.as_str() else {
        return Err(error_at(
            source,
            node,
            format!(
                "action {number}: `{field}` must be a JSONPath string, not {}",
                node.kind()
            ),
            "write a query such as `$.paths['/orders'].post`, quoted in YAML",
        ));
    };
    JsonPath::parse(text).map(|path| (text, path)).map_err(|error| {
        let mut located = error_at(
            source,
            node,
            format!(
                "action {number}: `{field}` is not an RFC 9535 JSONPath: {} (at character {})",
                error.message(),
                error.position() + 1
            ),
            "names with characters other than letters, digits and _ go in brackets and quotes: `$.paths['/orders/{id}']['x-idempotency']`",
        );
        // Point into the string when it is written on one line.
        let quoted = source
            .text
            .get(source.byte_offset(node.span.start as usize)..)
            .is_some_and(|rest| rest.starts_with(['"', '\'']));
        let shift = error.position() + usize::from(quoted);
        if let Some((_, line, col)) = located.location {
            located.location = Some((
                source.byte_offset(node.span.start as usize + shift),
                line,
                col + shift,
            ));
        }
        located
    })
}

fn error_at(source: &SourceFile, node: &Node, message: String, help: &str) -> Box<LoadError> {
    let mut error = located_error(
        source,
        node.span.start as usize,
        node.span.line as usize,
        node.span.col as usize,
    );
    error.message = message;
    error.help = help.to_string();
    Box::new(error)
}

/// The normalized paths `path` selects, in the query's order.
fn select(path: &JsonPath, mirror: &Json) -> Vec<Vec<Step>> {
    path.query_located(mirror)
        .locations()
        .map(|location| {
            location
                .iter()
                .map(|element| match element.as_index() {
                    Some(index) => Step::Index(index),
                    None => Step::Key(element.as_name().unwrap_or_default().to_string()),
                })
                .collect()
        })
        .collect()
}

/// A normalized path as RFC 9535 writes it, for messages.
fn normalized(path: &[Step]) -> String {
    let mut text = String::from("$");
    for step in path {
        match step {
            Step::Index(index) => text.push_str(&format!("[{index}]")),
            Step::Key(key) => text.push_str(&format!(
                "['{}']",
                key.replace('\\', "\\\\").replace('\'', "\\'")
            )),
        }
    }
    text
}

fn node_at<'n>(root: &'n Node, path: &[Step]) -> Option<&'n Node> {
    path.iter().try_fold(root, |node, step| match step {
        Step::Key(key) => node.get(key),
        Step::Index(index) => node.as_seq()?.get(*index),
    })
}

fn node_at_mut<'n>(root: &'n mut Node, path: &[Step]) -> Option<&'n mut Node> {
    let mut node = root;
    for step in path {
        node = match (&mut node.value, step) {
            (Value::Map(mapping), Step::Key(key)) => &mut mapping.get_mut(key)?.value,
            (Value::Seq(items), Step::Index(index)) => items.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(node)
}

fn json_at_mut<'j>(root: &'j mut Json, path: &[Step]) -> Option<&'j mut Json> {
    let mut json = root;
    for step in path {
        json = match step {
            Step::Key(key) => json.get_mut(key.as_str())?,
            Step::Index(index) => json.get_mut(*index)?,
        };
    }
    Some(json)
}

fn remove_node(root: &mut Node, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let Some(parent) = node_at_mut(root, parent) else {
        return;
    };
    match (&mut parent.value, last) {
        (Value::Map(mapping), Step::Key(key)) => {
            mapping.remove(key);
        }
        (Value::Seq(items), Step::Index(index)) if *index < items.len() => {
            items.remove(*index);
        }
        _ => {}
    }
}

fn remove_json(root: &mut Json, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    match (json_at_mut(root, parent), last) {
        (Some(Json::Object(map)), Step::Key(key)) => {
            map.remove(key);
        }
        (Some(Json::Array(items)), Step::Index(index)) if *index < items.len() => {
            items.remove(*index);
        }
        _ => {}
    }
}

/// Merges `value` into `target` (see the module comment).
fn merge(target: &mut Node, value: &Node) -> Result<(), String> {
    match (&mut target.value, &value.value) {
        (Value::Map(mapping), Value::Map(entries)) => {
            for entry in entries {
                let Some(existing) = mapping.get_mut(&entry.key) else {
                    mapping.push(entry.clone());
                    continue;
                };
                match (&existing.value.value, &entry.value.value) {
                    (Value::Map(_), Value::Map(_)) | (Value::Seq(_), Value::Seq(_)) => {
                        merge(&mut existing.value, &entry.value)?;
                    }
                    (Value::Map(_) | Value::Seq(_), _) | (_, Value::Map(_) | Value::Seq(_)) => {
                        return Err(format!(
                            "`{}` is {} in the target and {} in the update, which cannot be merged",
                            entry.key,
                            existing.value.kind(),
                            entry.value.kind()
                        ));
                    }
                    _ => existing.value = entry.value.clone(),
                }
            }
            Ok(())
        }
        (Value::Seq(items), Value::Seq(more)) => {
            items.extend(more.iter().cloned());
            Ok(())
        }
        (Value::Seq(items), _) => {
            items.push(value.clone());
            Ok(())
        }
        (Value::Map(_), _) => Err(format!(
            "the target is a mapping, and an update must be a mapping, not {}",
            value.kind()
        )),
        (_, Value::Map(_) | Value::Seq(_)) => Err(format!(
            "the target is {}, which only a scalar can replace, not {}",
            target.kind(),
            value.kind()
        )),
        _ => {
            *target = value.clone();
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    fn run(spec: &str, overlay: &str) -> Result<(Json, Vec<OverlayWarning>), Box<LoadError>> {
        let mut root = crate::parse_tree("openapi.yaml", spec).unwrap();
        let source = SourceFile::new("o.yaml".into(), "o.yaml".into(), overlay.into());
        let mut tree = crate::parse_tree("o.yaml", overlay).unwrap();
        retag(&mut tree, FileId(1));
        let warnings = apply(&mut root, &tree, &source)?;
        Ok((root.to_json(), warnings))
    }

    fn retag(node: &mut Node, file: FileId) {
        node.span.file = file;
        match &mut node.value {
            Value::Map(mapping) => {
                for entry in mapping.entries_mut() {
                    entry.key_span.file = file;
                    retag(&mut entry.value, file);
                }
            }
            Value::Seq(items) => items.iter_mut().for_each(|item| retag(item, file)),
            _ => {}
        }
    }

    const HEAD: &str = "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n";

    #[test]
    fn update_merges_mappings_recursively_appends_to_lists_and_replaces_scalars() {
        let (json, warnings) = run(
            "info: {title: a, contact: {name: n}}\ntags: [x]\n",
            &format!(
                "{HEAD}  - target: $\n    update: {{info: {{contact: {{email: e}}, title: b}}}}\n  - target: $.tags\n    update: y\n  - target: $.tags\n    update: [z, w]\n  - target: $.info.title\n    update: c\n"
            ),
        )
        .unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            json,
            serde_json::json!({
                "info": {"title": "c", "contact": {"name": "n", "email": "e"}},
                "tags": ["x", "y", "z", "w"]
            })
        );
    }

    #[test]
    fn a_list_inside_an_update_is_concatenated_and_other_pairs_are_refused() {
        // Overlay 1.1: on a key both sides have, a list is concatenated to
        // a list; a list against a scalar (or a mapping) cannot be merged.
        let (json, _) = run(
            "paths: {/a: {get: {tags: [x], summary: s}}}\n",
            &format!(
                "{HEAD}  - target: $.paths['/a'].get\n    update: {{tags: [y], summary: t}}\n"
            ),
        )
        .unwrap();
        assert_eq!(
            json["paths"]["/a"]["get"],
            serde_json::json!({"tags": ["x", "y"], "summary": "t"})
        );
        let refused = run(
            "paths: {/a: {get: {tags: [x]}}}\n",
            &format!("{HEAD}  - target: $.paths['/a'].get\n    update: {{tags: y}}\n"),
        )
        .unwrap_err();
        assert!(
            refused
                .message
                .contains("`tags` is a list in the target and a string in the update"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn remove_takes_every_selected_node_and_later_items_first() {
        let (json, _) = run(
            "tags: [{name: a}, {name: b}, {name: c}]\nx: 1\n",
            &format!(
                "{HEAD}  - target: \"$.tags[?@.name == 'a' || @.name == 'c']\"\n    remove: true\n  - target: $.x\n    remove: true\n"
            ),
        )
        .unwrap();
        assert_eq!(json, serde_json::json!({"tags": [{"name": "b"}]}));
    }

    #[test]
    fn copy_merges_the_one_node_it_selects() {
        let (json, _) = run(
            "a: {k: 1}\nb: {j: 2}\n",
            &format!("{HEAD}  - target: $.b\n    copy: $.a\n"),
        )
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"a": {"k": 1}, "b": {"j": 2, "k": 1}})
        );
        let error = run(
            "a: {k: 1}\nb: {j: 2}\n",
            &format!("{HEAD}  - target: $.b\n    copy: $.*\n"),
        )
        .unwrap_err();
        assert!(
            error.message.contains("exactly one node"),
            "{}",
            error.message
        );
        assert_eq!(
            error.location.map(|(_, line, col)| (line, col)),
            Some((5, 11))
        );
    }

    #[test]
    fn a_target_that_selects_nothing_is_a_warning_at_its_line() {
        let (json, warnings) = run(
            "a: 1\n",
            &format!("{HEAD}  - target: $.missing\n    update: {{b: 2}}\n"),
        )
        .unwrap();
        assert_eq!(json, serde_json::json!({"a": 1}));
        assert_eq!((warnings[0].line, warnings[0].col), (4, 13));
        assert!(warnings[0].message.contains("selects nothing"));
    }

    #[test]
    fn a_list_copied_into_itself_again_and_again_is_stopped_at_the_node_limit() {
        let action = "  - target: $.x\n    copy: $.x\n";
        let error = run(
            "x: [1, 2, 3, 4, 5, 6, 7, 8]\n",
            &format!("{HEAD}{}", action.repeat(60)),
        )
        .expect_err("the list doubled 60 times");
        assert!(
            error.message.contains("more than 4000000 values"),
            "{}",
            error.message
        );
        // Doubling 8 items passes 4,000,000 at the 19th copy.
        assert!(error.message.starts_with("action 19:"), "{}", error.message);
    }

    #[test]
    fn a_node_copied_below_itself_is_stopped_at_the_depth_limit() {
        let action = "  - target: $.a\n    copy: $\n";
        let error = run("a: {b: 1}\n", &format!("{HEAD}{}", action.repeat(300)))
            .expect_err("the document nested itself 300 times");
        assert!(
            error.message.contains("deeper than 256 levels"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_query_whose_descendant_segments_multiply_past_the_limit_is_refused() {
        let deep = format!("x: {}{{}}{}\n", "{a: ".repeat(200), "}".repeat(200));
        let error = run(
            &deep,
            &format!("{HEAD}  - target: $..*..*..*..*\n    update: {{}}\n"),
        )
        .expect_err("the query was evaluated");
        assert!(
            error.message.contains("steps over this document"),
            "{}",
            error.message
        );
        // One `..` is a walk over the document, which is allowed.
        assert!(
            run(
                &deep,
                &format!("{HEAD}  - target: $..a\n    update: {{}}\n")
            )
            .is_ok()
        );
        // `..` inside a string names no descendant segment.
        assert_eq!(read_query("$['..'][?@.b == '..']..c").descendants, 1);
    }

    #[test]
    fn unions_that_reach_nodes_again_and_filters_that_query_from_the_root_are_refused() {
        let spec = format!("x: {}1{}\n", "[".repeat(10), "]".repeat(10));
        let union = "[0,0,0,0,0,0,0,0,0,0]".repeat(8);
        let error = run(
            &spec,
            &format!("{HEAD}  - target: \"$.x{union}\"\n    update: [2]\n"),
        )
        .expect_err("a hundred million paths were selected");
        assert!(
            error.message.contains("steps over this document"),
            "{}",
            error.message
        );
        let items: Vec<String> = (0..1000).map(|n| n.to_string()).collect();
        let spec = format!("x: [{}]\n", items.join(", "));
        let error = run(
            &spec,
            &format!("{HEAD}  - target: \"$.x[?$.x[?$.x[?$.x]]]\"\n    remove: true\n"),
        )
        .expect_err("a billion steps were taken");
        assert!(
            error.message.contains("query from the root"),
            "{}",
            error.message
        );
        // A union that names nodes once each, a filter on the current
        // node and a function's arguments cost nothing more.
        let reading = read_query("$.paths['/a','/b'][?match(@.operationId, 'p.*') && @.x]");
        assert_eq!((reading.union_reach, reading.root_in_filter), (2, false));
        let overlay = format!("{HEAD}  - target: \"$.x['a','b']\"\n    update: {{c: 1}}\n");
        assert!(run("x: {a: {}, b: {}}\n", &overlay).is_ok());
    }

    #[test]
    fn a_remove_gives_back_room_for_later_actions() {
        let items: Vec<String> = (0..200_000).map(|n| (n % 10).to_string()).collect();
        let spec = format!("x: []\ny: [{}]\n", items.join(","));
        // Each round adds 200,000 values and takes them away again:
        // counted only as added, 25 rounds would pass the 4,000,000 limit.
        let round = "  - target: $.x\n    copy: $.y\n  - target: $.x\n    remove: true\n  - target: $\n    update: {x: []}\n";
        let applied = run(&spec, &format!("{HEAD}{}", round.repeat(25)));
        assert!(applied.is_ok(), "{}", applied.err().unwrap().message);
    }
}
