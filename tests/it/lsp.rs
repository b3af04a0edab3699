//! `idemgen lsp` driven over stdio by a small JSON-RPC client, as an
//! editor drives it: diagnostics for every broken example, hover, code
//! actions, completion, go to definition, configuration, coalesced edits,
//! and bad input (malformed messages, unknown methods, non-OpenAPI files,
//! half-typed YAML) answered without a crash.

use crate::support::lsp_client;
use crate::support::root;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use lsp_client::{Client, apply_edits, uri};
use serde_json::{Value, json};

fn project(path: &str) -> PathBuf {
    root().join(path)
}

/// A server whose workspace is an empty directory (no `idemgen.toml`).
fn server() -> (Client, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    (Client::start(root.path(), json!({})), root)
}

fn codes(published: &Value) -> Vec<String> {
    published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|diagnostic| diagnostic["code"].as_str().map(String::from))
        .collect()
}

fn position(line: u32, character: u32) -> Value {
    json!({"line": line, "character": character})
}

fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri}, "position": position(line, character)})
}

/// `(rule, line, column)` of each finding, both 0-based, as `idemgen lint
/// --format json` reports them.
fn lint_findings(path: &Path) -> BTreeSet<(String, u64, u64)> {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["lint", "--no-config", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap() - 1,
                d["column"].as_u64().unwrap() - 1,
            )
        })
        .collect()
}

