//! Running the `idemgen` binary the way a user does.

use std::path::Path;
use std::process::Command;

use super::root;

/// What one run of the binary printed and how it exited.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// `idemgen ARGS` in the repository root, without colour.
pub fn idemgen(args: &[&str]) -> Run {
    idemgen_in(&root(), args)
}

/// `idemgen ARGS` in `dir`, without colour.
pub fn idemgen_in(dir: &Path, args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

/// `(rule, field)` of each diagnostic in a `--format json` report; the
/// field is empty where a diagnostic has none (an operation).
pub fn rules_with(json: &str, field: &str) -> Vec<(String, String)> {
    let json: serde_json::Value = serde_json::from_str(json).unwrap();
    json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["rule"].as_str().unwrap().to_string(),
                d[field].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}
