//! Commands and flags; each command loads, runs one consumer and prints.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::contract::duration::parse_duration;
use crate::contract::model::Defaults;
use crate::lint::context::ContractState;
use crate::lint::diagnostic::Report;
use crate::lint::{LintOptions, RULES, analyse};
use crate::report;
use crate::spec::{LoadError, Workspace};
use crate::window::render::WindowRow;

#[derive(Parser)]
#[command(name = "idemgen", version, about = "Make API idempotency a checked contract", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check the x-idempotency contract of every operation.
    Lint(LintArgs),
    /// Show the window math per operation, for review.
    Window(WindowArgs),
    /// Explain one rule: what it checks, why, and an example fix.
    Rule {
        /// Rule id, e.g. window-too-short.
        id: String,
    },
    /// List every rule with its default severity.
    Rules,
    /// Print shell completions.
    Completions { shell: clap_complete::Shell },
}

#[derive(Clone, Copy, ValueEnum)]
enum LintFormat {
    Pretty,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
struct LintArgs {
    /// OpenAPI 3.0/3.1 documents (YAML or JSON); referenced files are read too.
    #[arg(required = true)]
    specs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "pretty")]
    format: LintFormat,
    /// Exit 1 on warnings too.
    #[arg(long)]
    deny_warnings: bool,
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorChoice,
}

#[derive(Clone, Copy, ValueEnum)]
enum WindowFormat {
    Table,
    Markdown,
    Json,
    Svg,
}

#[derive(clap::Args)]
struct WindowArgs {
    spec: PathBuf,
    /// Only these operations (operationId, or `METHOD /path`).
    #[arg(long = "op")]
    operations: Vec<String>,
    #[arg(long, value_enum, default_value = "table")]
    format: WindowFormat,
    /// What if the client timeout were this (e.g. 10s)?
    #[arg(long, value_parser = duration_arg)]
    timeout: Option<u64>,
    /// What if the retry delays were these (e.g. 200ms,800ms; empty for none)?
    #[arg(long, value_parser = retries_arg, allow_hyphen_values = true)]
    retries: Option<Retries>,
    /// What if the worst server processing time were this?
    #[arg(long, value_parser = duration_arg)]
    max_processing: Option<u64>,
}

#[derive(Clone)]
struct Retries(Vec<u64>);

fn duration_arg(text: &str) -> Result<u64, String> {
    parse_duration(text)
}

fn retries_arg(text: &str) -> Result<Retries, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(parse_duration)
        .collect::<Result<Vec<_>, _>>()
        .map(Retries)
}

/// Exit codes: 0 clean, 1 findings, 2 bad usage or input.
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                0
            });
        }
    };
    match cli.command {
        Command::Lint(args) => lint(&args),
        Command::Window(args) => window(&args),
        Command::Rule { id } => explain_rule(&id),
        Command::Rules => list_rules(),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "idemgen",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
    }
}

fn lint(args: &LintArgs) -> ExitCode {
    let options = LintOptions::default();
    let mut report = Report::default();
    let mut failed_to_load = false;
    for path in &args.specs {
        let workspace = match Workspace::load(path) {
            Ok(workspace) => workspace,
            Err(error) => {
                print_load_error(&error);
                failed_to_load = true;
                continue;
            }
        };
        let linted = crate::lint::lint(&workspace, &options);
        report.files += 1;
        report.operations += linted.operations;
        for diagnostic in &linted.diagnostics {
            let file = &diagnostic.location.file;
            if !report.sources.contains_key(file) {
                if let Some(loaded) = workspace.files.iter().find(|f| &f.source.display == file) {
                    report
                        .sources
                        .insert(file.clone(), Arc::from(loaded.source.text.as_str()));
                }
            }
        }
        report.diagnostics.extend(linted.diagnostics);
    }
    let text = match args.format {
        LintFormat::Json => report::json::render(&report),
        LintFormat::Pretty => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => report::pretty::use_color(std::io::stdout().is_terminal()),
            };
            report::pretty::render(&report, color)
        }
    };
    print(&text);
    if failed_to_load {
        ExitCode::from(EXIT_BAD_INPUT)
    } else if report.errors() > 0 || (args.deny_warnings && report.warnings() > 0) {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    }
}

fn window(args: &WindowArgs) -> ExitCode {
    let workspace = match Workspace::load(&args.spec) {
        Ok(workspace) => workspace,
        Err(error) => {
            print_load_error(&error);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let analysis = analyse(&workspace, Defaults::default());
    let mut rows = Vec::new();
    for (operation, (state, _)) in analysis.operations.iter().zip(&analysis.states) {
        let ContractState::Present(contract) = state else {
            continue;
        };
        let name = operation.name();
        let path_name = format!("{} {}", operation.method, operation.path);
        if !args.operations.is_empty()
            && !args
                .operations
                .iter()
                .any(|wanted| *wanted == name || *wanted == path_name)
        {
            continue;
        }
        let inputs = crate::lint::rules::window_too_short::inputs(contract).with_overrides(
            args.timeout,
            args.retries.clone().map(|retries| retries.0),
            args.max_processing,
        );
        rows.push(WindowRow::new(
            name,
            operation.method.clone(),
            operation.path.clone(),
            inputs,
        ));
    }
    if rows.is_empty() && !args.operations.is_empty() {
        eprintln!(
            "error: no operation with an x-idempotency contract matches {} in {}",
            args.operations.join(", "),
            args.spec.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let text = match args.format {
        WindowFormat::Table => crate::window::render::table(&rows),
        WindowFormat::Markdown => crate::window::render::markdown(&rows),
        WindowFormat::Json => {
            let mut text = serde_json::to_string_pretty(&crate::window::render::json(&rows))
                .expect("JSON values always serialise");
            text.push('\n');
            text
        }
        WindowFormat::Svg => crate::window::svg::svg(&rows),
    };
    print(&text);
    ExitCode::SUCCESS
}

fn explain_rule(id: &str) -> ExitCode {
    match crate::lint::rule(id) {
        Some(rule) => {
            print(&format!(
                "{}\n\nDefault severity: {}\n",
                rule.docs(),
                rule.severity.as_str()
            ));
            ExitCode::SUCCESS
        }
        None => {
            let suggestion =
                crate::contract::suggest::closest(id, RULES.iter().map(|rule| rule.id))
                    .map(|name| format!(" Did you mean `{name}`?"))
                    .unwrap_or_default();
            eprintln!(
                "error: there is no rule `{id}`.{suggestion} `idemgen rules` lists them all."
            );
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn list_rules() -> ExitCode {
    let width = RULES.iter().map(|rule| rule.id.len()).max().unwrap_or(0);
    let mut text = String::new();
    for rule in RULES {
        text.push_str(&format!(
            "{:width$}  {:7}  {}\n",
            rule.id,
            rule.severity.as_str(),
            rule.summary
        ));
    }
    print(&text);
    ExitCode::SUCCESS
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

fn print_load_error(error: &LoadError) {
    let color = report::pretty::use_color(std::io::stderr().is_terminal());
    eprint!("{}", report::pretty::render_load_error(error, color));
}
