//! The operations of a document: every method of every path item (and
//! 3.1 webhook), with `$ref`ed path items and operations followed.

use super::Workspace;
use super::node::{Node, pointer_join};

pub const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationKind {
    Path,
    Webhook,
}

pub struct Operation<'a> {
    pub kind: OperationKind,
    /// Upper-case HTTP method.
    pub method: String,
    /// The path template, or the webhook's name.
    pub path: String,
    pub operation_id: Option<String>,
    /// The operation object, `$ref`s followed.
    pub node: &'a Node,
    /// The path item that holds it, `$ref`s followed.
    pub path_item: &'a Node,
    /// JSON pointer of the operation in the root document's logical tree.
    pub pointer: String,
}

impl Operation<'_> {
    /// The operation's name in messages: its operationId, else `POST /path`.
    pub fn name(&self) -> String {
        match &self.operation_id {
            Some(id) => id.clone(),
            None => format!("{} {}", self.method, self.path),
        }
    }

    pub fn is_write(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PATCH")
    }

    pub fn is_safe(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD" | "OPTIONS" | "TRACE")
    }
}

pub fn operations(workspace: &Workspace) -> Vec<Operation<'_>> {
    let mut found = Vec::new();
    let root = workspace.root();
    for (section, kind) in [
        ("paths", OperationKind::Path),
        ("webhooks", OperationKind::Webhook),
    ] {
        let Some(items) = root.get(section).and_then(Node::as_map) else {
            continue;
        };
        for entry in items {
            let Some(path_item) = workspace.deref(&entry.value) else {
                continue;
            };
            let item_pointer = pointer_join(&format!("/{section}"), &entry.key);
            for method in METHODS {
                let Some(raw) = path_item.get(method) else {
                    continue;
                };
                let Some(node) = workspace.deref(raw) else {
                    continue;
                };
                if node.as_map().is_none() {
                    continue;
                }
                found.push(Operation {
                    kind,
                    method: method.to_ascii_uppercase(),
                    path: entry.key.to_string(),
                    operation_id: node
                        .get("operationId")
                        .and_then(Node::as_str)
                        .map(str::to_string),
                    node,
                    path_item,
                    pointer: pointer_join(&item_pointer, method),
                });
            }
        }
    }
    found
}
