//! The type generator over real specs (`IDEMGEN_CORPUS`, else the corpus
//! beside the project, else the subset in `tests/corpus`): every OpenAPI 3.x document
//! yields a models module that parses as Rust, without a panic.
//! `IDEMGEN_TYPES_CORPUS_BUILD=1` also compiles the models of the largest
//! specs (Stripe, GitHub, …) in one crate: about 11 minutes and 9 GB of
//! memory for rustc on two cores.

use std::path::{Path, PathBuf};

use idemgen_codegen::types::spec_types;
use idemgen_spec::Workspace;

use crate::support::corpus::full_corpus_dir;
use crate::support::skip;

use crate::support::build;

use build::root;

/// `IDEMGEN_CORPUS`, else the full corpus beside the project, else the
/// small subset committed in `tests/corpus`.
fn corpus() -> PathBuf {
    full_corpus_dir().unwrap_or_else(|| root().join("tests/corpus"))
}

fn is_full(dir: &Path) -> bool {
    dir.join("specs/stripe-spec3.yaml").is_file()
}

/// The corpus files that are OpenAPI 3 documents, from its manifest.
fn openapi_3_specs(dir: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let file = header.iter().position(|h| *h == "file").unwrap();
    let version = header.iter().position(|h| *h == "openapi_version").unwrap();
    lines
        .map(|line| line.split('\t').collect::<Vec<_>>())
        .filter(|fields| fields[version].starts_with("openapi 3."))
        .map(|fields| dir.join("specs").join(fields[file]))
        .collect()
}

#[test]
fn every_openapi_3_spec_yields_parsable_models() {
    let dir = corpus();
    let mut generated = 0;
    for path in openapi_3_specs(&dir) {
        // 3.2 documents are refused by the loader, with a message.
        let Ok(workspace) = Workspace::load(&path) else {
            continue;
        };
        let started = std::time::Instant::now();
        let result = std::panic::catch_unwind(|| spec_types(&workspace));
        let types = match result {
            Ok(Ok(types)) => types,
            Ok(Err(error)) => panic!("{}: {error}", path.display()),
            Err(_) => panic!("{}: the type generator panicked", path.display()),
        };
        if let Err(error) = syn::parse_file(types.models()) {
            panic!("{}: the models do not parse: {error}", path.display());
        }
        eprintln!(
            "{}: {} KiB of models, {} fallbacks ({} ambiguous unions), {} union variants, {:?}",
            path.display(),
            types.models().len() / 1024,
            types.fallbacks().len(),
            types.ambiguous_unions().len(),
            types.union_samples().len(),
            started.elapsed()
        );
        generated += 1;
    }
    let expected = if is_full(&dir) { 60 } else { 3 };
    assert!(
        generated >= expected,
        "only {generated} specs generated models"
    );
}

