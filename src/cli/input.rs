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
    /// Apply this OpenAPI Overlay document (1.0 or 1.1) to the spec before
    /// reading it; repeat to apply several, in order. Replaces what
    /// idemgen.toml's [overlays] lists.
    #[arg(long = "overlay", value_name = "FILE")]
    pub overlays: Vec<PathBuf>,
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
pub fn open(spec: &Path, args: &ConfigArgs) -> Result<(Workspace, Config), ExitCode> {
    let config = args.load()?;
    let workspace = load_spec(spec, args.overlays_for(&config, spec))?;
    Ok((workspace, config))
}

impl ConfigArgs {
    /// The Overlay documents for `spec`: `--overlay`, else idemgen.toml's.
    pub fn overlays_for<'a>(&'a self, config: &'a Config, spec: &Path) -> &'a [PathBuf] {
        if self.overlays.is_empty() {
            config.overlays_for(spec)
        } else {
            &self.overlays
        }
    }
}

/// The spec and the files it references, with `overlays` applied; a load
/// error is printed, and so is every overlay action that changed nothing.
pub fn load_spec(spec: &Path, overlays: &[PathBuf]) -> Result<Workspace, ExitCode> {
    load_spec_telling(spec, overlays).map_err(|_| ExitCode::from(EXIT_BAD_INPUT))
}

/// [`load_spec`], handing back the error it printed, for reports that
/// carry it too.
pub fn load_spec_telling(
    spec: &Path,
    overlays: &[PathBuf],
) -> Result<Workspace, Box<idemgen_spec::LoadError>> {
    let workspace = Workspace::load_with_overlays(spec, &Default::default(), overlays)
        .inspect_err(|error| print_load_error(error))?;
    for warning in &workspace.overlay_warnings {
        eprintln!("warning: {warning}");
    }
    Ok(workspace)
}
