//! How a generated client lays out the lists of an
//! `application/x-www-form-urlencoded` body.
//!
//! OpenAPI's default for a form property is `style: form, explode: true`:
//! a list is its key repeated (`tags=a&tags=b`), which is what Twilio and
//! most form readers take. That style says nothing of nesting, so an
//! object or a list of objects can only be sent in brackets
//! (`items[0][price]=p`, as Stripe reads them, and as Stripe's spec asks
//! with `style: deepObject`). A body is written one way throughout, so the
//! key is repeated only in a flat form: every property a scalar or a list
//! of scalars (`null` allowed), none declared `deepObject`. The service
//! reads both layouts. A list declared joined in one text (`explode:
//! false`: `tags=a,b`; `spaceDelimited`, `pipeDelimited`) is joined by the
//! client and split by the service in either layout, and a property whose
//! `encoding` names a JSON `contentType` is sent as JSON text. What
//! neither side writes or reads as declared (a joined list of a style
//! forms do not have; a property sent as another `contentType`) is named
//! for `gen` to warn of.

use idemgen_spec::Workspace;
use idemgen_spec::node::Node;

use super::convert::{annotation_only_except_all_of, is_null_schema};
use super::operation::{is_json, media_essence};

/// How deep a union of scalars may nest before it is taken for something
/// else (a spec's cycles end here).
const MAX_DEPTH: usize = 8;

/// How a form body's lists are laid out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormLayout {
    /// A flat form with a list: sent with a list's key repeated (a joined
    /// one too).
    pub repeats_keys: bool,
    /// Lists of scalars declared with the key repeated, sent in brackets
    /// because the form is not flat.
    pub bracketed: Vec<String>,
    /// Why the form is not flat, when it is not: "`metadata` nests".
    pub not_flat: Option<String>,
    /// Lists of scalars declared joined in one text: joined by the client
    /// and split by the service where their style has a delimiter.
    pub joined: Vec<Joined>,
    /// Properties whose `encoding` names only a `contentType` other than
    /// `text/plain` or JSON: OpenAPI sends them as that, not as form
    /// text; both sides read and write them as form text. The name and
    /// the type.
    pub by_content_type: Vec<(String, String)>,
    /// Properties whose `encoding` names only a JSON `contentType`: sent
    /// as JSON text (`metadata=%7B…%7D`), read as the JSON they hold.
    pub json: Vec<String>,
    /// Every property that is a list of scalars, however laid out: one
    /// item sent as its key (`tags=a`) is fingerprinted as a list of one.
    pub lists: Vec<String>,
}

/// A list declared joined in one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joined {
    pub name: String,
    /// How, for a message: "`explode: false`: `tags=a,b`".
    pub declared: String,
    /// What separates its items (`,`, ` `, `|`), where the style is one
    /// both sides split and join; `None` for a style forms do not have.
    pub delimiter: Option<char>,
}

/// Which generated side a form's warnings are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormSide {
    /// The service, which reads the form.
    Service,
    /// The client, which writes it.
    Client,
}

impl FormLayout {
    /// What `side` reads or writes otherwise than the form's `encoding`
    /// declares, one `gen` warning each, prefixed with the operation's
    /// `display` name.
    pub fn warnings(&self, display: &str, side: FormSide) -> Vec<String> {
        // A joined list of a style forms have is split and joined by both
        // sides; any other style is read and sent as if exploded.
        let unhandled = self
            .joined
            .iter()
            .filter(|joined| joined.delimiter.is_none());
        let joined = unhandled.map(|joined| {
            let name = &joined.name;
            let what = match side {
                FormSide::Service => format!(
                    ", which the service does not split: the text is one item (send it as \
                     `{name}=a&{name}=b`)"
                ),
                FormSide::Client if self.repeats_keys => {
                    format!("; the client sends it as its key repeated (`{name}=a&{name}=b`)")
                }
                FormSide::Client => {
                    format!("; the client sends it in brackets (`{name}[0]=a&{name}[1]=b`)")
                }
            };
            format!(
                "{display}: form field `{name}` is declared joined in one text ({}){what}",
                joined.declared
            )
        });
        let why = self.not_flat.as_deref().unwrap_or_default();
        // The service reads both layouts: only the client sends brackets.
        let bracketed = self
            .bracketed
            .iter()
            .filter(|_| side == FormSide::Client)
            .map(|name| {
                format!(
                    "{display}: form field `{name}` is sent in brackets (`{name}[0]=a`), not as \
                     its key repeated as declared: the form is laid out one way, and {why}"
                )
            });
        let as_text = match side {
            FormSide::Service => "the service reads it as form text",
            FormSide::Client => "the client sends it as form text",
        };
        let by_content_type = self.by_content_type.iter().map(|(name, content_type)| {
            format!(
                "{display}: form field `{name}` is declared sent as `{content_type}` (its \
                 `encoding` names only a `contentType`); {as_text}"
            )
        });
        joined.chain(bracketed).chain(by_content_type).collect()
    }
}

