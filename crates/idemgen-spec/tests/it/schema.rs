//! The editor schema accepts every example's contract, and rejects the one
//! that is broken by shape (`contract-invalid`).

use std::path::{Path, PathBuf};

use idemgen_spec::Workspace;
use serde_json::Value as Json;

use crate::support::workspace_root;

fn load_schema(name: &str) -> Json {
    serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("schemas").join(name)).unwrap(),
    )
    .unwrap()
}

fn example_documents() -> Vec<PathBuf> {
    let mut paths = vec![workspace_root().join("examples/payment-callback/openapi.yaml")];
    let mut broken: Vec<PathBuf> = std::fs::read_dir(workspace_root().join("examples/broken"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    broken.sort();
    paths.extend(broken);
    paths
}

fn document(path: &Path) -> Json {
    Workspace::load(path).unwrap().root().to_json()
}

#[test]
fn every_example_contract_validates_except_the_invalid_one() {
    let schema = load_schema("x-idempotency.schema.json");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let mut blocks = 0;
    for path in example_documents() {
        let document = document(&path);
        let mut found = vec![document.get("x-idempotency").cloned()];
        for item in document["paths"]
            .as_object()
            .into_iter()
            .flat_map(|paths| paths.values())
        {
            for operation in item.as_object().into_iter().flat_map(|item| item.values()) {
                found.push(operation.get("x-idempotency").cloned());
            }
        }
        let expect_valid = !path.ends_with("contract-invalid.yaml");
        let all_valid = found.iter().flatten().all(|block| {
            blocks += 1;
            validator.is_valid(block)
        });
        assert_eq!(all_valid, expect_valid, "{}", path.display());
    }
    assert!(blocks > 30, "checked {blocks} blocks");
}

#[test]
fn the_whole_document_schema_validates_the_examples() {
    let wrapper = load_schema("openapi-with-x-idempotency.schema.json");
    let inner = load_schema("x-idempotency.schema.json");
    let id = inner["$id"].as_str().unwrap().to_string();
    let validator = jsonschema::options()
        .with_retriever(Sibling { id, schema: inner })
        .build(&wrapper)
        .expect("the wrapper schema compiles offline");
    for path in example_documents() {
        let valid = validator.is_valid(&document(&path));
        assert_eq!(
            valid,
            !path.ends_with("contract-invalid.yaml"),
            "{}",
            path.display()
        );
    }
}

/// Serves the sibling schema the wrapper `$ref`s, so nothing is fetched.
struct Sibling {
    id: String,
    schema: Json,
}

impl jsonschema::Retrieve for Sibling {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Json, Box<dyn std::error::Error + Send + Sync>> {
        if uri.as_str() == self.id {
            Ok(self.schema.clone())
        } else {
            Err(format!("no network access for {}", uri.as_str()).into())
        }
    }
}

#[test]
fn the_schema_takes_every_part_the_fingerprint_can_include() {
    let schema = load_schema("x-idempotency.schema.json");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let block = |include: Json| serde_json::json!({"fingerprint": {"include": include}});
    assert!(validator.is_valid(&block(serde_json::json!([
        "method", "path", "query", "headers", "body"
    ]))));
    assert!(!validator.is_valid(&block(serde_json::json!(["header"]))));
}
