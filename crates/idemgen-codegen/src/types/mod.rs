//! Rust types from the spec's schemas: one `models` module per spec, and
//! per operation the names of its typed input and output.
//!
//! # API
//!
//! ```ignore
//! let types = codegen::types::spec_types(&workspace)?;   // once per spec
//! std::fs::write("src/models.rs", types.models());          // formatted source
//! for operation in spec::operations::operations(&workspace) {
//!     let op = types.operation(&operation).unwrap();        // path operations only
//!     op.request_body   // Option<RequestBody>: `models::{type_name}`, JSON or raw bytes, required?
//!     op.params         // Option<Params>: struct of path/query/header values, serde-renamed to wire names
//!     op.response       // Response: enum name and one variant per declared status
//! }
//! ```
//!
//! Parameters arrive as text: each [`ParamField`] says where it comes from
//! (its wire name; header names compare case-insensitively), whether it is
//! required and which JSON value its text stands for ([`ParamKind`]), so a
//! caller builds a JSON object from the request and deserialises the
//! struct from it with serde_json. A missing required value, a value of
//! the wrong type or a string outside an enum is then a serde error,
//! before any claim.
//!
//! Every name in [`OperationTypes`] is a single identifier defined in the
//! models module, so the caller writes `models::PayCallback`. The module
//! needs only `serde` (with `derive`) and `serde_json` (and `chrono` when
//! [`SpecTypes::uses_time`]), and is a whole file
//! (it starts with inner attributes): declare it with `mod models;`.
//!
//! A response enum has inherent methods `status() -> u16`,
//! `content_type() -> Option<&'static str>` and
//! `into_body(self) -> Result<Vec<u8>, serde_json::Error>`: the body is
//! serialised once, by consuming the response, so the bytes sent are the
//! bytes stored for replay. A `4XX`-style range or `default` is a variant
//! that carries its status (`ClientError { status, body }`); the caller
//! decides what to do with a status outside the range. A response without
//! content is a unit variant; one whose content is not JSON carries its
//! bytes (`Vec<u8>`).
//!
//! The headers a response declares (`Location`, `ETag`) are fields of its
//! variant, named after them: a required one plainly, an optional one as
//! an `Option`, typed by its schema as parameters are
//! (`Created { body, location, etag }`). Their enum then has
//! `headers(&self) -> Result<Vec<(&'static str, String)>, serde_json::Error>`:
//! each set header's name and value as sent (a string as is, a number or
//! boolean as JSON writes it, an array's items joined by commas). A
//! variant without headers keeps its shape, and an enum without any has
//! no `headers()`. The headers the server or the engine sets are no
//! fields: `Content-Type` (OpenAPI ignores its declaration; the body's
//! media type is sent), the ones that frame the message
//! (`Content-Length`, `Transfer-Encoding`, …), `Idempotent-Replayed`,
//! and `Retry-After` on the in-progress answer (see [`EngineStatuses`]).
//!
//! # Why an own generator and not typify
//!
//! typify (progenitor's engine; 0.8.0 is its newest stable release) reads
//! JSON Schema as schemars 0.8 types, where OpenAPI 3.0's `nullable` does
//! not exist: a required `{type: string, nullable: true}` property becomes
//! a plain `String` that rejects `null`. Given the component schemas of 33
//! public OpenAPI 3 specs (PayPal, Square, Twilio, Stripe, GitHub, …) it
//! panicked on 7 and refused 2.
//!
//! Generating from idemgen's positioned tree instead follows `$ref`s across
//! files exactly as lint does, keeps 3.0 and 3.1 nullability, never panics
//! (anything it cannot express becomes `serde_json::Value` with a doc
//! comment saying why), and emits code that needs nothing but serde.

mod builder;
mod convert;
mod emit;
mod form_layout;
mod form_text;
mod graph;
mod merge;
mod model;
mod multipart;
mod naming;
mod operation;
mod param_shape;
mod reads;
mod sample;
mod status;
mod type_names;
mod union;

use std::collections::BTreeMap;

use idemgen_spec::Workspace;
use idemgen_spec::operations::{Operation, OperationKind, operations};

