//! The `idemgen` command: flags in, printed results and an exit code out.
//! Everything it does lives in the library crates under `crates/`.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::run()
}
