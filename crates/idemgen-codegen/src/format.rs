//! Formatting the generated Rust with rustfmt. The layout rustfmt picks
//! depends on the spec (how long an operation's name or path is), so no
//! template can be laid out in advance: every `.rs` file goes through
//! rustfmt, and without rustfmt `gen` stops instead of writing files that
//! differ from what it writes elsewhere.

use std::io::{ErrorKind, Write};
use std::process::{Command, Stdio};

/// `source` as rustfmt (edition 2024) lays it out; `path` names the file
/// in errors.
pub fn rustfmt(path: &str, source: &str) -> Result<String, String> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| match error.kind() {
            ErrorKind::NotFound => "rustfmt is not on PATH, and idemgen formats the Rust it \
                generates with it rather than write other, unformatted files\n  help: \
                install it with `rustup component add rustfmt`"
                .to_string(),
            _ => format!("cannot run rustfmt to format {path}: {error}"),
        })?;
    // A writer thread: rustfmt may fill its stdout pipe before it has
    // read all of stdin.
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = source.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|error| format!("cannot run rustfmt to format {path}: {error}"))?;
    let written = writer.join().expect("the writer thread does not panic");
    if !output.status.success() {
        return Err(format!(
            "rustfmt could not format the generated {path}:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        ));
    }
    written.map_err(|error| format!("cannot pass {path} to rustfmt: {error}"))?;
    String::from_utf8(output.stdout)
        .map_err(|_| format!("rustfmt returned {path} as text that is not UTF-8"))
}
