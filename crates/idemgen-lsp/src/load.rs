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
    // A pipe would block the read (and the server) until someone writes
    // to it, maybe forever: as with `$ref`s, only regular files are read.
    let unreadable = overlays.iter().find(|path| {
        !overlay.contains_key(&idemgen_spec::normalize(path))
            && std::fs::metadata(path)
                .is_ok_and(|metadata| !metadata.is_file() && !metadata.is_dir())
    });
    if let Some(path) = unreadable {
        return Loaded::Failed(LoadError::plain(
            &path.display().to_string(),
            "the Overlay document is not a regular file (a pipe or a device), so it is not read"
                .into(),
            "list a regular file under [overlays] in idemgen.toml",
        ));
    }
    match Workspace::load_with_overlays(&key, overlay, overlays) {
        Ok(workspace) => Loaded::Spec(Box::new(workspace)),
        Err(error) => Loaded::Failed(error),
    }
}

/// Whether the text declares `openapi` at its top level: the cheap test
/// that keeps the server quiet on every other YAML and JSON file. The key
/// can be anywhere (Stripe's is on line 40,015), so the whole text is
/// searched, for a line that starts with it (YAML) or for the quoted key
/// (JSON). A NUL byte does not make a spec binary data: `idemgen lint`
/// reports the parser's error on it, and so must the editor.
pub fn looks_like_openapi(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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

    /// An Overlay document idemgen.toml lists that is a pipe (or another
    /// file that is not a regular one) would block the read forever, and
    /// the server with it: it is reported, not read.
    #[cfg(unix)]
    #[test]
    fn an_overlay_that_is_a_pipe_is_reported_not_read() {
        let dir = std::env::temp_dir().join(format!("idemgen-lsp-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("overlay.yaml");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|status| status.success()) {
            eprintln!("SKIPPED: no mkfifo");
            return;
        }
        let spec = dir.join("api.yaml");
        let options = idemgen_lint::LintOptions {
            overlays: HashMap::from([(spec.clone(), vec![fifo.clone()])]),
            ..Default::default()
        };
        let overlay = HashMap::from([(
            spec.clone(),
            "openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n".to_string(),
        )]);
        let (done, loaded) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let message = match load(&spec, &overlay, &options) {
                Loaded::Failed(error) => error.message,
                Loaded::Spec(_) => "loaded".into(),
                Loaded::NotOpenApi => "not OpenAPI".into(),
            };
            let _ = done.send(message);
        });
        let message = loaded.recv_timeout(std::time::Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&dir);
        let message = message.expect("the load returns instead of waiting on the pipe");
        assert!(message.contains("not a regular file"), "{message}");
    }

    #[test]
    fn only_openapi_documents_are_recognised() {
        assert!(looks_like_openapi("openapi: 3.1.0\ninfo: {}\n"));
        assert!(looks_like_openapi("{\"openapi\":\"3.0.3\"}"));
        assert!(!looks_like_openapi("name: CI\non: push\n"));
        assert!(!looks_like_openapi("\0\u{1}\u{2}openapi\u{fffd}\u{7f}"));
        assert!(looks_like_openapi(
            "openapi: 3.1.0\ninfo: {title: \"a\0\"}\n"
        ));
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
