//! Who may call an operation: its `security` requirements (else the
//! document's), resolved against `components.securitySchemes`.
//!
//! OpenAPI reads `security` as alternatives: any one requirement object
//! will do, and every scheme named in one must pass. `security: []` (or
//! none at all) leaves the operation open; an empty object `{}` among the
//! alternatives admits anonymous callers. The requirement in force is the
//! operation's own `security` when it has one (even `security: []`), else
//! the document's.

use super::Workspace;
use super::node::Node;
use super::operations::Operation;

/// How a scheme's credential travels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemeKind {
    /// `http` with scheme `bearer`.
    Bearer,
    /// `http` with scheme `basic`.
    Basic,
    /// `http` with another scheme (`digest`, …), named here.
    OtherHttp(String),
    /// `apiKey` in a header, query parameter or cookie.
    ApiKey { location: ApiKeyIn, name: String },
    /// `oauth2`: an access token, sent as `Authorization: Bearer`.
    OAuth2,
    /// `openIdConnect`: an ID or access token, sent as `Authorization: Bearer`.
    OpenIdConnect,
    /// `mutualTLS`: the TLS client certificate.
    MutualTls,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyIn {
    Header,
    Query,
    Cookie,
}

impl ApiKeyIn {
    pub fn name(self) -> &'static str {
        match self {
            ApiKeyIn::Header => "header",
            ApiKeyIn::Query => "query",
            ApiKeyIn::Cookie => "cookie",
        }
    }
}

/// One entry of `components.securitySchemes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    pub name: String,
    pub kind: SchemeKind,
}

/// An operation's security: alternatives of schemes that must all pass.
/// Empty: open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Security {
    pub alternatives: Vec<Vec<Scheme>>,
}

impl Security {
    /// No requirement, or an anonymous alternative among them.
    pub fn is_open(&self) -> bool {
        self.alternatives.is_empty() || self.alternatives.iter().any(Vec::is_empty)
    }

    /// Every scheme named, each once, in the order first named.
    pub fn schemes(&self) -> Vec<&Scheme> {
        let mut schemes: Vec<&Scheme> = Vec::new();
        for scheme in self.alternatives.iter().flatten() {
            if !schemes.iter().any(|known| known.name == scheme.name) {
                schemes.push(scheme);
            }
        }
        schemes
    }
}

/// The `security` list that applies to `operation`, if any applies.
pub fn requirement<'a>(workspace: &'a Workspace, operation: &Operation<'a>) -> Option<&'a Node> {
    operation
        .node
        .get("security")
        .or_else(|| workspace.root().get("security"))
}

/// Whether the requirement in force names a security scheme, so callers
/// authenticate and have a principal: some alternative is a non-empty
/// mapping. No `security`, `security: []`, or only empty alternatives
/// (`- {}`, anonymous access) name none.
pub fn authenticates(workspace: &Workspace, operation: &Operation<'_>) -> bool {
    requirement(workspace, operation)
        .and_then(Node::as_seq)
        .is_some_and(|alternatives| {
            alternatives.iter().any(|alternative| {
                alternative
                    .as_map()
                    .is_some_and(|schemes| !schemes.is_empty())
            })
        })
}

/// The security `operation` declares, or the document's when it declares
/// none. `Err`: a requirement the generated service could not enforce as
/// written (an unknown scheme, a scheme without its type), naming the
/// file, the place and the fix.
pub fn of_operation(workspace: &Workspace, operation: &Operation) -> Result<Security, String> {
    let Some(requirements) = requirement(workspace, operation) else {
        return Ok(Security::default());
    };
    let at = |node: &Node| {
        format!(
            "{}:{} ({})",
            workspace.file(node.span.file).display,
            node.span.line,
            workspace.pointer_at(node.span)
        )
    };
    let Some(requirements) = requirements.as_seq() else {
        return Err(format!(
            "{}: `security` must be a list of requirement objects, e.g. `- bearerAuth: []`",
            at(requirements)
        ));
    };
    let mut alternatives = Vec::new();
    for requirement in requirements {
        let Some(entries) = requirement.as_map() else {
            return Err(format!(
                "{}: a security requirement is an object naming schemes, e.g. `bearerAuth: []`",
                at(requirement)
            ));
        };
        let mut schemes = Vec::new();
        for entry in entries {
            schemes.push(scheme(workspace, &entry.key).ok_or_else(|| {
                format!(
                    "{}: the security requirement names `{}`, which \
                     components.securitySchemes does not define; define it there or remove it",
                    at(&entry.value),
                    entry.key
                )
            })??);
        }
        alternatives.push(schemes);
    }
    Ok(Security { alternatives })
}

