//! `$ref` strings: splitting them into a file part and a JSON pointer, and
//! evaluating a pointer inside a tree.

use std::borrow::Cow;
use std::path::Path;

use super::node::Node;

/// A `$ref` split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefTarget<'a> {
    /// The relative file part, empty for a same-document reference.
    pub file: &'a str,
    /// The JSON pointer after `#`, percent-decoded; empty for the whole file.
    pub pointer: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefProblem {
    Remote,
    Malformed(String),
}

pub fn split_ref(reference: &str) -> Result<RefTarget<'_>, RefProblem> {
    let lower = reference.get(..8).unwrap_or(reference).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("//") {
        return Err(RefProblem::Remote);
    }
    // Read as a path, `file:///etc/x.yaml` would be a file named
    // `file:/etc/x.yaml` that "does not exist": say what it is instead.
    if lower.starts_with("file:") {
        return Err(RefProblem::Malformed(
            "a `file:` URL is not followed; write the path relative to this file, like `common.yaml#/components/schemas/Key`".into(),
        ));
    }
    let (file, fragment) = match reference.split_once('#') {
        Some((file, fragment)) => (file, fragment),
        None => (reference, ""),
    };
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return Err(RefProblem::Malformed(format!(
            "the fragment `#{fragment}` is not a JSON pointer (it must start with `#/`)"
        )));
    }
    let pointer = percent_decode(fragment)
        .ok_or_else(|| RefProblem::Malformed("bad percent-encoding".into()))?;
    Ok(RefTarget { file, pointer })
}

/// Rewrites a `$ref` written in a document whose (OpenAPI 3.2) `$self` is
/// `self_uri` into the form the loader follows: relative to the file's own
/// directory, or a same-document `#/pointer`.
///
/// The file stands where its `$self` says, so a reference that names a URI
/// under `$self`'s directory is the local file at the same relative place
/// (never fetched), and one that names `$self` itself is this document. A
/// relative `$self` (`v1/openapi.yaml`) moves the base of relative
/// references to its directory.
pub fn rebase<'r>(reference: &'r str, self_uri: Option<&str>) -> Cow<'r, str> {
    let Some(self_uri) = self_uri.map(|uri| uri.split('#').next().unwrap_or("")) else {
        return Cow::Borrowed(reference);
    };
    let (file, fragment) = match reference.split_once('#') {
        Some((file, fragment)) => (file, Some(fragment)),
        None => (reference, None),
    };
    if file.is_empty() || self_uri.is_empty() {
        return Cow::Borrowed(reference);
    }
    let (self_dir, self_name) = match self_uri.rfind('/') {
        Some(at) => (&self_uri[..=at], &self_uri[at + 1..]),
        None => ("", self_uri),
    };
    let absolute_self = self_uri.contains("://") || self_uri.starts_with('/');
    let local = if file == self_uri {
        String::new()
    } else if absolute_self {
        match file.strip_prefix(self_dir) {
            Some(rest) if !self_dir.is_empty() && rest == self_name => String::new(),
            Some(rest) if !self_dir.is_empty() => rest.to_string(),
            _ => return Cow::Borrowed(reference),
        }
    } else {
        let remote = split_ref(file) == Err(RefProblem::Remote);
        if remote || file.starts_with('/') || file.contains("://") {
            return Cow::Borrowed(reference);
        }
        let joined = super::normalize(&Path::new(self_dir).join(file));
        if joined == super::normalize(Path::new(self_uri)) {
            String::new()
        } else {
            joined.to_string_lossy().into_owned()
        }
    };
    Cow::Owned(match fragment {
        Some(fragment) => format!("{local}#{fragment}"),
        None => local,
    })
}

/// Decodes `%XX` escapes; `None` when they are malformed or not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Evaluates a JSON pointer (`/a/b~1c/0`) against a tree.
pub fn evaluate<'n>(root: &'n Node, pointer: &str) -> Option<&'n Node> {
    if pointer.is_empty() {
        return Some(root);
    }
    let mut node = root;
    for raw in pointer.strip_prefix('/')?.split('/') {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        node = match node.as_seq() {
            Some(items) => items.get(segment.parse::<usize>().ok()?)?,
            None => node.get(&segment)?,
        };
    }
    Some(node)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_local_and_file_refs() {
        let local = split_ref("#/components/schemas/Pet").unwrap();
        assert_eq!(local.file, "");
        assert_eq!(local.pointer, "/components/schemas/Pet");
        let file = split_ref("../common/models.yml#/Address%20Book").unwrap();
        assert_eq!(file.file, "../common/models.yml");
        assert_eq!(file.pointer, "/Address Book");
        assert_eq!(split_ref("paths/pets.yaml").unwrap().pointer, "");
    }

    #[test]
    fn self_rebases_references() {
        let base = Some("https://api.example.com/v1/openapi.yaml");
        assert_eq!(
            rebase(
                "https://api.example.com/v1/openapi.yaml#/components/x",
                base
            ),
            "#/components/x"
        );
        assert_eq!(
            rebase("https://api.example.com/v1/common/key.yaml#/Key", base),
            "common/key.yaml#/Key"
        );
        assert_eq!(rebase("common.yaml#/Key", base), "common.yaml#/Key");
        assert_eq!(
            rebase("https://other.example.com/x.yaml", base),
            "https://other.example.com/x.yaml"
        );
        let relative = Some("v1/openapi.yaml");
        assert_eq!(rebase("common.yaml#/Key", relative), "v1/common.yaml#/Key");
        assert_eq!(rebase("openapi.yaml#/a", relative), "#/a");
        assert_eq!(rebase("../shared.yaml", relative), "shared.yaml");
        assert_eq!(rebase("#/a", relative), "#/a");
        assert_eq!(rebase("common.yaml", None), "common.yaml");
    }

    #[test]
    fn remote_refs_are_refused() {
        assert_eq!(
            split_ref("https://example.com/a.yaml"),
            Err(RefProblem::Remote)
        );
        assert_eq!(
            split_ref("HTTP://example.com/a.yaml#/x"),
            Err(RefProblem::Remote)
        );
        assert!(matches!(
            split_ref("file:///etc/passwd"),
            Err(RefProblem::Malformed(why)) if why.starts_with("a `file:` URL is not followed")
        ));
        assert!(matches!(
            split_ref("FILE:common.yaml#/x"),
            Err(RefProblem::Malformed(_))
        ));
    }
}
