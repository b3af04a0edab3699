//! What every command reads before it runs: the configuration
//! (`--config` / `--no-config`) and the spec.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{EXIT_BAD_INPUT, print_load_error};
use idemgen_lint::config::{self, Config, Source};
use idemgen_spec::Workspace;

/// `--config FILE` / `--no-config`, shared by every command.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConfigArgs {
    /// Configuration file (default: the first idemgen.toml in the working
    /// directory or its parents).
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Ignore every idemgen.toml.
    #[arg(long)]
    pub no_config: bool,
}

impl ConfigArgs {
    fn source(&self) -> Source {
        match (&self.config, self.no_config) {
            (_, true) => Source::Disabled,
            (Some(path), false) => Source::File(path.clone()),
            (None, false) => Source::Discover,
        }
    }

    /// The configuration the flags name; a bad file is reported and ends
    /// the command with exit code 2.
    pub fn load(&self) -> Result<Config, ExitCode> {
        config::resolve(&self.source()).map_err(|error| {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        })
    }
}

/// The configuration, then the spec; either failing is reported and ends
/// the command with exit code 2.
pub fn open(spec: &Path, config: &ConfigArgs) -> Result<(Workspace, Config), ExitCode> {
    let config = config.load()?;
    let workspace = load_spec(spec)?;
    Ok((workspace, config))
}

/// The spec and the files it references; a load error is printed.
pub fn load_spec(spec: &Path) -> Result<Workspace, ExitCode> {
    Workspace::load(spec).map_err(|error| {
        print_load_error(&error);
        ExitCode::from(EXIT_BAD_INPUT)
    })
}
