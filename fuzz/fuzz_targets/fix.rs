//! The fix engine on arbitrary specs: `lint --fix --unsafe-fixes` ends,
//! writes text that still loads, leaves no fixable finding behind, keeps
//! everything the original said (the tree before is contained in the tree
//! after) except the values a fixable finding points at (`required: false`
//! made `true`), writes no key twice in one mapping, and a second run
//! changes nothing.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/tree.rs"]
mod tree;

#[path = "../../tests/support/fix_keeps.rs"]
mod fix_keeps;

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
    fix_keeps::fix_keeping_the_rest(&dir().join(name), text);
});
