//! OpenAPI Overlays: `lint --fix --overlay OUT` writes the fixes as an
//! Overlay 1.1 document, and `--overlay FILE` lints a spec as it looks
//! with overlays applied. The round trip is checked against an independent
//! implementation, openapi-format (npm, pinned with every dependency by
//! scripts/overlay-tool/package-lock.json and installed here once): the in-place
//! fix, the spec linted through idemgen's overlay, and the spec after
//! openapi-format applied the same overlay must give the same findings and
//! the same contracts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::support::build::DirLock;
use crate::support::corpus::full_corpus_dir;
use crate::support::root;
use crate::support::skip::skipped;

const CORPUS: [&str; 4] = [
    "adyen-CheckoutService-v71.yaml",
    "square-api.json",
    "paypal-checkout_orders_v2.json",
    "twilio-twilio_api_v2010.yaml",
];

const COMMITTED: [&str; 2] = [
    "adyen-TransferService-v4.yaml",
    "paypal-checkout_orders_v1.json",
];

/// `idemgen ARGS` as (exit code, stdout, stderr).
fn idemgen(args: &[&str]) -> (i32, String, String) {
    let run = crate::support::run::idemgen(args);
    (run.code, run.stdout, run.stderr)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// What a lint says, without where it says it (line numbers differ).
fn findings(args: &[&str]) -> Vec<String> {
    let mut all = vec!["lint", "--no-config", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = idemgen(&all);
    assert!(code == 0 || code == 1, "lint {args:?}: {code}\n{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let mut list: Vec<String> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {} {} {}",
                d["rule"], d["operation"], d["pointer"], d["message"]
            )
        })
        .collect();
    list.sort();
    list
}

/// The contract of every operation (`window --format json`), positions dropped.
fn contracts(args: &[&str]) -> Value {
    let mut all = vec!["window", "--no-config", "--format", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = idemgen(&all);
    assert!(code == 0 || code == 1, "window {args:?}: {code}\n{err}");
    let mut value: Value = serde_json::from_str(&out).unwrap();
    strip_positions(&mut value);
    value
}

fn strip_positions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in ["file", "line", "column", "spec"] {
                map.remove(key);
            }
            map.values_mut().for_each(strip_positions);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_positions),
        _ => {}
    }
}

