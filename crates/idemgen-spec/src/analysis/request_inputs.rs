//! The query and header parameters an operation declares that its request
//! fingerprint can cover (`fingerprint.include`'s `query` and `headers`):
//! every one the business code reads, but the idempotency key itself and
//! credentials, which are never hashed into a record.
//!
//! Credentials are the parameters a security scheme the operation's
//! requirement names reads (an `apiKey` in a header or the query, and the
//! `Cookie` header when one travels in a cookie), and `Authorization`,
//! which carries every `http`, `oauth2` and `openIdConnect` credential.

use crate::contract::model::KeyLocation;
use crate::node::Node;
use crate::security::requirement;

use super::OperationContext;

/// Where a declared input travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputLocation {
    /// `in: query`, or an OpenAPI 3.2 `in: querystring` (the whole query).
    Query,
    Header,
}

/// One declared parameter the fingerprint can cover.
#[derive(Debug, Clone)]
pub struct RequestInput<'a> {
    pub location: InputLocation,
    /// As declared (a header's case as the spec writes it).
    pub name: String,
    /// The parameter's declaration, `$ref` followed.
    pub node: &'a Node,
}

impl<'a> OperationContext<'a> {
    /// The operation's declared query and header parameters (the path
    /// item's included), but the key and credentials, in declaration order.
    /// An OpenAPI 3.2 `in: querystring` parameter counts as the fields of
    /// its schema (as itself when its schema names none).
    pub fn request_inputs(&self) -> Vec<RequestInput<'a>> {
        let credentials = self.credentials();
        let key = self.key();
        let mut declared: Vec<RequestInput<'a>> = Vec::new();
        for node in self.parameters() {
            let Some(name) = node.get("name").and_then(Node::as_str) else {
                continue;
            };
            let input = |location, name: &str| RequestInput {
                location,
                name: name.to_string(),
                node,
            };
            match node.get("in").and_then(Node::as_str) {
                Some("query") => declared.push(input(InputLocation::Query, name)),
                // OpenAPI ignores header parameters with these names: the
                // request's media types and credentials say them.
                Some("header")
                    if ["accept", "content-type", "authorization"]
                        .iter()
                        .any(|ignored| name.eq_ignore_ascii_case(ignored)) => {}
                Some("header") => declared.push(input(InputLocation::Header, name)),
                Some("querystring") => {
                    let fields = self
                        .querystring_schema(node)
                        .and_then(|schema| schema.get("properties"))
                        .and_then(|properties| self.workspace.deref(properties))
                        .and_then(Node::as_map)
                        .filter(|fields| !fields.is_empty());
                    match fields {
                        Some(fields) => declared.extend(
                            fields
                                .iter()
                                .map(|field| input(InputLocation::Query, &field.key)),
                        ),
                        None => declared.push(input(InputLocation::Query, name)),
                    }
                }
                _ => {}
            }
        }
        declared.retain(|input| {
            let same = |location: InputLocation, name: &str| {
                location == input.location
                    && match location {
                        InputLocation::Header => name.eq_ignore_ascii_case(&input.name),
                        InputLocation::Query => name == input.name,
                    }
            };
            let is_key = key.is_some_and(|key| match key.location.value {
                KeyLocation::Header => same(InputLocation::Header, &key.name.value),
                KeyLocation::Query => same(InputLocation::Query, &key.name.value),
                KeyLocation::Body => false,
            });
            let is_credential = credentials
                .iter()
                .any(|(location, name)| same(*location, name));
            !is_key && !is_credential
        });
        declared
    }

    /// The names of the declared header parameters the fingerprint's
    /// `headers` hashes: lowercase, sorted, each once.
    pub fn fingerprinted_headers(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .request_inputs()
            .into_iter()
            .filter(|input| input.location == InputLocation::Header)
            .map(|input| input.name.to_ascii_lowercase())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Where credentials travel for this operation: `Authorization`, and
    /// each `apiKey` scheme's parameter that its security requirement
    /// names. A scheme that cannot be read adds nothing here; `gen`
    /// refuses it and `lint` reports it elsewhere.
    fn credentials(&self) -> Vec<(InputLocation, String)> {
        let mut found = vec![(InputLocation::Header, "Authorization".to_string())];
        let schemes = self
            .workspace
            .root()
            .get("components")
            .and_then(|components| components.get("securitySchemes"));
        let named = requirement(self.workspace, self.operation)
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_map)
            .flatten();
        for entry in named {
            let Some(scheme) = schemes
                .and_then(|schemes| schemes.get(&entry.key))
                .and_then(|scheme| self.workspace.deref(scheme))
            else {
                continue;
            };
            let text = |field: &str| scheme.get(field).and_then(Node::as_str);
            if text("type") != Some("apiKey") {
                continue;
            }
            let Some(name) = text("name") else {
                continue;
            };
            match text("in") {
                Some("header") => found.push((InputLocation::Header, name.to_string())),
                Some("query") => found.push((InputLocation::Query, name.to_string())),
                Some("cookie") => found.push((InputLocation::Header, "Cookie".to_string())),
                _ => {}
            }
        }
        found
    }
}
