//! The models module generated from a spec's schemas: snapshots of the
//! source, the names each operation gets, and (in `types_compile.rs`) that
//! the source compiles and round-trips JSON.

use crate::support::root;
use std::path::Path;

use idemgen_codegen::types::{SpecTypes, spec_types};
use idemgen_spec::Workspace;
use idemgen_spec::operations::operations;

fn generate(path: &Path) -> (Workspace, SpecTypes) {
    let workspace = Workspace::load(path).unwrap();
    let types = spec_types(&workspace).unwrap();
    (workspace, types)
}

/// The operations' type names, one line each, for a snapshot.
fn summary(workspace: &Workspace, types: &SpecTypes) -> String {
    let mut out = String::new();
    for operation in operations(workspace) {
        let Some(op) = types.operation(&operation) else {
            continue;
        };
        out.push_str(&format!("{} {}\n", operation.method, operation.path));
        if let Some(body) = &op.request_body {
            out.push_str(&format!(
                "  body: {} ({}, json: {}, required: {})\n",
                body.type_name, body.media_type, body.is_json, body.required
            ));
        }
        if let Some(params) = &op.params {
            out.push_str(&format!("  params: {}\n", params.type_name));
            for field in &params.fields {
                out.push_str(&format!(
                    "    {} = {:?} `{}`: {} {:?}{}\n",
                    field.field,
                    field.location,
                    field.wire_name,
                    field.rust_type,
                    field.kind,
                    if field.required { "" } else { " (optional)" }
                ));
            }
        }
        out.push_str(&format!("  response: {}\n", op.response.type_name));
        for variant in &op.response.variants {
            out.push_str(&format!(
                "    {} {:?}: {} {}\n",
                variant.variant,
                variant.status,
                variant.body.as_deref().unwrap_or("-"),
                match (&variant.media_type, &variant.media_enum) {
                    (Some(media_type), _) => media_type.clone(),
                    (None, Some(chosen)) => format!("(media type chosen by {chosen})"),
                    (None, None) => String::new(),
                }
            ));
            for header in &variant.headers {
                out.push_str(&format!(
                    "      header `{}` = {}: {}\n",
                    header.wire_name, header.field, header.rust_type
                ));
            }
        }
    }
    for fallback in types.fallbacks() {
        out.push_str(&format!(
            "fallback {}: {}\n",
            fallback.pointer, fallback.reason
        ));
    }
    out
}

#[test]
fn payment_callback_models() {
    let (workspace, types) = generate(&root().join("examples/payment-callback/openapi.yaml"));
    insta::assert_snapshot!("payment_callback_models", types.models());
    insta::assert_snapshot!("payment_callback_operations", summary(&workspace, &types));
}

#[test]
fn openapi_3_0_constructs() {
    let (workspace, types) = generate(&root().join("tests/types/constructs-3.0.yaml"));
    insta::assert_snapshot!("constructs_3_0_models", types.models());
    insta::assert_snapshot!("constructs_3_0_operations", summary(&workspace, &types));
}

#[test]
fn openapi_3_1_constructs() {
    let (workspace, types) = generate(&root().join("tests/types/constructs-3.1.yaml"));
    insta::assert_snapshot!("constructs_3_1_models", types.models());
    insta::assert_snapshot!("constructs_3_1_operations", summary(&workspace, &types));
}

/// A member with a schema `default` is read as it when absent (serde's
/// `default` function, which `Default` and `new` use too) and its doc
/// says so; a default Rust cannot write stays in the doc of an `Option`.
/// `date-time` and `date` are chrono types, and the spec then needs chrono.
#[test]
fn defaults_are_honoured_and_dates_are_chrono_types() {
    let (_, types) = generate(&root().join("tests/types/defaults-dates.yaml"));
    let models = types.models();
    insta::assert_snapshot!("defaults_dates_models", models);
    assert!(types.uses_time());
    for (field, expr) in [
        ("capture: bool", "true"),
        ("retries: i32", "3"),
        ("fee_rate: f64", "0.25"),
        ("channel: PaymentChannel", "PaymentChannel::Pos"),
        ("reference: String", "\"none\".to_string()"),
        ("note: Option<String>", "Some(\"n/a\".to_string())"),
        ("tags: Vec<String>", "Vec::new()"),
        ("currency: Currency", "Currency::Eur"),
    ] {
        let name = field.split(':').next().unwrap();
        let ty = field.split(": ").nth(1).unwrap();
        assert!(
            models.contains(&format!(
                "#[serde(default = \"Payment::default_{name}\")]\n    pub {field},"
            )),
            "{field} reads its default:\n{models}"
        );
        assert!(
            models.contains(&format!(
                "fn default_{name}() -> {ty} {{\n        {expr}\n    }}"
            )),
            "{field} defaults to {expr}:\n{models}"
        );
    }
    assert!(
        models.contains("pub metadata: Option<PaymentMetadata>,"),
        "{models}"
    );
    assert!(
        models.contains("/// Default: `{\"source\":\"api\"}`."),
        "{models}"
    );
    assert!(
        models.contains("pub due: Option<chrono::NaiveDate>,"),
        "{models}"
    );
    assert!(
        models.contains("pub paid_at: Option<chrono::DateTime<chrono::Utc>>,"),
        "{models}"
    );
    assert!(models.contains("impl Default for Settings {"), "{models}");
    let (_, without) = generate(&root().join("tests/types/unions.yaml"));
    assert!(!without.uses_time());
}