pub(crate) use convert::{is_null_schema, is_nullable, reference_name};
pub use form_layout::{FormLayout, FormSide};
use model::TypeDef;
pub(crate) use operation::{is_json, media_choices, media_essence};

/// The `PascalCase` words an operation's types start with (`GetOrder` in
/// `GetOrderParams`), before any suffix that keeps them unique.
pub fn operation_type_words(operation_id: Option<&str>, method: &str, path: &str) -> String {
    naming::pascal_case(&convert::operation_words(operation_id, method, path))
}
pub use multipart::{Multipart, PartField, PartReading};
pub use sample::UnionSample;
pub use status::StatusPattern;

/// The types of a whole spec.
#[derive(Debug, Clone)]
pub struct SpecTypes {
    models: String,
    /// Keyed by the operation's JSON pointer.
    operations: BTreeMap<String, OperationTypes>,
    fallbacks: Vec<Fallback>,
    ambiguous: Vec<Fallback>,
    samples: Vec<UnionSample>,
    uses_time: bool,
    /// The type model the models were written from.
    defs: BTreeMap<String, TypeDef>,
}

impl SpecTypes {
    /// Whether the models hold a `date-time` or `date` (chrono types):
    /// the project's `Cargo.toml` then names chrono.
    pub fn uses_time(&self) -> bool {
        self.uses_time
    }

    /// Formatted Rust source of the `models` module.
    pub fn models(&self) -> &str {
        &self.models
    }

    /// The types of a path operation (`None` for webhooks, which a
    /// service sends rather than serves).
    pub fn operation(&self, operation: &Operation<'_>) -> Option<&OperationTypes> {
        self.operations.get(&operation.pointer)
    }

    /// Every schema that became `serde_json::Value` because Rust types
    /// cannot express it, in document order.
    pub fn fallbacks(&self) -> &[Fallback] {
        &self.fallbacks
    }

    /// The `oneOf`/`anyOf` schemas generated as `serde_json::Value`
    /// because their variants accept each other's values and no
    /// `discriminator` says which is meant (see the `union` module).
    pub fn ambiguous_unions(&self) -> &[Fallback] {
        &self.ambiguous
    }

    /// A value built for each variant of each generated union, for a
    /// test that the compiled module reads it as that variant.
    pub fn union_samples(&self) -> &[UnionSample] {
        &self.samples
    }

    /// The variant of the union named `union` in the models that serde
    /// reads `value` as, worked out from the type model (`None`: no
    /// variant takes it, or no such union).
    pub fn union_variant_of(&self, union: &str, value: &serde_json::Value) -> Option<String> {
        reads::variant_of(&self.defs, union, value)
    }
}

/// A schema generated as `serde_json::Value`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// JSON pointer of the schema.
    pub pointer: String,
    pub reason: String,
}

/// What one operation receives and answers, as names in the models module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationTypes {
    pub request_body: Option<RequestBody>,
    pub params: Option<Params>,
    pub response: Response,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestBody {
    /// The body's type (`Vec<u8>` aliased under this name when neither JSON
    /// nor a form with a schema).
    pub type_name: String,
    /// The media type the body is declared with (the JSON one if several).
    pub media_type: String,
    /// Deserialise with serde_json; otherwise the raw bytes.
    pub is_json: bool,
    /// An `application/x-www-form-urlencoded` body with a schema, read
    /// into its type from the form (`Request::form_as`).
    pub is_form: bool,
    /// How a form's lists are laid out (the default for other bodies).
    pub form_layout: FormLayout,
    /// A `multipart/form-data` body with a schema, read into its type part
    /// by part (`Request::multipart_as`).
    pub multipart: Option<Multipart>,
    /// `requestBody.required`: when false the handler gets an `Option`.
    pub required: bool,
}

