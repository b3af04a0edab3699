use std::process::ExitCode;

fn main() -> ExitCode {
    idemgen::cli::run()
}
