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
//! A document is read and applied as the version its `overlay` field
//! declares. Actions apply in order, each to every node its target
//! selects; a target that selects nothing is a warning.
//!
//! Overlay 1.1: `remove: true` takes the node out of its mapping or list.
//! `update` merges a mapping into a mapping (recursively: a key only the
//! update has is added; on a key both have, a mapping is merged into a
//! mapping, a list is concatenated to a list and a scalar replaces a
//! scalar, and any other pair is an error), appends to a list it targets
//! (the items of a list, or the value itself), and replaces a scalar with
//! a scalar. `copy` is `update` with the value of the one node its own
//! JSONPath selects. An `update` or `copy` whose target selects nodes of
//! different kinds (mappings, lists, scalars) is refused.
//!
//! Overlay 1.0: a target selects mappings and lists only (a scalar is
//! refused). `update` merges a mapping into a mapping recursively, but on
//! a key both have only mappings merge: a list replaces a list and a
//! scalar a scalar (other pairs are an error); on a list it targets, the
//! value is appended as one entry, a list included. There is no `copy`.
//!
//! Either way the document's fields are checked: `overlay`, `info` (with
//! `title` and `version`, and `description` from 1.1 on), `extends` (when
//! it names a file, the spec the overlay is applied to) and `actions`,
//! besides `x-` extensions. Only the root document is targeted: `$ref`s
//! are not followed, exactly as other overlay tools see the document.

use std::path::{Path, PathBuf};

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

/// The Overlay versions read, by what their actions may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    /// 1.0.x: targets are mappings and lists; a list in an update
    /// replaces a list; no `copy`.
    V1_0,
    /// 1.1.x: targets of one kind; lists are concatenated; `copy`.
    V1_1,
}