#[test]
fn every_broken_example_gets_the_findings_lint_reports() {
    let (mut client, _root) = server();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(project("examples/broken"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    examples.sort();
    assert!(examples.len() >= 20, "{examples:?}");
    for path in &examples {
        let uri = uri(path);
        client.open(&uri, &std::fs::read_to_string(path).unwrap());
        let published = client.diagnostics(&uri);
        let rule = path.file_stem().unwrap().to_str().unwrap();
        assert!(
            codes(&published).iter().any(|code| code == rule),
            "{rule}: {published}"
        );
        let seen: BTreeSet<(String, u64, u64)> = published["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["code"].as_str().unwrap().to_string(),
                    d["range"]["start"]["line"].as_u64().unwrap(),
                    d["range"]["start"]["character"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(seen, lint_findings(path), "{rule}");
        for diagnostic in published["diagnostics"].as_array().unwrap() {
            assert_eq!(diagnostic["source"], "idemgen");
            assert!(
                matches!(diagnostic["severity"].as_u64(), Some(1..=3)),
                "{diagnostic}"
            );
            let href = diagnostic["codeDescription"]["href"].as_str().unwrap();
            let docs = PathBuf::from(href.strip_prefix("file://").unwrap());
            let code = diagnostic["code"].as_str().unwrap();
            assert!(
                std::fs::read_to_string(&docs)
                    .unwrap()
                    .starts_with(&format!("# {code}")),
                "{href}"
            );
        }
    }
    let window = client_open_window_too_short(&mut client);
    let diagnostic = &window["diagnostics"][0];
    assert_eq!(diagnostic["code"], "window-too-short");
    assert_eq!(diagnostic["severity"], 1);
    assert_eq!(diagnostic["range"]["start"], position(39, 16));
    assert_eq!(diagnostic["range"]["end"], position(39, 19));
    assert!(
        diagnostic["message"]
            .as_str()
            .unwrap()
            .ends_with(
                "\nhelp: set `window: 18s` or longer (a floor: resumed calls need hours, see `idemgen window`)"
            ),
        "{diagnostic}"
    );
    assert_eq!(client.stop(), 0);
}

fn window_too_short() -> (String, String) {
    let path = project("examples/broken/window-too-short.yaml");
    (uri(&path), std::fs::read_to_string(path).unwrap())
}

fn client_open_window_too_short(client: &mut Client) -> Value {
    let (uri, text) = window_too_short();
    // Opened again under another version: the server publishes afresh.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 7, "text": text}}),
    );
    client.wait_for(|message| {
        message["method"] == "textDocument/publishDiagnostics"
            && message["params"]["uri"] == uri
            && message["params"]["version"] == 7
    })["params"]
        .clone()
}

#[test]
fn hover_on_the_block_shows_the_window_math() {
    let (mut client, _root) = server();
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    // On `window: 16s` in the operation's block (line 40).
    let hover = client.request("textDocument/hover", at(&uri, 39, 10));
    let value = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        value.starts_with("**Window math** of `onPayCallback` (POST /callbacks/pay)"),
        "{value}"
    );
    assert!(
        value.contains("| verdict | too-short (2× bound) |"),
        "{value}"
    );
    for expected in [
        "5s",
        "200ms, 800ms",
        "18s",
        "14s",
        "16s",
        "too-short (2× bound)",
    ] {
        assert!(value.contains(expected), "{expected} in {value}");
    }
    // On the document-level block: the operations inheriting it.
    let hover = client.request("textDocument/hover", at(&uri, 13, 12));
    let value = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(value.contains("1 operation with a contract"), "{value}");
    // On the operation's method key: its merged contract's math.
    let hover = client.request("textDocument/hover", at(&uri, 18, 5));
    let value = hover["result"]["contents"]["value"].as_str().unwrap();
    assert!(value.contains("| smallest safe window | 18s |"), "{value}");
    // Elsewhere: nothing.
    let hover = client.request("textDocument/hover", at(&uri, 10, 4));
    assert_eq!(hover["result"], Value::Null, "{hover}");
}

#[test]
fn code_actions_apply_the_fix_and_add_an_ignore_entry() {
    let (mut client, _root) = server();
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    client.diagnostics(&uri);
    let answer = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": {"start": position(39, 16), "end": position(39, 16)},
            "context": {"diagnostics": []},
        }),
    );
    let actions = answer["result"].as_array().unwrap();
    let fix = actions
        .iter()
        .find(|action| action["isPreferred"] == true)
        .unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(fix["kind"], "quickfix");
    assert_eq!(fix["diagnostics"][0]["code"], "window-too-short");
    let edits = fix["edit"]["changes"][&uri].as_array().unwrap();
    let fixed = apply_edits(&text, edits);
    assert!(
        fixed.contains("        window: 18s   # <- needs 18s\n"),
        "{fixed}"
    );
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let published = client.diagnostics(&uri);
    assert_eq!(published["version"], 2);
    assert!(codes(&published).is_empty(), "{published}");

    let ignore = actions
        .iter()
        .find(|action| {
            action["title"]
                .as_str()
                .unwrap()
                .contains("x-idemgen-ignore")
        })
        .unwrap_or_else(|| panic!("{answer}"));
    let ignored = apply_edits(&text, ignore["edit"]["changes"][&uri].as_array().unwrap());
    assert!(ignored.contains("x-idemgen-ignore:"), "{ignored}");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": ignored}]}),
    );
    let published = client.diagnostics(&uri);
    assert!(codes(&published).is_empty(), "{published}");
}

#[test]
fn the_principal_scope_fix_is_the_preferred_quick_fix() {
    let (mut client, _root) = server();
    let path = project("examples/broken/replay-unauthenticated.yaml");
    let (uri, text) = (uri(&path), std::fs::read_to_string(&path).unwrap());
    client.open(&uri, &text);
    assert_eq!(codes(&client.diagnostics(&uri)), ["replay-unauthenticated"]);
    // On `scope:` in the operation's key (line 52).
    let answer = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": {"start": position(51, 10), "end": position(51, 10)},
            "context": {"diagnostics": []},
        }),
    );
    let actions = answer["result"].as_array().unwrap();
    let fix = actions
        .iter()
        .find(|action| action["isPreferred"] == true)
        .unwrap_or_else(|| panic!("{answer}"));
    assert_eq!(fix["diagnostics"][0]["code"], "replay-unauthenticated");
    let fixed = apply_edits(&text, fix["edit"]["changes"][&uri].as_array().unwrap());
    assert_eq!(
        fixed,
        text.replace(
            "scope: [header:X-Merchant-Id]",
            "scope: [header:X-Merchant-Id, principal]"
        )
    );
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    assert!(codes(&client.diagnostics(&uri)).is_empty());
}

