//! `idemgen gen` and `idemgen ddl`: an axum + sqlx service (and its record
//! table) from the operations' merged contracts.
//!
//! [`plan`] turns the spec into the files of a project: templates
//! ([`render`]) for the code, [`dialect`] for the SQL, [`offline`] for the
//! sqlx query data that lets the project build without a database.
//! [`manifest`] decides what may be written where.

pub mod dialect;
pub mod manifest;
pub mod names;
pub mod offline;
pub mod render;

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::contract::key_template::{Part, Segment};
use crate::contract::model::{
    Canonical, Contract, DEFAULT_MAX_KEY_LENGTH, DEFAULT_TABLE, Dialect, FailedPolicy,
    FingerprintPart, KeyLocation, ScopeSource,
};
use crate::lint::context::ContractState;
use crate::spec::Workspace;
use crate::spec::operations::OperationKind;

/// How a project is generated.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--db`; else the spec's `store.dialect`; else SQLite.
    pub dialect: Option<Dialect>,
    /// `--templates`: a directory whose files replace the embedded ones.
    pub templates: Option<PathBuf>,
    /// Cargo package name.
    pub package: String,
    /// Give the project its own `[workspace]` table.
    pub standalone: bool,
    /// The spec's name as shown in generated comments.
    pub spec: String,
    /// Profile and dialect for contracts that do not say (`idemgen.toml`).
    pub defaults: crate::contract::model::Defaults,
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

/// The contracts of a workspace's operations that have one.
pub fn contracts(
    states: &[(ContractState, Vec<crate::contract::parse::ContractError>)],
) -> Vec<&Contract> {
    states
        .iter()
        .filter_map(|(state, _)| match state {
            ContractState::Present(contract) => Some(contract.as_ref()),
            _ => None,
        })
        .collect()
}

