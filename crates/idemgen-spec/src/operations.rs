//! The operations of a document: every method of every path item (and
//! 3.1 webhook), with `$ref`ed path items and operations followed. In 3.2
//! documents also the `query` method and the custom methods of
//! `additionalOperations`.

use super::node::{Node, pointer_join};
use super::{OpenApiVersion, Workspace};

pub const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The method OpenAPI 3.2 adds: a safe request that carries a body.
pub const QUERY_METHOD: &str = "query";

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
    /// A 3.2 `additionalOperations` entry: a method HTTP does not define,
    /// so nothing promises it is safe or idempotent.
    pub custom: bool,
}

impl Operation<'_> {
    /// The operation's name in messages: its operationId, else `POST /path`.
    pub fn name(&self) -> String {
        match &self.operation_id {
            Some(id) => id.clone(),
            None => format!("{} {}", self.method, self.path),
        }
    }

    /// Methods a retry can repeat with effect: POST, PATCH and, unless an
    /// `x-idempotency: false` says otherwise, every custom method.
    pub fn is_write(&self) -> bool {
        self.custom || matches!(self.method.as_str(), "POST" | "PATCH")
    }

    pub fn is_safe(&self) -> bool {
        !self.custom
            && matches!(
                self.method.as_str(),
                "GET" | "HEAD" | "OPTIONS" | "TRACE" | "QUERY"
            )
    }
}

/// Whether `operation` has an `x-idempotency` mapping of its own.
pub fn has_contract_block(operation: &Operation<'_>) -> bool {
    operation
        .node
        .get("x-idempotency")
        .is_some_and(|block| block.as_map().is_some())
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
            let v3_2 = workspace.version == OpenApiVersion::V3_2;
            let standard = METHODS
                .iter()
                .chain(v3_2.then_some(&QUERY_METHOD))
                .filter_map(|method| {
                    let raw = path_item.get(method)?;
                    Some((
                        method.to_ascii_uppercase(),
                        raw,
                        pointer_join(&item_pointer, method),
                        false,
                    ))
                });
            let additional = path_item
                .get("additionalOperations")
                .filter(|_| v3_2)
                .and_then(|node| workspace.deref(node))
                .and_then(Node::as_map)
                .into_iter()
                .flatten()
                .map(|custom| {
                    let pointer = pointer_join(
                        &pointer_join(&item_pointer, "additionalOperations"),
                        &custom.key,
                    );
                    (custom.key.to_string(), &custom.value, pointer, true)
                });
            for (method, raw, pointer, custom) in standard.chain(additional) {
                let Some(node) = workspace.deref(raw) else {
                    continue;
                };
                if node.as_map().is_none() {
                    continue;
                }
                found.push(Operation {
                    kind,
                    method,
                    path: entry.key.to_string(),
                    operation_id: node
                        .get("operationId")
                        .and_then(Node::as_str)
                        .map(str::to_string),
                    node,
                    path_item,
                    pointer,
                    custom,
                });
            }
        }
    }
    found
}