/// The layout of a form body of `schema`, with `media`'s `encoding`.
pub fn plan(workspace: &Workspace, schema: &Node, media: &Node) -> FormLayout {
    let mut layout = FormLayout::default();
    let Some(schema) = unwrapped(workspace, schema) else {
        return layout;
    };
    let mut not_flat = |why: String| {
        layout.not_flat.get_or_insert(why);
    };
    if let Some(keyword) = ["allOf", "oneOf", "anyOf"]
        .into_iter()
        .find(|keyword| schema.get(keyword).is_some())
    {
        let article = if keyword == "oneOf" { "a" } else { "an" };
        not_flat(format!("its schema is {article} `{keyword}`"));
    }
    if let Some(keyword) = ["additionalProperties", "patternProperties"]
        .into_iter()
        .find(|keyword| {
            schema
                .get(keyword)
                .is_some_and(|value| value.as_bool() != Some(false))
        })
    {
        not_flat(format!(
            "it takes properties it does not name (`{keyword}`)"
        ));
    }
    let encoding = media.get("encoding");
    // Lists of scalars laid out as the key repeated.
    let mut repeated = Vec::new();
    let mut joined = Vec::new();
    let mut by_content_type = Vec::new();
    let properties = schema
        .get("properties")
        .and_then(Node::as_map)
        .unwrap_or_default();
    for entry in properties {
        let name = entry.key.to_string();
        let declared = encoding.and_then(|encoding| encoding.get(&entry.key));
        let setting = |key: &str| declared.and_then(|declared| declared.get(key));
        let style = setting("style").and_then(Node::as_str);
        let explode = setting("explode").and_then(Node::as_bool);
        let content_type = setting("contentType").and_then(Node::as_str);
        if let Some(content_type) = content_type.filter(|content_type| {
            media_essence(content_type) != "text/plain"
                && ["style", "explode", "allowReserved"]
                    .iter()
                    .all(|key| setting(key).is_none())
        }) {
            // A JSON document is one text: it neither nests the form nor
            // is a list.
            if is_json(content_type) {
                layout.json.push(name);
                continue;
            }
            by_content_type.push((name.clone(), content_type.to_string()));
        }
        let Some(property) = unwrapped(workspace, &entry.value) else {
            not_flat(format!("`{name}` cannot be read"));
            continue;
        };
        if is_scalar(workspace, property, 0) {
            continue;
        }
        match list_items(workspace, property, 0) {
            Some(items) if is_scalar(workspace, items, 0) => layout.lists.push(name.clone()),
            Some(_) => {
                not_flat(format!("`{name}` is a list of lists or objects"));
                continue;
            }
            None if nests(property) => {
                not_flat(format!("`{name}` nests"));
                continue;
            }
            None => {
                not_flat(format!("`{name}` is neither a text nor a list of texts"));
                continue;
            }
        }
        // `explode` is true by default only for `form`.
        match (style.unwrap_or("form"), explode) {
            ("deepObject", _) => not_flat(format!("`{name}` is declared `deepObject`")),
            ("form", None | Some(true)) | (_, Some(true)) => repeated.push(name),
            (style, _) => {
                let (declared, delimiter) = match style {
                    "form" => (format!("`explode: false`: `{name}=a,b`"), Some(',')),
                    "spaceDelimited" => (
                        format!("`style: spaceDelimited`: `{name}=a%20b`"),
                        Some(' '),
                    ),
                    "pipeDelimited" => (format!("`style: pipeDelimited`: `{name}=a|b`"), Some('|')),
                    other => (format!("`style: {other}`"), None),
                };
                joined.push(Joined {
                    name,
                    declared,
                    delimiter,
                });
            }
        }
    }
    layout.repeats_keys = layout.not_flat.is_none() && !(repeated.is_empty() && joined.is_empty());
    if !layout.repeats_keys {
        layout.bracketed = repeated;
    }
    layout.joined = joined;
    layout.by_content_type = by_content_type;
    layout
}

