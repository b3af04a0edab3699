//! `deepObject` query parameters whose schema nests (Stripe's
//! `subscription_items[0][price]=p`, `automatic_tax[liability][type]=self`):
//! read by the reader form bodies use ([`super::FORM`]), then each leaf's
//! text turned into the scalar its [`Shape`] says.

use axum::http::StatusCode;
use serde_json::{Map, Value};

use super::{Param, Scalar, scalar_text};
use crate::Reply;
use crate::problem::ProblemKind;

/// What a nested parameter's value holds, down to the scalar each leaf's
/// text stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Text read as this scalar.
    Scalar(Scalar),
    /// Text read as this scalar where it reads as one, else kept as the
    /// string (a union of the scalar and a string: a time or `now`).
    ScalarOrString(Scalar),
    /// An array (`name[0][…]`, `name[]`) of items of this shape.
    Items(&'static Shape),
    /// An object of these members (`name[member]`); a member not listed
    /// is text (a map of strings lists none).
    Members(&'static [(&'static str, Shape)]),
    /// A union of a value of this shape and a scalar (Stripe's
    /// `status_transitions[paid]`: a time, or a range `[paid][gt]`): text
    /// is read as the scalar, brackets as the shape.
    OrScalar(&'static Shape, Scalar),
}

/// The value sent for `param` under its name and its brackets; `None`
/// when none was sent. Brackets are read as in a form body (`%5B` is
/// `[`, array items in index order, a member named twice is refused), so
/// a nested parameter and a form body are read alike.
pub(super) fn nested_value(
    param: &Param,
    shape: &Shape,
    pairs: &[(String, String)],
) -> Result<Option<Value>, Reply> {
    let own = pairs
        .iter()
        .filter(|(name, _)| belongs_to(name, param.name))
        .map(|(name, value)| (name.as_str(), value.as_str()));
    bracketed_value(param.name, shape, own).map_err(|misfit| match misfit {
        Misfit::Unreadable(error) => refusal(&format!(
            "query parameter `{}` cannot be read as nested brackets: {error}",
            param.name
        )),
        Misfit::Leaf { at, what, text } => {
            refusal(&format!("query parameter `{at}` {what}, not `{text}`"))
        }
        Misfit::SentTwice(at) => super::sent_twice(&at),
    })
}

/// Why a bracketed value could not be read into its shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Misfit {
    /// The reader refused the brackets (too deep, an index out of range).
    Unreadable(String),
    /// A leaf's text is not its scalar: sent at `at`, it `what`
    /// ("must be an integer").
    Leaf {
        at: String,
        what: &'static str,
        text: String,
    },
    /// A leaf that takes one value was sent twice, at `at`.
    SentTwice(String),
}

/// The value `name` stands for in `pairs` (each its name as sent,
/// `name[…]`, and its decoded text), every leaf read as `shape` says;
/// `None` when `pairs` is empty. Shared by nested query parameters and
/// the bracketed parts of a multipart body
/// (`file_link_data[create]=true`), so both read brackets as a form
/// body does.
pub(crate) fn bracketed_value<'a>(
    name: &str,
    shape: &Shape,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Option<Value>, Misfit> {
    let mut own = form_urlencoded::Serializer::new(String::new());
    let mut sent = false;
    for (sent_name, value) in pairs {
        own.append_pair(sent_name, value);
        sent = true;
    }
    if !sent {
        return Ok(None);
    }
    let mut tree: Map<String, Value> = super::FORM
        .deserialize_str(&own.finish())
        .map_err(|error| Misfit::Unreadable(error.to_string()))?;
    let value = tree.remove(name).unwrap_or(Value::Null);
    typed(shape, value, &mut name.to_string()).map(Some)
}

/// `name` is `parameter` itself or one of its brackets (`parameter[…]`).
fn belongs_to(name: &str, parameter: &str) -> bool {
    name.strip_prefix(parameter)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('['))
}

/// `value`, every leaf read as `shape` says; `at` is where it was sent
/// (`items[0][quantity]`), for the misfit to name.
fn typed(shape: &Shape, value: Value, at: &mut String) -> Result<Value, Misfit> {
    match (shape, value) {
        (Shape::Scalar(scalar) | Shape::OrScalar(_, scalar), Value::String(text)) => {
            scalar_text(*scalar, &text).map_err(|what| Misfit::Leaf {
                at: at.clone(),
                what,
                text,
            })
        }
        (Shape::ScalarOrString(scalar), Value::String(text)) => {
            Ok(scalar_text(*scalar, &text).unwrap_or(Value::String(text)))
        }
        (Shape::OrScalar(shape, _), value) => typed(shape, value, at),
        // The reader gathers a name sent twice into a list.
        (Shape::Scalar(_) | Shape::ScalarOrString(_), Value::Array(_)) => {
            Err(Misfit::SentTwice(at.clone()))
        }
        (Shape::Items(item), Value::Array(items)) => {
            let mut read = Vec::with_capacity(items.len());
            for (index, value) in items.into_iter().enumerate() {
                let length = at.len();
                at.push_str(&format!("[{index}]"));
                read.push(typed(item, value, at)?);
                at.truncate(length);
            }
            Ok(Value::Array(read))
        }
        (Shape::Members(members), Value::Object(sent)) => {
            let mut read = Map::new();
            for (name, value) in sent {
                let member = members
                    .iter()
                    .find(|(declared, _)| *declared == name)
                    .map_or(&Shape::Scalar(Scalar::String), |(_, shape)| shape);
                let length = at.len();
                at.push_str(&format!("[{name}]"));
                let value = typed(member, value, at)?;
                at.truncate(length);
                read.insert(name, value);
            }
            Ok(Value::Object(read))
        }
        // Any other pairing (an empty text where a list or an object goes,
        // as Stripe sends to clear one) is the parameter's type's to take
        // or refuse.
        (_, other) => Ok(other),
    }
}

fn refusal(detail: &str) -> Reply {
    Reply::refusal(ProblemKind::InvalidParameters, StatusCode::BAD_REQUEST, detail)
}
