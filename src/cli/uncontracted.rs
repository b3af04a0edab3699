//! `gen`'s note on a spec whose operations carry no contract: how many,
//! how many declare an idempotency key anyway, and the `lint` command that
//! writes contracts for them as an overlay.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use idemgen_diagnostics::Diagnostic;
use idemgen_spec::analysis::analyse;
use idemgen_spec::contract::model::Defaults;
use idemgen_spec::operations::OperationKind;
use idemgen_spec::{Workspace, normalize_absolute};

/// The rule that finds a key-like parameter without an `x-idempotency`.
const KEY_WITHOUT_CONTRACT: &str = "undeclared-key-header";

/// The rule that finds a write with neither a key nor a contract.
const WRITE_WITHOUT_CONTRACT: &str = "missing-idempotency";

/// The note, when some operation declares a key without a contract or
/// no operation has one; `None` otherwise (a GET without a contract is
/// not news). `applied` are the overlays this run read the spec through:
/// the `gen` command it prints keeps them, since `--overlay` on the
/// command line replaces idemgen.toml's list.
pub fn note(
    spec: &Path,
    output: &Path,
    applied: &[PathBuf],
    workspace: &Workspace,
    defaults: Defaults,
    diagnostics: &[Diagnostic],
) -> Option<String> {
    let analysis = analyse(workspace, defaults);
    let served: Vec<_> = analysis
        .operations
        .iter()
        .filter(|analysed| analysed.operation.kind == OperationKind::Path)
        .collect();
    let without = served
        .iter()
        .filter(|analysed| analysed.contract().is_none())
        .count();
    let keyed: BTreeSet<&str> = diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.rule == KEY_WITHOUT_CONTRACT)
        .filter_map(|diagnostic| diagnostic.operation.as_deref())
        .collect();
    let fixable: BTreeSet<&str> = diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.rule == KEY_WITHOUT_CONTRACT && diagnostic.fix.is_some())
        .filter_map(|diagnostic| diagnostic.operation.as_deref())
        .collect();
    if without == 0 || (keyed.is_empty() && without < served.len()) {
        return None;
    }
    let mut note = format!(
        "note: {without} of {} operation{} carry no idempotency contract (`x-idempotency`), \
         so the service treats {} as plain requests; ",
        served.len(),
        if served.len() == 1 { "" } else { "s" },
        if without == 1 { "it" } else { "them" },
    );
    if keyed.is_empty() {
        // A write with no key at all: lint's fix gives it a contract and
        // the key header it names.
        let writes = diagnostics
            .iter()
            .filter(|diagnostic| {
                diagnostic.rule == WRITE_WITHOUT_CONTRACT && diagnostic.fix.is_some()
            })
            .filter_map(|diagnostic| diagnostic.operation.as_deref())
            .collect::<BTreeSet<&str>>()
            .len();
        if writes == 0 {
            note.push_str("none declares an idempotency key.\n");
            return Some(note);
        }
        note.push_str(&format!(
            "none declares an idempotency key; lint writes a contract and its key for the {writes} \
             it takes for writes a retry could repeat.\n"
        ));
    } else {
        note.push_str(&format!(
            "{} of them declare an idempotency key anyway{}.\n",
            keyed.len(),
            if fixable.len() == keyed.len() {
                String::new()
            } else {
                format!(
                    " (lint writes a contract for the {} it takes for writes; the others look \
                     like reads)",
                    fixable.len()
                )
            },
        ));
    }
    let overlay = overlay_path(spec);
    // idemgen.toml's overlays are absolute; the new one is written as the
    // spec was: compared as the files they name, so none is listed twice.
    let same_file = |a: &Path, b: &Path| normalize_absolute(a) == normalize_absolute(b);
    let mut overlays: Vec<String> = applied
        .iter()
        .filter(|applied| !same_file(applied, Path::new(&overlay)))
        .map(|applied| applied.display().to_string())
        .collect();
    overlays.push(overlay.clone());
    let overlay_flags: Vec<String> = overlays
        .iter()
        .map(|overlay| format!("--overlay {}", shell_word(overlay)))
        .collect();
    note.push_str(&format!(
        "  write contracts for them (and any other write lint finds without one) as an \
         overlay, the spec staying as it is; fill in its `TODO:`s, then generate from it:\n  \
         idemgen lint --fix --unsafe-fixes {overlay_flags} {spec}\n  \
         idemgen gen {overlay_flags} {spec} -o {output}\n",
        overlay_flags = overlay_flags.join(" "),
        spec = shell_word(&spec.display().to_string()),
        output = shell_word(&output.display().to_string()),
    ));
    Some(note)
}

/// `api/openapi.yaml` → `api/openapi.idempotency.yaml`, beside the spec.
fn overlay_path(spec: &Path) -> String {
    let stem = spec
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "openapi".into());
    spec.with_file_name(format!("{stem}.idempotency.yaml"))
        .display()
        .to_string()
}

/// `text` as one word for a POSIX shell.
pub fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
