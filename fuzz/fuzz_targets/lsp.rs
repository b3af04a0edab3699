//! The language server's message handling. Two kinds of input:
//!
//! - raw bytes after a valid `initialize` (inputs that start with
//!   `Content-Length`): arbitrary frames, headers and bodies;
//! - a document and an edit sequence (the bytes before the first 0xFF are
//!   the text opened, those after choose the edits and the requests sent
//!   between them).
//!
//! Either way the server ends without a panic or hang when the client
//! hangs up. For an edit sequence, the diagnostics it reports for the final
//! text are the findings `idemgen lint` reports on that text.
#![no_main]

use std::collections::HashMap;
use std::path::PathBuf;

use arbitrary::{Arbitrary, Unstructured};
use idemgen_lint::{LintOptions, lint};
use idemgen_lsp::fuzzing::{looks_like_openapi, session};
use idemgen_spec::Workspace;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const ROOT: &str = "/nonexistent-idemgen-fuzz";
const PATH: &str = "/nonexistent-idemgen-fuzz/api.yaml";
const URI: &str = "file:///nonexistent-idemgen-fuzz/api.yaml";
const DIAGNOSTIC_REQUEST: i64 = 1_000_000;

fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn initialize() -> Vec<u8> {
    let mut out = frame(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "processId": null,
            "rootUri": format!("file://{ROOT}"),
            "capabilities": {"textDocument": {"diagnostic": {"dynamicRegistration": false}}}
        }}),
    );
    out.extend(frame(
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    ));
    out
}

/// The LSP position (line, UTF-16 column) of byte `offset` in `text`. A
/// line ends at `\n`, `\r\n` or a lone `\r`: the protocol names all
/// three, so client and server count the same lines.
fn position(text: &str, offset: usize) -> Value {
    let bytes = text.as_bytes();
    let mut line = 0;
    let mut line_start = 0;
    for (at, byte) in bytes[..offset].iter().enumerate() {
        let ends_line = match byte {
            b'\n' => true,
            b'\r' => bytes.get(at + 1) != Some(&b'\n'),
            _ => false,
        };
        if ends_line {
            line += 1;
            line_start = at + 1;
        }
    }
    let character: usize = text[line_start..offset].chars().map(char::len_utf16).sum();
    json!({"line": line, "character": character})
}

/// A char boundary of `text` from arbitrary bytes, never between the two
/// halves of a `\r\n` (no position names that place).
fn boundary(text: &str, offset: u32) -> usize {
    let bytes = text.as_bytes();
    let mut at = offset as usize % (text.len() + 1);
    while !text.is_char_boundary(at)
        || (at > 0 && bytes[at - 1] == b'\r' && bytes.get(at) == Some(&b'\n'))
    {
        at -= 1;
    }
    at
}

/// The client's messages for an edit sequence, and the final text.
fn edits(text: &str, u: &mut Unstructured<'_>) -> arbitrary::Result<(Vec<u8>, String)> {
    let mut text = text.to_string();
    let mut out = initialize();
    out.extend(frame(
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": URI, "languageId": "yaml", "version": 1, "text": text}}}),
    ));
    let mut version = 1;
    let mut id = 1;
    for _ in 0..u.int_in_range(0..=6)? {
        if u.ratio(1, 3)? {
            let at = boundary(&text, u.arbitrary()?);
            let method = *u.choose(&[
                "textDocument/hover",
                "textDocument/completion",
                "textDocument/definition",
                "textDocument/codeAction",
                "textDocument/diagnostic",
            ])?;
            let position = position(&text, at);
            out.extend(frame(
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {
                "textDocument": {"uri": URI},
                "position": position,
                "range": {"start": position, "end": position},
                "context": {"diagnostics": []}}}),
            ));
            id += 1;
            continue;
        }
        let mut changes = Vec::new();
        for _ in 0..u.int_in_range(1..=3)? {
            let new: String = String::arbitrary(u)?;
            if u.ratio(1, 8)? {
                changes.push(json!({"text": new}));
                text = new;
                continue;
            }
            let start = boundary(&text, u.arbitrary()?);
            let end = start + boundary(&text[start..], u.arbitrary()?);
            changes.push(json!({
                "range": {"start": position(&text, start), "end": position(&text, end)},
                "text": new}));
            text.replace_range(start..end, &new);
        }
        version += 1;
        out.extend(frame(
            &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": version}, "contentChanges": changes}}),
        ));
    }
    out.extend(frame(&json!({"jsonrpc": "2.0", "id": DIAGNOSTIC_REQUEST,
        "method": "textDocument/diagnostic", "params": {"textDocument": {"uri": URI}}})));
    out.extend(frame(
        &json!({"jsonrpc": "2.0", "id": DIAGNOSTIC_REQUEST + 1, "method": "shutdown"}),
    ));
    out.extend(frame(&json!({"jsonrpc": "2.0", "method": "exit"})));
    Ok((out, text))
}

/// The JSON bodies of the frames the server wrote.
fn bodies(mut output: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(split) = output.windows(4).position(|window| window == b"\r\n\r\n") {
        let header = std::str::from_utf8(&output[..split]).expect("ASCII headers");
        let length: usize = header
            .strip_prefix("Content-Length: ")
            .and_then(|length| length.trim().parse().ok())
            .unwrap_or_else(|| panic!("a bad header from the server: {header:?}"));
        let body = &output[split + 4..split + 4 + length];
        out.push(serde_json::from_slice(body).expect("the server writes JSON"));
        output = &output[split + 4 + length..];
    }
    assert!(output.is_empty(), "the server's output ends inside a frame");
    out
}

/// The rule ids `idemgen lint` reports in the document itself, sorted; one
/// `None` for a document that does not load.
fn lint_codes(text: &str) -> Vec<Option<String>> {
    if !looks_like_openapi(text) {
        return Vec::new();
    }
    let overlay = HashMap::from([(PathBuf::from(PATH), text.to_string())]);
    match Workspace::load_with(&PathBuf::from(PATH), &overlay) {
        Err(_) => vec![None],
        Ok(workspace) => {
            let root = workspace.files[0].source.display.clone();
            let mut codes: Vec<Option<String>> = lint(&workspace, &LintOptions::default())
                .diagnostics
                .into_iter()
                .filter(|finding| finding.location.file == root)
                .map(|finding| Some(finding.rule.to_string()))
                .collect();
            codes.sort();
            codes
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    if bytes.starts_with(b"Content-Length") {
        let mut input = initialize();
        input.extend_from_slice(bytes);
        for body in bodies(&session(input)) {
            assert_ne!(
                body["error"]["code"],
                json!(-32603),
                "an internal error: {body}"
            );
        }
        return;
    }
    let split = bytes
        .iter()
        .position(|byte| *byte == 0xFF)
        .unwrap_or(bytes.len());
    let text = String::from_utf8_lossy(&bytes[..split]);
    let mut u = Unstructured::new(bytes.get(split + 1..).unwrap_or_default());
    let Ok((input, text)) = edits(&text, &mut u) else {
        return;
    };
    let answers = bodies(&session(input));
    for body in &answers {
        assert_ne!(
            body["error"]["code"],
            json!(-32603),
            "an internal error: {body}"
        );
    }
    let report = answers
        .iter()
        .find(|body| body["id"] == json!(DIAGNOSTIC_REQUEST))
        .expect("the diagnostic request is answered");
    let mut codes: Vec<Option<String>> = report["result"]["items"]
        .as_array()
        .expect("a full report")
        .iter()
        .map(|item| item["code"].as_str().map(str::to_string))
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        lint_codes(&text),
        "the server's diagnostics are not lint's on {text:?}"
    );
});
