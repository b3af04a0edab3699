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

mod deep;
mod json_fields;

pub use deep::Shape;
pub(crate) use deep::{Misfit, bracketed_value};

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

/// How a parameter's value is written, as OpenAPI's `style` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Query: `id=1&id=2` exploded, `id=1,2` not; an exploded object's
    /// properties are parameters of their own (`gt=1&lt=9`).
    Form,
    /// Query arrays `id=1%202` (exploded: as `Form`).
    SpaceDelimited,
    /// Query arrays `id=1|2` (exploded: as `Form`).
    PipeDelimited,
    /// Query objects `created[gt]=1&created[lt]=9`; nested values
    /// `items[0][price]=p` with [`Param::nested`].
    DeepObject,
    /// Path and header: `1,2`; objects `gt,1,lt,9`, exploded `gt=1,lt=9`.
    Simple,
    /// Path: `.1.2` exploded, `.1,2` not.
    Label,
    /// Path: `;id=1;id=2` exploded, `;id=1,2` not.
    Matrix,
}

/// The properties of an object parameter with the value each stands for
/// (a property not listed is a string).
pub type Properties = &'static [(&'static str, Scalar)];

/// A declared parameter: the table a generated handler passes to
/// [`Request::params_as`]. Its style and explode are OpenAPI's defaults
/// (`form` exploded for the query, `simple` for path and header) unless
/// set with [`Param::style`] and [`Param::explode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// The name as sent, which is also the serde name of the field.
    pub(crate) name: &'static str,
    pub(crate) location: ParamIn,
    pub(crate) value: Scalar,
    /// An array of `value`s.
    pub(crate) many: bool,
    /// An object with these properties.
    pub(crate) object: Option<Properties>,
    /// An object parameter that may instead be sent as one `value`
    /// (`oneOf` an object and a scalar: `?created=5` or `created[gt]=5`).
    pub(crate) or_scalar: bool,
    /// A scalar parameter that may instead be any string (`oneOf` an
    /// integer and `now`): text that does not read as `value` is a string.
    pub(crate) or_string: bool,
    /// A `deepObject` value that nests (arrays of objects, objects of
    /// objects), read from its brackets as this shape.
    pub(crate) nested: Option<&'static Shape>,
    pub(crate) style: Style,
    pub(crate) explode: bool,
}

impl Param {
    const fn at(name: &'static str, location: ParamIn, value: Scalar, style: Style) -> Param {
        Param {
            name,
            location,
            value,
            many: false,
            object: None,
            or_scalar: false,
            or_string: false,
            nested: None,
            style,
            explode: matches!(style, Style::Form),
        }
    }

    pub const fn path(name: &'static str, value: Scalar) -> Param {
        Param::at(name, ParamIn::Path, value, Style::Simple)
    }

    pub const fn query(name: &'static str, value: Scalar) -> Param {
        Param::at(name, ParamIn::Query, value, Style::Form)
    }

    pub const fn header(name: &'static str, value: Scalar) -> Param {
        Param::at(name, ParamIn::Header, value, Style::Simple)
    }

    /// This parameter as an array of its values.
    pub const fn many(self) -> Param {
        Param { many: true, ..self }
    }

    /// This parameter as an object of `properties`; with
    /// [`Param::or_scalar`], a single value (the parameter's scalar) is
    /// taken too.
    pub const fn object(self, properties: Properties) -> Param {
        Param {
            object: Some(properties),
            ..self
        }
    }

    /// An object parameter that may be sent as one scalar value instead.
    pub const fn or_scalar(self) -> Param {
        Param {
            or_scalar: true,
            ..self
        }
    }

    /// A union of `value` and a string (Stripe's `trial_end`: a Unix time
    /// or `now`): text that reads as `value` is that (`1700000000` the
    /// integer), any other text the string, for the union's type to take
    /// or refuse.
    pub const fn or_string(self) -> Param {
        Param {
            or_string: true,
            ..self
        }
    }

    /// A `deepObject` parameter whose value nests, read as `shape`
    /// (`items[0][price]=p&items[0][quantity]=2`, brackets as a form body
    /// writes them).
    pub const fn nested(self, shape: &'static Shape) -> Param {
        Param {
            nested: Some(shape),
            ..self
        }
    }

    /// OpenAPI's `style`; `explode` becomes that style's default (true
    /// for `form` only), as OpenAPI says.
    pub const fn style(self, style: Style) -> Param {
        Param {
            style,
            explode: matches!(style, Style::Form),
            ..self
        }
    }

    /// OpenAPI's `explode`.
    pub const fn explode(self, explode: bool) -> Param {
        Param { explode, ..self }
    }
}

/// A path parameter with literal text around it in its segment
/// (`{Sid}.json`, `v{version}`). The router matches whole segments only,
/// so the operation is routed at `{Sid}` and the text is cut off when the
/// request is read ([`with_path_affixes`]); a segment that does not carry
/// it is another path, answered 404.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathAffix {
    name: &'static str,
    prefix: &'static str,
    suffix: &'static str,
}

impl PathAffix {
    /// The parameter `name` sent as `prefix`, its value, then `suffix`.
    pub const fn new(name: &'static str, prefix: &'static str, suffix: &'static str) -> PathAffix {
        PathAffix {
            name,
            prefix,
            suffix,
        }
    }

    /// The value inside the segment `sent`; `None` when it lacks the
    /// prefix or suffix, or holds nothing else (a whole-segment parameter
    /// is never empty either).
    fn cut<'a>(&self, sent: &'a str) -> Option<&'a str> {
        sent.strip_prefix(self.prefix)
            .and_then(|rest| rest.strip_suffix(self.suffix))
            .filter(|value| !value.is_empty())
    }
}

/// The affixes an operation's path parameters carry, set on the request
/// by [`with_path_affixes`] and cut off by [`Request::read`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathAffixes(&'static [PathAffix]);

/// `request` marked so that reading it ([`Request::read`], or
/// [`crate::read_authenticated`]) cuts `affixes` off its path parameters
/// before anything sees them (their validation, the typed parameters,
/// [`Request::path_param`], the business code; the fingerprint hashes the
/// path as sent), and answers 404 when one is missing.
pub fn with_path_affixes(
    mut request: axum::extract::Request,
    affixes: &'static [PathAffix],
) -> axum::extract::Request {
    request.extensions_mut().insert(PathAffixes(affixes));
    request
}

