//! `multipart/form-data` request bodies: which parts are files (`format:
//! binary`, typed as the models' file struct) and which are JSON, and the
//! table of parts a generated handler reads the body with
//! (`Request::multipart_as`) and a generated client writes it with.

use std::collections::{BTreeMap, BTreeSet};

use idemgen_spec::node::Node;

use super::convert::Converter;
use super::model::{Field, Kind, Struct, Ty, TypeDef};
use super::operation::{is_json, scalar, strip_option};
use super::{OperationTypes, Scalar, Shape, param_shape};

/// A multipart body's parts, as the schema and its `encoding` declare them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multipart {
    /// Each property of the body's struct, in its order; filled once every
    /// schema is defined.
    pub parts: Vec<PartField>,
    /// The properties that are files (`format: binary`, or an array of them).
    files: BTreeSet<String>,
    /// The properties whose `encoding` names a JSON `contentType`.
    json: BTreeSet<String>,
    /// The properties whose `encoding` declares `style: deepObject`: the
    /// client sends them as text parts in brackets (`file_link_data[create]`)
    /// where the service reads them so.
    deep: BTreeSet<String>,
    /// The properties whose `encoding` declares them joined in one text
    /// (`explode: false`, `spaceDelimited`, `pipeDelimited`), with the
    /// delimiter: an array of scalars is then one part, split by the
    /// service and joined by the client.
    joined: BTreeMap<String, char>,
    /// The models' file struct.
    file_type: String,
    /// The name the operation reserved for its body's type: the body's
    /// own struct when its schema is one the spec uses elsewhere too.
    own_name: String,
}

/// One part of a multipart body: `Part::text("purpose", Scalar::String)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartField {
    pub wire_name: String,
    pub reading: PartReading,
    /// An array: the part is sent once per item.
    pub many: bool,
    /// An array of scalars declared joined in one part's text, split and
    /// joined at this delimiter (`tags=a,b`).
    pub delimiter: Option<char>,
    /// A JSON part whose value the service also reads from text parts in
    /// brackets (`file_link_data[create]=true`), as Stripe's clients send
    /// it, each leaf read as this shape says.
    pub brackets: Option<Shape>,
    /// Declared `style: deepObject`, and read by the service from
    /// brackets: the client sends it so (`file_link_data[create]=true`,
    /// `expand[]=x`).
    pub sent_in_brackets: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartReading {
    /// Text standing for this scalar.
    Text(Scalar),
    /// A JSON document: an object, or what `encoding` declares JSON.
    Json,
    /// Bytes with a file name and content type.
    File,
}

/// The files and JSON parts `schema` and `media`'s `encoding` declare; the
/// models' file struct is defined when there is a file.
pub fn plan(
    converter: &mut Converter<'_>,
    schema: &Node,
    media: &Node,
    own_name: &str,
) -> Multipart {
    let workspace = converter.workspace;
    let mut files = BTreeSet::new();
    let properties = workspace
        .deref(schema)
        .and_then(|schema| schema.get("properties"))
        .and_then(Node::as_map)
        .unwrap_or_default();
    for entry in properties {
        let Some(property) = workspace.deref(&entry.value) else {
            continue;
        };
        let item = match property.get("type").and_then(Node::as_str) {
            Some("array") => property
                .get("items")
                .and_then(|items| workspace.deref(items)),
            _ => Some(property),
        };
        if item.is_some_and(is_binary) {
            files.insert(entry.key.to_string());
        }
    }
    let encoding = media
        .get("encoding")
        .and_then(Node::as_map)
        .unwrap_or_default();
    let declared = |keep: &dyn Fn(&Node) -> bool| {
        encoding
            .iter()
            .filter(|entry| keep(&entry.value))
            .map(|entry| entry.key.to_string())
            .collect::<BTreeSet<String>>()
    };
    // From OpenAPI 3.1 on, a `style` or `explode` said outright wins over
    // `contentType`; 3.0 ignores them in a multipart body.
    let styles_win = workspace.version != idemgen_spec::OpenApiVersion::V3_0;
    let json = declared(&|encoding| {
        encoding
            .get("contentType")
            .and_then(Node::as_str)
            .is_some_and(is_json)
            && !(styles_win
                && ["style", "explode", "allowReserved"]
                    .iter()
                    .any(|key| encoding.get(key).is_some()))
    });
    // OpenAPI 3.0 says to ignore `style` in a multipart body, but Stripe
    // declares `deepObject` there and reads the brackets: the spec's word
    // for how its server reads the part.
    let deep =
        declared(&|encoding| encoding.get("style").and_then(Node::as_str) == Some("deepObject"));
    let joined = encoding
        .iter()
        .filter_map(|entry| {
            let style = entry.value.get("style").and_then(Node::as_str);
            let explode = entry.value.get("explode").and_then(Node::as_bool);
            // `explode` is true by default only for `form`.
            let delimiter = match (style.unwrap_or("form"), explode) {
                (_, Some(true)) | ("form", None) => None,
                ("form", Some(false)) => Some(','),
                ("spaceDelimited", _) => Some(' '),
                ("pipeDelimited", _) => Some('|'),
                _ => None,
            }?;
            Some((entry.key.to_string(), delimiter))
        })
        .collect();
    let file_type = if files.is_empty() {
        String::new()
    } else {
        converter.file_part()
    };
    Multipart {
        parts: Vec::new(),
        files,
        json,
        deep,
        joined,
        file_type,
        own_name: own_name.to_string(),
    }
}

