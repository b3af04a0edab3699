//! Schemas → [`Ty`] and [`TypeDef`]s, read from the positioned tree.
//!
//! A schema reached through a `$ref` becomes a named type, defined once
//! (named after its component, or the last segment of the reference); an
//! inline object, enum or union becomes a type named after where it is
//! used (`Order` + `shipping` → `OrderShipping`). Whatever Rust cannot
//! express is `serde_json::Value`, with the reason in its doc comment.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use super::model::{
    Alternative, EnumValue, Field, Kind, Struct, Tagged, TaggedVariant, Ty, TypeDef,
};
use super::naming::{FieldNames, VariantNames, pascal_case};
use super::type_names::TypeNames;
use super::{Fallback, OperationTypes};
use crate::names::comment_lines;
use idemgen_spec::node::{Node, Value};
use idemgen_spec::{Entry, Workspace};

/// Where a local reference to a component schema starts.
const COMPONENT_SCHEMAS: &str = "#/components/schemas/";

/// Deepest `allOf` inside `allOf` that is merged.
const MAX_ALL_OF_DEPTH: usize = 32;

/// Identity of a schema node: file, start and end.
type NodeId = (u32, u32, u32);

fn node_id(node: &Node) -> NodeId {
    (node.span.file.0, node.span.start, node.span.end)
}

/// How a type created for a schema is named.
#[derive(Clone)]
pub enum Hint {
    /// This exact (already reserved) name: a component's.
    Exact(String),
    /// A fresh name made from these words, unless the node has one already.
    Derived(String),
}

impl Hint {
    fn words(&self) -> &str {
        match self {
            Hint::Exact(name) | Hint::Derived(name) => name,
        }
    }

    /// The hint for a schema nested in this one.
    pub fn child(&self, suffix: &str) -> Hint {
        Hint::Derived(format!("{} {}", self.words(), suffix))
    }
}

/// What [`Converter::finish`] hands over.
pub struct Finished {
    pub defs: BTreeMap<String, TypeDef>,
    pub fallbacks: Vec<Fallback>,
    /// The unions generated as `serde_json::Value` because their variants
    /// cannot be told apart.
    pub ambiguous: Vec<Fallback>,
    /// The names asked for, to settle after a first pass.
    pub names: TypeNames,
}

pub struct Converter<'w> {
    pub workspace: &'w Workspace,
    pub names: TypeNames,
    by_node: HashMap<NodeId, String>,
    defs: BTreeMap<String, TypeDef>,
    queue: VecDeque<(String, &'w Node)>,
    fallbacks: Vec<Fallback>,
    /// The reason of the last fallback, for the doc of the field that holds it.
    last_fallback: Option<String>,
    /// The JSON pointer of each union's schema, by type name.
    unions: HashMap<String, String>,
    /// The struct of a multipart body's file, once one is declared.
    file_part: Option<String>,
    /// The struct of a discriminator's base schema's own members, by the
    /// base's node (see `inherited`).
    own_structs: HashMap<NodeId, String>,
}