/// Cuts the affixes `parts` was marked with off `params`; `Err` the 404
/// answer when a segment does not carry them, as for a path nothing
/// serves.
pub(crate) fn cut_path_affixes(
    parts: &axum::http::request::Parts,
    params: &mut std::collections::HashMap<String, String>,
) -> Result<(), Reply> {
    let Some(PathAffixes(affixes)) = parts.extensions.get::<PathAffixes>() else {
        return Ok(());
    };
    for affix in *affixes {
        let Some(sent) = params.get_mut(affix.name) else {
            continue;
        };
        match affix.cut(sent) {
            Some(value) => *sent = value.to_string(),
            None => {
                return Err(Reply::refusal(
                    ProblemKind::NotFound,
                    StatusCode::NOT_FOUND,
                    &format!(
                        "no {} operation is served at `{}`",
                        parts.method,
                        parts.uri.path()
                    ),
                ));
            }
        }
    }
    Ok(())
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
            if let Some(value) = self.param_value(param)? {
                values.insert(param.name.to_string(), value);
            }
        }
        let values = Value::Object(values);
        crate::constraints::check(&values, constraints).map_err(|violation| {
            Reply::refusal(
                ProblemKind::InvalidParameters,
                StatusCode::BAD_REQUEST,
                &violation.to_string(),
            )
        })?;
        // Where a nested value does not fit is named (`items[0]`: missing
        // field `price`), as in a form body.
        serde_path_to_error::deserialize(values).map_err(|error| {
            let detail = match error.path().to_string().as_str() {
                "." => error.inner().to_string(),
                path => format!("`{path}`: {}", error.inner()),
            };
            Reply::refusal(ProblemKind::InvalidParameters, StatusCode::BAD_REQUEST, &detail)
        })
    }

    /// The JSON value sent for `param` as its style writes it; `None`
    /// when it was not sent.
    fn param_value(&self, param: &Param) -> Result<Option<Value>, Reply> {
        match param.location {
            ParamIn::Query => self.query_value(param),
            ParamIn::Path => match self.path_params.get(param.name) {
                Some(text) => path_value(param, text).map(Some),
                None => Ok(None),
            },
            ParamIn::Header => {
                let texts = self
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
                    .collect::<Result<Vec<_>, _>>()?;
                if texts.is_empty() {
                    return Ok(None);
                }
                // Header lines repeated are one comma-separated value.
                simple_value(param, &texts.join(","), param.explode).map(Some)
            }
        }
    }

    fn query_value(&self, param: &Param) -> Result<Option<Value>, Reply> {
        if let Some(shape) = param.nested {
            return deep::nested_value(param, shape, &self.query_pairs);
        }
        let sent = |name: &str| -> Vec<&str> {
            self.query_pairs
                .iter()
                .filter(|(sent, _)| sent == name)
                .map(|(_, value)| value.as_str())
                .collect()
        };
        let texts = sent(param.name);
        if let Some(properties) = param.object {
            // A scalar alternative is sent under the parameter's own name.
            if param.or_scalar
                && let Some(text) = once(param.name, &texts)?
            {
                return scalar(param, param.value, text).map(Some);
            }
            let mut members = Map::new();
            match (param.style, param.explode) {
                (Style::DeepObject, _) => {
                    let prefix = format!("{}[", param.name);
                    for (name, value) in &self.query_pairs {
                        if let Some(property) = name
                            .strip_prefix(&prefix)
                            .and_then(|rest| rest.strip_suffix(']'))
                        {
                            let value = scalar(param, property_scalar(properties, property), value)?;
                            if members.insert(property.to_string(), value).is_some() {
                                return Err(sent_twice(name));
                            }
                        }
                    }
                }
                (Style::Form, true) => {
                    // Each property is a query parameter of its own: only
                    // the declared ones can be told apart from the others.
                    for (property, value) in properties {
                        if let Some(text) = once(property, &sent(property))? {
                            members.insert(property.to_string(), scalar(param, *value, text)?);
                        }
                    }
                }
                (style, _) => {
                    let Some(text) = once(param.name, &texts)? else {
                        return Ok(None);
                    };
                    let items = split(text, delimiter(style));
                    return pairs(param, properties, &items).map(Some);
                }
            }
            return Ok((!members.is_empty()).then_some(Value::Object(members)));
        }
        if param.many {
            if param.style == Style::DeepObject {
                // OpenAPI leaves a deep array undefined; Stripe's `expand`
                // is sent `expand[]=a` or `expand[0]=a` (and `expand=a`).
                let items: Vec<&str> = self
                    .query_pairs
                    .iter()
                    .filter(|(name, _)| is_item_of(name, param.name))
                    .map(|(_, value)| value.as_str())
                    .collect();
                return match items.is_empty() {
                    true => Ok(None),
                    false => items_value(param, &items).map(Some),
                };
            }
            if texts.is_empty() {
                return Ok(None);
            }
            let items: Vec<&str> = if param.explode {
                texts
            } else {
                once(param.name, &texts)?
                    .map(|text| split(text, delimiter(param.style)))
                    .unwrap_or_default()
            };
            return items_value(param, &items).map(Some);
        }
        match once(param.name, &texts)? {
            Some(text) => scalar(param, param.value, text).map(Some),
            None => Ok(None),
        }
    }
}

/// The one text sent as `name`, a single value (a scalar, or an array or
/// object written in one text); `None` when it was not sent. Sent twice it
/// is refused, since two readers could take either value (as a form body's
/// field named twice is).
fn once<'a>(name: &str, texts: &[&'a str]) -> Result<Option<&'a str>, Reply> {
    match texts {
        [] => Ok(None),
        [text] => Ok(Some(text)),
        _ => Err(sent_twice(name)),
    }
}

fn sent_twice(name: &str) -> Reply {
    Reply::refusal(
        ProblemKind::InvalidParameters,
        StatusCode::BAD_REQUEST,
        &format!("query parameter `{name}` was sent more than once; send it once"),
    )
}

/// How form bodies are read: Stripe's brackets (`metadata[k]=v`,
/// `items[0][price]=p`, `expand[]=a`), also percent-encoded (`%5B`, `%5D`);
/// a scalar field named twice is refused, since two readers could take
/// either value (as a JSON member named twice is).
const FORM: serde_qs::Config = serde_qs::Config::new()
    .max_depth(10)
    .use_form_encoding(true)
    .duplicate_key_behavior(serde_qs::DuplicateKeyBehavior::Error);

/// Whether `headers` declare an `application/x-www-form-urlencoded` body.
pub(crate) fn is_form(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| {
            essence
                .trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// A form body as the fingerprint hashes it: the tree [`Request::form_as`]
/// reads, as canonical JSON, the lists of `lists.joined` split as
/// [`Request::joined_form_checked_as`] splits them. Names and nesting are
/// decoded and the order of distinct fields and of array indexes is left
/// out (`a=1&b=2` is `b=2&a=1`, `x%5Bk%5D=v` is `x[k]=v`); `[]` lists keep
/// their order and values are the decoded text (`01` is not `1`). A field
/// of `lists.json` is its JSON document's value, however spelt. A field
/// `lists.fields` names sent once as its key (`tags=a`) is a list of one,
/// as `tags[0]=a` is, and `tags=` an empty list, since that is what the
/// business code gets. `None`:
/// not a form this reader takes, hashed as sent (and refused by
/// `form_as`).
pub(crate) fn canonical_form(body: &[u8], lists: FormLists<'_>) -> Option<Vec<u8>> {
    let tree: Value = FORM.deserialize_bytes(&split_joined(body, lists.joined)).ok()?;
    let mut tree = json_fields::with_documents(tree, lists.json)?;
    if let Value::Object(fields) = &mut tree {
        for name in lists.fields {
            // As the reader reads a list sent once as its key: an empty
            // text is no item, any other text one item.
            match fields.get_mut(*name) {
                Some(Value::String(text)) if text.is_empty() => {
                    fields.insert(name.to_string(), Value::Array(Vec::new()));
                }
                Some(one @ Value::String(_)) => *one = Value::Array(vec![one.take()]),
                _ => {}
            }
        }
    }
    crate::canonical_json::canonicalize(&serde_json::to_vec(&tree).ok()?).ok()
}

/// What the fingerprint knows of a form body's lists, to hash a list as
/// the business code reads it whichever layout it was sent in
/// ([`crate::Operation::joined_form_lists`],
/// [`crate::Operation::form_list_fields`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FormLists<'a> {
    /// The lists declared joined in one text: split as read.
    pub(crate) joined: &'a [JoinedList],
    /// Every property of the form that is a list of scalars: one item
    /// sent as its key (`tags=a`) is a list of one, as `tags[0]=a` is.
    pub(crate) fields: &'a [&'a str],
    /// The properties sent as JSON text (a JSON `contentType` in the
    /// body's `encoding`): read as the JSON they hold.
    pub(crate) json: &'a [&'a str],
}

/// A list property of a form body declared joined in one text: OpenAPI's
/// `explode: false` (`tags=a,b`), `spaceDelimited` (`tags=a%20b`) or
/// `pipeDelimited` (`tags=a|b`). The generated service names them with
/// [`crate::Operation::joined_form_lists`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinedList {
    /// The property's name in the form.
    pub name: &'static str,
    /// What separates its items once the text is decoded: `,`, ` ` or `|`.
    pub delimiter: char,
}

