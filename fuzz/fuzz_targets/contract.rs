//! The contract parser and merger on arbitrary trees: an `x-idempotency`
//! block at the document level and one on an operation, each an arbitrary
//! tree of the contract's own words. Parsing, merging, the window math and
//! every lint rule run without a panic; a key template the contract
//! accepts compiles as a Rust regex (the generated service `expect`s it).
#![no_main]

use std::path::Path;

use arbitrary::Unstructured;
use idemgen_fuzz::Tree;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;
use idemgen_spec::analysis::analyse;
use idemgen_spec::contract::model::Defaults;
use idemgen_spec::window::{WindowInputs, compute};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let (Ok(document), Ok(operation)) = (Tree::generate(&mut u, 4), Tree::generate(&mut u, 4))
    else {
        return;
    };
    let spec = json!({
        "openapi": "3.1.0",
        "info": {"title": "fuzz", "version": "1"},
        "x-idempotency": document.to_json(),
        "paths": {"/p": {"post": {
            "operationId": "pay",
            "x-idempotency": operation.to_json(),
            "parameters": [{"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}}],
            "requestBody": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {"id": {"type": "string", "maxLength": 40}}}}}},
            "responses": {"201": {"description": "created"}}
        }}}
    });
    let Ok(workspace) = Workspace::from_text(
        Path::new("/nonexistent/contract.json"),
        "contract.json".into(),
        serde_json::to_string_pretty(&spec).unwrap(),
    ) else {
        return;
    };
    let analysis = analyse(&workspace, Defaults::default());
    for contract in analysis.contracts() {
        let _ = compute(&WindowInputs::of(contract));
        if let Some(key) = &contract.key {
            let template = &key.format.value;
            if let Err(error) = regex::Regex::new(&template.regex()) {
                panic!("the template {template:?} has a regex that does not compile: {error}");
            }
        }
    }
    let _ = lint(&workspace, &LintOptions::default());
});
