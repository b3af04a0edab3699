//! Real specs: every OpenAPI 3.0/3.1/3.2 document loads and lints, the
//! rest are refused with a message, and JSON/YAML twins agree. The corpus
//! is `IDEMGEN_CORPUS`, else the 92-file corpus beside the project when it
//! is there, else the small licensed subset committed in `tests/corpus`.

use crate::support::corpus::full_corpus_dir;
use crate::support::root;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;

fn corpus() -> PathBuf {
    full_corpus_dir().unwrap_or_else(|| root().join("tests/corpus"))
}

/// Tests that need files only the full corpus has.
fn full_corpus() -> Option<PathBuf> {
    let dir = corpus();
    if dir.join("specs/stripe-spec3.yaml").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: the full corpus is not at ../shared/corpus (set IDEMGEN_CORPUS); the committed subset is tested"
        );
        None
    }
}

struct Entry {
    file: String,
    version: String,
    operations: usize,
    /// Writes that accept an idempotency key, counted by the corpus's
    /// maintainers from the vendors' documentation.
    key_writes: usize,
    notes: String,
}

fn manifest(dir: &Path) -> Vec<Entry> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (file, version, operations, key_writes, notes) = (
        column("file"),
        column("openapi_version"),
        column("operations"),
        column("idem_key_write_ops"),
        column("notes"),
    );
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            Entry {
                file: fields[file].to_string(),
                version: fields[version].to_string(),
                operations: fields[operations].parse().unwrap_or(0),
                key_writes: fields[key_writes].parse().unwrap_or(0),
                notes: fields.get(notes).unwrap_or(&"").to_string(),
            }
        })
        .collect()
}

/// Keys the manifest's `idem_key_write_ops` does not count but that are
/// keys by their own description.
fn extra_keys(file: &str) -> usize {
    match file {
        // `request_id` on POST /v1/batches: "Client-supplied idempotency
        // key. Retries with the same value return the existing job".
        "digitalocean-multifile/specification/DigitalOcean-public.v2.yaml" => 1,
        // Keys nested in the body, which the manifest counts only at the
        // top level: `request.idempotency_key` of the multipart uploads
        // (CreateCatalogImage, UpdateCatalogImage, CreateDisputeEvidenceFile,
        // CreateInvoiceAttachment) and each entry's `idempotency_key` in the
        // five BulkUpsert…CustomAttributes, BulkCreateTeamMembers and
        // BulkUpdateVendors.
        "square-api.json" => 11,
        _ => 0,
    }
}

/// Findings without positions, which legitimately differ between twins.
fn findings(path: &Path) -> BTreeSet<(String, String, Option<String>, String)> {
    let workspace = Workspace::load(path)
        .unwrap_or_else(|error| panic!("{}: {}", path.display(), error.message));
    lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .map(|d| (d.rule.to_string(), d.pointer, d.operation, d.message))
        .collect()
}

#[test]
fn every_openapi_3_document_loads_and_lints() {
    let dir = corpus();
    let specs = dir.join("specs");
    let mut linted = 0;
    let mut key_mismatches = Vec::new();
    for entry in manifest(&dir) {
        let path = specs.join(&entry.file);
        let supported = ["openapi 3.0", "openapi 3.1", "openapi 3.2"]
            .iter()
            .any(|version| entry.version.starts_with(version));
        let loaded = Workspace::load(&path);
        if !supported {
            let error = loaded
                .err()
                .unwrap_or_else(|| panic!("{} ({}) should be refused", entry.file, entry.version));
            let kind = entry.version.split(' ').next().unwrap();
            let named = match kind {
                "swagger" => "Swagger 2.0",
                _ => "AsyncAPI",
            };
            assert!(
                error.message.contains(named),
                "{}: {}",
                entry.file,
                error.message
            );
            continue;
        }
        let workspace = loaded.unwrap_or_else(|error| {
            panic!("{}: {} at {:?}", entry.file, error.message, error.location)
        });
        let result = lint(&workspace, &LintOptions::default());
        // Vendor keys are recognised, ordinary request ids are not: the
        // operations reported as accepting a key without a contract are the
        // writes the manifest counts as taking one.
        let keyed: BTreeSet<&Option<String>> = result
            .diagnostics
            .iter()
            .filter(|d| d.rule == "undeclared-key-header")
            .map(|d| &d.operation)
            .collect();
        let expected = entry.key_writes + extra_keys(&entry.file);
        if keyed.len() != expected {
            key_mismatches.push(format!(
                "{}: {} operations with a recognised key, expected {expected}",
                entry.file,
                keyed.len()
            ));
        }
        // The manifest counts the eight HTTP methods under `paths`; we add
        // 3.1 webhooks, so we see at least as many.
        assert!(
            result.operations >= entry.operations,
            "{}: {} operations, manifest says {}",
            entry.file,
            result.operations,
            entry.operations
        );
        linted += 1;
    }
    let expected = if full_corpus().is_some() { 81 } else { 5 };
    assert!(linted >= expected, "only {linted} documents linted");
    assert!(key_mismatches.is_empty(), "{}", key_mismatches.join("\n"));
}

