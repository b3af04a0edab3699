//! Loading an open document the way `idemgen lint` loads a file, with the
//! editor's unsaved text of every open document in place of the disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use idemgen_spec::{LoadError, MAX_FILE_BYTES, Workspace};

pub enum Loaded {
    Spec(Box<Workspace>),
    /// Not an OpenAPI 3.x document (a YAML file of another kind, a
    /// Swagger 2.0 file, binary data): the server says nothing about it.
    NotOpenApi,
    /// An OpenAPI document that cannot be read yet (half-typed YAML, an
    /// unsupported version, too large): one diagnostic says why.
    Failed(Box<LoadError>),
}

/// Loads `path`, whose text (and that of other open files) is in `overlay`,
/// with the Overlay documents idemgen.toml lists for it applied.
pub fn load(
    path: &Path,
    overlay: &HashMap<PathBuf, String>,
    options: &idemgen_lint::LintOptions,
) -> Loaded {
    let key = idemgen_spec::normalize(path);
    let Some(text) = overlay.get(&key) else {
        return Loaded::NotOpenApi;
    };
    if !looks_like_openapi(text) {
        return Loaded::NotOpenApi;
    }
    if text.len() as u64 > MAX_FILE_BYTES {
        return Loaded::Failed(LoadError::plain(
            &path.display().to_string(),
            format!(
                "the file is larger than the {} MiB limit, so it is not checked",
                MAX_FILE_BYTES / (1024 * 1024)
            ),
            "split the API description into several files",
        ));
    }
    let overlays = idemgen_lint::config::overlays_for(&options.overlays, &key);
    match Workspace::load_with_overlays(&key, overlay, overlays) {
        Ok(workspace) => Loaded::Spec(Box::new(workspace)),
        Err(error) => Loaded::Failed(error),
    }
}

/// Whether the text declares `openapi` at its top level: the cheap test
/// that keeps the server quiet on every other YAML and JSON file. The key
/// can be anywhere (Stripe's is on line 40,015), so the whole text is
/// searched, for a line that starts with it (YAML) or for the quoted key
/// (JSON).
pub fn looks_like_openapi(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let head = &text.as_bytes()[..text.len().min(4096)];
    if head.contains(&0) {
        return false; // binary
    }
    if idemgen_spec::json_escapes::looks_like_json(text) {
        return text.contains("\"openapi\"");
    }
    ["openapi:", "'openapi':", "\"openapi\":"]
        .iter()
        .any(|key| {
            text.starts_with(key)
                || text.contains(&format!("\n{key}"))
                || text.contains(&format!("\r{key}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_past_the_size_limit_is_reported_not_parsed() {
        let path = Path::new("/nonexistent/huge.yaml");
        let text = format!(
            "openapi: 3.1.0\n{}",
            "x: y\n".repeat(MAX_FILE_BYTES as usize / 4)
        );
        let overlay = HashMap::from([(path.to_path_buf(), text)]);
        let Loaded::Failed(error) = load(path, &overlay, &Default::default()) else {
            panic!("a huge spec must not load")
        };
        assert!(error.message.contains("larger than"), "{}", error.message);
    }

    #[test]
    fn only_openapi_documents_are_recognised() {
        assert!(looks_like_openapi("openapi: 3.1.0\ninfo: {}\n"));
        assert!(looks_like_openapi("{\"openapi\":\"3.0.3\"}"));
        assert!(!looks_like_openapi("name: CI\non: push\n"));
        assert!(!looks_like_openapi("openapi:\0\u{1}"));
        assert!(!looks_like_openapi(""));
        // Not at the top level, or only mentioned.
        assert!(!looks_like_openapi("info:\n  openapi: 3\n"));
        assert!(!looks_like_openapi("# an openapi: file\nname: x\n"));
        // After a line that ends in a `\r` alone, a line break to YAML.
        assert!(looks_like_openapi("# a header\ropenapi: 3.1.0\r"));
        // Far down, as in Stripe's spec.
        let late = format!("components:\n{}openapi: 3.0.0\n", "  x: y\n".repeat(20_000));
        assert!(looks_like_openapi(&late));
    }
}
