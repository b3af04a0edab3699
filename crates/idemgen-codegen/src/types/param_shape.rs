//! The [`Shape`] of a `deepObject` query parameter whose value nests
//! (Stripe's `subscription_items[0][price]`), from the Rust type its
//! schema was given: which leaf is which scalar, for the runtime to read
//! its brackets into that type.

use std::collections::BTreeMap;

use super::model::{Kind, Ty, TypeDef};
use super::operation::{scalar, scalar_or_string, strip_option};
use super::{Scalar, Shape};

/// How deep a parameter's brackets nest at most, as the runtime's form
/// reader takes them (`max_depth`): a deeper (or recursive) schema has
/// no shape.
const MAX_DEPTH: usize = 10;

/// The shape `ty` is read as; `None` when some part of it cannot be told
/// from its brackets (a union of two objects, a map of objects, free-form
/// JSON) or it nests deeper than the reader goes.
pub(super) fn of(ty: &Ty, defs: &BTreeMap<String, TypeDef>) -> Option<Shape> {
    shape(ty, defs, 0)
}

impl Shape {
    /// Whether brackets go below the parameter's own (`name[0][x]`,
    /// `name[x][y]`) or a member is not a plain scalar: such a value needs
    /// the nested reader.
    pub(crate) fn nests(&self) -> bool {
        match self {
            Shape::Scalar(_) | Shape::ScalarOrString(_) => false,
            Shape::Items(item) => !matches!(**item, Shape::Scalar(_)),
            Shape::Members(members) => members
                .iter()
                .any(|(_, member)| !matches!(member, Shape::Scalar(_))),
            Shape::OrScalar(shape, _) => shape.nests(),
        }
    }
}

fn shape(ty: &Ty, defs: &BTreeMap<String, TypeDef>, depth: usize) -> Option<Shape> {
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(one) = scalar(ty, defs, 0) {
        return Some(Shape::Scalar(one));
    }
    if let Some(one) = scalar_or_string(ty, defs, 0) {
        return Some(Shape::ScalarOrString(one));
    }
    match strip_option(ty) {
        Ty::Vec(item) => Some(Shape::Items(Box::new(shape(item, defs, depth + 1)?))),
        // A map's members are all text: none is listed.
        Ty::Map(value) if scalar(value, defs, 0) == Some(Scalar::String) => {
            Some(Shape::Members(Vec::new()))
        }
        Ty::Boxed(inner) => shape(inner, defs, depth),
        Ty::Named(name) => match &defs.get(name)?.kind {
            Kind::Struct(object) => {
                // Members not listed are read as text: other kinds of
                // `additionalProperties` could not be told apart.
                if object
                    .additional
                    .as_ref()
                    .is_some_and(|other| scalar(other, defs, 0) != Some(Scalar::String))
                {
                    return None;
                }
                let members = object
                    .fields
                    .iter()
                    .map(|field| Some((field.wire.clone(), shape(&field.ty, defs, depth + 1)?)))
                    .collect::<Option<Vec<_>>>()?;
                Some(Shape::Members(members))
            }
            Kind::Alias(inner) | Kind::Newtype(inner) => shape(inner, defs, depth + 1),
            // Stripe's `anyOf` a value and `""` (sent empty to clear it):
            // the text that is not the value's shape stays text, for the
            // union to take.
            Kind::Untagged(alternatives) => {
                let valued: Vec<&Ty> = alternatives
                    .iter()
                    .map(|alternative| &alternative.ty)
                    .filter(|ty| scalar(ty, defs, 0) != Some(Scalar::String))
                    .collect();
                match valued.as_slice() {
                    // Strings all (a string or `""`).
                    [] => Some(Shape::Scalar(Scalar::String)),
                    [one] => shape(one, defs, depth + 1),
                    // A time or a range: text is the time.
                    [first, second] => {
                        let (one, other) = match scalar(first, defs, 0) {
                            Some(one) => (one, second),
                            None => (scalar(second, defs, 0)?, first),
                        };
                        match shape(other, defs, depth + 1)? {
                            Shape::Scalar(_) | Shape::ScalarOrString(_) => None,
                            nested => Some(Shape::OrScalar(Box::new(nested), one)),
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}
