//! Forms and parameter styles, end to end: a generated service
//! (`tests/codegen_fixtures/forms.yaml`, every parameter style and a form
//! body with nested brackets and arrays) is built in the shared
//! `target/generated` directory and sent real requests by the test in
//! `tests/codegen_fixtures/forms/sent.rs`, whose business code echoes what
//! it received, and by the generated client, which writes each style;
//! `/things/{id}.json` is routed whole and its `.json` cut off.
//! Runs when `IDEMGEN_TEST_GENERATED_BUILDS=1`.

use std::process::Command;

use crate::support::build::{self, root};
use crate::support::run::idemgen;
use crate::support::skip;

const SPEC: &str = "tests/codegen_fixtures/forms.yaml";

/// What `gen` writes for the spec, without building it: the form is a
/// typed model read with `form_checked_as` (its keywords, if any, in a
/// table), each parameter's style is in its table, and the client sends
/// the form as `serde_qs` writes it.
#[test]
fn the_generator_types_the_form_and_reads_each_style() {
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("server");
    let run = idemgen(&[
        "gen",
        SPEC,
        "-o",
        server.to_str().unwrap(),
        "--db",
        "sqlite",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let models = std::fs::read_to_string(server.join("src/models.rs")).unwrap();
    assert!(models.contains("pub struct CheckoutRequest {"), "{models}");
    assert!(
        models.contains("pub items: Option<Vec<CheckoutRequestItemsItem>>,"),
        "{models}"
    );
    assert!(!models.contains("= Vec<u8>;"), "no raw body: {models}");
    // Nested deepObject parameters get their types, not text.
    assert!(
        models
            .contains("pub subscription_items: Option<Vec<CheckoutParamsSubscriptionItemsItem>>,"),
        "{models}"
    );
    assert!(
        models.contains("pub automatic_tax: Option<CheckoutParamsAutomaticTax>,"),
        "{models}"
    );
    let routes = std::fs::read_to_string(server.join("src/routes.rs")).unwrap();
    // `gen` formats its output: compare without the layout (nor the
    // trailing comma a broken line gets).
    let flat: String = routes
        .split_whitespace()
        .collect::<String>()
        .replace(",)", ")");
    for expected in [
        // No 422 declared: a form that does not fit is a 400; with one, a
        // 422, keywords checked, as a JSON body is.
        // Lists declared joined in one text (`coupons=a,b`, `codes=1|2`)
        // split as the operation names them, for the fingerprint too.
        "letbody:models::CheckoutRequest=request.joined_form_checked_as(400,&[],operations::CHECKOUT.form_lists)?;",
        // A field declared JSON text, read as JSON as the operation names it.
        "letbody:models::PayByFormRequest=request.encoded_form_checked_as(422,PAY_BY_FORM_BODY,operations::PAY_BY_FORM.form_lists,operations::PAY_BY_FORM.form_json_fields)?;",
        r#"Constraint{at:"/amount",check:Check::Minimum("5"),},"#,
        r#"Constraint{at:"/tags/*",check:Check::MinLength(1),},"#,
        r#"Param::path("ids",Scalar::Integer).many(),"#,
        r#"Param::path("labels",Scalar::String).many().style(idemgen_runtime::Style::Label).explode(true),"#,
        r#"Param::path("point",Scalar::String).object(&[("x",Scalar::Integer),("y",Scalar::String)]).style(idemgen_runtime::Style::Matrix),"#,
        r#"Param::query("created",Scalar::Integer).object(&[("gt",Scalar::Integer),("lt",Scalar::Integer)]).or_scalar().style(idemgen_runtime::Style::DeepObject),"#,
        // A deepObject that nests is read from its brackets as its shape.
        r#"Param::query("subscription_items",Scalar::String).nested(&Shape::Items(&Shape::Members(&[("price",Shape::Scalar(Scalar::String)),("quantity",Shape::Scalar(Scalar::Integer)),("tax_rates",Shape::Items(&Shape::Scalar(Scalar::String))),]))).style(idemgen_runtime::Style::DeepObject).explode(true),"#,
        r#"Param::query("default_tax_rates",Scalar::String).nested(&Shape::Items(&Shape::Scalar(Scalar::String))).style(idemgen_runtime::Style::DeepObject).explode(true),"#,
        r#"Param::query("automatic_tax",Scalar::String).nested(&Shape::Members(&[("enabled",Shape::Scalar(Scalar::Boolean)),("liability",Shape::Members(&[("type",Shape::Scalar(Scalar::String)),("account",Shape::Scalar(Scalar::String)),])),])).style(idemgen_runtime::Style::DeepObject),"#,
        r#"Param::query("trial_end",Scalar::Integer).or_string(),"#,
        r#"Param::query("tags",Scalar::String).many().style(idemgen_runtime::Style::PipeDelimited),"#,
        r#"Param::query("sizes",Scalar::Integer).many().style(idemgen_runtime::Style::SpaceDelimited),"#,
        r#"Param::query("colors",Scalar::String).many().explode(false),"#,
        r#"Param::query("page",Scalar::Integer).many(),"#,
        r#"Param::header("X-Trace",Scalar::String).object(&[("id",Scalar::Integer),("span",Scalar::String)]).explode(true),"#,
        // `/things/{id}.json` is routed whole, its `.json` cut off when read.
        r#".route("/things/{id}","#,
        r#"staticTOUCH_THING_PATH:&[PathAffix]=&[PathAffix::new("id","",".json")];"#,
        "letrequest=with_path_affixes(request,TOUCH_THING_PATH);",
    ] {
        assert!(flat.contains(expected), "{expected} in {routes}");
    }
    let operations = std::fs::read_to_string(server.join("src/operations.rs")).unwrap();
    let operations: String = operations
        .split_whitespace()
        .collect::<String>()
        .replace(",]", "]")
        .replace(",)", ")");
    for expected in [
        r#".joined_form_lists(&[idemgen_runtime::JoinedList{name:"coupons",delimiter:',',}]);"#,
        // Where a key is fingerprinted, its form's lists of scalars are
        // named, so that a list of one is one however laid out.
        r#".joined_form_lists(&[idemgen_runtime::JoinedList{name:"codes",delimiter:'|',}]).form_list_fields(&["tags","codes"]).form_json_fields(&["details"]);"#,
    ] {
        assert!(operations.contains(expected), "{expected} in {operations}");
    }
    // A deepObject whose brackets could be either object is not read
    // from them, and the summary says so.
    assert!(
        run.stderr.contains(
            "warning: checkout: query parameter `discount` is a `deepObject` whose brackets \
             cannot be read into its type"
        ),
        "{}",
        run.stderr
    );
    // `/things/{id}.xml` is the same route and method: skipped, both named.
    assert!(
        run.stderr.contains(
            "warning: touchThingXml: POST /things/{id}.xml matches the same requests as \
             POST /things/{id}.json, served earlier (the router matches whole segments: both \
             are routed at `/things/{id}`); skipped"
        ),
        "{}",
        run.stderr
    );
    assert!(!server.join("src/business/touch_thing_xml.rs").exists());
    let client = dir.path().join("client");
    let run = idemgen(&["gen", SPEC, "-o", client.to_str().unwrap(), "--client"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let manifest = std::fs::read_to_string(client.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("serde_qs = \"1\""), "{manifest}");
    let lib: String = std::fs::read_to_string(client.join("src/lib.rs"))
        .unwrap()
        .split_whitespace()
        .collect();
    // `checkout`'s form nests: brackets; `payByForm`'s is flat: a list's
    // key repeated.
    assert!(lib.contains("bytes:serde_qs::to_string(body)"), "{lib}");
    assert!(
        lib.contains(
            "letform=serde_qs::Config::new().array_format(serde_qs::ArrayFormat::Unindexed)\
             .serialize_string(body)"
        ),
        "{lib}"
    );
    // Either way, a list declared joined is joined.
    for joined in [
        r#".map(|form|retry::join_form_lists(&form,&[("coupons",',')]))"#,
        r#".map(|form|retry::join_form_lists(&form,&[("codes",'|')]))"#,
        // A field declared JSON text is sent as its JSON.
        r#"retry::json_form_fields(&form,&retry::to_json(body)?,&["details"]"#,
    ] {
        assert!(lib.contains(joined), "{joined} in {lib}");
    }
}

/// A form list that is not sent or read as its `encoding` declares is
/// named when the service and the client are generated: one joined in a
/// style forms do not have (`matrix`), one the client sends in brackets
/// because its form also nests, and a property declared as XML text; a
/// list joined by commas (`explode: false`) is not, as both sides split
/// and join it, nor is a property declared as JSON text, which both sides
/// read and write as JSON.
#[test]
fn a_form_list_laid_out_otherwise_than_declared_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("openapi.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.0.3\n\
         info: {title: t, version: '1'}\n\
         paths:\n  \
           /calls:\n    \
             post:\n      \
               operationId: createCall\n      \
               requestBody:\n        \
                 content:\n          \
                   application/x-www-form-urlencoded:\n            \
                     schema:\n              \
                       type: object\n              \
                       properties:\n                \
                         tags: {type: array, items: {type: string}}\n                \
                         odd: {type: array, items: {type: string}}\n                \
                         events: {type: array, items: {type: string}}\n                \
                         metadata: {type: object, additionalProperties: {type: string}}\n                \
                         note: {type: string}\n                \
                         extra: {type: object, properties: {n: {type: integer}}}\n            \
                     encoding:\n              \
                       tags: {style: form, explode: false}\n              \
                       odd: {style: matrix}\n              \
                       note: {contentType: application/xml}\n              \
                       extra: {contentType: application/json}\n      \
               responses:\n        \
                 '200': {description: ok}\n",
    )
    .unwrap();
    let server = dir.path().join("server");
    let run = idemgen(&[
        "gen",
        spec.to_str().unwrap(),
        "-o",
        server.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "warning: createCall: form field `odd` is declared joined in one text (`style: \
             matrix`), which the service does not split: the text is one item (send it as \
             `odd=a&odd=b`)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "warning: createCall: form field `note` is declared sent as `application/xml` (its \
             `encoding` names only a `contentType`); the service reads it as form text"
        ),
        "{}",
        run.stderr
    );
    // `tags`, joined by commas, is split; `extra` is read as JSON.
    for split in ["`events`", "`tags`", "`extra`"] {
        assert!(!run.stderr.contains(split), "{}", run.stderr);
    }
    let client = dir.path().join("client");
    let run = idemgen(&[
        "gen",
        spec.to_str().unwrap(),
        "-o",
        client.to_str().unwrap(),
        "--client",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for expected in [
        "warning: createCall: form field `odd` is declared joined in one text (`style: \
         matrix`); the client sends it in brackets (`odd[0]=a&odd[1]=b`)",
        "warning: createCall: form field `events` is sent in brackets (`events[0]=a`), not as \
         its key repeated as declared: the form is laid out one way, and `metadata` nests",
        "warning: createCall: form field `note` is declared sent as `application/xml` (its \
         `encoding` names only a `contentType`); the client sends it as form text",
    ] {
        assert!(
            run.stderr.contains(expected),
            "{expected} in {}",
            run.stderr
        );
    }
    // `tags` is joined by commas, in brackets or not; `extra` is JSON.
    assert!(!run.stderr.contains("`tags`"), "{}", run.stderr);
    assert!(!run.stderr.contains("`extra`"), "{}", run.stderr);
}

#[test]
fn forms_and_parameter_styles_arrive_typed_or_are_refused() {
    if skip::generated_builds_skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("forms");
    let generated = Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(["gen", SPEC, "-o"])
        .arg(&out)
        .args(["--db", "sqlite"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    std::fs::copy(root().join("Cargo.lock"), out.join("Cargo.lock")).unwrap();
    // The generated client, which the test calls the service with.
    let client = dir.path().join("forms-client");
    let run = idemgen(&["gen", SPEC, "-o", client.to_str().unwrap(), "--client"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut manifest = std::fs::read_to_string(out.join("Cargo.toml")).unwrap();
    manifest.push_str(
        "\n[target.'cfg(all())'.dev-dependencies]\n\
         forms-client = { path = \"../forms-client\", default-features = false }\n\
         reqwest = { version = \"0.13\", default-features = false }\n",
    );
    std::fs::write(out.join("Cargo.toml"), manifest).unwrap();
    let fixture = root().join("tests/codegen_fixtures/forms");
    std::fs::copy(
        fixture.join("checkout.rs"),
        out.join("src/business/checkout.rs"),
    )
    .unwrap();
    std::fs::copy(
        fixture.join("pay_by_form.rs"),
        out.join("src/business/pay_by_form.rs"),
    )
    .unwrap();
    std::fs::copy(
        fixture.join("touch_thing.rs"),
        out.join("src/business/touch_thing.rs"),
    )
    .unwrap();
    std::fs::copy(fixture.join("sent.rs"), out.join("tests/sent.rs")).unwrap();
    let tested = build::cargo(&out)
        .args(["test", "--test", "sent"])
        .output()
        .unwrap();
    assert!(
        tested.status.success(),
        "cargo test in the generated project:\n{}\n{}",
        String::from_utf8_lossy(&tested.stdout),
        String::from_utf8_lossy(&tested.stderr)
    );
}
