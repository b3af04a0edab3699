//! Applying fixes: lint, take every applicable fix whose edits do not
//! collide with another's, apply them, and lint again until nothing is
//! left to fix (a fix can make another finding appear, e.g. a new
//! `x-idempotency` block whose responses are then declared).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::{LintOptions, lint};
use idemgen_spec::{LoadError, Workspace};

use crate::fix::{Applicability, Edit, Fix};

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
}

/// Fixes the document at `path` and the files it references, in memory.
pub fn fix_document(
    path: &Path,
    options: &LintOptions,
    unsafe_fixes: bool,
) -> Result<FixOutcome, Box<LoadError>> {
    let mut overlay: HashMap<PathBuf, String> = HashMap::new();
    let mut originals: BTreeMap<PathBuf, (String, String)> = BTreeMap::new();
    let mut outcome = FixOutcome::default();
    for pass in 0..=MAX_PASSES {
        let workspace = Workspace::load_with(path, &overlay)?;
        let linted = lint(&workspace, options);
        let fixes = linted
            .diagnostics
            .iter()
            .filter_map(|diagnostic| diagnostic.fix.as_ref())
            .filter(|fix| unsafe_fixes || fix.applicability == Applicability::Safe);
        let (edits, applied) = compatible_edits(fixes);
        if edits.is_empty() {
            break;
        }
        if pass == MAX_PASSES {
            outcome.unfinished = true;
            break;
        }
        let mut by_file: BTreeMap<&str, Vec<&Edit>> = BTreeMap::new();
        for edit in &edits {
            by_file.entry(edit.file.as_str()).or_default().push(edit);
        }
        for (display, mut edits) in by_file {
            let Some(loaded) = workspace
                .files
                .iter()
                .find(|loaded| loaded.source.display == display)
            else {
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
            originals
                .entry(loaded.source.path.clone())
                .or_insert_with(|| (display.to_string(), before.clone()));
            overlay.insert(loaded.source.path.clone(), after);
        }
        outcome.applied += applied;
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