impl<'w> Converter<'w> {
    /// A converter that names types with `names` (see [`TypeNames`]).
    pub fn new(workspace: &'w Workspace, names: TypeNames) -> Converter<'w> {
        Converter {
            workspace,
            names,
            by_node: HashMap::new(),
            defs: BTreeMap::new(),
            queue: VecDeque::new(),
            fallbacks: Vec::new(),
            last_fallback: None,
            unions: HashMap::new(),
            file_part: None,
            own_structs: HashMap::new(),
        }
    }

    /// The name of the struct a multipart body's file part is read into,
    /// defined on first use.
    pub fn file_part(&mut self) -> String {
        if let Some(name) = &self.file_part {
            return name.clone();
        }
        let name = self.names.assign("(the file part)", "file part");
        self.insert(super::multipart::file_part_def(&name));
        self.file_part = Some(name.clone());
        name
    }

    /// Names every `components.schemas` entry after its key, in key
    /// order, and queues it for definition; the names given.
    pub fn reserve_components(&mut self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for (key, schema) in self.component_schemas() {
            let place = self.workspace.pointer_at(schema.span);
            let name = self.names.assign_component(&place, key);
            names.insert(name.clone());
            if schema.get("$ref").is_none() {
                self.by_node
                    .entry(node_id(schema))
                    .or_insert_with(|| name.clone());
            }
            self.queue.push_back((name, schema));
        }
        names
    }

    /// Defines every named schema queued so far (and those they reach).
    pub fn drain(&mut self) {
        while let Some((name, node)) = self.queue.pop_front() {
            self.define(name, node);
        }
    }

    /// The definitions, with every union checked: a tagged one holds its
    /// variants' fields, an untagged one whose variants could take each
    /// other's values becomes `serde_json::Value` (see [`super::union`]).
    /// The types, with every union settled ([`super::union::settle`]);
    /// `operations` are the operations' types built on this converter.
    pub fn finish(mut self, operations: &BTreeMap<String, OperationTypes>) -> Finished {
        let mut ambiguous = Vec::new();
        let read_from_forms = super::form_text::unions_forms_reach(&self.defs, operations);
        super::union::settle(
            &mut self.defs,
            &self.unions,
            &read_from_forms,
            &mut self.fallbacks,
            &mut ambiguous,
        );
        Finished {
            defs: self.defs,
            fallbacks: self.fallbacks,
            ambiguous,
            names: self.names,
        }
    }

    pub fn insert(&mut self, def: TypeDef) {
        self.defs.insert(def.name.clone(), def);
    }

    /// Takes the reason of the fallback made since the last call, if any.
    pub fn take_fallback(&mut self) -> Option<String> {
        self.last_fallback.take()
    }

    fn define(&mut self, name: String, node: &'w Node) {
        let docs = docs_of(node);
        let ty = if node.get("$ref").is_some() {
            self.ty(node, &Hint::Derived(name.clone()))
        } else {
            self.shape(node, &Hint::Exact(name.clone()))
        };
        if ty != Ty::Named(name.clone()) {
            let mut docs = docs;
            if let Some(reason) = self.take_fallback() {
                if !docs.is_empty() {
                    docs.push(String::new());
                }
                docs.push(reason);
            }
            self.insert(TypeDef {
                name,
                docs,
                kind: Kind::Alias(ty),
            });
        }
        self.last_fallback = None;
    }

    /// The type of one use of `schema` (nullability included).
    pub fn ty(&mut self, schema: &'w Node, hint: &Hint) -> Ty {
        if let Some(reference) = schema.get("$ref").and_then(Node::as_str) {
            let Some(target) = self.workspace.deref(schema) else {
                return self.fallback(schema, format!("`{reference}` could not be resolved"));
            };
            let name = self.named(target, reference);
            let nullable = is_nullable(schema) || is_nullable(target);
            let ty = Ty::Named(name);
            return if nullable { ty.option() } else { ty };
        }
        let ty = self.shape(schema, hint);
        if is_nullable(schema) { ty.option() } else { ty }
    }

    /// The name of the type for a schema reached through `reference`.
    fn named(&mut self, target: &'w Node, reference: &str) -> String {
        if let Some(name) = self.by_node.get(&node_id(target)) {
            return name.clone();
        }
        let place = self.workspace.pointer_at(target.span);
        let name = self.names.assign(&place, &reference_name(reference));
        self.by_node.insert(node_id(target), name.clone());
        self.queue.push_back((name.clone(), target));
        name
    }

    /// A schema's type without its nullability.
    fn shape(&mut self, schema: &'w Node, hint: &Hint) -> Ty {
        match &schema.value {
            Value::Bool(true) => return Ty::Json,
            Value::Bool(false) => {
                return self.fallback(schema, "the schema `false` accepts no value".into());
            }
            Value::Map(_) => {}
            _ => return self.fallback(schema, format!("the schema is {}", schema.kind())),
        }
        if schema.get("$ref").is_some() {
            return self.ty(schema, hint);
        }
        if let Some(values) = schema.get("enum").and_then(Node::as_seq) {
            return self.enumeration(schema, values, hint);
        }
        if let Some(value) = schema.get("const") {
            return self.enumeration(schema, std::slice::from_ref(value), hint);
        }
        if let Some(ty) = self.inherited(schema, hint) {
            return ty;
        }
        if let Some(parts) = schema.get("allOf").and_then(Node::as_seq) {
            return self.all_of(schema, parts, hint);
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(alternatives) = schema.get(keyword).and_then(Node::as_seq) {
                // `oneOf: [{required: [a]}, {required: [b]}]` only constrains
                // the object the rest of the schema describes.
                if !alternatives.iter().all(constraint_only) {
                    return self.union(schema, alternatives, hint);
                }
            }
        }
        for keyword in ["not", "if", "patternProperties", "prefixItems"] {
            if schema.get(keyword).is_some() && declared_types(schema).is_empty() {
                return self.fallback(schema, format!("`{keyword}` has no Rust type"));
            }
        }
        let types = declared_types(schema);
        match types.as_slice() {
            [] if schema.get("properties").is_some()
                || schema.get("additionalProperties").is_some() =>
            {
                self.typed(schema, "object", hint)
            }
            [] if schema.get("items").is_some() => self.typed(schema, "array", hint),
            [] => Ty::Json,
            [one] => self.typed(schema, one, hint),
            several => {
                let alternatives = several.to_vec();
                self.several_types(schema, &alternatives, hint)
            }
        }
    }

    /// The type for one JSON type name.
    fn typed(&mut self, schema: &'w Node, type_name: &str, hint: &Hint) -> Ty {
        let format = schema.get("format").and_then(Node::as_str).unwrap_or("");
        match type_name {
            "string" => match format {
                "date-time" => Ty::DateTime,
                "date" => Ty::Date,
                _ => Ty::String,
            },
            "boolean" => Ty::Bool,
            "integer" => Ty::Integer(match format {
                "int8" => "i8",
                "int16" => "i16",
                "int32" => "i32",
                "uint8" => "u8",
                "uint16" => "u16",
                "uint32" => "u32",
                "uint64" => "u64",
                _ => "i64",
            }),
            "number" => match format {
                "float" => Ty::Number("f32"),
                "int32" => Ty::Integer("i32"),
                "int64" => Ty::Integer("i64"),
                _ => Ty::Number("f64"),
            },
            "array" => match schema.get("items") {
                Some(items) if items.as_seq().is_some() => {
                    self.fallback(items, "a tuple of `items` has no Rust type".into());
                    Ty::Vec(Box::new(Ty::Json))
                }
                Some(items) => Ty::Vec(Box::new(self.ty(items, &hint.child("item")))),
                None if schema.get("prefixItems").is_some() => {
                    self.fallback(schema, "a tuple of `prefixItems` has no Rust type".into());
                    Ty::Vec(Box::new(Ty::Json))
                }
                None => Ty::Vec(Box::new(Ty::Json)),
            },
            "object" => self.object(schema, hint),
            "null" => Ty::Json,
            other => self.fallback(schema, format!("`type: {other}` is not a JSON type")),
        }
    }

    fn object(&mut self, schema: &'w Node, hint: &Hint) -> Ty {
        let properties = schema.get("properties").and_then(Node::as_map);
        if properties.is_none_or(|entries| entries.is_empty()) {
            let value = match schema.get("additionalProperties") {
                Some(additional) if additional.as_map().is_some() => {
                    self.ty(additional, &hint.child("value"))
                }
                _ => Ty::Json,
            };
            return Ty::Map(Box::new(value));
        }
        let name = match self.begin(schema, hint) {
            Ok(name) => name,
            Err(existing) => return existing,
        };
        let parts = [schema];
        let def = self.merged_struct(&name, schema, &parts);
        self.insert(def);
        Ty::Named(name)
    }

    /// One struct from the properties of every part (an `allOf`'s, or
    /// just the schema's own); later parts win, `required` adds up.
    fn merged_struct(&mut self, name: &str, schema: &'w Node, parts: &[&'w Node]) -> TypeDef {
        let hint = Hint::Derived(name.to_string());
        let mut required: HashSet<&str> = HashSet::new();
        let mut properties: Vec<&'w Entry> = Vec::new();
        let mut additional = None;
        for part in parts {
            required.extend(
                part.get("required")
                    .and_then(Node::as_seq)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Node::as_str),
            );
            for entry in part
                .get("properties")
                .and_then(Node::as_map)
                .unwrap_or_default()
            {
                match properties.iter_mut().find(|seen| seen.key == entry.key) {
                    Some(seen) => *seen = entry,
                    None => properties.push(entry),
                }
            }
            if let Some(schema) = part.get("additionalProperties") {
                additional = Some(schema);
            }
        }
        let mut field_names = FieldNames::default();
        let mut fields = Vec::new();
        for entry in properties {
            let ty = self.ty(&entry.value, &hint.child(&entry.key));
            let mut docs = self.property_docs(&entry.value);
            if let Some(format) = string_format(&entry.value) {
                if !docs.is_empty() {
                    docs.push(String::new());
                }
                docs.push(format!("Format: `{format}`."));
            }
            if let Some(reason) = self.take_fallback() {
                if !docs.is_empty() {
                    docs.push(String::new());
                }
                docs.push(reason);
            }
            let default = self.default_of(&entry.value);
            if let Some(value) = &default {
                if !docs.is_empty() {
                    docs.push(String::new());
                }
                docs.push(format!(
                    "Default: `{}`.",
                    comment_lines(&value.to_string()).join(" ")
                ));
            }
            fields.push(Field {
                name: field_names.assign(&entry.key),
                wire: entry.key.to_string(),
                ty,
                // A read-only member is required in responses only, a
                // write-only one in requests only: one type serves both.
                required: required.contains(&*entry.key) && !self.one_direction(&entry.value),
                docs,
                default,
            });
        }
        let mut shape = Struct {
            fields,
            additional: None,
            deny_unknown: false,
        };
        match additional {
            Some(node) if node.as_bool() == Some(false) => shape.deny_unknown = true,
            Some(node) if node.as_map().is_some_and(|entries| !entries.is_empty()) => {
                shape.additional = Some(self.ty(node, &hint.child("value")));
            }
            _ => {}
        }
        let mut docs = docs_of(schema);
        if docs.is_empty() {
            docs = parts
                .iter()
                .map(|part| docs_of(part))
                .find(|d| !d.is_empty())
                .unwrap_or_default();
        }
        TypeDef {
            name: name.to_string(),
            docs,
            kind: Kind::Struct(shape),
        }
    }

    /// Whether a property is `readOnly` or `writeOnly` (on it, or on the
    /// schema its `$ref` names).
    fn one_direction(&self, property: &Node) -> bool {
        let flagged = |node: &Node| {
            ["readOnly", "writeOnly"]
                .iter()
                .any(|keyword| node.get(keyword).and_then(Node::as_bool) == Some(true))
        };
        flagged(property) || self.workspace.deref(property).is_some_and(flagged)
    }

    /// A property's `default`: its own, else (through an `allOf` beside a
    /// description, or a `$ref`) its schema's. `null` is no default: an
    /// absent value reads as absent anyway.
    fn default_of(&self, property: &Node) -> Option<serde_json::Value> {
        let own = property.get("default").or_else(|| {
            property
                .get("allOf")
                .and_then(Node::as_seq)
                .and_then(|parts| parts.iter().find_map(|part| part.get("default")))
        });
        let value = own
            .or_else(|| {
                self.workspace
                    .deref(property)
                    .and_then(|target| target.get("default"))
            })?
            .to_json();
        (!value.is_null()).then_some(value)
    }

    /// The doc of a property: its own description, else its target's.
    fn property_docs(&self, property: &Node) -> Vec<String> {
        let own = docs_of(property);
        if !own.is_empty() {
            return own;
        }
        // `allOf: [{description: …}, {$ref: …}]`: the description beside the type.
        if let Some(parts) = property.get("allOf").and_then(Node::as_seq) {
            if let Some(docs) = parts
                .iter()
                .filter(|part| part.get("$ref").is_none())
                .map(docs_of)
                .find(|docs| !docs.is_empty())
            {
                return docs;
            }
        }
        self.workspace
            .deref(property)
            .filter(|target| property.get("$ref").is_some() && target.get("properties").is_none())
            .map(docs_of)
            .unwrap_or_default()
    }

    fn enumeration(&mut self, schema: &'w Node, values: &'w [Node], hint: &Hint) -> Ty {
        let present: Vec<&Node> = values
            .iter()
            .filter(|value| !matches!(value.value, Value::Null))
            .collect();
        let strings: Vec<&str> = present.iter().filter_map(|value| value.as_str()).collect();
        if present.is_empty() {
            return Ty::Json;
        }
        if strings.len() < present.len() {
            // serde has no derive for enums of numbers or mixed values: keep
            // the base type and list the values in the doc.
            let types = declared_types(schema);
            let listed: Vec<String> = present
                .iter()
                .map(|value| value.to_json().to_string())
                .collect();
            return match types.as_slice() {
                [one] if *one != "object" && *one != "array" => {
                    self.last_fallback = Some(format!("One of {}.", listed.join(", ")));
                    self.typed(schema, one, hint)
                }
                _ => self.fallback(schema, "an enum of values that are not all strings".into()),
            };
        }
        let name = match self.begin(schema, hint) {
            Ok(name) => name,
            Err(existing) => return existing,
        };
        let mut variant_names = VariantNames::default();
        let mut seen = HashSet::new();
        // `x-enum-varnames` (openapi-generator's) names each value's variant.
        let declared_names: Vec<&str> = schema
            .get("x-enum-varnames")
            .and_then(Node::as_seq)
            .filter(|names| names.len() == values.len())
            .map(|names| names.iter().filter_map(Node::as_str).collect())
            .filter(|names: &Vec<&str>| names.len() == values.len())
            .unwrap_or_default();
        let name_of = |wire: &'w str| -> &'w str {
            values
                .iter()
                .position(|value| value.as_str() == Some(wire))
                .and_then(|at| declared_names.get(at).copied())
                .unwrap_or(wire)
        };
        let variants = strings
            .into_iter()
            .filter(|wire| seen.insert(*wire))
            .map(|wire| EnumValue {
                variant: variant_names.assign(name_of(wire)),
                wire: wire.to_string(),
            })
            .collect();
        self.insert(TypeDef {
            name: name.clone(),
            docs: docs_of(schema),
            kind: Kind::StringEnum(variants),
        });
        Ty::Named(name)
    }

    fn all_of(&mut self, schema: &'w Node, parts: &'w [Node], hint: &Hint) -> Ty {
        let mut flat: Vec<&'w Node> = Vec::new();
        let mut visited = HashSet::new();
        if !self.flatten_all_of(schema, parts, 0, &mut visited, &mut flat) {
            return self.fallback(schema, "an `allOf` nested too deeply or in a cycle".into());
        }
        let substantial: Vec<&'w Node> = flat
            .iter()
            .copied()
            .filter(|part| !annotation_only(part))
            .collect();
        let objects = substantial.iter().all(|part| object_like(part));
        // `allOf: [$ref]` with a description or `nullable` beside it: the
        // one schema that says something.
        let own_is_annotation = annotation_only_except_all_of(schema);
        if own_is_annotation {
            if let [only] = parts
                .iter()
                .filter(|part| !annotation_only(part))
                .collect::<Vec<_>>()
                .as_slice()
            {
                return self.ty(only, hint);
            }
        }
        if substantial.is_empty() {
            return Ty::Json;
        }
        if !objects {
            if let [only] = substantial.as_slice() {
                return self.shape(only, hint);
            }
            // `allOf: [{type: string, description}, {$ref: Link}]`: parts of
            // one scalar type narrow the value, not its type; a named part
            // names it.
            if let Some(scalar) = common_scalar(&substantial) {
                let named = parts.iter().find(|part| part.get("$ref").is_some());
                return match named {
                    Some(part) => self.ty(part, hint),
                    None => self.typed(substantial[0], scalar, hint),
                };
            }
            return self.fallback(
                schema,
                "an `allOf` of schemas that are not all objects".into(),
            );
        }
        let name = match self.begin(schema, hint) {
            Ok(name) => name,
            Err(existing) => return existing,
        };
        let def = self.merged_struct(&name, schema, &flat);
        self.insert(def);
        Ty::Named(name)
    }

    /// The parts of an `allOf` (and of `allOf`s inside them), `$ref`s
    /// followed, the schema's own properties last. False on a cycle.
    fn flatten_all_of(
        &self,
        schema: &'w Node,
        parts: &'w [Node],
        depth: usize,
        visited: &mut HashSet<NodeId>,
        flat: &mut Vec<&'w Node>,
    ) -> bool {
        if depth > MAX_ALL_OF_DEPTH || !visited.insert(node_id(schema)) {
            return false;
        }
        for part in parts {
            let Some(part) = self.workspace.deref(part) else {
                continue;
            };
            match part.get("allOf").and_then(Node::as_seq) {
                Some(inner) => {
                    if !self.flatten_all_of(part, inner, depth + 1, visited, flat) {
                        return false;
                    }
                }
                None => flat.push(part),
            }
        }
        flat.push(schema);
        true
    }

    fn union(&mut self, schema: &'w Node, alternatives: &'w [Node], hint: &Hint) -> Ty {
        let present: Vec<&'w Node> = alternatives
            .iter()
            .filter(|alternative| !is_null_schema(alternative))
            .collect();
        match present.as_slice() {
            [] => return Ty::Json,
            [only] => return self.ty(only, hint),
            _ => {}
        }
        let name = match self.begin(schema, hint) {
            Ok(name) => name,
            Err(existing) => return existing,
        };
        // Where the union is, for the warning if it cannot be generated.
        self.unions
            .insert(name.clone(), self.workspace.pointer_at(schema.span));
        if let Some(tagged) = self.discriminated(schema, &present, &name) {
            self.insert(TypeDef {
                name: name.clone(),
                docs: docs_of(schema),
                kind: Kind::Tagged(tagged),
            });
            return Ty::Named(name);
        }
        let mut variant_names = VariantNames::default();
        let mut variants: Vec<Alternative> = Vec::new();
        for (index, alternative) in present.into_iter().enumerate() {
            // An inline alternative's `title` names it, else its position.
            let words = match alternative.get("title").and_then(Node::as_str) {
                Some(title) if !title.trim().is_empty() => format!("{name} {title}"),
                _ => format!("{name} variant {}", index + 1),
            };
            let ty = self.ty(alternative, &Hint::Derived(words));
            self.last_fallback = None;
            if variants.iter().any(|seen| seen.ty == ty) {
                continue;
            }
            let word = match alternative.get("$ref") {
                Some(_) => variant_word(&ty),
                None => inline_variant_word(&name, &ty),
            };
            variants.push(Alternative {
                variant: variant_names.assign(&word),
                ty,
                chosen_by: None,
            });
        }
        self.insert(TypeDef {
            name: name.clone(),
            docs: docs_of(schema),
            kind: Kind::Untagged(variants),
        });
        Ty::Named(name)
    }

    /// The tagged union of a `discriminator` whose variants are all
    /// `$ref`s: each tagged with its `mapping` key, else its schema's name.
    fn discriminated(
        &mut self,
        schema: &'w Node,
        present: &[&'w Node],
        name: &str,
    ) -> Option<Tagged> {
        let discriminator = schema.get("discriminator")?;
        let tag = discriminator.get("propertyName").and_then(Node::as_str)?;
        let references: Vec<&str> = present
            .iter()
            .map(|alternative| alternative.get("$ref").and_then(Node::as_str))
            .collect::<Option<_>>()?;
        let mapping: Vec<(&str, &str)> = discriminator
            .get("mapping")
            .and_then(Node::as_map)
            .unwrap_or_default()
            .iter()
            .filter_map(|entry| Some((&*entry.key, entry.value.as_str()?)))
            .collect();
        let mut variant_names = VariantNames::default();
        let mut variants = Vec::new();
        for (alternative, reference) in present.iter().zip(references) {
            let schema_name = reference_name(reference);
            // A mapping value is a reference or a schema's name.
            let mut keys: Vec<String> = mapping
                .iter()
                .filter(|(_, target)| *target == reference || *target == schema_name)
                .map(|(key, _)| key.to_string())
                .collect();
            if keys.is_empty() {
                keys.push(schema_name);
            }
            let wire = keys.remove(0);
            let ty = self.ty(alternative, &Hint::Derived(format!("{name} {wire}")));
            self.last_fallback = None;
            if variants
                .iter()
                .any(|seen: &TaggedVariant| seen.wire == wire)
            {
                continue;
            }
            variants.push(TaggedVariant {
                variant: variant_names.assign(&variant_word(&ty)),
                wire,
                aliases: keys,
                ty,
                fields: None,
            });
        }
        Some(Tagged {
            tag: tag.to_string(),
            variants,
        })
    }

    /// A schema with a `discriminator` but no `oneOf`/`anyOf` is the base
    /// of the schemas that extend it with `allOf` (OpenAPI's inheritance):
    /// a value of it is one of them, named by the property, and read as
    /// the base alone it would lose their members. Its type is the tagged
    /// union of them: the `mapping`'s, then every component whose `allOf`
    /// reaches the base, named by its own name, then the base itself (a
    /// value JSON Schema takes too). A member that is the base or another
    /// such base is its own members' struct (`VehicleBase`), not its
    /// union. `None` (an object, as before) when nothing extends it, a
    /// `mapping` value is not a local component, or a member only names
    /// another schema (its type would be the union itself).
    fn inherited(&mut self, schema: &'w Node, hint: &Hint) -> Option<Ty> {
        let discriminator = schema.get("discriminator")?;
        if schema.get("oneOf").is_some() || schema.get("anyOf").is_some() {
            return None;
        }
        let tag = discriminator.get("propertyName").and_then(Node::as_str)?;
        let components = self.component_schemas();
        let base = node_id(schema);
        // (the tag's value, the member's reference, its schema)
        let mut members: Vec<(String, String, &'w Node)> = Vec::new();
        for entry in discriminator
            .get("mapping")
            .and_then(Node::as_map)
            .unwrap_or_default()
            .iter()
        {
            let target = entry.value.as_str()?;
            let reference = if target.contains('/') {
                target.to_string()
            } else {
                format!("{COMPONENT_SCHEMAS}{target}")
            };
            let (_, node) = components
                .iter()
                .find(|(key, _)| reference.strip_prefix(COMPONENT_SCHEMAS) == Some(*key))?;
            members.push((entry.key.to_string(), reference, node));
        }
        for (key, node) in &components {
            let listed = members
                .iter()
                .any(|(_, _, member)| node_id(member) == node_id(node));
            if node_id(node) != base && !listed && self.extends(node, schema) {
                members.push((key.to_string(), format!("{COMPONENT_SCHEMAS}{key}"), node));
            }
        }
        if members.is_empty()
            || members
                .iter()
                .any(|(_, _, member)| only_names_another(member))
        {
            return None;
        }
        let base_listed = members.iter().any(|(_, _, member)| node_id(member) == base);
        if let Some((key, _)) = components.iter().find(|(_, node)| node_id(node) == base) {
            if !base_listed {
                members.push((key.to_string(), format!("{COMPONENT_SCHEMAS}{key}"), schema));
            }
        }
        let name = match self.begin(schema, hint) {
            Ok(name) => name,
            Err(existing) => return Some(existing),
        };
        self.unions
            .insert(name.clone(), self.workspace.pointer_at(schema.span));
        let mut variant_names = VariantNames::default();
        let mut variants: Vec<TaggedVariant> = Vec::new();
        for (wire, reference, member) in members {
            let is_base = member.get("discriminator").is_some()
                && member.get("oneOf").is_none()
                && member.get("anyOf").is_none();
            let ty = match is_base {
                true => self.own_struct(member, &reference_name(&reference)),
                false => Ty::Named(self.named(member, &reference)),
            };
            if let Some(seen) = variants.iter_mut().find(|seen| seen.ty == ty) {
                seen.aliases.push(wire);
                continue;
            }
            let word = match is_base {
                true => reference_name(&reference),
                false => variant_word(&ty),
            };
            variants.push(TaggedVariant {
                variant: variant_names.assign(&word),
                wire,
                aliases: Vec::new(),
                ty,
                fields: None,
            });
        }
        let mut docs = docs_of(schema);
        if !docs.is_empty() {
            docs.push(String::new());
        }
        docs.push(format!(
            "One of the schemas that extend it (`allOf`), named by `{tag}`."
        ));
        self.insert(TypeDef {
            name: name.clone(),
            docs,
            kind: Kind::Tagged(Tagged {
                tag: tag.to_string(),
                variants,
            }),
        });
        Some(Ty::Named(name))
    }

    /// The struct of a discriminator base's own members (its `allOf`
    /// parts merged), named `{name} base`: the variant of its union that is
    /// the base itself, defined once.
    fn own_struct(&mut self, schema: &'w Node, name: &str) -> Ty {
        if let Some(existing) = self.own_structs.get(&node_id(schema)) {
            return Ty::Named(existing.clone());
        }
        let mut parts = Vec::new();
        match schema.get("allOf").and_then(Node::as_seq) {
            Some(all_of) => {
                if !self.flatten_all_of(schema, all_of, 0, &mut HashSet::new(), &mut parts) {
                    return self
                        .fallback(schema, "an `allOf` nested too deeply or in a cycle".into());
                }
            }
            None => parts.push(schema),
        }
        let place = format!(
            "{} (its own members)",
            self.workspace.pointer_at(schema.span)
        );
        let name = self.names.assign(&place, &format!("{name} base"));
        self.own_structs.insert(node_id(schema), name.clone());
        let def = self.merged_struct(&name, schema, &parts);
        self.insert(def);
        Ty::Named(name)
    }

    /// `components.schemas`, by key.
    fn component_schemas(&self) -> Vec<(&'w str, &'w Node)> {
        let workspace = self.workspace;
        let Some(schemas) = workspace
            .root()
            .get("components")
            .and_then(|node| workspace.deref(node))
            .and_then(|components| components.get("schemas"))
            .and_then(|node| workspace.deref(node))
            .and_then(Node::as_map)
        else {
            return Vec::new();
        };
        let mut entries: Vec<(&'w str, &'w Node)> = schemas
            .iter()
            .map(|entry| (&*entry.key, &entry.value))
            .collect();
        entries.sort_by_key(|(key, _)| *key);
        entries
    }

    /// Whether `schema`'s `allOf` (followed through `$ref`s and nested
    /// `allOf`s) reaches `base`.
    fn extends(&self, schema: &'w Node, base: &'w Node) -> bool {
        let Some(parts) = schema.get("allOf").and_then(Node::as_seq) else {
            return false;
        };
        let mut flat = Vec::new();
        self.flatten_all_of(schema, parts, 0, &mut HashSet::new(), &mut flat);
        flat.iter().any(|part| node_id(part) == node_id(base))
    }

    /// `type: [string, integer]`: one variant per type.
    fn several_types(&mut self, schema: &'w Node, types: &[&str], hint: &Hint) -> Ty {
        let name = match self.begin(schema, hint) {
            Ok(name) => name,
            Err(existing) => return existing,
        };
        self.unions
            .insert(name.clone(), self.workspace.pointer_at(schema.span));
        let mut variant_names = VariantNames::default();
        let mut variants: Vec<Alternative> = Vec::new();
        for type_name in types {
            let ty = self.typed(
                schema,
                type_name,
                &Hint::Derived(format!("{name} {type_name}")),
            );
            if variants.iter().any(|seen| seen.ty == ty) {
                continue;
            }
            variants.push(Alternative {
                variant: variant_names.assign(&variant_word(&ty)),
                ty,
                chosen_by: None,
            });
        }
        self.insert(TypeDef {
            name: name.clone(),
            docs: docs_of(schema),
            kind: Kind::Untagged(variants),
        });
        Ty::Named(name)
    }

    /// The name for a type defined for `schema`, or the type it already has.
    fn begin(&mut self, schema: &Node, hint: &Hint) -> Result<String, Ty> {
        match hint {
            Hint::Exact(name) => Ok(name.clone()),
            Hint::Derived(words) => {
                if let Some(existing) = self.by_node.get(&node_id(schema)) {
                    return Err(Ty::Named(existing.clone()));
                }
                let place = self.workspace.pointer_at(schema.span);
                let name = self.names.assign(&place, words);
                self.by_node.insert(node_id(schema), name.clone());
                Ok(name)
            }
        }
    }

    fn fallback(&mut self, schema: &Node, reason: String) -> Ty {
        let reason = format!("Any JSON value: {reason}.");
        self.fallbacks.push(Fallback {
            pointer: self.workspace.pointer_at(schema.span),
            reason: reason.clone(),
        });
        self.last_fallback = Some(reason);
        Ty::Json
    }
}

/// The `format` of an inline string schema, which its Rust `String` does
/// not show (`uri`, `uuid`, …; `date-time` and `date` have types of their own).
fn string_format(schema: &Node) -> Option<String> {
    let is_string = declared_types(schema) == ["string"];
    let format = schema.get("format").and_then(Node::as_str)?;
    // `date-time` and `date` are chrono types, which say it themselves.
    let typed = matches!(format, "date-time" | "date");
    let shown = is_string && !typed && !format.is_empty() && schema.get("$ref").is_none();
    shown.then(|| comment_lines(format).join(" "))
}

/// The words a referenced schema is named after: the pointer's last
/// segment, else the file's stem.
pub(crate) fn reference_name(reference: &str) -> String {
    let (file, pointer) = reference.split_once('#').unwrap_or((reference, ""));
    if let Some(segment) = pointer.rsplit('/').find(|segment| !segment.is_empty()) {
        return segment.replace("~1", "/").replace("~0", "~");
    }
    let file = file.rsplit('/').next().unwrap_or(file);
    file.split('.').next().unwrap_or(file).to_string()
}

/// The word the variant of an inline alternative of the union `union` is
/// named by: its type's name without the union's name before it, where
/// the type was named after the union (`Card` for `PaymentMethodCard` in
/// `PaymentMethod`), as a person would write it; else [`variant_word`].
/// Not for a `$ref`'s type, whose name is its schema's own (`Payment`'s
/// `PaymentIntent` stays `PaymentIntent`).
fn inline_variant_word(union: &str, ty: &Ty) -> String {
    if let Ty::Named(name) = ty
        && let Some(rest) = name.strip_prefix(union)
        && rest.starts_with(|c: char| c.is_ascii_uppercase())
    {
        return rest.to_string();
    }
    variant_word(ty)
}

/// The word a union variant is named after.
fn variant_word(ty: &Ty) -> String {
    match ty {
        Ty::Named(name) => name.clone(),
        Ty::String => "String".into(),
        Ty::DateTime => "Date time".into(),
        Ty::Date => "Date".into(),
        Ty::Bool => "Boolean".into(),
        Ty::Integer(_) => "Integer".into(),
        Ty::Number(_) => "Number".into(),
        Ty::Vec(inner) => format!("{} list", variant_word(inner)),
        Ty::Map(_) => "Map".into(),
        Ty::Option(inner) | Ty::Boxed(inner) => variant_word(inner),
        Ty::Bytes => "Bytes".into(),
        Ty::Json => "Value".into(),
    }
}

/// The non-null JSON types a schema declares (`type: x` or `type: [x, null]`).
fn declared_types(schema: &Node) -> Vec<&str> {
    match schema.get("type") {
        Some(node) => match &node.value {
            Value::Str(one) if &**one != "null" => vec![one],
            Value::Seq(items) => items
                .iter()
                .filter_map(Node::as_str)
                .filter(|name| *name != "null")
                .collect(),
            _ => Vec::new(),
        },
        None => Vec::new(),
    }
}

/// Whether `null` is a valid value: 3.0 `nullable`, a 3.1 type list or
/// enum with null, or a null alternative of `oneOf`/`anyOf`.
pub fn is_nullable(schema: &Node) -> bool {
    if schema.get("nullable").and_then(Node::as_bool) == Some(true) {
        return true;
    }
    if let Some(types) = schema.get("type").and_then(Node::as_seq) {
        if types.iter().any(|item| item.as_str() == Some("null")) {
            return true;
        }
    }
    if let Some(values) = schema.get("enum").and_then(Node::as_seq) {
        if values
            .iter()
            .any(|value| matches!(value.value, Value::Null))
        {
            return true;
        }
    }
    ["oneOf", "anyOf"].iter().any(|keyword| {
        schema
            .get(keyword)
            .and_then(Node::as_seq)
            .is_some_and(|alternatives| alternatives.iter().any(is_null_schema))
    })
}

/// `{type: "null"}`, `{enum: [null]}` or `{const: null}`.
pub(crate) fn is_null_schema(schema: &Node) -> bool {
    schema.get("type").and_then(Node::as_str) == Some("null")
        || schema
            .get("enum")
            .and_then(Node::as_seq)
            .is_some_and(|values| {
                !values.is_empty() && values.iter().all(|v| matches!(v.value, Value::Null))
            })
        || schema
            .get("const")
            .is_some_and(|value| matches!(value.value, Value::Null))
}

/// Keywords that describe a value without constraining its type.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "example",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "nullable",
    "externalDocs",
    "xml",
    "$comment",
    "discriminator",
];

