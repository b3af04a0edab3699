//! What a business function receives ([`Request`]) and returns ([`Reply`]).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::path::ErrorKind;
use axum::extract::rejection::{FailedToDeserializePathParams, PathRejection};
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::in_flight::{InFlight, Reservation};
use crate::principal::Principal;
use crate::problem::{self, ProblemKind};

/// Largest request body read (1 MiB; 413 beyond).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Largest answer body an engine stores unless
/// [`crate::Idempotency::with_max_stored_answer`] says otherwise (1 MiB).
pub const DEFAULT_MAX_STORED_ANSWER_BYTES: usize = 1024 * 1024;

/// How long a request's body may take to arrive once its headers have
/// (`408` after that; nothing is claimed).
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One decoded request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The request path, e.g. `/orders/42`.
    pub path: String,
    /// Path parameters by name, e.g. `order_no` for `/orders/{order_no}`.
    pub path_params: HashMap<String, String>,
    /// Query parameters by name, the last of repeated ones (the typed
    /// parameters of [`Request::params_as`] refuse a single-valued one
    /// sent twice).
    pub query: HashMap<String, String>,
    /// Every query parameter in the order sent, repeats included.
    pub query_pairs: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The caller the operation's security verified (`None`: an open
    /// operation). A service sets it after [`crate::authenticate`]; a
    /// [`Principal`] in the axum request's extensions is read into it.
    pub principal: Option<Principal>,
    /// The idempotency key to give downstream services this request's
    /// business step calls (a payment provider, another idempotent API):
    /// the same for every attempt of one key, so a retry after a timeout is
    /// recognised downstream instead of charged again. Set by the engine
    /// once the key is claimed (`None`: an operation without a key); see
    /// [`crate::Call::downstream_key`].
    pub downstream_key: Option<String>,
}

impl Request {
    /// The W3C trace-context headers (`traceparent`, `tracestate`) to add
    /// to a downstream call made while handling this request (a payment
    /// provider, another service), so that its spans join this request's
    /// trace: with spans exported (the `otel` feature and an OTLP
    /// endpoint), as children of this request's span; otherwise the
    /// caller's own headers passed on unchanged, so the downstream call
    /// still continues the caller's trace. Empty when the request came
    /// without a valid `traceparent` and no span of this service is
    /// exported.
    pub fn trace_headers(&self) -> HeaderMap {
        #[cfg(feature = "otel")]
        {
            let headers = crate::otel::current_trace_headers();
            if !headers.is_empty() {
                return headers;
            }
        }
        crate::trace_context::passed_on(&self.headers)
    }

