//! Commands and flags; each command (one file each) loads, runs one
//! consumer and prints.

mod ddl;
#[path = "gen.rs"]
mod generate;
mod input;
mod lint;
mod probe;
mod rules;
mod uncontracted;
mod values;
mod window;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use idemgen_spec::LoadError;
use idemgen_spec::contract::duration::parse_duration;
use idemgen_spec::contract::model::Dialect;
use idemgen_spec::contract::profile::Profile;

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
    /// Scaffold an axum + sqlx service that serves the spec's operations.
    Gen(generate::GenArgs),
    /// Print the idempotency record table's DDL.
    Ddl(ddl::DdlArgs),
    /// Attack a running service's idempotent operations (bursts, replays,
    /// changed bodies, bad keys) and report which promises hold.
    Probe(Box<probe::ProbeArgs>),
    /// Serve the Language Server Protocol on stdio: diagnostics, window
    /// math on hover, fixes as code actions, completion, go to `$ref`.
    Lsp,
    /// Print shell completions.
    Completions {
        /// The shell to print them for.
        shell: clap_complete::Shell,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
pub enum LintFormat {
    /// Diagnostics with source snippets (the default).
    Pretty,
    /// One JSON object: diagnostics and a summary.
    Json,
    /// SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions annotations (`::error file=…,line=…::…`).
    Github,
    /// JUnit XML: one testcase per operation and rule.
    Junit,
    /// A Markdown summary for a pull-request comment.
    Markdown,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(clap::Args)]
#[command(mut_arg("overlays", |arg| arg.help(LINT_OVERLAY_HELP)))]
pub struct LintArgs {
    /// OpenAPI 3.0/3.1/3.2 documents (YAML or JSON); referenced files are read too.
    #[arg(required = true)]
    pub specs: Vec<PathBuf>,
    /// Apply the safe fixes in place (then report what is left); with
    /// --overlay FILE, write them to FILE as an OpenAPI Overlay 1.1
    /// document and leave the spec as it is.
    #[arg(long)]
    pub fix: bool,
    /// Also apply the unsafe fixes, which guess at the API (a key format,
    /// a new required header); implies --fix unless --diff is given.
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print what the fixes would change as a unified diff and write
    /// nothing, even with --fix; exit 1 when there is something to change.
    #[arg(long)]
    pub diff: bool,
    /// Client timeout an unsafe fix writes into a new contract where the
    /// spec states none [default: a `TODO:` placeholder, an error until filled in].
    #[arg(long, value_parser = duration_arg, value_name = "D")]
    pub timeout: Option<u64>,
    /// Retry delays an unsafe fix writes into a new contract where the
    /// spec states none [default: a `TODO:` placeholder].
    #[arg(long, value_parser = retries_arg, allow_hyphen_values = true, value_name = "D,D,...")]
    pub retries: Option<Retries>,
    /// Worst server processing time an unsafe fix writes into a new
    /// contract where the spec states none [default: a `TODO:` placeholder].
    #[arg(long, value_parser = duration_arg, value_name = "D")]
    pub max_processing: Option<u64>,
    #[arg(long, value_enum, default_value = "pretty")]
    pub format: LintFormat,
    /// Exit 1 on warnings too.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Print how many findings each rule produced (most first) instead of
    /// the findings; with --format json, as JSON.
    #[arg(long)]
    pub statistics: bool,
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// Write the report to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub config: input::ConfigArgs,
    /// Default status-code profile (overrides idemgen.toml).
    #[arg(long, value_parser = values::profile())]
    pub profile: Option<Profile>,
    /// Default store.dialect (overrides idemgen.toml; mariadb is mysql);
    /// unsafe fixes also write it into a new document-level block.
    #[arg(long, value_parser = values::dialect())]
    pub dialect: Option<Dialect>,
    /// Set a rule's severity: RULE=error|warning|info|off (repeatable;
    /// overrides idemgen.toml).
    #[arg(long = "severity", value_name = "RULE=LEVEL", value_parser = rule_level_arg)]
    pub severities: Vec<(String, Option<idemgen_diagnostics::Severity>)>,
    /// Report only findings this older version of the spec did not have
    /// (matched by rule, operation and JSON pointer, not by line).
    #[arg(long, value_name = "OLD_SPEC", conflicts_with = "since")]
    pub baseline: Option<PathBuf>,
    /// Like --baseline, with the old version of each spec read from git at
    /// this revision (`git show REF:path`); referenced files come from the
    /// working tree.
    #[arg(long, value_name = "GITREF")]
    pub since: Option<String>,
}

/// `--overlay` as lint reads it: what every command does with it, and
/// what `--fix` does with it.
const LINT_OVERLAY_HELP: &str = "Apply this OpenAPI Overlay document (1.0 or 1.1) to the spec before \
reading it; repeat to apply several, in order. Replaces what idemgen.toml's [overlays] lists. \
With --fix: the last --overlay is the file the fixes are written to, as an overlay, instead of editing \
the spec; the ones before it are read. A file that exists is read too, kept, and gets only the new fixes.";

fn rule_level_arg(text: &str) -> Result<(String, Option<idemgen_diagnostics::Severity>), String> {
    idemgen_lint::config::parse_rule_level(text)
}

#[derive(Clone, Copy, ValueEnum)]
pub enum WindowFormat {
    Table,
    Markdown,
    Json,
    Svg,
}

#[derive(clap::Args)]
pub struct WindowArgs {
    /// OpenAPI 3.0/3.1/3.2 document (YAML or JSON) whose contracts' windows
    /// to show.
    pub spec: PathBuf,
    /// Only these operations (operationId, or `METHOD /path`).
    #[arg(long = "op")]
    pub operations: Vec<String>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: WindowFormat,
    /// What if the client timeout were this (e.g. 10s)?
    #[arg(long, value_parser = duration_arg)]
    pub timeout: Option<u64>,
    /// What if the retry delays were these (e.g. 200ms,800ms; empty for none)?
    #[arg(long, value_parser = retries_arg, allow_hyphen_values = true)]
    pub retries: Option<Retries>,
    /// What if the worst server processing time were this?
    #[arg(long, value_parser = duration_arg)]
    pub max_processing: Option<u64>,
    /// Show only the operations whose window check fails (too short, or
    /// not decidable because an input is missing).
    #[arg(long)]
    pub only_failing: bool,
    #[command(flatten)]
    pub config: input::ConfigArgs,
}

#[derive(Clone)]
pub struct Retries(pub Vec<u64>);

fn duration_arg(text: &str) -> Result<u64, String> {
    parse_duration(text)
}

/// `200ms,800ms`; an empty text is no retries, an empty item a mistake.
fn retries_arg(text: &str) -> Result<Retries, String> {
    if text.trim().is_empty() {
        return Ok(Retries(Vec::new()));
    }
    text.split(',')
        .map(str::trim)
        .map(|part| match part {
            "" => Err(format!(
                "`{text}` has an empty delay between commas; write the delays like `200ms,800ms`, or `''` for no retries"
            )),
            part => parse_duration(part),
        })
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
        Command::Lint(args) => lint::run(&args),
        Command::Window(args) => window::run(&args),
        Command::Rule { id } => rules::explain(&id),
        Command::Rules => rules::list(),
        Command::Gen(args) => generate::run(&args),
        Command::Ddl(args) => ddl::run(&args),
        Command::Probe(args) => probe::run(&args),
        Command::Lsp => idemgen_lsp::run(),
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

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub(crate) fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

pub(crate) fn print_load_error(error: &LoadError) {
    let color = idemgen_report::pretty::use_color(std::io::stderr().is_terminal());
    // A closed stderr is no reason to panic.
    let _ = std::io::stderr()
        .write_all(idemgen_report::pretty::render_load_error(error, color).as_bytes());
}
