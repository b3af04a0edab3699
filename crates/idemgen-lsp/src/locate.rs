//! What the cursor is on: the chain of keys from the document root to the
//! innermost node at a position, found through the loader's spans.

use lsp_types::Position;

use super::documents::LineIndex;
use idemgen_spec::{Node, Value};

/// The node under the cursor and how it was reached.
pub struct Located<'a> {
    /// Keys (and list indices) from the root.
    pub path: Vec<String>,
    pub node: &'a Node,
    /// Whether the cursor is on the key that names `node`, not its value.
    pub on_key: bool,
}

/// The character index (the parser's unit) of an LSP position in `text`.
pub fn char_index(text: &str, position: Position) -> u32 {
    let offset = LineIndex::new(text).offset(text, position);
    text[..offset].chars().count() as u32
}

/// The innermost node of `root` whose key or value holds `index`.
pub fn locate(root: &Node, index: u32) -> Located<'_> {
    let mut located = Located {
        path: Vec::new(),
        node: root,
        on_key: false,
    };
    loop {
        let next = match &located.node.value {
            Value::Map(entries) => entries.iter().find_map(|entry| {
                if entry.key_span.start <= index
                    && index < entry.key_span.end.max(entry.key_span.start + 1)
                {
                    return Some((entry.key.to_string(), &entry.value, true));
                }
                contains(&entry.value, index).then(|| (entry.key.to_string(), &entry.value, false))
            }),
            Value::Seq(items) => items
                .iter()
                .enumerate()
                .find(|(_, item)| contains(item, index))
                .map(|(at, item)| (at.to_string(), item, false)),
            _ => None,
        };
        let Some((segment, node, on_key)) = next else {
            return located;
        };
        located.path.push(segment);
        located.node = node;
        if on_key {
            located.on_key = true;
            return located;
        }
    }
}

fn contains(node: &Node, index: u32) -> bool {
    node.span.start <= index && index <= node.span.end
}