fn annotation_only(schema: &Node) -> bool {
    schema.as_map().is_some_and(|entries| {
        entries
            .iter()
            .all(|entry| ANNOTATIONS.contains(&&*entry.key) || entry.key.starts_with("x-"))
    })
}

pub(crate) fn annotation_only_except_all_of(schema: &Node) -> bool {
    schema.as_map().is_some_and(|entries| {
        entries.iter().all(|entry| {
            &*entry.key == "allOf"
                || ANNOTATIONS.contains(&&*entry.key)
                || entry.key.starts_with("x-")
        })
    })
}

/// `allOf: [$ref]` with only annotations beside it: the type of the one
/// schema it names (see `all_of`), not a type of its own.
fn only_names_another(schema: &Node) -> bool {
    let Some(parts) = schema.get("allOf").and_then(Node::as_seq) else {
        return false;
    };
    annotation_only_except_all_of(schema)
        && parts.iter().filter(|part| !annotation_only(part)).count() == 1
}

/// A schema that only constrains an object (`required`, `minProperties`, …).
fn constraint_only(schema: &Node) -> bool {
    schema.as_map().is_some_and(|entries| {
        entries.iter().all(|entry| {
            matches!(
                &*entry.key,
                "required" | "minProperties" | "maxProperties" | "not"
            ) || ANNOTATIONS.contains(&&*entry.key)
        })
    })
}

