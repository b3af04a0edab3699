//! Typed input: a request's body and its path, query and header
//! parameters turned into the types a spec's schemas describe, checked
//! before the key is claimed (see [`Idempotency::begin_typed`]).
//!
//! [`Idempotency::begin_typed`]: crate::Idempotency::begin_typed

use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::problem::ProblemKind;
use crate::{Reply, Request};

/// Where a parameter is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamIn {
    Path,
    Query,
    /// Names compare case-insensitively.
    Header,
}

/// The JSON value a parameter's text stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    String,
    Integer,
    Number,
    Boolean,
}

/// A declared parameter: the table a generated handler passes to
/// [`Request::params_as`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// The name as sent, which is also the serde name of the field.
    pub(crate) name: &'static str,
    pub(crate) location: ParamIn,
    pub(crate) value: Scalar,
    /// An array of `value`s: repeated (`?id=1&id=2`) or comma-separated
    /// (`?id=1,2`, and always for headers and path segments).
    pub(crate) many: bool,
}

impl Param {
    pub const fn path(name: &'static str, value: Scalar) -> Param {
        Param {
            name,
            location: ParamIn::Path,
            value,
            many: false,
        }
    }

    pub const fn query(name: &'static str, value: Scalar) -> Param {
        Param {
            name,
            location: ParamIn::Query,
            value,
            many: false,
        }
    }

    pub const fn header(name: &'static str, value: Scalar) -> Param {
        Param {
            name,
            location: ParamIn::Header,
            value,
            many: false,
        }
    }

    /// This parameter as an array of its values.
    pub const fn many(self) -> Param {
        Param { many: true, ..self }
    }
}

impl Request {
    /// The request's parameters as `T`, a struct whose fields are named
    /// (or serde-renamed) like the parameters in `params`. Each value's
    /// text becomes the JSON value its schema says (`?limit=10` is the
    /// number 10), then `T` is deserialised from them, so a missing
    /// required parameter, a value that is not of its type or a string
    /// outside an enum is a `400` problem saying which.
    ///
    /// ```
    /// use idemgen_runtime::{Param, Request, Scalar};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct ListParams {
    ///     limit: Option<u32>,
    ///     #[serde(rename = "X-Tenant")]
    ///     tenant: String,
    /// }
    /// const PARAMS: &[Param] = &[
    ///     Param::query("limit", Scalar::Integer),
    ///     Param::header("X-Tenant", Scalar::String),
    /// ];
    /// let request = |query: &str, tenant: Option<&str>| {
    ///     let mut request = Request::new(axum::http::Method::GET, "/orders");
    ///     request.query_pairs = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    ///     if let Some(tenant) = tenant {
    ///         request.headers.insert("x-tenant", tenant.parse().unwrap());
    ///     }
    ///     request
    /// };
    /// let params: ListParams = request("limit=10", Some("acme")).params_as(PARAMS).unwrap();
    /// assert_eq!((params.limit, params.tenant.as_str()), (Some(10), "acme"));
    /// let refused = request("limit=ten", Some("acme")).params_as::<ListParams>(PARAMS);
    /// assert_eq!(refused.err().unwrap().status.as_u16(), 400);
    /// let missing = request("", None).params_as::<ListParams>(PARAMS);
    /// assert_eq!(missing.err().unwrap().status.as_u16(), 400);
    /// ```
    pub fn params_as<T: DeserializeOwned>(&self, params: &[Param]) -> Result<T, Reply> {
        self.params_checked_as(params, &[])
    }

    /// [`Request::params_as`] that first checks the spec's validation
    /// keywords on the parameters ([`crate::constraints`], pointers from
    /// the object of parameter names): a value that breaks one is a 400
    /// naming `/{name}` and the keyword.
    pub fn params_checked_as<T: DeserializeOwned>(
        &self,
        params: &[Param],
        constraints: &[crate::Constraint],
    ) -> Result<T, Reply> {
        let mut values = Map::new();
        for param in params {
            let texts = self.param_texts(param)?;
            let value = if param.many {
                let items = split_items(param, texts);
                Value::Array(
                    items
                        .into_iter()
                        .map(|text| scalar(param, &text))
                        .collect::<Result<_, _>>()?,
                )
            } else {
                // A repeated single-valued parameter: the last one counts,
                // as in `Request::query`.
                let Some(text) = texts.into_iter().next_back() else {
                    continue;
                };
                scalar(param, &text)?
            };
            values.insert(param.name.to_string(), value);
        }
        let values = Value::Object(values);
        crate::constraints::check(&values, constraints).map_err(|violation| {
            Reply::refusal(
                ProblemKind::InvalidParameters,
                StatusCode::BAD_REQUEST,
                &violation.to_string(),
            )
        })?;
        serde_json::from_value(values).map_err(|error| {
            Reply::refusal(ProblemKind::InvalidParameters, StatusCode::BAD_REQUEST, &error.to_string())
        })
    }

