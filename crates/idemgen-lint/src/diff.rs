//! `--diff`: what `--fix` would change, as a unified diff.

use similar::TextDiff;

use crate::fix_loop::FixedFile;

pub fn unified(file: &FixedFile) -> String {
    TextDiff::from_lines(&file.before, &file.after)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("a/{}", file.display),
            &format!("b/{}", file.display),
        )
        .to_string()
}
