//! `idemgen gen` and `idemgen ddl`: an axum + sqlx service (and its record
//! table) from the operations' merged contracts.
//!
//! [`plan`] turns the spec into the files of a project: templates
//! ([`render`]) for the spec-dependent code, [`dialect`] for the SQL, and a
//! copy of the `idemgen-runtime` crate ([`runtime`]), the engine the
//! project builds on. [`manifest`] decides what may be written where,
//! [`mod@write`] writes it.

mod context;
pub mod dialect;
mod format;
pub mod manifest;
pub mod names;
mod render;
mod runtime;
pub mod types;
pub mod write;

use std::path::PathBuf;

use idemgen_spec::Workspace;
use idemgen_spec::contract::model::{Contract, DEFAULT_MAX_KEY_LENGTH, DEFAULT_TABLE, Dialect};
use idemgen_spec::operations::OperationKind;

/// How a project is generated.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--db`: the dialects to build for, the first the default; when
    /// empty, the spec's `store.dialect` (else SQLite) alone.
    pub dialects: Vec<Dialect>,
    /// `--templates`: a directory whose files replace the embedded ones.
    pub templates: Option<PathBuf>,
    /// Cargo package name.
    pub package: String,
    /// Give the project its own `[workspace]` table.
    pub standalone: bool,
    /// The spec's name as shown in generated comments.
    pub spec: String,
    /// Profile and dialect for contracts that do not say (`idemgen.toml`).
    pub defaults: idemgen_spec::contract::model::Defaults,
    /// Depend on the `idemgen-runtime` crate at this path (relative to the
    /// project) instead of writing a copy to `vendor/idemgen-runtime/`.
    pub runtime_path: Option<String>,
}

/// Who owns a generated file after it is first written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Refreshed by every `idemgen gen`, listed in the manifest.
    Idemgen,
    /// Written once, then the user's (business functions).
    User,
}

#[derive(Debug, Clone)]
pub struct File {
    /// Relative path with `/` separators.
    pub path: String,
    pub contents: String,
    pub owner: Owner,
}

/// A planned project: its files and what was left out.
#[derive(Debug)]
pub struct Project {
    pub dialect: Dialect,
    pub table: String,
    pub files: Vec<File>,
    pub warnings: Vec<String>,
    /// Whether an operation requires credentials (`src/auth.rs` checks them).
    pub secured: bool,
}

/// The dialect, record table and key width every idempotent operation of
/// the spec agrees on.
pub struct Store {
    pub dialect: Dialect,
    pub table: String,
    pub key_width: u64,
}

/// Reads the store settings from the contracts; `dialect` overrides.
pub fn store(contracts: &[&Contract], dialect: Option<Dialect>) -> Result<Store, String> {
    let mut dialects: Vec<Dialect> = contracts.iter().map(|c| c.dialect.value).collect();
    dialects.dedup();
    let dialect = match (dialect, dialects.as_slice()) {
        (Some(dialect), _) => dialect,
        (None, []) => Dialect::Sqlite,
        (None, [one]) => *one,
        (None, _) => {
            return Err(
                "the operations name different `store.dialect`s; choose one with --db".into(),
            );
        }
    };
    let mut tables: Vec<&str> = contracts.iter().map(|c| c.table.value.as_str()).collect();
    tables.sort_unstable();
    tables.dedup();
    let table = match tables.as_slice() {
        [] => DEFAULT_TABLE.to_string(),
        [one] => one.to_string(),
        many => {
            return Err(format!(
                "the operations keep their records in different tables ({}); one generated \
                 service uses one `store.table`",
                many.join(", ")
            ));
        }
    };
    let key_width = contracts
        .iter()
        .filter_map(|c| c.key.as_ref().map(|key| key.max_length.value))
        .max()
        .unwrap_or(DEFAULT_MAX_KEY_LENGTH);
    Ok(Store {
        dialect,
        table,
        key_width,
    })
}