/// openapi-format installed from npm, or `None` (with SKIPPED printed)
/// where node or npm is missing or the registry is out of reach. Installed
/// once per test binary (every test that applies overlays shares it) into
/// `target/tmp/overlay-tool`, see [`install_tool`].
fn overlay_tool() -> Option<PathBuf> {
    static TOOL: OnceLock<Option<PathBuf>> = OnceLock::new();
    TOOL.get_or_init(|| {
        let has = |tool: &str| {
            Command::new(tool)
                .arg("--version")
                .output()
                .is_ok_and(|output| output.status.success())
        };
        if !has("node") || !has("npm") {
            skipped("node and npm are needed to apply overlays with openapi-format");
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("overlay-tool");
        match install_tool(&root().join("scripts/overlay-tool"), &dir) {
            Ok(_) => Some(dir),
            Err(error) => {
                skipped(&format!(
                    "`npm ci` of scripts/overlay-tool failed (no registry?): {error}"
                ));
                None
            }
        }
    })
    .clone()
}

/// The files of `scripts/overlay-tool` an install is made from; the
/// marker of a finished install holds them all, so a change to any of
/// them (another pinned version, say) installs again.
const TOOL_FILES: [&str; 3] = ["package.json", "package-lock.json", "apply.js"];

/// How [`install_tool`] found `dir`.
#[derive(Debug, PartialEq)]
enum Install {
    /// A finished install of the same files: used as it is.
    Reused,
    /// Missing, partial, broken or made from other files: installed anew.
    Installed,
}

/// Installs the npm package in `source` (its `package.json`, the committed
/// `package-lock.json` that pins every dependency, and `apply.js`) into
/// `dir` with `npm ci`, exactly as locked. Test binaries and `cargo test`
/// runs that share `dir` take turns through a lock between processes (the
/// directory `dir.install-lock`, see [`DirLock`]), so one installs while
/// the others wait. An install is used
/// only when its marker (`dir/.installed`, written last, after
/// openapi-format loaded) holds the same files as `source`; otherwise
/// (none yet, or one interrupted, broken or made from other files) it is
/// redone from scratch.
fn install_tool(source: &Path, dir: &Path) -> Result<Install, String> {
    let mut expected = Vec::new();
    for file in TOOL_FILES {
        let bytes = std::fs::read(source.join(file))
            .map_err(|error| format!("{}: {error}", source.join(file).display()))?;
        expected.extend_from_slice(format!("{file} {}\n", bytes.len()).as_bytes());
        expected.extend_from_slice(&bytes);
    }
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    let _lock = DirLock::acquire(&dir.with_extension("install-lock"));
    let marker = dir.join(".installed");
    if std::fs::read(&marker).is_ok_and(|found| found == expected) {
        return Ok(Install::Reused);
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    std::fs::create_dir_all(dir).unwrap();
    for file in TOOL_FILES {
        std::fs::copy(source.join(file), dir.join(file)).unwrap();
    }
    let npm = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--silent"])
        .current_dir(dir)
        .output()
        .map_err(|error| format!("npm: {error}"))?;
    if !npm.status.success() {
        return Err(String::from_utf8_lossy(&npm.stderr).into_owned());
    }
    let loads = Command::new("node")
        .args(["-e", "require('openapi-format')"])
        .current_dir(dir)
        .output()
        .map_err(|error| format!("node: {error}"))?;
    if !loads.status.success() {
        return Err(format!(
            "openapi-format does not load after `npm ci`: {}",
            String::from_utf8_lossy(&loads.stderr)
        ));
    }
    std::fs::write(dir.join(".installed.new"), &expected).unwrap();
    std::fs::rename(dir.join(".installed.new"), &marker).unwrap();
    Ok(Install::Installed)
}

#[test]
fn the_overlay_tool_is_pinned_by_a_committed_lock_file() {
    let source = root().join("scripts/overlay-tool");
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(source.join("package.json")).unwrap())
            .unwrap();
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(source.join("package-lock.json"))
            .expect("scripts/overlay-tool/package-lock.json: `npm install --package-lock-only`"),
    )
    .unwrap();
    let wanted = &package["dependencies"]["openapi-format"];
    assert_eq!(
        lock["packages"][""]["dependencies"]["openapi-format"], *wanted,
        "the lock file was made from this package.json"
    );
    assert_eq!(
        lock["packages"]["node_modules/openapi-format"]["version"], *wanted,
        "the lock file installs the version package.json names"
    );
    // Every package `npm ci` installs is pinned by version and checksum.
    for (path, entry) in lock["packages"].as_object().unwrap() {
        if path.is_empty() {
            continue;
        }
        assert!(entry["version"].is_string(), "{path}: {entry}");
        assert!(
            entry["integrity"]
                .as_str()
                .is_some_and(|sum| sum.starts_with("sha512-")),
            "{path}: {entry}"
        );
    }
}

#[test]
fn the_overlay_tool_installs_once_and_redoes_a_partial_install() {
    if overlay_tool().is_none() {
        return; // said why
    }
    let source = root().join("scripts/overlay-tool");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("tool");
    // Two installs at once into one folder: one installs, the other waits
    // and uses it.
    let results: Vec<Install> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| install_tool(&source, &dir).unwrap()))
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    assert!(
        results.contains(&Install::Installed) && results.contains(&Install::Reused),
        "{results:?}"
    );
    let loads = |dir: &Path| {
        Command::new("node")
            .args(["-e", "require('openapi-format')"])
            .current_dir(dir)
            .status()
            .unwrap()
            .success()
    };
    assert!(loads(&dir));
    // An install cut short: openapi-format is there, one of its
    // dependencies is not, and no marker was written.
    std::fs::remove_dir_all(dir.join("node_modules/yaml")).unwrap();
    std::fs::remove_file(dir.join(".installed")).unwrap();
    assert!(!loads(&dir), "the partial install is broken");
    assert_eq!(install_tool(&source, &dir), Ok(Install::Installed));
    assert!(loads(&dir), "and it was redone");
    // A finished one is used as it is.
    assert_eq!(install_tool(&source, &dir), Ok(Install::Reused));
}

