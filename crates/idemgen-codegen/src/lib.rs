//! `idemgen gen` and `idemgen ddl`: an axum + sqlx service (and its record
//! table) from the operations' merged contracts.
//!
//! [`plan`] turns the spec into the files of a project: templates
//! ([`render`]) for the spec-dependent code, [`dialect`] for the SQL, and a
//! copy of the `idemgen-runtime` crate (its own [`idemgen_runtime::sources`]),
//! the engine the project builds on. [`manifest`] decides what may be written where,
//! [`mod@write`] writes it.

mod alerts;
pub mod client;
pub mod constraints;
mod context;
pub mod dialect;
pub mod format;
pub mod manifest;
pub mod names;
pub mod orphans;
mod render;
mod routing;
pub mod safety;
pub mod types;
pub mod write;

use std::path::PathBuf;

use idemgen_spec::Workspace;
use idemgen_spec::contract::model::{Contract, DEFAULT_MAX_KEY_LENGTH, DEFAULT_TABLE, Dialect};
use idemgen_spec::operations::OperationKind;
use routing::{RoutedPath, route_shape, routed_path};

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
    /// `--runbook-url`: where the project publishes
    /// `ops/prometheus/runbook.md`; each alert's `runbook_url` is this and
    /// `#` its section (else the file's path in the project).
    pub runbook_url: Option<String>,
    /// `--job`: the `job` label the alert rules select (else the package
    /// name).
    pub job: Option<String>,
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
    /// The business file of each served operation.
    pub business: Vec<orphans::BusinessFile>,
}

/// The sqlx version generated projects pin exactly (their offline query
/// data in `.sqlx/` is in its format), as idemgen-runtime does; their
/// README's sqlx-cli install names it too.
pub const SQLX_VERSION: &str = "0.9.0";

/// The dialect, record table and key width every idempotent operation of
/// the spec agrees on.
pub struct Store {
    pub dialect: Dialect,
    pub table: String,
    pub key_width: u64,
    /// `store.database`, when the contracts name one (and all the same):
    /// the database the default `DATABASE_URL` names.
    pub database: Option<String>,
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
    let mut databases: Vec<&str> = contracts
        .iter()
        .filter_map(|c| c.database.as_ref().map(|database| database.value.as_str()))
        .collect();
    databases.sort_unstable();
    databases.dedup();
    // A name that a URL's path carries as it is; another one (which
    // `store-identifier-invalid` reports) leaves the package's name.
    let database = match databases.as_slice() {
        [one]
            if !one.is_empty()
                && one
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$')) =>
        {
            Some(one.to_string())
        }
        _ => None,
    };
    Ok(Store {
        dialect,
        table,
        key_width,
        database,
    })
}

/// Each alert's guide as the manual's alerts page shows it (`## Name` and
/// what it means): the text every generated `runbook.md` starts its
/// sections with.
pub fn alert_guides() -> String {
    alerts::guide_sections()
}

/// Every file of the project for `workspace`.
pub fn plan(workspace: &Workspace, options: &Options) -> Result<Project, String> {
    let analysis = idemgen_spec::analysis::analyse(workspace, options.defaults);
    if let Some(unsafe_schedules) = safety::unsafe_schedules(workspace, &analysis) {
        return Err(unsafe_schedules);
    }
    // The engine answers "in progress" itself, `Retry-After` included.
    let in_progress = types::engine_statuses(&analysis);
    let types =
        types::spec_types_with(workspace, &in_progress).map_err(|error| error.to_string())?;
    let store = store(&analysis.contracts(), options.dialects.first().copied())?;
    let mut warnings = ambiguous_union_warnings(&types, &options.spec);
    let served = serve_operations(workspace, &analysis, &types, &mut warnings)?;
    let project = project_context(
        workspace,
        options,
        &analysis,
        &store,
        served,
        types.uses_time(),
    );
    let business = project
        .operations
        .iter()
        .map(|op| orphans::BusinessFile {
            file: op.business_file.clone(),
            name: op.name.clone(),
            method: op.method.clone(),
            path: op.path.clone(),
        })
        .collect();
    let env = template_environment(options, &mut warnings)?;
    let mut files = render_templates(&env, &project)?;
    files.push(models_file(&types));
    files.extend(alerts::files(&project));
    if options.runtime_path.is_none() {
        files.extend(runtime_files());
    }
    Ok(Project {
        dialect: store.dialect,
        table: store.table,
        files,
        warnings,
        secured: project.any_secured,
        business,
    })
}

