//! Applying fixes: lint, take every applicable fix whose edits do not
//! collide with another's, apply them, and lint again until nothing is
//! left to fix (a fix can make another finding appear, e.g. a new
//! `x-idempotency` block whose responses are then declared).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::{LintOptions, lint};
use idemgen_spec::{LoadError, Workspace};

use crate::fix::{Applicability, Edit, Fix};
use idemgen_diagnostics::Diagnostic;

/// Passes after which fixing stops even if fixes remain (they would be
/// fixes that undo each other).
const MAX_PASSES: usize = 10;

/// One file's text before and after fixing.
#[derive(Debug, Clone)]
pub struct FixedFile {
    pub path: PathBuf,
    pub display: String,
    pub before: String,
    pub after: String,
}

#[derive(Debug, Default)]
pub struct FixOutcome {
    /// Files whose text changed, by path.
    pub files: Vec<FixedFile>,
    /// Fixes applied, over all passes.
    pub applied: usize,
    /// Whether fixes were still left after the last pass.
    pub unfinished: bool,
    /// Fixes not applied because the text they wrote did not load: a
    /// fault of the fix, never written, its finding left as it was.
    pub broken: Vec<BrokenFix>,
}

/// A fix whose edits left text that does not load.
#[derive(Debug, Clone)]
pub struct BrokenFix {
    pub rule: &'static str,
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// Where the finding points in the tree: unlike its line, the same
    /// after other fixes move the text.
    pub pointer: String,
    pub title: String,
    /// What the loader said of the text with this fix applied.
    pub error: String,
}

impl BrokenFix {
    /// The finding `found`, whose fix left text the loader refused with
    /// `error`.
    fn of(found: &Diagnostic, error: String) -> BrokenFix {
        BrokenFix {
            rule: found.rule,
            file: found.location.file.clone(),
            line: found.location.line,
            column: found.location.column,
            pointer: found.pointer.clone(),
            title: found
                .fix
                .as_ref()
                .map(|fix| fix.title.clone())
                .unwrap_or_default(),
            error,
        }
    }
}

/// `FILE:LINE:COLUMN: the fix for `rule` (title) was not applied: …`, the
/// warning a run prints for it.
impl std::fmt::Display for BrokenFix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}: the fix for `{}` ({}) was not applied: the text it wrote does not load ({})",
            self.file, self.line, self.column, self.rule, self.title, self.error
        )
    }
}

/// Fixes the document at `path` and the files it references, in memory.
/// The error is the original's when it does not load. A fix that would
/// leave text that does not load is left out (`FixOutcome::broken`), as a
/// linter that checks its fixes by parsing their output does; the others
/// are still applied.
pub fn fix_document(
    path: &Path,
    options: &LintOptions,
    unsafe_fixes: bool,
) -> Result<FixOutcome, Box<LoadError>> {
    fix_findings(path, unsafe_fixes, |workspace| {
        lint(workspace, options).diagnostics
    })
}

/// [`fix_document`] on the spec as the Overlay documents `overlays` leave
/// it (none: the spec's own text). The overlaid root is fixed as JSON text
/// written from its tree, so the outcome's root `before` and `after` are
/// that text: what the fixes change in it, not where in the spec's own
/// file (`--fix --overlay` diffs the two trees).
pub fn fix_document_through(
    path: &Path,
    overlays: &[PathBuf],
    options: &LintOptions,
    unsafe_fixes: bool,
) -> Result<FixOutcome, Box<LoadError>> {
    if overlays.is_empty() {
        return fix_document(path, options, unsafe_fixes);
    }
    let overlaid = Workspace::load_with_overlays(path, &HashMap::new(), overlays)?;
    let text = format!(
        "{}\n",
        crate::fix::emit::Emit::of_node(overlaid.root()).json_pretty("", "  ")
    );
    let seed = HashMap::from([(idemgen_spec::normalize_absolute(path), text)]);
    fix_findings_from(path, seed, unsafe_fixes, |workspace| {
        lint(workspace, options).diagnostics
    })
}