/// The struct holding the operation's path, query and header parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub type_name: String,
    pub fields: Vec<ParamField>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamField {
    /// The Rust field name (may be a raw identifier such as `r#type`).
    pub field: String,
    /// The parameter's name as sent (the serde rename).
    pub wire_name: String,
    pub location: ParamLocation,
    pub required: bool,
    /// The field's type as written in the models module (`Option<i64>`).
    pub rust_type: String,
    /// What JSON value the wire text stands for, so that a caller can turn
    /// `?limit=10` into `{"limit": 10}` before deserialising the struct.
    pub kind: ParamKind,
    /// OpenAPI's `style`, when the parameter declares one.
    pub style: Option<String>,
    /// OpenAPI's `explode`, when the parameter declares it.
    pub explode: Option<bool>,
    /// A `deepObject` value that nests in a way no [`Shape`] describes:
    /// it is read as text, which the generator reports.
    pub unread_nesting: bool,
}

/// The JSON shape of a parameter's value (string enums are strings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamKind {
    Scalar(Scalar),
    /// A union of this scalar and a string (Stripe's `trial_end`: a time
    /// or `now`): text that does not read as the scalar is the string.
    ScalarOrString(Scalar),
    /// Several values of one scalar type, written as the style says.
    Array(Scalar),
    /// An object: its declared properties' scalars (others are strings);
    /// `or_scalar`: a `oneOf` that may instead be one scalar value.
    Object {
        properties: Vec<(String, Scalar)>,
        or_scalar: Option<Scalar>,
    },
    /// A `deepObject` query value that nests (an array of objects, an
    /// object of objects) or that the flat readers would take as text (a
    /// list or `""`), read from its brackets as this shape.
    Nested(Shape),
    /// Any other JSON value: its text, as a string.
    Other,
}

/// What a nested parameter's value holds, down to the scalar each leaf's
/// text stands for (the runtime's `Shape`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    Scalar(Scalar),
    /// A union of this scalar and a string: text that does not read as
    /// the scalar is the string.
    ScalarOrString(Scalar),
    /// An array of items of this shape.
    Items(Box<Shape>),
    /// An object of these members (the others are text).
    Members(Vec<(String, Shape)>),
    /// A union of a value of this shape and a scalar: text is the scalar.
    OrScalar(Box<Shape>, Scalar),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    String,
    Integer,
    Number,
    Boolean,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamLocation {
    Path,
    Query,
    Header,
}

/// The response enum: one variant per declared status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub type_name: String,
    pub variants: Vec<ResponseVariant>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseVariant {
    pub variant: String,
    pub status: StatusPattern,
    /// The body's type, `None` for a response without content.
    pub body: Option<String>,
    /// The body's media type; `None` without content, or when the
    /// response declares several and `media_enum` chooses.
    pub media_type: Option<String>,
    /// The enum of the bodies of a response that declares several media
    /// types: its variant is the `Content-Type` sent.
    pub media_enum: Option<String>,
    /// The headers the business code sets, as the variant's fields.
    pub headers: Vec<ResponseHeader>,
}

/// A header a response declares, as a field of its variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The Rust field name.
    pub field: String,
    /// The header's name as the spec writes it (`Location`).
    pub wire_name: String,
    /// `required: true`: a plain field, else an `Option`.
    pub required: bool,
    /// The field's type as written in the models module.
    pub rust_type: String,
}

/// The statuses the engine answers itself for each idempotent operation,
/// by the operation's JSON pointer. The in-progress answer's
/// `Retry-After` is the engine's, so the response declared with that
/// status gets no field for it; every response the engine may send says
/// so in its doc comment.
pub type EngineStatuses = BTreeMap<String, EngineAnswers>;

/// An idempotent operation's contract statuses, as the engine sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineAnswers {
    /// Another request with the same key is in progress.
    pub in_progress: u16,
    /// The key was used with another request, or after a failure that may
    /// not be retried.
    pub conflict: u16,
    /// The key is missing (when [`Self::key_required`]) or malformed.
    pub missing_key: u16,
    pub key_required: bool,
}

/// The generator's own failure (formatting code it produced): a bug, not
/// bad input, reported rather than panicking.
#[derive(Debug, Clone)]
pub struct TypesError(pub String);

impl std::fmt::Display for TypesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "generating the models module failed: {}", self.0)
    }
}

impl std::error::Error for TypesError {}

/// The types of every schema and path operation of `workspace`, its
/// contracts read with the default profile and dialect.
pub fn spec_types(workspace: &Workspace) -> Result<SpecTypes, TypesError> {
    let analysis = idemgen_spec::analysis::analyse(workspace, Default::default());
    spec_types_with(workspace, &engine_statuses(&analysis))
}