/// A response variant whose one header is optional is matched only when
/// the header is set (no `if let` inside a match arm, which clippy's
/// `collapsible_match` refuses in the user's workspace).
#[test]
fn an_optional_header_alone_is_matched_when_set() {
    let (_, types) = generate(&root().join("tests/types/optional-headers.yaml"));
    let models = types.models();
    insta::assert_snapshot!("optional_headers_models", models);
    assert!(
        models.contains("Self::Created { idempotency_key: Some(value), .. } => {"),
        "{models}"
    );
    assert!(
        models.contains("if let Self::NoContent { idempotency_key: Some(value), .. } = self {"),
        "{models}"
    );
    assert!(
        !models.contains("if let Some(value) = idempotency_key"),
        "{models}"
    );
}

/// A `discriminator` makes an internally tagged enum; a union without one
/// is generated only where its variants cannot take each other's values,
/// and otherwise is a JSON value the generator names, with the reason.
#[test]
fn unions_never_guess() {
    let (_, types) = generate(&root().join("tests/types/unions.yaml"));
    let models = types.models();
    insta::assert_snapshot!("unions_models", models);
    assert!(
        types.ambiguous_unions().iter().any(|union| {
            union.pointer.ends_with("/components/schemas/Entry")
                && union.reason.contains("itself a union named by `kind`")
        }),
        "{:?}",
        types.ambiguous_unions()
    );
    assert!(
        models.contains("pub type Entry = serde_json::Value;"),
        "{models}"
    );
    assert!(models.contains("#[serde(tag = \"shapeType\")]"), "{models}");
    assert!(
        models.contains("#[serde(rename = \"card\", alias = \"scheme\")]"),
        "{models}"
    );
    assert!(
        models.contains("pub type Critter = serde_json::Value;"),
        "{models}"
    );
    // Two all-optional objects, each with `type` values of its own.
    assert!(
        models.contains("impl<'de> Deserialize<'de> for PaymentMethod {"),
        "{models}"
    );
    assert!(
        models.contains(
            "\"ach\" | \"ach_plaid\" => serde_json::from_value(value).map(Self::AchDetails),"
        ),
        "{models}"
    );
    assert!(
        models.contains("WithoutType(serde_json::Value),"),
        "{models}"
    );
    let ambiguous: Vec<(&str, &str)> = types
        .ambiguous_unions()
        .iter()
        .map(|union| (union.pointer.as_str(), union.reason.as_str()))
        .collect();
    // Critter, and Entry (above).
    assert_eq!(ambiguous.len(), 2, "{ambiguous:#?}");
    assert_eq!(ambiguous[0].0, "/components/schemas/Critter");
    assert!(
        ambiguous[0].1.contains("`Cat` and `Hamster`"),
        "{}",
        ambiguous[0].1
    );
}

/// The copy of the fixture's models the runtime's tests compile, so that
/// they drive the typed response a generated service returns.
const RUNTIME_COPY: &str = "crates/idemgen-runtime/tests/it/created_headers_models.rs";

/// Declared response headers become fields of their variant, as `gen`
/// writes them (the engine's `Retry-After` on the in-progress answer and
/// `Content-Type` are not fields); the runtime's tests compile this very
/// output (`IDEMGEN_BLESS=1` rewrites their copy, which `cargo fmt` may
/// lay out its own way).
#[test]
fn response_headers_are_fields_of_their_variant() {
    let spec = root().join("tests/codegen_fixtures/created-headers.yaml");
    let workspace = Workspace::load(&spec).unwrap();
    let options = idemgen_codegen::Options {
        dialects: vec![],
        templates: None,
        package: "created-headers".into(),
        standalone: false,
        runtime_path: None,
        runbook_url: None,
        job: None,
        spec: "openapi.yaml".into(),
        defaults: Default::default(),
    };
    let project = idemgen_codegen::plan(&workspace, &options).unwrap();
    let models = &project
        .files
        .iter()
        .find(|file| file.path == "src/models.rs")
        .unwrap()
        .contents;
    insta::assert_snapshot!("created_headers_models", models);
    let (workspace, types) = generate(&spec);
    insta::assert_snapshot!("created_headers_operations", summary(&workspace, &types));

    let copy = root().join(RUNTIME_COPY);
    if std::env::var_os("IDEMGEN_BLESS").is_some_and(|value| value != "0" && !value.is_empty()) {
        std::fs::write(&copy, models).unwrap();
    }
    // The workspace's `cargo fmt` lays the copy out its own way, which
    // changes no code.
    let committed = std::fs::read_to_string(&copy).unwrap_or_default();
    assert!(
        committed == *models || idemgen_codegen::format::same_but_layout(&committed, models),
        "{RUNTIME_COPY} is not idemgen's output for the fixture; \
         IDEMGEN_BLESS=1 cargo test -p idemgen --test it types:: rewrites it"
    );
}