    /// An empty request: no parameters, headers or body (for tests and
    /// examples; a service reads its requests with [`Request::read`]).
    pub fn new(method: Method, path: &str) -> Request {
        Request {
            method,
            path: path.to_string(),
            path_params: HashMap::new(),
            query: HashMap::new(),
            query_pairs: Vec::new(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            principal: None,
            downstream_key: None,
        }
    }

    /// Reads an axum request: its body up to [`MAX_BODY_BYTES`] (413
    /// beyond), path parameters (when routed by axum), query and headers.
    pub async fn read(request: axum::extract::Request) -> Result<Request, Response> {
        let (parts, body) = request.into_parts();
        let budget = parts.extensions.get::<InFlight>().cloned();
        let mut request = Request::read_head(parts).await?;
        request.body = read_body(&request.headers, body, budget).await?;
        Ok(request)
    }

    /// Everything of a request but its body (left empty), refusing what
    /// can be refused without reading it: a path the operation does not
    /// serve (404, first: it is no request of the operation), a transfer
    /// coding hyper does not undo (501), a declared length past
    /// [`MAX_BODY_BYTES`] (413), path and query parameters that are not
    /// UTF-8 (400).
    pub(crate) async fn read_head(
        mut parts: axum::http::request::Parts,
    ) -> Result<Request, Response> {
        let path_params = Path::<HashMap<String, String>>::from_request_parts(&mut parts, &()).await;
        let mut path_params = match path_params {
            Ok(Path(params)) => params,
            // A segment that is not UTF-8 once percent-decoded (`%ff`):
            // refused as such, where passing the rest on would report the
            // parameter as missing.
            Err(PathRejection::FailedToDeserializePathParams(error)) => {
                return Err(invalid_path(&error).into_response());
            }
            // Not routed by axum (a hand-written dispatcher): no parameters.
            Err(_) => HashMap::new(),
        };
        if let Err(not_found) = crate::input::cut_path_affixes(&parts, &mut path_params) {
            let mut not_found = not_found.into_response();
            not_found.extensions_mut().insert(crate::outcome::NotServed);
            return Err(not_found);
        }
        // hyper undoes `chunked` only, and once: a body under any other
        // transfer coding, or chunked twice, would be read as if it had none.
        match transfer_codings(&parts.headers) {
            TransferCodings::Chunked => {}
            TransferCodings::Unsupported(coding) => {
                return Err(Reply::refusal(
                    ProblemKind::UnsupportedTransferCoding,
                    StatusCode::NOT_IMPLEMENTED,
                    &format!(
                        "the transfer coding `{coding}` is not implemented here; send the body \
                         chunked or with a Content-Length"
                    ),
                )
                .into_response());
            }
            TransferCodings::ChunkedTwice => {
                return Err(Reply::refusal(
                    ProblemKind::InvalidBody,
                    StatusCode::BAD_REQUEST,
                    "the body is declared chunked more than once; chunk it once",
                )
                .into_response());
            }
        }
        if declared_length(&parts.headers).is_some_and(|length| length > MAX_BODY_BYTES) {
            return Err(too_large());
        }
        // Decoding replaces bytes that are not UTF-8 with U+FFFD, so
        // `?tenant=%ff` and `?tenant=%fe` would read as one tenant (or key,
        // or fingerprint): refused instead, as a path segment is.
        let raw_query = parts.uri.query().unwrap_or("");
        if let Some(name) = not_utf8_query_pair(raw_query) {
            return Err(Reply::refusal(
                ProblemKind::InvalidParameters,
                StatusCode::BAD_REQUEST,
                &format!("query parameter `{name}` is not UTF-8 text once percent-decoded"),
            )
            .into_response());
        }
        let query = Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|Query(query)| query)
            .unwrap_or_default();
        let principal = parts.extensions.remove::<Principal>();
        let query_pairs = form_urlencoded::parse(raw_query.as_bytes())
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
        Ok(Request {
            method: parts.method,
            path: parts.uri.path().to_string(),
            path_params,
            query,
            query_pairs,
            headers: parts.headers,
            body: Bytes::new(),
            principal,
            downstream_key: None,
        })
    }

