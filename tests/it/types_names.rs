//! Type names depend on the schema, not on the order types are met: a
//! type keeps its name when an operation or a schema is added before it,
//! and over real specs no two types share a name and none is too long.

use std::collections::BTreeSet;
use std::path::Path;

use idemgen_codegen::types::spec_types;
use idemgen_spec::Workspace;

use crate::support::corpus::full_corpus_dir;
use crate::support::skip;

/// The longest type name the generator gives (`MAX_IDENTIFIER`).
const MAX_TYPE_NAME: usize = 60;

/// Every type the models module declares, in its order.
fn type_names(text: &str) -> Vec<String> {
    let workspace = Workspace::from_text(
        Path::new("openapi.yaml"),
        "openapi.yaml".into(),
        text.into(),
    )
    .expect("the spec loads");
    let types = spec_types(&workspace).expect("the models generate");
    declared(types.models())
}

fn declared(models: &str) -> Vec<String> {
    let file = syn::parse_file(models).expect("the models parse");
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Struct(item) => Some(item.ident.to_string()),
            syn::Item::Enum(item) => Some(item.ident.to_string()),
            syn::Item::Type(item) => Some(item.ident.to_string()),
            _ => None,
        })
        .collect()
}

const BEFORE: &str = r##"
openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets:
    post:
      operationId: createPetWithEveryDetailTheShelterRecordsAboutTheAnimalAndItsKeeper
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                name: {type: string}
                vaccinationRecordOfTheAnimalAsTheVeterinarianWroteIt:
                  type: object
                  properties:
                    vaccine: {type: string}
                tags:
                  type: array
                  items:
                    type: object
                    properties:
                      label: {type: string}
      responses:
        "201":
          description: created
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Pet"}
  /pets/{id}:
    get:
      operationId: getPet
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses:
        "200":
          description: the pet
          content:
            application/json:
              schema:
                type: object
                properties:
                  pet: {$ref: "#/components/schemas/Pet"}
                  status: {type: string, enum: [kept, adopted]}
components:
  schemas:
    Pet:
      type: object
      properties:
        name: {type: string}
        owner:
          type: object
          properties:
            name: {type: string}
        Owner:
          type: object
          properties:
            email: {type: string}
    OwnerPet:
      type: object
      properties:
        since: {type: string}
    PaymentMethodCardWallet:
      type: object
      properties:
        paymentMethodCardWalletBillingAddressDetails:
          type: object
          properties:
            city: {type: string}
"##;

/// `BEFORE` with an operation added before the others, a component whose
/// key sorts first, and one whose inline member would be called
/// `OwnerPet`, a name a component already has.
fn after() -> String {
    BEFORE
        .replacen(
            "paths:\n",
            r##"paths:
  /adoptions:
    post:
      operationId: createPet
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                name: {type: string}
                owner:
                  type: object
                  properties:
                    name: {type: string}
      responses:
        "201": {description: adopted}
"##,
            1,
        )
        .replacen(
            "  schemas:\n",
            r##"  schemas:
    Aardvark:
      type: object
      properties:
        pet: {$ref: "#/components/schemas/Pet"}
    Owner:
      type: object
      properties:
        pet:
          type: object
          properties:
            since: {type: string}
"##,
            1,
        )
}

#[test]
fn every_type_keeps_its_name_when_types_are_added_before_it() {
    let before = type_names(BEFORE);
    let after: BTreeSet<String> = type_names(&after()).into_iter().collect();
    let lost: Vec<&String> = before
        .iter()
        .filter(|name| !after.contains(*name))
        .collect();
    assert!(
        lost.is_empty(),
        "renamed: {lost:?}\nbefore: {before:?}\nafter: {after:?}"
    );
    // What was added got names of its own.
    for added in ["Aardvark", "Owner", "CreatePetRequest", "CreatePetResponse"] {
        assert!(after.contains(added), "{added} in {after:?}");
    }
    assert!(after.len() > before.len() + 4, "{after:?}");
}

#[test]
fn a_name_two_schemas_would_share_goes_by_their_place() {
    let names = type_names(BEFORE);
    // `Pet.owner` and `Pet.Owner` are both `PetOwner` by their words: neither
    // has the better claim, so each is told by its place, not its turn.
    let owners: Vec<&String> = names
        .iter()
        .filter(|name| name.starts_with("PetOwner"))
        .collect();
    assert_eq!(owners.len(), 2, "{names:?}");
    assert!(!names.contains(&"PetOwner".to_string()), "{names:?}");
    assert!(
        !names.iter().any(|name| name == "PetOwner2"),
        "no running number: {names:?}"
    );
    // A component keeps its own name against an inline schema's words.
    let after = type_names(&after());
    assert!(after.contains(&"OwnerPet".to_string()), "{after:?}");
}

#[test]
fn a_long_name_is_shortened_by_meaning_and_only_then_hashed() {
    let names = type_names(BEFORE);
    for name in &names {
        assert!(name.len() <= MAX_TYPE_NAME, "{name} is {} long", name.len());
    }
    // The parent's name said again in its member's goes first.
    assert!(
        names.contains(&"PaymentMethodCardWalletBillingAddressDetails".to_string()),
        "{names:?}"
    );
    // Too long without its words: its first and last words and a hash of
    // its place, which no other type's order changes.
    let items: Vec<&String> = names
        .iter()
        .filter(|name| name.starts_with("CreatePet") && name.contains("TagsItem"))
        .collect();
    assert_eq!(items.len(), 1, "{names:?}");
    assert!(
        items[0].ends_with(|c: char| c.is_ascii_digit()),
        "{items:?}"
    );
}

/// The corpus's payment specs: distinct names, none past the bound.
#[test]
fn corpus_type_names_are_distinct_and_bounded() {
    let Some(corpus) = full_corpus_dir() else {
        skip::skipped("the full corpus is not at ../shared/corpus (set IDEMGEN_CORPUS)");
        return;
    };
    for spec in [
        "stripe-spec3.yaml",
        "adyen-CheckoutService-v71.yaml",
        "paypal-checkout_orders_v2.json",
        "paypal-payments_payment_v2.json",
    ] {
        let path = corpus.join("specs").join(spec);
        if !path.is_file() {
            skip::skipped(&format!("{spec} is not in the corpus"));
            continue;
        }
        let workspace = Workspace::load(&path).expect("the spec loads");
        let types = spec_types(&workspace).expect("the models generate");
        let names = declared(types.models());
        let mut seen = BTreeSet::new();
        for name in &names {
            assert!(seen.insert(name), "{spec}: {name} declared twice");
            assert!(
                name.len() <= MAX_TYPE_NAME,
                "{spec}: {name} is {} long",
                name.len()
            );
        }
        assert!(names.len() > 10, "{spec}: only {} types", names.len());
    }
}