#[test]
fn output_is_deterministic() {
    let path = root().join("tests/types/constructs-3.0.yaml");
    let (_, first) = generate(&path);
    let (_, second) = generate(&path);
    assert_eq!(first.models(), second.models());
}

#[test]
fn hostile_names_still_make_rust() {
    let spec = r#"
openapi: 3.1.0
info: {title: "Hostile\nnames */", version: "1"}
paths:
  "/x/{a b}":
    post:
      operationId: "do\nit */ now"
      parameters:
        - {name: "a b", in: path, required: true, schema: {type: string}}
        - {name: "A B", in: query, schema: {type: string}}
      responses:
        "299": {description: "odd"}
        "5XX": {description: "server"}
components:
  schemas:
    Self: {type: object, properties: {self: {type: string}, Self: {type: string}}}
    Box: {type: string}
    "": {type: integer}
    "123": {type: boolean}
    支付: {type: object, properties: {"": {type: string}, "ü": {type: string}}}
    Option: {type: string, enum: ["", " ", "Self", "a\"b", "1.0", "1-0"]}
"#;
    let workspace = Workspace::from_text(
        Path::new("hostile.yaml"),
        "hostile.yaml".into(),
        spec.into(),
    )
    .unwrap();
    let types = spec_types(&workspace).unwrap();
    syn::parse_file(types.models()).unwrap();
    insta::assert_snapshot!("hostile_models", types.models());
}

#[test]
fn deeply_nested_schemas_do_not_overflow_the_stack() {
    // As deep as the loader accepts: each level is `properties: {a: …}`.
    let mut schema = String::from("{type: string}");
    for _ in 0..120 {
        schema = format!("{{type: object, properties: {{a: {schema}}}}}");
    }
    let spec = format!(
        "openapi: 3.1.0\ninfo: {{title: deep, version: '1'}}\npaths: {{}}\n\
         components: {{schemas: {{Deep: {schema}}}}}\n"
    );
    let Ok(workspace) = Workspace::from_text(Path::new("deep.yaml"), "deep.yaml".into(), spec)
    else {
        return; // refused by the loader's depth limit: nothing to generate
    };
    let types = spec_types(&workspace).unwrap();
    let structs = types.models().matches("pub struct Deep").count();
    assert_eq!(structs, 120, "one struct a level");
}

/// An inline schema written out again in several operations is one type;
/// the spec's own `components` schemas keep their names even when alike.
#[test]
fn structurally_identical_inline_types_are_one() {
    let range = "{type: object, properties: {gt: {type: integer}, lt: {type: integer}}}";
    let operation = |id: &str| {
        format!(
            "    get:\n      operationId: {id}\n      requestBody:\n        content:\n          \
             application/json:\n            schema:\n              type: object\n              \
             properties:\n                created: {range}\n      responses:\n        \
             '204': {{description: done}}\n"
        )
    };
    let spec = format!(
        "openapi: 3.0.3\ninfo: {{title: Ranges, version: '1'}}\npaths:\n  /charges:\n{}  \
         /refunds:\n{}components:\n  schemas:\n    A: {range}\n    B: {range}\n",
        operation("listCharges"),
        operation("listRefunds")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.yaml");
    std::fs::write(&path, spec).unwrap();
    let (_, types) = generate(&path);
    let models = types.models();
    let structs: Vec<&str> = models
        .lines()
        .filter_map(|line| line.strip_prefix("pub struct "))
        .map(|rest| rest.trim_end_matches(" {"))
        .collect();
    assert_eq!(
        structs,
        [
            "A",
            "B",
            "ListChargesRequest",
            "ListChargesRequestCreated",
            "ListRefundsRequest"
        ],
        "{models}"
    );
    assert_eq!(
        models
            .matches("pub created: Option<ListChargesRequestCreated>,")
            .count(),
        2,
        "{models}"
    );
}

/// A form's values are text: a union of objects a form body reaches is not
/// chosen by a property (its reading goes through JSON, where `amount=5`
/// would be the string `"5"`, refused as an integer), so it stays in
/// order or, as here, a named JSON value, and the request is still taken.
#[test]
fn a_union_a_form_body_reaches_is_not_chosen_by_a_property() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("form.yaml");
    std::fs::write(
        &spec,
        r#"openapi: 3.0.3
info: {title: F, version: "1"}
paths:
  /pay:
    post:
      operationId: pay
      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties:
                pm:
                  anyOf:
                    - {type: object, properties: {type: {type: string, enum: [card]}, amount: {type: integer}}}
                    - {type: object, properties: {type: {type: string, enum: [bank]}, amount: {type: integer}}}
      responses:
        '200': {description: ok}
"#,
    )
    .unwrap();
    let (_, types) = generate(&spec);
    let models = types.models();
    assert!(
        models.contains("pub type PayRequestPm = serde_json::Value;"),
        "{models}"
    );
    assert!(!models.contains("impl<'de> Deserialize<'de>"), "{models}");
}
