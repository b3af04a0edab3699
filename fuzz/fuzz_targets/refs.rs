//! `$ref` resolution over a generated multi-file workspace: a root
//! document and a few files in and under its directory, whose `$ref`s
//! point at each other (cycles included), outside the root (`../`, an
//! absolute path, percent-encoded dots, a symlink that leads out) and at
//! nothing. The loader reads no file outside the root's directory, ends
//! (no hang on cycles), and following any `$ref` ends too.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arbitrary::Unstructured;
use idemgen_spec::{Node, Value, Workspace};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// The root's directory (`<scratch>/api`), beside a file it must not read.
fn dirs() -> &'static (PathBuf, PathBuf) {
    static DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIRS.get_or_init(|| {
        let scratch = idemgen_fuzz::scratch("refs");
        let outside = scratch.join("outside.yaml");
        std::fs::write(&outside, "secret: {type: string}\n").unwrap();
        let api = scratch.join("api");
        std::fs::create_dir_all(&api).unwrap();
        (api, scratch)
    })
}

const FILES: &[&str] = &["a.yaml", "sub/b.json", "sub/deeper/c.yaml", "d e.yaml"];

const TARGETS: &[&str] = &[
    "#/components/schemas/A",
    "#/components/schemas/B",
    "#/components",
    "#",
    "#/paths/~1p",
    "#/nothing",
    "a.yaml",
    "a.yaml#/A",
    "./a.yaml#/B",
    "sub/b.json#/A",
    "sub/b.json#/B",
    "sub/deeper/c.yaml#/A",
    "d%20e.yaml#/A",
    "d e.yaml#/A",
    "../a.yaml#/A",
    "../b.json#/A",
    "../outside.yaml#/secret",
    "../../outside.yaml#/secret",
    "sub/../../outside.yaml#/secret",
    "%2e%2e/outside.yaml#/secret",
    "..%2foutside.yaml#/secret",
    "link/outside.yaml#/secret",
    "/etc/hostname",
    "file:///etc/hostname",
    "https://example.com/x.yaml#/A",
    "a.yaml#/A/%24ref",
    "nothing.yaml#/A",
    "a.yaml#A",
    "#/components/schemas/A/properties/x",
];

/// A small tree with `$ref`s at arbitrary places.
fn tree(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<serde_json::Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 if depth > 0 => {
            let mut map = serde_json::Map::new();
            for name in ["A", "B", "properties", "x"] {
                if u.ratio(1, 2)? {
                    map.insert(name.into(), tree(u, depth - 1)?);
                }
            }
            serde_json::Value::Object(map)
        }
        1 | 2 => json!({"$ref": u.choose(TARGETS)?}),
        _ => json!({"type": "string"}),
    })
}

/// Every `$ref` node of a tree.
fn ref_nodes<'n>(node: &'n Node, out: &mut Vec<&'n Node>) {
    match &node.value {
        Value::Map(entries) => {
            if node.get("$ref").is_some() {
                out.push(node);
            }
            for entry in entries.iter() {
                ref_nodes(&entry.value, out);
            }
        }
        Value::Seq(items) => items.iter().for_each(|item| ref_nodes(item, out)),
        _ => {}
    }
}

fn write(path: &Path, value: &serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = if path.extension().is_some_and(|ext| ext == "json") {
        serde_json::to_string_pretty(value).unwrap()
    } else {
        // JSON is YAML; one line per file keeps it short.
        value.to_string()
    };
    std::fs::write(path, text).unwrap();
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let (api, scratch) = dirs();
    let _ = std::fs::remove_dir_all(api);
    std::fs::create_dir_all(api).unwrap();
    if u.ratio(1, 2).unwrap_or(false) {
        std::os::unix::fs::symlink(scratch, api.join("link")).unwrap();
    }
    let Ok(schemas) = tree(&mut u, 3) else { return };
    let root = json!({
        "openapi": "3.1.0",
        "info": {"title": "refs", "version": "1"},
        "paths": {"/p": {"post": {"requestBody": {"content": {"application/json": {
            "schema": {"$ref": u.choose(TARGETS).unwrap_or(&"#")}}}},
            "responses": {"200": {"description": "ok"}}}}},
        "components": {"schemas": schemas},
    });
    write(&api.join("openapi.yaml"), &root);
    for file in FILES {
        if u.ratio(3, 4).unwrap_or(false) {
            let Ok(content) = tree(&mut u, 3) else { break };
            write(&api.join(file), &content);
        }
    }
    let workspace = match Workspace::load(&api.join("openapi.yaml")) {
        Ok(workspace) => workspace,
        Err(error) => {
            assert!(!error.message.is_empty());
            return;
        }
    };
    let real_api = std::fs::canonicalize(api).unwrap();
    for loaded in &workspace.files {
        let real = std::fs::canonicalize(&loaded.source.path).unwrap_or(loaded.source.path.clone());
        assert!(
            real.starts_with(&real_api),
            "the loader read {} (as {}), outside the root's directory",
            real.display(),
            loaded.source.display
        );
    }
    for loaded in &workspace.files {
        let mut refs = Vec::new();
        ref_nodes(&loaded.root, &mut refs);
        for node in refs {
            let _ = workspace.deref(node);
            let _ = workspace.pointer_at(node.span);
        }
    }
});
