//! How a generated client lays out the arrays of an
//! `application/x-www-form-urlencoded` body.
//!
//! OpenAPI's default for a form property is `style: form, explode: true`:
//! an array is its key repeated (`tags=a&tags=b`), which is what Twilio
//! and most form readers take. That style says nothing of nesting, so an
//! object or an array of objects can only be sent in brackets
//! (`items[0][price]=p`, as Stripe reads them, and as Stripe's spec asks
//! with `style: deepObject`). A body is written one way throughout, so the
//! key is repeated only in a flat form: every property a scalar or an
//! array of scalars, none declared `deepObject`. The service reads both
//! layouts. A list declared joined in one text (`explode: false`:
//! `tags=a,b`) is written as the rest of its form is, and read as one
//! item; `gen` names it.

use idemgen_spec::Workspace;
use idemgen_spec::node::Node;

/// How deep a union of scalars may nest before it is taken for something
/// else (a spec's cycles end here).
const MAX_DEPTH: usize = 8;

/// How a form body's lists are laid out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormLayout {
    /// A flat form with a list: sent with a list's key repeated (a joined
    /// one too).
    pub repeats_keys: bool,
    /// Lists of scalars declared with OpenAPI's default layout (the key
    /// repeated) in a form that also nests, so sent in brackets.
    pub bracketed: Vec<String>,
    /// Lists of scalars declared joined in one text (`explode: false`:
    /// `tags=a,b`, `tags=a|b`), which neither side writes or splits.
    pub joined: Vec<String>,
}

/// The layout of a form body of `schema`, with `media`'s `encoding`.
pub fn plan(workspace: &Workspace, schema: &Node, media: &Node) -> FormLayout {
    let Some(schema) = workspace.deref(schema) else {
        return FormLayout::default();
    };
    let nests_at_top = [
        "allOf",
        "oneOf",
        "anyOf",
        "additionalProperties",
        "patternProperties",
    ]
    .iter()
    .any(|keyword| {
        schema
            .get(keyword)
            .is_some_and(|value| value.as_bool() != Some(false))
    });
    let properties = schema
        .get("properties")
        .and_then(Node::as_map)
        .unwrap_or_default();
    let encoding = media.get("encoding");
    let mut flat = !nests_at_top;
    // Lists of scalars laid out as the key repeated.
    let mut repeated = Vec::new();
    let mut joined = Vec::new();
    for entry in properties {
        let Some(property) = workspace.deref(&entry.value) else {
            flat = false;
            continue;
        };
        if is_scalar(workspace, property, 0) {
            continue;
        }
        let items = (property.get("type").and_then(Node::as_str) == Some("array"))
            .then(|| {
                property
                    .get("items")
                    .and_then(|items| workspace.deref(items))
            })
            .flatten();
        if !items.is_some_and(|items| is_scalar(workspace, items, 0)) {
            flat = false;
            continue;
        }
        let declared = encoding.and_then(|encoding| encoding.get(&entry.key));
        let style = declared
            .and_then(|declared| declared.get("style"))
            .and_then(Node::as_str);
        let explode = declared
            .and_then(|declared| declared.get("explode"))
            .and_then(Node::as_bool);
        // `explode` is true by default only for `form`.
        match (style.unwrap_or("form"), explode) {
            ("deepObject", _) => flat = false,
            ("form", None | Some(true)) | (_, Some(true)) => repeated.push(entry.key.to_string()),
            _ => joined.push(entry.key.to_string()),
        }
    }
    let repeats_keys = flat && !(repeated.is_empty() && joined.is_empty());
    FormLayout {
        repeats_keys,
        bracketed: if repeats_keys { Vec::new() } else { repeated },
        joined,
    }
}

