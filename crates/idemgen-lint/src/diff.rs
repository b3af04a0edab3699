//! `--diff`: what `--fix` would change, as a unified diff.

use similar::TextDiff;

use crate::fix_loop::FixedFile;

pub fn unified(file: &FixedFile) -> String {
    unified_text(&file.display, &file.before, &file.after)
}

/// The diff of one file's text; `display` names it after `a/` and `b/`
/// (an absolute path without its leading `/`, as git writes it).
pub fn unified_text(display: &str, before: &str, after: &str) -> String {
    let name = display.trim_start_matches('/');
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_absolute_path_gets_one_slash_after_a_and_b() {
        let diff = super::unified_text("/tmp/api/openapi.yaml", "a\n", "b\n");
        assert!(
            diff.starts_with("--- a/tmp/api/openapi.yaml\n+++ b/tmp/api/openapi.yaml\n"),
            "{diff}"
        );
    }
}
