//! The positioned document tree: every value remembers where it was written.

use std::collections::HashMap;
use std::ops::Deref;

use super::source::FileId;

/// Where a node was written. `start`/`end` are character indices (the
/// parser's unit); `line` is 1-based and `col` 0-based, both in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
    pub line: u32,
    pub col: u32,
}

#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<str>),
    Seq(Vec<Node>),
    Map(Mapping),
}

/// A mapping's entries in source order. Large mappings (`components`,
/// `paths`) also carry a key index, so lookups and `$ref` resolution stay
/// constant-time however many entries a hostile file has.
#[derive(Debug, Clone, Default)]
pub struct Mapping {
    entries: Vec<Entry>,
    index: Option<HashMap<Box<str>, usize>>,
}

impl Mapping {
    pub fn new(entries: Vec<Entry>, index: Option<HashMap<Box<str>, usize>>) -> Mapping {
        Mapping { entries, index }
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.position(key).map(|at| &self.entries[at])
    }

    fn position(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.entries.iter().position(|entry| &*entry.key == key),
        }
    }

    /// The entry `get` finds, to change in place (overlays).
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.position(key).map(|at| &mut self.entries[at])
    }

    /// Adds an entry after the others and keeps the key index true.
    pub(crate) fn push(&mut self, entry: Entry) {
        let at = self.entries.len();
        if let Some(index) = &mut self.index {
            index.entry(entry.key.clone()).or_insert(at);
        }
        self.entries.push(entry);
        if self.index.is_none() && self.entries.len() >= INDEX_FROM {
            self.reindex();
        }
    }

    #[cfg(test)]
    pub(crate) fn entries_mut(&mut self) -> &mut [Entry] {
        &mut self.entries
    }

    /// Removes the entry `get` finds.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Entry> {
        let at = self.position(key)?;
        let entry = self.entries.remove(at);
        if self.index.is_some() {
            self.reindex();
        }
        Some(entry)
    }

    fn reindex(&mut self) {
        let mut index = HashMap::with_capacity(self.entries.len());
        for (at, entry) in self.entries.iter().enumerate() {
            index.entry(entry.key.clone()).or_insert(at);
        }
        self.index = Some(index);
    }
}

/// Mappings this large get a key index when an overlay grows them.
const INDEX_FROM: usize = 16;

impl<'a> IntoIterator for &'a Mapping {
    type Item = &'a Entry;
    type IntoIter = std::slice::Iter<'a, Entry>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

impl Deref for Mapping {
    type Target = [Entry];

    fn deref(&self) -> &[Entry] {
        &self.entries
    }
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub key: Box<str>,
    pub key_span: Span,
    pub value: Node,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub value: Value,
    pub span: Span,
}

impl Node {
    pub fn as_map(&self) -> Option<&[Entry]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.value {
            Value::Bool(flag) => Some(flag),
            _ => None,
        }
    }

    /// The value of `key` when this node is a mapping that has it.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|entry| &entry.value)
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Map(mapping) => mapping.get(key),
            _ => None,
        }
    }

    /// A short name for the node's type, for "expected X, found Y" messages.
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    /// The value as JSON, positions dropped (non-finite floats become null).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as Json;
        match &self.value {
            Value::Null => Json::Null,
            Value::Bool(flag) => Json::Bool(*flag),
            Value::Int(number) => Json::from(*number),
            Value::Float(number) => {
                serde_json::Number::from_f64(*number).map_or(Json::Null, Json::Number)
            }
            Value::Str(text) => Json::String(text.to_string()),
            Value::Seq(items) => Json::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => Json::Object(
                entries
                    .iter()
                    .map(|entry| (entry.key.to_string(), entry.value.to_json()))
                    .collect(),
            ),
        }
    }

    /// Number of nodes in this subtree, itself included.
    pub fn size(&self) -> usize {
        match &self.value {
            Value::Seq(items) => 1 + items.iter().map(Node::size).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|e| e.value.size()).sum::<usize>(),
            _ => 1,
        }
    }
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn escape_pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Appends a segment to a JSON pointer.
pub fn pointer_join(base: &str, segment: &str) -> String {
    let mut pointer = String::with_capacity(base.len() + segment.len() + 1);
    pointer.push_str(base);
    pointer.push('/');
    pointer.push_str(&escape_pointer_segment(segment));
    pointer
}