#[test]
fn completion_offers_fields_and_values() {
    let (mut client, root) = server();
    let uri = uri(&root.path().join("api.yaml"));
    let text = "openapi: 3.1.0\npaths:\n  /pay:\n    post:\n      x-idempotency:\n        profile: \n        st";
    client.open(&uri, text);
    let labels = |answer: &Value| -> Vec<String> {
        answer["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["label"].as_str().unwrap().to_string())
            .collect()
    };
    let fields = client.request("textDocument/completion", at(&uri, 6, 10));
    assert!(labels(&fields).contains(&"store".to_string()), "{fields}");
    let profiles = client.request("textDocument/completion", at(&uri, 5, 17));
    assert_eq!(labels(&profiles), ["retry-after", "ietf-draft", "stripe"]);
}

#[test]
fn definition_follows_local_and_relative_file_refs() {
    let (mut client, root) = server();
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    // `$ref: "#/components/schemas/PaymentResult"` on line 49.
    let column = text.lines().nth(48).unwrap().find("#/components").unwrap() as u32;
    let answer = client.request("textDocument/definition", at(&uri, 48, column + 2));
    assert_eq!(answer["result"]["uri"], uri);
    assert_eq!(answer["result"]["range"]["start"]["line"], 64, "{answer}");

    std::fs::write(root.path().join("schemas.yaml"), "Pay:\n  type: object\n").unwrap();
    let spec = root.path().join("api.yaml");
    let text = "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n    Pay: {$ref: 'schemas.yaml#/Pay'}\n";
    std::fs::write(&spec, text).unwrap();
    let spec_uri = lsp_client::uri(&spec);
    client.open(&spec_uri, text);
    let answer = client.request("textDocument/definition", at(&spec_uri, 5, 20));
    assert_eq!(
        answer["result"]["uri"],
        lsp_client::uri(&root.path().join("schemas.yaml"))
    );
    assert_eq!(
        answer["result"]["range"]["start"],
        position(1, 2),
        "{answer}"
    );
}

#[test]
fn malformed_messages_and_unknown_methods_get_errors_and_the_server_goes_on() {
    let (mut client, _root) = server();
    client.send_raw("{this is not json");
    let parse_error = client.wait_for(|message| message["error"]["code"] == -32700);
    assert_eq!(parse_error["id"], Value::Null);
    client.send_raw(r#"{"jsonrpc":"2.0","id":99,"params":{}}"#);
    let invalid = client.wait_for(|message| message["id"] == 99);
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    let unknown = client.request("idemgen/noSuchMethod", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad_params = client.request("textDocument/hover", json!({"nope": 1}));
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");
    // Still serving.
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    assert!(codes(&client.diagnostics(&uri)).contains(&"window-too-short".to_string()));
    assert_eq!(client.stop(), 0);
}

/// A spec with a NUL byte in it (pasted, or typed by accident) is still a
/// spec: `idemgen lint` refuses it with the parser's error, and so does
/// the editor, instead of dropping every finding without a word.
#[test]
fn a_spec_with_a_nul_byte_gets_the_error_lint_reports() {
    let (mut client, root) = server();
    let (_, text) = window_too_short();
    let text = text.replace("# <- needs 18s", "# <- needs\u{0} 18s");
    let path = root.path().join("nul.yaml");
    std::fs::write(&path, &text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["lint", "--no-config", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let error = &report["load_errors"][0];
    let uri = uri(&path);
    client.open(&uri, &text);
    let published = client.diagnostics(&uri);
    let diagnostic = &published["diagnostics"][0];
    let message = error["message"].as_str().unwrap();
    assert!(
        diagnostic["message"].as_str().unwrap().starts_with(message),
        "{published} / {report}"
    );
    assert_eq!(
        diagnostic["range"]["start"],
        position(
            error["line"].as_u64().unwrap() as u32 - 1,
            error["column"].as_u64().unwrap() as u32 - 1
        )
    );
    assert_eq!(client.stop(), 0);
}

#[test]
fn other_files_and_half_typed_yaml_never_crash_the_server() {
    let (mut client, root) = server();
    // Not OpenAPI: a workflow file and binary junk are left alone.
    let workflow = uri(&root.path().join("ci.yaml"));
    client.open(
        &workflow,
        "name: CI\non: push\njobs: {build: {runs-on: ubuntu-latest}}\n",
    );
    let junk = uri(&root.path().join("blob.yaml"));
    client.open(&junk, "\u{0}\u{1}\u{2}openapi\u{fffd}\u{7f}");
    let hover = client.request("textDocument/hover", at(&workflow, 0, 2));
    assert_eq!(hover["result"], Value::Null);
    let hover = client.request("textDocument/hover", at(&junk, 0, 2));
    assert_eq!(hover["result"], Value::Null);
    let completion = client.request("textDocument/completion", at(&junk, 0, 99));
    assert!(completion.get("error").is_none(), "{completion}");
    // A spec being typed: every prefix of it is linted without a crash,
    // and the parse error of a half-typed one is a diagnostic.
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    client.diagnostics(&uri);
    let cut = text.find("      x-idempotency:").unwrap()
        + "      x-idempotency:\n        key: {in: hea".len();
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": &text[..cut]}]}),
    );
    let published = client.diagnostics(&uri);
    assert_eq!(published["version"], 2);
    let message = published["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.contains("help:"), "{published}");
    for (version, end) in (3..).zip((0..text.len()).step_by(97)) {
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": &text[..end]}]}),
        );
    }
    let alive = client.request("textDocument/hover", at(&uri, 0, 0));
    assert!(alive.get("error").is_none(), "{alive}");
    // No diagnostics were ever published for the files that are not specs.
    client.request("shutdown", Value::Null);
    assert!(
        client
            .notifications
            .iter()
            .all(|message| message["params"]["uri"] != workflow && message["params"]["uri"] != junk),
        "{:?}",
        client.notifications
    );
}

#[test]
fn queued_edits_coalesce_and_stale_results_are_never_published() {
    let (mut client, _root) = server();
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    client.diagnostics(&uri);
    let last = 60;
    for version in 2..=last {
        // Alternate between the broken window and a fixed one.
        let window = if version % 2 == 0 { "18s" } else { "16s" };
        let edited = text.replace("window: 16s", &format!("window: {window}"));
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": edited}]}),
        );
    }
    let final_result = client.wait_for(|message| {
        message["method"] == "textDocument/publishDiagnostics"
            && message["params"]["version"] == last
    });
    // Version 60 has the fixed window.
    assert!(codes(&final_result["params"]).is_empty(), "{final_result}");
    client.request("shutdown", Value::Null);
    let versions: Vec<i64> = client
        .notifications
        .iter()
        .filter(|message| message["method"] == "textDocument/publishDiagnostics")
        .map(|message| message["params"]["version"].as_i64().unwrap())
        .collect();
    assert!(
        versions.iter().all(|version| *version < last),
        "{versions:?}"
    );
    assert!(
        versions.windows(2).all(|pair| pair[0] < pair[1]),
        "{versions:?}"
    );
}

#[test]
fn idemgen_toml_of_the_workspace_applies_and_is_read_again_when_it_changes() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("idemgen.toml");
    std::fs::write(&config, "[rules]\nwindow-too-short = \"off\"\n").unwrap();
    let mut client = Client::start(
        root.path(),
        json!({"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}}),
    );
    let registration = client.wait_for(|message| message["method"] == "client/registerCapability");
    assert_eq!(
        registration["params"]["registrations"][0]["method"],
        "workspace/didChangeWatchedFiles"
    );
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    assert!(codes(&client.diagnostics(&uri)).is_empty());
    std::fs::write(&config, "[rules]\nwindow-too-short = \"warning\"\n").unwrap();
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": lsp_client::uri(&config), "type": 2}]}),
    );
    let published = client.diagnostics(&uri);
    assert_eq!(codes(&published), ["window-too-short"]);
    assert_eq!(published["diagnostics"][0]["severity"], 2);
    // A broken configuration is reported, and the defaults apply.
    std::fs::write(&config, "[rules]\nwindow-to-short = \"off\"\n").unwrap();
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": lsp_client::uri(&config), "type": 2}]}),
    );
    let shown = client.wait_for(|message| message["method"] == "window/showMessage");
    assert!(
        shown["params"]["message"]
            .as_str()
            .unwrap()
            .contains("window-too-short"),
        "{shown}"
    );
    let published = client.diagnostics(&uri);
    assert_eq!(published["diagnostics"][0]["severity"], 1);
}

#[test]
fn a_client_that_pulls_diagnostics_gets_them_on_request() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("idemgen.toml");
    let mut client = Client::start(
        root.path(),
        json!({
            "textDocument": {"diagnostic": {}},
            "workspace": {"diagnostics": {"refreshSupport": true}},
        }),
    );
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    let report = client.request(
        "textDocument/diagnostic",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(report["result"]["kind"], "full", "{report}");
    assert_eq!(report["result"]["items"][0]["code"], "window-too-short");
    // A new configuration: the client is asked to pull again, and gets
    // findings under it.
    std::fs::write(&config, "[rules]\nwindow-too-short = \"off\"\n").unwrap();
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": lsp_client::uri(&config), "type": 1}]}),
    );
    client.wait_for(|message| message["method"] == "workspace/diagnostic/refresh");
    let report = client.request(
        "textDocument/diagnostic",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(report["result"]["items"], json!([]), "{report}");
    client.request("shutdown", Value::Null);
    assert!(
        client
            .notifications
            .iter()
            .all(|message| message["method"] != "textDocument/publishDiagnostics"),
        "pull clients get no pushed diagnostics"
    );
}

#[test]
fn unsafe_fixes_are_offered_but_not_preferred() {
    let (mut client, _root) = server();
    let path = project("examples/broken/missing-idempotency.yaml");
    let (uri, text) = (uri(&path), std::fs::read_to_string(&path).unwrap());
    client.open(&uri, &text);
    let published = client.diagnostics(&uri);
    let diagnostic = &published["diagnostics"][0];
    assert_eq!(diagnostic["code"], "missing-idempotency");
    let answer = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": diagnostic["range"],
            "context": {"diagnostics": [diagnostic]},
        }),
    );
    let actions = answer["result"].as_array().unwrap();
    let fix = actions
        .iter()
        .find(|action| action["title"].as_str().unwrap().contains("unsafe"))
        .unwrap_or_else(|| panic!("{answer}"));
    assert!(fix.get("isPreferred").is_none(), "{fix}");
    let fixed = apply_edits(&text, fix["edit"]["changes"][&uri].as_array().unwrap());
    assert!(fixed.contains("x-idempotency:"), "{fixed}");
    assert!(
        actions.iter().all(|action| action["isPreferred"] != true),
        "{answer}"
    );
}

