//! `idemgen ddl`: print the record table's DDL.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{DbArg, EXIT_BAD_INPUT, print, print_load_error, project_config};
use crate::codegen;
use crate::spec::Workspace;

#[derive(clap::Args)]
pub struct DdlArgs {
    pub spec: PathBuf,
    /// SQL dialect; default: the spec's store.dialect, else sqlite.
    #[arg(long, value_enum)]
    pub db: Option<DbArg>,
}

pub fn run(args: &DdlArgs) -> ExitCode {
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
    let analysis = crate::lint::analyse(&workspace, config.defaults);
    let contracts = codegen::contracts(&analysis.states);
    match codegen::store(&contracts, args.db.map(DbArg::dialect)) {
        Ok(store) => {
            print(&codegen::dialect::ddl(
                store.dialect,
                &store.table,
                store.key_width,
            ));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}
