//! What `gen` tells the user about the spec it generated from: unions it
//! would not guess, business files no operation maps to any more, and
//! operations without a contract.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::root;

fn idemgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

fn gen_into(spec: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "gen",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--name",
        "svc",
    ];
    args.extend_from_slice(extra);
    idemgen(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A union whose variants accept each other's values is named, with its
/// pointer and why, and generated as a JSON value rather than guessed.
#[test]
fn an_ambiguous_union_is_named_by_its_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let output = gen_into(
        &root().join("tests/types/unions.yaml"),
        &dir.path().join("svc"),
        &[],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: unions.yaml#/components/schemas/Critter: generated as \
             `serde_json::Value`, not guessed: the union's variants `Cat` and `Hamster` \
             accept each other's values"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("not guessed").count(), 1, "{stderr}");
}