#[test]
fn findings_in_an_open_referenced_file_are_shown_there_and_follow_its_edits() {
    let (mut client, root) = server();
    let (_, example) = window_too_short();
    // The example's operation moved into ops.yaml, referenced from api.yaml.
    let lines: Vec<&str> = example.lines().collect();
    let operation: String = lines[18..59]
        .iter()
        .map(|line| format!("{}\n", line.strip_prefix("    ").unwrap_or(line)))
        .collect();
    let api = format!(
        "{}paths:\n  /callbacks/pay:\n    $ref: 'ops.yaml'\n",
        lines[8..16]
            .iter()
            .map(|line| format!("{line}\n"))
            .collect::<String>()
    );
    std::fs::write(root.path().join("api.yaml"), &api).unwrap();
    std::fs::write(root.path().join("ops.yaml"), &operation).unwrap();
    let (api_uri, ops_uri) = (
        uri(&root.path().join("api.yaml")),
        uri(&root.path().join("ops.yaml")),
    );
    client.open(&ops_uri, &operation);
    client.open(&api_uri, &api);
    let in_ops = client.diagnostics(&ops_uri);
    assert!(
        codes(&in_ops).contains(&"window-too-short".to_string()),
        "{in_ops}"
    );
    let window_line = operation
        .lines()
        .position(|line| line.contains("window: 16s"))
        .unwrap();
    assert!(
        in_ops["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["range"]["start"]["line"] == window_line),
        "{in_ops}"
    );
    // Fixing the window in the referenced file (unsaved) clears it there.
    let fixed = operation.replace("window: 16s", "window: 18s");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": ops_uri, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    let in_ops = client.wait_for(|message| {
        message["method"] == "textDocument/publishDiagnostics"
            && message["params"]["uri"] == ops_uri
            && !codes(&message["params"]).contains(&"window-too-short".to_string())
    });
    assert!(in_ops["params"]["diagnostics"].is_array());
}

