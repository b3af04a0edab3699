//! The record table `idempotent_record`: one module per database, chosen by the
//! Cargo feature (`sqlite`, `mysql` or `postgres`), with the same functions.
//! Every query goes through `sqlx::query!`, checked at build time against
//! the offline data in `.sqlx/`.

#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "mysql")]
pub use mysql::*;
#[cfg(feature = "postgres")]
pub use postgres::*;
#[cfg(feature = "sqlite")]
pub use sqlite::*;

#[cfg(not(any(feature = "sqlite", feature = "mysql", feature = "postgres")))]
compile_error!("enable one database feature: sqlite, mysql or postgres");

#[cfg(any(
    all(feature = "sqlite", feature = "mysql"),
    all(feature = "sqlite", feature = "postgres"),
    all(feature = "mysql", feature = "postgres"),
))]
compile_error!(
    "enable only one database feature (use --no-default-features --features mysql, for example)"
);

use crate::http::Reply;

/// The record of one key, as read back.
#[derive(Debug, Clone)]
pub struct Record {
    pub fingerprint: String,
    pub status: String,
    pub claim_token: String,
    pub lease_expires_at: i64,
    pub expires_at: i64,
    pub response_status: Option<u16>,
    pub response_content_type: Option<String>,
    pub response_body: Option<Vec<u8>>,
}

/// A new in-progress record.
#[derive(Debug, Clone, Copy)]
pub struct NewClaim<'a> {
    pub scope: &'a str,
    pub key: &'a str,
    pub fingerprint: &'a str,
    pub token: &'a str,
    pub lease_expires_at: i64,
    pub expires_at: i64,
    pub now: i64,
}

/// Claiming an existing record, fenced on what was read.
#[derive(Debug, Clone, Copy)]
pub struct Reclaim<'a> {
    pub claim: NewClaim<'a>,
    pub old_token: &'a str,
    pub old_status: &'a str,
}

/// The outcome of an attempt, fenced on its claim token.
#[derive(Debug, Clone, Copy)]
pub struct Finish<'a> {
    pub status: &'a str,
    pub reply: &'a Reply,
    pub scope: &'a str,
    pub key: &'a str,
    pub token: &'a str,
    pub now: i64,
}

impl Finish<'_> {
    fn response_status(&self) -> i16 {
        i16::try_from(self.reply.status.as_u16()).unwrap_or(500)
    }
}

/// The expression for the database this build is for. Business code keeps
/// one `sqlx::query!` per dialect with it: placeholders differ (`?1` on
/// SQLite, `?` on MySQL, `$1` on PostgreSQL), which also keeps each
/// dialect's offline query data in `.sqlx/` apart.
///
/// ```ignore
/// let done = crate::per_dialect! {
///     sqlite: sqlx::query!("DELETE FROM t WHERE id = ?1", id),
///     mysql: sqlx::query!("DELETE FROM t WHERE id = ?", id),
///     postgres: sqlx::query!("DELETE FROM t WHERE id = $1", id),
/// }
/// .execute(&mut **tx)
/// .await?;
/// ```
#[macro_export]
macro_rules! per_dialect {
    (sqlite: $sqlite:expr, mysql: $mysql:expr, postgres: $postgres:expr $(,)?) => {{
        #[cfg(feature = "sqlite")]
        let chosen = $sqlite;
        #[cfg(feature = "mysql")]
        let chosen = $mysql;
        #[cfg(feature = "postgres")]
        let chosen = $postgres;
        chosen
    }};
}
