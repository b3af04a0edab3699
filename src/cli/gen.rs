//! `idemgen gen`: scaffold the axum + sqlx service of a spec.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::input::{self, ConfigArgs};
use super::uncontracted::{self, shell_word};
use super::{EXIT_BAD_INPUT, EXIT_FINDINGS, print};
use idemgen_codegen::write::{Written, is_workspace_member, write};
use idemgen_codegen::{self, names::package_name};
use idemgen_diagnostics::{Report, Severity};
use idemgen_spec::contract::model::Dialect;

#[derive(clap::Args)]
pub struct GenArgs {
    /// OpenAPI 3.0/3.1/3.2 document (YAML or JSON) with x-idempotency contracts.
    pub spec: PathBuf,
    /// Directory of the generated project (created if missing).
    #[arg(short, long)]
    pub output: PathBuf,
    /// SQL dialect the project is built for (mariadb is mysql); else the
    /// spec's store.dialect, else idemgen.toml's, else sqlite. Several,
    /// comma-separated (`sqlite,mysql,postgres`), give one Cargo feature
    /// each, the first being the default build.
    #[arg(long, value_parser = super::values::dialect(), value_delimiter = ',')]
    pub db: Vec<Dialect>,
    /// Directory of templates that replace the embedded ones (same names).
    #[arg(long)]
    pub templates: Option<PathBuf>,
    /// Overwrite files idemgen did not write, or that were changed since.
    #[arg(long)]
    pub force: bool,
    /// Cargo package name (default: the output directory's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Depend on the idemgen-runtime crate at this path (relative to the
    /// output directory) instead of writing a copy to vendor/idemgen-runtime.
    #[arg(long, value_name = "DIR")]
    pub runtime_path: Option<String>,
    /// Where you publish ops/prometheus/runbook.md (its URL, no `#`): each
    /// alert's runbook_url is this and `#` its section. Without it, the
    /// file's path in the project.
    #[arg(long, value_name = "URL", value_parser = runbook_url, conflicts_with = "client")]
    pub runbook_url: Option<String>,
    /// The `job` label Prometheus gives this service's series (its scrape
    /// job's name): every alert rule selects it, so two services in one
    /// Prometheus never share an alert. Default: idemgen.toml's `[gen]
    /// job`, else the package name.
    #[arg(long, value_name = "NAME", value_parser = job_label, conflicts_with = "client")]
    pub job: Option<String>,
    /// Write a Rust client crate (reqwest, tokio) instead of the service:
    /// one async method per operation, idempotent ones retried with one key
    /// on the schedule their contract's window was checked against.
    #[arg(long, conflicts_with_all = ["db", "runtime_path"])]
    pub client: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn run(args: &GenArgs) -> ExitCode {
    let (workspace, config) = match input::open(&args.spec, &args.config) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let linted = idemgen_lint::lint(&workspace, &config.lint_options());
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
        let color = idemgen_report::pretty::use_color(std::io::stderr().is_terminal());
        eprint!("{}", idemgen_report::pretty::render(&report, color));
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
    let options = idemgen_codegen::Options {
        dialects: args.db.clone(),
        templates: args.templates.clone(),
        package,
        standalone: !is_workspace_member(&args.output),
        defaults: config.defaults,
        runtime_path: args.runtime_path.clone(),
        runbook_url: args.runbook_url.clone(),
        job: args.job.clone().or_else(|| config.gen_job.clone()),
        spec: args
            .spec
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| args.spec.display().to_string()),
    };
    if args.client {
        return write_client(args, &workspace, &options);
    }
    let project = match idemgen_codegen::plan(&workspace, &options) {
        Ok(project) => project,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    for warning in &project.warnings {
        eprintln!("warning: {warning}");
    }
    let orphans = idemgen_codegen::orphans::find(&args.output, &project.business);
    if !orphans.is_empty() && !args.force {
        eprintln!(
            "error: regenerating would drop {} of your business files from \
             src/business/mod.rs; nothing was written (paths in {}):",
            orphans.len(),
            args.output.display()
        );
        for orphan in &orphans {
            eprintln!("  {}", orphan.describe());
        }
        eprintln!(
            "  (pass --force to regenerate without {}: the files stay, uncompiled)",
            if orphans.len() == 1 { "it" } else { "them" }
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    for orphan in &orphans {
        eprintln!(
            "warning: kept {} but no longer compiled (--force): {}",
            orphan.file,
            orphan.describe()
        );
    }
    match write(&args.output, &project.files, args.force) {
        Ok(written) => {
            print(&summary(&args.output, &written));
            if let Some(note) = uncontracted::note(
                &args.spec,
                &args.output,
                args.config.overlays_for(&config, &args.spec),
                &workspace,
                config.defaults,
                &linted.diagnostics,
            ) {
                print(&note);
            }
            if project.secured && written.fresh.iter().any(|path| path == "src/auth.rs") {
                print(
                    "next: verify credentials in src/auth.rs (operations with a `security` \
                     requirement answer 401 until you do)\n",
                );
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// `gen --client`: the client crate, written like the service.
fn write_client(
    args: &GenArgs,
    workspace: &idemgen_spec::Workspace,
    options: &idemgen_codegen::Options,
) -> ExitCode {
    let planned = match idemgen_codegen::client::plan(workspace, options) {
        Ok(planned) => planned,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    for warning in &planned.warnings {
        eprintln!("warning: {warning}");
    }
    match write(&args.output, &planned.files, args.force) {
        Ok(written) => {
            print(&summary(&args.output, &written));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// What `gen` did, for the user: counts, then what to do next.
fn summary(dir: &Path, written: &Written) -> String {
    let mut summary = format!(
        "{}: {} created, {} updated, {} unchanged",
        dir.display(),
        written.created,
        written.updated,
        written.unchanged
    );
    if !written.removed.is_empty() {
        summary.push_str(&format!(", {} removed", written.removed.len()));
    }
    // Only business files are news: `src/app.rs` is kept quietly.
    let business = |files: &[String]| -> Vec<String> {
        files
            .iter()
            .filter(|path| path.starts_with("src/business/"))
            .cloned()
            .collect()
    };
    let kept = &business(&written.kept);
    if kept.len() > LISTED_IN_FULL {
        summary.push_str(&format!(
            "; kept your {} business files{}",
            kept.len(),
            shared_folder(kept)
                .map(|folder| format!(" in {folder}/"))
                .unwrap_or_default()
        ));
    } else if !kept.is_empty() {
        summary.push_str(&format!(
            "; kept your business file{} {}",
            if kept.len() == 1 { "" } else { "s" },
            kept.join(", ")
        ));
    }
    summary.push('\n');
    if !written.stale.is_empty() {
        summary.push_str(&format!(
            "note: idemgen no longer generates {}, which you changed; delete {} when done with {}\n",
            written.stale.join(", "),
            if written.stale.len() == 1 { "it" } else { "them" },
            if written.stale.len() == 1 { "it" } else { "them" },
        ));
    }
    summary.push_str(&next_steps(dir, &business(&written.fresh)));
    summary
}

/// Up to this many new business files are named one by one; more are
/// summarised, so a spec with hundreds of operations gets a short hint.
const LISTED_IN_FULL: usize = 5;

/// How many of a long list the summary names before `and N more`.
const LISTED_IN_SUMMARY: usize = 3;

/// What to do after generating: which new business files to fill in.
fn next_steps(dir: &Path, fresh: &[String]) -> String {
    if fresh.is_empty() {
        return String::new();
    }
    if fresh.len() <= LISTED_IN_FULL {
        return format!(
            "next: write the business logic in {} (each answers 501 until you do), then \
             `cargo run` in {}\n",
            fresh.join(", "),
            dir.display()
        );
    }
    let folder = match shared_folder(fresh) {
        Some(folder) => dir.join(folder),
        None => dir.to_path_buf(),
    };
    format!(
        "next: write the business logic of {count} operations, one file each in {folder}/ \
         (each answers 501 until you do):\n  \
         {first} and {rest} more\n  \
         list the ones still answering 501: grep -rl 'NotImplemented(' {listed}\n\
         then `cargo run` in {dir}\n",
        count = fresh.len(),
        folder = folder.display(),
        first = fresh[..LISTED_IN_SUMMARY].join(", "),
        rest = fresh.len() - LISTED_IN_SUMMARY,
        listed = shell_word(&folder.display().to_string()),
        dir = dir.display(),
    )
}

/// The folder all `files` are in (`src/business`), if they share one.
fn shared_folder(files: &[String]) -> Option<&str> {
    fn parent(file: &str) -> Option<&str> {
        file.rsplit_once('/').map(|(parent, _)| parent)
    }
    let first = parent(files.first()?)?;
    files
        .iter()
        .all(|file| parent(file) == Some(first))
        .then_some(first)
}

/// `--job`: a Prometheus label value written into the rules' selectors.
fn job_label(value: &str) -> Result<String, String> {
    idemgen_lint::config::check_job_label(value)?;
    Ok(value.to_string())
}

/// `--runbook-url`: the address of the file, to which each alert adds its
/// `#section`.
fn runbook_url(value: &str) -> Result<String, String> {
    if value.is_empty() || value.contains(['#', '"', '\\']) || value.contains(char::is_whitespace) {
        return Err(
            "the address of runbook.md itself, without `#`, quotes or spaces; each alert adds \
             its `#section`"
                .to_string(),
        );
    }
    Ok(value.to_string())
}
