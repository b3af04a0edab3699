//! The fix engine on arbitrary specs: `lint --fix --unsafe-fixes` ends,
//! writes text that still loads, leaves no fixable finding behind, keeps
//! everything the original said (the tree before is contained in the tree
//! after) except the values a fixable finding points at (`required: false`
//! made `true`), and a second run changes nothing.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use idemgen_lint::fix_loop::fix_document;
use idemgen_lint::{LintOptions, lint};
use idemgen_spec::refs::evaluate;
use idemgen_spec::{Workspace, parse_tree};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/tree.rs"]
mod tree;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| idemgen_fuzz::scratch("fix"))
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let name = if idemgen_spec::json_escapes::looks_like_json(text) {
        "api.json"
    } else {
        "api.yaml"
    };
    let path = dir().join(name);
    std::fs::write(&path, text).unwrap();
    let options = LintOptions::default();
    let Ok(original) = Workspace::load(&path) else {
        return;
    };
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
    let outcome = fix_document(&path, &options, true).expect("a document that loads fixes");
    assert!(
        !outcome.unfinished,
        "fixes were still left after the last pass"
    );
    let Some(fixed) = outcome.files.iter().find(|file| file.path.ends_with(name)) else {
        assert_eq!(
            outcome.applied, 0,
            "fixes applied, yet the text is unchanged"
        );
        return;
    };
    assert_eq!(fixed.before, text);
    std::fs::write(&path, &fixed.after).unwrap();
    let workspace = Workspace::load(&path)
        .unwrap_or_else(|error| panic!("the fixed text does not load: {}", error.message));
    let left: Vec<&str> = lint(&workspace, &options)
        .diagnostics
        .iter()
        .filter(|finding| finding.fix.is_some())
        .map(|finding| finding.rule)
        .collect();
    assert!(
        left.is_empty(),
        "fixable findings left after fixing: {left:?}"
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
        "the fix lost {lost:?}, where no edit of a fix was"
    );
    let again = fix_document(&path, &options, true).expect("the fixed text loads");
    assert_eq!(again.applied, 0, "a second run applied fixes");
    assert!(again.files.is_empty(), "a second run changed the text");
});
