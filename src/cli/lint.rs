//! `idemgen lint`: read the configuration, load each spec, run the rules,
//! keep only new findings in pull-request mode, report.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::{
    ColorChoice, EXIT_BAD_INPUT, EXIT_FINDINGS, LintArgs, LintFormat, input, print,
    print_load_error,
};
use idemgen_diagnostics::{Diagnostic, LintedFile, LoadFailure, Report};
use idemgen_lint::fix_loop::{FixOutcome, fix_document, fix_document_through};
use idemgen_lint::fix_overlay::{append_fixes, overlay_fixes};
use idemgen_lint::{LintOptions, RULES, baseline};
use idemgen_spec::{Workspace, normalize_absolute};

pub fn run(args: &LintArgs) -> ExitCode {
    let config = match args.config.load() {
        Ok(config) => config,
        Err(code) => return code,
    };
    let options = options(args, config.lint_options());
    // With a fix flag, the last `--overlay` names where the fixes go; the
    // ones before it, else idemgen.toml's, are read.
    let fixing = args.fix || args.unsafe_fixes || args.diff;
    let overlay_out = match (fixing, args.config.overlays.as_slice()) {
        (true, [.., out]) if args.specs.len() == 1 => Some(out.as_path()),
        (true, [_, ..]) => {
            eprintln!(
                "error: --fix --overlay writes the fixes of one spec, but {} specs were given\n  help: run it once per spec, each with its own overlay file",
                args.specs.len()
            );
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        _ => None,
    };
    // What the spec is fixed and then linted through: the overlays read,
    // then the output itself whenever it exists, so a second run adds
    // only what is new.
    let fix_reads: Vec<PathBuf> = match overlay_out {
        Some(out) => {
            let (_, read) = args.config.overlays.split_last().expect("one at least");
            let read = if read.is_empty() {
                config.overlays_for(&args.specs[0])
            } else {
                read
            };
            let same = |path: &Path| normalize_absolute(path) == normalize_absolute(out);
            read.iter().filter(|path| !same(path)).cloned().collect()
        }
        None => Vec::new(),
    };
    let through_output = |out: &Path| -> Vec<PathBuf> {
        let output = out.is_file().then(|| out.to_path_buf());
        fix_reads.iter().cloned().chain(output).collect()
    };
    if args.statistics && !matches!(args.format, LintFormat::Pretty | LintFormat::Json) {
        eprintln!(
            "error: --statistics prints counts as text or JSON, but --format {} lists every finding\n  help: drop --statistics, or use it with --format json",
            format_name(args.format)
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
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
        rule_info: RULES.iter().map(|rule| rule.info()).collect(),
        ..Report::default()
    };
    let mut failed_to_load = false;
    if let Some(out) = overlay_out {
        match write_overlay(args, &options, &through_output(out), out) {
            Ok(Some(code)) => return code,
            Ok(None) => {}
            Err(code) => return code,
        }
    } else if fixing {
        match apply_fixes(args, &options) {
            Ok(Some(code)) => return code,
            Ok(None) => {}
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
    }
    for path in &args.specs {
        let overlays = match overlay_out {
            // What is left once the overlay just written is applied.
            Some(out) => through_output(out),
            None => args.config.overlays_for(&config, path).to_vec(),
        };
        let workspace = match input::load_spec_telling(path, &overlays) {
            Ok(workspace) => workspace,
            Err(error) => {
                failed_to_load = true;
                report.load_failures.push(LoadFailure {
                    file: error.file.clone(),
                    line: error.location.map(|(_, line, _)| line),
                    column: error.location.map(|(_, _, column)| column),
                    message: error.message.clone(),
                    help: error.help.clone(),
                });
                continue;
            }
        };
        let linted = idemgen_lint::lint(&workspace, &options);
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
        let files = diagnostics.iter().flat_map(|diagnostic| {
            std::iter::once(&diagnostic.location.file).chain(
                diagnostic
                    .related
                    .iter()
                    .map(|related| &related.location.file),
            )
        });
        for file in files {
            if !report.sources.contains_key(file) {
                if let Some(loaded) = workspace.file_named(file) {
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
        LintFormat::Pretty if args.statistics => idemgen_report::statistics::render_text(&report),
        LintFormat::Json if args.statistics => idemgen_report::statistics::render_json(&report),
        LintFormat::Json => idemgen_report::json::render(&report),
        LintFormat::Sarif => idemgen_report::sarif::render(&report),
        LintFormat::Github => idemgen_report::github::render(&report),
        LintFormat::Junit => idemgen_report::junit::render(&report),
        LintFormat::Markdown => idemgen_report::markdown::render(&report),
        LintFormat::Pretty => {
            let color = match args.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    args.output.is_none()
                        && idemgen_report::pretty::use_color(std::io::stdout().is_terminal())
                }
            };
            idemgen_report::pretty::render(&report, color)
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

/// `--fix` writes the fixed files and lets the lint below report what is
/// left; `--diff` prints what would change and decides the exit code
/// (`Some`). A spec that does not load is left to the lint to report.
fn apply_fixes(args: &LintArgs, options: &LintOptions) -> Result<Option<ExitCode>, String> {
    let mut changed = 0;
    let mut unloadable = false;
    for path in &args.specs {
        let Ok(outcome) = fix_document(path, options, args.unsafe_fixes) else {
            unloadable = true;
            continue;
        };
        warn_of_unfinished_and_broken(path, &outcome);
        changed += outcome.files.len();
        if args.diff {
            for file in &outcome.files {
                print(&idemgen_lint::diff::unified(file));
            }
            continue;
        }
        for file in &outcome.files {
            write_keeping_bom(&file.path, &file.after)
                .map_err(|error| format!("cannot write {}: {error}", file.display))?;
        }
        if outcome.applied > 0 {
            eprintln!(
                "fixed {} finding{} in {} file{}",
                outcome.applied,
                plural(outcome.applied),
                outcome.files.len(),
                plural(outcome.files.len())
            );
        }
    }
    if !args.diff {
        return Ok(None);
    }
    Ok(Some(if unloadable {
        let _ = args.specs.iter().try_for_each(|path| {
            Workspace::load(path)
                .map(drop)
                .map_err(|error| print_load_error(&error))
        });
        ExitCode::from(EXIT_BAD_INPUT)
    } else if changed > 0 {
        ExitCode::from(EXIT_FINDINGS)
    } else {
        ExitCode::SUCCESS
    }))
}

/// Says when fixing stopped with fixes left, and which fixes were left out
/// because the text they wrote did not load (their findings stay).
fn warn_of_unfinished_and_broken(path: &Path, outcome: &FixOutcome) {
    if outcome.unfinished {
        eprintln!(
            "warning: {}: fixes were still left after 10 rounds; some undo others",
            path.display()
        );
    }
    for broken in &outcome.broken {
        eprintln!(
            "warning: {broken}\n  help: this is a fault in idemgen's fix, not in the spec; please report it with the file, and fix this finding by hand"
        );
    }
}

/// `--fix --overlay OUT`: the fixes of the one spec, read through
/// `inputs` (the overlays before OUT, then OUT itself when it exists),
/// written to OUT as an Overlay document, the spec untouched. An existing
/// OUT keeps its text and gets the new actions appended. With `--diff`,
/// what would change in OUT, and nothing written (`Some` exit code then).
fn write_overlay(
    args: &LintArgs,
    options: &LintOptions,
    inputs: &[PathBuf],
    out: &Path,
) -> Result<Option<ExitCode>, ExitCode> {
    let spec = &args.specs[0];
    let bad_input = |error: Box<idemgen_spec::LoadError>| {
        print_load_error(&error);
        ExitCode::from(EXIT_BAD_INPUT)
    };
    let outcome =
        fix_document_through(spec, inputs, options, args.unsafe_fixes).map_err(bad_input)?;
    warn_of_unfinished_and_broken(spec, &outcome);
    let display = out.display().to_string();
    let existing = if out.is_file() {
        match std::fs::read_to_string(out) {
            Ok(text) => Some(text),
            Err(error) => {
                eprintln!("error: cannot read {display}: {error}");
                return Err(ExitCode::from(EXIT_BAD_INPUT));
            }
        }
    } else {
        None
    };
    let overlay = match &existing {
        None => overlay_fixes(spec, &outcome, out).map_err(bad_input)?,
        Some(text) => match append_fixes(spec, &outcome, out, text) {
            Ok(overlay) => overlay,
            Err(why) => {
                eprintln!(
                    "error: {display} already exists and the new fixes cannot be added to it: {why}\n  help: {display} is left as it is; move `actions` to the end of it as a block list, or write the new fixes to an overlay of their own: idemgen lint --fix{} --overlay {display} --overlay NEW.yaml {}",
                    if args.unsafe_fixes {
                        " --unsafe-fixes"
                    } else {
                        ""
                    },
                    spec.display()
                );
                return Err(ExitCode::from(EXIT_BAD_INPUT));
            }
        },
    };
    for file in &overlay.left_out {
        eprintln!(
            "warning: the fixes to {file}, which the spec references, are not in the overlay: an overlay changes the root document only\n  help: bundle the spec into one file first, or fix {file} with --fix without --overlay"
        );
    }
    if overlay.actions == 0 {
        if args.diff {
            return Ok(Some(ExitCode::SUCCESS));
        }
        match existing {
            Some(_) => eprintln!(
                "nothing new to fix in {} through {display}; {display} is unchanged",
                spec.display()
            ),
            None => eprintln!(
                "nothing to fix in {}; {display} is not written",
                spec.display()
            ),
        }
        return Ok(None);
    }
    if args.diff {
        let before = existing.unwrap_or_default();
        if before == overlay.text {
            return Ok(Some(ExitCode::SUCCESS));
        }
        print(&idemgen_lint::diff::unified_text(
            &display,
            &before,
            &overlay.text,
        ));
        return Ok(Some(ExitCode::from(EXIT_FINDINGS)));
    }
    if let Err(error) = std::fs::write(out, &overlay.text) {
        eprintln!("error: cannot write {display}: {error}");
        return Err(ExitCode::from(EXIT_BAD_INPUT));
    }
    eprintln!(
        "{} {} fix{} as {} overlay action{} to {display}; {} is unchanged",
        if existing.is_some() { "added" } else { "wrote" },
        outcome.applied,
        if outcome.applied == 1 { "" } else { "es" },
        overlay.actions,
        plural(overlay.actions),
        spec.display()
    );
    Ok(None)
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Writes `text`, with the byte-order mark the file had (the loader drops
/// it), so only the fixed ranges change.
fn write_keeping_bom(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Read;
    let mut head = [0u8; 3];
    let had_bom = std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok()
        && head == [0xEF, 0xBB, 0xBF];
    let mut bytes = Vec::with_capacity(text.len() + 3);
    if had_bom {
        bytes.extend_from_slice(&head);
    }
    bytes.extend_from_slice(text.as_bytes());
    std::fs::write(path, bytes)
}

/// The `--format` value as typed.
fn format_name(format: LintFormat) -> String {
    use clap::ValueEnum;
    format
        .to_possible_value()
        .map_or_else(String::new, |value| value.get_name().to_string())
}

/// The configuration file's options with the command line's over them.
fn options(args: &LintArgs, mut options: LintOptions) -> LintOptions {
    if let Some(profile) = args.profile {
        options.defaults.profile = Some(profile);
    }
    if let Some(dialect) = args.dialect {
        options.defaults.dialect = Some(dialect);
    }
    for (id, severity) in &args.severities {
        options.severities.insert(id.clone(), *severity);
    }
    let fix_defaults = &mut options.fix_defaults;
    if let Some(timeout) = args.timeout {
        fix_defaults.timeout_ms = Some(timeout);
    }
    if let Some(retries) = &args.retries {
        fix_defaults.retries_ms = Some(retries.0.clone());
    }
    if let Some(max_processing) = args.max_processing {
        fix_defaults.max_processing_ms = Some(max_processing);
    }
    fix_defaults.dialect = options.defaults.dialect.filter(|_| args.dialect.is_some());
    options
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
    Ok(Some(idemgen_lint::lint(&old, options).diagnostics))
}
