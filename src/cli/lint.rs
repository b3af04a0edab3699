//! `idemgen lint`: read the configuration, load each spec, run the rules,
//! keep only new findings in pull-request mode, report.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::{
    ColorChoice, DialectArg, EXIT_BAD_INPUT, EXIT_FINDINGS, LintArgs, LintFormat, ProfileArg,
    print, print_load_error,
};
use crate::config::{self, Config};
use crate::contract::model::Dialect;
use crate::contract::profile::Profile;
use crate::lint::diagnostic::{Diagnostic, LintedFile, Report};
use crate::lint::{LintOptions, RULES, baseline};
use crate::report;
use crate::spec::Workspace;

pub fn run(args: &LintArgs) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    if args.baseline.is_some() && args.specs.len() != 1 {
        eprintln!(
            "error: --baseline compares one spec with its old version, but {} specs were given\n  help: lint them one at a time, or use --since GITREF, which finds each spec's old version in git",
            args.specs.len()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let mut report = Report {
        rules: RULES
            .iter()
            .filter(|rule| !matches!(options.severities.get(rule.id), Some(None)))
            .map(|rule| rule.id)
            .collect(),
        ..Report::default()
    };
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
        let mut diagnostics = linted.diagnostics;
        match old_findings(args, path, &options) {
            Ok(Some(old)) => {
                let (fresh, matched) = baseline::new_findings(&old, diagnostics);
                diagnostics = fresh;
                report.baseline_matched += matched;
            }
            Ok(None) => {}
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
        report.files += 1;
        report.operations += linted.operations;
        report.suppressed += linted.suppressed;
        for diagnostic in &diagnostics {
            let file = &diagnostic.location.file;
            if !report.sources.contains_key(file) {
                if let Some(loaded) = workspace.files.iter().find(|f| &f.source.display == file) {
                    report
                        .sources
                        .insert(file.clone(), Arc::from(loaded.source.text.as_str()));
                }
            }
        }
        let start = report.diagnostics.len();
        report.diagnostics.extend(diagnostics);
        report.linted.push(LintedFile {
            file: workspace.files[0].source.display.clone(),
            operations: linted.operation_names,
            findings: start..report.diagnostics.len(),
        });
    }
    let text = match args.format {
        LintFormat::Json => report::json::render(&report),
        LintFormat::Sarif => report::sarif::render(&report),
        LintFormat::Github => report::github::render(&report),
        LintFormat::Junit => report::junit::render(&report),
        LintFormat::Markdown => report::markdown::render(&report),
        LintFormat::Pretty => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    args.output.is_none()
                        && report::pretty::use_color(std::io::stdout().is_terminal())
                }
            };
            report::pretty::render(&report, color)
        }
    };
    // Machine-readable formats always print a document, even when no file
    // loaded; the pretty summary would only repeat the errors above.
    if report.files > 0 || !matches!(args.format, LintFormat::Pretty) {
        match &args.output {
            Some(output) => {
                if let Err(error) = std::fs::write(output, &text) {
                    eprintln!("error: cannot write {}: {error}", output.display());
                    return ExitCode::from(EXIT_BAD_INPUT);
                }
            }
            None => print(&text),
        }
    }
    if failed_to_load {
        ExitCode::from(EXIT_BAD_INPUT)
    } else if report.errors() > 0 || (args.deny_warnings && report.warnings() > 0) {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    }
}

/// The configuration file's options with the command line's over them.
fn options(args: &LintArgs) -> Result<LintOptions, String> {
    let config = if args.no_config {
        Config::default()
    } else if let Some(path) = &args.config {
        config::load(path).map_err(|error| error.to_string())?
    } else {
        config::for_working_directory().map_err(|error| error.to_string())?
    };
    let mut options = config.lint_options();
    if let Some(profile) = args.profile {
        options.defaults.profile = Some(match profile {
            ProfileArg::RetryAfter => Profile::RetryAfter,
            ProfileArg::IetfDraft => Profile::IetfDraft,
            ProfileArg::Stripe => Profile::Stripe,
        });
    }
    if let Some(dialect) = args.dialect {
        options.defaults.dialect = Some(match dialect {
            DialectArg::Mysql => Dialect::Mysql,
            DialectArg::Postgres => Dialect::Postgres,
            DialectArg::Sqlite => Dialect::Sqlite,
        });
    }
    for (id, severity) in &args.severities {
        options.severities.insert(id.clone(), *severity);
    }
    Ok(options)
}

/// The old version's findings in pull-request mode; `None` without
/// `--baseline`/`--since`.
fn old_findings(
    args: &LintArgs,
    path: &Path,
    options: &LintOptions,
) -> Result<Option<Vec<Diagnostic>>, String> {
    let old = if let Some(old_path) = &args.baseline {
        Workspace::load(old_path).map_err(|error| {
            print_load_error(&error);
            format!("cannot read the baseline {}", old_path.display())
        })?
    } else if let Some(reference) = &args.since {
        let Some(text) = baseline::git_show(path, reference)? else {
            // The file is new since REF: everything in it is new.
            return Ok(Some(Vec::new()));
        };
        let display = format!("{reference}:{}", path.display());
        match Workspace::from_text(path, display.clone(), text) {
            Ok(workspace) => workspace,
            Err(error) => {
                print_load_error(&error);
                eprintln!("warning: {display} could not be read, so every finding counts as new");
                return Ok(Some(Vec::new()));
            }
        }
    } else {
        return Ok(None);
    };
    Ok(Some(crate::lint::lint(&old, options).diagnostics))
}