/// Up to this many ambiguous unions are named one by one.
const AMBIGUOUS_NAMED: usize = 5;

/// One warning per union generated as `serde_json::Value` because its
/// variants cannot be told apart (the first few, then a count).
pub(crate) fn ambiguous_union_warnings(types: &types::SpecTypes, spec: &str) -> Vec<String> {
    let ambiguous = types.ambiguous_unions();
    let mut warnings: Vec<String> = ambiguous
        .iter()
        .take(AMBIGUOUS_NAMED)
        .map(|union| {
            let why = union
                .reason
                .strip_prefix("Any JSON value: ")
                .unwrap_or(&union.reason)
                .trim_end_matches('.');
            format!(
                "{spec}#{}: generated as `serde_json::Value`, not guessed: {why}",
                union.pointer
            )
        })
        .collect();
    if ambiguous.len() > AMBIGUOUS_NAMED {
        warnings.push(format!(
            "{} more unions generated as `serde_json::Value` for the same reason (the doc \
             comment of each in src/models.rs names its variants)",
            ambiguous.len() - AMBIGUOUS_NAMED
        ));
    }
    warnings
}

/// The default dialect, then every other `--db` one, each once.
fn dialects_built_for(store: &Store, options: &Options) -> Vec<Dialect> {
    let mut built_for = vec![store.dialect];
    for dialect in &options.dialects {
        if !built_for.contains(dialect) {
            built_for.push(*dialect);
        }
    }
    built_for
}

/// What the served operations add up to: their contexts, their routes and
/// the security schemes they require.
#[derive(Default)]
struct Served {
    operations: Vec<context::Operation>,
    /// The keyword tables the operations' answers share.
    answer_tables: Vec<constraints::AnswerTable>,
    routes: Vec<context::Route>,
    schemes: Schemes,
}

/// The contexts of the operations the generated service serves; the others
/// are skipped with a warning.
fn serve_operations(
    workspace: &Workspace,
    analysis: &idemgen_spec::analysis::Analysis<'_>,
    types: &types::SpecTypes,
    warnings: &mut Vec<String>,
) -> Result<Served, String> {
    let mut served = Served::default();
    let mut identifiers = names::Identifiers::default();
    let mut warned = std::collections::HashSet::new();
    let mut unchecked: Vec<String> = Vec::new();
    for analysed in &analysis.operations {
        let operation = &analysed.operation;
        let display = operation.name();
        let routed = match route_for(operation, &served.routes) {
            Ok(routed) => routed,
            Err(why) => {
                warnings.push(format!("{display}: {why}; skipped"));
                continue;
            }
        };
        // Assigned before the types are looked up: an operation skipped for
        // want of types still takes its identifier.
        let ident = identifiers.assign(operation.operation_id.as_deref().unwrap_or(&format!(
            "{} {}",
            operation.method.to_ascii_lowercase(),
            operation.path
        )));
        let Some(operation_types) = types.operation(operation) else {
            warnings.push(format!("{display}: no types for this operation; skipped"));
            continue;
        };
        for param in operation_types
            .params
            .iter()
            .flat_map(|params| &params.fields)
        {
            if param.unread_nesting {
                warnings.push(format!(
                    "{display}: query parameter `{}` is a `deepObject` whose brackets cannot be \
                     read into its type (a union of two objects, a map of objects, free-form JSON \
                     or more than 10 levels deep): only its value sent as one text is read",
                    param.wire_name
                ));
            }
        }
        if let Some(body) = &operation_types.request_body {
            warnings.extend(
                body.form_layout
                    .warnings(&display, types::FormSide::Service),
            );
        }
        let required = idemgen_spec::security::of_operation(workspace, operation)?;
        check_principal_scope(&display, analysed, &required)?;
        let security = served.schemes.security(&required, warnings);
        add_route(&mut served.routes, operation, &routed.route, &ident);
        // The idempotency key's own form and length are the engine's to
        // check, answered with the contract's status before anything else.
        let key = analysed
            .contract()
            .and_then(|contract| contract.key.as_ref())
            .map(|key| (key.location.value.name(), key.name.value.as_str()));
        let checked = constraints::collect(workspace, operation, key);
        // A warning names the schema's place in the spec: one shared by
        // many operations (an error schema) is named once, with the first.
        for warning in &checked.warnings {
            if warned.insert(warning.clone()) {
                warnings.push(format!("{display}: {warning}"));
            }
        }
        for place in &checked.unchecked {
            if warned.insert(place.clone()) {
                unchecked.push(format!("{display}: {place}"));
            }
        }
        let declared_headers = analysed.context(workspace).fingerprinted_headers();
        served.operations.push(operation_context(
            analysed,
            declared_headers,
            display,
            ident,
            routed,
            context::TypedInput::new(operation_types, checked),
            security,
        ));
    }
    warnings.extend(unchecked_summary(&unchecked));
    served.answer_tables = constraints::share_answer_tables(
        served
            .operations
            .iter_mut()
            .map(|op| (op.name.as_str(), op.ident.as_str(), &mut op.input.answers)),
    );
    Ok(served)
}