/// The scheme `name` of `components.securitySchemes`: `None` when it is
/// not defined, `Some(Err)` when it is but cannot be read.
fn scheme(workspace: &Workspace, name: &str) -> Option<Result<Scheme, String>> {
    let node = workspace
        .root()
        .get("components")?
        .get("securitySchemes")?
        .get(name)?;
    let node = workspace.deref(node)?;
    let at = format!(
        "{}:{} ({})",
        workspace.file(node.span.file).display,
        node.span.line,
        workspace.pointer_at(node.span)
    );
    let text = |field: &str| node.get(field).and_then(Node::as_str);
    let kind = match text("type") {
        Some("http") => match text("scheme").map(str::to_ascii_lowercase).as_deref() {
            Some("bearer") => SchemeKind::Bearer,
            Some("basic") => SchemeKind::Basic,
            Some(other) => SchemeKind::OtherHttp(other.to_string()),
            None => {
                return Some(Err(format!(
                    "{at}: the http security scheme `{name}` needs `scheme: bearer` or `scheme: basic`"
                )));
            }
        },
        Some("apiKey") => {
            let location = match text("in") {
                Some("header") => ApiKeyIn::Header,
                Some("query") => ApiKeyIn::Query,
                Some("cookie") => ApiKeyIn::Cookie,
                _ => {
                    return Some(Err(format!(
                        "{at}: the apiKey security scheme `{name}` needs `in: header`, `in: query` or `in: cookie`"
                    )));
                }
            };
            let Some(key_name) = text("name").filter(|key_name| !key_name.is_empty()) else {
                return Some(Err(format!(
                    "{at}: the apiKey security scheme `{name}` needs the `name` of its {}",
                    location.name()
                )));
            };
            SchemeKind::ApiKey {
                location,
                name: key_name.to_string(),
            }
        }
        Some("oauth2") => SchemeKind::OAuth2,
        Some("openIdConnect") => SchemeKind::OpenIdConnect,
        Some("mutualTLS") => SchemeKind::MutualTls,
        Some(other) => {
            return Some(Err(format!(
                "{at}: the security scheme `{name}` has type `{other}`; OpenAPI defines \
                 http, apiKey, oauth2, openIdConnect and mutualTLS"
            )));
        }
        None => {
            return Some(Err(format!(
                "{at}: the security scheme `{name}` needs a `type` (http, apiKey, oauth2, \
                 openIdConnect or mutualTLS)"
            )));
        }
    };
    Some(Ok(Scheme {
        name: name.to_string(),
        kind,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn security_of(yaml: &str) -> Vec<Result<Security, String>> {
        let workspace = Workspace::from_text(
            std::path::Path::new("openapi.yaml"),
            "openapi.yaml".into(),
            yaml.to_string(),
        )
        .unwrap();
        super::super::operations::operations(&workspace)
            .iter()
            .map(|operation| of_operation(&workspace, operation))
            .collect()
    }

    const SCHEMES: &str = "
components:
  securitySchemes:
    bearerAuth: {type: http, scheme: Bearer}
    basicAuth: {type: http, scheme: basic}
    signature: {type: apiKey, in: header, name: X-Signature}
    session: {type: apiKey, in: cookie, name: sid}
    oauth: {type: oauth2, flows: {}}
";

    #[test]
    fn the_operation_overrides_the_document_and_empty_lists_are_open() {
        let yaml = format!(
            "openapi: 3.1.0
info: {{title: t, version: '1'}}
security: [{{bearerAuth: []}}]
paths:
  /a:
    post: {{responses: {{'200': {{description: ok}}}}}}
    put:
      security: []
      responses: {{'200': {{description: ok}}}}
    patch:
      security: [{{signature: [], session: []}}, {{basicAuth: []}}, {{}}]
      responses: {{'200': {{description: ok}}}}
    delete:
      security: [{{oauth: [write]}}]
      responses: {{'200': {{description: ok}}}}
{SCHEMES}"
        );
        let found = security_of(&yaml);
        // In the order of `operations::METHODS`.
        let [put, post, delete, patch] = found.as_slice() else {
            panic!("{found:?}")
        };
        let post = post.as_ref().unwrap();
        assert_eq!(post.alternatives.len(), 1);
        assert_eq!(post.alternatives[0][0].kind, SchemeKind::Bearer);
        assert!(!post.is_open());
        assert!(put.as_ref().unwrap().is_open());
        let patch = patch.as_ref().unwrap();
        assert_eq!(patch.alternatives.len(), 3);
        assert_eq!(
            patch.alternatives[0][1].kind,
            SchemeKind::ApiKey {
                location: ApiKeyIn::Cookie,
                name: "sid".into()
            }
        );
        assert!(patch.is_open(), "the `{{}}` alternative admits anyone");
        assert_eq!(
            delete.as_ref().unwrap().alternatives[0][0].kind,
            SchemeKind::OAuth2
        );
    }

    #[test]
    fn unknown_and_incomplete_schemes_are_reported_with_their_place() {
        let found = security_of(
            "openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /a:
    post:
      security: [{nope: []}]
      responses: {'200': {description: ok}}
    put:
      security: [{half: []}]
      responses: {'200': {description: ok}}
components:
  securitySchemes:
    half: {type: apiKey, in: header}
",
        );
        // `put` comes first, in the order of `operations::METHODS`.
        let unknown = found[1].as_ref().unwrap_err();
        assert!(unknown.starts_with("openapi.yaml:6"), "{unknown}");
        assert!(unknown.contains("`nope`"), "{unknown}");
        assert!(
            unknown.contains("define it there or remove it"),
            "{unknown}"
        );
        let half = found[0].as_ref().unwrap_err();
        assert!(half.contains("needs the `name` of its header"), "{half}");
    }
}
