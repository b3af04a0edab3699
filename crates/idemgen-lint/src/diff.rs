//! `--diff`: what `--fix` would change, as a unified diff.

use similar::{ChangeTag, TextDiff};

use crate::fix_loop::FixedFile;

pub fn unified(file: &FixedFile) -> String {
    unified_text(&file.display, &file.before, &file.after)
}

/// The diff of one file's text; `display` names it after `a/` and `b/`
/// (an absolute path without its leading `/`, as git writes it).
pub fn unified_text(display: &str, before: &str, after: &str) -> String {
    let name = display.trim_start_matches('/');
    // Lines end at `\n` alone, as git's do. YAML also ends a line at a
    // lone `\r`, but a diff whose lines end so can be neither applied nor
    // read in a terminal; such a `\r` stays inside its line here.
    let old: Vec<&str> = before.split_inclusive('\n').collect();
    let new: Vec<&str> = after.split_inclusive('\n').collect();
    let diff = TextDiff::configure().diff_slices(&old, &new);
    let mut out = String::new();
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        if out.is_empty() {
            out = format!("--- a/{name}\n+++ b/{name}\n");
        }
        out.push_str(&format!("{}\n", hunk.header()));
        for change in hunk.iter_changes() {
            out.push(match change.tag() {
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
                ChangeTag::Equal => ' ',
            });
            let line = change.value();
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// As git and `patch` read them: a lone `\r` (a line break to YAML)
    /// stays inside its line, every diff line ends in `\n`, and a last line
    /// without one says so.
    #[test]
    fn diff_lines_end_at_line_feeds_only() {
        let diff = super::unified_text("a.yaml", "a: 1\rb: 2\nc: 3", "a: 1\rb: 2\nc: 4");
        assert_eq!(
            diff,
            "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n a: 1\rb: 2\n-c: 3\n\\ No newline at end of file\n+c: 4\n\\ No newline at end of file\n"
        );
        let crlf = super::unified_text("a.yaml", "a: 1\r\nb: 2\r\n", "a: 1\r\nb: 3\r\n");
        assert_eq!(
            crlf,
            "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n a: 1\r\n-b: 2\r\n+b: 3\r\n"
        );
        assert_eq!(super::unified_text("a.yaml", "a\n", "a\n"), "");
    }

    #[test]
    fn an_absolute_path_gets_one_slash_after_a_and_b() {
        let diff = super::unified_text("/tmp/api/openapi.yaml", "a\n", "b\n");
        assert!(
            diff.starts_with("--- a/tmp/api/openapi.yaml\n+++ b/tmp/api/openapi.yaml\n"),
            "{diff}"
        );
    }
}