/// Every file of the project for `workspace`.
pub fn plan(workspace: &Workspace, options: &Options) -> Result<Project, String> {
    let analysis = crate::lint::analyse(workspace, options.defaults);
    let store = store(&contracts(&analysis.states), options.dialect)?;
    let mut warnings = Vec::new();
    let mut identifiers = names::Identifiers::default();
    let mut operations = Vec::new();
    let mut routes: Vec<(String, String, Vec<Value>)> = Vec::new();

    for (operation, (state, _)) in analysis.operations.iter().zip(&analysis.states) {
        let display = operation.name();
        if operation.kind == OperationKind::Webhook {
            warnings.push(format!(
                "{display}: a webhook is a request this API sends, not one it serves; skipped"
            ));
            continue;
        }
        if let Err(why) = check_path(&operation.path) {
            warnings.push(format!("{display}: {why}; skipped"));
            continue;
        }
        let shape = route_shape(&operation.path);
        let method = operation.method.clone();
        if routes.iter().any(|(_, other, handlers)| {
            *other == shape && handlers.iter().any(|h| h["method"] == method.as_str())
        }) {
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
        let contract = match state {
            ContractState::Present(contract) => Some(contract_context(contract)),
            _ => None,
        };
        let op = json!({
            "name": display,
            "ident": ident,
            "const_name": ident.to_ascii_uppercase(),
            "method": method,
            "path": operation.path,
            "comment": comment,
            "heading": heading,
            "business_file": format!("src/business/{ident}.rs"),
            "idempotent": contract.is_some(),
            "contract": contract,
        });
        match routes.iter_mut().find(|(_, other, _)| *other == shape) {
            Some((_, _, handlers)) => handlers.push(json!({"method": method, "ident": ident})),
            None => routes.push((
                operation.path.clone(),
                shape,
                vec![json!({"method": method, "ident": ident})],
            )),
        }
        operations.push(op);
    }

    let lib = options.package.replace('-', "_");
    let test_op = operations
        .iter()
        .find(|op| op["contract"].is_object())
        .map(|op| test_context(op, &store.table));
    let dialects: Vec<Value> = dialect::DIALECTS
        .iter()
        .map(|d| dialect_context(*d, &store, &lib))
        .collect();
    let replay_rate_alert = contracts(&analysis.states)
        .iter()
        .map(|c| c.replay_rate_alert.value)
        .fold(None, |min: Option<f64>, rate| {
            Some(min.map_or(rate, |m| m.min(rate)))
        })
        .unwrap_or(crate::contract::model::DEFAULT_REPLAY_RATE_ALERT);
    let title = workspace
        .root()
        .get("info")
        .and_then(|info| info.get("title"))
        .and_then(|title| title.as_str())
        .unwrap_or(&options.package)
        .to_string();
    let context = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "spec": options.spec,
        "title": title,
        "package": options.package,
        "lib": lib,
        "dialect": store.dialect.name(),
        "table": store.table,
        "standalone": options.standalone,
        "operations": operations,
        "routes": routes.iter().map(|(path, _, handlers)| json!({"path": path, "handlers": handlers})).collect::<Vec<_>>(),
        "t": test_op,
        "any_idempotent": operations.iter().any(|op| op["contract"].is_object()),
        "replay_rate_alert": replay_rate_alert,
    });

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
                    .map(|(known, _)| *known)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let mut files = Vec::new();
    let mut emit =
        |path: String, template: &str, context: &Value, owner: Owner| -> Result<(), String> {
            let value = minijinja::Value::from(minijinja::value::Serde(context));
            let mut contents = render::render(&env, template, &value)?;
            if path.ends_with(".rs") {
                contents = render::rustfmt(&contents);
            }
            files.push(File {
                path,
                contents,
                owner,
            });
            Ok(())
        };
    for (path, template) in [
        ("Cargo.toml", "Cargo.toml.j2"),
        ("README.md", "README.md.j2"),
        (".gitignore", "gitignore.j2"),
        ("src/main.rs", "src/main.rs.j2"),
        ("src/lib.rs", "src/lib.rs.j2"),
        ("src/http.rs", "src/http.rs.j2"),
        ("src/idempotency.rs", "src/idempotency.rs.j2"),
        ("src/metrics.rs", "src/metrics.rs.j2"),
        ("src/operations.rs", "src/operations.rs.j2"),
        ("src/routes.rs", "src/routes.rs.j2"),
        ("src/store/mod.rs", "src/store/mod.rs.j2"),
        ("src/business/mod.rs", "src/business/mod.rs.j2"),
        ("tests/idempotency.rs", "tests/idempotency.rs.j2"),
    ] {
        emit(path.to_string(), template, &context, Owner::Idemgen)?;
    }
    for d in &dialects {
        let mut with_d = context.clone();
        with_d["d"] = d.clone();
        let name = d["name"].as_str().expect("dialect names are strings");
        emit(
            format!("src/store/{name}.rs"),
            "src/store/dialect.rs.j2",
            &with_d,
            Owner::Idemgen,
        )?;
        emit(
            format!("migrations/{name}/0001_idempotency_records.sql"),
            "migrations/dialect.sql.j2",
            &with_d,
            Owner::Idemgen,
        )?;
    }
    for op in &operations {
        let mut with_op = context.clone();
        with_op["op"] = op.clone();
        let path = op["business_file"]
            .as_str()
            .expect("paths are strings")
            .to_string();
        emit(path, "src/business/operation.rs.j2", &with_op, Owner::User)?;
    }
    // The MySQL database sqlx names as the origin of the read query's columns.
    let schema = contracts(&analysis.states)
        .iter()
        .find_map(|c| c.database.as_ref().map(|d| d.value.clone()))
        .unwrap_or_else(|| lib.clone());
    for dialect in dialect::DIALECTS {
        for (name, contents) in offline::files(dialect, &store.table, &schema) {
            files.push(File {
                path: format!(".sqlx/{name}"),
                contents,
                owner: Owner::Idemgen,
            });
        }
    }
    Ok(Project {
        dialect: store.dialect,
        table: store.table,
        files,
        warnings,
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

fn source_expr(location: KeyLocation, name: &str) -> String {
    let variant = match location {
        KeyLocation::Header => "Header",
        KeyLocation::Query => "Query",
        KeyLocation::Body => "Body",
    };
    format!("Source::{variant}({})", names::rust_string(name))
}

fn contract_context(contract: &Contract) -> Value {
    let key = contract.key.as_ref();
    let (key_expr, format, pattern, fields, max_len) = match key {
        Some(key) => {
            let fields: Vec<Value> = key
                .format
                .value
                .segments()
                .enumerate()
                .filter_map(|(i, segment)| match segment {
                    Segment::Field(pointer) => Some(json!({"group": i + 1, "pointer": pointer})),
                    _ => None,
                })
                .collect();
            (
                source_expr(key.location.value, &key.name.value),
                key.format.value.source.clone(),
                key.format.value.regex(),
                fields,
                key.max_length.value,
            )
        }
        None => (
            source_expr(KeyLocation::Header, "Idempotency-Key"),
            "{uuid}".to_string(),
            ".+".to_string(),
            Vec::new(),
            DEFAULT_MAX_KEY_LENGTH,
        ),
    };
    let scope: Vec<String> = key
        .map(|key| {
            key.scope
                .iter()
                .map(|source| {
                    let ScopeSource { location, name } = &source.value;
                    source_expr(*location, name)
                })
                .collect()
        })
        .unwrap_or_default();
    let parts = &contract.fingerprint.value;
    json!({
        "key": key_expr,
        "key_in": key.map_or("header", |key| key.location.value.name()),
        "key_name": key.map_or("Idempotency-Key".to_string(), |key| key.name.value.clone()),
        "key_format": format,
        "key_pattern": pattern,
        "key_parts": key.map(|key| key_parts(&key.format.value.parts)).unwrap_or_default(),
        "key_fields": fields,
        "max_key_len": max_len,
        "key_required": contract.missing_key_status.is_some(),
        "missing_key_status": contract.missing_key_status.as_ref().map_or(400, |s| s.value),
        "scope": scope,
        "scope_sources": key.map(|key| key.scope.iter().map(|s| json!({"in": s.value.location.name(), "name": s.value.name})).collect::<Vec<_>>()).unwrap_or_default(),
        "window_ms": contract.window_ms.as_ref().map_or(86_400_000, |w| w.value),
        "lease_ms": contract.max_processing_ms.as_ref().map_or(30_000, |m| m.value),
        "retry_after_secs": contract.retry_after_ms.value.div_ceil(1000).max(1),
        "in_progress_status": contract.in_progress_status.value,
        "conflict_status": contract.conflict_status.value,
        "retry_failed": contract.failed.value == FailedPolicy::Retry,
        "fp_method": parts.contains(&FingerprintPart::Method),
        "fp_path": parts.contains(&FingerprintPart::Path),
        "fp_query": parts.contains(&FingerprintPart::Query),
        "fp_body": parts.contains(&FingerprintPart::Body),
        "canonical_json": contract.canonical.value == Canonical::Json,
    })
}

fn key_parts(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .map(|part| match part {
            Part::Literal(text) => json!({"literal": text}),
            Part::Segment(segment) => match segment {
                Segment::Uuid => json!({"segment": "uuid"}),
                Segment::Ulid => json!({"segment": "ulid"}),
                Segment::Random(bytes) => {
                    json!({"segment": "random", "len": (*bytes as usize * 4).div_ceil(3)})
                }
                Segment::Date => json!({"segment": "date"}),
                Segment::Timestamp => json!({"segment": "timestamp"}),
                Segment::Seq => json!({"segment": "seq"}),
                Segment::Field(pointer) => json!({"segment": "field", "pointer": pointer}),
            },
        })
        .collect()
}

/// What the generated tests need about the operation they exercise.
fn test_context(op: &Value, table: &str) -> Value {
    let c = &op["contract"];
    let mut key_lines = Vec::new();
    for part in c["key_parts"].as_array().into_iter().flatten() {
        let line = if let Some(literal) = part["literal"].as_str() {
            let mut chars = literal.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => format!("key.push({c:?});"),
                _ => format!("key.push_str({});", names::rust_string(literal)),
            }
        } else {
            match part["segment"].as_str().unwrap_or_default() {
                "uuid" => "key.push_str(&uuid::Uuid::new_v4().to_string());".to_string(),
                "ulid" => "key.push('0');\n        key.push_str(&random_text(\"0123456789ABCDEFGHJKMNPQRSTVWXYZ\", 25));".to_string(),
                "random" => format!(
                    "key.push_str(&random_text(\"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_\", {}));",
                    part["len"]
                ),
                "date" => "key.push_str(\"20240615\");".to_string(),
                "timestamp" => "key.push_str(&random_text(\"0123456789\", 13));".to_string(),
                "seq" => "key.push_str(&random_text(\"0123456789\", 12));".to_string(),
                _ => {
                    let pointer = part["pointer"].as_str().unwrap_or("/field");
                    format!(
                        "let field = random_text(\"abcdefghijklmnopqrstuvwxyz\", 12);\n        set(&mut body, {}, json!(field));\n        key.push_str(&field);",
                        names::rust_string(pointer)
                    )
                }
            }
        };
        key_lines.push(line);
    }
    let mut scope_lines = Vec::new();
    for source in c["scope_sources"].as_array().into_iter().flatten() {
        let name = names::rust_string(source["name"].as_str().unwrap_or_default());
        scope_lines.push(match source["in"].as_str().unwrap_or_default() {
            "header" => format!("let builder = builder.header({name}, \"tenant-a\");"),
            "query" => format!(
                "uri.push(if uri.contains('?') {{ '&' }} else {{ '?' }});\n        uri.push_str(&format!(\"{{}}=tenant-a\", encode({name})));"
            ),
            _ => format!("set(&mut body, {name}, json!(\"tenant-a\"));"),
        });
    }
    let path = op["path"].as_str().unwrap_or("/");
    let uri: String = path
        .split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "p1".to_string()
            } else {
                segment
                    .bytes()
                    .map(|byte| match byte {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                            (byte as char).to_string()
                        }
                        _ => format!("%{byte:02X}"),
                    })
                    .collect()
            }
        })
        .collect::<Vec<_>>()
        .join("/");
    let sources: Vec<&str> = c["scope_sources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|source| source["in"].as_str())
        .collect();
    let key_in = c["key_in"].as_str().unwrap_or("header");
    let has_field = c["key_parts"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|part| part["segment"] == "field");
    let needs_random = key_lines.iter().any(|line| line.contains("random_text("));
    json!({
        "needs_set": has_field || key_in == "body" || sources.contains(&"body"),
        "needs_encode": key_in == "query" || sources.contains(&"query"),
        "needs_random": needs_random,
        "body_in_key": has_field,
        "body_in_request": key_in == "body" || sources.contains(&"body"),
        "uri_mut": key_in == "query" || sources.contains(&"query"),
        "name": op["name"],
        "const_name": op["const_name"],
        "method": op["method"],
        "uri": uri,
        "table": table,
        "key_in": c["key_in"],
        "key_name": c["key_name"],
        "key_format": c["key_format"],
        "key_lines": key_lines,
        "scope_lines": scope_lines,
        "key_required": c["key_required"],
        "missing_key_status": c["missing_key_status"],
        "max_key_len": c["max_key_len"],
        "in_progress_status": c["in_progress_status"],
        "conflict_status": c["conflict_status"],
        "retry_after_secs": c["retry_after_secs"],
        "retry_failed": c["retry_failed"],
        "fp_body": c["fp_body"],
    })
}

fn dialect_context(d: Dialect, store: &Store, lib: &str) -> Value {
    let mut queries = serde_json::Map::new();
    for kind in dialect::QueryKind::ALL {
        queries.insert(
            kind.name().into(),
            Value::String(names::rust_string(&dialect::query(d, kind, &store.table))),
        );
    }
    let (title, db, default_url) = match d {
        Dialect::Sqlite => (
            "SQLite",
            "Sqlite",
            format!("sqlite://{}.db", lib.replace('_', "-")),
        ),
        Dialect::Mysql => (
            "MySQL / MariaDB",
            "MySql",
            format!("mysql://root@127.0.0.1:3306/{lib}"),
        ),
        Dialect::Postgres => (
            "PostgreSQL",
            "Postgres",
            format!("postgres://postgres@127.0.0.1:5432/{lib}"),
        ),
    };
    json!({
        "name": d.name(),
        "title": title,
        "db": db,
        "default_url": default_url,
        "queries": queries,
        "ddl": dialect::ddl(d, &store.table, store.key_width),
    })
}
