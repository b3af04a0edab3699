//! `idemgen window`: the window math per operation, with what-if inputs.

use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, WindowArgs, WindowFormat, print, print_load_error, project_config};
use crate::lint::analyse;
use crate::lint::context::ContractState;
use crate::spec::Workspace;
use crate::window::WindowInputs;
use crate::window::render::WindowRow;

pub fn run(args: &WindowArgs) -> ExitCode {
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
    let analysis = analyse(&workspace, config.defaults);
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
