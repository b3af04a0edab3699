//! Lint findings as LSP diagnostics: the rule id as `code`, a link to the
//! rule's documentation, the help under the message. The findings come
//! from [`idemgen_lint::lint`], exactly as `idemgen lint` reports them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use lsp_types::{
    CodeDescription, DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString,
    Range, Uri,
};

use super::documents::{LineIndex, path_to_uri};
use super::load::{Loaded, load};
use idemgen_diagnostics::{Diagnostic, Severity};
use idemgen_lint::LintOptions;
use idemgen_spec::{LoadError, Workspace};

/// What one check of a document yields: diagnostics for it and for the
/// files it references, by URI. `None` when it is not an OpenAPI document.
pub type Checked = Option<BTreeMap<String, (Uri, Vec<lsp_types::Diagnostic>)>>;

/// Lints the document the client calls `uri`, at `path` (its text is in
/// `overlay`).
pub fn check(
    uri: &Uri,
    path: &Path,
    overlay: &HashMap<PathBuf, String>,
    options: &LintOptions,
) -> Checked {
    let mut out = BTreeMap::new();
    out.insert(uri.as_str().to_string(), (uri.clone(), Vec::new()));
    match load(path, overlay, options) {
        Loaded::NotOpenApi => return None,
        Loaded::Failed(error) => {
            let text = overlay
                .get(&idemgen_spec::normalize(path))
                .map_or("", String::as_str);
            out.get_mut(uri.as_str())
                .expect("inserted above")
                .1
                .push(load_error(&error, text));
        }
        Loaded::Spec(workspace) => {
            let findings = idemgen_lint::lint(&workspace, options).diagnostics;
            for (file_uri, diagnostics) in convert(&workspace, &findings, uri) {
                out.entry(file_uri.as_str().to_string())
                    .or_insert_with(|| (file_uri.clone(), Vec::new()))
                    .1
                    .extend(diagnostics);
            }
        }
    }
    Some(out)
}

/// Findings grouped by the file they point into; the root document's are
/// filed under `root_uri`, the URI the client knows it by.
pub fn convert(
    workspace: &Workspace,
    findings: &[Diagnostic],
    root_uri: &Uri,
) -> Vec<(Uri, Vec<lsp_types::Diagnostic>)> {
    let mut by_file: BTreeMap<&str, Vec<&Diagnostic>> = BTreeMap::new();
    for finding in findings {
        by_file
            .entry(finding.location.file.as_str())
            .or_default()
            .push(finding);
    }
    let mut out = Vec::new();
    for (display, findings) in by_file {
        let Some(loaded) = workspace.file_named(display) else {
            continue;
        };
        let uri = if std::ptr::eq(loaded, &workspace.files[0]) {
            root_uri.clone()
        } else {
            match path_to_uri(&loaded.source.path) {
                Some(uri) => uri,
                None => continue,
            }
        };
        let text = &loaded.source.text;
        let index = LineIndex::new(text);
        let diagnostics = findings
            .into_iter()
            .map(|finding| {
                let start = finding.location.offset;
                let mut diagnostic = to_lsp(
                    finding,
                    index.range(text, start, start + finding.location.length),
                );
                let related: Vec<_> = finding
                    .related
                    .iter()
                    .filter_map(|related| related_information(workspace, root_uri, related))
                    .collect();
                if !related.is_empty() {
                    diagnostic.related_information = Some(related);
                }
                diagnostic
            })
            .collect();
        out.push((uri, diagnostics));
    }
    out
}

/// A place related to a finding (where a shared key is declared), for
/// the client to show and jump to.
fn related_information(
    workspace: &Workspace,
    root_uri: &Uri,
    related: &idemgen_diagnostics::Related,
) -> Option<DiagnosticRelatedInformation> {
    let loaded = workspace.file_named(&related.location.file)?;
    let uri = if std::ptr::eq(loaded, &workspace.files[0]) {
        root_uri.clone()
    } else {
        path_to_uri(&loaded.source.path)?
    };
    let text = &loaded.source.text;
    let start = related.location.offset;
    let range = LineIndex::new(text).range(text, start, start + related.location.length);
    Some(DiagnosticRelatedInformation {
        location: Location { uri, range },
        message: related.message.clone(),
    })
}

/// One finding at `range`.
pub fn to_lsp(finding: &Diagnostic, range: Range) -> lsp_types::Diagnostic {
    let mut message = finding.message.clone();
    if let Some(help) = &finding.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    lsp_types::Diagnostic {
        range,
        severity: Some(severity(finding.severity)),
        code: Some(NumberOrString::String(finding.rule.to_string())),
        code_description: rule_docs(finding.rule).map(|href| CodeDescription { href }),
        source: Some("idemgen".into()),
        message,
        ..lsp_types::Diagnostic::default()
    }
}

pub fn severity(severity: Severity) -> DiagnosticSeverity {
    match severity {
        Severity::Error => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Info => DiagnosticSeverity::INFORMATION,
    }
}

/// A document that does not load: one error where the loader stopped.
fn load_error(error: &LoadError, text: &str) -> lsp_types::Diagnostic {
    let index = LineIndex::new(text);
    let range = match error.location {
        Some((offset, _, _)) => {
            let end = text[offset.min(text.len())..]
                .chars()
                .next()
                .map_or(offset, |c| offset + c.len_utf8());
            index.range(text, offset, end)
        }
        None => Range::default(),
    };
    lsp_types::Diagnostic {
        range,
        severity: Some(DiagnosticSeverity::ERROR),
        source: Some("idemgen".into()),
        message: format!("{}\nhelp: {}", error.message, error.help),
        ..lsp_types::Diagnostic::default()
    }
}

/// A `file:` link to the rule's documentation (what `idemgen rule ID`
/// prints), written once per server version into the temporary directory:
/// the package names no web site to link to.
pub fn rule_docs(id: &str) -> Option<Uri> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("idemgen-{}-rules", env!("CARGO_PKG_VERSION")));
        std::fs::create_dir_all(&dir).ok()?;
        for rule in idemgen_lint::RULES {
            let path = dir.join(format!("{}.md", rule.id));
            let text = format!(
                "{}\nDefault severity: {}\n",
                rule.docs(),
                rule.severity.as_str()
            );
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&path, text).ok()?;
            }
        }
        Some(dir)
    });
    path_to_uri(&dir.as_ref()?.join(format!("{id}.md")))
}