/// Applies `overlay` to `spec` with openapi-format; the result is JSON.
fn apply_with_tool(tool: &Path, spec: &Path, overlay: &Path, out: &Path) {
    let output = Command::new("node")
        .arg(tool.join("apply.js"))
        .args([spec, overlay, out])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "openapi-format refused {}: {}",
        overlay.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The round trip for one spec; returns the number of overlay actions.
fn round_trip(source: &Path, tool: Option<&Path>) -> usize {
    let name = source.file_name().unwrap().to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fixed = dir.path().join(format!("fixed-{name}"));
    let spec = dir.path().join(name);
    let overlay = dir.path().join(format!("{name}.overlay.yaml"));
    std::fs::copy(source, &fixed).unwrap();
    std::fs::copy(source, &spec).unwrap();
    idemgen(&["lint", "--no-config", "--fix", "--unsafe-fixes", s(&fixed)]);
    let (code, _, err) = idemgen(&[
        "lint",
        "--no-config",
        "--fix",
        "--unsafe-fixes",
        "--overlay",
        s(&overlay),
        s(&spec),
    ]);
    assert!(code == 0 || code == 1, "{name}: {err}");
    assert_eq!(
        std::fs::read(&spec).unwrap(),
        std::fs::read(source).unwrap(),
        "{name}: --overlay leaves the spec as it is"
    );
    let text = std::fs::read_to_string(&overlay).unwrap();
    assert!(text.starts_with("overlay: 1.1.0\n"), "{name}: {text}");
    // The same spec gives the same overlay, byte for byte.
    let again = dir.path().join("again.yaml");
    idemgen(&[
        "lint",
        "--no-config",
        "--fix",
        "--unsafe-fixes",
        "--overlay",
        s(&again),
        s(&spec),
    ]);
    assert_eq!(
        std::fs::read_to_string(&again)
            .unwrap()
            .replace("again.yaml", ""),
        text.replace(&format!("{name}.overlay.yaml"), ""),
        "{name}"
    );
    let expected = findings(&[s(&fixed)]);
    assert_eq!(
        findings(&["--overlay", s(&overlay), s(&spec)]),
        expected,
        "{name}: linting through the overlay = linting the fixed spec"
    );
    assert_eq!(
        contracts(&["--overlay", s(&overlay), s(&spec)]),
        contracts(&[s(&fixed)]),
        "{name}"
    );
    if let Some(tool) = tool {
        let applied = dir.path().join(format!("applied-{name}.json"));
        apply_with_tool(tool, &spec, &overlay, &applied);
        assert_eq!(
            findings(&[s(&applied)]),
            expected,
            "{name}: openapi-format's result lints as the fixed spec"
        );
        assert_eq!(contracts(&[s(&applied)]), contracts(&[s(&fixed)]), "{name}");
    }
    text.matches("\n  - target: ").count()
}

#[test]
fn fix_overlays_round_trip_through_openapi_format_on_real_apis() {
    let tool = overlay_tool();
    let full = full_corpus_dir().map(|dir| dir.join("specs"));
    let specs: Vec<PathBuf> = if let Some(full) =
        full.filter(|full| CORPUS.iter().all(|file| full.join(file).is_file()))
    {
        CORPUS.iter().map(|file| full.join(file)).collect()
    } else {
        println!(
            "SKIPPED: the full corpus is not beside the project (set IDEMGEN_CORPUS); the committed subset is tested"
        );
        COMMITTED
            .iter()
            .map(|file| root().join("tests/corpus/specs").join(file))
            .collect()
    };
    for spec in &specs {
        let actions = round_trip(spec, tool.as_deref());
        println!("{}: {actions} actions", spec.display());
        assert!(actions > 0, "{}: nothing to fix?", spec.display());
    }
}

#[test]
fn every_fixable_rule_round_trips() {
    let tool = overlay_tool();
    let broken = root().join("examples/broken");
    let mut rules = std::collections::BTreeSet::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&broken)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    entries.sort();
    for source in entries {
        let before = findings(&[s(&source)]);
        let (code, out, _) = idemgen(&[
            "lint",
            "--no-config",
            "--unsafe-fixes",
            "--diff",
            s(&source),
        ]);
        if code != 1 || out.is_empty() {
            continue; // nothing to fix in this example
        }
        round_trip(&source, tool.as_deref());
        rules.extend(
            before
                .iter()
                .map(|f| f.split(' ').next().unwrap().to_string()),
        );
    }
    // Every rule that has a fix is among the examples' findings.
    for rule in [
        "conflict-undeclared",
        "failed-policy-undeclared",
        "key-param-missing",
        "missing-idempotency",
        "missing-key-undeclared",
        "retry-after-missing",
        "retry-after-not-whole-seconds",
        "undeclared-key-header",
        "window-below-retry-span",
        "window-too-short",
    ] {
        assert!(
            rules.contains(&format!("{rule:?}")),
            "{rule} not exercised: {rules:?}"
        );
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const SPEC: &str = "openapi: 3.1.0
info: {title: Shop, version: '1'}
x-idempotency:
  client: {timeout: 10s, retries: [1s, 2s]}
  server: {max-processing: 5s}
paths:
  /orders:
    post:
      operationId: createOrder
      tags: [orders]
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
      responses:
        '201': {description: created}
  /refunds:
    post:
      operationId: createRefund
      responses:
        '201': {description: created}
";

#[test]
fn hand_written_overlays_update_remove_and_copy() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "openapi.yaml", SPEC);
    let overlay = write(
        dir.path(),
        "shop.overlay.yaml",
        "overlay: 1.1.0
info: {title: Shop idempotency, version: 1.0.0}
actions:
  - target: $.paths['/orders'].post
    update:
      tags: [checkout]
      x-idempotency:
        key: {in: header, name: Idempotency-Key}
        window: 1s
  - target: $.paths['/refunds'].post
    update: {x-idempotency: {}}
  - target: $.paths['/refunds'].post['x-idempotency']
    copy: $.paths['/orders'].post['x-idempotency']
  - target: $.paths['/refunds'].post.responses['201']
    remove: true
  - target: $.paths['/nowhere'].post
    update: {summary: x}
",
    );
    let (code, out, err) = idemgen(&[
        "lint",
        "--no-config",
        "--format",
        "json",
        "--overlay",
        s(&overlay),
        s(&spec),
    ]);
    assert_eq!(code, 1, "{err}");
    // The target that selects nothing is a warning naming the action.
    assert!(
        err.contains("shop.overlay.yaml:16:13")
            && err.contains("action 5")
            && err.contains("selects nothing"),
        "{err}"
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    let diagnostics = report["diagnostics"].as_array().unwrap();
    // `window: 1s` came from the overlay: the finding points there.
    let short = diagnostics
        .iter()
        .find(|d| d["rule"] == "window-too-short" && d["operation"] == "createOrder")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(short["file"], s(&overlay));
    assert_eq!(
        (short["line"].as_u64(), short["column"].as_u64()),
        (Some(9), Some(17))
    );
    assert_eq!(
        short["pointer"],
        "/paths/~1orders/post/x-idempotency/window"
    );
    // The copied block makes createRefund idempotent, with the overlay's
    // window: its finding points at the overlay too.
    let refund = |rule: &str| {
        diagnostics
            .iter()
            .find(|d| d["rule"] == rule && d["operation"] == "createRefund")
    };
    assert!(refund("missing-idempotency").is_none(), "{out}");
    assert_eq!(refund("window-too-short").unwrap()["line"], 9, "{out}");
    let (_, window, _) = idemgen(&[
        "window",
        "--no-config",
        "--format",
        "json",
        "--overlay",
        s(&overlay),
        s(&spec),
    ]);
    assert!(window.contains("createRefund"), "{window}");
}

#[test]
fn a_malformed_overlay_is_exit_2_with_file_line_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "openapi.yaml", SPEC);
    let cases = [
        ("info: {}\nactions: []\n", "no `overlay` field", ":1:"),
        (
            "overlay: 2.0.0\ninfo: {title: t, version: '1'}\nactions: [{target: $, update: {}}]\n",
            "version is not supported",
            ":1:10",
        ),
        (
            "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.paths[/orders]\n    update: {}\n",
            "not an RFC 9535 JSONPath",
            ":4:",
        ),
        (
            "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.paths\n    remove: yes please\n",
            "`remove` must be true or false",
            ":5:13",
        ),
        (
            "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.info.title\n    update: {a: b}\n",
            "only a scalar can replace",
            ":4:",
        ),
        // Overlay 1.1: an update's nodes are all of one kind.
        (
            "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.paths['/orders'].post.*\n    update: {summary: s}\n",
            "selects nodes of different kinds",
            ":4:13",
        ),
        // Overlay 1.0: targets are mappings and lists.
        (
            "overlay: 1.0.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.info.title\n    update: Shop 2\n",
            "selects a string at $['info']['title']",
            ":4:13",
        ),
        (
            "overlay: 1.1.0\ninfo: {version: '1'}\nactions:\n  - target: $\n    update: {}\n",
            "`info` has no `title`",
            ":2:7",
        ),
        (
            "overlay: 1.1.0\ninfo: {title: t, version: '1'}\naction:\n  - target: $\n    update: {}\n",
            "unknown field `action`",
            ":3:1",
        ),
        (
            "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nextends: orders.yaml\nactions:\n  - target: $\n    update: {}\n",
            "the overlay extends `orders.yaml`",
            ":3:10",
        ),
    ];
    for (text, message, place) in cases {
        let overlay = write(dir.path(), "bad.overlay.yaml", text);
        for command in ["lint", "window"] {
            let (code, _, err) =
                idemgen(&[command, "--no-config", "--overlay", s(&overlay), s(&spec)]);
            assert_eq!(code, 2, "{command} {text}: {err}");
            assert!(err.contains(message), "{text}: {err}");
            assert!(
                err.contains(&format!("bad.overlay.yaml{place}")),
                "{text}: {err}"
            );
            assert!(err.contains("help"), "{text}: {err}");
        }
    }
}