#[test]
fn the_server_exits_when_its_input_closes() {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .arg("lsp")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // No `shutdown` came first, so the exit code is 1, as the protocol says.
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
}

#[test]
fn requests_before_initialize_are_refused() {
    use std::io::{Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .arg("lsp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}}"#;
    let mut stdin = child.stdin.take().unwrap();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child.wait().unwrap();
    assert!(out.contains(r#""code":-32002"#), "{out}");
}

/// A spec whose text stops being OpenAPI (emptied, or replaced by another
/// kind of YAML) had its last findings left on screen: it now gets an
/// empty list for that version, and findings again once it is a spec.
#[test]
fn a_document_that_stops_being_a_spec_loses_its_old_findings() {
    let (mut client, _root) = server();
    let (uri, text) = window_too_short();
    client.open(&uri, &text);
    assert!(codes(&client.diagnostics(&uri)).contains(&"window-too-short".to_string()));
    for (version, replacement) in [(2, ""), (3, text.as_str()), (4, "swagger: '2.0'\n")] {
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": replacement}]}),
        );
        let published = client.diagnostics(&uri);
        assert_eq!(published["version"], version, "{published}");
        if replacement == text {
            assert!(codes(&published).contains(&"window-too-short".to_string()));
        } else {
            assert_eq!(published["diagnostics"], json!([]), "{published}");
        }
    }
    assert_eq!(client.stop(), 0);
}

/// `initialize` sent again is an invalid request, not an unknown method.
#[test]
fn a_second_initialize_is_an_invalid_request() {
    let (mut client, _root) = server();
    let again = client.request("initialize", json!({"capabilities": {}}));
    assert_eq!(again["error"]["code"], -32600, "{again}");
    assert_eq!(
        again["error"]["message"],
        "the server is already initialized; `initialize` is sent once"
    );
    assert_eq!(client.stop(), 0);
}

/// A finding whose key is a shared component points at the operation and
/// names the component's place as `relatedInformation`, in its own file.
#[test]
fn a_shared_key_is_a_related_location_of_the_operations_finding() {
    let (mut client, root) = server();
    let api = "openapi: 3.1.0
info: {title: Payments, version: '1'}
paths:
  /refunds:
    post:
      operationId: createRefund
      parameters:
        - $ref: 'shared.yaml#/IdempotencyKey'
      responses:
        '201': {description: created}
";
    let shared = "IdempotencyKey:
  name: Idempotency-Key
  in: header
  required: false
  schema: {type: string}
";
    std::fs::write(root.path().join("api.yaml"), api).unwrap();
    std::fs::write(root.path().join("shared.yaml"), shared).unwrap();
    let (api_uri, shared_uri) = (
        uri(&root.path().join("api.yaml")),
        uri(&root.path().join("shared.yaml")),
    );
    client.open(&api_uri, api);
    let published = client.diagnostics(&api_uri);
    let finding = published["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "undeclared-key-header")
        .unwrap_or_else(|| panic!("{published}"))
        .clone();
    // At the operation's method key, line 4 (0-based).
    assert_eq!(finding["range"]["start"]["line"], 4, "{finding}");
    let related = finding["relatedInformation"].as_array().expect("related");
    assert_eq!(related.len(), 1, "{finding}");
    assert_eq!(related[0]["location"]["uri"], shared_uri.as_str());
    // The parameter's `name:` line, 1 (0-based).
    assert_eq!(related[0]["location"]["range"]["start"]["line"], 1);
    assert!(
        related[0]["message"]
            .as_str()
            .unwrap()
            .contains("declared here"),
        "{finding}"
    );
}
