//! `idemgen.toml` for the editor's workspace: found from the workspace root
//! as `idemgen lint` finds it from the working directory, and read again
//! when the file changes.

use std::path::PathBuf;

use idemgen_lint::LintOptions;
use idemgen_lint::config::{self, Config, FILE_NAME};

pub struct WorkspaceConfig {
    /// The workspace root the editor opened (or the server's directory).
    root: PathBuf,
    pub options: LintOptions,
    /// The file in use, if any.
    pub path: Option<PathBuf>,
}

impl WorkspaceConfig {
    pub fn new(root: PathBuf) -> WorkspaceConfig {
        WorkspaceConfig {
            root,
            options: LintOptions::default(),
            path: None,
        }
    }

    /// Reads the configuration again. A broken file keeps the built-in
    /// defaults and returns the message to show the user.
    pub fn reload(&mut self) -> Result<(), String> {
        let found = config::discover(&self.root);
        let loaded = match &found {
            Some(path) => config::load(path),
            None => Ok(Config::default()),
        };
        self.path = found;
        match loaded {
            Ok(config) => {
                self.options = config.lint_options();
                Ok(())
            }
            Err(error) => {
                self.options = LintOptions::default();
                Err(error.0)
            }
        }
    }

    /// Whether a changed file is a configuration file that may apply.
    pub fn is_config(path: &std::path::Path) -> bool {
        path.file_name().is_some_and(|name| name == FILE_NAME)
    }
}
