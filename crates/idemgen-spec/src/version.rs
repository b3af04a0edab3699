//! Which kind of document a file is, and whether idemgen supports it.

use super::node::{Node, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenApiVersion {
    V3_0,
    V3_1,
    /// 3.2 adds the `query` method, `additionalOperations`, `in:
    /// querystring` parameters and `$self` as the base of relative `$ref`s.
    V3_2,
}

/// Why a document is not one idemgen can lint, with the node to point at.
impl OpenApiVersion {
    /// Every version idemgen reads, oldest first: what the help texts and
    /// the book say it reads (tests/it/help.rs holds them to this list).
    pub const ALL: [OpenApiVersion; 3] = [Self::V3_0, Self::V3_1, Self::V3_2];

    /// `3.0`, `3.1`, `3.2`: the version without its patch number.
    pub fn minor(self) -> &'static str {
        match self {
            Self::V3_0 => "3.0",
            Self::V3_1 => "3.1",
            Self::V3_2 => "3.2",
        }
    }
}

pub struct Unsupported<'n> {
    pub message: String,
    pub help: String,
    pub node: &'n Node,
}

pub fn detect(root: &Node) -> Result<OpenApiVersion, Unsupported<'_>> {
    if root.as_map().is_none() {
        return Err(Unsupported {
            message: format!(
                "not an OpenAPI document: the top level is {}, not a mapping",
                root.kind()
            ),
            help: "an OpenAPI document is a mapping that starts with `openapi: 3.1.0`".into(),
            node: root,
        });
    }
    if let Some(node) = root.get("swagger") {
        return Err(Unsupported {
            message: format!("Swagger {} is not supported", scalar_text(node)),
            help: "convert it to OpenAPI 3 first (for example with swagger2openapi), then lint the result".into(),
            node,
        });
    }
    if let Some(node) = root.get("asyncapi") {
        return Err(Unsupported {
            message: format!("AsyncAPI {} is not an OpenAPI document", scalar_text(node)),
            help: "idemgen lints OpenAPI 3.0, 3.1 and 3.2 HTTP APIs".into(),
            node,
        });
    }
    let Some(node) = root.get("openapi") else {
        return Err(Unsupported {
            message: "not an OpenAPI document: there is no `openapi` version field".into(),
            help: "add `openapi: 3.1.0` (or 3.0.x) at the top level".into(),
            node: root,
        });
    };
    if !matches!(node.value, Value::Str(_)) {
        return Err(Unsupported {
            message: format!(
                "`openapi` must be a version string, found {} `{}`",
                node.kind(),
                scalar_text(node)
            ),
            help: "quote it: `openapi: \"3.1.0\"` (unquoted, 3.10 would read as the number 3.1)"
                .into(),
            node,
        });
    }
    let text = scalar_text(node);
    let mut parts = text.split('.');
    match (parts.next(), parts.next()) {
        (Some("3"), Some("0")) => Ok(OpenApiVersion::V3_0),
        (Some("3"), Some("1")) => Ok(OpenApiVersion::V3_1),
        (Some("3"), Some("2")) => Ok(OpenApiVersion::V3_2),
        _ => Err(Unsupported {
            message: format!("OpenAPI {text} is not supported"),
            help: "idemgen supports OpenAPI 3.0.x, 3.1.x and 3.2.x".into(),
            node,
        }),
    }
}

fn scalar_text(node: &Node) -> String {
    match &node.value {
        Value::Str(text) => text.to_string(),
        Value::Int(number) => number.to_string(),
        Value::Float(number) => format!("{number:?}"),
        _ => node.kind().to_string(),
    }
}
