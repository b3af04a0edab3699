//! The generated models compile, pass clippy and round-trip JSON: the
//! models of the example and of the fixture specs go into one small crate
//! (serde, serde_json and chrono only) whose tests below feed sample JSON through
//! the types. It builds in the shared `target/generated` directory
//! (`support/build.rs`) and runs when `IDEMGEN_TEST_GENERATED_BUILDS=1`
//! (`.ci/run` sets it).

use std::path::Path;

use idemgen_codegen::types::spec_types;
use idemgen_spec::Workspace;

use crate::support::skip;

use crate::support::build;

use build::root;

const MODELS: [(&str, &str); 7] = [
    ("payment", "examples/payment-callback/openapi.yaml"),
    ("constructs30", "tests/types/constructs-3.0.yaml"),
    ("constructs31", "tests/types/constructs-3.1.yaml"),
    ("unions", "tests/types/unions.yaml"),
    ("defaults", "tests/types/defaults-dates.yaml"),
    ("optional_headers", "tests/types/optional-headers.yaml"),
    ("builders", "tests/types/builders.yaml"),
];

const MANIFEST: &str = r#"[package]
name = "models-check"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
chrono = { version = "0.4", default-features = false, features = ["clock", "serde", "std"] }

[workspace]
"#;

/// Round trips through the generated types, run as the crate's tests.
const ROUND_TRIPS: &str = r##"
use serde_json::{json, Value};

/// Deserialises `value` as `T` and serialises it back.
fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(value: Value) -> (T, Value) {
    let typed: T = serde_json::from_value(value).expect("the sample deserialises");
    let back = serde_json::to_value(&typed).unwrap();
    (typed, back)
}

fn rejects<T: serde::de::DeserializeOwned>(value: Value) -> bool {
    serde_json::from_value::<T>(value).is_err()
}

