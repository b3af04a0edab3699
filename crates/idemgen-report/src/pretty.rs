//! The default output: miette diagnostics with the source snippet, the
//! offending value underlined, and what to do about it.

use std::fmt::Write as _;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan};

use super::excerpt::Excerpt;
use super::totals;
use idemgen_diagnostics::{Diagnostic, Report, Severity};

/// One finding as a miette diagnostic, with its file attached.
#[derive(Debug)]
struct Finding<'a> {
    diagnostic: &'a Diagnostic,
    source: Option<Excerpt>,
    /// Its related places, shown under it.
    related: Vec<RelatedPlace<'a>>,
}

/// A place related to a finding (where a shared key is declared), shown
/// as a note with its own snippet.
#[derive(Debug)]
struct RelatedPlace<'a> {
    related: &'a idemgen_diagnostics::Related,
    source: Option<Excerpt>,
}

impl std::fmt::Display for RelatedPlace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.related.message)
    }
}

impl std::error::Error for RelatedPlace<'_> {}

impl miette::Diagnostic for RelatedPlace<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(miette::Severity::Advice)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source
            .as_ref()
            .map(|source| source as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let excerpt = self.source.as_ref()?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some("declared here".into()),
            excerpt.span,
        ))))
    }
}

fn excerpt(report: &Report, location: &idemgen_diagnostics::Location) -> Option<Excerpt> {
    report.sources.get(&location.file).map(|text| {
        Excerpt::new(
            &location.file,
            text,
            location.offset,
            location.length,
            location.line,
            location.column,
        )
    })
}

impl std::fmt::Display for Finding<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.diagnostic.message)
    }
}

impl std::error::Error for Finding<'_> {}

impl miette::Diagnostic for Finding<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(self.diagnostic.rule))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.diagnostic
            .help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source
            .as_ref()
            .map(|source| source as &dyn miette::SourceCode)
    }

    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        if self.related.is_empty() {
            return None;
        }
        Some(Box::new(
            self.related
                .iter()
                .map(|place| place as &dyn miette::Diagnostic),
        ))
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let excerpt = self.source.as_ref()?;
        let label = self
            .diagnostic
            .label
            .clone()
            .or_else(|| Some("here".into()));
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            label,
            excerpt.span,
        ))))
    }
}

fn theme(color: bool) -> GraphicalTheme {
    if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    }
}

/// Whether to colour: a terminal, and `NO_COLOR` unset.
pub fn use_color(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

pub fn render(report: &Report, color: bool) -> String {
    let handler = GraphicalReportHandler::new_themed(theme(color))
        .with_context_lines(2)
        .with_width(100);
    let mut out = String::new();
    for diagnostic in &report.diagnostics {
        let finding = Finding {
            diagnostic,
            source: excerpt(report, &diagnostic.location),
            related: diagnostic
                .related
                .iter()
                .map(|related| RelatedPlace {
                    related,
                    source: excerpt(report, &related.location),
                })
                .collect(),
        };
        if handler.render_report(&mut out, &finding).is_err() {
            let _ = writeln!(out, "  {}", diagnostic.message);
        }
    }
    if report.diagnostics.len() > super::statistics::LONG_REPORT {
        let _ = writeln!(
            out,
            "{} (`idemgen lint --statistics` shows only the counts)",
            super::statistics::one_line(report)
        );
    }
    // The totals stay the last line: scripts read it.
    if let Some(line) = fixable(report) {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "{}{}", totals::summary(report), totals::notes(report));
    out
}

/// `2 fixable with `idemgen lint --fix` (1 more with `--unsafe-fixes`)`,
/// or `None` when no finding has a fix.
fn fixable(report: &Report) -> Option<String> {
    use idemgen_diagnostics::Applicability;
    let count = |applicability| {
        report
            .diagnostics
            .iter()
            .filter_map(|diagnostic| diagnostic.fix.as_ref())
            .filter(|fix| fix.applicability == applicability)
            .count()
    };
    let (safe, unsafe_only) = (count(Applicability::Safe), count(Applicability::Unsafe));
    match (safe, unsafe_only) {
        (0, 0) => None,
        (0, more) => Some(format!(
            "{more} fixable with `idemgen lint --fix --unsafe-fixes` (review the guesses)"
        )),
        (safe, 0) => Some(format!("{safe} fixable with `idemgen lint --fix`")),
        (safe, more) => Some(format!(
            "{safe} fixable with `idemgen lint --fix` ({more} more with `--unsafe-fixes`)"
        )),
    }
}

/// A file that could not be loaded, with a snippet when the place is known.
pub fn render_load_error(error: &idemgen_spec::LoadError, color: bool) -> String {
    let mut out = String::new();
    let plain = || {
        format!(
            "error: {}: {}\n  help: {}\n",
            error.file, error.message, error.help
        )
    };
    let (Some((offset, line, column)), Some(text)) = (error.location, &error.text) else {
        return plain();
    };
    let excerpt = Excerpt::new(&error.file, text, offset, 1, line, column);
    let label = LabeledSpan::new_with_span(Some("here".into()), excerpt.span);
    let diagnostic = miette::MietteDiagnostic::new(error.message.clone())
        .with_help(error.help.clone())
        .with_label(label);
    let report = miette::Report::new(diagnostic).with_source_code(excerpt);
    if GraphicalReportHandler::new_themed(theme(color))
        .with_width(100)
        .render_report(&mut out, report.as_ref())
        .is_err()
    {
        return plain();
    }
    out
}