/// Every file of the project for `workspace`.
pub fn plan(workspace: &Workspace, options: &Options) -> Result<Project, String> {
    let analysis = idemgen_spec::analysis::analyse(workspace, options.defaults);
    let types = types::spec_types(workspace).map_err(|error| error.to_string())?;
    let store = store(&analysis.contracts(), options.dialects.first().copied())?;
    let mut built_for = vec![store.dialect];
    for dialect in &options.dialects {
        if !built_for.contains(dialect) {
            built_for.push(*dialect);
        }
    }
    let mut warnings = Vec::new();
    let mut identifiers = names::Identifiers::default();
    let mut operations: Vec<context::Operation> = Vec::new();
    let mut routes: Vec<context::Route> = Vec::new();
    let mut scheme_idents = names::Identifiers::default();
    let mut schemes: Vec<context::SchemeContext> = Vec::new();

    for analysed in &analysis.operations {
        let operation = &analysed.operation;
        let display = operation.name();
        if operation.kind == OperationKind::Webhook {
            warnings.push(format!(
                "{display}: a webhook is a request this API sends, not one it serves; skipped"
            ));
            continue;
        }
        let lower = operation.method.to_ascii_lowercase();
        if operation.custom || !idemgen_spec::operations::METHODS.contains(&lower.as_str()) {
            warnings.push(format!(
                "{display}: the generated router serves the eight HTTP/1.1 methods, not {}; skipped",
                operation.method
            ));
            continue;
        }
        if let Err(why) = check_path(&operation.path) {
            warnings.push(format!("{display}: {why}; skipped"));
            continue;
        }
        let shape = route_shape(&operation.path);
        let method = operation.method.clone();
        if routes
            .iter()
            .any(|route| route.shape == shape && route.handlers.iter().any(|h| h.method == method))
        {
            warnings.push(format!(
                "{display}: {method} {} matches the same requests as an earlier operation; skipped",
                operation.path
            ));
            continue;
        }
        let ident = identifiers.assign(operation.operation_id.as_deref().unwrap_or(&format!(
            "{} {}",
            operation.method.to_ascii_lowercase(),
            operation.path
        )));
        let mut comment = vec![format!("{display}: {method} {}", operation.path)];
        let mut heading = comment.clone();
        if let Some(summary) = operation.node.get("summary").and_then(|node| node.as_str()) {
            heading.extend(names::comment_lines(summary.trim()));
        }
        for field in ["summary", "description"] {
            if let Some(text) = operation.node.get(field).and_then(|node| node.as_str()) {
                comment.push(String::new());
                comment.extend(names::comment_lines(text.trim()));
            }
        }
        let Some(operation_types) = types.operation(operation) else {
            warnings.push(format!("{display}: no types for this operation; skipped"));
            continue;
        };
        let input = context::TypedInput::new(operation_types);
        let required = idemgen_spec::security::of_operation(workspace, operation)?;
        let scoped_by_principal = analysed.contract().is_some_and(|contract| {
            contract.key.as_ref().is_some_and(|key| {
                key.scope.iter().any(|source| {
                    source.value == idemgen_spec::contract::model::ScopeSource::Principal
                })
            })
        });
        // With an anonymous `{}` alternative next to a scheme, a caller
        // without credentials has no principal: the engine answers 401
        // rather than share one namespace among them.
        if scoped_by_principal && required.alternatives.iter().all(Vec::is_empty) {
            return Err(format!(
                "{display}: `x-idempotency.key.scope` names `principal`, but no security \
                 requirement applies (none, `security: []` or only `{{}}`), so no caller has a \
                 principal; declare a security scheme for it, or scope keys by something else"
            ));
        }
        let security = (!required.is_open()).then(|| {
            let mut alternatives = Vec::new();
            let mut summary = Vec::new();
            for alternative in &required.alternatives {
                let mut consts = Vec::new();
                for scheme in alternative {
                    let known = match schemes.iter().find(|known| known.name == scheme.name) {
                        Some(known) => known,
                        None => {
                            let const_name =
                                scheme_idents.assign(&scheme.name).to_ascii_uppercase();
                            if matches!(
                                scheme.kind,
                                idemgen_spec::security::SchemeKind::MutualTls
                                    | idemgen_spec::security::SchemeKind::OtherHttp(_)
                            ) {
                                warnings.push(format!(
                                    "security scheme `{}`: the generated service reads no credential \
                                     for it; src/auth.rs verifies it from the request (e.g. a header \
                                     your TLS terminator or proxy sets) and refuses every request \
                                     until you write that check",
                                    scheme.name
                                ));
                            }
                            schemes.push(context::SchemeContext::new(scheme, const_name));
                            schemes.last().expect("just pushed")
                        }
                    };
                    consts.push(format!("schemes::{}", known.const_name));
                }
                summary.push(match alternative.as_slice() {
                    [one] => one.name.clone(),
                    many => format!(
                        "({})",
                        many.iter()
                            .map(|scheme| scheme.name.clone())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    ),
                });
                alternatives.push(consts);
            }
            context::SecurityContext {
                alternatives,
                summary: summary.join(" or "),
            }
        });
        let contract = analysed.contract().map(context::ContractContext::new);
        let handler = context::Handler {
            method: method.clone(),
            ident: ident.clone(),
        };
        match routes.iter_mut().find(|route| route.shape == shape) {
            Some(route) => route.handlers.push(handler),
            None => routes.push(context::Route {
                path: operation.path.clone(),
                shape,
                handlers: vec![handler],
            }),
        }
        operations.push(context::Operation {
            name: display,
            const_name: ident.to_ascii_uppercase(),
            method,
            path: operation.path.clone(),
            comment,
            heading,
            business_file: format!("src/business/{ident}.rs"),
            idempotent: contract.is_some(),
            contract,
            security,
            input,
            ident,
        });
    }

    let lib = options.package.replace('-', "_");
    let test_target = operations.iter().find_map(|op| {
        let contract = op.contract.as_ref()?;
        Some(context::TestTarget::new(op, contract, &store.table))
    });
    let replay_rate_alert = analysis
        .contracts()
        .iter()
        .map(|c| c.replay_rate_alert.value)
        .fold(None, |min: Option<f64>, rate| {
            Some(min.map_or(rate, |m| m.min(rate)))
        })
        .unwrap_or(idemgen_spec::contract::model::DEFAULT_REPLAY_RATE_ALERT);
    let title = workspace
        .root()
        .get("info")
        .and_then(|info| info.get("title"))
        .and_then(|title| title.as_str())
        .unwrap_or(&options.package)
        .to_string();
    let dialects: Vec<context::DialectContext> = built_for
        .iter()
        .map(|d| context::DialectContext::new(*d, &store, &lib))
        .collect();
    let project = context::Project {
        version: env!("CARGO_PKG_VERSION"),
        spec: options.spec.clone(),
        title,
        package: options.package.clone(),
        lib: lib.clone(),
        dialect: store.dialect.name(),
        table: store.table.clone(),
        standalone: options.standalone,
        any_idempotent: operations.iter().any(|op| op.contract.is_some()),
        any_params: operations.iter().any(|op| op.input.params.is_some()),
        operations,
        routes,
        t: test_target,
        replay_rate_alert,
        dialects,
        any_secured: !schemes.is_empty(),
        any_api_key: schemes
            .iter()
            .any(|scheme| scheme.kind.starts_with("SchemeKind::ApiKey")),
        schemes,
        // A JSON string is a TOML basic string.
        runtime_path: options
            .runtime_path
            .as_ref()
            .map(|path| serde_json::to_string(path).expect("strings serialise")),
    };

    let secured = project.any_secured;
    let env = render::environment(options.templates.as_deref())?;
    if let Some(dir) = &options.templates {
        if !dir.is_dir() {
            return Err(format!("--templates {}: not a directory", dir.display()));
        }
        for name in render::unknown_overrides(dir) {
            warnings.push(format!(
                "{}: replaces no template (known: {}); ignored",
                dir.join(&name).display(),
                render::TEMPLATES
                    .iter()
                    .map(|template| template.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let mut files = Vec::new();
    let mut emit = |path: String,
                    template: &str,
                    context: minijinja::Value,
                    owner: Owner|
     -> Result<(), String> {
        let mut contents = render::render(&env, template, &context)?;
        if path.ends_with(".rs") {
            contents = format::rustfmt(&path, &contents)?;
        }
        files.push(File {
            path,
            contents,
            owner,
        });
        Ok(())
    };
    for template in render::TEMPLATES {
        match template.output {
            render::Output::File(path) => emit(
                path.to_string(),
                template.name,
                template_context(&project),
                Owner::Idemgen,
            )?,
            render::Output::PerDialect(pattern) => {
                for d in &project.dialects {
                    emit(
                        pattern.replace("{dialect}", d.name),
                        template.name,
                        template_context(context::WithDialect {
                            project: &project,
                            d,
                        }),
                        Owner::Idemgen,
                    )?;
                }
            }
            render::Output::UserFile(path) => emit(
                path.to_string(),
                template.name,
                template_context(&project),
                Owner::User,
            )?,
            render::Output::PerOperation => {
                for op in &project.operations {
                    emit(
                        op.business_file.clone(),
                        template.name,
                        template_context(context::WithOperation {
                            project: &project,
                            op,
                        }),
                        Owner::User,
                    )?;
                }
            }
        }
    }
    files.push(File {
        path: "src/models.rs".to_string(),
        // Through rustfmt like every other file, so that `cargo fmt
        // --check` in the project passes.
        contents: format::rustfmt("src/models.rs", types.models())?,
        owner: Owner::Idemgen,
    });
    if options.runtime_path.is_none() {
        for (path, contents) in runtime::FILES {
            files.push(File {
                path: format!("{}/{path}", runtime::VENDOR_DIR),
                contents: (*contents).to_string(),
                owner: Owner::Idemgen,
            });
        }
    }
    Ok(Project {
        dialect: store.dialect,
        table: store.table,
        files,
        warnings,
        secured,
    })
}

/// Paths axum can route: `/`-separated, each segment literal or `{name}`.
fn check_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("path `{path}` does not start with `/`"));
    }
    for segment in path.split('/').skip(1) {
        let is_param = segment.len() > 2
            && segment.starts_with('{')
            && segment.ends_with('}')
            && !segment[1..segment.len() - 1].contains(['{', '}', '*']);
        if !is_param && (segment.contains(['{', '}']) || segment.starts_with([':', '*'])) {
            return Err(format!("path segment `{segment}` cannot be routed"));
        }
    }
    Ok(())
}

/// The path with parameter names erased: two paths of one shape collide.
fn route_shape(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A typed context as minijinja takes it.
fn template_context(context: impl serde::Serialize) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(context))
}