    /// The JSON body as `T`; on failure a `400` problem to return as is.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Reply> {
        if let Some(why) = not_plain_json(&self.headers) {
            return Err(unsupported_media_type(&why));
        }
        serde_json::from_slice(&self.body).map_err(|error| {
            Reply::refusal(ProblemKind::InvalidBody, StatusCode::BAD_REQUEST, &error.to_string())
        })
    }

    /// The JSON body as `T`, for typed input checked before the key is
    /// claimed: a body declared as something other than UTF-8 JSON (its
    /// `Content-Type`, charset or `Content-Encoding`) is `415`, a body
    /// that is not JSON is `400`, JSON that does not fit `T` (a missing
    /// field, a wrong type) is `422`, all as `application/problem+json`
    /// saying where. Numbers are read by their exact decimal value, the
    /// one the request's fingerprint hashes: a whole number written with a
    /// fraction (`1999.0`, `1.999e3`) fits an integer field, as it fits
    /// JSON Schema's `integer`, while a number that is not whole
    /// (`99.99999999999999`, `100.0000000000000001`) or beyond any float
    /// (`1e400`) is refused naming the field, whatever float is nearest.
    ///
    /// ```
    /// use idemgen_runtime::Request;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Pay {
    ///     amount: u32,
    /// }
    /// let request = |body: &'static str| Request {
    ///     body: body.into(),
    ///     ..Request::new(axum::http::Method::POST, "/pay")
    /// };
    /// assert_eq!(request(r#"{"amount": 5}"#).body_as::<Pay>().unwrap().amount, 5);
    /// assert_eq!(request(r#"{"amount": 5.0}"#).body_as::<Pay>().unwrap().amount, 5);
    /// let inexact = request(r#"{"amount": 4.9999999999999999}"#).body_as::<Pay>();
    /// assert_eq!(inexact.err().unwrap().status.as_u16(), 422);
    /// let refused = request(r#"{"amount": "5"}"#).body_as::<Pay>().err().unwrap();
    /// assert_eq!(refused.status.as_u16(), 422);
    /// assert_eq!(request("{").body_as::<Pay>().err().unwrap().status.as_u16(), 400);
    /// ```
    pub fn body_as<T: DeserializeOwned>(&self) -> Result<T, Reply> {
        self.body_as_or(422)
    }

    /// [`Request::body_as`] answering `mismatch` (e.g. `400`, for an API
    /// that declares no `422`) for JSON that does not fit `T`.
    pub fn body_as_or<T: DeserializeOwned>(&self, mismatch: u16) -> Result<T, Reply> {
        self.body_checked_as(mismatch, &[])
    }

    /// [`Request::body_as_or`] that first checks the spec's validation
    /// keywords serde's types do not hold ([`crate::constraints`]): a value
    /// that breaks one is answered `mismatch`, naming its JSON pointer and
    /// the keyword, before anything is claimed.
    pub fn body_checked_as<T: DeserializeOwned>(
        &self,
        mismatch: u16,
        constraints: &[crate::Constraint],
    ) -> Result<T, Reply> {
        if let Some(why) = not_plain_json(&self.headers) {
            return Err(unsupported_media_type(&why));
        }
        let unfit = Reply::schema_mismatch(mismatch);
        let exact = crate::input::exact_json(&self.body).map_err(|unread| match unread {
            crate::input::Unread::NotJson(why) => Reply::refusal(
                ProblemKind::InvalidBody,
                StatusCode::BAD_REQUEST,
                &format!("the body is not JSON: {why}"),
            ),
            crate::input::Unread::Ambiguous(why) => {
                Reply::refusal(ProblemKind::AmbiguousBody, StatusCode::BAD_REQUEST, &why)
            }
            crate::input::Unread::Unfit(why) => unfit(why),
        })?;
        if !constraints.is_empty() {
            // A number beyond any float, even in a member the type ignores,
            // leaves no value to check the keywords on: refused, not let
            // past them.
            let value: serde_json::Value = crate::input::decode_exact(&exact)
                .map_err(|why| unfit(format!("{why}; the keywords cannot be checked")))?;
            crate::constraints::check(&value, constraints)
                .map_err(|violation| unfit(violation.to_string()))?;
        }
        // `T` from the text, not the value: an `f32` is rounded from the
        // decimal, not from the `f64` nearest it.
        crate::input::decode_exact(&exact).map_err(unfit)
    }

    pub fn path_param(&self, name: &str) -> Option<&str> {
        self.path_params.get(name).map(String::as_str)
    }
}

/// A request as [`crate::Idempotency::begin`] takes it: the axum request
/// as a handler receives it (read there with [`Request::read`]), or a
/// [`Request`] already read (e.g. authenticated first with
/// [`crate::authenticate`]). Sealed: these two are the only ones.
pub trait IntoRequest: sealed::Read {}

impl IntoRequest for axum::extract::Request {}
impl IntoRequest for Request {}

mod sealed {
    use std::future::Future;

    use axum::response::Response;

    use super::Request;

    /// Outside this crate the trait can be named but neither implemented
    /// nor called: which requests the engine takes is its own decision.
    pub trait Read: Send {
        fn into_request(self) -> impl Future<Output = Result<Request, Response>> + Send;
    }

    impl Read for axum::extract::Request {
        fn into_request(self) -> impl Future<Output = Result<Request, Response>> + Send {
            Request::read(self)
        }
    }

    impl Read for Request {
        async fn into_request(self) -> Result<Request, Response> {
            Ok(self)
        }
    }
}

