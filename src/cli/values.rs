//! The contract's own [`Dialect`] and [`Profile`] as command-line values,
//! so every flag accepts exactly the names a spec and `idemgen.toml` do
//! (`mariadb` wherever `mysql` is).

use clap::ValueEnum;
use clap::builder::PossibleValue;

use crate::contract::model::Dialect;
use crate::contract::profile::Profile;

impl ValueEnum for Dialect {
    fn value_variants<'a>() -> &'a [Self] {
        &Dialect::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).aliases(self.aliases().iter().copied()))
    }
}

impl ValueEnum for Profile {
    fn value_variants<'a>() -> &'a [Self] {
        &Profile::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_accept_the_names_a_spec_accepts() {
        for name in ["mysql", "mariadb", "postgres", "postgresql", "sqlite"] {
            assert_eq!(
                Dialect::from_str(name, false).ok(),
                Dialect::parse(name),
                "{name}"
            );
        }
        for name in Profile::NAMES {
            assert_eq!(
                Profile::from_str(name, false).ok(),
                Profile::parse(name),
                "{name}"
            );
        }
        assert!(Dialect::from_str("oracle", false).is_err());
        assert_eq!(Dialect::ALL.map(Dialect::name), Dialect::NAMES);
        assert_eq!(Profile::ALL.map(Profile::name), Profile::NAMES);
    }
}
