//! `idemgen window`: the window math per operation, with what-if inputs.

use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, WindowArgs, WindowFormat, input, print};
use idemgen_report::window::render::WindowRow;
use idemgen_spec::analysis::analyse;
use idemgen_spec::window::{Verdict, WindowInputs};

pub fn run(args: &WindowArgs) -> ExitCode {
    let (workspace, config) = match input::open(&args.spec, &args.config) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let analysis = analyse(&workspace, config.defaults);
    let mut rows = Vec::new();
    for (analysed, contract) in analysis.selected(&args.operations) {
        let operation = &analysed.operation;
        let name = operation.name();
        let inputs = WindowInputs::of(contract).with_overrides(
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
    let checked = rows.len();
    if args.only_failing {
        rows.retain(|row| row.math.verdict != Verdict::Ok);
    }
    if args.only_failing && rows.is_empty() {
        let note = if checked == 0 {
            "No operations with x-idempotency.".to_string()
        } else {
            format!(
                "No window check fails: {}.",
                match checked {
                    1 => "the one operation checked is ok".to_string(),
                    _ => format!("all {checked} operations checked are ok"),
                }
            )
        };
        let text = match args.format {
            WindowFormat::Table | WindowFormat::Markdown => format!("{note}\n"),
            WindowFormat::Json => json(&rows),
            WindowFormat::Svg => idemgen_report::window::svg::svg_or_note(&rows, &note),
        };
        print(&text);
        return ExitCode::SUCCESS;
    }
    let hidden = checked - rows.len();
    let hidden_note = match hidden {
        0 => String::new(),
        1 => "1 operation whose window is ok is not shown.\n".to_string(),
        _ => format!("{hidden} operations whose windows are ok are not shown.\n"),
    };
    let text = match args.format {
        WindowFormat::Table => {
            idemgen_report::window::render::table(&rows)
                + &hidden_note
                + "\n"
                + idemgen_report::window::render::FLOOR_NOTE
        }
        WindowFormat::Markdown if hidden > 0 => {
            idemgen_report::window::render::markdown(&rows) + "\n" + &hidden_note
        }
        WindowFormat::Markdown => idemgen_report::window::render::markdown(&rows),
        WindowFormat::Json => json(&rows),
        WindowFormat::Svg => idemgen_report::window::svg::svg(&rows),
    };
    print(&text);
    ExitCode::SUCCESS
}

fn json(rows: &[WindowRow]) -> String {
    let mut text = serde_json::to_string_pretty(&idemgen_report::window::render::json(rows))
        .expect("JSON values always serialise");
    text.push('\n');
    text
}