/// Applies the overlay document `overlay` (parsed from `source`) to `root`,
/// the tree of the spec at `spec`.
pub(crate) fn apply(
    root: &mut Node,
    overlay: &Node,
    source: &SourceFile,
    spec: &Path,
) -> Result<Vec<OverlayWarning>, Box<LoadError>> {
    let (version, actions) = read_actions(overlay, source)?;
    check_extends(overlay, source, spec)?;
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
        check_kinds(version, action, root, &paths, source)?;
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
            if let Err(why) = merge(version, target, &value) {
                return Err(error_at(
                    source,
                    place,
                    format!("action {}: {why} at {}", action.number, normalized(path)),
                    match version {
                        Version::V1_1 => {
                            "an update merges a mapping into a mapping, concatenates a list to a list and replaces a scalar with a scalar; to replace a value of another type, remove it in one action and add it to its parent in the next"
                        }
                        Version::V1_0 => {
                            "an Overlay 1.0 update merges a mapping into a mapping, and on a key both have replaces a list with a list and a scalar with a scalar; to replace a value of another type, remove it in one action and add it to its parent in the next"
                        }
                    },
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

/// Checks the document's fields and parses every action's JSONPath.
fn read_actions<'a>(
    overlay: &'a Node,
    source: &SourceFile,
) -> Result<(Version, Vec<Action<'a>>), Box<LoadError>> {
    const DOCUMENT_HELP: &str = "an Overlay document is a mapping with `overlay: 1.1.0`, `info` (title, version) and a list of `actions`; give the OpenAPI document itself as the command's spec argument";
    let Some(fields) = overlay.as_map() else {
        return Err(error_at(
            source,
            overlay,
            format!("not an Overlay document: it is {}", overlay.kind()),
            DOCUMENT_HELP,
        ));
    };
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
            Some(version) => version,
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
    for entry in fields {
        let key = &*entry.key;
        if !matches!(key, "overlay" | "info" | "extends" | "actions") && !key.starts_with("x-") {
            return Err(error_at_key(
                source,
                entry,
                format!("the Overlay document has an unknown field `{key}`"),
                &format!(
                    "an Overlay document has `overlay`, `info`, `extends` and `actions`, and extensions named `x-…`; remove the field or rename it `x-{key}`"
                ),
            ));
        }
    }
    read_info(overlay, version, source)?;
    if let Some(extends) = overlay
        .get("extends")
        .filter(|node| node.as_str().is_none())
    {
        return Err(error_at(
            source,
            extends,
            format!("`extends` must be a string, not {}", extends.kind()),
            "write the spec's path relative to the overlay (or its URL), e.g. `extends: openapi.yaml`",
        ));
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
    let actions = items
        .iter()
        .enumerate()
        .map(|(at, item)| read_action(at + 1, item, version, source))
        .collect::<Result<_, _>>()?;
    Ok((version, actions))
}

/// Checks `info`: a mapping with the strings `title` and `version`, a
/// `description` string from Overlay 1.1 on, and `x-` extensions.
fn read_info(overlay: &Node, version: Version, source: &SourceFile) -> Result<(), Box<LoadError>> {
    const INFO_HELP: &str = "write `info: {title: My overlay, version: 1.0.0}`";
    let info = match overlay.get("info") {
        Some(info) => info,
        None => {
            return Err(error_at(
                source,
                overlay,
                "the Overlay document has no `info`".into(),
                "add `info: {title: My overlay, version: 1.0.0}`",
            ));
        }
    };
    let Some(entries) = info.as_map() else {
        return Err(error_at(
            source,
            info,
            format!("`info` must be a mapping, not {}", info.kind()),
            INFO_HELP,
        ));
    };
    for entry in entries {
        let key = &*entry.key;
        match key {
            "title" | "version" => {}
            "description" if version == Version::V1_1 => {}
            "description" => {
                return Err(error_at_key(
                    source,
                    entry,
                    "`info.description` is an Overlay 1.1 field, but the document says 1.0".into(),
                    "write `overlay: 1.1.0` at the top, or remove the description",
                ));
            }
            _ if key.starts_with("x-") => continue,
            _ => {
                return Err(error_at_key(
                    source,
                    entry,
                    format!("`info` has an unknown field `{key}`"),
                    "`info` has `title`, `version` and (Overlay 1.1) `description`, and extensions named `x-…`",
                ));
            }
        }
        if entry.value.as_str().is_none() {
            return Err(error_at(
                source,
                &entry.value,
                format!("`info.{key}` must be a string, not {}", entry.value.kind()),
                "quote it, e.g. `version: '1.0'`",
            ));
        }
    }
    for required in ["title", "version"] {
        if info.get(required).is_none() {
            return Err(error_at(
                source,
                info,
                format!("`info` has no `{required}`, which Overlay requires"),
                INFO_HELP,
            ));
        }
    }
    Ok(())
}

/// When `extends` names a file (a relative reference or a `file:` URL),
/// it must be `spec`, the document the overlay is applied to; a URL of
/// another scheme cannot be compared and is taken on trust.
fn check_extends(overlay: &Node, source: &SourceFile, spec: &Path) -> Result<(), Box<LoadError>> {
    let Some(node) = overlay.get("extends") else {
        return Ok(());
    };
    let Some(text) = node.as_str() else {
        return Ok(()); // refused by read_actions
    };
    let written = text.split(['#', '?']).next().unwrap_or_default();
    let decoded = crate::refs::percent_decode(written);
    let reference = decoded.as_deref().unwrap_or(written);
    let scheme = reference
        .split_once(':')
        .map(|(scheme, _)| scheme)
        .filter(|scheme| {
            scheme.len() > 1
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
    let named = match scheme {
        Some(scheme) if scheme.eq_ignore_ascii_case("file") => {
            let rest = &reference[scheme.len() + 1..];
            PathBuf::from(rest.strip_prefix("//").unwrap_or(rest))
        }
        Some(_) => return Ok(()),
        None if reference.is_empty() => return Ok(()),
        None => {
            let path = Path::new(reference);
            if path.is_absolute() {
                path.to_path_buf()
            } else {
                source.path.parent().unwrap_or(Path::new("")).join(path)
            }
        }
    };
    let named_abs = crate::normalize(&std::path::absolute(&named).unwrap_or(named.clone()));
    let spec_abs = crate::normalize(&std::path::absolute(spec).unwrap_or(spec.to_path_buf()));
    let same = named_abs == spec_abs
        || matches!(
            (named_abs.canonicalize(), spec_abs.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        );
    if same {
        return Ok(());
    }
    Err(error_at(
        source,
        node,
        format!(
            "the overlay extends `{text}` ({}), not {}, the spec it is applied to",
            named_abs.display(),
            spec_abs.display()
        ),
        "apply the overlay to the document it extends, or change `extends` to the spec's path relative to the overlay",
    ))
}

/// What an action's selection may hold, by the version: Overlay 1.0
/// targets mappings and lists only; under 1.1 an `update` or `copy`
/// selects nodes of one kind.
fn check_kinds(
    version: Version,
    action: &Action<'_>,
    root: &Node,
    paths: &[Vec<Step>],
    source: &SourceFile,
) -> Result<(), Box<LoadError>> {
    let kinds: Vec<(&'static str, &Vec<Step>)> = paths
        .iter()
        .filter_map(|path| {
            let node = node_at(root, path)?;
            let kind = match node.value {
                Value::Map(_) => "a mapping",
                Value::Seq(_) => "a list",
                _ => "a scalar",
            };
            Some((kind, path))
        })
        .collect();
    match version {
        Version::V1_0 => {
            if let Some((_, path)) = kinds.iter().find(|(kind, _)| *kind == "a scalar") {
                let found = node_at(root, path).map_or("a scalar", Node::kind);
                return Err(error_at(
                    source,
                    action.target_node,
                    format!(
                        "action {}: `{}` selects {found} at {}, and an Overlay 1.0 target selects mappings and lists only",
                        action.number,
                        action.target_text,
                        normalized(path)
                    ),
                    "target the mapping that holds the value and update its key (e.g. `target: $.info` with `update: {title: New title}`), or write `overlay: 1.1.0`, whose actions may target scalars",
                ));
            }
        }
        Version::V1_1 => {
            if matches!(action.change, Change::Remove) {
                return Ok(());
            }
            let Some((first, first_path)) = kinds.first() else {
                return Ok(());
            };
            if let Some((other, other_path)) = kinds.iter().find(|(kind, _)| kind != first) {
                return Err(error_at(
                    source,
                    action.target_node,
                    format!(
                        "action {}: `{}` selects nodes of different kinds, {first} at {} and {other} at {}, and Overlay 1.1 requires the nodes an update or copy selects to be all mappings, all lists or all scalars",
                        action.number,
                        action.target_text,
                        normalized(first_path),
                        normalized(other_path)
                    ),
                    "narrow the target to one kind, e.g. with a filter such as `[?@.in == 'header']`, or split it into one action per kind",
                ));
            }
        }
    }
    Ok(())
}

/// The supported version `overlay: 1.x.y` declares.
fn overlay_version(node: &Node) -> Option<Version> {
    let text = node.as_str()?;
    let rest = text.strip_prefix("1.")?;
    let (minor, patch) = rest.split_once('.')?;
    let version = match minor {
        "0" => Version::V1_0,
        "1" => Version::V1_1,
        _ => return None,
    };
    (!patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit())).then_some(version)
}

fn read_action<'a>(
    number: usize,
    item: &'a Node,
    version: Version,
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
            return Err(error_at_key(
                source,
                entry,
                format!("action {number} has an unknown field `{key}`"),
                ACTION_HELP,
            ));
        }
    }
    if let Some(description) = item
        .get("description")
        .filter(|node| node.as_str().is_none())
    {
        return Err(error_at(
            source,
            description,
            format!(
                "action {number}: `description` must be a string, not {}",
                description.kind()
            ),
            "quote it, e.g. `description: 'Adds the key'`",
        ));
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
        if version == Version::V1_0 {
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

/// [`error_at`] pointing at a mapping entry's key rather than its value.
fn error_at_key(
    source: &SourceFile,
    entry: &crate::node::Entry,
    message: String,
    help: &str,
) -> Box<LoadError> {
    let mut error = error_at(source, &entry.value, message, help);
    error.location = Some((
        source.byte_offset(entry.key_span.start as usize),
        entry.key_span.line as usize,
        entry.key_span.col as usize + 1,
    ));
    error
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

/// Merges `value` into `target` as `version` says (see the module
/// comment).
fn merge(version: Version, target: &mut Node, value: &Node) -> Result<(), String> {
    match (&mut target.value, &value.value) {
        (Value::Map(mapping), Value::Map(entries)) => {
            for entry in entries {
                let Some(existing) = mapping.get_mut(&entry.key) else {
                    mapping.push(entry.clone());
                    continue;
                };
                match (&existing.value.value, &entry.value.value) {
                    (Value::Map(_), Value::Map(_)) => {
                        merge(version, &mut existing.value, &entry.value)?;
                    }
                    (Value::Seq(_), Value::Seq(_)) => match version {
                        Version::V1_1 => merge(version, &mut existing.value, &entry.value)?,
                        Version::V1_0 => existing.value = entry.value.clone(),
                    },
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
        (Value::Seq(items), Value::Seq(more)) if version == Version::V1_1 => {
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
        let warnings = apply(&mut root, &tree, &source, Path::new("openapi.yaml"))?;
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

    /// The line and column an error points at, and its message and fix.
    fn refused(spec: &str, overlay: &str) -> (usize, usize, String, String) {
        let error = run(spec, overlay).expect_err("refused");
        assert_eq!(error.file, "o.yaml");
        let (_, line, col) = error.location.expect("a position");
        (line, col, error.message, error.help)
    }

    const HEAD_1_0: &str = "overlay: 1.0.0\ninfo: {title: t, version: '1'}\nactions:\n";

    #[test]
    fn an_overlay_1_0_replaces_lists_in_an_update_and_appends_one_entry_to_a_list() {
        let spec = "paths: {/a: {get: {tags: [x], summary: s}}}\ntags: [{name: x}]\n";
        let actions = "  - target: $.paths['/a'].get\n    update: {tags: [y], summary: t}\n  - target: $.tags\n    update: [{name: y}]\n";
        let (json, warnings) = run(spec, &format!("{HEAD_1_0}{actions}")).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(
            json["paths"]["/a"]["get"],
            serde_json::json!({"tags": ["y"], "summary": "t"})
        );
        assert_eq!(
            json["tags"],
            serde_json::json!([{"name": "x"}, [{"name": "y"}]])
        );
        // The same actions under 1.1: concatenated, both times.
        let (json, _) = run(spec, &format!("{HEAD}{actions}")).unwrap();
        assert_eq!(
            json["paths"]["/a"]["get"]["tags"],
            serde_json::json!(["x", "y"])
        );
        assert_eq!(
            json["tags"],
            serde_json::json!([{"name": "x"}, {"name": "y"}])
        );
    }

    #[test]
    fn an_overlay_1_0_target_that_selects_a_scalar_is_refused() {
        let (line, col, message, help) = refused(
            "info: {title: a}\n",
            &format!("{HEAD_1_0}  - target: $.info.title\n    update: b\n"),
        );
        assert_eq!((line, col), (4, 13));
        assert!(
            message.contains("action 1: `$.info.title` selects a string at $['info']['title'], and an Overlay 1.0 target selects mappings and lists only"),
            "{message}"
        );
        assert!(help.contains("write `overlay: 1.1.0`"), "{help}");
        // So is a remove of one (1.0 removes mappings and lists only).
        let (_, _, message, _) = refused(
            "tags: [a, b]\n",
            &format!("{HEAD_1_0}  - target: \"$.tags[?@ == 'a']\"\n    remove: true\n"),
        );
        assert!(message.contains("selects a string"), "{message}");
        // Under 1.1 both apply.
        assert!(
            run(
                "info: {title: a}\n",
                &format!("{HEAD}  - target: $.info.title\n    update: b\n")
            )
            .is_ok()
        );
    }

    #[test]
    fn an_update_whose_target_selects_mixed_kinds_is_refused_under_1_1() {
        let spec = "x: {a: {k: 1}, b: 2, c: [3]}\n";
        let (line, col, message, help) = refused(
            spec,
            &format!("{HEAD}  - target: $.x.*\n    update: {{k: 5}}\n"),
        );
        assert_eq!((line, col), (4, 13));
        assert!(
            message.contains("action 1: `$.x.*` selects nodes of different kinds, a mapping at $['x']['a'] and a scalar at $['x']['b']"),
            "{message}"
        );
        assert!(
            message.contains("all mappings, all lists or all scalars"),
            "{message}"
        );
        assert!(help.contains("one action per kind"), "{help}");
        // Nothing was applied: the first node is not half-updated.
        // A copy is held to the same; a remove of mixed nodes is fine.
        let copy = format!("{HEAD}  - target: $.x.*\n    copy: $.x.a\n");
        assert!(run(spec, &copy).is_err());
        let (json, _) = run(
            spec,
            &format!("{HEAD}  - target: $.x.*\n    remove: true\n"),
        )
        .unwrap();
        assert_eq!(json, serde_json::json!({"x": {}}));
        // One kind is fine.
        assert!(
            run(
                "x: {a: {}, b: {}}\n",
                &format!("{HEAD}  - target: $.x.*\n    update: {{k: 5}}\n")
            )
            .is_ok()
        );
    }

    #[test]
    fn the_documents_required_and_unknown_fields_are_checked() {
        let spec = "info: {title: a}\n";
        let action = "actions:\n  - target: $.info\n    update: {title: b}\n";
        for (overlay, at, message, help) in [
            (
                format!("overlay: 1.1.0\ninfo: {{version: '1'}}\n{action}"),
                (2, 7),
                "`info` has no `title`, which Overlay requires",
                "info: {title: My overlay, version: 1.0.0}",
            ),
            (
                format!("overlay: 1.1.0\ninfo: {{title: t}}\n{action}"),
                (2, 7),
                "`info` has no `version`, which Overlay requires",
                "info: {title: My overlay, version: 1.0.0}",
            ),
            (
                format!("overlay: 1.1.0\ninfo: {{title: t, version: 1}}\n{action}"),
                (2, 27),
                "`info.version` must be a string, not an integer",
                "version: '1.0'",
            ),
            (
                format!(
                    "overlay: 1.0.0\ninfo: {{title: t, version: '1', description: d}}\n{action}"
                ),
                (2, 32),
                "`info.description` is an Overlay 1.1 field, but the document says 1.0",
                "overlay: 1.1.0",
            ),
            (
                format!("overlay: 1.1.0\ninfo: {{title: t, version: '1', summary: s}}\n{action}"),
                (2, 32),
                "`info` has an unknown field `summary`",
                "`title`, `version`",
            ),
            (
                format!("overlay: 1.1.0\ninfo: {{title: t, version: '1'}}\nactoins: []\n{action}"),
                (3, 1),
                "the Overlay document has an unknown field `actoins`",
                "rename it `x-actoins`",
            ),
            (
                format!("overlay: 1.1.0\ninfo: {{title: t, version: '1'}}\nextends: [a]\n{action}"),
                (3, 10),
                "`extends` must be a string, not a list",
                "extends: openapi.yaml",
            ),
            (
                format!(
                    "overlay: 1.1.0\ninfo: {{title: t, version: '1'}}\nextends: other.yaml\n{action}"
                ),
                (3, 10),
                "the overlay extends `other.yaml`",
                "change `extends` to the spec's path relative to the overlay",
            ),
            (
                format!(
                    "{HEAD}  - target: $.info\n    description: [d]\n    update: {{title: b}}\n"
                ),
                (5, 18),
                "action 1: `description` must be a string, not a list",
                "description:",
            ),
        ] {
            let (line, col, found, fix) = refused(spec, &overlay);
            assert!(found.contains(message), "{overlay}\n{found}");
            assert!(fix.contains(help), "{overlay}\n{fix}");
            assert_eq!((line, col), at, "{overlay}\n{found}");
        }
        // Extensions are welcome; `extends` naming the spec, or a URL, is.
        for extra in [
            "x-team: payments\n",
            "extends: openapi.yaml\n",
            "extends: ./open%61pi.yaml\n",
            "extends: 'https://example.com/openapi.yaml'\n",
        ] {
            let overlay = format!(
                "overlay: 1.1.0\ninfo: {{title: t, version: '1', x-id: 7}}\n{extra}{action}"
            );
            assert!(run(spec, &overlay).is_ok(), "{overlay}");
        }
    }
}
