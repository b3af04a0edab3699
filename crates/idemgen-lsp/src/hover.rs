//! Hover on an `x-idempotency` block or any field in it, or on an
//! operation's method key: the operation's window math (from its own block
//! merged over the document's, so inherited values count), rendered by the
//! window module as `idemgen window` renders it. On the document-level
//! block, every operation that inherits it.

use lsp_types::{Hover, HoverContents, MarkupContent, MarkupKind};

use super::locate::Located;
use idemgen_report::window::render::{WindowRow, markdown, markdown_one};
use idemgen_spec::Workspace;
use idemgen_spec::analysis::analyse;
use idemgen_spec::contract::model::Defaults;
use idemgen_spec::node::pointer_join;
use idemgen_spec::window::WindowInputs;

/// Operations listed at most under the document-level block.
const MAX_ROWS: usize = 20;

pub fn hover(workspace: &Workspace, defaults: Defaults, located: &Located<'_>) -> Option<Hover> {
    let pointer = |keys: &[String]| {
        keys.iter()
            .fold(String::new(), |pointer, key| pointer_join(&pointer, key))
    };
    // The pointer of what holds the block: "" for the document, else an
    // operation's.
    let (holder, on_method) = match located.path.iter().position(|key| key == "x-idempotency") {
        Some(block_at) => (pointer(&located.path[..block_at]), false),
        None if located.on_key
            && located.path.len() == 3
            && matches!(located.path[0].as_str(), "paths" | "webhooks") =>
        {
            (pointer(&located.path), true)
        }
        None => return None,
    };
    let analysis = analyse(workspace, defaults);
    let mut rows = Vec::new();
    let mut inheriting = 0;
    for (analysed, contract) in analysis.contracted() {
        let operation = &analysed.operation;
        if !holder.is_empty() && operation.pointer != holder {
            continue;
        }
        inheriting += 1;
        if rows.len() < MAX_ROWS {
            rows.push(WindowRow::new(
                operation.name(),
                operation.method.clone(),
                operation.path.clone(),
                WindowInputs::of(contract),
            ));
        }
    }
    if on_method && rows.is_empty() {
        return None; // an operation without a contract: nothing to show
    }
    let title = if holder.is_empty() {
        format!(
            "**Window math** of the {inheriting} operation{} with a contract (this block is their default)",
            if inheriting == 1 { "" } else { "s" }
        )
    } else {
        match rows.first() {
            Some(row) => format!(
                "**Window math** of `{}` ({} {})",
                row.operation, row.method, row.path
            ),
            None => "**Window math** of this operation".to_string(),
        }
    };
    let body = if rows.is_empty() {
        "No operation has a readable contract here yet.\n".to_string()
    } else if holder.is_empty() {
        let mut body = markdown(&rows);
        if inheriting > rows.len() {
            body.push_str(&format!(
                "\n{} more: `idemgen window` lists them all.\n",
                inheriting - rows.len()
            ));
        }
        body
    } else {
        markdown_one(&rows[0])
    };
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: format!("{title}\n\n{body}"),
        }),
        range: None,
    })
}
