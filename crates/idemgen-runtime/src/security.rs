//! Who may call an operation: the spec's `security` requirements, checked
//! before anything else happens to a request.
//!
//! An operation's [`Security`] lists alternatives (OpenAPI's array of
//! requirement objects: any one will do); each alternative lists schemes
//! that must all pass (the schemes of one requirement object). For every
//! scheme of an alternative, [`authenticate`] reads the credential where
//! the scheme says it travels (`Authorization: Bearer`, `Authorization:
//! Basic`, an API key in a header, query parameter or cookie) and hands it
//! to a [`Verify`]: the service's own code, which returns the verified
//! [`Principal`] or a [`Refusal`]. A request no alternative admits is
//! answered `401` (or `403`) as `application/problem+json`, with
//! `WWW-Authenticate` for the `http` schemes, before its key is read: it
//! claims nothing, records nothing and leaves its key unused.
//!
//! Credentials are secrets: [`Credential`]'s `Debug` prints none of them,
//! and the engine never hashes or stores them (see
//! [`Security::query_credentials`]).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::principal::Principal;
use crate::problem::ProblemKind;
use crate::reply::{Reply, Request};

/// Where an API key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyIn {
    Header,
    Query,
    Cookie,
}

/// How a scheme presents its credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemeKind {
    /// `http` with scheme `bearer`, and `oauth2` / `openIdConnect`, whose
    /// access tokens reach a resource server as `Authorization: Bearer`.
    Bearer,
    /// `http` with scheme `basic`.
    Basic,
    /// `apiKey`: a named header, query parameter or cookie.
    ApiKey {
        location: ApiKeyIn,
        name: &'static str,
    },
    /// A scheme whose credential is not a plain request value (`mutualTLS`,
    /// other `http` schemes): the verifier reads the request itself.
    Request,
}

/// One scheme of `components.securitySchemes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    /// Its name in `components.securitySchemes`.
    pub name: &'static str,
    pub kind: SchemeKind,
    /// The `realm` of a `Basic` challenge.
    pub realm: &'static str,
}

/// An operation's security: alternatives of schemes that must all pass.
/// No alternatives (`&[]`) is an open operation; an empty alternative
/// (`&[&[]]`, the spec's `{}`) admits anonymous callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Security {
    pub alternatives: &'static [&'static [Scheme]],
}

impl Security {
    /// No requirement (`security: []`, or none declared): open to everyone.
    pub const OPEN: Security = Security { alternatives: &[] };

    pub fn is_open(&self) -> bool {
        self.alternatives.is_empty() || self.alternatives.iter().any(|schemes| schemes.is_empty())
    }

    /// The query parameters that carry API keys: left out of the request
    /// fingerprint, so that a secret is never hashed into a record.
    pub fn query_credentials(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.alternatives
            .iter()
            .flat_map(|schemes| schemes.iter())
            .filter_map(|scheme| match scheme.kind {
                SchemeKind::ApiKey {
                    location: ApiKeyIn::Query,
                    name,
                } => Some(name),
                _ => None,
            })
    }

    /// The headers that carry API keys, and `Cookie` when a key travels in
    /// a cookie: left out of the request fingerprint like the query's
    /// (`Authorization` always is).
    pub fn header_credentials(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.alternatives
            .iter()
            .flat_map(|schemes| schemes.iter())
            .filter_map(|scheme| match scheme.kind {
                SchemeKind::ApiKey {
                    location: ApiKeyIn::Header,
                    name,
                } => Some(name),
                SchemeKind::ApiKey {
                    location: ApiKeyIn::Cookie,
                    ..
                } => Some("Cookie"),
                _ => None,
            })
    }
}

/// A credential as the request carried it. Its `Debug` output hides the
/// secret, so logging one never leaks it.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// The token of `Authorization: Bearer <token>`.
    Bearer(String),
    /// The decoded `user:password` of `Authorization: Basic`.
    Basic { user: String, password: String },
    /// The value of an API key.
    ApiKey(String),
    /// Nothing read: a [`SchemeKind::Request`] scheme verifies the request.
    Request,
    /// The request carries none for this scheme (or an empty one, one sent
    /// twice, or an `Authorization` of another scheme). Refuse it with
    /// [`Refusal::missing`], unless the service deliberately runs open.
    Missing,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            Credential::Basic { user, .. } => f
                .debug_struct("Basic")
                .field("user", user)
                .field("password", &"<redacted>")
                .finish(),
            Credential::ApiKey(_) => f.write_str("ApiKey(<redacted>)"),
            Credential::Request => f.write_str("Request"),
            Credential::Missing => f.write_str("Missing"),
        }
    }
}