/// The statuses of each contracted operation's engine answers.
pub fn engine_statuses(analysis: &idemgen_spec::analysis::Analysis<'_>) -> EngineStatuses {
    analysis
        .contracted()
        .map(|(analysed, contract)| {
            let answers = EngineAnswers {
                in_progress: contract.in_progress_status.value,
                conflict: contract.conflict_status.value,
                // The engine's default when the contract names none.
                missing_key: contract
                    .missing_key_status
                    .as_ref()
                    .map_or(400, |status| status.value),
                key_required: contract.missing_key_status.is_some(),
            };
            (analysed.operation.pointer.clone(), answers)
        })
        .collect()
}

/// [`spec_types`] for a service whose engine answers idempotent
/// operations with `engine` statuses (see [`EngineStatuses`]).
pub fn spec_types_with(
    workspace: &Workspace,
    engine: &EngineStatuses,
) -> Result<SpecTypes, TypesError> {
    // The first pass only asks for names (see `type_names`).
    let mut first = convert(workspace, engine, type_names::TypeNames::default());
    // A multipart body shared with another operation gets its own
    // reserved name here: a name in use too.
    let held = multipart::held_elsewhere(&first.finished.defs, &first.operations);
    for types in first.operations.values_mut() {
        multipart::fill(types, &mut first.finished.defs, &held);
    }
    let names = first
        .finished
        .names
        .settle(|name| first.finished.defs.contains_key(name));
    let Converted {
        components,
        finished,
        operations: mut by_pointer,
    } = convert(workspace, engine, names);
    let convert::Finished {
        defs,
        fallbacks,
        ambiguous,
        names: _,
    } = finished;
    let mut defs = defs;
    let held = multipart::held_elsewhere(&defs, &by_pointer);
    for types in by_pointer.values_mut() {
        multipart::fill(types, &mut defs, &held);
        operation::fill_param_kinds(types, &defs);
    }
    let defs = merge::identical(defs, &components, &by_pointer);
    let samples = sample::union_samples(&defs);
    let defs = graph::break_cycles(defs);
    let read_from_forms = form_text::unions_read_from_forms(&defs, &by_pointer);
    let models = emit::module(
        &defs,
        &emit::Header::for_workspace(workspace),
        &read_from_forms,
    )?;
    let uses_time = emit::uses_time(&defs);
    Ok(SpecTypes {
        models,
        operations: by_pointer,
        fallbacks,
        ambiguous,
        samples,
        uses_time,
        defs,
    })
}

/// One pass over the schemas and path operations.
struct Converted {
    /// The names of `components.schemas`.
    components: std::collections::BTreeSet<String>,
    finished: convert::Finished,
    /// Keyed by the operation's JSON pointer.
    operations: BTreeMap<String, OperationTypes>,
}

fn convert(
    workspace: &Workspace,
    engine: &EngineStatuses,
    names: type_names::TypeNames,
) -> Converted {
    let mut converter = convert::Converter::new(workspace, names);
    let components = converter.reserve_components();
    let path_operations: Vec<Operation<'_>> = operations(workspace)
        .into_iter()
        .filter(|operation| operation.kind == OperationKind::Path)
        .collect();
    let reserved: Vec<operation::Reserved> = path_operations
        .iter()
        .map(|op| operation::reserve(&mut converter, op))
        .collect();
    converter.drain();
    let mut by_pointer = BTreeMap::new();
    for (op, names) in path_operations.iter().zip(reserved) {
        let answers = engine.get(&op.pointer).copied();
        let types = operation::build(&mut converter, op, names, answers);
        converter.drain();
        by_pointer.insert(op.pointer.clone(), types);
    }
    Converted {
        components,
        finished: converter.finish(&by_pointer),
        operations: by_pointer,
    }
}

/// The types of one operation (computing the whole spec's; call
/// [`spec_types`] once when you need several).
pub fn operation_types(
    workspace: &Workspace,
    operation: &Operation<'_>,
) -> Result<Option<OperationTypes>, TypesError> {
    Ok(spec_types(workspace)?.operation(operation).cloned())
}