#[test]
fn payment_callback() {
    use crate::payment::*;
    let sample = json!({"txn_id": "TXN-1", "order_no": "ORD-1", "amount": 1999, "date": "20240615"});
    let (body, back) = round_trip::<PayCallback>(sample.clone());
    assert_eq!(back, sample);
    assert_eq!(body.amount, 1999);
    assert!(rejects::<PayCallback>(json!({"txn_id": "TXN-1", "order_no": "ORD-1", "date": "20240615"})));
    assert!(rejects::<PayCallback>(json!({"txn_id": "TXN-1", "order_no": "ORD-1", "amount": "many", "date": "20240615"})));

    let order = json!({"order_no": "ORD-1", "amount": 5, "status": "unpaid", "txn_id": null});
    let (order, back) = round_trip::<Order>(order);
    assert_eq!(order.status, OrderStatus::Unpaid);
    assert_eq!(back, json!({"order_no": "ORD-1", "amount": 5, "status": "unpaid"}));
    assert!(rejects::<Order>(json!({"order_no": "ORD-1", "amount": 5, "status": "lost"})));

    let params: OnPayCallbackParams =
        serde_json::from_value(json!({"Idempotency-Key": "pay:20240615:x"})).unwrap();
    assert_eq!(params.idempotency_key, "pay:20240615:x");

    let result = PaymentResult {
        order_no: "ORD-1".into(),
        txn_id: "TXN-1".into(),
        amount: 1999,
        status: PaymentResultStatus::Paid,
        paid_at: "2024-06-15T10:00:00Z".parse().unwrap(),
    };
    let response = OnPayCallbackResponse::Ok(result.clone());
    assert_eq!(response.status(), 200);
    assert_eq!(response.content_type(), Some("application/json"));
    let bytes = response.into_body().unwrap();
    assert_eq!(serde_json::from_slice::<PaymentResult>(&bytes).unwrap(), result);
    let conflict = OnPayCallbackResponse::Conflict(Problem {
        r#type: None,
        title: Some("Conflict".into()),
        status: Some(409),
        detail: None,
    });
    assert_eq!(conflict.status(), 409);
    assert_eq!(conflict.content_type(), Some("application/problem+json"));
    assert_eq!(conflict.into_body().unwrap(), br#"{"title":"Conflict","status":409}"#);
}

#[test]
fn openapi_3_0() {
    use crate::constructs30::*;
    let pet = json!({
        "id": 7, "name": "Rex", "kind": "guinea-pig", "nickname": null,
        "age": 3, "weight": 1.5, "owner": {"name": "Ann", "address": {"zip": "1000"}},
        "tags": {"colour": "brown"}, "extra": [1, "two"]
    });
    let (typed, back) = round_trip::<Pet>(pet.clone());
    assert_eq!(typed.kind, PetKind::GuineaPig);
    assert_eq!(typed.nickname, None);
    assert_eq!(back, pet);
    assert!(rejects::<Owner>(json!({"name": "Ann", "unknown": 1})), "additionalProperties: false");
    assert!(rejects::<Pet>(json!({"id": 7, "name": "Rex", "kind": "cat"})), "required, nullable");
    assert!(rejects::<Pet>(json!({"id": 7, "name": "Rex", "kind": "cat", "nickname": null, "age": 2147483648_i64})), "int32");

    let dog = json!({"id": 1, "name": "Rex", "kind": "dog", "nickname": "R", "barks": true});
    assert!(matches!(round_trip::<AnyPet>(dog.clone()).0, AnyPet::Dog { barks: true, .. }));
    assert_eq!(round_trip::<AnyPet>(dog.clone()).1, dog);
    let cat = json!({"id": 2, "name": "Tom", "kind": "cat", "nickname": null, "indoor": true});
    assert!(matches!(round_trip::<AnyPet>(cat).0, AnyPet::Cat { indoor: Some(true), .. }));
    // The discriminator decides, not the members: a cat that barks is a cat.
    let odd = json!({"id": 3, "name": "Odd", "kind": "cat", "nickname": null, "barks": true});
    assert!(matches!(round_trip::<AnyPet>(odd).0, AnyPet::Cat { .. }));
    assert!(rejects::<AnyPet>(json!({"id": 4, "name": "Rex", "kind": "guinea-pig", "nickname": null})));
    assert_eq!(round_trip::<IdOrName>(json!(5)).0, IdOrName::Integer(5));
    assert_eq!(round_trip::<IdOrName>(json!("five")).0, IdOrName::String("five".into()));

    let wire = json!({"type": "t", "self": "s", "@id": "i", "2fa": true, "kebab-case": "k"});
    let (names, back) = round_trip::<WireNames>(wire.clone());
    assert_eq!(names.r#type.as_deref(), Some("t"));
    assert_eq!(names.field_2fa, Some(true));
    assert_eq!(back, wire);
    let camel = json!({"firstName": "Ann", "dateOfBirth": "1990-01-01"});
    assert_eq!(round_trip::<CamelCase>(camel.clone()).1, camel);
    let annotated = json!({"known": "k", "a": 1, "b": 2});
    let (typed, back) = round_trip::<Annotated>(annotated.clone());
    assert_eq!(typed.additional_properties.len(), 2);
    assert_eq!(back, annotated);
    let contact = json!({"firstName": "Ann", "company": "Acme", "avatar": null});
    let (typed, back) = round_trip::<Contact>(contact);
    assert_eq!(typed.company.as_deref(), Some("Acme"));
    assert_eq!(back, json!({"firstName": "Ann", "company": "Acme"}));
    let tree = json!({"value": "root", "children": [{"value": "leaf"}], "parent": {"value": "up"}});
    assert_eq!(round_trip::<TreeNode>(tree.clone()).1, tree);
    let ping = json!({"pong": {"ping": {"pong": {}}}});
    assert_eq!(round_trip::<Ping>(ping.clone()).1, ping);
    assert_eq!(round_trip::<Labels>(json!({"a": ["x"]})).1, json!({"a": ["x"]}));
    assert_eq!(round_trip::<MaybeColour>(json!("green")).0, MaybeColour::Green);

    // A string enum is written and read as the wire has it.
    assert_eq!(PetKind::GuineaPig.to_string(), "guinea-pig");
    assert_eq!("guinea-pig".parse::<PetKind>(), Ok(PetKind::GuineaPig));
    assert_eq!(
        "hamster".parse::<PetKind>(),
        Err("`hamster` is not a value of PetKind".to_string())
    );
    // Nothing required: a default, which sends nothing.
    assert_eq!(serde_json::to_value(WireNames::default()).unwrap(), json!({}));
    // Required fields and optional ones: a constructor of the required.
    let camel = CamelCase::new("Ann".into());
    assert_eq!(serde_json::to_value(&camel).unwrap(), json!({"firstName": "Ann"}));
    let cat = Cat::new(2, "Tom".into(), PetKind::Cat, None);
    assert_eq!(
        serde_json::to_value(&cat).unwrap(),
        json!({"id": 2, "name": "Tom", "kind": "cat", "nickname": null})
    );

    let params: GetPetParams =
        serde_json::from_value(json!({"petId": 4, "type": "cat", "X-Request-Id": "r-1"})).unwrap();
    assert_eq!((params.pet_id, params.r#type), (4, PetKind::Cat));
    assert_eq!(params.fields, None);

    let error = Error { code: 7, message: None };
    let range = GetPetResponse::ClientError { status: 404, body: error.clone() };
    assert_eq!(range.status(), 404);
    assert_eq!(range.into_body().unwrap(), br#"{"code":7}"#);
    assert_eq!(GetPetResponse::NotModified.status(), 304);
    assert_eq!(GetPetResponse::NotModified.content_type(), None);
    assert!(GetPetResponse::NotModified.into_body().unwrap().is_empty());
    let default = GetPetResponse::Default { status: 503, body: error };
    assert_eq!(default.status(), 503);
    let text = PostNotesResponse::Created(b"note".to_vec());
    assert_eq!(text.content_type(), Some("text/plain"));
    assert_eq!(text.into_body().unwrap(), b"note");
    assert_eq!(PostNotesResponse::Success { status: 202 }.status(), 202);
    let request: ReplacePetRequest =
        serde_json::from_value(json!({"name": "Rex", "tags": [{"label": "good"}]})).unwrap();
    assert_eq!(request.tags.unwrap()[0].label.as_deref(), Some("good"));
}

#[test]
fn openapi_3_1() {
    use crate::constructs31::*;
    let order = json!({
        "id": "o-1", "status": "in_progress", "note": null,
        "lines": [{"sku": "A", "quantity": 2}], "total": "12.50",
        "shipping": null, "kind": "order", "point": [1.0, 2.0], "meta": {"any": true}
    });
    let (typed, back) = round_trip::<Order>(order);
    assert_eq!(typed.status, Some(Status::InProgress));
    assert_eq!(typed.total, Some(OrderTotal::String("12.50".into())));
    assert_eq!(typed.kind, Some(OrderKind::Order));
    assert_eq!(back["lines"], json!([{"sku": "A", "quantity": 2}]));
    assert!(back.get("shipping").is_none());
    let null_status = json!({"id": "o-2", "status": null, "note": "n", "lines": []});
    assert_eq!(round_trip::<Order>(null_status).0.status, None);
    assert!(rejects::<Order>(json!({"id": "o-3", "status": "lost", "note": null, "lines": []})));
    assert!(rejects::<Order>(json!({"id": "o-3", "status": "open", "note": null, "lines": [], "kind": "other"})));
    assert!(rejects::<Order>(json!({"id": "o-4", "status": "open", "lines": []})), "note is required");
    let forest = json!([[[]], []]);
    assert_eq!(round_trip::<Forest>(forest.clone()).1, forest);
    let problem = CreateOrderResponse::Conflict(Problem { title: Some("dup".into()), status: Some(409) });
    assert_eq!(problem.status(), 409);
    // A response with several media types: the business code picks one
    // (a typed variant, not a string), and that is the Content-Type sent.
    let csv = ListOrdersResponse::Ok(ListOrdersOkBody::TextCsv(b"id\no-1\n".to_vec()));
    assert_eq!(csv.content_type(), Some("text/csv"));
    assert_eq!(csv.into_body().unwrap(), b"id\no-1\n");
    let listed = ListOrdersResponse::Ok(ListOrdersOkBody::ApplicationJson(Vec::new()));
    assert_eq!(listed.content_type(), Some("application/json"));
    assert_eq!(listed.into_body().unwrap(), b"[]");
    // A client reads the body back by the Content-Type it came with.
    assert_eq!(
        ListOrdersOkBody::from_wire(Some("Text/CSV; charset=utf-8"), b"id\n").unwrap(),
        ListOrdersOkBody::TextCsv(b"id\n".to_vec())
    );
    assert_eq!(
        ListOrdersOkBody::from_wire(Some("application/json"), b"[]").unwrap(),
        ListOrdersOkBody::ApplicationJson(Vec::new())
    );
    assert!(ListOrdersOkBody::from_wire(Some("text/html"), b"<p>").is_err());
    assert!(ListOrdersOkBody::from_wire(Some("application/json"), b"{").is_err());
}

#[test]
fn unions() {
    use crate::unions::*;
    // A discriminator without mapping: the schema's name is the tag.
    let circle = json!({"shapeType": "Circle", "radius": 2.0});
    let (shape, back) = round_trip::<Shape>(circle.clone());
    assert_eq!(shape, Shape::Circle(Circle { radius: 2.0 }));
    assert_eq!(back, circle);
    let square = json!({"shapeType": "Square"});
    assert_eq!(round_trip::<Shape>(square).0, Shape::Square(Square { side: None }));
    assert!(rejects::<Shape>(json!({"radius": 2.0})), "no tag, no guess");
    assert!(rejects::<Shape>(json!({"shapeType": "Hexagon"})));
    // A mapping, two names for one variant, the tag declared by the variants.
    let card = json!({"type": "card", "number": "4111"});
    let (payment, back) = round_trip::<Payment>(card.clone());
    assert_eq!(payment, Payment::Card { number: Some("4111".into()) });
    assert_eq!(back, card);
    assert!(matches!(round_trip::<Payment>(json!({"type": "scheme"})).0, Payment::Card { .. }));
    let transfer = json!({"type": "bank_transfer", "iban": "DE00"});
    assert_eq!(round_trip::<Payment>(transfer.clone()).1, transfer);
    // Inheritance: the base names the schemas that extend it.
    let truck = json!({"kind": "truck", "wheels": 6, "axles": 3});
    let (vehicle, back) = round_trip::<Vehicle>(truck.clone());
    assert!(matches!(vehicle, Vehicle::Truck { axles: 3, wheels: 6 }), "{vehicle:?}");
    assert_eq!(back, truck);
    let bike = json!({"kind": "Bike", "wheels": 2, "gears": 21});
    assert!(matches!(round_trip::<Vehicle>(bike.clone()).0, Vehicle::Bike { gears: Some(21), .. }));
    assert_eq!(round_trip::<Vehicle>(bike.clone()).1, bike);
    let cargo = json!({"kind": "CargoBike", "wheels": 3, "load": 80.5});
    assert!(matches!(round_trip::<Vehicle>(cargo).0, Vehicle::CargoBike { .. }));
    assert!(matches!(round_trip::<Vehicle>(json!({"kind": "Vehicle", "wheels": 4})).0, Vehicle::Vehicle { wheels: 4 }));
    assert!(rejects::<Vehicle>(json!({"kind": "Boat", "wheels": 0})), "no schema is named so");
    // An intermediate base: a Bike is a bike or a cargo bike.
    assert!(matches!(round_trip::<Bike>(bike.clone()).0, Bike::Bike { gears: Some(21), .. }));
    assert!(matches!(round_trip::<Bike>(json!({"kind": "CargoBike", "wheels": 3})).0, Bike::CargoBike { .. }));
    assert!(rejects::<Vehicle>(json!({"kind": "truck", "wheels": 6})), "a truck has axles");
    let fern: Plant = round_trip::<Plant>(json!({"genus": "Polypodium"})).0;
    assert_eq!(fern.genus, "Polypodium");
    // No discriminator: a Dog is a Dog although the Cat requires nothing.
    assert_eq!(round_trip::<Pet>(json!({"barks": true})).0, Pet::Dog(Dog { barks: true }));
    assert_eq!(round_trip::<Pet>(json!({"indoor": true})).0, Pet::Cat(Cat { indoor: Some(true) }));
    assert!(matches!(round_trip::<Contact>(json!({"phone": "1"})).0, Contact::Phone(_)));
    assert!(matches!(round_trip::<Contact>(json!({"email": "a@b"})).0, Contact::Email(_)));
    assert!(matches!(round_trip::<Event>(json!({"kind": "deleted"})).0, Event::Deleted(_)));
    assert!(matches!(round_trip::<Event>(json!({"kind": "created"})).0, Event::Created(_)));
    assert!(matches!(round_trip::<Strictness>(json!({"b": "x"})).0, Strictness::Loose(_)));
    assert!(matches!(round_trip::<Strictness>(json!({"a": "x"})).0, Strictness::Strict(_)));
    assert_eq!(round_trip::<Amount>(json!(5)).0, Amount::Integer(5));
    assert_eq!(round_trip::<Amount>(json!(5.5)).0, Amount::Number(5.5));
    // Two all-optional objects told apart by their own values of `type`,
    // which a round trip keeps (`ach_plaid` stays `ach_plaid`).
    let plaid = json!({"type": "ach_plaid", "account": "NL00"});
    let (method, back) = round_trip::<PaymentMethod>(plaid.clone());
    assert!(matches!(method, PaymentMethod::AchDetails(_)), "{method:?}");
    assert_eq!(back, plaid);
    let card = json!({"type": "card", "number": "4111"});
    assert!(matches!(round_trip::<PaymentMethod>(card).0, PaymentMethod::CardDetails(_)));
    assert!(rejects::<PaymentMethod>(json!({"type": "bitcoin"})), "no variant allows it");
    // No `type`: more than one variant could be it, so it is kept whole.
    let untyped = json!({"account": "NL00"});
    let (method, back) = round_trip::<PaymentMethod>(untyped.clone());
    assert_eq!(method, PaymentMethod::WithoutType(untyped.clone()), "no guess");
    assert_eq!(back, untyped);
    // A variant built without its `type` is written without it, and read
    // back whole rather than refused.
    let wallet = PaymentMethod::WalletDetails(WalletDetails { r#type: None, token: Some("t".into()) });
    let written = serde_json::to_value(&wallet).unwrap();
    assert_eq!(written, json!({"token": "t"}));
    assert_eq!(round_trip::<PaymentMethod>(written.clone()).0, PaymentMethod::WithoutType(written));
    assert!(matches!(round_trip::<PaymentMethod>(json!({"type": "paywallet"})).0, PaymentMethod::WalletDetails(_)));
    assert!(rejects::<PaymentMethod>(json!({"type": 1})));
    assert!(rejects::<PaymentMethod>(json!("ach")));
    // The variant `type` names is the only one tried.
    assert!(rejects::<PaymentMethod>(json!({"type": "ach", "account": 5})));
    // A property named with a brace and a quote chooses as any other.
    assert!(matches!(round_trip::<Oddity>(json!({"{k\"ind}": "right"})).0, Oddity::Right(_)));
    let refused = serde_json::from_value::<Oddity>(json!({"{k\"ind}": "up"})).unwrap_err();
    assert!(refused.to_string().contains("`{k\"ind}` is `up`"), "{refused}");
    // Which of two all-optional objects a value is cannot be told: a value.
    let critter: Critter = round_trip::<Critter>(json!({"wheel": true})).0;
    assert_eq!(critter, json!({"wheel": true}));
}

#[test]
fn defaults_and_dates() {
    use crate::defaults::*;
    let payment: Payment = serde_json::from_value(json!({"amount": 5})).unwrap();
    assert_eq!(payment, Payment::new(5), "an absent member is its default");
    assert_eq!(payment.currency, Currency::Eur);
    assert!(payment.capture);
    assert_eq!(payment.retries, 3);
    assert_eq!(payment.fee_rate, 0.25);
    assert_eq!(payment.channel, PaymentChannel::Pos);
    assert_eq!(payment.reference, "none");
    assert_eq!(payment.note.as_deref(), Some("n/a"));
    assert!(payment.tags.is_empty());
    assert_eq!(payment.metadata, None, "an object default is only documented");
    // A member sent is the value sent, `null` included where it may be.
    let sent: Payment = serde_json::from_value(json!({"amount": 5, "capture": false, "note": null})).unwrap();
    assert!(!sent.capture);
    assert_eq!(sent.note, None);
    assert_eq!(Settings::default(), serde_json::from_value::<Settings>(json!({})).unwrap());
    assert_eq!(Settings::default().page_size, 20);
    assert_eq!(Settings::default().locale, "en-GB");
    // RFC 3339 in, the same instant out (in UTC); a date as `YYYY-MM-DD`.
    let dated: Payment = serde_json::from_value(
        json!({"amount": 5, "due": "2024-06-15", "paid_at": "2024-06-15T14:00:00+02:00"}),
    )
    .unwrap();
    let back = serde_json::to_value(&dated).unwrap();
    assert_eq!(back["due"], "2024-06-15");
    assert_eq!(back["paid_at"], "2024-06-15T12:00:00Z");
    for wrong in [
        json!({"amount": 5, "paid_at": "2024-06-15"}),
        json!({"amount": 5, "paid_at": "2024-13-01T00:00:00Z"}),
        json!({"amount": 5, "due": "15/06/2024"}),
    ] {
        assert!(rejects::<Payment>(wrong.clone()), "{wrong} is refused");
    }
}

#[test]
fn an_optional_header_is_sent_when_set() {
    use crate::optional_headers::*;
    let set = CreateSessionResponse::Created {
        body: CreateSessionCreatedBody { id: None },
        idempotency_key: Some("k-1".into()),
    };
    assert_eq!(set.headers().unwrap(), [("Idempotency-Key", "k-1".to_string())]);
    let unset = CreateSessionResponse::UnprocessableEntity { idempotency_key: None };
    assert!(unset.headers().unwrap().is_empty());
    assert!(CreateSessionResponse::InternalServerError.headers().unwrap().is_empty());
    let alone = CloseSessionResponse::NoContent { idempotency_key: Some("k-2".into()) };
    assert_eq!(alone.headers().unwrap(), [("Idempotency-Key", "k-2".to_string())]);
    assert!(GetSessionResponse::NotFound.headers().unwrap().is_empty());
}

#[test]
fn a_builder_builds_only_with_every_required_field() {
    use crate::builders::*;
    use std::collections::BTreeMap;
    let built = PaymentRequest::builder()
        .amount(Amount { currency: "EUR".into(), value: 1999 })
        .merchant_account("Shop".into())
        .reference("ORD-1".into())
        .return_url("https://shop.example/back".into())
        .r#type(PaymentRequestType::Card)
        .build_(3)
        .to_account("NL00".into())
        .shopper_ip(None)
        .country_code("NL".into())
        .shopper_email("ann@example.com".into())
        .additional_properties(BTreeMap::from([("channel".to_string(), "web".to_string())]))
        .build()
        .expect("every required field is set");
    assert_eq!(built.capture_delay_hours, 0, "an unset field with a default is its default");
    assert_eq!(built.metadata, None, "an unset optional field is absent");
    assert_eq!(built.extra, Value::Null);
    let (read, back) = round_trip::<PaymentRequest>(serde_json::to_value(&built).unwrap());
    assert_eq!(read, built);
    assert_eq!(back["shopperIP"], Value::Null, "a nullable required field is sent as null");
    assert_eq!(back["channel"], "web");
    assert_eq!(back["build"], 3);

    let missing = PaymentRequest::builder()
        .reference("ORD-1".into())
        .shopper_ip(Some("192.0.2.1".into()))
        .country_code("NL".into())
        .build()
        .unwrap_err();
    assert_eq!(missing.type_name, "PaymentRequest");
    assert_eq!(
        missing.fields,
        ["amount", "merchant_account", "return_url", "type", "build_", "to_account"]
    );
    assert_eq!(
        missing.to_string(),
        "`PaymentRequest` lacks required fields: amount, merchant_account, return_url, type, build_, to_account"
    );
}
"##;

fn write_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), MANIFEST).unwrap();
    // The workspace's lock file pins serde and serde_json: no resolution.
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let mut lib = String::from("//! Generated models, checked.\n\n");
    for (module, spec) in MODELS {
        let workspace = Workspace::load(&root().join(spec)).unwrap();
        let types = spec_types(&workspace).unwrap();
        std::fs::write(dir.join(format!("src/{module}.rs")), types.models()).unwrap();
        lib.push_str(&format!("pub mod {module};\n"));
    }
    lib.push_str("\n#[cfg(test)]\nmod round_trips;\n");
    std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
    std::fs::write(dir.join("src/round_trips.rs"), ROUND_TRIPS).unwrap();
}

fn cargo(dir: &Path, args: &[&str]) -> String {
    let output = build::cargo(dir).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "cargo {}:\n{}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn models_compile_pass_clippy_and_round_trip_json() {
    if skip::generated_builds_skipped() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("models-check");
    write_crate(&project);
    cargo(
        &project,
        &["clippy", "--all-targets", "--quiet", "--", "-D", "warnings"],
    );
    let tests = cargo(&project, &["test", "--quiet"]);
    assert!(tests.contains("7 passed"), "the round trips ran:\n{tests}");
}
