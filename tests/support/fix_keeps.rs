//! What `lint --fix --unsafe-fixes` must do to any spec, checked on one
//! file: the fixed text loads, no fixable finding is left, nothing the
//! author wrote is lost or changed except where a fix offered on the
//! original text points, no key is written twice in one mapping, and a
//! second run changes nothing. Shared by the lint crate's tests and the
//! `fix` fuzz target, which include this file beside `tree.rs` (as
//! `mod tree`).

use std::path::Path;

use idemgen_lint::fix_loop::fix_document;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::refs::evaluate;
use idemgen_spec::{LoadProblem, Workspace, parse_tree};

use super::tree;

/// Writes `text` to `path`, fixes it and checks the above. `None` when the
/// original does not load (there is nothing to fix); otherwise the fixed
/// text, the original when nothing changed.
pub fn fix_keeping_the_rest(path: &Path, text: &str) -> Option<String> {
    let name = path.file_name().and_then(|name| name.to_str()).unwrap();
    std::fs::write(path, text).unwrap();
    let options = LintOptions::default();
    let original = Workspace::load(path).ok()?;
    // Where the fixes may change a value: the byte ranges their edits
    // replace in this file.
    let edited: Vec<(usize, usize)> = lint(&original, &options)
        .diagnostics
        .iter()
        .filter_map(|finding| finding.fix.as_ref())
        .flat_map(|fix| &fix.edits)
        .filter(|edit| edit.file == original.files[0].source.display)
        .map(|edit| (edit.start, edit.end))
        .collect();
    let outcome = fix_document(path, &options, true).expect("the original loaded above");
    assert!(
        outcome.broken.is_empty(),
        "a fix wrote text that does not load: {:?}",
        outcome.broken
    );
    assert!(
        !outcome.unfinished,
        "fixes were still left after the last pass"
    );
    let Some(fixed) = outcome.files.iter().find(|file| file.path.ends_with(name)) else {
        assert_eq!(
            outcome.applied, 0,
            "fixes applied, yet the text is unchanged"
        );
        return Some(text.to_string());
    };
    assert_eq!(fixed.before, text);
    std::fs::write(path, &fixed.after).unwrap();
    let workspace = Workspace::load(path).unwrap_or_else(|error| {
        panic!(
            "the fixed text does not load: {}\n{}",
            error.message, fixed.after
        )
    });
    let duplicates = |workspace: &Workspace| {
        workspace
            .problems
            .iter()
            .filter(|problem| matches!(problem, LoadProblem::DuplicateKey { .. }))
            .count()
    };
    assert!(
        duplicates(&workspace) <= duplicates(&original),
        "the fixes wrote a key twice in one mapping\n{}",
        fixed.after
    );
    let left: Vec<String> = lint(&workspace, &options)
        .diagnostics
        .iter()
        .filter(|finding| finding.fix.is_some())
        .map(|finding| format!("{}: {}", finding.rule, finding.message))
        .collect();
    assert!(
        left.is_empty(),
        "fixable findings left after fixing: {left:?}\n{}",
        fixed.after
    );
    let before = parse_tree(name, text).expect("loaded above").to_json();
    let after = parse_tree(name, &fixed.after)
        .expect("loaded above")
        .to_json();
    let mut lost = Vec::new();
    tree::losses(&before, &after, "", &mut lost);
    let source = &original.files[0].source;
    lost.retain(|pointer| {
        let Some(node) = evaluate(original.root(), pointer) else {
            return true;
        };
        let (start, end) = (
            source.byte_offset(node.span.start as usize),
            source.byte_offset(node.span.end as usize),
        );
        !edited.iter().any(|&(from, to)| from <= end && to >= start)
    });
    assert!(
        lost.is_empty(),
        "the fix lost {lost:?}, where no edit of a fix was\n{}",
        fixed.after
    );
    let again = fix_document(path, &options, true).expect("the fixed text loads");
    assert_eq!(again.applied, 0, "a second run applied fixes");
    assert!(again.files.is_empty(), "a second run changed the text");
    Some(fixed.after.clone())
}