/// A string of bytes: `format: binary`.
fn is_binary(schema: &Node) -> bool {
    schema.get("format").and_then(Node::as_str) == Some("binary")
}

/// The models' struct of a file part: its fields are the ones
/// `Request::multipart_as` fills.
pub fn file_part_def(name: &str) -> TypeDef {
    let field = |name: &str, ty: Ty, required: bool, doc: &str| Field {
        name: name.to_string(),
        wire: name.to_string(),
        ty,
        required,
        docs: vec![doc.to_string()],
        default: None,
    };
    TypeDef {
        name: name.to_string(),
        docs: vec!["A file sent as one part of a `multipart/form-data` body.".into()],
        kind: Kind::Struct(Struct {
            fields: vec![
                field(
                    "file_name",
                    Ty::String,
                    false,
                    "The `filename` of the part's `Content-Disposition`, if sent.",
                ),
                field(
                    "content_type",
                    Ty::String,
                    false,
                    "The part's `Content-Type`, if sent.",
                ),
                field("bytes", Ty::Bytes, true, "The file's contents."),
            ],
            additional: None,
            deny_unknown: false,
        }),
    }
}

/// The types something other than a multipart body holds: another
/// type's field, variant or response, or a JSON or form body. A multipart
/// body whose schema is one of them gets a struct of its own, so that its
/// files do not become files there too.
pub fn held_elsewhere(
    defs: &BTreeMap<String, TypeDef>,
    operations: &BTreeMap<String, OperationTypes>,
) -> BTreeSet<String> {
    let mut held = BTreeSet::new();
    for def in defs.values() {
        for ty in held_by(&def.kind) {
            mentions(ty, &mut held);
        }
    }
    for types in operations.values() {
        if let Some(body) = types
            .request_body
            .as_ref()
            .filter(|body| body.multipart.is_none())
        {
            held.insert(body.type_name.clone());
        }
    }
    held
}

/// Every type a definition's fields, variants or answers hold.
fn held_by(kind: &Kind) -> Vec<&Ty> {
    match kind {
        Kind::Struct(shape) => shape
            .fields
            .iter()
            .map(|field| &field.ty)
            .chain(&shape.additional)
            .collect(),
        Kind::Untagged(alternatives) => alternatives.iter().map(|a| &a.ty).collect(),
        Kind::Tagged(tagged) => tagged
            .variants
            .iter()
            .flat_map(|variant| {
                let fields = variant.fields.iter().flatten().map(|field| &field.ty);
                std::iter::once(&variant.ty).chain(fields)
            })
            .collect(),
        Kind::Alias(ty) | Kind::Newtype(ty) => vec![ty],
        Kind::Response(cases) => cases
            .iter()
            .flat_map(|case| case.body.iter().chain(case.headers.iter().map(|h| &h.ty)))
            .collect(),
        Kind::Media(cases) => cases.iter().map(|case| &case.body).collect(),
        Kind::StringEnum(_) => Vec::new(),
    }
}