#[test]
fn json_and_yaml_twins_give_the_same_findings() {
    let Some(dir) = full_corpus() else { return };
    let specs = dir.join("specs");
    let entries = manifest(&dir);
    let mut pairs = 0;
    for entry in &entries {
        let Some(stem) = entry.file.strip_suffix(".json") else {
            continue;
        };
        let twin = format!("{stem}.yaml");
        let declared = entry.notes.contains("twin");
        if !entries.iter().any(|e| e.file == twin)
            || !(declared || entry.file.starts_with("oai-v3"))
        {
            continue;
        }
        assert_eq!(
            findings(&specs.join(&entry.file)),
            findings(&specs.join(&twin)),
            "{} vs {twin}",
            entry.file
        );
        pairs += 1;
    }
    assert!(pairs >= 4, "only {pairs} twins compared");
}

#[test]
fn multi_file_specs_load_from_their_root() {
    let Some(dir) = full_corpus() else { return };
    let specs = dir.join("specs");
    for (root, operations) in [
        (
            "digitalocean-multifile/specification/DigitalOcean-public.v2.yaml",
            659,
        ),
        ("lob-multifile/lob-api-public.yml", 105),
        ("redocly-starter/openapi/openapi.yaml", 13),
    ] {
        let workspace =
            Workspace::load(&specs.join(root)).unwrap_or_else(|e| panic!("{root}: {}", e.message));
        assert!(workspace.files.len() > 1, "{root} references other files");
        let result = lint(&workspace, &LintOptions::default());
        assert_eq!(result.operations, operations, "{root}");
        assert!(
            !result.diagnostics.iter().any(|d| d.rule == "ref-unresolved"
                && d.severity == idemgen_diagnostics::Severity::Error),
            "{root}: every relative $ref resolves"
        );
    }
}

#[test]
fn the_cli_exits_0_or_1_on_openapi_and_2_on_the_rest() {
    let specs = corpus().join("specs");
    for (file, expected) in [
        ("stripe-spec3.yaml", [0, 1]),
        ("oai-v2.0-petstore.json", [2, 2]),
        ("slack-slack_events_api_async_v1.json", [2, 2]),
        ("oai-3.2test-mega.yaml", [0, 1]),
        ("oai-3.2test-path-item-object-example.yaml", [0, 1]),
    ] {
        if !specs.join(file).is_file() {
            continue; // only in the full corpus
        }
        let output = Command::new(env!("CARGO_BIN_EXE_idemgen"))
            .args(["lint", "--format", "json"])
            .arg(specs.join(file))
            .output()
            .unwrap();
        let code = output.status.code().unwrap();
        assert!(expected.contains(&code), "{file}: exit {code}");
        if code == 2 {
            assert!(!output.stderr.is_empty(), "{file}: says why");
        }
    }
}

/// Where the API already has a key of its own kind, the fix for a write
/// that takes none does not add an `Idempotency-Key` header beside it: on
/// PayPal's Checkout Orders v1, `orders.pay` takes `PayPal-Request-Id`, so
/// `orders.create` is reported with that key named and no fix; on Square
/// every key is an `idempotency_key` body field. Stripe declares no key
/// anywhere, so its fixes still add the header.
#[test]
fn the_fix_adds_no_second_key_mechanism() {
    let reported = |file: &str, operation: &str| {
        let workspace = Workspace::load(&corpus().join("specs").join(file)).unwrap();
        lint(&workspace, &LintOptions::default())
            .diagnostics
            .into_iter()
            .find(|d| d.rule == "missing-idempotency" && d.operation.as_deref() == Some(operation))
            .unwrap_or_else(|| panic!("{file}: {operation} is reported"))
    };
    let create = reported("paypal-checkout_orders_v1.json", "orders.create");
    assert!(create.fix.is_none(), "{:?}", create.fix);
    assert!(
        create
            .help
            .as_deref()
            .is_some_and(|help| help.contains("`PayPal-Request-Id`")),
        "{:?}",
        create.help
    );
    let Some(dir) = full_corpus() else { return };
    let square = Workspace::load(&dir.join("specs/square-api.json")).unwrap();
    let findings: Vec<_> = lint(&square, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.rule == "missing-idempotency")
        .collect();
    assert!(findings.len() >= 10, "{}", findings.len());
    for finding in &findings {
        assert!(finding.fix.is_none(), "{:?}", finding.operation);
        assert!(
            finding
                .help
                .as_deref()
                .is_some_and(|help| help.contains("`idempotency_key`")),
            "{:?}",
            finding.help
        );
    }
    let stripe = reported("stripe-spec3.yaml", "PostRefunds");
    assert!(stripe.fix.is_some(), "Stripe's refunds get a key header");
}

