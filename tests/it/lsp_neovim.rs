//! `idemgen lsp` driven by a real editor: Neovim headless (0.7 or later)
//! runs `tests/editors/neovim_lsp.lua`, which starts the server with
//! `vim.lsp.start_client`, opens a broken example, waits for its
//! diagnostics and asks for the code actions at the first one. Skipped
//! when `nvim` is not installed.

use crate::support::root;
use crate::support::skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn project(path: &str) -> PathBuf {
    root().join(path)
}

fn nvim_installed() -> bool {
    Command::new("nvim")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `(rule, 0-based line, 0-based column)` of the only finding `idemgen lint
/// --format json` reports for `spec`.
fn lint_finding(spec: &Path) -> (String, u64, u64) {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["lint", "--no-config", "--format", "json"])
        .arg(spec)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let findings = report["diagnostics"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report}");
    let finding = &findings[0];
    (
        finding["rule"].as_str().unwrap().to_string(),
        finding["line"].as_u64().unwrap() - 1,
        finding["column"].as_u64().unwrap() - 1,
    )
}

/// Runs the Lua script on a copy of `spec` in an empty directory (so no
/// `idemgen.toml` of the project applies, as with `lint --no-config`) and
/// returns what it wrote. Neovim is killed if it has not finished within a
/// minute, so a server that never answers fails the test instead of hanging
/// it.
fn run_neovim(spec: &Path) -> Value {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("result.json");
    let workspace = out_dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    let copy = workspace.join(spec.file_name().unwrap());
    std::fs::copy(spec, &copy).unwrap();
    let mut nvim = Command::new("nvim")
        .args(["--headless", "--clean", "-u", "NONE", "-c"])
        .arg(format!(
            "luafile {}",
            project("tests/editors/neovim_lsp.lua").display()
        ))
        .env("IDEMGEN_BIN", env!("CARGO_BIN_EXE_idemgen"))
        .env("IDEMGEN_SPEC", &copy)
        .env("IDEMGEN_OUT", &out)
        // Neovim writes its log and state under these; keep them out of $HOME.
        .env("XDG_STATE_HOME", out_dir.path())
        .env("XDG_CACHE_HOME", out_dir.path())
        .env("XDG_DATA_HOME", out_dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = nvim.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            nvim.kill().unwrap();
            nvim.wait().unwrap();
            panic!("nvim did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let written = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(status.success(), "nvim exited with {status}: {written}");
    serde_json::from_str(&written).unwrap_or_else(|error| panic!("{error}: {written:?}"))
}

#[test]
fn neovim_shows_the_diagnostic_and_its_code_actions() {
    if !nvim_installed() {
        skip::skipped("install neovim to run");
        return;
    }
    let spec = project("examples/broken/window-too-short.yaml");
    let (rule, line, column) = lint_finding(&spec);
    let result = run_neovim(&spec);

    assert_eq!(result["client"], "idemgen", "{result}");
    assert_eq!(result["diagnostics"], 1, "{result}");
    assert_eq!(result["rule"], rule.as_str(), "{result}");
    assert_eq!(result["line"], line, "{result}");
    assert_eq!(result["character"], column, "{result}");
    let titles: Vec<&str> = result["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        titles.contains(
            &"Set `window` to its floor, the smallest safe window, 18s: a minimum, not a \
              recommendation (clients that resume a request after a restart need hours or days)"
        ),
        "{result}"
    );
    assert!(
        titles.contains(&"Ignore `window-too-short` on onPayCallback (x-idemgen-ignore)"),
        "{result}"
    );
}
