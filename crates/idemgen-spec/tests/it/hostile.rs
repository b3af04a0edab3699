//! Input a user did not mean to give: each gets a message that says what
//! is wrong with it as written, never a misleading one.

use std::path::Path;

use idemgen_spec::contract::parse::parse_block;
use idemgen_spec::{LoadProblem, Workspace, parse_tree};

fn ref_messages(dir: &Path, spec: &str) -> Vec<String> {
    let path = dir.join("api.yaml");
    std::fs::write(&path, spec).unwrap();
    let workspace = Workspace::load(&path).expect("the root document loads");
    workspace
        .problems
        .iter()
        .filter_map(|problem| match problem {
            LoadProblem::Ref { message, .. } => Some(message.clone()),
            LoadProblem::DuplicateKey { .. } => None,
        })
        .collect()
}

#[test]
fn a_ref_to_a_directory_or_a_pipe_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("events");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|status| status.success());
    let messages = ref_messages(
        dir.path(),
        "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /a: {$ref: '.'}\n  /b: {$ref: 'events#/x'}\n  /c: {$ref: 'gone.yaml'}\n",
    );
    let said = |expected: &str| {
        assert!(
            messages.iter().any(|message| message.ends_with(expected)),
            "no message ends with {expected:?}: {messages:?}"
        );
    };
    said("`.` is a directory, not a file");
    if made {
        said("events is not a regular file (a pipe or a device), so it is not read");
    } else {
        println!("SKIPPED: the pipe case: mkfifo is not available");
    }
    said("gone.yaml does not exist");
}

#[test]
fn a_duration_too_large_for_a_number_is_not_echoed_as_inf() {
    let tree = parse_tree("api.json", r#"{"window": 1e999999}"#).unwrap();
    let mut errors = Vec::new();
    parse_block(&tree, "/x-idempotency", &mut errors);
    let messages: Vec<&str> = errors.iter().map(|error| error.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|message| message.contains("too large to read")),
        "{messages:?}"
    );
    assert!(
        messages.iter().all(|message| !message.contains("inf")),
        "{messages:?}"
    );
}

#[test]
fn utf16_and_utf32_without_a_byte_order_mark_are_named() {
    let text = r#"{"openapi": "3.1.0"}"#;
    let utf16le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let utf16be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let utf32le: Vec<u8> = text
        .chars()
        .flat_map(|c| u32::from(c).to_le_bytes())
        .collect();
    let utf32be: Vec<u8> = text
        .chars()
        .flat_map(|c| u32::from(c).to_be_bytes())
        .collect();
    for bytes in [utf16le, utf16be, utf32le, utf32be] {
        let error = idemgen_spec::decode(bytes, "api.json").unwrap_err();
        assert!(
            error.message.contains("UTF-16 or UTF-32"),
            "{}",
            error.message
        );
        assert_eq!(error.help, "save it as UTF-8");
    }
    assert!(idemgen_spec::decode(text.as_bytes().to_vec(), "api.json").is_ok());
    // Binary noise with a NUL is no wide text: the parser names the NUL.
    assert!(idemgen_spec::decode(b"\x00\x01\x02{[}]::".to_vec(), "api.json").is_ok());
}

#[test]
fn files_reached_through_refs_are_limited_in_total_too() {
    // Each file is under the per-file limit; together they are not.
    let dir = tempfile::tempdir().unwrap();
    let part = format!(r#"{{"x": "{}"}}"#, "a".repeat(30 * 1024 * 1024));
    let mut refs = Vec::new();
    for index in 0..5 {
        std::fs::write(dir.path().join(format!("part{index}.json")), &part).unwrap();
        refs.push(format!(r##"{{"$ref": "part{index}.json#/x"}}"##));
    }
    let root = dir.path().join("api.json");
    std::fs::write(
        &root,
        format!(
            r#"{{"openapi": "3.1.0", "info": {{"title": "t", "version": "1"}}, "paths": {{}}, "x-parts": [{}]}}"#,
            refs.join(", ")
        ),
    )
    .unwrap();
    let error = Workspace::load(&root)
        .err()
        .expect("130 MiB of text loaded");
    assert!(
        error.message.contains("more than 128 MiB of text"),
        "{}",
        error.message
    );
    assert!(error.file.ends_with("api.json"), "{}", error.file);
}
