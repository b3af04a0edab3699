//! # replay-unauthenticated
//!
//! **What it checks.** An operation with an `x-idempotency` contract whose
//! `key.scope` does not include `principal`. The security requirement in
//! force is the operation's `security`, else the document's. Without one
//! (no `security`, `security: []`, or only the empty requirement `{}`)
//! the finding says stored responses are replayed to anyone holding the
//! key; with one, to any authenticated caller holding it. A requirement
//! that offers a scheme next to `{}` counts as security.
//!
//! **Why it matters.** The stored response of a key is replayed to the
//! next request that brings the key. `header:`, `query:` and `body:` scope
//! sources are set by the caller, so they namespace keys but prove
//! nothing: whoever learns a key (from a log, a proxy, a shared device)
//! and copies the scope value reads another client's stored payment
//! result. `principal`, the id of the principal the security check
//! verified, is the one scope a caller cannot choose. Stripe scopes keys
//! to the authenticated account the same way.
//!
//! **Example fix.** With `security` declared, add `principal` to the
//! scope: `scope: [principal]`, or `scope: [principal, header:X-Tenant-Id]`
//! (`lint --fix` does this: it extends the list the operation uses, or
//! writes `key.scope: [principal]` into the operation's block). Without
//! security, declare a scheme first (`components.securitySchemes` and
//! `security: [{apiKey: []}]`), then scope by `principal`.
use super::prelude::*;
use crate::fix::Offer;
use crate::fix::edit::Editor;
use crate::fix::emit::Emit;
use idemgen_spec::contract::model::ScopeSource;
use idemgen_spec::{Entry, Node, Value, security};

declare_rule!(
    "replay_unauthenticated.rs",
    "replay-unauthenticated",
    Warning,
    "key.scope has no `principal`: stored responses are replayed to whoever holds the key",
    Check::Operation(check),
    fix = Safe
);

fn check(context: &OperationContext<'_>, sink: &mut Sink<'_>) {
    let (Some(contract), Some(key)) = (context.contract(), context.key()) else {
        return;
    };
    let scope_invalid = contract
        .invalid
        .iter()
        .any(|field| matches!(*field, "key" | "key.scope"));
    if scope_invalid
        || key
            .scope
            .iter()
            .any(|source| source.value == ScopeSource::Principal)
    {
        return;
    }
    let origin = scope_origin(context).unwrap_or_else(|| contract.block.clone());
    let name = context.name();
    if !security::authenticates(context.workspace, context.operation) {
        sink.report(
            &origin,
            format!(
                "{name}: no security requirement, so stored responses are replayed to anyone holding the key"
            ),
        )
        .with_help(
            "declare a security scheme (`security: [{apiKey: []}]`), then add `principal` to `key.scope`",
        );
        return;
    }
    sink.report(
        &origin,
        format!(
            "{name}: `key.scope` has no `principal`, so stored responses are replayed to any authenticated caller holding the key"
        ),
    )
    .with_help("add `principal` to `key.scope`: the verified caller's id, which no request can set")
    .with_fix(RULE.offered(principal_scope(context)));
}

/// Where the `key.scope` the operation uses is written (its own block's,
/// else the document's): the `scope` key, so the underline stays on it.
fn scope_origin(context: &OperationContext<'_>) -> Option<Origin> {
    let own = context.operation.node.get("x-idempotency").and_then(scope);
    let (entry, pointer) = match own {
        Some(entry) => (
            entry,
            format!("{}/x-idempotency/key/scope", context.operation.pointer),
        ),
        None => (
            context
                .workspace
                .root()
                .get("x-idempotency")
                .and_then(scope)?,
            "/x-idempotency/key/scope".to_string(),
        ),
    };
    Some(Origin {
        span: entry.key_span,
        pointer,
    })
}

fn scope(block: &Node) -> Option<&Entry> {
    block.get("key")?.entry("scope")
}

/// `replay-unauthenticated` → `principal` added to `key.scope`, where the
/// list the operation uses is written: its own block's, else the
/// document's. A document-level list is shared, so it is extended only
/// when every operation that inherits it has security; otherwise the
/// operation gets its own copy with `principal` added. With no list
/// anywhere, the operation's block gets `key.scope: [principal]`.
fn principal_scope(context: &OperationContext<'_>) -> Option<Offer> {
    let title = "Scope the key by the verified principal: add `principal` to `key.scope`";
    let principal = || Emit::str("principal");
    let block = context.operation.node.get("x-idempotency")?;
    let mut editor = Editor::new(context.workspace);
    if let Some(key) = block.get("key").filter(|key| key.get("scope").is_some()) {
        editor.append(key, "scope", principal())?;
        return editor.finish(title);
    }
    let document_key = context
        .workspace
        .root()
        .get("x-idempotency")
        .and_then(|document| document.get("key"))
        .filter(|key| key.get("scope").is_some());
    match document_key {
        Some(key) if every_inheritor_authenticates(context) => {
            editor.append(key, "scope", principal())?;
        }
        Some(key) => {
            let mut scope: Vec<Emit> = key
                .get("scope")?
                .as_seq()?
                .iter()
                .map(|source| source.as_str().map(Emit::str))
                .collect::<Option<_>>()?;
            scope.push(principal());
            editor.set(block, &["key", "scope"], Emit::Seq(scope))?;
        }
        None => editor.set(block, &["key", "scope"], Emit::Seq(vec![principal()]))?,
    }
    editor.finish(title)
}

/// Whether every operation whose contract takes `key.scope` from the
/// document has security, so `principal` can go into the shared list.
fn every_inheritor_authenticates(context: &OperationContext<'_>) -> bool {
    let workspace = context.workspace;
    idemgen_spec::operations::operations(workspace)
        .iter()
        .filter(|operation| match operation.node.get("x-idempotency") {
            Some(block) => match &block.value {
                Value::Bool(contract) => *contract,
                Value::Map(_) => block.get("key").and_then(|key| key.get("scope")).is_none(),
                _ => false,
            },
            None => false,
        })
        .all(|operation| idemgen_spec::security::authenticates(workspace, operation))
}
