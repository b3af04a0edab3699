//! `idemgen lint`: load each spec, run the rules, report.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use super::{
    ColorChoice, EXIT_BAD_INPUT, EXIT_FINDINGS, LintArgs, LintFormat, print, print_load_error,
};
use crate::lint::LintOptions;
use crate::lint::diagnostic::Report;
use crate::report;
use crate::spec::Workspace;

pub fn run(args: &LintArgs) -> ExitCode {
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
    if report.files > 0 {
        print(&text);
    }
    if failed_to_load {
        ExitCode::from(EXIT_BAD_INPUT)
    } else if report.errors() > 0 || (args.deny_warnings && report.warnings() > 0) {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    }
}
