//! The sqlx offline query data (`.sqlx/query-<sha256>.json`) for the
//! layer's fixed queries, computed without a database.
//!
//! sqlx's query macros read these files when no `DATABASE_URL` is set, so
//! a generated project builds on a machine without a database. The data
//! is what sqlx 0.9.0 writes itself (`SQLX_OFFLINE_DIR` + a live
//! `DATABASE_URL`): only the read query and, on PostgreSQL and SQLite, the
//! claim (`RETURNING claim_token`) return columns, and the DDL in
//! [`super::dialect`] fixes their types; the other queries only count (or,
//! on PostgreSQL, type) their parameters. `tests/generated.rs` compares
//! this with what sqlx writes against real databases.

use serde::Serialize;

use super::dialect::{self, QueryKind};
use super::manifest::sha256_hex;
use crate::contract::model::Dialect;

#[derive(Serialize)]
struct QueryData {
    db_name: &'static str,
    query: String,
    describe: Describe,
    hash: String,
}

#[derive(Serialize)]
struct Describe {
    columns: Vec<Column>,
    parameters: Parameters,
    nullable: Vec<bool>,
}

#[derive(Serialize)]
enum Parameters {
    /// PostgreSQL: each parameter's type.
    Left(Vec<&'static str>),
    /// SQLite and MySQL: how many there are.
    Right(usize),
}

/// SQLite writes a column's name first; the others its ordinal.
#[derive(Serialize)]
#[serde(untagged)]
enum Column {
    NameFirst {
        name: &'static str,
        ordinal: usize,
        type_info: TypeInfo,
        origin: Origin,
    },
    OrdinalFirst {
        ordinal: usize,
        name: &'static str,
        type_info: TypeInfo,
        origin: Origin,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum TypeInfo {
    Name(&'static str),
    Mysql {
        r#type: &'static str,
        flags: &'static str,
        collation: u32,
        max_size: u64,
    },
}

#[derive(Serialize)]
enum Origin {
    Table { table: String, name: &'static str },
}

/// The read query's columns: name, nullable, and the type per dialect.
const READ_COLUMNS: [(&str, bool); 8] = [
    ("fingerprint", false),
    ("status", false),
    ("claim_token", false),
    ("lease_expires_at", false),
    ("expires_at", false),
    ("response_status", true),
    ("response_content_type", true),
    ("response_body", true),
];

/// The index of `claim_token` in [`READ_COLUMNS`].
const CLAIM_TOKEN: usize = 2;

const SQLITE_TYPES: [&str; 8] = [
    "Text", "Text", "Text", "Integer", "Integer", "Integer", "Text", "Blob",
];

const POSTGRES_TYPES: [&str; 8] = [
    "Varchar", "Varchar", "Varchar", "Int8", "Int8", "Int2", "Varchar", "Bytea",
];

/// MariaDB 10.11 as sqlx 0.9.0 describes the DDL's columns: type, flags,
/// collation (45 is the connection's utf8mb4_general_ci; 63 binary) and
/// byte width.
const MYSQL_TYPES: [(&str, &str, u32, u64); 8] = [
    ("String", "NOT_NULL | BINARY | NO_DEFAULT_VALUE", 45, 256),
    ("VarString", "NOT_NULL | BINARY | NO_DEFAULT_VALUE", 45, 64),
    ("String", "NOT_NULL | BINARY | NO_DEFAULT_VALUE", 45, 144),
    ("LongLong", "NOT_NULL | NO_DEFAULT_VALUE", 63, 20),
    (
        "LongLong",
        "NOT_NULL | MULTIPLE_KEY | NO_DEFAULT_VALUE",
        63,
        20,
    ),
    ("Short", "", 63, 6),
    ("VarString", "BINARY", 45, 1020),
    ("Blob", "BLOB | BINARY", 63, 16_777_215),
];

fn postgres_parameters(kind: QueryKind) -> Vec<&'static str> {
    match kind {
        QueryKind::Claim => vec![
            "Varchar", "Varchar", "Varchar", "Varchar", "Int8", "Int8", "Int8", "Int8",
        ],
        QueryKind::Read => vec!["Text", "Text"],
        QueryKind::Reclaim => vec![
            "Varchar", "Varchar", "Int8", "Int8", "Int8", "Int8", "Text", "Text", "Text", "Text",
            "Int8", "Int8",
        ],
        QueryKind::Finish => vec![
            "Varchar", "Int2", "Varchar", "Bytea", "Int8", "Text", "Text", "Text",
        ],
        QueryKind::Purge => vec!["Int8", "Int8", "Int8"],
    }
}

fn parameter_count(kind: QueryKind) -> usize {
    match kind {
        QueryKind::Claim | QueryKind::Finish => 8,
        QueryKind::Read => 2,
        QueryKind::Reclaim => 12,
        QueryKind::Purge => 3,
    }
}

/// The offline data of one query. `schema` is the MySQL database the
/// origin of columns is reported in (`<schema>.<table>`).
fn describe(dialect: Dialect, kind: QueryKind, table: &str, schema: &str) -> Describe {
    let parameters = match dialect {
        Dialect::Postgres => Parameters::Left(postgres_parameters(kind)),
        Dialect::Mysql | Dialect::Sqlite => Parameters::Right(parameter_count(kind)),
    };
    // Indexes into READ_COLUMNS of the columns the query returns.
    let returned: &[usize] = match (kind, dialect) {
        (QueryKind::Read, _) => &[0, 1, 2, 3, 4, 5, 6, 7],
        // `RETURNING claim_token`
        (QueryKind::Claim, Dialect::Postgres | Dialect::Sqlite) => &[CLAIM_TOKEN],
        _ => &[],
    };
    let columns = returned
        .iter()
        .enumerate()
        .map(|(ordinal, &column)| {
            let (name, _) = READ_COLUMNS[column];
            let origin = Origin::Table {
                table: match dialect {
                    Dialect::Mysql => format!("{schema}.{table}"),
                    _ => table.to_string(),
                },
                name,
            };
            match dialect {
                Dialect::Sqlite => Column::NameFirst {
                    name,
                    ordinal,
                    type_info: TypeInfo::Name(SQLITE_TYPES[column]),
                    origin,
                },
                Dialect::Postgres => Column::OrdinalFirst {
                    ordinal,
                    name,
                    type_info: TypeInfo::Name(POSTGRES_TYPES[column]),
                    origin,
                },
                Dialect::Mysql => {
                    let (r#type, flags, collation, max_size) = MYSQL_TYPES[column];
                    Column::OrdinalFirst {
                        ordinal,
                        name,
                        type_info: TypeInfo::Mysql {
                            r#type,
                            flags,
                            collation,
                            max_size,
                        },
                        origin,
                    }
                }
            }
        })
        .collect();
    Describe {
        columns,
        parameters,
        nullable: returned
            .iter()
            .map(|&column| READ_COLUMNS[column].1)
            .collect(),
    }
}

fn db_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "SQLite",
        Dialect::Mysql => "MySQL",
        Dialect::Postgres => "PostgreSQL",
    }
}

/// `(file name, contents)` of every query of `dialect` for `table`, byte
/// for byte what sqlx writes.
pub fn files(dialect: Dialect, table: &str, schema: &str) -> Vec<(String, String)> {
    QueryKind::ALL
        .iter()
        .map(|kind| {
            let query = dialect::query(dialect, *kind, table);
            let hash = sha256_hex(query.as_bytes());
            let data = QueryData {
                db_name: db_name(dialect),
                describe: describe(dialect, *kind, table, schema),
                query,
                hash: hash.clone(),
            };
            let mut text = serde_json::to_string_pretty(&data).expect("offline data serialises");
            text.push('\n');
            (format!("query-{hash}.json"), text)
        })
        .collect()
}