#[test]
fn idemgen_toml_lists_the_overlays_of_each_spec() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write(dir.path(), "openapi.yaml", SPEC);
    write(
        dir.path(),
        "idem.overlay.yaml",
        "overlay: 1.1.0\ninfo: {title: t, version: '1'}\nactions:\n  - target: $.paths['/refunds'].post\n    remove: true\n",
    );
    let config = write(
        dir.path(),
        "idemgen.toml",
        "[overlays]\n\"openapi.yaml\" = [\"idem.overlay.yaml\"]\n",
    );
    let (_, out, err) = idemgen(&["lint", "--config", s(&config), "--format", "json", s(&spec)]);
    assert!(
        !out.contains("createRefund") && out.contains("createOrder"),
        "{out}{err}"
    );
    let (_, out, _) = idemgen(&["lint", "--no-config", "--format", "json", s(&spec)]);
    assert!(out.contains("createRefund"), "{out}");
}

#[test]
fn json_specs_get_json_overlays_and_multi_file_fixes_are_named_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("pretty.json");
    std::fs::copy(root().join("tests/fixtures/fix/pretty.json"), &json).unwrap();
    let out = dir.path().join("fix.overlay.json");
    let (_, _, err) = idemgen(&[
        "lint",
        "--no-config",
        "--fix",
        "--unsafe-fixes",
        "--overlay",
        s(&out),
        s(&json),
    ]);
    let overlay: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(overlay["overlay"], "1.1.0");
    assert_eq!(overlay["extends"], "pretty.json");
    assert!(!overlay["actions"].as_array().unwrap().is_empty());

    // paths/pay.yaml and components/*.yaml hold what the fixes change: an
    // overlay targets the root document only, so they are named instead.
    let multi = dir.path().join("multi");
    copy_tree(&root().join("tests/fixtures/fix/multi"), &multi);
    let spec = multi.join("openapi.yaml");
    let before = std::fs::read_to_string(multi.join("paths/pay.yaml")).unwrap();
    let out = dir.path().join("multi.overlay.yaml");
    let (code, _, err) = idemgen(&[
        "lint",
        "--no-config",
        "--fix",
        "--overlay",
        s(&out),
        s(&spec),
    ]);
    assert!(code == 0 || code == 1, "{err}");
    assert!(
        err.contains("paths/pay.yaml") && err.contains("root document only"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(multi.join("paths/pay.yaml")).unwrap(),
        before
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

#[test]
fn fix_with_diff_prints_and_writes_nothing_with_one_slash_in_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("flow.yaml");
    std::fs::copy(root().join("tests/fixtures/fix/flow.yaml"), &spec).unwrap();
    let before = std::fs::read_to_string(&spec).unwrap();
    let absolute = std::path::absolute(&spec).unwrap();
    let (code, out, err) = idemgen(&["lint", "--no-config", "--fix", "--diff", s(&absolute)]);
    assert_eq!(code, 1, "{err}");
    let name = s(&absolute).trim_start_matches('/');
    assert!(
        out.starts_with(&format!("--- a/{name}\n+++ b/{name}\n")),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&spec).unwrap(), before);
}
