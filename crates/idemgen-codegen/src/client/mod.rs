//! `idemgen gen --client`: a Rust library crate (reqwest, tokio, serde)
//! with one async method per operation, typed with the same `models`
//! module as the service, that sends every idempotent request the way its
//! contract says: one key for all attempts, and the retry schedule the
//! window was checked against ([`idemgen_spec::window::schedule`]).
//!
//! The spec-dependent code comes from the `client/` templates; the retry
//! loop and key minting, the same for every spec, is one Rust file
//! ([`RUNTIME`]) written as it is.

mod context;

use idemgen_spec::Workspace;
use idemgen_spec::operations::OperationKind;

use super::{File, Options, Owner, names, render, types};

/// The client's runtime: the retry loop and key minting, written to
/// `src/retry.rs` byte for byte.
pub const RUNTIME: (&str, &str) = ("src/retry.rs", include_str!("../../client/retry.rs"));

/// A planned client crate.
#[derive(Debug)]
pub struct ClientCrate {
    pub files: Vec<File>,
    pub warnings: Vec<String>,
}

/// Every file of the client crate for `workspace`.
pub fn plan(workspace: &Workspace, options: &Options) -> Result<ClientCrate, String> {
    let analysis = idemgen_spec::analysis::analyse(workspace, options.defaults);
    if let Some(unsafe_schedules) = super::safety::unsafe_schedules(workspace, &analysis) {
        return Err(unsafe_schedules);
    }
    let types = types::spec_types(workspace).map_err(|error| error.to_string())?;
    let mut warnings = crate::ambiguous_union_warnings(&types, &options.spec);
    let mut identifiers = names::Identifiers::default();
    let mut operations = Vec::new();
    for analysed in &analysis.operations {
        let operation = &analysed.operation;
        let display = operation.name();
        if operation.kind == OperationKind::Webhook {
            continue;
        }
        let method = operation.method.to_ascii_uppercase();
        if operation.custom
            || !idemgen_spec::operations::METHODS
                .contains(&operation.method.to_ascii_lowercase().as_str())
        {
            warnings.push(format!(
                "{display}: the client sends the standard HTTP methods, not {}; skipped",
                operation.method
            ));
            continue;
        }
        let ident = identifiers.assign(operation.operation_id.as_deref().unwrap_or(&format!(
            "{} {}",
            operation.method.to_ascii_lowercase(),
            operation.path
        )));
        let Some(operation_types) = types.operation(operation) else {
            warnings.push(format!("{display}: no types for this operation; skipped"));
            continue;
        };
        let contract = analysed.contract().and_then(|contract| {
            let schedule = idemgen_spec::window::schedule(contract);
            if schedule.is_none() {
                warnings.push(format!(
                    "{display}: the contract names no `client.timeout`, so the client waits {} s for it and does not retry",
                    context::TIMEOUT_WITHOUT_SCHEDULE_MS / 1000
                ));
            }
            context::ClientContract::new(contract, schedule.as_ref())
        });
        if let Some(body) = &operation_types.request_body {
            warnings.extend(body.form_layout.warnings(&display, types::FormSide::Client));
        }
        let (params, body, response) = context::typed(operation_types, contract.as_ref());
        let mut heading = vec![format!("{display}: {method} {}", operation.path)];
        if let Some(summary) = operation.node.get("summary").and_then(|node| node.as_str()) {
            heading.extend(names::comment_lines(summary.trim()));
        }
        operations.push(context::Operation {
            name: display,
            const_name: ident.to_ascii_uppercase(),
            method,
            path: operation.path.clone(),
            heading,
            path_parts: context::path_parts(&operation.path),
            params,
            body,
            response,
            contract,
            ident,
        });
    }
    let title = workspace
        .root()
        .get("info")
        .and_then(|info| info.get("title"))
        .and_then(|title| title.as_str())
        .unwrap_or(&options.package)
        .to_string();
    let client = context::Client {
        version: env!("CARGO_PKG_VERSION"),
        spec: options.spec.clone(),
        title,
        package: options.package.clone(),
        lib: options.package.replace('-', "_"),
        standalone: options.standalone,
        uses_time: types.uses_time(),
        any_idempotent: operations.iter().any(|op| op.contract.is_some()),
        any_json_response: operations.iter().any(|op| {
            op.response
                .variants
                .iter()
                .any(|variant| variant.has_body && variant.is_json)
        }),
        any_response_header: operations.iter().any(|op| op.response.any_header),
        any_required_response_header: operations.iter().any(|op| {
            op.response
                .variants
                .iter()
                .any(|variant| variant.headers.iter().any(|header| header.required))
        }),
        any_form_body: operations
            .iter()
            .any(|op| op.body.as_ref().is_some_and(|body| body.is_form)),
        example: operations.iter().find(|op| op.contract.is_some()).cloned(),
        operations,
    };
    let env = render::environment(options.templates.as_deref())?;
    let value = minijinja::Value::from(minijinja::value::Serde(&client));
    let mut files = Vec::new();
    for template in render::CLIENT_TEMPLATES {
        let render::Output::File(path) = template.output else {
            continue;
        };
        let mut contents = render::render(&env, template.name, &value)?;
        if path.ends_with(".rs") {
            contents = super::format::left_as_generated(&super::format::rust(path, &contents)?);
        }
        files.push(File {
            path: path.to_string(),
            contents,
            owner: Owner::Idemgen,
        });
    }
    files.push(File {
        path: "src/models.rs".to_string(),
        contents: super::format::left_as_generated(types.models()),
        owner: Owner::Idemgen,
    });
    files.push(File {
        path: RUNTIME.0.to_string(),
        contents: RUNTIME.1.to_string(),
        owner: Owner::Idemgen,
    });
    Ok(ClientCrate { files, warnings })
}
