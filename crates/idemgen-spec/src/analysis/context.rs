//! One operation with its merged contract, and the spec look-ups every
//! consumer shares: parameters, responses and request schemas with `$ref`s
//! followed.

use crate::contract::model::KeySpec;
use crate::contract::parse::ContractError;
use crate::contract::{Contract, Origin};
use crate::operations::Operation;
use std::collections::HashSet;

use crate::{Entry, Node, Workspace};

use super::ContractState;

/// An operation as rules, the probe and the generator look at it.
pub struct OperationContext<'a> {
    pub workspace: &'a Workspace,
    pub operation: &'a Operation<'a>,
    pub state: &'a ContractState,
    /// Problems in the operation's own block, and required fields missing
    /// after merging.
    pub contract_errors: &'a [ContractError],
}

impl<'a> OperationContext<'a> {
    pub fn contract(&self) -> Option<&'a Contract> {
        match self.state {
            ContractState::Present(contract) => Some(contract),
            _ => None,
        }
    }

    /// The contract's key, when the operation has a contract that names one.
    pub fn key(&self) -> Option<&'a KeySpec> {
        self.contract()?.key.as_ref()
    }

    /// Name for messages: operationId, else `METHOD /path`.
    pub fn name(&self) -> String {
        self.operation.name()
    }

    /// Where to point when a finding is about the operation as a whole:
    /// its method's key (`post:`), where a reader and a pull request's diff
    /// look for it; the operation's mapping starts at its first child, a
    /// line further down in YAML. The operation's own node when no key of
    /// the path item names it (a 3.2 custom method).
    pub fn operation_origin(&self) -> Origin {
        let method = self.operation.method.to_ascii_lowercase();
        let key = self
            .operation
            .path_item
            .as_map()
            .and_then(|entries| entries.iter().find(|entry| *entry.key == *method))
            .filter(|_| !self.operation.custom)
            .map(|entry| entry.key_span);
        Origin {
            span: key.unwrap_or(self.operation.node.span),
            pointer: self.operation.pointer.clone(),
        }
    }

    /// Where to point for a finding about the operation's responses.
    pub fn responses_origin(&self) -> Origin {
        match self.operation.node.get("responses") {
            Some(node) => Origin {
                span: node.span,
                pointer: format!("{}/responses", self.operation.pointer),
            },
            None => self.operation_origin(),
        }
    }

    /// Declared parameters: the path item's, overridden by the operation's
    /// (same name and location), each with `$ref`s followed.
    pub fn parameters(&self) -> Vec<&'a Node> {
        let mut found: Vec<&'a Node> = Vec::new();
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let lists = [self.operation.node, self.operation.path_item]
            .into_iter()
            .filter_map(|holder| holder.get("parameters").and_then(Node::as_seq));
        for list in lists {
            for raw in list {
                let Some(parameter) = self.workspace.deref(raw) else {
                    continue;
                };
                let location = parameter.get("in").and_then(Node::as_str).unwrap_or("");
                let name = parameter.get("name").and_then(Node::as_str).unwrap_or("");
                // Only header names are case-insensitive.
                let name = if location == "header" {
                    name.to_ascii_lowercase()
                } else {
                    name.to_string()
                };
                if seen.insert((location.to_string(), name)) {
                    found.push(parameter);
                }
            }
        }
        found
    }

    /// The declared parameter `name` in `location` (`header` names are
    /// case-insensitive). A query field described by an OpenAPI 3.2
    /// `in: querystring` parameter is found as that parameter.
    pub fn parameter(&self, location: &str, name: &str) -> Option<&'a Node> {
        let parameters = self.parameters();
        let declared = parameters.iter().copied().find(|parameter| {
            let declared_in = parameter.get("in").and_then(Node::as_str);
            let declared_name = parameter.get("name").and_then(Node::as_str).unwrap_or("");
            declared_in == Some(location)
                && if location == "header" {
                    declared_name.eq_ignore_ascii_case(name)
                } else {
                    declared_name == name
                }
        });
        declared.or_else(|| {
            let querystring = self.querystring()?;
            let schema = self.querystring_schema(querystring)?;
            (location == "query")
                .then(|| self.schema_property(schema, name, 0))
                .flatten()
                .map(|_| querystring)
        })
    }

    /// The schema that describes the key's value: the header or query
    /// parameter's `schema` (a field of a `querystring` parameter's
    /// schema), or the request-body field's; `$ref`s followed.
    pub fn key_schema(&self, key: &KeySpec) -> Option<&'a Node> {
        use crate::contract::model::KeyLocation;
        let name = &key.name.value;
        match key.location.value {
            KeyLocation::Body => self.request_field(name),
            location => {
                let parameter = self.parameter(location.name(), name)?;
                if parameter.get("in").and_then(Node::as_str) == Some("querystring") {
                    let schema = self.querystring_schema(parameter)?;
                    self.schema_property(schema, name, 0)
                } else {
                    self.workspace.deref(parameter.get("schema")?)
                }
            }
        }
    }

    /// The OpenAPI 3.2 `in: querystring` parameter, which describes the
    /// whole query string as one value.
    pub fn querystring(&self) -> Option<&'a Node> {
        self.parameters()
            .into_iter()
            .find(|parameter| parameter.get("in").and_then(Node::as_str) == Some("querystring"))
    }

    /// The schema of a `querystring` parameter's (first) media type.
    pub fn querystring_schema(&self, parameter: &'a Node) -> Option<&'a Node> {
        let content = parameter.get("content")?.as_map()?;
        self.workspace.deref(content.first()?.value.get("schema")?)
    }

    /// The response declared for `status`: the exact code, else its range
    /// (`4XX`). `default` does not count: it declares nothing specific.
    pub fn response(&self, status: u16) -> Option<&'a Node> {
        let responses = self
            .workspace
            .deref(self.operation.node.get("responses")?)?;
        let exact = status.to_string();
        let range = format!("{}XX", status / 100);
        // The exact code wins over its range, wherever each is written.
        let entry = responses.entry(&exact).or_else(|| {
            responses
                .as_map()?
                .iter()
                .find(|entry| entry.key.eq_ignore_ascii_case(&range))
        })?;
        self.workspace.deref(&entry.value)
    }

    /// The header `name` of a response, case-insensitively.
    pub fn response_header(&self, response: &'a Node, name: &str) -> Option<&'a Node> {
        let headers = self.workspace.deref(response.get("headers")?)?;
        let entry = headers
            .as_map()?
            .iter()
            .find(|entry| entry.key.eq_ignore_ascii_case(name))?;
        self.workspace.deref(&entry.value)
    }

    /// The request body's media type and media object: a JSON one first,
    /// else the first declared.
    pub fn request_media(&self) -> Option<&'a Entry> {
        let body = self
            .workspace
            .deref(self.operation.node.get("requestBody")?)?;
        let content = body.get("content")?.as_map()?;
        content
            .iter()
            .find(|entry| entry.key.contains("json"))
            .or_else(|| content.first())
    }

    /// The request body's schema, in the media type [`Self::request_media`] picks.
    pub fn request_schema(&self) -> Option<&'a Node> {
        self.workspace
            .deref(self.request_media()?.value.get("schema")?)
    }

    /// The schema of the request-body field at `pointer` (`/txn_id`,
    /// `/payer/id`), looking through `$ref`, `allOf`, `oneOf` and `anyOf`.
    pub fn request_field(&self, pointer: &str) -> Option<&'a Node> {
        let mut schema = self.request_schema()?;
        for raw in pointer.strip_prefix('/')?.split('/') {
            let name = raw.replace("~1", "/").replace("~0", "~");
            schema = self.schema_property(schema, &name, 0)?;
        }
        Some(schema)
    }

    /// The longest string a schema admits: its `maxLength`, or the
    /// smallest one among its `allOf` branches (`$ref`s followed).
    pub fn max_length(&self, schema: &'a Node) -> Option<usize> {
        self.max_length_at(schema, 0)
    }

    fn max_length_at(&self, schema: &'a Node, depth: usize) -> Option<usize> {
        if depth > 32 {
            return None;
        }
        let schema = self.workspace.deref(schema)?;
        let own = match schema.get("maxLength").map(|node| &node.value) {
            Some(crate::Value::Int(length)) => usize::try_from(*length).ok(),
            _ => None,
        };
        let branches = schema
            .get("allOf")
            .and_then(Node::as_seq)
            .into_iter()
            .flatten()
            .filter_map(|branch| self.max_length_at(branch, depth + 1));
        own.into_iter().chain(branches).min()
    }

    fn schema_property(&self, schema: &'a Node, name: &str, depth: usize) -> Option<&'a Node> {
        if depth > 32 {
            return None;
        }
        let schema = self.workspace.deref(schema)?;
        if let Some(property) = schema
            .get("properties")
            .and_then(|properties| properties.get(name))
        {
            return self.workspace.deref(property);
        }
        if let Some(items) = schema
            .get("items")
            .filter(|_| name.parse::<usize>().is_ok())
        {
            return self.workspace.deref(items);
        }
        ["allOf", "oneOf", "anyOf"]
            .into_iter()
            .filter_map(|combinator| schema.get(combinator).and_then(Node::as_seq))
            .flatten()
            .find_map(|branch| self.schema_property(branch, name, depth + 1))
    }
}