/// Why a credential is not accepted: `401` (not authenticated) or `403`
/// (authenticated, not allowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    /// What the client is told (never the credential itself).
    pub detail: String,
}

impl Refusal {
    /// `401`: the credential does not prove who the caller is.
    pub fn unauthenticated(detail: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            detail: detail.into(),
        }
    }

    /// `403`: the caller is known and not allowed this operation.
    pub fn forbidden(detail: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            detail: detail.into(),
        }
    }

    /// `401` for a [`Credential::Missing`]: says how to send one.
    pub fn missing(scheme: &Scheme) -> Refusal {
        Refusal::unauthenticated(match scheme.kind {
            SchemeKind::Bearer => "send `Authorization: Bearer <token>`".to_string(),
            SchemeKind::Basic => {
                "send `Authorization: Basic <base64 of user:password>`".to_string()
            }
            SchemeKind::ApiKey { location, name } => {
                let place = match location {
                    ApiKeyIn::Header => "header",
                    ApiKeyIn::Query => "query parameter",
                    ApiKeyIn::Cookie => "cookie",
                };
                format!("send the API key in the {place} `{name}`, once")
            }
            SchemeKind::Request => format!("the request does not satisfy `{}`", scheme.name),
        })
    }

    /// `401` from a verifier nobody has written yet, naming its file.
    pub fn not_written(scheme: &Scheme, file: &str) -> Refusal {
        Refusal::unauthenticated(format!(
            "credentials of the security scheme `{}` are not verified yet: write the check in {file}",
            scheme.name
        ))
    }
}

/// The service's credential check: the verified principal, or why not.
pub trait Verify: Send + Sync {
    fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> impl Future<Output = Result<Principal, Refusal>> + Send;

    /// What can be told of `credential` before the request's body is read
    /// (`request.body` is empty here): whether it is there, well formed,
    /// not expired. [`read_authenticated`] refuses a request this refuses
    /// without reading its body, so a client with no credential, a
    /// malformed one or a stale signature cannot make the server hold a
    /// body. It must refuse only what [`Verify::verify`] would refuse
    /// too; by default it refuses nothing.
    fn precheck(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> Result<(), Refusal> {
        let _ = (scheme, credential, request);
        Ok(())
    }
}

/// [`Verify::precheck`] in the place of [`Verify::verify`].
struct Precheck<'a, V>(&'a V);

impl<V: Verify> Verify for Precheck<'_, V> {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> Result<Principal, Refusal> {
        self.0
            .precheck(scheme, credential, request)
            .map(|()| Principal::new("", scheme.name))
    }
}

/// Reads `request` and checks it against `security` with `verifier`:
/// first [`Verify::precheck`] on its head, so a request refused there is
/// answered 401 (or 403) with its body unread, then, with the body,
/// [`authenticate`]. The principal is set on the request returned.
pub async fn read_authenticated(
    security: &'static Security,
    verifier: &impl Verify,
    request: axum::extract::Request,
) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let budget = parts.extensions.get::<crate::in_flight::InFlight>().cloned();
    let mut request = Request::read_head(parts).await?;
    if !security.alternatives.is_empty() {
        authenticate(security, &Precheck(verifier), &request).await?;
    }
    request.body = crate::reply::read_body(&request.headers, body, budget).await?;
    request.principal = authenticate(security, verifier, &request).await?;
    Ok(request)
}

/// A verifier that admits no credential: for an app whose credential
/// check is not configured (one made for tests, say), so that a secured
/// operation fails closed (`401`) while open ones and anonymous
/// alternatives still run.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoVerifier;

impl Verify for NoVerifier {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        _credential: &Credential,
        _request: &Request,
    ) -> Result<Principal, Refusal> {
        Err(Refusal::unauthenticated(format!(
            "credentials of the security scheme `{}` cannot be verified: this service has no \
             credential check configured",
            scheme.name
        )))
    }
}