/// Every `oneOf`/`anyOf` the generator types as an enum, in every
/// OpenAPI 3 spec of the corpus: a value built for variant *k* (its
/// required members, consts, the discriminator's value) is read as
/// variant *k*, as the type model says serde's derives read it. In
/// process, so it covers every spec on every run;
/// `corpus_union_variants_read_as_themselves` compiles the same samples.
#[test]
fn every_corpus_union_reads_a_value_built_for_variant_k_as_variant_k() {
    let dir = corpus();
    let (mut specs, mut unions, mut variants) = (0, std::collections::BTreeSet::new(), 0);
    let mut wrong = Vec::new();
    for path in openapi_3_specs(&dir) {
        let Ok(workspace) = Workspace::load(&path) else {
            continue;
        };
        let types = spec_types(&workspace).unwrap();
        specs += 1;
        for sample in types.union_samples() {
            variants += 1;
            unions.insert((path.clone(), sample.union.clone()));
            if sample.reads_as.as_deref() != Some(sample.variant.as_str()) {
                wrong.push(format!(
                    "{}: {} built for {} is read as {:?}",
                    path.display(),
                    sample.value,
                    sample.pattern,
                    sample.reads_as
                ));
            }
        }
    }
    eprintln!(
        "{}: {variants} variants of {} unions in {specs} specs",
        dir.display(),
        unions.len()
    );
    assert!(
        wrong.is_empty(),
        "{} of {variants}:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    let expected = if is_full(&dir) { 1000 } else { 1 };
    assert!(variants >= expected, "only {variants} union variants");
}

/// The largest specs' models, compiled in one crate.
#[test]
fn largest_specs_models_compile() {
    if std::env::var_os("IDEMGEN_TYPES_CORPUS_BUILD").is_none() {
        skip::skipped("set IDEMGEN_TYPES_CORPUS_BUILD=1 to compile the largest specs' models");
        return;
    }
    let dir = corpus();
    if !is_full(&dir) {
        skip::skipped("the full corpus is not at ../shared/corpus (set IDEMGEN_CORPUS)");
        return;
    }
    let specs = [
        ("stripe", "stripe-spec3.yaml"),
        ("github", "github-api.github.com.json"),
        ("openai", "openai-openapi.yaml"),
        ("adyen_checkout", "adyen-CheckoutService-v71.yaml"),
        ("twilio", "twilio-twilio_api_v2010.yaml"),
        (
            "digitalocean",
            "digitalocean-multifile/specification/DigitalOcean-public.v2.yaml",
        ),
    ];
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("corpus-models");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"corpus-models\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\n\
         serde_json = \"1\"\nchrono = { version = \"0.4\", default-features = false, \
         features = [\"clock\", \"serde\", \"std\"] }\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::copy(root().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let mut lib = String::from("//! Models of the largest corpus specs.\n\n");
    for (module, file) in specs {
        let workspace = Workspace::load(&dir.join("specs").join(file)).unwrap();
        let types = spec_types(&workspace).unwrap();
        std::fs::write(project.join(format!("src/{module}.rs")), types.models()).unwrap();
        lib.push_str(&format!("pub mod {module};\n"));
    }
    std::fs::write(project.join("src/lib.rs"), lib).unwrap();
    let output = build::cargo(&project)
        .args(["check", "--quiet"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo check of the corpus models:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every union the generator emits for the corpus's specs reads a value
/// built for its variant *k* as variant *k*: the models and one check
/// per variant are compiled and run. `IDEMGEN_UNIONS_CORPUS_BUILD=1` runs
/// it on every OpenAPI 3 spec (as long as `IDEMGEN_TYPES_CORPUS_BUILD`);
/// a value other than `1` keeps the specs whose file name contains it
/// (`=adyen-Checkout`).
#[test]
fn corpus_union_variants_read_as_themselves() {
    let Some(filter) = std::env::var_os("IDEMGEN_UNIONS_CORPUS_BUILD") else {
        skip::skipped(
            "set IDEMGEN_UNIONS_CORPUS_BUILD=1 (or a file name part) to compile the corpus's unions",
        );
        return;
    };
    let filter = filter.to_string_lossy().into_owned();
    let dir = corpus();
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("corpus-unions");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"corpus-unions\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\n\
         serde_json = \"1\"\nchrono = { version = \"0.4\", default-features = false, \
         features = [\"clock\", \"serde\", \"std\"] }\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::copy(root().join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let mut lib = String::from("//! Models of corpus specs, and their unions' samples.\n\n");
    let mut variants = 0;
    for path in openapi_3_specs(&dir) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if filter != "1" && !file.contains(&filter) {
            continue;
        }
        let Ok(workspace) = Workspace::load(&path) else {
            continue;
        };
        let types = spec_types(&workspace).unwrap();
        if types.union_samples().is_empty() {
            continue;
        }
        let module = format!("spec_{}", idemgen_codegen::names::snake_case(&file));
        let mut source = types.models().to_string();
        source.push_str("\n#[cfg(test)]\nmod union_samples {\n    use super::*;\n\n");
        source.push_str("    #[test]\n    fn each_variant_reads_as_itself() {\n");
        for sample in types.union_samples() {
            let json = serde_json::to_string(&sample.value).unwrap();
            source.push_str(&format!(
                "        let value: {union} = serde_json::from_str({json:?}).expect({what:?});\n        \
                 assert!(matches!(value, {pattern}), \"{{value:?}} is not {{}}\", {what:?});\n",
                union = sample.union,
                pattern = sample.pattern,
                what = format!("{} in {file}", sample.pattern),
            ));
            variants += 1;
        }
        source.push_str("    }\n}\n");
        std::fs::write(project.join(format!("src/{module}.rs")), source).unwrap();
        lib.push_str(&format!("#[allow(dead_code)]\nmod {module};\n"));
    }
    std::fs::write(project.join("src/lib.rs"), lib).unwrap();
    let output = build::cargo(&project)
        .args(["test", "--quiet"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the corpus's unions:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!("{variants} union variants read as themselves");
    assert!(variants > 0, "no union matched {filter}");
}

/// Adyen's `paymentMethod` is a `oneOf` of 58 objects with no
/// discriminator, most of whose members are optional: each allows its own
/// values of `type`. Values as Adyen's documentation writes them are read
/// as the variant a person would pick, by `type`; anything else is
/// refused rather than read as the nearest variant.
#[test]
fn adyen_payment_methods_are_read_by_their_type() {
    let dir = corpus();
    let spec = dir.join("specs/adyen-CheckoutService-v71.yaml");
    if !spec.is_file() {
        skip::skipped("adyen-CheckoutService-v71.yaml is not in the corpus (set IDEMGEN_CORPUS)");
        return;
    }
    let types = spec_types(&Workspace::load(&spec).unwrap()).unwrap();
    assert!(
        !types
            .models()
            .contains("pub type PaymentRequestPaymentMethod = serde_json::Value;"),
        "paymentMethod is typed"
    );
    let read =
        |value: serde_json::Value| types.union_variant_of("PaymentRequestPaymentMethod", &value);
    let card = serde_json::json!({
        "type": "scheme",
        "encryptedCardNumber": "test_4111111111111111",
        "encryptedExpiryMonth": "test_03",
        "encryptedExpiryYear": "test_2030",
        "encryptedSecurityCode": "test_737"
    });
    assert_eq!(read(card).as_deref(), Some("CardDetails"));
    let ideal = serde_json::json!({"type": "ideal", "issuer": "1121"});
    assert_eq!(read(ideal).as_deref(), Some("IdealDetails"));
    let sepa = serde_json::json!({
        "type": "sepadirectdebit",
        "ownerName": "A. Schneider",
        "iban": "DE87123456781234567890"
    });
    assert_eq!(read(sepa).as_deref(), Some("SepaDirectDebitDetails"));
    let klarna = serde_json::json!({"type": "klarna_account"});
    assert_eq!(read(klarna).as_deref(), Some("KlarnaDetails"));
    let apple = serde_json::json!({"type": "applepay", "applePayToken": "VNRWtuNlNEWkRCSm1xWndjMDFFbktkQU"});
    assert_eq!(read(apple).as_deref(), Some("ApplePayDetails"));
    // Apple Pay without its token is no Apple Pay, and no other method.
    assert_eq!(read(serde_json::json!({"type": "applepay"})), None);
    assert_eq!(read(serde_json::json!({"type": "bitcoin"})), None);
    // Without `type` several methods could be it: kept whole, not guessed.
    assert_eq!(
        read(serde_json::json!({"encryptedCardNumber": "test_4111"})).as_deref(),
        Some("WithoutType")
    );
}