/// A schema whose values are each one text in a form: a string, number,
/// integer or boolean, or a union of them.
fn is_scalar(workspace: &Workspace, schema: &Node, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let branches = ["oneOf", "anyOf"]
        .iter()
        .find_map(|keyword| schema.get(keyword).and_then(Node::as_seq));
    if let Some(branches) = branches {
        return !branches.is_empty()
            && branches.iter().all(|branch| {
                workspace
                    .deref(branch)
                    .is_some_and(|branch| is_scalar(workspace, branch, depth + 1))
            });
    }
    if ["properties", "items", "additionalProperties", "allOf"]
        .iter()
        .any(|keyword| schema.get(keyword).is_some())
    {
        return false;
    }
    match schema.get("type") {
        Some(kind) => match kind.as_str() {
            Some(kind) => matches!(kind, "string" | "number" | "integer" | "boolean"),
            // 3.1's list of types: scalars, `null` among them.
            None => kind.as_seq().is_some_and(|kinds| {
                kinds.iter().all(|kind| {
                    matches!(
                        kind.as_str(),
                        Some("string" | "number" | "integer" | "boolean" | "null")
                    )
                })
            }),
        },
        // An enum or const of texts and numbers, with no type.
        None => ["enum", "const"]
            .iter()
            .any(|keyword| schema.get(keyword).is_some()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the one form body of a spec whose media object is `media`
    /// (YAML, in flow style) repeats its keys.
    fn repeats(media: &str) -> bool {
        layout(media).repeats_keys
    }

    /// The layout of the one form body of a spec whose media object is
    /// `media`.
    fn layout(media: &str) -> FormLayout {
        let spec = format!(
            "openapi: 3.1.0\ninfo: {{title: t, version: '1'}}\n\
             components: {{schemas: {{Event: {{type: string, enum: [ringing, answered]}}}}}}\n\
             paths: {{/calls: {{post: {{requestBody: {{content: \
             {{application/x-www-form-urlencoded: {media}}}}}, responses: {{'200': {{description: ok}}}}}}}}}}\n"
        );
        let path = std::path::Path::new("spec.yaml");
        let workspace = Workspace::from_text(path, "spec.yaml".into(), spec).unwrap();
        let media = workspace
            .root()
            .get("paths")
            .and_then(|paths| paths.get("/calls"))
            .and_then(|item| item.get("post"))
            .and_then(|op| op.get("requestBody"))
            .and_then(|body| body.get("content"))
            .and_then(|content| content.get("application/x-www-form-urlencoded"))
            .expect("the media object");
        plan(&workspace, media.get("schema").unwrap(), media)
    }

    #[test]
    fn a_flat_form_with_a_list_repeats_its_key() {
        // Twilio's shape: scalars, lists of texts or of a `$ref`'d enum.
        assert!(repeats(
            "{schema: {type: object, properties: {To: {type: string}, \
             StatusCallbackEvent: {type: array, items: {type: string}}, \
             Events: {type: array, items: {$ref: '#/components/schemas/Event'}}}}}"
        ));
        // Lists of a union of scalars; an encoding that says the default.
        assert!(repeats(
            "{schema: {type: object, properties: {Ids: {type: array, items: \
             {anyOf: [{type: integer}, {type: string, enum: ['']}]}}}}, \
             encoding: {Ids: {style: form, explode: true}}}"
        ));
    }

    #[test]
    fn a_form_that_nests_or_asks_for_brackets_keeps_them() {
        // No list: nothing to lay out.
        assert!(!repeats(
            "{schema: {type: object, properties: {To: {type: string}}}}"
        ));
        // Stripe's: the list declared `deepObject`.
        assert!(!repeats(
            "{schema: {type: object, properties: {expand: {type: array, items: {type: string}}}}, \
             encoding: {expand: {style: deepObject, explode: true}}}"
        ));
        // Joined in one text (`tags=a,b`, `ids=1|2`), which neither side
        // lays out: named, and sent as the rest of the form is.
        let joined = layout(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             ids: {type: array, items: {type: integer}}, \
             more: {type: array, items: {type: integer}}}}, \
             encoding: {tags: {explode: false}, ids: {style: pipeDelimited}, \
             more: {style: pipeDelimited, explode: true}}}",
        );
        assert!(joined.repeats_keys);
        assert_eq!(joined.joined, ["tags", "ids"]);
        assert!(joined.bracketed.is_empty());
        // An object, or a list of objects, beside the list: the list is
        // named as sent otherwise than declared.
        let beside_an_object = layout(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             metadata: {type: object, additionalProperties: {type: string}}}}}",
        );
        assert!(!beside_an_object.repeats_keys);
        assert_eq!(beside_an_object.bracketed, ["tags"]);
        assert!(!repeats(
            "{schema: {type: object, properties: {items: {type: array, items: \
             {type: object, properties: {price: {type: string}}}}}}}"
        ));
        // A union of a list and a text: brackets tell them apart.
        assert!(!repeats(
            "{schema: {type: object, properties: {tax_rates: {anyOf: \
             [{type: array, items: {type: string}}, {type: string, enum: ['']}]}}}}"
        ));
    }
}
