//! The contract's own [`Dialect`] and [`Profile`] as command-line values,
//! so every flag accepts exactly the names a spec and `idemgen.toml` do
//! (`mariadb` wherever `mysql` is).
//!
//! They are value parsers rather than `ValueEnum` impls because both types
//! live in the spec crate, which knows nothing of clap.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

use idemgen_spec::contract::model::Dialect;
use idemgen_spec::contract::profile::Profile;

/// `--db`, `--dialect`: a dialect's name or one of its aliases.
pub fn dialect() -> impl TypedValueParser<Value = Dialect> {
    PossibleValuesParser::new(Dialect::ALL.map(|dialect| {
        PossibleValue::new(dialect.name()).aliases(dialect.aliases().iter().copied())
    }))
    .map(|name| Dialect::parse(&name).expect("the parser accepts only dialect names"))
}

/// `--profile`: a profile's name.
pub fn profile() -> impl TypedValueParser<Value = Profile> {
    PossibleValuesParser::new(Profile::ALL.map(|profile| PossibleValue::new(profile.name())))
        .map(|name| Profile::parse(&name).expect("the parser accepts only profile names"))
}