/// How many places listed, at most, when validation keywords go
/// unchecked; the rest are counted.
const UNCHECKED_LISTED: usize = 5;

/// The warnings for the schemas with keywords no table checks: each
/// place up to [`UNCHECKED_LISTED`], then how many more.
fn unchecked_summary(places: &[String]) -> Vec<String> {
    let mut warnings: Vec<String> = places.iter().take(UNCHECKED_LISTED).cloned().collect();
    if places.len() > UNCHECKED_LISTED {
        warnings.push(format!(
            "{} more places hold validation keywords the service does not check (inside \
             `oneOf`/`anyOf` branches, or `not`, `if`, `contains`, …); the first {UNCHECKED_LISTED} \
             are above",
            places.len() - UNCHECKED_LISTED
        ));
    }
    warnings
}

/// The route the generated router serves `operation` at, or why it
/// cannot serve it.
fn route_for(
    operation: &idemgen_spec::operations::Operation<'_>,
    routes: &[context::Route],
) -> Result<RoutedPath, String> {
    if operation.kind == OperationKind::Webhook {
        return Err("a webhook is a request this API sends, not one it serves".to_string());
    }
    let lower = operation.method.to_ascii_lowercase();
    if operation.custom || !idemgen_spec::operations::METHODS.contains(&lower.as_str()) {
        return Err(format!(
            "the generated router serves the eight HTTP/1.1 methods, not {}",
            operation.method
        ));
    }
    let routed = routed_path(&operation.path)?;
    let shape = route_shape(&routed.route);
    let method = &operation.method;
    let Some(route) = routes.iter().find(|route| route.shape == shape) else {
        return Ok(routed);
    };
    // One route captures its segments under one set of names, the first
    // operation's: another's parameters would not be found under theirs.
    let names = |route: &str| -> Vec<String> {
        route
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .map(str::to_string)
            .collect()
    };
    if names(&route.path) != names(&routed.route) {
        let first = &route.handlers[0];
        let why = if first.path == route.path && routed.affixes.is_empty() {
            "OpenAPI does not allow two templates that differ only in their names".to_string()
        } else {
            format!(
                "the router matches whole segments: both are routed at `{}`",
                route_shape(&route.path)
            )
        };
        return Err(format!(
            "{method} {} names its path parameters otherwise than {} {}, served earlier at \
             the same place ({why}); name them alike",
            operation.path, first.method, first.path
        ));
    }
    let Some(earlier) = route.handlers.iter().find(|h| &h.method == method) else {
        return Ok(routed);
    };
    // `/{id}.json` and `/{id}.xml` are one route: rather than guess which
    // operation a request meant, the later one is not served. With their
    // names alike, a path written as its route is the route itself.
    let whole_segments = if operation.path == route.path && earlier.path == route.path {
        String::new()
    } else {
        format!(
            " (the router matches whole segments: both are routed at `{}`)",
            route.path
        )
    };
    Err(format!(
        "{method} {} matches the same requests as {method} {}, served earlier{whole_segments}",
        operation.path, earlier.path
    ))
}