/// The answer of one request: what the client gets, and what an idempotent
/// operation stores and replays: status, content type, body and the
/// headers the spec declares on that response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub body: Vec<u8>,
    /// Headers besides the content type (`Location`, `ETag`): sent, stored
    /// and replayed. A generated service puts only the ones its spec
    /// declares here. `Set-Cookie`, `Date` and `Retry-After` are sent but
    /// never stored; the headers that frame a message (`Content-Length`,
    /// `Content-Type`, `Transfer-Encoding`, …) and `Idempotent-Replayed`
    /// are the server's and are not sent from here.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Reply {
    /// How a body whose values do not fit its schema is refused, whatever it
    /// is sent as (JSON, a form, multipart): `mismatch` (`422`, or `400` for
    /// an API that declares no `422`; a status that is none is `422`) with a
    /// schema-mismatch problem saying `why`.
    pub(crate) fn schema_mismatch(mismatch: u16) -> impl Fn(String) -> Reply {
        let status = StatusCode::from_u16(mismatch).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
        move |why| Reply::refusal(ProblemKind::SchemaMismatch, status, &why)
    }

    /// The `400` of a `kind` body (`form`, `multipart`) that cannot be read as
    /// its schema says.
    pub(crate) fn invalid_body(kind: &str, why: impl std::fmt::Display) -> Reply {
        Reply::refusal(
            ProblemKind::InvalidBody,
            StatusCode::BAD_REQUEST,
            &format!("the {kind} body does not fit its schema: {why}"),
        )
    }

    /// A JSON body.
    pub fn json(status: StatusCode, value: &impl Serialize) -> Reply {
        Reply {
            status,
            content_type: "application/json".into(),
            body: serde_json::to_vec(value).expect("serialising to memory cannot fail"),
            headers: Vec::new(),
        }
    }

    /// An RFC 9457 problem (`application/problem+json`) of the business
    /// function's own, `type: about:blank` (the runtime's own refusals
    /// carry a [`crate::ProblemKind`]'s `type`).
    ///
    /// ```
    /// use axum::http::StatusCode;
    /// use idemgen_runtime::Reply;
    ///
    /// let reply = Reply::problem(StatusCode::NOT_FOUND, "unknown order", "no order `A1`");
    /// assert_eq!(reply.content_type, "application/problem+json");
    /// assert_eq!(
    ///     String::from_utf8(reply.body).unwrap(),
    ///     r#"{"detail":"no order `A1`","status":404,"title":"unknown order","type":"about:blank"}"#
    /// );
    /// ```
    pub fn problem(status: StatusCode, title: &str, detail: &str) -> Reply {
        Reply {
            status,
            content_type: "application/problem+json".into(),
            body: serde_json::to_vec(&serde_json::json!({
                "type": "about:blank",
                "title": title,
                "status": status.as_u16(),
                "detail": detail,
            }))
            .expect("serialising to memory cannot fail"),
            headers: Vec::new(),
        }
    }

    /// One of the runtime's own refusals: the problem `kind`, whose `type`
    /// and `title` are stable, with `status` and `detail`.
    ///
    /// ```
    /// use axum::http::StatusCode;
    /// use idemgen_runtime::{ProblemKind, Reply};
    ///
    /// let reply = Reply::refusal(ProblemKind::KeyReused, StatusCode::UNPROCESSABLE_ENTITY, "used for another order");
    /// assert_eq!(reply.content_type, "application/problem+json");
    /// let body: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    /// assert_eq!(body["type"], "urn:idemgen:problem:key-reused");
    /// assert_eq!(body["title"], "idempotency key reused");
    /// assert_eq!(body["status"], 422);
    /// ```
    pub fn refusal(kind: ProblemKind, status: StatusCode, detail: &str) -> Reply {
        Reply::from_parts(
            status,
            Some(problem::CONTENT_TYPE),
            kind.body(status, detail),
        )
    }

    /// An answer from its parts, e.g. a typed response's status, content
    /// type and serialised body: exactly these bytes are sent, stored and
    /// replayed. No content type means no body type (`application/octet-stream`
    /// is not assumed).
    pub fn from_parts(status: StatusCode, content_type: Option<&str>, body: Vec<u8>) -> Reply {
        Reply {
            status,
            content_type: content_type.unwrap_or_default().to_string(),
            body,
            headers: Vec::new(),
        }
    }

    /// The answer of a typed response: its status, content type and body
    /// as its generated `status()`, `content_type()` and `into_body()`
    /// give them. A body that failed to serialise, or a status that is not
    /// an HTTP status, is an error (a 500, rolled back).
    ///
    /// ```
    /// use idemgen_runtime::Reply;
    ///
    /// let reply = Reply::typed(201, Some("application/json"), serde_json::to_vec(&[1, 2])).unwrap();
    /// assert_eq!((reply.status.as_u16(), reply.body.as_slice()), (201, &b"[1,2]"[..]));
    /// assert!(Reply::typed(1000, None, Ok(Vec::new())).is_err());
    /// ```
    pub fn typed(
        status: u16,
        content_type: Option<&str>,
        body: Result<Vec<u8>, serde_json::Error>,
    ) -> Result<Reply, crate::BusinessError> {
        let status = StatusCode::from_u16(status)
            .map_err(|_| format!("{status} is not an HTTP status code"))?;
        Ok(Reply::from_parts(status, content_type, body?))
    }

    /// [`Reply::typed`], its JSON body also held to the validation
    /// keywords of the response it is sent as (`answers`, the table the
    /// generator writes per operation): a body that breaks one is an error
    /// naming the value and the keyword (a 500, rolled back), never an
    /// answer the spec does not allow, sent and stored for every retry.
    ///
    /// ```
    /// use idemgen_runtime::{AnswerConstraints, Check, Constraint, Reply};
    ///
    /// static ANSWERS: &[AnswerConstraints] = &[AnswerConstraints {
    ///     status: "200",
    ///     media_type: "application/json",
    ///     constraints: &[Constraint { at: "/amount", check: Check::Minimum("1") }],
    /// }];
    /// let json = Some("application/json");
    /// let paid = Reply::typed_checked(200, json, Ok(br#"{"amount":5}"#.to_vec()), ANSWERS);
    /// assert!(paid.is_ok());
    /// let refund = Reply::typed_checked(200, json, Ok(br#"{"amount":-5}"#.to_vec()), ANSWERS);
    /// assert_eq!(
    ///     refund.unwrap_err().to_string(),
    ///     "the 200 answer breaks the spec: /amount breaks `minimum`: -5 is less than 1"
    /// );
    /// ```
    pub fn typed_checked(
        status: u16,
        content_type: Option<&str>,
        body: Result<Vec<u8>, serde_json::Error>,
        answers: &'static [crate::constraints::AnswerConstraints],
    ) -> Result<Reply, crate::BusinessError> {
        let reply = Reply::typed(status, content_type, body)?;
        let constraints = crate::constraints::AnswerConstraints::of(
            answers,
            status,
            content_type.unwrap_or_default(),
        );
        if !constraints.is_empty() {
            let value: serde_json::Value = serde_json::from_slice(&reply.body)?;
            crate::constraints::check(&value, constraints)
                .map_err(|violation| format!("the {status} answer breaks the spec: {violation}"))?;
        }
        Ok(reply)
    }

    /// This answer with the headers of a typed response (its generated
    /// `headers()`), each name and the text of its value. A name or value
    /// that cannot be sent (a line break in a value) is an error (a 500,
    /// rolled back), never a header dropped in silence.
    ///
    /// ```
    /// use idemgen_runtime::Reply;
    ///
    /// let reply = Reply::typed(201, None, Ok(Vec::new()))
    ///     .unwrap()
    ///     .with_headers(vec![("Location", "/orders/42".to_string())])
    ///     .unwrap();
    /// assert_eq!(reply.headers[0].0, "location");
    /// assert_eq!(reply.headers[0].1, "/orders/42");
    /// assert!(Reply::typed(201, None, Ok(Vec::new()))
    ///     .unwrap()
    ///     .with_headers(vec![("Location", "/a\r\nSet-Cookie: x".to_string())])
    ///     .is_err());
    /// ```
    pub fn with_headers(
        mut self,
        headers: Vec<(&str, String)>,
    ) -> Result<Reply, crate::BusinessError> {
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("`{name}` is not a header name"))?;
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("the value of header `{name}` cannot be sent: {value:?}"))?;
            self.headers.push((name, value));
        }
        Ok(self)
    }

    /// The answer of a business function nobody has written yet.
    pub fn not_implemented(file: &str) -> Reply {
        Reply::refusal(ProblemKind::NotImplemented, 
            StatusCode::NOT_IMPLEMENTED,
            &format!("write this operation's business logic in {file}"),
        )
    }

    pub fn is_success(&self) -> bool {
        self.status.is_success()
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body).into_response();
        let headers = response.headers_mut();
        match HeaderValue::from_str(&self.content_type) {
            Ok(value) if !self.content_type.is_empty() => {
                headers.insert(header::CONTENT_TYPE, value);
            }
            _ => {
                headers.remove(header::CONTENT_TYPE);
            }
        }
        crate::response_headers::send(&self.headers, headers);
        response
    }
}

