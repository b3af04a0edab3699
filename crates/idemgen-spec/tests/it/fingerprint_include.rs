//! `fingerprint.include` reads `headers` beside the other parts, keeps
//! its default, and the header parameters it hashes are the declared ones
//! but the key and credentials.

use std::path::Path;

use idemgen_spec::analysis::{InputLocation, analyse};
use idemgen_spec::contract::model::{Defaults, FingerprintPart};
use idemgen_spec::contract::parse::parse_block;
use idemgen_spec::{Workspace, parse_tree};

fn parts(block: &str) -> (Option<Vec<FingerprintPart>>, Vec<String>) {
    let tree = parse_tree("api.yaml", block).unwrap();
    let mut errors = Vec::new();
    let raw = parse_block(&tree, "/x-idempotency", &mut errors);
    (
        raw.fingerprint_include.map(|include| include.value),
        errors.into_iter().map(|error| error.message).collect(),
    )
}

#[test]
fn headers_is_a_part_the_fingerprint_can_include() {
    let (included, errors) = parts("fingerprint: {include: [method, headers, query, body]}\n");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        included,
        Some(vec![
            FingerprintPart::Method,
            FingerprintPart::Headers,
            FingerprintPart::Query,
            FingerprintPart::Body
        ])
    );
    assert_eq!(FingerprintPart::Headers.name(), "headers");
}

#[test]
fn an_unknown_part_names_headers_among_the_choices() {
    let (included, errors) = parts("fingerprint: {include: [method, header]}\n");
    assert_eq!(included, Some(vec![FingerprintPart::Method]));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("`header`")
            && errors[0].contains("`method`, `path`, `query`, `headers`, `body`"),
        "{errors:?}"
    );
}

const SPEC: &str = r#"openapi: 3.1.0
info: {title: t, version: "1"}
x-idempotency:
  client: {timeout: 5s, retries: [200ms]}
  server: {max-processing: 3s}
  window: 1h
paths:
  /pay:
    parameters:
      - {name: X-Region, in: header, schema: {type: string}}
    post:
      security: [{signature: [], session: []}]
      parameters:
        - {name: Idempotency-Key, in: header, required: true, schema: {type: string}}
        - {name: X-Currency, in: header, schema: {type: string}}
        - {name: x-currency, in: header, schema: {type: string}}
        - {name: Authorization, in: header, schema: {type: string}}
        - {name: Accept, in: header, schema: {type: string}}
        - {name: content-type, in: header, schema: {type: string}}
        - {name: x-signature, in: header, schema: {type: string}}
        - {name: Cookie, in: header, schema: {type: string}}
        - {name: api_key, in: query, schema: {type: string}}
        - {name: page, in: query, schema: {type: integer}}
        - {name: sid, in: cookie, schema: {type: string}}
      x-idempotency:
        key: {in: header, name: idempotency-key, format: "pay:{uuid}"}
      responses:
        "200": {description: ok}
components:
  securitySchemes:
    signature: {type: apiKey, in: header, name: X-Signature}
    session: {type: apiKey, in: cookie, name: sid}
    query: {type: apiKey, in: query, name: api_key}
"#;

/// `Accept`, `Content-Type` and `Authorization` header parameters are
/// ignored, as OpenAPI says.
#[test]
fn the_declared_headers_but_the_key_and_credentials_are_fingerprinted() {
    let workspace = Workspace::from_text(
        Path::new("openapi.yaml"),
        "openapi.yaml".into(),
        SPEC.into(),
    )
    .unwrap();
    let analysis = analyse(&workspace, Defaults::default());
    let operation = &analysis.operations[0];
    let contract = operation.contract().expect("the operation has a contract");
    // Left unsaid, the fingerprint keeps its default.
    assert_eq!(
        contract.fingerprint.value,
        [
            FingerprintPart::Method,
            FingerprintPart::Path,
            FingerprintPart::Body
        ]
    );
    let context = operation.context(&workspace);
    // The `query` scheme is not in this operation's requirement, so its
    // parameter is an input like any other.
    let inputs: Vec<(InputLocation, String)> = context
        .request_inputs()
        .into_iter()
        .map(|input| (input.location, input.name))
        .collect();
    assert_eq!(
        inputs,
        [
            (InputLocation::Header, "X-Currency".to_string()),
            (InputLocation::Query, "api_key".to_string()),
            (InputLocation::Query, "page".to_string()),
            (InputLocation::Header, "X-Region".to_string()),
        ]
    );
    assert_eq!(context.fingerprinted_headers(), ["x-currency", "x-region"]);
}

#[test]
fn a_querystring_parameter_counts_as_its_fields_but_the_key() {
    let spec = r#"openapi: 3.2.0
info: {title: t, version: "1"}
paths:
  /refunds:
    post:
      parameters:
        - in: querystring
          name: query
          content:
            application/x-www-form-urlencoded:
              schema:
                type: object
                properties:
                  refund_key: {type: string}
                  reason: {type: string}
      x-idempotency:
        key: {in: query, name: refund_key, format: "refund:{uuid}"}
      responses:
        "200": {description: ok}
"#;
    let workspace = Workspace::from_text(
        Path::new("openapi.yaml"),
        "openapi.yaml".into(),
        spec.into(),
    )
    .unwrap();
    let analysis = analyse(&workspace, Defaults::default());
    let context = analysis.operations[0].context(&workspace);
    let inputs: Vec<(InputLocation, String)> = context
        .request_inputs()
        .into_iter()
        .map(|input| (input.location, input.name))
        .collect();
    assert_eq!(inputs, [(InputLocation::Query, "reason".to_string())]);
}