/// With an anonymous `{}` alternative next to a scheme, a caller without
/// credentials has no principal: the engine answers 401 rather than share
/// one namespace among them. With no scheme at all, no caller has one.
fn check_principal_scope(
    display: &str,
    analysed: &idemgen_spec::analysis::AnalysedOperation<'_>,
    required: &idemgen_spec::security::Security,
) -> Result<(), String> {
    let scoped_by_principal = analysed.contract().is_some_and(|contract| {
        contract.key.as_ref().is_some_and(|key| {
            key.scope
                .iter()
                .any(|source| source.value == idemgen_spec::contract::model::ScopeSource::Principal)
        })
    });
    if scoped_by_principal && required.alternatives.iter().all(Vec::is_empty) {
        return Err(format!(
            "{display}: `x-idempotency.key.scope` names `principal`, but no security \
             requirement applies (none, `security: []` or only `{{}}`), so no caller has a \
             principal; declare a security scheme for it, or scope keys by something else"
        ));
    }
    Ok(())
}

/// The security schemes operations require, each once, in the order first
/// required.
#[derive(Default)]
struct Schemes {
    idents: names::Identifiers,
    list: Vec<context::SchemeContext>,
}

impl Schemes {
    /// An operation's security as its table entry spells it; `None` when
    /// anyone may call it.
    fn security(
        &mut self,
        required: &idemgen_spec::security::Security,
        warnings: &mut Vec<String>,
    ) -> Option<context::SecurityContext> {
        if required.is_open() {
            return None;
        }
        let alternatives = required
            .alternatives
            .iter()
            .map(|alternative| {
                alternative
                    .iter()
                    .map(|scheme| self.const_name(scheme, warnings))
                    .collect()
            })
            .collect();
        Some(context::SecurityContext {
            alternatives,
            summary: security_summary(required),
        })
    }

    /// The constant of `scheme`, declared the first time it is required.
    fn const_name(
        &mut self,
        scheme: &idemgen_spec::security::Scheme,
        warnings: &mut Vec<String>,
    ) -> String {
        if let Some(known) = self.list.iter().find(|known| known.name == scheme.name) {
            return known.const_name.clone();
        }
        let const_name = self.idents.assign(&scheme.name).to_ascii_uppercase();
        if matches!(
            scheme.kind,
            idemgen_spec::security::SchemeKind::MutualTls
                | idemgen_spec::security::SchemeKind::OtherHttp(_)
        ) {
            warnings.push(format!(
                "security scheme `{}`: the generated service reads no credential for it; \
                 src/auth.rs verifies it from the request (e.g. a header your TLS terminator \
                 or proxy sets) and refuses every request until you write that check",
                scheme.name
            ));
        }
        self.list
            .push(context::SchemeContext::new(scheme, const_name.clone()));
        const_name
    }
}

