//! Your own code: modules the business functions share (clients of other
//! services, domain types, helpers). idemgen created this file once and
//! never overwrites it; declare more modules here (`pub mod payments;` is
//! `src/app/payments.rs`). Dependencies go below the "Yours" line of
//! `Cargo.toml`, which `idemgen gen` keeps too.