/// The one scalar type every part declares or allows (parts that declare
/// none only constrain), if there is one.
fn common_scalar<'n>(parts: &[&'n Node]) -> Option<&'n str> {
    let mut common = None;
    for part in parts {
        match declared_types(part).as_slice() {
            [] if part.get("enum").is_none()
                && object_like(part)
                && part.get("properties").is_none() => {}
            [one]
                if matches!(*one, "string" | "integer" | "number" | "boolean")
                    && part.get("enum").is_none()
                    && common.is_none_or(|seen| seen == *one) =>
            {
                common = Some(*one);
            }
            _ => return None,
        }
    }
    common
}

/// A part an `allOf` can merge: an object, or only object constraints.
fn object_like(schema: &Node) -> bool {
    let types = declared_types(schema);
    let no_other_shape = ["enum", "const", "items", "not"]
        .iter()
        .all(|keyword| schema.get(keyword).is_none());
    // `anyOf: [{required: [name]}, {required: [company]}]` only constrains.
    let unions_constrain_only = ["oneOf", "anyOf"].iter().all(|keyword| {
        schema
            .get(keyword)
            .and_then(Node::as_seq)
            .is_none_or(|alternatives| alternatives.iter().all(constraint_only))
    });
    let no_other_shape = no_other_shape && unions_constrain_only;
    no_other_shape && (types.is_empty() || types == ["object"])
}

/// Doc lines from a schema's `title` and `description`.
pub fn docs_of(schema: &Node) -> Vec<String> {
    let mut lines = Vec::new();
    for keyword in ["title", "description"] {
        if let Some(text) = schema.get(keyword).and_then(Node::as_str) {
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if !lines.is_empty() {
                lines.push(String::new());
            }
            lines.extend(comment_lines(text));
        }
    }
    lines
}

/// `PascalCase` words of an operation's name, for its types.
pub fn operation_words(operation_id: Option<&str>, method: &str, path: &str) -> String {
    // Not cut here: a type name too long is shortened as a whole (see
    // `type_names`), keeping its last words (`…Params`).
    let words = match operation_id {
        Some(id) => pascal_case(id),
        None => String::new(),
    };
    if words.is_empty() {
        format!("{} {}", method.to_ascii_lowercase(), path)
    } else {
        words
    }
}