/// A path whose parameters cannot be read as text, answered `400`.
fn invalid_path(error: &FailedToDeserializePathParams) -> Reply {
    let detail = match error.kind() {
        ErrorKind::InvalidUtf8InPathParam { key } => {
            format!("path parameter `{key}` is not UTF-8 text once percent-decoded")
        }
        _ => error.body_text(),
    };
    Reply::refusal(
        ProblemKind::InvalidParameters,
        StatusCode::BAD_REQUEST,
        &detail,
    )
}

/// What a request's `Transfer-Encoding` asks of the reader.
enum TransferCodings {
    /// None, or `chunked` once: what hyper undoes.
    Chunked,
    /// The first coding other than `chunked`.
    Unsupported(String),
    ChunkedTwice,
}

fn transfer_codings(headers: &HeaderMap) -> TransferCodings {
    let codings: Vec<String> = headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .flat_map(|value| {
            String::from_utf8_lossy(value.as_bytes())
                .split(',')
                .map(|coding| coding.trim().to_string())
                .collect::<Vec<_>>()
        })
        // An empty list element is no coding (RFC 9110, section 5.6.1).
        .filter(|coding| !coding.is_empty())
        .collect();
    if let Some(other) = codings
        .iter()
        .find(|coding| !coding.eq_ignore_ascii_case("chunked"))
    {
        return TransferCodings::Unsupported(other.clone());
    }
    if codings.len() > 1 {
        return TransferCodings::ChunkedTwice;
    }
    TransferCodings::Chunked
}