fn mentions(ty: &Ty, out: &mut BTreeSet<String>) {
    match ty {
        Ty::Named(name) => {
            out.insert(name.clone());
        }
        Ty::Vec(inner) | Ty::Map(inner) | Ty::Option(inner) | Ty::Boxed(inner) => {
            mentions(inner, out)
        }
        _ => {}
    }
}

/// Types the body's file properties as the file struct and lists its
/// parts, now that every schema is defined. A body whose type `held`
/// lists is first copied under the operation's own name: a JSON body or a
/// property of that schema keeps its strings.
pub fn fill(
    types: &mut OperationTypes,
    defs: &mut BTreeMap<String, TypeDef>,
    held: &BTreeSet<String>,
) {
    let Some(body) = &mut types.request_body else {
        return;
    };
    let Some(multipart) = &mut body.multipart else {
        return;
    };
    if !multipart.files.is_empty()
        && held.contains(&body.type_name)
        && body.type_name != multipart.own_name
        && let Some(shared) = defs.get(&body.type_name)
    {
        let own = TypeDef {
            name: multipart.own_name.clone(),
            ..shared.clone()
        };
        defs.insert(own.name.clone(), own);
        body.type_name = multipart.own_name.clone();
    }
    let Some(Kind::Struct(shape)) = defs.get_mut(&body.type_name).map(|def| &mut def.kind) else {
        return;
    };
    for field in &mut shape.fields {
        if multipart.files.contains(&field.wire) {
            field.ty = as_file(&field.ty, &multipart.file_type);
        }
    }
    let fields = shape.fields.clone();
    multipart.parts = fields
        .iter()
        .map(|field| {
            let (reading, many) = if multipart.files.contains(&field.wire) {
                (
                    PartReading::File,
                    matches!(strip_option(&field.ty), Ty::Vec(_)),
                )
            } else if multipart.json.contains(&field.wire) {
                (PartReading::Json, false)
            } else if let Some(one) = scalar(&field.ty, defs, 0) {
                (PartReading::Text(one), false)
            } else {
                match strip_option(&field.ty) {
                    Ty::Vec(item) => match scalar(item, defs, 0) {
                        Some(one) => (PartReading::Text(one), true),
                        None => (PartReading::Json, false),
                    },
                    _ => (PartReading::Json, false),
                }
            };
            // An object (or a list of them) sent without a declared JSON
            // type is also read from brackets, where its type has a shape
            // brackets can say.
            let brackets = (reading == PartReading::Json && !multipart.json.contains(&field.wire))
                .then(|| param_shape::of(&field.ty, defs))
                .flatten()
                .filter(|shape| !matches!(shape, Shape::Scalar(_) | Shape::ScalarOrString(_)));
            let delimiter = matches!(reading, PartReading::Text(_))
                .then(|| multipart.joined.get(&field.wire).copied())
                .flatten()
                .filter(|_| many);
            // A JSON part without a shape is read whole: it is sent so.
            let sent_in_brackets = multipart.deep.contains(&field.wire)
                && match reading {
                    PartReading::File => false,
                    PartReading::Json => brackets.is_some(),
                    PartReading::Text(_) => true,
                };
            PartField {
                wire_name: field.wire.clone(),
                reading,
                many,
                delimiter,
                brackets,
                sent_in_brackets,
            }
        })
        .collect();
}

/// `ty` with its string (or array of strings) made the file struct.
fn as_file(ty: &Ty, file_type: &str) -> Ty {
    match ty {
        Ty::Option(inner) => Ty::Option(Box::new(as_file(inner, file_type))),
        Ty::Vec(inner) => Ty::Vec(Box::new(as_file(inner, file_type))),
        _ => Ty::Named(file_type.to_string()),
    }
}