/// Checks `request` against `security`: `Ok(None)` for an open operation
/// (or an anonymous alternative when no other passes), `Ok(Some)` the
/// principal of the first alternative whose schemes all pass (that of its
/// first scheme), `Err` the `401`/`403` answer. Alternatives are tried in
/// the spec's order; the verifier sees every scheme's credential, a
/// [`Credential::Missing`] too (so that a service may run open on
/// purpose, e.g. before its secret is configured).
pub async fn authenticate(
    security: &'static Security,
    verifier: &impl Verify,
    request: &Request,
) -> Result<Option<Principal>, Response> {
    if security.alternatives.is_empty() {
        return Ok(None);
    }
    let mut refusal: Option<Refusal> = None;
    let mut anonymous = false;
    // A credential that was sent and refused is an answer of its own: the
    // anonymous alternative admits callers who sent none, not callers
    // whose credential failed.
    let mut sent_and_refused = false;
    'alternatives: for schemes in security.alternatives {
        if schemes.is_empty() {
            anonymous = true;
            continue;
        }
        let mut principal = None;
        for scheme in *schemes {
            let credential = credential(scheme, request);
            match verifier.verify(scheme, &credential, request).await {
                Ok(verified) => {
                    principal.get_or_insert(verified);
                }
                Err(refused) => {
                    // A `Request` scheme (mutual TLS, say) reads nothing
                    // the caller chose to send: its refusal is not one.
                    sent_and_refused |=
                        !matches!(credential, Credential::Missing | Credential::Request);
                    // The first 403 wins: the caller is known, and not allowed.
                    refusal = Some(match refusal {
                        Some(earlier) if earlier.status == StatusCode::FORBIDDEN => earlier,
                        Some(earlier) if credential == Credential::Missing => earlier,
                        _ => refused,
                    });
                    continue 'alternatives;
                }
            }
        }
        return Ok(principal);
    }
    if anonymous && !sent_and_refused {
        return Ok(None);
    }
    let refusal = refusal.unwrap_or_else(|| Refusal::unauthenticated("credentials are required"));
    Err(refused(security, &refusal))
}

/// The problem answer to `refusal`, with a challenge per `http` scheme.
fn refused(security: &Security, refusal: &Refusal) -> Response {
    let kind = if refusal.status == StatusCode::FORBIDDEN {
        ProblemKind::Forbidden
    } else {
        ProblemKind::Unauthenticated
    };
    let mut response = Reply::refusal(kind, refusal.status, &refusal.detail).into_response();
    if refusal.status == StatusCode::UNAUTHORIZED {
        let mut challenges: Vec<String> = Vec::new();
        for scheme in security
            .alternatives
            .iter()
            .flat_map(|schemes| schemes.iter())
        {
            let challenge = match scheme.kind {
                SchemeKind::Bearer => "Bearer".to_string(),
                SchemeKind::Basic => format!(
                    "Basic realm=\"{}\", charset=\"UTF-8\"",
                    scheme.realm.replace(['"', '\\'], "")
                ),
                _ => continue,
            };
            if !challenges.contains(&challenge) {
                challenges.push(challenge);
            }
        }
        for challenge in challenges {
            if let Ok(value) = HeaderValue::from_str(&challenge) {
                response
                    .headers_mut()
                    .append(header::WWW_AUTHENTICATE, value);
            }
        }
    }
    response
}

/// The credential `scheme` reads from `request`.
pub(crate) fn credential(scheme: &Scheme, request: &Request) -> Credential {
    let found = match scheme.kind {
        // A b64token holds no blank (RFC 6750, section 2.1): `Bearer a b`
        // is no token, not the token `a b` for the verifier to judge.
        SchemeKind::Bearer => authorization(request, "Bearer")
            .filter(|token| !token.contains(char::is_whitespace))
            .map(Credential::Bearer),
        SchemeKind::Basic => {
            authorization(request, "Basic").and_then(|encoded| decode_basic(&encoded))
        }
        SchemeKind::ApiKey { location, name } => match location {
            ApiKeyIn::Header => single_header(request, name),
            ApiKeyIn::Query => {
                let mut values = request.query_pairs.iter().filter(|(key, _)| key == name);
                match (values.next(), values.next()) {
                    (Some((_, value)), None) => Some(value.clone()),
                    _ => None,
                }
            }
            ApiKeyIn::Cookie => cookie(request, name),
        }
        .filter(|value| !value.is_empty())
        .map(Credential::ApiKey),
        SchemeKind::Request => Some(Credential::Request),
    };
    found.unwrap_or(Credential::Missing)
}