/// Why a body with these headers is not plain UTF-8 JSON as sent: a
/// `Content-Type` that is not JSON (`application/json`, `text/json`,
/// `…+json`) or names another charset, or a content coding. No
/// `Content-Type` at all is read as JSON (RFC 9110 lets the recipient look
/// at the data).
fn not_plain_json(headers: &HeaderMap) -> Option<String> {
    if let Some(why) = crate::input::content_coded(headers) {
        return Some(why);
    }
    let mut types = headers.get_all(header::CONTENT_TYPE).iter();
    let content_type = match (types.next(), types.next()) {
        (None, _) => return None,
        (Some(value), None) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
        (Some(_), Some(_)) => return Some("`Content-Type` is sent more than once".to_string()),
    };
    let mut parts = content_type.split(';');
    let media_type = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    // `application/json`, `text/json` (ASP.NET's APIs declare both) and
    // any structured `…+json` type.
    let json = media_type
        .split_once('/')
        .is_some_and(|(kind, subtype)| {
            !kind.is_empty() && (subtype == "json" || subtype.ends_with("+json"))
        });
    if !json {
        return Some(format!("the body is declared `{content_type}`, not JSON"));
    }
    for parameter in parts {
        let (name, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        if name.trim().eq_ignore_ascii_case("charset")
            && !["utf-8", "utf8"]
                .iter()
                .any(|utf8| value.trim().trim_matches('"').eq_ignore_ascii_case(utf8))
        {
            return Some(format!(
                "the body is declared `{content_type}`, and JSON is read as UTF-8 only"
            ));
        }
    }
    None
}

fn unsupported_media_type(why: &str) -> Reply {
    Reply::refusal(
        ProblemKind::UnsupportedMediaType,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        &format!("{why}; send the body as UTF-8 JSON (`application/json`)"),
    )
}

/// The name (as decoded, lossily) of the first `name=value` pair of
/// `query` whose name or value is not UTF-8 once `+` and `%XX` are
/// decoded as `application/x-www-form-urlencoded` does.
fn not_utf8_query_pair(query: &str) -> Option<String> {
    fn decodes_to_utf8(text: &str) -> bool {
        let bytes = text.as_bytes();
        let mut decoded = Vec::with_capacity(bytes.len());
        let mut at = 0;
        while at < bytes.len() {
            let hex = |i: usize| bytes.get(i).and_then(|b| (*b as char).to_digit(16));
            match (bytes[at], hex(at + 1), hex(at + 2)) {
                (b'%', Some(high), Some(low)) => {
                    decoded.push((high * 16 + low) as u8);
                    at += 3;
                }
                (byte, _, _) => {
                    decoded.push(byte);
                    at += 1;
                }
            }
        }
        std::str::from_utf8(&decoded).is_ok()
    }
    query
        .split('&')
        .map(|pair| pair.split_once('=').unwrap_or((pair, "")))
        .find(|(name, value)| !decodes_to_utf8(name) || !decodes_to_utf8(value))
        .map(|(name, _)| {
            form_urlencoded::parse(name.as_bytes())
                .next()
                .map(|(name, _)| name.into_owned())
                .unwrap_or_default()
        })
}

/// The `Content-Length` a request declares, if it declares one.
fn declared_length(headers: &HeaderMap) -> Option<usize> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok())
}

