//! `idemgen lsp`: the contract checked as you type, over the Language
//! Server Protocol on stdio.
//!
//! Every open YAML or JSON document that is an OpenAPI 3.x spec is loaded
//! and linted exactly as `idemgen lint` does it (with the editor's unsaved
//! text of every open file), and the findings become diagnostics. Hover
//! shows the window math, code actions apply the `--fix` edits or add an
//! `x-idemgen-ignore` entry, completion offers the extension's fields and
//! values, and go-to-definition follows `$ref`s. Nothing here re-implements
//! a rule, a fix or the window math.

mod code_actions;
mod completion;
mod definition;
mod diagnostics;
mod documents;
mod hover;
mod linter;
mod load;
mod locate;
mod server;
mod transport;
mod workspace_config;

use std::process::ExitCode;

/// Serves until the client says `exit`: 0 after a `shutdown`, else 1, as
/// the protocol asks.
pub fn run() -> ExitCode {
    if server::serve() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