/// `schema` with its `$ref`s followed, and a lone `allOf` member with only
/// annotations beside it (a `$ref` given a description of its own) taken
/// for the schema, as the types are.
fn unwrapped<'a>(workspace: &'a Workspace, schema: &'a Node) -> Option<&'a Node> {
    let mut schema = workspace.deref(schema)?;
    for _ in 0..MAX_DEPTH {
        let lone = schema
            .get("allOf")
            .and_then(Node::as_seq)
            .filter(|members| members.len() == 1)
            .filter(|_| annotation_only_except_all_of(schema));
        match lone {
            Some(members) => schema = workspace.deref(&members[0])?,
            None => return Some(schema),
        }
    }
    None
}

/// The items of a list: `type: array` (or 3.1's `[array, "null"]`) with no
/// union beside it, or a union of one list and `null`.
fn list_items<'a>(workspace: &'a Workspace, schema: &'a Node, depth: usize) -> Option<&'a Node> {
    if depth > MAX_DEPTH {
        return None;
    }
    let branches = ["oneOf", "anyOf"]
        .iter()
        .find_map(|keyword| schema.get(keyword).and_then(Node::as_seq));
    let is_list = match schema.get("type") {
        Some(kind) => match kind.as_str() {
            Some(kind) => kind == "array",
            None => kind.as_seq().is_some_and(|kinds| {
                kinds.iter().any(|kind| kind.as_str() == Some("array"))
                    && kinds
                        .iter()
                        .all(|kind| matches!(kind.as_str(), Some("array" | "null")))
            }),
        },
        None => false,
    };
    if is_list {
        return match branches {
            Some(_) => None,
            None => unwrapped(workspace, schema.get("items")?),
        };
    }
    let branches = branches?;
    let mut lists = branches
        .iter()
        .filter_map(|branch| unwrapped(workspace, branch))
        .filter(|branch| !is_null_schema(branch));
    let list = lists.next()?;
    if lists.next().is_some()
        || branches
            .iter()
            .any(|branch| unwrapped(workspace, branch).is_none())
    {
        return None;
    }
    list_items(workspace, list, depth + 1)
}

/// An object's keywords: what no flat form holds.
fn nests(schema: &Node) -> bool {
    ["properties", "additionalProperties", "patternProperties"]
        .iter()
        .any(|keyword| schema.get(keyword).is_some())
        || schema.get("type").and_then(Node::as_str) == Some("object")
}