    /// The texts sent for `param`, in order.
    fn param_texts(&self, param: &Param) -> Result<Vec<String>, Reply> {
        Ok(match param.location {
            ParamIn::Path => self
                .path_params
                .get(param.name)
                .cloned()
                .into_iter()
                .collect(),
            ParamIn::Query => self
                .query_pairs
                .iter()
                .filter(|(name, _)| name == param.name)
                .map(|(_, value)| value.clone())
                .collect(),
            ParamIn::Header => self
                .headers
                .get_all(param.name)
                .iter()
                .map(|value| {
                    value.to_str().map(str::to_string).map_err(|_| {
                        invalid(
                            param,
                            "is not visible ASCII text",
                            &String::from_utf8_lossy(value.as_bytes()),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        })
    }
}

/// The items of an array parameter: repeated query values each, otherwise
/// comma-separated.
fn split_items(param: &Param, texts: Vec<String>) -> Vec<String> {
    if param.location == ParamIn::Query && texts.len() > 1 {
        return texts;
    }
    texts
        .iter()
        .flat_map(|text| text.split(','))
        .map(|item| item.trim().to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

/// The JSON value `text` stands for.
fn scalar(param: &Param, text: &str) -> Result<Value, Reply> {
    match param.value {
        Scalar::String => Ok(Value::String(text.to_string())),
        Scalar::Boolean => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err(invalid(param, "must be `true` or `false`", text)),
        },
        Scalar::Integer => match serde_json::from_str::<Number>(text) {
            Ok(number) if number.is_i64() || number.is_u64() => Ok(Value::Number(number)),
            _ => Err(invalid(param, "must be an integer", text)),
        },
        Scalar::Number => match serde_json::from_str::<Number>(text) {
            Ok(number) => Ok(Value::Number(number)),
            Err(_) => Err(invalid(param, "must be a number", text)),
        },
    }
}

fn invalid(param: &Param, what: &str, text: &str) -> Reply {
    let location = match param.location {
        ParamIn::Path => "path parameter",
        ParamIn::Query => "query parameter",
        ParamIn::Header => "header",
    };
    Reply::refusal(ProblemKind::InvalidParameters, 
        StatusCode::BAD_REQUEST,
        &format!("{location} `{}` {what}, not `{text}`", param.name),
    )
}

/// Why a body could not be read exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unread {
    /// Not JSON.
    NotJson(String),
    /// JSON with no single meaning (a member named twice, half a
    /// surrogate pair), which the fingerprint refuses too.
    Ambiguous(String),
    /// JSON holding a value no field can take (a number beyond any
    /// float), naming where.
    Unfit(String),
}

/// The body as the text its fingerprint hashes: canonical JSON, in which
/// every number is written by its exact decimal value and a whole number
/// up to 21 digits as an integer (`1999.0`, `1.999e3` → `1999`), while one
/// that is not whole keeps its fraction, however close to an integer
/// (`99.99999999999999`). Decoding this text instead of the body read
/// through floats means JSON Schema's `integer` is a value, not a
/// spelling, that an integer field is never given a rounded number, and
/// that the business code sees the very value the fingerprint covers.
pub(crate) fn exact_json(body: &[u8]) -> Result<Vec<u8>, Unread> {
    use crate::canonical_json::{Reason, canonicalize};
    let refused = match canonicalize(body) {
        Ok(canonical) => return Ok(canonical),
        Err(refused) => refused,
    };
    // serde_json's words for what is wrong (a number beyond any float is
    // named by its field), the canonical reader's for what only it refuses.
    let mut reader = serde_json::Deserializer::from_slice(body);
    let serde_says = serde_path_to_error::deserialize::<_, Value>(&mut reader).err();
    let out_of_range = serde_says
        .as_ref()
        .filter(|error| error.inner().to_string().starts_with("number out of range"))
        .map(where_);
    match (&refused.reason, out_of_range, serde_says) {
        (Reason::ExponentTooLarge, Some(field), _) => Err(Unread::Unfit(field)),
        (Reason::ExponentTooLarge, None, _) => Err(Unread::Unfit(refused.to_string())),
        (Reason::Syntax(_) | Reason::TooDeep, None, Some(error)) => {
            Err(Unread::NotJson(error.into_inner().to_string()))
        }
        (Reason::DuplicateMember(_) | Reason::LoneSurrogate, _, _) => {
            Err(Unread::Ambiguous(refused.to_string()))
        }
        _ => Err(Unread::NotJson(refused.to_string())),
    }
}

/// `T` from the text [`exact_json`] made; on failure what does not fit
/// and where (`amount: invalid type: floating point …, expected u32`).
pub(crate) fn decode_exact<T: DeserializeOwned>(canonical: &[u8]) -> Result<T, String> {
    let mut reader = serde_json::Deserializer::from_slice(canonical);
    serde_path_to_error::deserialize(&mut reader).map_err(|error| where_(&error))
}

/// An error with the field it is about and without serde_json's line and
/// column, which count in the canonical text rather than the body sent.
fn where_(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = error.inner();
    let mut what = inner.to_string();
    let position = format!(" at line {} column {}", inner.line(), inner.column());
    if inner.line() != 0
        && let Some(stripped) = what.strip_suffix(&position)
    {
        what = stripped.to_string();
    }
    match error.path().to_string().as_str() {
        "." => what,
        path => format!("`{path}`: {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn request() -> Request {
        Request::new(axum::http::Method::GET, "/items")
    }

    #[test]
    fn arrays_are_repeated_or_comma_separated() {
        #[derive(Deserialize)]
        struct P {
            id: Vec<i64>,
        }
        const PARAMS: &[Param] = &[Param::query("id", Scalar::Integer).many()];
        let mut repeated = request();
        repeated.query_pairs = vec![("id".into(), "1".into()), ("id".into(), "2".into())];
        assert_eq!(repeated.params_as::<P>(PARAMS).unwrap().id, [1, 2]);
        let mut joined = request();
        joined.query_pairs = vec![("id".into(), "3,4".into())];
        assert_eq!(joined.params_as::<P>(PARAMS).unwrap().id, [3, 4]);
        let mut wrong = request();
        wrong.query_pairs = vec![("id".into(), "3,x".into())];
        let refused = wrong.params_as::<P>(PARAMS).err().unwrap();
        assert!(
            String::from_utf8_lossy(&refused.body)
                .contains("query parameter `id` must be an integer, not `x`")
        );
    }

    #[test]
    fn path_booleans_and_numbers() {
        #[derive(Deserialize)]
        struct P {
            flag: bool,
            ratio: f64,
        }
        const PARAMS: &[Param] = &[
            Param::path("flag", Scalar::Boolean),
            Param::query("ratio", Scalar::Number),
        ];
        let mut sent = request();
        sent.path_params.insert("flag".into(), "true".into());
        sent.query_pairs = vec![("ratio".into(), "0.25".into())];
        let params = sent.params_as::<P>(PARAMS).unwrap();
        assert!(params.flag);
        assert_eq!(params.ratio, 0.25);
        sent.path_params.insert("flag".into(), "yes".into());
        assert_eq!(
            sent.params_as::<P>(PARAMS).err().unwrap().status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn a_header_that_is_not_text_is_refused() {
        #[derive(Deserialize)]
        struct P {
            #[serde(rename = "X-Tenant")]
            _tenant: String,
        }
        let mut sent = request();
        sent.headers.insert(
            "x-tenant",
            axum::http::HeaderValue::from_bytes("Zürich".as_bytes()).unwrap(),
        );
        let refused = sent
            .params_as::<P>(&[Param::header("X-Tenant", Scalar::String)])
            .err()
            .unwrap();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    }
}
