//! `idemgen lint --fix`: fixes are text edits that keep everything else
//! byte for byte, in YAML (block, flow, CRLF) and JSON (pretty, minified),
//! edit the file that holds the node in multi-file specs, resolve what
//! they fix, and change nothing when run again.

use crate::support::root;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use idemgen_diagnostics::Severity;
use idemgen_lint::fix_loop::fix_document;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;
use serde_json::Value;

use crate::support::tree;
use tree::losses;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/fix").join(name)
}

/// A copy of a fixture (file or directory) in a temporary directory.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture(name);
    let target = dir.path().join(source.file_name().unwrap());
    copy_tree(&source, &target);
    (dir, target)
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}

fn idemgen(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(args)
        .arg("--no-config")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn findings(path: &Path) -> Vec<(String, Severity, String)> {
    let workspace = Workspace::load(path).unwrap_or_else(|e| panic!("{}", e.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .map(|d| (d.rule.to_string(), d.severity, d.pointer))
        .collect()
}

/// The fixed spec has no error but the placeholders of the timing it
/// does not state (the fix guesses none), and none once they are filled in.
fn no_error_but_placeholders(path: &Path) {
    let workspace = Workspace::load(path).unwrap_or_else(|e| panic!("{}", e.message));
    let left: Vec<_> = lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .filter(|d| !(d.rule == "contract-invalid" && d.message.contains("still a placeholder")))
        .map(|d| (d.rule, d.message))
        .collect();
    assert!(left.is_empty(), "{left:#?}");
    let dir = tempfile::tempdir().unwrap();
    let filled = dir.path().join(path.file_name().unwrap());
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(&filled, crate::corpus_fix::fill_placeholders(&text)).unwrap();
    assert!(
        findings(&filled).iter().all(|f| f.1 != Severity::Error),
        "{:#?}",
        findings(&filled)
    );
}

/// Every file of the workspace as plain JSON, by display name.
fn trees(path: &Path) -> Vec<(String, Value)> {
    let workspace = Workspace::load(path).unwrap();
    workspace
        .files
        .iter()
        .map(|file| (file.source.display.clone(), file.root.to_json()))
        .collect()
}

/// `--fix` (with `--unsafe-fixes` when asked) on a copy. Checks that
/// everything the original said is still said except the values the fixes
/// meant to change (`changed`: `file#pointer`), and that a second run
/// changes nothing.
fn fix_copy(
    name: &str,
    root: &str,
    unsafe_fixes: bool,
    changed: &[&str],
) -> (tempfile::TempDir, PathBuf) {
    let (dir, copied) = copy(name);
    let path = if root.is_empty() {
        copied
    } else {
        copied.join(root)
    };
    let before = trees(&path);
    let mut args = vec!["lint", "--fix", path.to_str().unwrap()];
    if unsafe_fixes {
        args.push("--unsafe-fixes");
    }
    let (code, _, stderr) = idemgen(&args);
    assert!(code <= 1, "{name}: exit {code}: {stderr}");
    assert!(stderr.contains("fixed "), "{name}: {stderr}");
    let after = trees(&path);
    let mut lost = Vec::new();
    for (display, old) in &before {
        let new = &after.iter().find(|(d, _)| d == display).unwrap().1;
        let file = Path::new(display).file_name().unwrap().to_string_lossy();
        let mut here = Vec::new();
        losses(old, new, "", &mut here);
        lost.extend(here.into_iter().map(|pointer| format!("{file}#{pointer}")));
    }
    assert_eq!(lost, changed, "{name}: only the fixed values change");
    // A second run finds nothing more to fix.
    let texts: Vec<String> = walk(&dir);
    let (_, diff, _) = idemgen(&["lint", "--diff", "--unsafe-fixes", path.to_str().unwrap()]);
    assert_eq!(diff, "", "{name}: a second --fix would change:\n{diff}");
    assert_eq!(texts, walk(&dir), "--diff writes nothing");
    (dir, path)
}

fn walk(dir: &tempfile::TempDir) -> Vec<String> {
    let mut texts = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            stack.extend(entries);
        } else {
            texts.push(std::fs::read_to_string(&path).unwrap());
        }
    }
    texts
}

#[test]
fn flow_style_yaml_keeps_its_style_and_comment() {
    let (_dir, path) = fix_copy(
        "flow.yaml",
        "",
        false,
        &[
            "flow.yaml#/paths/~1pay/post/parameters/0/required",
            "flow.yaml#/paths/~1pay/post/x-idempotency/window",
        ],
    );
    let text = std::fs::read_to_string(&path).unwrap();
    insta::assert_snapshot!("fix_flow_yaml", text);
    assert!(text.contains("}}}}}}   # one line\n"));
    let rules: BTreeSet<String> = findings(&path).into_iter().map(|f| f.0).collect();
    assert!(rules.is_empty(), "{rules:?}");
}

#[test]
fn pretty_json_keeps_its_indentation() {
    let (_dir, path) = fix_copy(
        "pretty.json",
        "",
        true,
        &["pretty.json#/paths/~1pay/post/x-idempotency/window"],
    );
    let text = std::fs::read_to_string(&path).unwrap();
    insta::assert_snapshot!("fix_pretty_json", text);
    serde_json::from_str::<Value>(&text).expect("still JSON");
    no_error_but_placeholders(&path);
    assert!(
        !findings(&path)
            .iter()
            .any(|f| f.0 == "undeclared-key-header")
    );
}

#[test]
fn minified_json_stays_one_line() {
    let (_dir, path) = fix_copy("minified.json", "", true, &[]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    serde_json::from_str::<Value>(&text).expect("still JSON");
    insta::assert_snapshot!("fix_minified_json", text);
    no_error_but_placeholders(&path);
}

#[test]
fn crlf_files_keep_crlf() {
    let (_dir, path) = fix_copy("crlf.yaml", "", true, &[]);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.replace("\r\n", "").contains('\n'), "{text:?}");
    assert!(text.contains("      # no contract yet\r\n"));
    no_error_but_placeholders(&path);
}

#[test]
fn multi_file_specs_edit_the_file_that_holds_the_node() {
    let (dir, path) = fix_copy("multi", "openapi.yaml", false, &[]);
    let read = |name: &str| std::fs::read_to_string(dir.path().join("multi").join(name)).unwrap();
    assert_eq!(
        read("openapi.yaml"),
        std::fs::read_to_string(fixture("multi/openapi.yaml")).unwrap()
    );
    assert!(
        read("components/parameters.yaml")
            .contains("    type: string   # the pattern goes below\n    pattern: ")
    );
    assert!(read("components/responses.yaml").contains("Retry-After"));
    // The document's security applies to the operation in paths/pay.yaml,
    // whose block gets the principal scope.
    assert!(
        read("paths/pay.yaml").contains(
            "    key: {in: header, name: Idempotency-Key, format: \"pay:{uuid}\", scope: [principal]}\n"
        ),
        "{}",
        read("paths/pay.yaml")
    );
    assert!(findings(&path).is_empty(), "{:?}", findings(&path));
}

#[test]
fn diff_prints_a_unified_diff_writes_nothing_and_exits_1() {
    let (dir, path) = copy("flow.yaml");
    let before = walk(&dir);
    let (code, stdout, _) = idemgen(&["lint", "--diff", path.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stdout.starts_with("--- a/"), "{stdout}");
    assert!(stdout.contains("\n+++ b/"), "{stdout}");
    assert_eq!(before, walk(&dir));
    let clean = root().join("examples/payment-callback/openapi.yaml");
    let (code, stdout, _) = idemgen(&["lint", "--diff", clean.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, ""));
}

#[test]
fn unsafe_fixes_wait_for_the_flag() {
    let (_dir, path) = copy("minified.json");
    let safe = fix_document(&path, &LintOptions::default(), false).unwrap();
    assert!(
        safe.files.is_empty(),
        "only unsafe fixes apply to this file"
    );
    let all = fix_document(&path, &LintOptions::default(), true).unwrap();
    assert_eq!(all.files.len(), 1);
}

#[test]
fn the_first_unsafe_fix_writes_the_document_defaults_from_the_flags() {
    let (_dir, path) = copy("crlf.yaml");
    let (code, _, stderr) = idemgen(&[
        "lint",
        "--fix",
        "--unsafe-fixes",
        "--timeout",
        "10s",
        "--retries",
        "500ms,1s",
        "--max-processing",
        "5s",
        "--dialect",
        "postgres",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\r\n", "\n");
    assert!(
        text.contains(
            "  version: \"1\"\nx-idempotency:\n  client:\n    timeout: 10s\n    retries: [500ms, 1s]\n  server: {max-processing: 5s}\n  store: {dialect: postgres}\npaths:"
        ),
        "{text}"
    );
    // 2 × (10s + 1.5s + 5s) = 33s; the retry span is 2 × 10s + 1.5s + 5s.
    assert!(text.contains("window: 33s"), "{text}");
}

#[test]
fn every_broken_example_fixes_to_a_loadable_spec_and_converges() {
    let broken = root().join("examples/broken");
    let mut fixed = 0;
    for entry in std::fs::read_dir(&broken).unwrap() {
        let source = entry.unwrap().path();
        if source.extension().is_none_or(|ext| ext != "yaml") {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(source.file_name().unwrap());
        std::fs::copy(&source, &path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let outcome = fix_document(&path, &LintOptions::default(), true).unwrap();
        assert!(!outcome.unfinished, "{name}");
        for file in &outcome.files {
            std::fs::write(&file.path, &file.after).unwrap();
        }
        Workspace::load(&path).unwrap_or_else(|e| panic!("{name}: {}", e.message));
        let again = fix_document(&path, &LintOptions::default(), true).unwrap();
        assert!(
            again.files.is_empty(),
            "{name}: a second run changes nothing"
        );
        fixed += usize::from(!outcome.files.is_empty());
    }
    assert!(
        fixed >= 10,
        "only {fixed} broken examples had something to fix"
    );
}

#[test]
fn a_block_list_gets_its_new_item_at_the_dash_column_of_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    let before = "openapi: 3.1.0
info: {title: t, version: '1'}
x-idempotency:
  client: {timeout: 5s}
  server: {max-processing: 3s}
paths:
  /pay:
    post:
      operationId: pay
      parameters:
      - name: X-Tenant   # the tenant
        in: header
        schema: {type: string}
      # parameters end here
      x-idempotency:
        key: {in: header, name: Idempotency-Key, format: \"pay:{uuid}\"}
        window: 16s
      responses:
        '200': {description: ok, content: {application/json: {schema: {type: object}}}}
        '400': {description: bad key}
        '409': {description: conflict}
        '429': {description: busy, headers: {Retry-After: {schema: {type: integer}}}}
";
    std::fs::write(&path, before).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), false).unwrap();
    let after = &outcome.files[0].after;
    let expected = before.replace(
        "        schema: {type: string}\n",
        "        schema: {type: string}
      - name: Idempotency-Key
        in: header
        required: true
        description: \"Idempotency key, `pay:{uuid}`: the same for every retry of one request, new for every new request.\"
        schema:
          type: string
          pattern: \"^pay:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$\"
          maxLength: 128
",
    );
    assert_eq!(after, &expected, "window 16s = 2 × (5s + 3s) needs no fix");
}

/// The window fix writes the floor, the smallest safe window, and says so:
/// in the fix's title and in a comment beside the value it writes (YAML
/// block style; JSON and flow collections take no comment).
#[test]
fn the_window_fix_writes_the_floor_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    let text = std::fs::read_to_string(root().join("examples/broken/window-too-short.yaml"))
        .unwrap()
        .replace(
            "        window: 16s   # <- needs 18s\n",
            "        window: 16s\n",
        );
    assert!(text.contains("        window: 16s\n"));
    std::fs::write(&path, &text).unwrap();
    let workspace = Workspace::load(&path).unwrap();
    let report = lint(&workspace, &LintOptions::default());
    let finding = report
        .diagnostics
        .iter()
        .find(|d| d.rule == "window-too-short")
        .expect("window-too-short fires");
    let title = &finding.fix.as_ref().expect("a fix").title;
    assert!(
        title.starts_with("Set `window` to its floor, the smallest safe window, 18s: a minimum"),
        "{title}"
    );
    assert!(title.contains("hours or days"), "{title}");
    let (code, _, stderr) = idemgen(&["lint", "--fix", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let fixed = std::fs::read_to_string(&path).unwrap();
    assert!(
        fixed.contains(
            "        window: 18s  # the floor (idemgen window); clients that resume after a restart need hours or days\n"
        ),
        "{fixed}"
    );
    // The comment is no finding, and a second run changes nothing.
    assert!(findings(&path).is_empty(), "{:?}", findings(&path));
    let (_, _, _) = idemgen(&["lint", "--fix", path.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), fixed);
}

/// When the window is below both bounds, both findings ask for the same
/// window, the larger bound, and following either one passes both rules.
#[test]
fn both_window_findings_ask_for_one_window_that_passes_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    // 2 × (5 s + 1 s + 3 s) = 18 s, retry span 2 × 5 s + 1 s + 3 s = 14 s.
    let text = std::fs::read_to_string(root().join("examples/broken/window-too-short.yaml"))
        .unwrap()
        .replace(
            "        window: 16s   # <- needs 18s\n",
            "        window: 10s\n",
        );
    std::fs::write(&path, &text).unwrap();
    let workspace = Workspace::load(&path).unwrap();
    let report = lint(&workspace, &LintOptions::default());
    let helps: Vec<(&str, String)> = report
        .diagnostics
        .iter()
        .filter(|d| d.rule.starts_with("window-"))
        .map(|d| (d.rule, d.help.clone().unwrap_or_default()))
        .collect();
    assert_eq!(helps.len(), 2, "{helps:?}");
    for (rule, help) in &helps {
        assert!(
            help.starts_with("set `window: 18s` or longer"),
            "{rule}: {help}"
        );
    }
    let span = &helps
        .iter()
        .find(|(rule, _)| *rule == "window-below-retry-span")
        .unwrap()
        .1;
    assert!(
        span.contains("the 2× bound `window-too-short` asks for, which covers this one too"),
        "{span}"
    );
    // Following the help (not the fix) passes every window rule.
    std::fs::write(&path, text.replace("window: 10s", "window: 18s")).unwrap();
    let left: Vec<_> = findings(&path)
        .into_iter()
        .filter(|(rule, _, _)| rule.starts_with("window-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