/// A schema whose values are each one text in a form: a string, number,
/// integer, boolean or `null`, or a union of them.
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
                unwrapped(workspace, branch)
                    .is_some_and(|branch| is_scalar(workspace, branch, depth + 1))
            });
    }
    if ["properties", "items", "additionalProperties", "allOf"]
        .iter()
        .any(|keyword| schema.get(keyword).is_some())
    {
        return false;
    }
    if is_null_schema(schema) {
        return true;
    }
    let scalar = |kind: Option<&str>| {
        matches!(
            kind,
            Some("string" | "number" | "integer" | "boolean" | "null")
        )
    };
    match schema.get("type") {
        Some(kind) => match kind.as_str() {
            Some(kind) => scalar(Some(kind)),
            // 3.1's list of types.
            None => kind
                .as_seq()
                .is_some_and(|kinds| kinds.iter().all(|kind| scalar(kind.as_str()))),
        },
        // An enum or const with no type: scalar when its values are.
        None => {
            let enumerated = schema.get("enum").and_then(Node::as_seq);
            let constant = schema.get("const").map(std::slice::from_ref);
            enumerated.or(constant).is_some_and(|values| {
                values
                    .iter()
                    .all(|value| value.as_seq().is_none() && value.as_map().is_none())
            })
        }
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
             components: {{schemas: {{Event: {{type: string, enum: [ringing, answered]}}, \
             Loop: {{anyOf: [{{$ref: '#/components/schemas/Loop'}}, {{type: 'null'}}]}}}}}}\n\
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
        // Lists and scalars that may be null, as 3.1 and FastAPI write
        // them; a `$ref` wrapped in a lone `allOf` to describe it.
        assert!(repeats(
            "{schema: {type: object, properties: {a: {type: [array, 'null'], items: {type: string}}, \
             b: {anyOf: [{type: array, items: {type: integer}}, {type: 'null'}]}, \
             c: {anyOf: [{type: string}, {type: 'null'}]}, \
             d: {allOf: [{$ref: '#/components/schemas/Event'}], description: an event}, \
             e: {enum: [1, two]}}}}"
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
        // Joined in one text (`tags=a,b`, `ids=1|2`): named with their
        // delimiters; an exploded `pipeDelimited` is the key repeated.
        let joined = layout(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             ids: {type: array, items: {type: integer}}, \
             more: {type: array, items: {type: integer}}}}, \
             encoding: {tags: {explode: false}, ids: {style: pipeDelimited}, \
             more: {style: pipeDelimited, explode: true}}}",
        );
        assert!(joined.repeats_keys);
        let declared: Vec<(&str, &str, Option<char>)> = joined
            .joined
            .iter()
            .map(|joined| {
                (
                    joined.name.as_str(),
                    joined.declared.as_str(),
                    joined.delimiter,
                )
            })
            .collect();
        assert_eq!(
            declared,
            [
                ("tags", "`explode: false`: `tags=a,b`", Some(',')),
                ("ids", "`style: pipeDelimited`: `ids=a|b`", Some('|'))
            ]
        );
        assert!(joined.warnings("op", FormSide::Service).is_empty());
        assert!(joined.warnings("op", FormSide::Client).is_empty());
        let spaced = layout(
            "{schema: {type: object, properties: {words: {type: array, items: {type: string}},              odd: {type: array, items: {type: string}}}},              encoding: {words: {style: spaceDelimited}, odd: {style: label}}}",
        );
        assert_eq!(spaced.joined[0].delimiter, Some(' '));
        // A style forms do not have: read and sent as if exploded, and
        // said so.
        assert_eq!(spaced.joined[1].delimiter, None);
        assert_eq!(spaced.warnings("op", FormSide::Service).len(), 1);
        assert!(joined.bracketed.is_empty());
        // An object, or a list of objects, beside the list: the list is
        // named as sent otherwise than declared.
        let beside_an_object = layout(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             metadata: {type: object, additionalProperties: {type: string}}}}}",
        );
        assert!(!beside_an_object.repeats_keys);
        assert_eq!(beside_an_object.bracketed, ["tags"]);
        assert_eq!(
            beside_an_object.not_flat.as_deref(),
            Some("`metadata` nests")
        );
        let beside_a_deep_object = layout(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             expand: {type: array, items: {type: string}}}}, \
             encoding: {expand: {style: deepObject}}}",
        );
        assert_eq!(beside_a_deep_object.bracketed, ["tags"]);
        assert_eq!(
            beside_a_deep_object.not_flat.as_deref(),
            Some("`expand` is declared `deepObject`")
        );
        // An enum of objects is no scalar.
        assert!(!repeats(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             shape: {enum: [{a: 1}]}}}}"
        ));
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

    #[test]
    fn a_property_declared_as_another_content_type_is_named() {
        let layout = layout(
            "{schema: {type: object, properties: {meta: {type: object}, doc: {type: string}, \
             note: {type: string}}}, encoding: {meta: {contentType: application/json}, \
             doc: {contentType: application/xml}, note: {contentType: text/plain}}}",
        );
        assert_eq!(
            layout.by_content_type,
            [("doc".to_string(), "application/xml".to_string())]
        );
        // JSON text is read and sent as JSON, and nests nothing.
        assert_eq!(layout.json, ["meta"]);
        assert!(layout.not_flat.is_none());
    }

    #[test]
    fn what_the_types_do_not_take_for_a_list_is_not_flat_and_says_why() {
        // A constraint beside the lone `allOf` makes the wrapper a part of
        // its own: not the list it wraps.
        let constrained = layout(
            "{schema: {type: object, properties: {tags: {type: array, items: {type: string}}, \
             ids: {allOf: [{type: array, items: {type: integer}}], maxItems: 5}}}}",
        );
        assert!(!constrained.repeats_keys);
        assert_eq!(
            constrained.not_flat.as_deref(),
            Some("`ids` is neither a text nor a list of texts")
        );
        let lists_of_lists = layout(
            "{schema: {type: object, properties: {grid: {type: array, items: \
             {type: array, items: {type: integer}}}}}}",
        );
        assert_eq!(
            lists_of_lists.not_flat.as_deref(),
            Some("`grid` is a list of lists or objects")
        );
        let combined = layout("{schema: {oneOf: [{type: object}, {type: object}]}}");
        assert_eq!(
            combined.not_flat.as_deref(),
            Some("its schema is a `oneOf`")
        );
        // A union that names itself ends, unread.
        let spec_cycle =
            "{schema: {type: object, properties: {loop: {$ref: '#/components/schemas/Loop'}}}}";
        assert!(!layout(spec_cycle).repeats_keys);
        // `text/plain` with parameters is form text still.
        assert!(
            layout(
                "{schema: {type: object, properties: {note: {type: string}}}, \
                 encoding: {note: {contentType: 'text/plain; charset=utf-8'}}}"
            )
            .by_content_type
            .is_empty()
        );
    }
}