/// `body` with the text of each list of `joined` split into its items,
/// each sent as the list's key repeated (`tags=a,b` is `tags=a&tags=b`),
/// the layout the form reader takes for a list. The split is made on the
/// decoded text, as a query parameter's is, so `tags=a%2Cb` is two items
/// too: a joined list has no way to send an item holding its delimiter.
/// An empty text is left as sent (as in the repeated layout, it cannot say
/// whether it is no item or one empty one), and so is a value that is not
/// UTF-8 once decoded or holds a malformed escape, read as it was before.
pub(crate) fn split_joined<'a>(body: &'a [u8], joined: &[JoinedList]) -> std::borrow::Cow<'a, [u8]> {
    use std::borrow::Cow;
    let list_of = |raw_name: &[u8]| {
        let name = form_text(raw_name)?;
        joined.iter().find(|list| list.name == name)
    };
    let mut pairs = body.split(|byte| *byte == b'&');
    if joined.is_empty() || !pairs.any(|pair| list_of(pair_name(pair)).is_some()) {
        return Cow::Borrowed(body);
    }
    let mut split = Vec::with_capacity(body.len() + 16);
    for pair in body.split(|byte| *byte == b'&') {
        let raw_name = pair_name(pair);
        let items = list_of(raw_name).and_then(|list| {
            let text = form_text(pair.get(raw_name.len() + 1..)?)?;
            (!text.is_empty()).then_some((list, text))
        });
        match items {
            Some((list, text)) => {
                // The list's own name, however the pair spelled it: each
                // item costs its delimiter's byte and gets the name and
                // two bytes more, so the body grows by a bounded factor.
                let name: String = form_urlencoded::byte_serialize(list.name.as_bytes()).collect();
                for (index, item) in text.split(list.delimiter).enumerate() {
                    if index > 0 {
                        split.push(b'&');
                    }
                    split.extend_from_slice(name.as_bytes());
                    split.push(b'=');
                    split.extend(form_urlencoded::byte_serialize(item.as_bytes()).flat_map(str::bytes));
                }
            }
            None => split.extend_from_slice(pair),
        }
        split.push(b'&');
    }
    split.pop();
    Cow::Owned(split)
}

/// The name of a raw `name=value` pair, still encoded.
fn pair_name(pair: &[u8]) -> &[u8] {
    let end = pair.iter().position(|byte| *byte == b'=').unwrap_or(pair.len());
    &pair[..end]
}