/// [`fix_document`] with the findings (and so the fixes) of each round
/// from `findings`: the loop does not depend on where its fixes come from,
/// and a test can hand it one that is broken on purpose.
fn fix_findings(
    path: &Path,
    unsafe_fixes: bool,
    findings: impl Fn(&Workspace) -> Vec<Diagnostic>,
) -> Result<FixOutcome, Box<LoadError>> {
    fix_findings_from(path, HashMap::new(), unsafe_fixes, findings)
}

/// [`fix_findings`] starting from the in-memory texts `overlay` (by
/// path) instead of the files on disk.
fn fix_findings_from(
    path: &Path,
    mut overlay: HashMap<PathBuf, String>,
    unsafe_fixes: bool,
    findings: impl Fn(&Workspace) -> Vec<Diagnostic>,
) -> Result<FixOutcome, Box<LoadError>> {
    let mut originals: BTreeMap<PathBuf, (String, String)> = BTreeMap::new();
    let mut outcome = FixOutcome::default();
    let mut workspace = Workspace::load_with(path, &overlay)?;
    let mut passes = 0;
    loop {
        let found = findings(&workspace);
        let fixes: Vec<&Diagnostic> = found
            .iter()
            .filter(|diagnostic| {
                diagnostic.fix.as_ref().is_some_and(|fix| {
                    (unsafe_fixes || fix.applicability == Applicability::Safe)
                        && !outcome
                            .broken
                            .iter()
                            .any(|broken| is_same(broken, diagnostic))
                })
            })
            .collect();
        // Every fix has edits, so no fix is nothing left to do.
        if fixes.is_empty() {
            break;
        }
        if passes == MAX_PASSES {
            outcome.unfinished = true;
            break;
        }
        let round = match try_round(path, &workspace, &overlay, &fixes) {
            Ok(round) => round,
            // This pass's fixes broke the text: halving finds each fix that
            // breaks it alone (a few loads, not one per fix); those are left
            // out from now on. When none does alone, only some together,
            // the first half (which loaded while halving) is applied and the
            // rest waits for the next round.
            Err(_) => {
                let (first, second) = fixes.split_at(fixes.len() / 2);
                let mut broken = Vec::new();
                find_broken(path, &workspace, &overlay, first, &mut broken);
                find_broken(path, &workspace, &overlay, second, &mut broken);
                if broken.is_empty() {
                    match try_round(path, &workspace, &overlay, first) {
                        Ok(round) => round,
                        // Cannot happen (it loaded while halving); stop
                        // rather than go round again.
                        Err(_) => {
                            outcome.unfinished = true;
                            break;
                        }
                    }
                } else {
                    for (found, error) in broken {
                        outcome.broken.push(BrokenFix::of(found, error));
                    }
                    continue;
                }
            }
        };
        for (path, display, before) in round.changed {
            originals.entry(path).or_insert((display, before));
        }
        overlay = round.texts;
        workspace = round.workspace;
        outcome.applied += round.applied;
        passes += 1;
    }
    for (path, (display, before)) in originals {
        let after = overlay.remove(&path).unwrap_or_default();
        if after != before {
            outcome.files.push(FixedFile {
                path,
                display,
                before,
                after,
            });
        }
    }
    Ok(outcome)
}

/// Whether `diagnostic` is the finding whose fix was found broken (by
/// rule, file, tree pointer and fix, which other fixes do not move).
fn is_same(broken: &BrokenFix, diagnostic: &Diagnostic) -> bool {
    broken.rule == diagnostic.rule
        && broken.file == diagnostic.location.file
        && broken.pointer == diagnostic.pointer
        && diagnostic
            .fix
            .as_ref()
            .is_some_and(|fix| fix.title == broken.title)
}

/// `fixes` applied together (those whose edits collide with an earlier
/// one's wait) to the texts so far, and loaded.
struct Round {
    /// Every file's text after the round, by path.
    texts: HashMap<PathBuf, String>,
    workspace: Workspace,
    /// Each file the round changed: path, display name, text before.
    changed: Vec<(PathBuf, String, String)>,
    /// How many fixes it applied.
    applied: usize,
}