/// A human summary of the alternatives: `bearerAuth or (signature and
/// session)`.
fn security_summary(required: &idemgen_spec::security::Security) -> String {
    required
        .alternatives
        .iter()
        .map(|alternative| match alternative.as_slice() {
            [one] => one.name.clone(),
            many => format!(
                "({})",
                many.iter()
                    .map(|scheme| scheme.name.clone())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Adds the operation's handler to the route of its path shape.
fn add_route(
    routes: &mut Vec<context::Route>,
    operation: &idemgen_spec::operations::Operation<'_>,
    route: &str,
    ident: &str,
) {
    let shape = route_shape(route);
    let handler = context::Handler {
        method: operation.method.clone(),
        ident: ident.to_string(),
        path: operation.path.clone(),
    };
    match routes.iter_mut().find(|route| route.shape == shape) {
        Some(route) => route.handlers.push(handler),
        None => routes.push(context::Route {
            path: route.to_string(),
            shape,
            handlers: vec![handler],
        }),
    }
}

/// One served operation as the templates see it.
fn operation_context(
    analysed: &idemgen_spec::analysis::AnalysedOperation<'_>,
    declared_headers: Vec<String>,
    display: String,
    ident: String,
    routed: RoutedPath,
    input: context::TypedInput,
    security: Option<context::SecurityContext>,
) -> context::Operation {
    let operation = &analysed.operation;
    let (comment, heading) = operation_comments(operation, &display);
    let contract = analysed
        .contract()
        .map(|contract| context::ContractContext::new(contract, declared_headers));
    context::Operation {
        name: display,
        const_name: ident.to_ascii_uppercase(),
        method: operation.method.clone(),
        path: operation.path.clone(),
        route: routed.route,
        path_affixes: routed.affixes,
        comment,
        heading,
        business_file: format!("src/business/{ident}.rs"),
        idempotent: contract.is_some(),
        contract,
        security,
        input,
        ident,
    }
}

/// The comment over the operation's table entry (name, summary,
/// description) and the one over its handler (name and summary).
fn operation_comments(
    operation: &idemgen_spec::operations::Operation<'_>,
    display: &str,
) -> (Vec<String>, Vec<String>) {
    let mut comment = vec![format!(
        "{display}: {} {}",
        operation.method, operation.path
    )];
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
    (comment, heading)
}

/// Every template's context: the served operations with what the project
/// as a whole needs.
fn project_context(
    workspace: &Workspace,
    options: &Options,
    analysis: &idemgen_spec::analysis::Analysis<'_>,
    store: &Store,
    served: Served,
    uses_time: bool,
) -> context::Project {
    let Served {
        operations,
        answer_tables,
        routes,
        schemes,
    } = served;
    let schemes = schemes.list;
    let lib = options.package.replace('-', "_");
    let test_target = operations.iter().find_map(|op| {
        let contract = op.contract.as_ref()?;
        Some(context::TestTarget::new(op, contract, &store.table))
    });
    let dialects = dialects_built_for(store, options)
        .into_iter()
        .map(|d| context::DialectContext::new(d, store, &lib))
        .collect();
    context::Project {
        version: env!("CARGO_PKG_VERSION"),
        spec: options.spec.clone(),
        title: spec_title(workspace, options),
        package: options.package.clone(),
        lib,
        dialect: store.dialect.name(),
        table: store.table.clone(),
        database: store.database.clone(),
        sqlx_version: SQLX_VERSION,
        standalone: options.standalone,
        uses_time,
        any_idempotent: operations.iter().any(|op| op.contract.is_some()),
        any_params: operations.iter().any(|op| op.input.params.is_some()),
        any_nested_params: operations.iter().any(|op| {
            op.input
                .params
                .as_ref()
                .is_some_and(|params| params.table.iter().any(|param| param.nested))
                || op
                    .input
                    .body
                    .as_ref()
                    .and_then(|body| body.parts.as_ref())
                    .is_some_and(|parts| parts.iter().any(|part| part.contains(".brackets(")))
        }),
        any_path_affixes: operations.iter().any(|op| !op.path_affixes.is_empty()),
        any_multipart: operations.iter().any(|op| {
            op.input
                .body
                .as_ref()
                .is_some_and(|body| body.parts.is_some())
        }),
        any_multipart_text: operations.iter().any(|op| {
            op.input
                .body
                .as_ref()
                .and_then(|body| body.parts.as_ref())
                .is_some_and(|parts| parts.iter().any(|part| part.contains("Scalar::")))
        }),
        any_constraints: operations.iter().any(|op| {
            op.input
                .body
                .as_ref()
                .is_some_and(|body| !body.constraints.is_empty())
                || op
                    .input
                    .params
                    .as_ref()
                    .is_some_and(|params| !params.constraints.is_empty())
                || !op.input.answers.is_empty()
        }),
        any_answers: operations.iter().any(|op| !op.input.answers.is_empty()),
        any_chosen: operations
            .iter()
            .flat_map(|op| {
                let body = op.input.body.iter().flat_map(|body| &body.constraints);
                let params = op
                    .input
                    .params
                    .iter()
                    .flat_map(|params| &params.constraints);
                body.chain(params)
            })
            .chain(answer_tables.iter().flat_map(|table| &table.constraints))
            .any(|constraint| constraint.check.starts_with("Check::Chosen(")),
        answer_tables,
        operations,
        routes,
        t: test_target,
        replay_rate_alert: replay_rate_alert(analysis),
        dialects,
        any_secured: !schemes.is_empty(),
        any_api_key: schemes
            .iter()
            .any(|scheme| matches!(scheme.kind, context::SchemeKindContext::ApiKey { .. })),
        schemes,
        runtime_path: options.runtime_path.clone(),
        runbook_url: options.runbook_url.clone(),
        job: options
            .job
            .clone()
            .unwrap_or_else(|| options.package.clone()),
    }
}

/// The lowest `replay-rate-alert` of the contracts, else the default.
fn replay_rate_alert(analysis: &idemgen_spec::analysis::Analysis<'_>) -> f64 {
    analysis
        .contracts()
        .iter()
        .map(|c| c.replay_rate_alert.value)
        .fold(None, |min: Option<f64>, rate| {
            Some(min.map_or(rate, |m| m.min(rate)))
        })
        .unwrap_or(idemgen_spec::contract::model::DEFAULT_REPLAY_RATE_ALERT)
}

/// The spec's `info.title`, else the package name.
fn spec_title(workspace: &Workspace, options: &Options) -> String {
    workspace
        .root()
        .get("info")
        .and_then(|info| info.get("title"))
        .and_then(|title| title.as_str())
        .unwrap_or(&options.package)
        .to_string()
}

/// The templates, with `--templates` overrides; an override file that
/// replaces no template is a warning.
fn template_environment(
    options: &Options,
    warnings: &mut Vec<String>,
) -> Result<minijinja::Environment<'static>, String> {
    let env = render::environment(options.templates.as_deref())?;
    let Some(dir) = &options.templates else {
        return Ok(env);
    };
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
    Ok(env)
}

/// Every template rendered: once, once per dialect, or once per operation.
fn render_templates(
    env: &minijinja::Environment<'_>,
    project: &context::Project,
) -> Result<Vec<File>, String> {
    let mut files = Vec::new();
    for template in render::TEMPLATES {
        let name = template.name;
        match template.output {
            render::Output::File(path) => files.push(render_file(
                env,
                path.to_string(),
                name,
                template_context(project),
                Owner::Idemgen,
            )?),
            render::Output::PerDialect(pattern) => {
                for d in &project.dialects {
                    files.push(render_file(
                        env,
                        pattern.replace("{dialect}", d.name),
                        name,
                        template_context(context::WithDialect { project, d }),
                        Owner::Idemgen,
                    )?);
                }
            }
            render::Output::UserFile(path) => files.push(render_file(
                env,
                path.to_string(),
                name,
                template_context(project),
                Owner::User,
            )?),
            render::Output::PerOperation => {
                for op in &project.operations {
                    files.push(render_file(
                        env,
                        op.business_file.clone(),
                        name,
                        template_context(context::WithOperation { project, op }),
                        Owner::User,
                    )?);
                }
            }
        }
    }
    Ok(files)
}

/// One rendered file, laid out by [`format::rust`] when it is Rust.
fn render_file(
    env: &minijinja::Environment<'_>,
    path: String,
    template: &str,
    context: minijinja::Value,
    owner: Owner,
) -> Result<File, String> {
    let mut contents = render::render(env, template, &context)?;
    if path.ends_with(".rs") {
        contents = format::rust(&path, &contents)?;
        if owner == Owner::Idemgen {
            contents = format::left_as_generated(&contents);
        }
    }
    Ok(File {
        path,
        contents,
        owner,
    })
}

/// `src/models.rs`, the spec's schemas as Rust types.
fn models_file(types: &types::SpecTypes) -> File {
    File {
        path: "src/models.rs".to_string(),
        // Already laid out by `format::rust`.
        contents: format::left_as_generated(types.models()),
        owner: Owner::Idemgen,
    }
}

/// Where the copy of the `idemgen-runtime` crate goes, relative to the
/// project.
const VENDOR_DIR: &str = "vendor/idemgen-runtime";

/// The vendored copy of the `idemgen-runtime` crate: the files the crate
/// lists itself, so a file added there cannot be missing here.
fn runtime_files() -> impl Iterator<Item = File> {
    idemgen_runtime::sources::FILES
        .iter()
        .map(|(path, contents)| File {
            path: format!("{VENDOR_DIR}/{path}"),
            contents: (*contents).to_string(),
            owner: Owner::Idemgen,
        })
}

/// A typed context as minijinja takes it.
fn template_context(context: impl serde::Serialize) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(context))
}
