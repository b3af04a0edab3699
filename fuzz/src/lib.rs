//! What several fuzz targets share: comparing positioned trees, a scratch
//! directory per process, and arbitrary YAML/JSON trees biased toward the
//! words an OpenAPI document and its `x-idempotency` block use.

use std::path::PathBuf;

use arbitrary::{Arbitrary, Unstructured};
use idemgen_spec::{Node, Value};

/// `Ok` when the two trees are equal, values and positions alike;
/// otherwise the first difference, as a pointer and what differs.
pub fn same_tree(a: &Node, b: &Node) -> Result<(), String> {
    let mut stack = vec![(a, b, String::new())];
    while let Some((a, b, at)) = stack.pop() {
        if a.span != b.span {
            return Err(format!("{at}: span {:?} vs {:?}", a.span, b.span));
        }
        match (&a.value, &b.value) {
            (Value::Null, Value::Null) => {}
            (Value::Bool(x), Value::Bool(y)) if x == y => {}
            (Value::Int(x), Value::Int(y)) if x == y => {}
            (Value::Float(x), Value::Float(y))
                if x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()) => {}
            (Value::Str(x), Value::Str(y)) if x == y => {}
            (Value::Seq(x), Value::Seq(y)) if x.len() == y.len() => {
                for (index, (x, y)) in x.iter().zip(y).enumerate() {
                    stack.push((x, y, format!("{at}/{index}")));
                }
            }
            (Value::Map(x), Value::Map(y)) if x.len() == y.len() => {
                for (x, y) in x.iter().zip(y.iter()) {
                    if x.key != y.key || x.key_span != y.key_span {
                        return Err(format!(
                            "{at}: key {:?} at {:?} vs {:?} at {:?}",
                            x.key, x.key_span, y.key, y.key_span
                        ));
                    }
                    stack.push((&x.value, &y.value, format!("{at}/{}", x.key)));
                }
            }
            (x, y) => return Err(format!("{at}: {x:?} vs {y:?}")),
        }
    }
    Ok(())
}

/// A directory of this process's own under the system's temporary one,
/// emptied: targets that need files write them here.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("idemgen-fuzz-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    dir
}

/// Words a contract or an OpenAPI document uses, so that arbitrary trees
/// reach the parser's branches instead of its "unknown field" error.
pub const WORDS: &[&str] = &[
    "openapi",
    "3.1.0",
    "3.0.3",
    "3.2.0",
    "info",
    "title",
    "version",
    "paths",
    "/p",
    "post",
    "put",
    "patch",
    "get",
    "delete",
    "parameters",
    "requestBody",
    "content",
    "application/json",
    "schema",
    "properties",
    "type",
    "string",
    "integer",
    "object",
    "maxLength",
    "pattern",
    "required",
    "responses",
    "200",
    "201",
    "409",
    "422",
    "429",
    "headers",
    "Retry-After",
    "in",
    "header",
    "query",
    "body",
    "name",
    "Idempotency-Key",
    "x-idempotency",
    "x-idemgen-ignore",
    "profile",
    "stripe",
    "ietf",
    "retry-after",
    "key",
    "format",
    "max-length",
    "scope",
    "principal",
    "window",
    "client",
    "timeout",
    "retries",
    "jitter",
    "server",
    "max-processing",
    "fingerprint",
    "canonical",
    "json",
    "raw",
    "include",
    "method",
    "path",
    "in-progress",
    "status",
    "failed",
    "retry",
    "reject",
    "conflict",
    "missing-key",
    "store",
    "dialect",
    "mysql",
    "postgres",
    "sqlite",
    "engine",
    "table",
    "database",
    "business-database",
    "monitoring",
    "replay-rate-alert",
    "24h",
    "30s",
    "250ms",
    "PT18S",
    "1m30s",
    "{uuid}",
    "pay:{uuid}",
    "{ulid}",
    "{random:16}",
    "{date}",
    "{timestamp}",
    "{seq}",
    "{field:/id}",
    "/id",
    "$ref",
    "#/components/schemas/A",
    "components",
    "schemas",
    "A",
    "securitySchemes",
    "security",
    "bearer",
    "http",
    "apiKey",
    "operationId",
    "",
];

/// An arbitrary YAML/JSON value, biased toward [`WORDS`].
#[derive(Debug)]
pub enum Tree {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Tree>),
    Map(Vec<(String, Tree)>),
}

fn word(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    if u.ratio(3, 4)? {
        Ok(u.choose(WORDS)?.to_string())
    } else {
        String::arbitrary(u)
    }
}

impl Tree {
    /// A tree at most `depth` levels deep.
    pub fn generate(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Tree> {
        let kinds = if depth == 0 { 5 } else { 7 };
        Ok(match u.int_in_range(0..=kinds - 1)? {
            0 => Tree::Null,
            1 => Tree::Bool(u.arbitrary()?),
            2 => Tree::Int(if u.ratio(1, 2)? {
                u.int_in_range(-5..=100_000)?
            } else {
                u.arbitrary()?
            }),
            3 => Tree::Float(u.arbitrary()?),
            4 => Tree::Str(word(u)?),
            5 => {
                let len = u.int_in_range(0..=4)?;
                Tree::Seq(
                    (0..len)
                        .map(|_| Tree::generate(u, depth - 1))
                        .collect::<Result<_, _>>()?,
                )
            }
            _ => {
                let len = u.int_in_range(0..=6)?;
                let mut entries = Vec::new();
                for _ in 0..len {
                    entries.push((word(u)?, Tree::generate(u, depth - 1)?));
                }
                Tree::Map(entries)
            }
        })
    }

    /// As JSON (the last of duplicate keys wins, as serde_json keeps it).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Tree::Null => J::Null,
            Tree::Bool(b) => J::Bool(*b),
            Tree::Int(i) => J::from(*i),
            Tree::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Tree::Str(s) => J::String(s.clone()),
            Tree::Seq(items) => J::Array(items.iter().map(Tree::to_json).collect()),
            Tree::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}