/// Applies `fixes` to `overlay`'s texts and loads the result; the error is
/// the loader's when the text no longer loads.
fn try_round(
    path: &Path,
    workspace: &Workspace,
    overlay: &HashMap<PathBuf, String>,
    fixes: &[&Diagnostic],
) -> Result<Round, Box<LoadError>> {
    let (edits, applied) = compatible_edits(fixes.iter().filter_map(|found| found.fix.as_ref()));
    let mut texts = overlay.clone();
    let changed = apply(workspace, &edits, &mut texts);
    let workspace = Workspace::load_with(path, &texts)?;
    Ok(Round {
        texts,
        workspace,
        changed,
        applied,
    })
}

/// The fixes among `fixes` that leave text that does not load when applied
/// alone, with the loader's message, found by halving: a set that loads
/// holds none, a single fix that does not is one.
fn find_broken<'d>(
    path: &Path,
    workspace: &Workspace,
    overlay: &HashMap<PathBuf, String>,
    fixes: &[&'d Diagnostic],
    broken: &mut Vec<(&'d Diagnostic, String)>,
) {
    if fixes.is_empty() {
        return;
    }
    let Err(error) = try_round(path, workspace, overlay, fixes) else {
        return;
    };
    if let [found] = fixes {
        broken.push((found, error.message));
        return;
    }
    let (first, second) = fixes.split_at(fixes.len() / 2);
    find_broken(path, workspace, overlay, first, broken);
    find_broken(path, workspace, overlay, second, broken);
}

/// Applies `edits` to the texts of `workspace`'s files, writing each new
/// text into `texts`; returns each changed file's path, display name and
/// text before.
fn apply(
    workspace: &Workspace,
    edits: &[Edit],
    texts: &mut HashMap<PathBuf, String>,
) -> Vec<(PathBuf, String, String)> {
    let mut by_file: BTreeMap<&str, Vec<&Edit>> = BTreeMap::new();
    for edit in edits {
        by_file.entry(edit.file.as_str()).or_default().push(edit);
    }
    let mut changed = Vec::new();
    for (display, mut edits) in by_file {
        let Some(loaded) = workspace.file_named(display) else {
            continue;
        };
        let before = &loaded.source.text;
        edits.sort_by_key(|edit| std::cmp::Reverse((edit.start, edit.end)));
        let mut after = before.clone();
        for edit in edits {
            if edit.end <= after.len()
                && after.is_char_boundary(edit.start)
                && after.is_char_boundary(edit.end)
            {
                after.replace_range(edit.start..edit.end, &edit.replacement);
            }
        }
        changed.push((
            loaded.source.path.clone(),
            display.to_string(),
            before.clone(),
        ));
        texts.insert(loaded.source.path.clone(), after);
    }
    changed
}

/// The edits of every fix that collides with no fix taken before it (an
/// edit identical to one already taken is shared, not a collision), and
/// how many fixes that is.
fn compatible_edits<'f>(fixes: impl Iterator<Item = &'f Fix>) -> (Vec<Edit>, usize) {
    let mut taken: Vec<Edit> = Vec::new();
    let mut count = 0;
    for fix in fixes {
        let collides = fix
            .edits
            .iter()
            .any(|edit| taken.iter().any(|other| edit.conflicts_with(other)));
        if collides {
            continue;
        }
        for edit in &fix.edits {
            if !taken.contains(edit) {
                taken.push(edit.clone());
            }
        }
        count += 1;
    }
    (taken, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(start: usize, end: usize, text: &str) -> Edit {
        Edit {
            file: "a.yaml".into(),
            start,
            end,
            replacement: text.into(),
        }
    }

    fn fix(edits: Vec<Edit>) -> Fix {
        Fix {
            title: String::new(),
            applicability: Applicability::Safe,
            edits,
        }
    }

    /// A spec with findings whose fixes are sound (undeclared answers).
    const SPEC: &str = "openapi: 3.1.0
info: {title: t, version: '1'}
x-idempotency:
  client: {timeout: 5s, retries: [200ms, 800ms]}
  server: {max-processing: 3s}
  store: {dialect: sqlite, table: idempotent_record}
paths:
  /pay:
    post:
      operationId: pay
      x-idempotency:
        key: {in: header, name: Idempotency-Key, format: '{uuid}'}
      responses:
        '200': {description: ok}
";

    /// A finding at `/info` whose fix writes an unclosed flow sequence
    /// after the `info` line: text that does not load.
    fn broken_on_purpose(workspace: &Workspace) -> Diagnostic {
        let source = &workspace.files[0].source;
        let line_end = source.text.find("'1'}").unwrap() + 4;
        Diagnostic {
            rule: "broken-on-purpose",
            severity: idemgen_diagnostics::Severity::Error,
            message: "a finding whose fix breaks the text".into(),
            location: idemgen_diagnostics::Location {
                file: source.display.clone(),
                line: 2,
                column: 1,
                offset: 0,
                length: 0,
            },
            pointer: "/info".into(),
            operation: None,
            help: None,
            label: None,
            fix: Some(Fix {
                title: "Break the text".into(),
                applicability: Applicability::Safe,
                edits: vec![Edit {
                    file: source.display.clone(),
                    start: line_end,
                    end: line_end,
                    replacement: "\nbroken: [".into(),
                }],
            }),
            related: Vec::new(),
        }
    }

    #[test]
    fn a_fix_that_breaks_the_text_is_left_out_named_and_the_others_still_apply() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("openapi.yaml");
        std::fs::write(&path, SPEC).unwrap();
        let options = LintOptions::default();
        let sound = fix_document(&path, &options, true).unwrap();
        assert!(sound.applied > 0 && sound.broken.is_empty(), "{sound:?}");

        // The broken fix is offered every round, as a rule would offer it
        // again on text it still finds wrong.
        let outcome = fix_findings(&path, true, |workspace| {
            let mut found = lint(workspace, &options).diagnostics;
            found.insert(found.len() / 2, broken_on_purpose(workspace));
            found
        })
        .unwrap();
        assert_eq!(outcome.broken.len(), 1, "{:?}", outcome.broken);
        let broken = &outcome.broken[0];
        assert_eq!(
            (broken.rule, broken.pointer.as_str(), broken.title.as_str()),
            ("broken-on-purpose", "/info", "Break the text")
        );
        assert_eq!((broken.line, broken.column), (2, 1));
        assert!(broken.error.contains("YAML"), "{}", broken.error);
        let display = path.display();
        assert_eq!(
            broken.to_string(),
            format!(
                "{display}:2:1: the fix for `broken-on-purpose` (Break the text) was not applied: the text it wrote does not load ({})",
                broken.error
            )
        );
        assert!(!outcome.unfinished);
        // Every sound fix applied, as without the broken one.
        assert_eq!(outcome.applied, sound.applied);
        assert_eq!(outcome.files.len(), 1);
        assert_eq!(outcome.files[0].after, sound.files[0].after);
        assert!(!outcome.files[0].after.contains("broken"));
    }

    #[test]
    fn colliding_fixes_wait_for_the_next_pass_and_shared_edits_are_taken_once() {
        let fixes = [
            fix(vec![edit(0, 0, "defaults"), edit(10, 12, "x")]),
            fix(vec![edit(0, 0, "defaults"), edit(20, 20, "y")]),
            fix(vec![edit(11, 11, "z")]),
            fix(vec![edit(12, 14, "w")]),
        ];
        let (edits, count) = compatible_edits(fixes.iter());
        assert_eq!(count, 3);
        assert_eq!(
            edits,
            vec![
                edit(0, 0, "defaults"),
                edit(10, 12, "x"),
                edit(20, 20, "y"),
                edit(12, 14, "w")
            ]
        );
    }
}
