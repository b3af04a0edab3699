//! The fix engine on arbitrary specs: `lint --fix --unsafe-fixes` ends,
//! writes text that still loads, leaves no fixable finding behind, keeps
//! everything the original said (the tree before is contained in the tree
//! after), and a second run changes nothing.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use idemgen_lint::fix_loop::fix_document;
use idemgen_lint::{LintOptions, lint};
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
    if Workspace::load(&path).is_err() {
        return;
    }
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
    assert!(
        tree::contains(&before, &after),
        "the fix lost {:?}",
        tree::first_loss(&before, &after, "")
    );
    let again = fix_document(&path, &options, true).expect("the fixed text loads");
    assert_eq!(again.applied, 0, "a second run applied fixes");
    assert!(again.files.is_empty(), "a second run changed the text");
});