/// A key shared through `components` is reported at each operation that
/// takes it (its method's line, its pointer), with the component named in
/// the label: Adyen Transfers' five writes share one `Idempotency-Key`
/// parameter, and five findings on that one line would sit where pull
/// requests rarely look. A key in another file of a multi-file spec gives
/// a pointer into the root document, the same in every checkout.
#[test]
fn a_shared_key_is_reported_at_each_operation() {
    let path = corpus().join("specs/adyen-TransferService-v4.yaml");
    let workspace = Workspace::load(&path).unwrap();
    let findings: Vec<_> = lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.rule == "undeclared-key-header")
        .collect();
    assert_eq!(findings.len(), 5);
    let lines: BTreeSet<usize> = findings.iter().map(|d| d.location.line).collect();
    assert_eq!(lines.len(), 5, "one line per operation: {lines:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    let all: Vec<&str> = text.lines().collect();
    for finding in &findings {
        assert!(
            finding.pointer.starts_with("/paths/") && finding.pointer.ends_with("/post"),
            "{}",
            finding.pointer
        );
        assert_eq!(all[finding.location.line - 1].trim(), "post:");
        assert_eq!(
            finding.label.as_deref(),
            Some("the key is declared at `/components/parameters/Idempotency-Key`")
        );
    }
    let Some(dir) = full_corpus() else { return };
    let root = dir.join("specs/digitalocean-multifile/specification/DigitalOcean-public.v2.yaml");
    let workspace = Workspace::load(&root).unwrap();
    let pointers: Vec<String> = lint(&workspace, &LintOptions::default())
        .diagnostics
        .into_iter()
        .filter(|d| d.rule == "undeclared-key-header")
        .map(|d| d.pointer)
        .collect();
    assert!(!pointers.is_empty());
    for pointer in pointers {
        assert!(pointer.starts_with("/paths/"), "{pointer}");
    }
}

/// The fix takes what a key's description states instead of a guess:
/// PayPal's catalog API "stores keys for 72 hours", so that is the
/// contract's window; Adyen's `Idempotency-Key` is "a unique identifier
/// ... with a maximum of 64 characters", so the contract says 64, not the
/// default 128 that would accept keys Adyen refuses (its schema, silent on
/// the length, is left as it is: no fix narrows an existing key); and
/// its format is `{opaque}`, not a guessed business prefix that would turn
/// away the bare UUIDs clients send today.
#[test]
fn the_fix_takes_what_the_key_description_states() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = |file: &str| {
        let path = dir.path().join(file);
        std::fs::copy(corpus().join("specs").join(file), &path).unwrap();
        let outcome =
            idemgen_lint::fix_loop::fix_document(&path, &LintOptions::default(), true).unwrap();
        std::fs::write(&path, &outcome.files[0].after).unwrap();
        path
    };
    let paypal = fixed("paypal-catalogs_products_v1.json");
    let run = crate::support::run::idemgen(&[
        "window",
        "--format",
        "json",
        "--op",
        "products.create",
        paypal.to_str().unwrap(),
    ]);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect(&run.stderr);
    assert_eq!(
        report["operations"][0]["window_ms"],
        72 * 3_600_000,
        "{}",
        run.stdout
    );

    let adyen = fixed("adyen-TransferService-v4.yaml");
    let workspace = Workspace::load(&adyen).unwrap();
    let root = workspace.root();
    let schema_max = idemgen_spec::refs::evaluate(
        root,
        "/components/parameters/Idempotency-Key/schema/maxLength",
    )
    .and_then(|node| match node.value {
        idemgen_spec::Value::Int(length) => Some(length),
        _ => None,
    });
    // The schema is the API's: the fix leaves it as it was.
    assert_eq!(schema_max, None);
    let contract_max =
        idemgen_spec::refs::evaluate(root, "/paths/~1transfers/post/x-idempotency/key/max-length")
            .and_then(|node| match node.value {
                idemgen_spec::Value::Int(length) => Some(length),
                _ => None,
            });
    assert_eq!(contract_max, Some(64));
    // The key is optional and its schema says nothing of its shape: any
    // key today's clients send (Adyen recommends a bare UUID) stays valid.
    let format =
        idemgen_spec::refs::evaluate(root, "/paths/~1transfers/post/x-idempotency/key/format")
            .and_then(|node| node.as_str());
    assert_eq!(format, Some("{opaque}"));
}
