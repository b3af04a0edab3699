//! The generator templates (embedded, overridable with `--templates DIR`)
//! and the minijinja environment that renders them.

use std::path::Path;

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

use super::names;

/// Where a template's output goes.
#[derive(Debug, Clone, Copy)]
pub enum Output {
    /// One file at this path, refreshed by every run.
    File(&'static str),
    /// One file per SQL dialect; `{dialect}` in the path is its name.
    PerDialect(&'static str),
    /// Each operation's business file, the user's once written.
    PerOperation,
    /// One file at this path, the user's once written.
    UserFile(&'static str),
}

/// One template: its name (its path under `templates/`), the embedded
/// text and where its output goes.
#[derive(Debug)]
pub struct Template {
    pub name: &'static str,
    pub source: &'static str,
    pub output: Output,
}

macro_rules! template {
    ($name:literal, $output:expr) => {
        Template {
            name: $name,
            source: include_str!(concat!("../templates/", $name)),
            output: $output,
        }
    };
}

/// Every template, in the order its files are planned. This list is the
/// only one: `gen` renders from it and `--templates` overrides by its names.
pub const TEMPLATES: &[Template] = {
    use Output::{File, PerDialect, PerOperation, UserFile};
    &[
        template!("Cargo.toml.j2", File("Cargo.toml")),
        template!("README.md.j2", File("README.md")),
        template!("gitignore.j2", File(".gitignore")),
        template!("src/main.rs.j2", File("src/main.rs")),
        template!("src/lib.rs.j2", File("src/lib.rs")),
        template!("src/operations.rs.j2", File("src/operations.rs")),
        template!("src/routes.rs.j2", File("src/routes.rs")),
        template!("src/business/mod.rs.j2", File("src/business/mod.rs")),
        template!("src/business/operation.rs.j2", PerOperation),
        template!("src/app.rs.j2", UserFile("src/app.rs")),
        template!("src/auth.rs.j2", UserFile("src/auth.rs")),
        template!(
            "migrations/dialect.sql.j2",
            PerDialect("migrations/{dialect}/0001_idempotency_records.sql")
        ),
        template!(
            "migrations/20261204000000_record_response_headers.sql.j2",
            PerDialect("migrations/{dialect}/20261204000000_record_response_headers.sql")
        ),
        template!(
            "migrations/20261205000000_record_in_progress.sql.j2",
            PerDialect("migrations/{dialect}/20261205000000_record_in_progress.sql")
        ),
        template!("tests/idempotency.rs.j2", File("tests/idempotency.rs")),
    ]
};

/// The templates of `idemgen gen --client`, each written to one file.
pub const CLIENT_TEMPLATES: &[Template] = {
    use Output::File;
    &[
        template!("client/Cargo.toml.j2", File("Cargo.toml")),
        template!("client/README.md.j2", File("README.md")),
        template!("client/gitignore.j2", File(".gitignore")),
        template!("client/src/lib.rs.j2", File("src/lib.rs")),
    ]
};

/// Every template, the service's and the client's.
fn all_templates() -> impl Iterator<Item = &'static Template> {
    TEMPLATES.iter().chain(CLIENT_TEMPLATES)
}

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
    env.add_filter("rust_char", |text: &str| names::rust_char(text));
    // A JSON string is a TOML basic string.
    env.add_filter("toml_string", |text: &str| {
        serde_json::to_string(text).expect("strings serialise")
    });
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
    for template in all_templates() {
        let name = template.name;
        let source = match overrides.map(|dir| dir.join(name)) {
            Some(path) if path.is_file() => std::fs::read_to_string(&path)
                .map_err(|error| format!("cannot read template {}: {error}", path.display()))?,
            _ => template.source.to_string(),
        };
        env.add_template_owned(name, source)
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
                if !all_templates().any(|template| template.name == name) {
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