/// Reads a request's body, up to [`MAX_BODY_BYTES`] (413 beyond) and
/// within [`BODY_READ_TIMEOUT`] (408), counting it against the bytes of
/// bodies its server reads at once (`503` with `Retry-After` past
/// them): a declared length is counted before anything is read, a
/// chunked body as it arrives. It is read into one buffer of the declared
/// size, so a body costs its size once.
/// A body hyper cannot parse (a chunk size past u64, a chunk extension
/// too long) or whose client went away is a 400 (it will not see it).
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: axum::body::Body,
    budget: Option<InFlight>,
) -> Result<Bytes, Response> {
    use http_body_util::BodyExt;

    let declared = declared_length(headers);
    let mut reservation = Reservation::new(budget);
    if declared.is_some_and(|length| !reservation.grow(length)) {
        return Err(too_busy());
    }
    let read = async {
        let mut buffer = Vec::with_capacity(declared.unwrap_or(0).min(MAX_BODY_BYTES));
        let mut body = std::pin::pin!(body);
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|error| unreadable_body(&error))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let length = buffer.len() + data.len();
            if length > MAX_BODY_BYTES {
                return Err(too_large());
            }
            let beyond = length.saturating_sub(reservation.bytes());
            if beyond > 0 && !reservation.grow(beyond) {
                return Err(too_busy());
            }
            buffer.extend_from_slice(&data);
        }
        Ok(Bytes::from(buffer))
    };
    match tokio::time::timeout(BODY_READ_TIMEOUT, read).await {
        Ok(read) => read,
        Err(_) => Err(Reply::refusal(
            ProblemKind::BodyTooSlow,
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the body did not arrive within {} s; send it again with the same key",
                BODY_READ_TIMEOUT.as_secs()
            ),
        )
        .into_response()),
    }
}

/// The answer to a body that would take the bytes of bodies read at once
/// past their bound: nothing was read or recorded, and the client retries.
fn too_busy() -> Response {
    let mut response = Reply::refusal(
        ProblemKind::Overloaded,
        StatusCode::SERVICE_UNAVAILABLE,
        "too many request bodies are being read at once; nothing was processed or recorded, \
         retry after `Retry-After` with the same key",
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The answer to a body `error` stopped reading: 400 saying what hyper
/// found.
fn unreadable_body(error: &axum::Error) -> Response {
    Reply::refusal(
        ProblemKind::InvalidBody,
        StatusCode::BAD_REQUEST,
        &format!("the body could not be read: {error}; nothing was processed or recorded"),
    )
    .into_response()
}

fn too_large() -> Response {
    Reply::refusal(ProblemKind::BodyTooLarge, 
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the body exceeds {MAX_BODY_BYTES} bytes; it was neither processed nor recorded"),
    )
    .into_response()
}
