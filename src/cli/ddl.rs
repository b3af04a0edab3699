//! `idemgen ddl`: print the record table's DDL.

use std::path::PathBuf;
use std::process::ExitCode;

use super::input::{self, ConfigArgs};
use super::{EXIT_BAD_INPUT, print};
use idemgen_spec::contract::model::Dialect;

#[derive(clap::Args)]
pub struct DdlArgs {
    /// OpenAPI 3.0/3.1/3.2 document (YAML or JSON) whose contracts' store
    /// (table, dialect, key width) the DDL is for.
    pub spec: PathBuf,
    /// SQL dialect (mariadb is mysql); default: the spec's store.dialect,
    /// else idemgen.toml's, else sqlite.
    #[arg(long, value_parser = super::values::dialect())]
    pub db: Option<Dialect>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

pub fn run(args: &DdlArgs) -> ExitCode {
    let (workspace, config) = match input::open(&args.spec, &args.config) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let analysis = idemgen_spec::analysis::analyse(&workspace, config.defaults);
    match idemgen_codegen::store(&analysis.contracts(), args.db) {
        Ok(store) => {
            print(&idemgen_codegen::dialect::ddl(
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
