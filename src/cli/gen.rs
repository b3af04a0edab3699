//! `idemgen gen`: scaffold the axum + sqlx service of a spec.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::{DbArg, EXIT_BAD_INPUT, EXIT_FINDINGS, print, print_load_error, project_config};
use crate::codegen::manifest::{self, Action, MANIFEST, Manifest};
use crate::codegen::{self, Owner};
use crate::lint::diagnostic::{Report, Severity};
use crate::report;
use crate::spec::Workspace;

#[derive(clap::Args)]
pub struct GenArgs {
    /// OpenAPI 3.0/3.1 document with x-idempotency contracts.
    pub spec: PathBuf,
    /// Directory of the generated project (created if missing).
    #[arg(short, long)]
    pub output: PathBuf,
    /// SQL dialect of the default build; else the spec's store.dialect, else sqlite.
    #[arg(long, value_enum)]
    pub db: Option<DbArg>,
    /// Directory of templates that replace the embedded ones (same names).
    #[arg(long)]
    pub templates: Option<PathBuf>,
    /// Overwrite files idemgen did not write, or that were changed since.
    #[arg(long)]
    pub force: bool,
    /// Cargo package name (default: the output directory's name).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(args: &GenArgs) -> ExitCode {
    let workspace = match Workspace::load(&args.spec) {
        Ok(workspace) => workspace,
        Err(error) => {
            print_load_error(&error);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let config = match project_config() {
        Ok(config) => config,
        Err(code) => return code,
    };
    let linted = crate::lint::lint(&workspace, &config.lint_options());
    let errors = linted
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    if errors > 0 {
        let mut report = Report {
            files: 1,
            operations: linted.operations,
            ..Report::default()
        };
        for loaded in &workspace.files {
            report.sources.insert(
                loaded.source.display.clone(),
                Arc::from(loaded.source.text.as_str()),
            );
        }
        report.diagnostics = linted.diagnostics;
        let color = report::pretty::use_color(std::io::stderr().is_terminal());
        eprint!("{}", report::pretty::render(&report, color));
        eprintln!(
            "error: {} has {errors} error-level finding{}; fix {} before generating code",
            args.spec.display(),
            if errors == 1 { "" } else { "s" },
            if errors == 1 { "it" } else { "them" },
        );
        return ExitCode::from(EXIT_FINDINGS);
    }

    let package = match &args.name {
        Some(name) => name.clone(),
        None => package_name(&args.output),
    };
    let options = codegen::Options {
        dialect: args.db.map(DbArg::dialect),
        templates: args.templates.clone(),
        package,
        standalone: !is_workspace_member(&args.output),
        defaults: config.defaults,
        spec: args
            .spec
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| args.spec.display().to_string()),
    };
    let project = match codegen::plan(&workspace, &options) {
        Ok(project) => project,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    for warning in &project.warnings {
        eprintln!("warning: {warning}");
    }
    match write(&args.output, &project.files, args.force) {
        Ok(summary) => {
            print(&summary);
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Writes the files the manifest allows and the manifest itself; returns a
/// summary for the user.
pub fn write(dir: &Path, files: &[codegen::File], force: bool) -> Result<String, String> {
    let previous = Manifest::read(dir);
    let actions = manifest::actions(dir, files, &previous, force);
    let refused: Vec<&str> = files
        .iter()
        .zip(&actions)
        .filter(|(_, action)| **action == Action::Refuse)
        .map(|(file, _)| file.path.as_str())
        .collect();
    if !refused.is_empty() {
        return Err(format!(
            "refusing to overwrite {} file{} that idemgen did not write or that changed since \
             (pass --force to overwrite):\n  {}",
            refused.len(),
            if refused.len() == 1 { "" } else { "s" },
            refused.join("\n  ")
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let mut manifest = Manifest::default();
    let (mut created, mut updated, mut unchanged, mut kept) = (0, 0, 0, Vec::new());
    for (file, action) in files.iter().zip(&actions) {
        if file.owner == Owner::Idemgen {
            manifest.files.insert(
                file.path.clone(),
                manifest::sha256_hex(file.contents.as_bytes()),
            );
        }
        match action {
            Action::Unchanged => unchanged += 1,
            Action::Keep => kept.push(file.path.as_str()),
            Action::Create | Action::Update => {
                let path = manifest::inside(dir, &file.path).ok_or_else(|| {
                    format!("refusing to write outside {}: {}", dir.display(), file.path)
                })?;
                create_parents(dir, &file.path)?;
                if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink())
                {
                    return Err(format!(
                        "refusing to write through the symbolic link {}",
                        path.display()
                    ));
                }
                std::fs::write(&path, &file.contents)
                    .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
                if *action == Action::Create {
                    created += 1;
                } else {
                    updated += 1;
                }
            }
            Action::Refuse => unreachable!("refusals return early"),
        }
    }
    let manifest_path = dir.join(MANIFEST);
    if std::fs::symlink_metadata(&manifest_path).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(format!(
            "refusing to write through the symbolic link {}",
            manifest_path.display()
        ));
    }
    std::fs::write(&manifest_path, manifest.render())
        .map_err(|error| format!("cannot write {}: {error}", manifest_path.display()))?;
    let mut summary = format!(
        "{}: {created} created, {updated} updated, {unchanged} unchanged",
        dir.display()
    );
    if !kept.is_empty() {
        summary.push_str(&format!(
            "; kept your business file{} {}",
            if kept.len() == 1 { "" } else { "s" },
            kept.join(", ")
        ));
    }
    summary.push('\n');
    let fresh: Vec<&str> = files
        .iter()
        .zip(&actions)
        .filter(|(file, action)| file.owner == Owner::User && **action == Action::Create)
        .map(|(file, _)| file.path.as_str())
        .collect();
    if !fresh.is_empty() {
        summary.push_str(&format!(
            "next: write the business logic in {} (each answers 501 until you do), then \
             `cargo run` in {}\n",
            fresh.join(", "),
            dir.display()
        ));
    }
    Ok(summary)
}

/// Creates the directories of `relative` under `dir` one at a time,
/// refusing a symbolic link on the way (it could lead out of `dir`).
fn create_parents(dir: &Path, relative: &str) -> Result<(), String> {
    let mut current = dir.to_path_buf();
    let parents: Vec<&str> = relative.split('/').collect();
    for component in &parents[..parents.len() - 1] {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "refusing to write {relative} outside {}: {} is a symbolic link",
                    dir.display(),
                    current.display()
                ));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a directory", current.display())),
            Err(_) => std::fs::create_dir(&current)
                .map_err(|error| format!("cannot create {}: {error}", current.display()))?,
        }
    }
    Ok(())
}

/// A Cargo package name from the directory name: lower-case letters,
/// digits, `-` and `_`, starting with a letter.
pub fn package_name(dir: &Path) -> String {
    let base = dir
        .canonicalize()
        .ok()
        .and_then(|dir| {
            dir.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .or_else(|| {
            dir.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let name = codegen::names::snake_case(&base).replace('_', "-");
    if name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name
    } else if name.is_empty() {
        "service".into()
    } else {
        format!("service-{name}")
    }
}

/// Whether an enclosing Cargo workspace lists `dir` as a member (then the
/// project must not declare a workspace of its own).
fn is_workspace_member(dir: &Path) -> bool {
    let absolute = match std::path::absolute(dir) {
        Ok(path) => crate::spec::normalize(&path),
        Err(_) => return false,
    };
    for ancestor in absolute.ancestors().skip(1) {
        let Ok(text) = std::fs::read_to_string(ancestor.join("Cargo.toml")) else {
            continue;
        };
        if !text.contains("[workspace]") {
            continue;
        }
        let Ok(relative) = absolute.strip_prefix(ancestor) else {
            return false;
        };
        let relative = relative.to_string_lossy().replace('\\', "/");
        return text.contains(&format!("\"{relative}\""));
    }
    false
}
