//! Pull-request mode: report only the findings an older version of the
//! spec did not have.
//!
//! A finding is the same as an old one when its rule, operation and JSON
//! pointer are equal: line numbers and messages are not compared, so code
//! that moved (reordered paths, a new operation above) is not new. Findings
//! are matched as a multiset: when the old spec had one finding with a
//! given identity and the new has two, one of them is new.
//!
//! `--since REF` reads the old version from git (`git show REF:path`).
//! Only the root document is read from REF; the files it references are
//! read from the working tree.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use idemgen_diagnostics::Diagnostic;

/// What makes two findings the same across versions.
pub type Identity<'a> = (&'a str, Option<&'a str>, &'a str);

pub fn identity(diagnostic: &Diagnostic) -> Identity<'_> {
    (
        diagnostic.rule,
        diagnostic.operation.as_deref(),
        &diagnostic.pointer,
    )
}

/// The findings of `new` that `old` did not have, and how many matched.
pub fn new_findings(old: &[Diagnostic], new: Vec<Diagnostic>) -> (Vec<Diagnostic>, usize) {
    let mut remaining: HashMap<Identity<'_>, usize> = HashMap::new();
    for diagnostic in old {
        *remaining.entry(identity(diagnostic)).or_default() += 1;
    }
    let mut matched = 0;
    let mut keep = Vec::with_capacity(new.len());
    for diagnostic in &new {
        keep.push(match remaining.get_mut(&identity(diagnostic)) {
            Some(count) if *count > 0 => {
                *count -= 1;
                matched += 1;
                false
            }
            _ => true,
        });
    }
    let fresh = new
        .into_iter()
        .zip(keep)
        .filter_map(|(diagnostic, keep)| keep.then_some(diagnostic))
        .collect();
    (fresh, matched)
}

/// The text of `path` at git revision `reference`: `Ok(None)` when the file
/// did not exist there (every finding is new), `Err` when git cannot
/// answer (not a repository, unknown revision, git missing).
pub fn git_show(path: &Path, reference: &str) -> Result<Option<String>, String> {
    let absolute =
        std::path::absolute(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let directory = absolute.parent().unwrap_or(Path::new("/"));
    let name = absolute
        .file_name()
        .ok_or_else(|| format!("{} is not a file", path.display()))?
        .to_string_lossy()
        .into_owned();
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(directory)
            .args(args)
            .output()
            .map_err(|error| format!("cannot run git: {error}"))
    };
    let prefix = git(&["rev-parse", "--show-prefix"])?;
    if !prefix.status.success() {
        return Err(format!(
            "{} is not inside a git repository: {}",
            path.display(),
            String::from_utf8_lossy(&prefix.stderr).trim()
        ));
    }
    let commit = format!("{reference}^{{commit}}");
    let verified = git(&["rev-parse", "--verify", "--quiet", &commit])?;
    if !verified.status.success() {
        return Err(format!(
            "`{reference}` is not a git revision here (in a shallow CI checkout, fetch it first, e.g. `git fetch origin main` or `fetch-depth: 0`)"
        ));
    }
    // `REF:path` is relative to the repository's root.
    let in_repository = format!(
        "{}{name}",
        String::from_utf8_lossy(&prefix.stdout).trim_end_matches(['\n', '\r'])
    );
    let object = format!("{reference}:{in_repository}");
    let exists = git(&["cat-file", "-e", &object])?;
    if !exists.status.success() {
        return Ok(None);
    }
    let shown = git(&["show", &object])?;
    if !shown.status.success() {
        return Err(format!(
            "git show {object} failed: {}",
            String::from_utf8_lossy(&shown.stderr).trim()
        ));
    }
    idemgen_spec::decode(shown.stdout, &object)
        .map(Some)
        .map_err(|error| format!("{object}: {}", error.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use idemgen_diagnostics::{Location, Severity};

    fn finding(rule: &'static str, operation: &str, pointer: &str, line: usize) -> Diagnostic {
        Diagnostic {
            rule,
            severity: Severity::Error,
            message: format!("line {line}"),
            location: Location {
                file: "spec.yaml".into(),
                line,
                column: 1,
                offset: 0,
                length: 1,
            },
            pointer: pointer.into(),
            operation: Some(operation.into()),
            help: None,
            label: None,
            fix: None,
            related: Vec::new(),
        }
    }

    #[test]
    fn matches_by_identity_not_line_and_counts_duplicates() {
        let old = vec![finding("window-too-short", "pay", "/paths/~1pay/post", 10)];
        let new = vec![
            finding("window-too-short", "pay", "/paths/~1pay/post", 40),
            finding("window-too-short", "pay", "/paths/~1pay/post", 41),
            finding("window-too-short", "refund", "/paths/~1refund/post", 12),
        ];
        let (fresh, matched) = new_findings(&old, new);
        assert_eq!(matched, 1);
        assert_eq!(fresh.len(), 2);
        assert_eq!(fresh[0].location.line, 41);
    }
}