/// The one value of header `name`, if sent exactly once as text.
fn single_header(request: &Request, name: &str) -> Option<String> {
    let mut values = request.headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value.to_str().ok().map(str::to_string),
        _ => None,
    }
}

/// The credential of `Authorization: <auth_scheme> <credential>`
/// (the scheme name is case-insensitive).
fn authorization(request: &Request, auth_scheme: &str) -> Option<String> {
    let value = single_header(request, header::AUTHORIZATION.as_str())?;
    let (name, rest) = value.split_once(' ')?;
    let rest = rest.trim();
    (name.eq_ignore_ascii_case(auth_scheme) && !rest.is_empty()).then(|| rest.to_string())
}

/// The value of cookie `name` across every `Cookie` header.
fn cookie(request: &Request, name: &str) -> Option<String> {
    let mut found = request
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(key, _)| *key == name)
        .map(|(_, value)| value.trim_matches('"').to_string());
    match (found.next(), found.next()) {
        (Some(value), None) => Some(value),
        _ => None,
    }
}

/// `user:password` from standard base64 (RFC 7617).
fn decode_basic(encoded: &str) -> Option<Credential> {
    let bytes = base64_decode(encoded)?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some(Credential::Basic {
        user: user.to_string(),
        password: password.to_string(),
    })
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    fn value(byte: u8) -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let trimmed = text.trim_end_matches('=');
    if !text.len().is_multiple_of(4) || text.len() - trimmed.len() > 2 {
        return None;
    }
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    for chunk in trimmed.as_bytes().chunks(4) {
        let mut bits = 0u32;
        for (i, byte) in chunk.iter().enumerate() {
            bits |= value(*byte)? << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEARER: Scheme = Scheme {
        name: "bearer",
        kind: SchemeKind::Bearer,
        realm: "",
    };
    const BASIC: Scheme = Scheme {
        name: "basic",
        kind: SchemeKind::Basic,
        realm: "shop",
    };
    const KEY: Scheme = Scheme {
        name: "key",
        kind: SchemeKind::ApiKey {
            location: ApiKeyIn::Header,
            name: "X-Api-Key",
        },
        realm: "",
    };
    const COOKIE: Scheme = Scheme {
        name: "session",
        kind: SchemeKind::ApiKey {
            location: ApiKeyIn::Cookie,
            name: "sid",
        },
        realm: "",
    };

    /// Accepts `good` as every secret; the principal is the secret's owner.
    struct Accept;

    impl Verify for Accept {
        async fn verify(
            &self,
            scheme: &'static Scheme,
            credential: &Credential,
            _request: &Request,
        ) -> Result<Principal, Refusal> {
            match credential {
                Credential::Bearer(secret) | Credential::ApiKey(secret) if secret == "good" => Ok(
                    Principal::new(format!("{}-owner", scheme.name), scheme.name),
                ),
                Credential::Basic { user, password } if password == "good" => {
                    Ok(Principal::new(user.clone(), scheme.name))
                }
                Credential::ApiKey(secret) if secret == "banned" => {
                    Err(Refusal::forbidden("banned"))
                }
                Credential::Missing => Err(Refusal::missing(scheme)),
                _ => Err(Refusal::unauthenticated("wrong credential")),
            }
        }
    }

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut request = Request::new(axum::http::Method::POST, "/pay");
        for (name, value) in headers {
            request.headers.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        request
    }

    #[test]
    fn a_bearer_token_with_a_blank_inside_is_no_token() {
        let read = |value: &str| credential(&BEARER, &request(&[("authorization", value)]));
        assert!(matches!(read("Bearer tok-alice"), Credential::Bearer(token) if token == "tok-alice"));
        assert!(matches!(read("bearer  tok-alice "), Credential::Bearer(token) if token == "tok-alice"));
        assert!(matches!(read("Bearer tok-alice extra"), Credential::Missing));
        assert!(matches!(read("Bearer tok\talice"), Credential::Missing));
    }

    async fn check(
        security: &'static Security,
        headers: &[(&str, &str)],
    ) -> Result<Option<String>, Response> {
        authenticate(security, &Accept, &request(headers))
            .await
            .map(|principal| principal.map(|principal| principal.id))
    }

    #[tokio::test]
    async fn one_alternative_of_several_is_enough_and_all_its_schemes_must_pass() {
        static EITHER: Security = Security {
            alternatives: &[&[BEARER], &[BASIC]],
        };
        assert_eq!(
            check(&EITHER, &[("authorization", "Bearer good")])
                .await
                .unwrap(),
            Some("bearer-owner".into())
        );
        // "alice:good"
        assert_eq!(
            check(&EITHER, &[("authorization", "Basic YWxpY2U6Z29vZA==")])
                .await
                .unwrap(),
            Some("alice".into())
        );
        let refused = check(&EITHER, &[("authorization", "Bearer bad")])
            .await
            .unwrap_err();
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        let challenges: Vec<_> = refused
            .headers()
            .get_all(header::WWW_AUTHENTICATE)
            .iter()
            .collect();
        assert_eq!(
            challenges,
            ["Bearer", "Basic realm=\"shop\", charset=\"UTF-8\""]
        );
        assert_eq!(
            refused.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );

        static BOTH: Security = Security {
            alternatives: &[&[KEY, BEARER]],
        };
        assert_eq!(
            check(
                &BOTH,
                &[("x-api-key", "good"), ("authorization", "Bearer good")]
            )
            .await
            .unwrap(),
            Some("key-owner".into())
        );
        assert!(check(&BOTH, &[("x-api-key", "good")]).await.is_err());
        assert!(
            check(
                &BOTH,
                &[("x-api-key", "good"), ("authorization", "Bearer bad")]
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn open_anonymous_forbidden_and_cookies() {
        assert_eq!(check(&Security::OPEN, &[]).await.unwrap(), None);
        static OPTIONAL: Security = Security {
            alternatives: &[&[KEY], &[]],
        };
        assert_eq!(check(&OPTIONAL, &[]).await.unwrap(), None);
        assert_eq!(
            check(&OPTIONAL, &[("x-api-key", "good")]).await.unwrap(),
            Some("key-owner".into())
        );
        static KEYED: Security = Security {
            alternatives: &[&[KEY]],
        };
        let banned = check(&KEYED, &[("x-api-key", "banned")]).await.unwrap_err();
        assert_eq!(banned.status(), StatusCode::FORBIDDEN);
        assert!(banned.headers().get(header::WWW_AUTHENTICATE).is_none());
        let twice = check(&KEYED, &[("x-api-key", "good"), ("x-api-key", "good")]).await;
        assert_eq!(twice.unwrap_err().status(), StatusCode::UNAUTHORIZED);
        static SESSION: Security = Security {
            alternatives: &[&[COOKIE]],
        };
        assert_eq!(
            check(&SESSION, &[("cookie", "theme=dark; sid=good")])
                .await
                .unwrap(),
            Some("session-owner".into())
        );
        assert!(check(&SESSION, &[("cookie", "sid=bad")]).await.is_err());
    }

    #[test]
    fn credentials_never_show_in_debug_output() {
        let shown = format!(
            "{:?} {:?} {:?}",
            Credential::Bearer("s3cret-token".into()),
            Credential::ApiKey("s3cret-key".into()),
            Credential::Basic {
                user: "alice".into(),
                password: "s3cret-password".into()
            }
        );
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("alice"), "{shown}");
    }

    #[test]
    fn basic_credentials_decode_as_rfc_7617_says() {
        assert_eq!(
            decode_basic("QWxhZGRpbjpvcGVuIHNlc2FtZQ=="),
            Some(Credential::Basic {
                user: "Aladdin".into(),
                password: "open sesame".into()
            })
        );
        assert_eq!(decode_basic("QWxhZGRpbg=="), None, "no colon");
        assert_eq!(decode_basic("not base64!"), None);
        assert_eq!(base64_decode("YQ==").unwrap(), b"a");
        assert_eq!(base64_decode("YWI=").unwrap(), b"ab");
        assert_eq!(base64_decode("YWJj").unwrap(), b"abc");
    }
}