/// Encoded form text decoded (`+` is a space); `None` when it is not UTF-8
/// or holds a `%` that does not start an escape (`%4%41`), which decoders
/// read differently: such a pair is left as sent.
fn form_text(raw: &[u8]) -> Option<String> {
    let escapes_well_formed = raw.iter().enumerate().all(|(at, byte)| {
        *byte != b'%'
            || raw
                .get(at + 1..at + 3)
                .is_some_and(|digits| digits.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_well_formed {
        return None;
    }
    let spaced: Vec<u8> = raw
        .iter()
        .map(|byte| if *byte == b'+' { b' ' } else { *byte })
        .collect();
    String::from_utf8(percent_encoding::percent_decode(&spaced).collect()).ok()
}

impl Request {
    /// The `application/x-www-form-urlencoded` body as `T`, nested
    /// fields in brackets (`metadata[order_id]=6735`, `items[0][price]=p`,
    /// `expand[]=a`). A body declared as another media type (or with a
    /// `Content-Encoding`) is `415`; one that does not fit `T` is a `400`
    /// problem naming the field.
    ///
    /// ```
    /// use idemgen_runtime::Request;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Item {
    ///     price: String,
    ///     quantity: u32,
    /// }
    /// #[derive(serde::Deserialize)]
    /// struct Checkout {
    ///     items: Vec<Item>,
    ///     metadata: std::collections::BTreeMap<String, String>,
    /// }
    /// let request = |body: &'static str| Request {
    ///     body: body.into(),
    ///     ..Request::new(axum::http::Method::POST, "/checkout")
    /// };
    /// let form = "items[0][price]=p_1&items[0][quantity]=2&metadata%5Border%5D=6735";
    /// let checkout: Checkout = request(form).form_as().unwrap();
    /// assert_eq!((checkout.items[0].price.as_str(), checkout.items[0].quantity), ("p_1", 2));
    /// assert_eq!(checkout.metadata["order"], "6735");
    /// let refused = request("items[0][price]=p&items[0][quantity]=two&metadata[a]=b");
    /// let problem = refused.form_as::<Checkout>().err().unwrap();
    /// assert_eq!(problem.status.as_u16(), 400);
    /// assert!(String::from_utf8_lossy(&problem.body).contains("items[0].quantity"));
    /// ```
    pub fn form_as<T: DeserializeOwned>(&self) -> Result<T, Reply> {
        self.form_read(&[], &[], |why| Reply::invalid_body("form", why))
    }

    /// [`Request::form_as`] answering as a JSON body is answered
    /// ([`Request::body_checked_as`]): a form that does not fit `T`, or a
    /// value that breaks one of the spec's validation keywords
    /// ([`crate::constraints`]), is `mismatch` (`422`, or `400` for an API
    /// that declares no `422`) naming the field's JSON pointer and the
    /// keyword, before anything is claimed.
    ///
    /// The keywords are checked on `T` as serde_json writes it, not on the
    /// form's text: every form value is text, and only the decoded value
    /// says which is a number (`amount=+5` is the integer 5, `amount=05`
    /// too), so the value checked is the one the business code is given.
    /// An integer is compared as the integer it is, a `number` field as the
    /// shortest decimal of its float (`f32` or `f64`), as a JSON body's
    /// number is. Optional fields left out are not written, so they check
    /// nothing, as in JSON.
    ///
    /// ```
    /// use idemgen_runtime::{Check, Constraint, Request};
    ///
    /// #[derive(serde::Deserialize, serde::Serialize)]
    /// struct Pay {
    ///     amount: i64,
    /// }
    /// const PAY: &[Constraint] = &[Constraint { at: "/amount", check: Check::Minimum("1") }];
    /// let request = |body: &'static str| Request {
    ///     body: body.into(),
    ///     ..Request::new(axum::http::Method::POST, "/pay")
    /// };
    /// assert_eq!(request("amount=1").form_checked_as::<Pay>(422, PAY).unwrap().amount, 1);
    /// let refused = request("amount=-5").form_checked_as::<Pay>(422, PAY).err().unwrap();
    /// assert_eq!(refused.status.as_u16(), 422);
    /// assert!(String::from_utf8_lossy(&refused.body).contains("/amount breaks `minimum`"));
    /// ```
    pub fn form_checked_as<T: DeserializeOwned + serde::Serialize>(
        &self,
        mismatch: u16,
        constraints: &[crate::Constraint],
    ) -> Result<T, Reply> {
        self.joined_form_checked_as(mismatch, constraints, &[])
    }

    /// [`Request::form_checked_as`] for a form with lists declared joined
    /// in one text (`explode: false`, `spaceDelimited`, `pipeDelimited`):
    /// each text of such a list is split at its delimiter (`tags=a,b` is
    /// the list `a`, `b`, as `tags=a&tags=b` is). The operation names the
    /// same lists ([`crate::Operation::joined_form_lists`]), so that the
    /// fingerprint sees the lists this reads.
    ///
    /// ```
    /// use idemgen_runtime::{JoinedList, Request};
    ///
    /// #[derive(serde::Deserialize, serde::Serialize)]
    /// struct Tagged {
    ///     tags: Vec<String>,
    ///     codes: Vec<u32>,
    /// }
    /// const JOINED: &[JoinedList] = &[
    ///     JoinedList { name: "tags", delimiter: ',' },
    ///     JoinedList { name: "codes", delimiter: '|' },
    /// ];
    /// let request = Request {
    ///     body: "tags=a,b%20c&codes=1|2".into(),
    ///     ..Request::new(axum::http::Method::POST, "/tag")
    /// };
    /// let tagged: Tagged = request.joined_form_checked_as(422, &[], JOINED).unwrap();
    /// assert_eq!((tagged.tags, tagged.codes), (vec!["a".into(), "b c".into()], vec![1, 2]));
    /// ```
    pub fn joined_form_checked_as<T: DeserializeOwned + serde::Serialize>(
        &self,
        mismatch: u16,
        constraints: &[crate::Constraint],
        joined: &[JoinedList],
    ) -> Result<T, Reply> {
        self.encoded_form_checked_as(mismatch, constraints, joined, &[])
    }

    /// [`Request::joined_form_checked_as`] for a form whose `encoding`
    /// also declares the fields `json` sent as JSON text (a JSON
    /// `contentType`: `metadata=%7B%22order%22%3A6735%7D`): each is read
    /// as the JSON it holds into its field's type, its values checked
    /// against the keywords as a JSON body's are. A text that is not one
    /// JSON document is refused, naming the field. The operation names
    /// the same fields ([`crate::Operation::form_json_fields`]), so that
    /// the fingerprint hashes the value, not its spelling.
    ///
    /// ```
    /// use idemgen_runtime::Request;
    ///
    /// #[derive(serde::Deserialize, serde::Serialize)]
    /// struct Order {
    ///     amount: u32,
    ///     metadata: std::collections::BTreeMap<String, u32>,
    /// }
    /// let request = Request {
    ///     body: "amount=5&metadata=%7B%22order%22%3A6735%7D".into(),
    ///     ..Request::new(axum::http::Method::POST, "/orders")
    /// };
    /// let order: Order = request.encoded_form_checked_as(422, &[], &[], &["metadata"]).unwrap();
    /// assert_eq!(order.metadata["order"], 6735);
    /// ```
    pub fn encoded_form_checked_as<T: DeserializeOwned + serde::Serialize>(
        &self,
        mismatch: u16,
        constraints: &[crate::Constraint],
        joined: &[JoinedList],
        json: &[&str],
    ) -> Result<T, Reply> {
        let unfit = Reply::schema_mismatch(mismatch);
        let body: T = self.form_read(joined, json, |why| {
            unfit(format!("the form body does not fit its schema: {why}"))
        })?;
        if !constraints.is_empty() {
            // Through JSON text, not `to_value`: an `f32` is written as its
            // own shortest decimal (`0.1`), where a value would widen it to
            // the `f64` 0.10000000149011612.
            let value = serde_json::to_vec(&body)
                .and_then(|text| serde_json::from_slice::<Value>(&text))
                .map_err(|error| unfit(format!("the form body cannot be checked: {error}")))?;
            crate::constraints::check(&value, constraints)
                .map_err(|violation| unfit(violation.to_string()))?;
        }
        Ok(body)
    }

    /// The form body as `T`, the lists of `joined` split and the fields of
    /// `json` read as JSON; `misfit` answers a body that does not fit.
    fn form_read<T: DeserializeOwned>(
        &self,
        joined: &[JoinedList],
        json: &[&str],
        misfit: impl Fn(String) -> Reply,
    ) -> Result<T, Reply> {
        let declared = self.headers.contains_key(axum::http::header::CONTENT_TYPE);
        let coded = content_coded(&self.headers);
        if let Some(why) = coded.or_else(|| {
            (declared && !is_form(&self.headers)).then(|| {
                "the body is not declared `application/x-www-form-urlencoded`".to_string()
            })
        }) {
            return Err(Reply::refusal(
                ProblemKind::UnsupportedMediaType,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("{why}; send it as `application/x-www-form-urlencoded`"),
            ));
        }
        let body = split_joined(&self.body, joined);
        let form = serde_qs::Deserializer::with_config(FORM, &body)
            .map_err(|error| Reply::invalid_body("form", error))?;
        let read = match json {
            [] => serde_path_to_error::deserialize(form),
            json => serde_path_to_error::deserialize(json_fields::WithJsonFields { form, json }),
        };
        read.map_err(|error| match error.path().to_string().as_str() {
            "." => misfit(error.inner().to_string()),
            path => misfit(format!("`{path}`: {}", error.inner())),
        })
    }
}

/// `name`, `name[]` or `name[3]`: an item of the array `array`.
pub(crate) fn is_item_of(name: &str, array: &str) -> bool {
    match name.strip_prefix(array) {
        Some("" | "[]") => true,
        Some(rest) => rest
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|index| index.bytes().all(|byte| byte.is_ascii_digit())),
        None => false,
    }
}

/// The separator of a non-exploded array or object in the query.
fn delimiter(style: Style) -> char {
    match style {
        Style::SpaceDelimited => ' ',
        Style::PipeDelimited => '|',
        _ => ',',
    }
}

/// `text` split at `delimiter`; an empty text is no item (`?id=` is the
/// empty array).
fn split(text: &str, delimiter: char) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split(delimiter).collect()
}

/// A path segment's value in its style: `simple` (`5`, `1,2`), `label`
/// (`.5`, `.1.2`) or `matrix` (`;id=5`, `;id=1;id=2`).
fn path_value(param: &Param, text: &str) -> Result<Value, Reply> {
    match param.style {
        Style::Label => {
            let Some(rest) = text.strip_prefix('.') else {
                return Err(invalid(param, "must start with `.` (style `label`)", text));
            };
            if param.explode && (param.many || param.object.is_some()) {
                let items = split(rest, '.');
                if let Some(properties) = param.object {
                    return key_values(param, properties, &items);
                }
                return items_value(param, &items);
            }
            simple_value(param, rest, false)
        }
        Style::Matrix => {
            let Some(rest) = text.strip_prefix(';') else {
                return Err(invalid(param, "must start with `;` (style `matrix`)", text));
            };
            let named = format!("{}=", param.name);
            if param.explode && param.object.is_some() {
                let items = split(rest, ';');
                return key_values(param, param.object.unwrap_or_default(), &items);
            }
            if param.explode && param.many {
                let items = split(rest, ';')
                    .into_iter()
                    .map(|item| {
                        item.strip_prefix(&named)
                            .ok_or_else(|| invalid(param, "must repeat `;name=` (style `matrix`)", text))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                return items_value(param, &items);
            }
            // `;id` alone is the empty value.
            let value = match rest.strip_prefix(&named) {
                Some(value) => value,
                None if rest == param.name => "",
                None => {
                    return Err(invalid(param, "must be `;name=value` (style `matrix`)", text));
                }
            };
            simple_value(param, value, false)
        }
        _ => simple_value(param, text, param.explode),
    }
}

/// A `simple` value: a scalar, `1,2` for an array, `gt,1,lt,9` for an
/// object (`gt=1,lt=9` exploded).
fn simple_value(param: &Param, text: &str, explode: bool) -> Result<Value, Reply> {
    if let Some(properties) = param.object {
        let items = split(text, ',');
        return if explode {
            key_values(param, properties, &items)
        } else {
            pairs(param, properties, &items)
        };
    }
    if param.many {
        return items_value(param, &split(text, ','));
    }
    scalar(param, param.value, text)
}

fn items_value(param: &Param, items: &[&str]) -> Result<Value, Reply> {
    items
        .iter()
        .map(|item| scalar(param, param.value, item))
        .collect::<Result<_, _>>()
        .map(Value::Array)
}

/// An object written as alternating names and values (`gt,1,lt,9`).
fn pairs(param: &Param, properties: Properties, items: &[&str]) -> Result<Value, Reply> {
    if !items.len().is_multiple_of(2) {
        return Err(invalid(
            param,
            "must alternate property names and values",
            &items.join(","),
        ));
    }
    let mut members = Map::new();
    for pair in items.chunks(2) {
        let value = scalar(param, property_scalar(properties, pair[0]), pair[1])?;
        members.insert(pair[0].to_string(), value);
    }
    Ok(Value::Object(members))
}

/// An object written as `name=value` items (`gt=1,lt=9`).
fn key_values(param: &Param, properties: Properties, items: &[&str]) -> Result<Value, Reply> {
    let mut members = Map::new();
    for item in items {
        let Some((name, text)) = item.split_once('=') else {
            return Err(invalid(param, "must be a list of `name=value`", item));
        };
        members.insert(
            name.to_string(),
            scalar(param, property_scalar(properties, name), text)?,
        );
    }
    Ok(Value::Object(members))
}

fn property_scalar(properties: Properties, name: &str) -> Scalar {
    properties
        .iter()
        .find(|(property, _)| *property == name)
        .map_or(Scalar::String, |(_, value)| *value)
}

/// The JSON value `text` stands for.
fn scalar(param: &Param, value: Scalar, text: &str) -> Result<Value, Reply> {
    if param.or_string && value == param.value {
        return Ok(scalar_only(param, value, text).unwrap_or_else(|_| Value::String(text.into())));
    }
    scalar_only(param, value, text)
}

/// The JSON value `text` stands for as `value`.
fn scalar_only(param: &Param, value: Scalar, text: &str) -> Result<Value, Reply> {
    scalar_text(value, text).map_err(|what| invalid(param, what, text))
}

/// The JSON value `text` stands for as `value`; `Err` what it must be.
fn scalar_text(value: Scalar, text: &str) -> Result<Value, &'static str> {
    match value {
        Scalar::String => Ok(Value::String(text.to_string())),
        Scalar::Boolean => match text {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            _ => Err("must be `true` or `false`"),
        },
        Scalar::Integer => match serde_json::from_str::<Number>(text) {
            Ok(number) if number.is_i64() || number.is_u64() => Ok(Value::Number(number)),
            _ => Err("must be an integer"),
        },
        Scalar::Number => match serde_json::from_str::<Number>(text) {
            Ok(number) => Ok(Value::Number(number)),
            Err(_) => Err("must be a number"),
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
/// The value of the JSON document `bytes` as [`exact_json`] reads it
/// (members named once, numbers by their exact decimal value); `None`
/// when it is not one.
pub(crate) fn exact_json_value(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(&exact_json(bytes).ok()?).ok()
}

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

/// Why a body with a `Content-Encoding` other than `identity` is not
/// read: it is not decoded here.
pub(crate) fn content_coded(headers: &axum::http::HeaderMap) -> Option<String> {
    for coding in headers.get_all(axum::http::header::CONTENT_ENCODING) {
        let coding = String::from_utf8_lossy(coding.as_bytes());
        // An empty list element is no coding (RFC 9110, section 5.6.1).
        if coding.split(',').map(str::trim).any(|coding| {
            !coding.is_empty() && !coding.eq_ignore_ascii_case("identity")
        }) {
            return Some(format!(
                "the body is sent with `Content-Encoding: {coding}`, which is not decoded here"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    fn request() -> Request {
        Request::new(axum::http::Method::GET, "/items")
    }

    fn query(pairs: &[(&str, &str)]) -> Request {
        let mut sent = request();
        sent.query_pairs = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        sent
    }

    fn detail(refused: Reply) -> String {
        String::from_utf8_lossy(&refused.body).into_owned()
    }

    #[test]
    fn query_arrays_follow_their_style_and_explode() {
        #[derive(Deserialize)]
        struct P {
            id: Vec<i64>,
        }
        // `form`, exploded (the default): one value per repetition.
        let exploded: &[Param] = &[Param::query("id", Scalar::Integer).many()];
        let repeated = query(&[("id", "1"), ("id", "2")]);
        assert_eq!(repeated.params_as::<P>(exploded).unwrap().id, [1, 2]);
        let joined = query(&[("id", "3,4")]);
        let refused = joined.params_as::<P>(exploded).err().unwrap();
        assert!(detail(refused).contains("query parameter `id` must be an integer, not `3,4`"));
        // Not exploded: one value, split at the style's delimiter.
        for (style, text) in [
            (Style::Form, "3,4"),
            (Style::PipeDelimited, "3|4"),
            (Style::SpaceDelimited, "3 4"),
        ] {
            let table = [Param::query("id", Scalar::Integer)
                .many()
                .style(style)
                .explode(false)];
            assert_eq!(query(&[("id", text)]).params_as::<P>(&table).unwrap().id, [3, 4]);
        }
        let table = [Param::query("id", Scalar::Integer).many().explode(false)];
        assert!(query(&[("id", "")]).params_as::<P>(&table).unwrap().id.is_empty());
        let wrong = query(&[("id", "3,x")]).params_as::<P>(&table).err().unwrap();
        assert!(detail(wrong).contains("query parameter `id` must be an integer, not `x`"));
    }

    #[test]
    fn query_objects_deep_exploded_or_listed() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Range {
            gt: Option<i64>,
            lt: Option<i64>,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(untagged)]
        enum Created {
            At(i64),
            Range(Range),
        }
        #[derive(Deserialize)]
        struct P {
            created: Option<Created>,
        }
        const RANGE: Properties = &[("gt", Scalar::Integer), ("lt", Scalar::Integer)];
        let deep = [Param::query("created", Scalar::Integer)
            .object(RANGE)
            .or_scalar()
            .style(Style::DeepObject)];
        let sent = query(&[("created[gt]", "5"), ("created[lt]", "9")]);
        let range = Created::Range(Range {
            gt: Some(5),
            lt: Some(9),
        });
        assert_eq!(sent.params_as::<P>(&deep).unwrap().created, Some(range));
        let at = query(&[("created", "1650000000")]).params_as::<P>(&deep);
        assert_eq!(at.unwrap().created, Some(Created::At(1650000000)));
        assert_eq!(query(&[]).params_as::<P>(&deep).unwrap().created, None);
        let wrong = query(&[("created[gt]", "soon")]).params_as::<P>(&deep);
        assert!(detail(wrong.err().unwrap()).contains("`created` must be an integer, not `soon`"));
        // `form` exploded: each property is a parameter of its own.
        let exploded = [Param::query("created", Scalar::String).object(RANGE)];
        let sent = query(&[("gt", "1"), ("other", "x")]);
        let created = sent.params_as::<P>(&exploded).unwrap().created;
        assert_eq!(created, Some(Created::Range(Range { gt: Some(1), lt: None })));
        // Not exploded: names and values alternate.
        let listed = [Param::query("created", Scalar::String)
            .object(RANGE)
            .explode(false)];
        let sent = query(&[("created", "gt,1,lt,2")]);
        let range = Created::Range(Range {
            gt: Some(1),
            lt: Some(2),
        });
        assert_eq!(sent.params_as::<P>(&listed).unwrap().created, Some(range));
        let deep_array = [Param::query("expand", Scalar::String)
            .many()
            .style(Style::DeepObject)];
        #[derive(Deserialize)]
        struct E {
            expand: Vec<String>,
        }
        let sent = query(&[("expand[]", "a"), ("expand[1]", "b"), ("expand", "c")]);
        assert_eq!(sent.params_as::<E>(&deep_array).unwrap().expand, ["a", "b", "c"]);
        let odd = query(&[("created", "gt,1,lt")]).params_as::<P>(&listed);
        assert!(detail(odd.err().unwrap()).contains("must alternate property names and values"));
    }

    /// Stripe's nested `deepObject` parameters: arrays of objects and
    /// objects of objects, read from their brackets into the types their
    /// schemas give, as a form body is.
    #[test]
    fn nested_deep_objects_read_as_their_shape() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Item {
            price: String,
            quantity: Option<u32>,
            tax_rates: Option<TaxRates>,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(untagged)]
        enum TaxRates {
            Ids(Vec<String>),
            Cleared(String),
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Liability {
            r#type: String,
            account: Option<String>,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct AutomaticTax {
            enabled: bool,
            liability: Option<Liability>,
        }
        // Stripe's `status_transitions[paid]`: a time, or a range.
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(untagged)]
        enum Paid {
            At(i64),
            Range { gt: i64 },
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Transitions {
            paid: Paid,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct P {
            subscription_items: Option<Vec<Item>>,
            automatic_tax: Option<AutomaticTax>,
            status_transitions: Option<Transitions>,
        }
        const ITEM: Shape = Shape::Members(&[
            ("price", Shape::Scalar(Scalar::String)),
            ("quantity", Shape::Scalar(Scalar::Integer)),
            ("tax_rates", Shape::Items(&Shape::Scalar(Scalar::String))),
        ]);
        const TAX: Shape = Shape::Members(&[
            ("enabled", Shape::Scalar(Scalar::Boolean)),
            (
                "liability",
                Shape::Members(&[("type", Shape::Scalar(Scalar::String))]),
            ),
        ]);
        const PARAMS: &[Param] = &[
            Param::query("subscription_items", Scalar::String)
                .nested(&Shape::Items(&ITEM))
                .style(Style::DeepObject),
            Param::query("automatic_tax", Scalar::String)
                .nested(&TAX)
                .style(Style::DeepObject),
            Param::query("status_transitions", Scalar::String)
                .nested(&Shape::Members(&[(
                    "paid",
                    Shape::OrScalar(&Shape::Members(&[("gt", Shape::Scalar(Scalar::Integer))]), Scalar::Integer),
                )]))
                .style(Style::DeepObject),
        ];
        // Decoded as `Request::read` decodes the query.
        let read = |raw: &str| {
            let mut sent = request();
            sent.query_pairs = form_urlencoded::parse(raw.as_bytes()).into_owned().collect();
            sent.params_as::<P>(PARAMS)
        };
        let params = read(
            "subscription_items[1][price]=q&subscription_items[0][price]=p\
             &subscription_items[0][quantity]=2&subscription_items[0][tax_rates][]=t1\
             &subscription_items[1][tax_rates]=\
             &automatic_tax[enabled]=true&automatic_tax[liability][type]=self",
        )
        .unwrap();
        let expected = P {
            subscription_items: Some(vec![
                Item {
                    price: "p".into(),
                    quantity: Some(2),
                    tax_rates: Some(TaxRates::Ids(vec!["t1".into()])),
                },
                Item {
                    price: "q".into(),
                    quantity: None,
                    // Stripe's empty text that clears a list.
                    tax_rates: Some(TaxRates::Cleared(String::new())),
                },
            ]),
            automatic_tax: Some(AutomaticTax {
                enabled: true,
                liability: Some(Liability {
                    r#type: "self".into(),
                    account: None,
                }),
            }),
            status_transitions: None,
        };
        assert_eq!(params, expected);
        // A union of a range and a time takes either.
        let transitions = |raw: &str| read(raw).unwrap().status_transitions.unwrap().paid;
        assert_eq!(transitions("status_transitions[paid]=5"), Paid::At(5));
        assert_eq!(transitions("status_transitions[paid][gt]=6"), Paid::Range { gt: 6 });
        let soon = read("status_transitions[paid]=soon").err().unwrap();
        assert!(detail(soon).contains("`status_transitions[paid]` must be an integer, not `soon`"));
        // Brackets percent-encoded read the same.
        let encoded = read("subscription_items%5B0%5D%5Bprice%5D=p&subscription_items%5B0%5D%5Bquantity%5D=2")
            .unwrap();
        let items = encoded.subscription_items.unwrap();
        assert_eq!((items[0].price.as_str(), items[0].quantity), ("p", Some(2)));
        assert_eq!(read("").unwrap().subscription_items, None);
        // A value not of its type is refused, naming where it was sent.
        let refused = read("subscription_items[0][price]=p&subscription_items[0][quantity]=two");
        let refused = refused.err().unwrap();
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(
            detail(refused).contains(
                "query parameter `subscription_items[0][quantity]` must be an integer, not `two`"
            )
        );
        let refused = read("automatic_tax[enabled]=yes").err().unwrap();
        assert!(detail(refused).contains("`automatic_tax[enabled]` must be `true` or `false`"));
        // A member sent twice, or brackets that do not nest, are refused.
        let twice = read("subscription_items[0][price]=p&subscription_items[0][price]=q");
        assert!(detail(twice.err().unwrap()).contains("`subscription_items[0][price]` was sent more than once"));
        let mixed = read("automatic_tax=x&automatic_tax[enabled]=true").err().unwrap();
        assert_eq!(mixed.status, StatusCode::BAD_REQUEST);
        assert!(detail(mixed).contains("query parameter `automatic_tax` cannot be read"));
        // A required member missing is refused by the type, naming it.
        let missing = read("subscription_items[0][quantity]=1").err().unwrap();
        assert_eq!(missing.status, StatusCode::BAD_REQUEST);
        assert!(detail(missing).contains("price"));
    }

    /// A single-valued parameter sent twice has no one value: it is
    /// refused, as a form body's field named twice is.
    #[test]
    fn a_single_value_sent_twice_is_refused() {
        #[derive(Deserialize, Debug)]
        struct P {
            #[allow(dead_code)]
            limit: Option<i64>,
        }
        let limit = [Param::query("limit", Scalar::Integer)];
        assert_eq!(query(&[("limit", "1")]).params_as::<P>(&limit).unwrap().limit, Some(1));
        let twice = query(&[("limit", "1"), ("limit", "2")]).params_as::<P>(&limit);
        let twice = twice.err().unwrap();
        assert_eq!(twice.status, StatusCode::BAD_REQUEST);
        assert!(detail(twice).contains("query parameter `limit` was sent more than once"));
        // The same value twice too: one reader could still count it twice.
        assert!(query(&[("limit", "1"), ("limit", "1")]).params_as::<P>(&limit).is_err());
        #[derive(Deserialize, Debug)]
        struct Range {
            #[allow(dead_code)]
            gt: Option<i64>,
        }
        #[derive(Deserialize, Debug)]
        struct C {
            #[allow(dead_code)]
            created: Option<Range>,
        }
        let deep = [Param::query("created", Scalar::String)
            .object(&[("gt", Scalar::Integer)])
            .style(Style::DeepObject)];
        let twice = query(&[("created[gt]", "1"), ("created[gt]", "2")]).params_as::<C>(&deep);
        assert!(detail(twice.err().unwrap()).contains("`created[gt]` was sent more than once"));
        let listed = [Param::query("id", Scalar::Integer).many().explode(false)];
        #[derive(Deserialize, Debug)]
        struct Ids {
            #[allow(dead_code)]
            id: Vec<i64>,
        }
        let twice = query(&[("id", "1,2"), ("id", "3")]).params_as::<Ids>(&listed);
        assert!(detail(twice.err().unwrap()).contains("`id` was sent more than once"));
    }

    #[test]
    fn path_styles_simple_label_and_matrix() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Point {
            x: i64,
            y: String,
        }
        #[derive(Deserialize)]
        struct Ids {
            id: Vec<i64>,
        }
        #[derive(Deserialize)]
        struct At {
            at: Point,
        }
        const POINT: Properties = &[("x", Scalar::Integer), ("y", Scalar::String)];
        let segment = |name: &str, text: &str| {
            let mut sent = request();
            sent.path_params.insert(name.into(), text.into());
            sent
        };
        let ids = |param: Param, text: &str| segment("id", text).params_as::<Ids>(&[param]);
        let many = Param::path("id", Scalar::Integer).many();
        assert_eq!(ids(many, "1,2").unwrap().id, [1, 2]);
        let label = many.style(Style::Label);
        assert_eq!(ids(label, ".1,2").unwrap().id, [1, 2]);
        assert_eq!(ids(label.explode(true), ".1.2").unwrap().id, [1, 2]);
        assert!(detail(ids(label, "1,2").err().unwrap()).contains("must start with `.`"));
        let matrix = many.style(Style::Matrix);
        assert_eq!(ids(matrix, ";id=1,2").unwrap().id, [1, 2]);
        assert_eq!(ids(matrix.explode(true), ";id=1;id=2").unwrap().id, [1, 2]);
        assert!(ids(matrix, ";other=1").is_err());
        let point = |param: Param, text: &str| {
            segment("at", text)
                .params_as::<At>(&[param])
                .map(|at| (at.at.x, at.at.y))
        };
        let object = Param::path("at", Scalar::String).object(POINT);
        let expected = (5, "n".to_string());
        assert_eq!(point(object, "x,5,y,n").unwrap(), expected);
        assert_eq!(point(object.explode(true), "x=5,y=n").unwrap(), expected);
        let label = object.style(Style::Label);
        assert_eq!(point(label, ".x,5,y,n").unwrap(), expected);
        assert_eq!(point(label.explode(true), ".x=5.y=n").unwrap(), expected);
        let matrix = object.style(Style::Matrix);
        assert_eq!(point(matrix, ";at=x,5,y,n").unwrap(), expected);
        assert_eq!(point(matrix.explode(true), ";x=5;y=n").unwrap(), expected);
        assert!(point(matrix.explode(true), ";x=five;y=n").is_err());
        let scalar = Param::path("at", Scalar::Integer).style(Style::Matrix);
        let mut sent = request();
        sent.path_params.insert("at".into(), ";at=7".into());
        #[derive(Deserialize)]
        struct One {
            at: i64,
        }
        assert_eq!(sent.params_as::<One>(&[scalar]).unwrap().at, 7);
    }

    #[test]
    fn header_objects_are_simple() {
        #[derive(Deserialize)]
        struct Trace {
            id: i64,
            span: String,
        }
        #[derive(Deserialize)]
        struct P {
            #[serde(rename = "X-Trace")]
            trace: Trace,
        }
        const TRACE: Properties = &[("id", Scalar::Integer), ("span", Scalar::String)];
        let mut sent = request();
        sent.headers.insert("x-trace", "id=7,span=abc".parse().unwrap());
        let table = [Param::header("X-Trace", Scalar::String)
            .object(TRACE)
            .explode(true)];
        let trace = sent.params_as::<P>(&table).unwrap().trace;
        assert_eq!((trace.id, trace.span.as_str()), (7, "abc"));
    }

    #[test]
    fn forms_read_brackets_and_refuse_naming_the_field() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Item {
            price: String,
            quantity: Option<u32>,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Checkout {
            amount: i64,
            items: Vec<Item>,
            expand: Option<Vec<String>>,
        }
        let form = |body: &str, content_type: &str| {
            let mut sent = Request {
                body: body.to_string().into(),
                ..Request::new(axum::http::Method::POST, "/checkout")
            };
            sent.headers
                .insert("content-type", content_type.parse().unwrap());
            sent
        };
        const FORM: &str = "application/x-www-form-urlencoded";
        let sent = form(
            "amount=5&items[1][price]=b&items[0][price]=a+1&items[0][quantity]=2&expand[]=x&expand[]=y",
            FORM,
        );
        let checkout: Checkout = sent.form_as().unwrap();
        assert_eq!(
            checkout,
            Checkout {
                amount: 5,
                items: vec![
                    Item {
                        price: "a 1".into(),
                        quantity: Some(2)
                    },
                    Item {
                        price: "b".into(),
                        quantity: None
                    },
                ],
                expand: Some(vec!["x".into(), "y".into()]),
            }
        );
        // A list's key repeated, OpenAPI's default `form` style, is the
        // same list; not exploded, its text is one item.
        let repeated = form("amount=5&items[0][price]=a&expand=x&expand=y", FORM);
        let repeated: Checkout = repeated.form_as().unwrap();
        assert_eq!(repeated.expand, Some(vec!["x".into(), "y".into()]));
        let joined = form("amount=5&items[0][price]=a&expand=x,y", FORM);
        let joined: Checkout = joined.form_as().unwrap();
        assert_eq!(joined.expand, Some(vec!["x,y".into()]));
        let missing = form("amount=5&items[0][quantity]=2", FORM).form_as::<Checkout>();
        let missing = missing.err().unwrap();
        assert_eq!(missing.status, StatusCode::BAD_REQUEST);
        assert!(detail(missing).contains("items[0]"));
        let twice = form("amount=5&amount=6&items[0][price]=a", FORM).form_as::<Checkout>();
        assert!(detail(twice.err().unwrap()).contains("amount"));
        let json = form(r#"{"amount": 5}"#, "application/json").form_as::<Checkout>();
        assert_eq!(json.err().unwrap().status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[test]
    fn joined_form_lists_are_split_at_their_delimiter_as_read() {
        #[derive(Deserialize, Serialize, Debug, PartialEq)]
        struct Tagged {
            tags: Vec<String>,
            codes: Option<Vec<i64>>,
            words: Option<Vec<String>>,
            note: Option<String>,
        }
        const JOINED: &[JoinedList] = &[
            JoinedList { name: "tags", delimiter: ',' },
            JoinedList { name: "codes", delimiter: '|' },
            JoinedList { name: "words", delimiter: ' ' },
        ];
        let read = |body: &str| {
            Request {
                body: body.to_string().into(),
                ..Request::new(axum::http::Method::POST, "/tag")
            }
            .joined_form_checked_as::<Tagged>(422, &[], JOINED)
        };
        let tagged = read("tags=a,b&codes=1%7C-2&words=x+y%20z&note=c,d").unwrap();
        assert_eq!(tagged.tags, ["a", "b"]);
        assert_eq!(tagged.codes, Some(vec![1, -2]));
        assert_eq!(tagged.words, Some(vec!["x".into(), "y".into(), "z".into()]));
        // A field not declared joined keeps its text.
        assert_eq!(tagged.note.as_deref(), Some("c,d"));
        // Split on the decoded text, as a query parameter is; one item;
        // the key repeated is the same list; an item that breaks its type
        // is named.
        assert_eq!(read("tags=a%2Cb").unwrap().tags, ["a", "b"]);
        assert_eq!(read("tags=solo").unwrap().tags, ["solo"]);
        assert_eq!(read("tags=a&tags=b,c").unwrap().tags, ["a", "b", "c"]);
        assert_eq!(read("tags=a,,b").unwrap().tags, ["a", "", "b"]);
        let unfit = read("tags=a&codes=1|x").err().unwrap();
        assert_eq!(unfit.status.as_u16(), 422);
        assert!(detail(unfit).contains("codes"));
        // Not UTF-8 once decoded: left for the reader, which refuses it.
        assert!(read("tags=%FF,a").is_err());
        // Without the lists named, the text is one item.
        let whole = Request {
            body: "tags=a,b".into(),
            ..Request::new(axum::http::Method::POST, "/tag")
        };
        assert_eq!(whole.form_checked_as::<Tagged>(422, &[]).unwrap().tags, ["a,b"]);
        // Fingerprinted as read: joined and repeated are one request.
        let lists = FormLists { joined: JOINED, ..FormLists::default() };
        let tree = |body: &str| canonical_form(body.as_bytes(), lists).unwrap();
        assert_eq!(tree("tags=a,b&note=n"), tree("note=n&tags=a&tags=b"));
        assert_eq!(tree("codes=1|2"), tree("codes=1&codes=2"));
        assert_ne!(tree("tags=a,b"), tree("tags=b,a"));
        assert_eq!(tree("tags=a,b"), tree("tags=a%2Cb"));
        // The name however spelled; a malformed escape is left as sent.
        assert_eq!(tree("tags=a,b"), tree("%74ags=a,b"));
        // A form without the lists is fingerprinted as it was before them,
        // as is a value with a malformed escape (left as sent), read or not.
        for body in ["note=c,d", "tagsx=a,b&note=", "tags[0]=a,b", "=a,b&&note", "tags=%4%41,b"] {
            let (split, whole) = (canonical_form(body.as_bytes(), lists), canonical_form(body.as_bytes(), FormLists::default()));
            assert_eq!(split, whole, "{body}");
        }
        assert_ne!(
            canonical_form(b"tags=a,b", FormLists::default()).unwrap(),
            tree("tags=a&tags=b"),
            "without the lists named, the text is one item"
        );
    }

    #[test]
    fn a_form_is_fingerprinted_as_read_not_as_spelled() {
        let tree = |body: &str| canonical_form(body.as_bytes(), FormLists::default()).unwrap();
        let first = tree("amount=5&metadata[k]=v&items[0][price]=a&items[1][price]=b");
        // Field order, index order, encoded brackets and `+` for a space.
        assert_eq!(
            first,
            tree("items%5B1%5D%5Bprice%5D=b&metadata[k]=v&items[0][price]=a&amount=5")
        );
        assert_eq!(tree("note=a+b"), tree("note=a%20b"));
        assert_ne!(first, tree("amount=6&metadata[k]=v&items[0][price]=a&items[1][price]=b"));
        // A list's order is its meaning, however it is laid out; one item
        // sent as its key is a text, not yet a list.
        assert_ne!(tree("expand[]=a&expand[]=b"), tree("expand[]=b&expand[]=a"));
        assert_eq!(tree("expand[]=a&expand[]=b"), tree("expand=a&expand=b"));
        assert_ne!(tree("expand=a&expand=b"), tree("expand=b&expand=a"));
        assert_ne!(tree("expand[0]=a"), tree("expand=a"));
    }

    #[test]
    fn a_json_field_is_fingerprinted_as_its_value_not_its_spelling() {
        let lists = FormLists { json: &["metadata"], ..FormLists::default() };
        let tree = |body: &str| canonical_form(body.as_bytes(), lists).unwrap();
        let first = tree("amount=5&metadata=%7B%22a%22%3A1%2C%22b%22%3A%22x%22%7D");
        // Other member order, whitespace, `1.0` for `1`: the same value.
        assert_eq!(first, tree("metadata=%7B+%22b%22%3A%22x%22%2C%22a%22%3A1.0%7D&amount=5"));
        assert_ne!(first, tree("amount=5&metadata=%7B%22a%22%3A2%2C%22b%22%3A%22x%22%7D"));
        // Not JSON: hashed as sent (and refused when read).
        assert!(canonical_form(b"metadata=%7Bnope", lists).is_none());
    }

    #[test]
    fn a_list_of_one_is_fingerprinted_as_a_list_however_laid_out() {
        let lists = FormLists {
            joined: &[JoinedList { name: "tags", delimiter: ',' }],
            fields: &["expand", "tags"],
            json: &[],
        };
        let tree = |body: &str| canonical_form(body.as_bytes(), lists).unwrap();
        // One item, in every layout a list is read from.
        for layout in ["expand=a", "expand[]=a", "expand[0]=a", "expand%5B0%5D=a"] {
            assert_eq!(tree(layout), tree("expand=a"), "{layout}");
        }
        // A list declared joined, of one item.
        assert_eq!(tree("tags=a"), tree("tags[0]=a"));
        assert_eq!(tree("tags=a,b"), tree("tags[0]=a&tags[1]=b"));
        // Another item, another order, another request; a field that is
        // not a list keeps its text.
        assert_ne!(tree("expand=a"), tree("expand=b"));
        assert_ne!(tree("expand=a&expand=b"), tree("expand=b&expand=a"));
        assert_ne!(tree("note=a"), tree("note[0]=a"));
        // An empty text sent as the key is no item, as the reader reads
        // it; in brackets it is one empty item.
        #[derive(Deserialize)]
        struct Listed {
            expand: Vec<String>,
        }
        let read = |body: &str| FORM.deserialize_str::<Listed>(body).unwrap().expand;
        assert_eq!(read("expand="), Vec::<String>::new());
        assert_eq!(tree("expand="), br#"{"expand":[]}"#.to_vec());
        assert_eq!(read("expand[0]="), [""]);
        assert_ne!(tree("expand="), tree("expand[0]="));
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

    /// Stripe's `trial_end`: a Unix time or `now`, as the generated
    /// untagged union reads them; other text is left to the union to
    /// refuse.
    #[test]
    fn a_scalar_or_a_string_reads_each_as_itself() {
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(untagged)]
        enum TrialEnd {
            At(i64),
            Word(Now),
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(rename_all = "lowercase")]
        enum Now {
            Now,
        }
        #[derive(Deserialize)]
        struct P {
            trial_end: TrialEnd,
        }
        const PARAMS: &[Param] = &[Param::query("trial_end", Scalar::Integer).or_string()];
        let read = |text: &str| query(&[("trial_end", text)]).params_as::<P>(PARAMS);
        assert_eq!(read("1700000000").unwrap().trial_end, TrialEnd::At(1_700_000_000));
        assert_eq!(read("now").unwrap().trial_end, TrialEnd::Word(Now::Now));
        let refused = read("soon").err().unwrap();
        let status = refused.status;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{}", detail(refused));
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

    /// `/things/{id}.json` routed at `/things/{id}`: the `.json` is cut off
    /// before the parameter is read (the business code sees `abc`), and a
    /// segment without it is a 404, never passed on.
    #[tokio::test]
    async fn an_affixed_path_parameter_is_cut_or_not_found() {
        use tower::ServiceExt;

        static AFFIXES: &[PathAffix] = &[PathAffix::new("id", "", ".json")];
        async fn read(request: axum::extract::Request) -> axum::response::Response {
            use axum::response::IntoResponse;
            #[derive(Deserialize)]
            struct P {
                id: String,
            }
            let request = match Request::read(with_path_affixes(request, AFFIXES)).await {
                Ok(request) => request,
                Err(answer) => return answer,
            };
            let params: P = match request.params_as(&[Param::path("id", Scalar::String)]) {
                Ok(params) => params,
                Err(refused) => return refused.into_response(),
            };
            format!("{} {}", params.id, request.path_param("id").unwrap()).into_response()
        }
        let router = axum::Router::new().route("/things/{id}", axum::routing::get(read));
        let send = |path: &str| {
            let request = axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap();
            let router = router.clone();
            async move {
                let answer = router.oneshot(request).await.unwrap();
                let status = answer.status();
                let body = axum::body::to_bytes(answer.into_body(), usize::MAX)
                    .await
                    .unwrap();
                (status, String::from_utf8_lossy(&body).into_owned())
            }
        };
        assert_eq!(send("/things/abc.json").await, (StatusCode::OK, "abc abc".into()));
        // Percent-decoded first, as axum decodes every segment.
        assert_eq!(send("/things/a%20b%2Ejson").await, (StatusCode::OK, "a b a b".into()));
        for path in ["/things/abc", "/things/.json", "/things/abc.json.xml"] {
            let (status, body) = send(path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
            assert!(body.contains("not-found"), "{path}: {body}");
        }

        let prefixed = PathAffix::new("version", "v", "");
        assert_eq!(prefixed.cut("v2"), Some("2"));
        assert_eq!(prefixed.cut("2"), None);
        // Prefix and suffix never share a character of the segment.
        assert_eq!(PathAffix::new("x", "v", "v").cut("v"), None);
    }
}
