//! The generator templates (embedded, overridable with `--templates DIR`)
//! and the minijinja environment that renders them.

use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use super::names;

/// Every template, by name (its path under `templates/`).
pub const TEMPLATES: &[(&str, &str)] = &[
    (
        "Cargo.toml.j2",
        include_str!("../../templates/Cargo.toml.j2"),
    ),
    ("README.md.j2", include_str!("../../templates/README.md.j2")),
    ("gitignore.j2", include_str!("../../templates/gitignore.j2")),
    (
        "src/main.rs.j2",
        include_str!("../../templates/src/main.rs.j2"),
    ),
    (
        "src/lib.rs.j2",
        include_str!("../../templates/src/lib.rs.j2"),
    ),
    (
        "src/http.rs.j2",
        include_str!("../../templates/src/http.rs.j2"),
    ),
    (
        "src/idempotency.rs.j2",
        include_str!("../../templates/src/idempotency.rs.j2"),
    ),
    (
        "src/metrics.rs.j2",
        include_str!("../../templates/src/metrics.rs.j2"),
    ),
    (
        "src/operations.rs.j2",
        include_str!("../../templates/src/operations.rs.j2"),
    ),
    (
        "src/routes.rs.j2",
        include_str!("../../templates/src/routes.rs.j2"),
    ),
    (
        "src/store/mod.rs.j2",
        include_str!("../../templates/src/store/mod.rs.j2"),
    ),
    (
        "src/store/dialect.rs.j2",
        include_str!("../../templates/src/store/dialect.rs.j2"),
    ),
    (
        "src/business/mod.rs.j2",
        include_str!("../../templates/src/business/mod.rs.j2"),
    ),
    (
        "src/business/operation.rs.j2",
        include_str!("../../templates/src/business/operation.rs.j2"),
    ),
    (
        "migrations/dialect.sql.j2",
        include_str!("../../templates/migrations/dialect.sql.j2"),
    ),
    (
        "tests/idempotency.rs.j2",
        include_str!("../../templates/tests/idempotency.rs.j2"),
    ),
];

/// The environment with every template loaded: the embedded one, or the
/// file of the same name under `overrides` when it exists.
pub fn environment(overrides: Option<&Path>) -> Result<Environment<'static>, String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // Generated code is Rust, TOML, SQL and Markdown: never HTML-escape.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("the default delimiters are valid"),
    );
    env.add_filter("rust_string", |text: &str| names::rust_string(text));
    // One line for a doc comment: no line breaks, and no backticks, which
    // could open a Markdown code block that rustdoc would run as a test.
    env.add_filter("comment_text", |text: &str| {
        names::comment_lines(text)
            .join(" ")
            .trim()
            .replace('`', "'")
    });
    env.add_filter("md_code", |text: &str| {
        format!(
            "`{}`",
            names::comment_lines(text).join(" ").replace('`', "'")
        )
    });
    for (name, embedded) in TEMPLATES {
        let source = match overrides.map(|dir| dir.join(name)) {
            Some(path) if path.is_file() => std::fs::read_to_string(&path)
                .map_err(|error| format!("cannot read template {}: {error}", path.display()))?,
            _ => (*embedded).to_string(),
        };
        env.add_template_owned(*name, source)
            .map_err(|error| format!("template {name}: {error}"))?;
    }
    Ok(env)
}

/// Files under `overrides` that replace no template (a misspelt name
/// would otherwise be ignored silently).
pub fn unknown_overrides(overrides: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![overrides.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(relative) = path.strip_prefix(overrides) {
                let name = relative.to_string_lossy().replace('\\', "/");
                if !TEMPLATES.iter().any(|(known, _)| *known == name) {
                    found.push(name);
                }
            }
        }
    }
    found.sort();
    found
}

pub fn render(env: &Environment<'_>, name: &str, context: &Value) -> Result<String, String> {
    let template = env
        .get_template(name)
        .map_err(|error| format!("template {name}: {error}"))?;
    template.render(context).map_err(|error| {
        let mut message = format!("template {name}: {error}");
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        message
    })
}

/// Formats Rust source with rustfmt when it is installed; the source as
/// is otherwise (or when rustfmt rejects it, so the compiler can say why).
pub fn rustfmt(source: &str) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let child = Command::new("rustfmt")
        .args(["--edition", "2024"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        return source.to_string();
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(source.as_bytes());
    }
    match child.wait_with_output() {
        Ok(output) if output.status.success() && !output.stdout.is_empty() => {
            String::from_utf8(output.stdout).unwrap_or_else(|_| source.to_string())
        }
        _ => source.to_string(),
    }
}
