//! The YAML loader and the positioned JSON fast path, differentially: on
//! every text the fast path reads as strict JSON, the YAML parser builds
//! the same tree at the same positions; the fast path never accepts what
//! the YAML path refuses. Every text, JSON or not, loads or is refused
//! with a message, never a panic.
#![no_main]

use std::path::Path;

use idemgen_fuzz::same_tree;
use idemgen_spec::{FileId, Workspace, json_escapes, json_parse, parse, parse_tree};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = idemgen_spec::decode(bytes.to_vec(), "fuzz.yaml") else {
        return;
    };
    // What the loader does with it (a root with no `$ref` files to read).
    match Workspace::from_text(
        Path::new("/nonexistent/fuzz.yaml"),
        "fuzz.yaml".into(),
        text.clone(),
    ) {
        Ok(_) => {}
        Err(error) => assert!(!error.message.is_empty(), "a load error without a message"),
    }
    let _ = parse_tree("fuzz.yaml", &text);

    let rewritten = json_escapes::rewrite_surrogates(&text);
    let text = rewritten.as_deref().unwrap_or(&text);
    let Some(fast) = json_parse::parse(FileId(0), text) else {
        return; // not strict JSON: only the YAML parser reads it
    };
    let slow = parse::parse(FileId(0), text);
    match (fast, slow) {
        (Ok(fast), Ok(slow)) => {
            if let Err(difference) = same_tree(&fast.root, &slow.root) {
                panic!(
                    "the JSON fast path and the YAML parser build different trees: {difference}"
                );
            }
            assert_eq!(
                fast.duplicates.len(),
                slow.duplicates.len(),
                "the two paths report different duplicate keys"
            );
        }
        (Ok(_), Err(error)) => panic!(
            "the JSON fast path accepts what the YAML parser refuses: {} (line {}, column {})",
            error.message, error.line, error.col
        ),
        // A limit (depth, size) the fast path hit: the YAML path must hit
        // one too, not accept the text.
        (Err(error), Ok(_)) => panic!(
            "the JSON fast path refuses ({}) what the YAML parser accepts",
            error.message
        ),
        (Err(fast), Err(_)) => assert!(!fast.message.is_empty()),
    }
});
