//! What `gen` tells the user about the spec it generated from: unions it
//! would not guess, business files no operation maps to any more, and
//! operations without a contract.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::root;

fn idemgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idemgen"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

fn gen_into(spec: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "gen",
        spec.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--name",
        "svc",
    ];
    args.extend_from_slice(extra);
    idemgen(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A union whose variants accept each other's values, or whose variant
/// cannot be read, is named, with its pointer and why, and generated as a
/// JSON value rather than guessed.
#[test]
fn an_ambiguous_union_is_named_by_its_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let output = gen_into(
        &root().join("tests/types/unions.yaml"),
        &dir.path().join("svc"),
        &[],
    );
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: unions.yaml#/components/schemas/Critter: generated as \
             `serde_json::Value`, not guessed: the union's variants `Cat` and `Hamster` \
             accept each other's values"
        ),
        "{stderr}"
    );
    // And the discriminated union whose variant is a union named by the
    // same property: no value could be read as that variant.
    assert!(
        stderr.contains(
            "warning: unions.yaml#/components/schemas/Entry: generated as \
             `serde_json::Value`, not guessed: the discriminator's variant `Animal` \
             is itself a union named by `kind`"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("not guessed").count(), 2, "{stderr}");
}

const EXAMPLE: &str = "examples/payment-callback/openapi.yaml";

/// The example spec with `edit` applied to its text.
fn example_with(dir: &Path, edit: impl Fn(String) -> String) -> std::path::PathBuf {
    let spec = dir.join("openapi.yaml");
    let text = std::fs::read_to_string(root().join(EXAMPLE)).unwrap();
    std::fs::write(&spec, edit(text)).unwrap();
    spec
}

/// A read-only operation to add at the end of the example's paths.
const HEALTH: &str = "  /health:\n    get:\n      operationId: getHealth\n      responses:\n        \"204\":\n          description: Up.\n";

fn add_health(text: String) -> String {
    text.replacen(
        "  /orders/{order_no}:",
        &format!("{HEALTH}\n  /orders/{{order_no}}:"),
        1,
    )
}

fn rename_get_order(text: String) -> String {
    text.replace("operationId: getOrder", "operationId: fetchOrder")
}

/// Renaming, adding and removing operations between generations: the
/// user's code for a renamed or removed operation is never dropped
/// silently, the refusal says how to carry it over, and `--force` keeps
/// the file.
#[test]
fn regeneration_never_drops_business_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("svc");
    let business = out.join("src/business");
    let spec = example_with(dir.path(), |text| text);
    let first = gen_into(&spec, &out, &[]);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let mine = "\n// The order lookup I wrote.\n";
    let mut code = std::fs::read_to_string(business.join("get_order.rs")).unwrap();
    code.push_str(mine);
    std::fs::write(business.join("get_order.rs"), &code).unwrap();
    let listed_before = std::fs::read_to_string(business.join("mod.rs")).unwrap();

    // getOrder renamed to fetchOrder, getHealth added: refused, with the way over.
    example_with(dir.path(), |text| add_health(rename_get_order(text)));
    let renamed = gen_into(&spec, &out, &[]);
    let stderr = text(&renamed.stderr);
    assert_eq!(renamed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "src/business/get_order.rs holds your code for `getOrder: GET /orders/{order_no}`, \
             now the operation `fetchOrder`: carry it over with \
             `mv src/business/get_order.rs src/business/fetch_order.rs`, rename the `GetOrder…` \
             types it uses to `FetchOrder…`"
        ),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(business.join("mod.rs")).unwrap(),
        listed_before,
        "nothing written"
    );
    assert!(!business.join("fetch_order.rs").exists() && !business.join("get_health.rs").exists());

    // The advice followed: the code carried over is the new operation's.
    let carried = code.replace("GetOrder", "FetchOrder");
    std::fs::remove_file(business.join("get_order.rs")).unwrap();
    std::fs::write(business.join("fetch_order.rs"), &carried).unwrap();
    let again = gen_into(&spec, &out, &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let listed = std::fs::read_to_string(business.join("mod.rs")).unwrap();
    assert!(
        listed.contains("pub mod fetch_order;") && listed.contains("pub mod get_health;"),
        "{listed}"
    );
    assert!(!listed.contains("get_order"), "{listed}");
    assert_eq!(
        std::fs::read_to_string(business.join("fetch_order.rs")).unwrap(),
        carried
    );

    // fetchOrder removed: refused, then with --force kept but not compiled.
    example_with(dir.path(), |text| {
        let start = text.find("  /orders/{order_no}:").unwrap();
        let end = text[start..]
            .find("\ncomponents:")
            .map_or(text.len(), |at| start + at + 1);
        format!("{}{HEALTH}\n{}", &text[..start], &text[end..])
    });
    let removed = gen_into(&spec, &out, &[]);
    let stderr = text(&removed.stderr);
    assert_eq!(removed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "src/business/fetch_order.rs holds your code for `fetchOrder: GET /orders/{order_no}`, \
             an operation the spec no longer has"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("pass --force"), "{stderr}");
    let forced = gen_into(&spec, &out, &["--force"]);
    let stderr = text(&forced.stderr);
    assert!(forced.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: kept src/business/fetch_order.rs but no longer compiled"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(business.join("fetch_order.rs")).unwrap(),
        carried
    );
    let listed = std::fs::read_to_string(business.join("mod.rs")).unwrap();
    assert!(
        !listed.contains("fetch_order") && listed.contains("pub mod get_health;"),
        "{listed}"
    );
}

/// The operations of `spec` whose key-like parameter has no contract, as
/// lint's JSON output names them: each one's overlay target
/// (`$.paths['/grants'].post`) and whether lint takes it for a write (a
/// warning, with a fix; a read is a note).
fn keyed_without_contract(spec: &Path) -> Vec<(String, bool)> {
    let output = idemgen(&["lint", "--format", "json", spec.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["rule"] == "undeclared-key-header")
        .map(|d| {
            let pointer = d["pointer"].as_str().unwrap();
            let (path, method) = pointer
                .strip_prefix("/paths/")
                .and_then(|rest| rest.rsplit_once('/'))
                .unwrap();
            let path = path.replace("~1", "/").replace("~0", "~");
            (
                format!("$.paths['{path}'].{method}"),
                d["severity"] == "warning",
            )
        })
        .collect()
}

/// `gen` on a spec without contracts says so, counts the operations that
/// declare a key anyway, and prints the lint command that writes their
/// contracts as an overlay; the command, run as printed, writes them.
fn spec_without_contracts_gets_the_overlay_command(spec: &Path, operations: usize) {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join(spec.file_name().unwrap());
    std::fs::copy(spec, &local).unwrap();
    let found = keyed_without_contract(&local);
    let keyed = found.len();
    assert!(keyed > 0, "the spec declares keys");
    let out = dir.path().join("svc");
    let output = gen_into(&local, &out, &[]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let counts = format!(
        "note: {operations} of {operations} operations carry no idempotency contract \
         (`x-idempotency`), so the service treats them as plain requests; {keyed} of them \
         declare an idempotency key anyway"
    );
    assert!(stdout.contains(&counts), "{stdout}");
    let overlay = local.with_file_name(format!(
        "{}.idempotency.yaml",
        local.file_stem().unwrap().to_string_lossy()
    ));
    let command = format!(
        "idemgen lint --fix --unsafe-fixes --overlay {} {}",
        overlay.display(),
        local.display()
    );
    let line = stdout
        .lines()
        .find(|line| line.trim() == command)
        .unwrap_or_else(|| panic!("no `{command}` in:\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    idemgen(&words);
    let written = std::fs::read_to_string(&overlay).expect("the command writes the overlay");
    // Each keyed write gets its contract (reads, a note, get none).
    for (target, write) in &found {
        let contract = format!("- target: \"{target}\"\n    update:\n      x-idempotency:");
        assert_eq!(
            written.contains(&contract),
            *write,
            "{target} in:\n{written}"
        );
    }
    assert!(stdout.contains(&format!(
        "idemgen gen --overlay {} {} -o {}",
        overlay.display(),
        local.display(),
        out.display()
    )));
}

#[test]
fn a_spec_without_contracts_is_told_how_to_add_them() {
    spec_without_contracts_gets_the_overlay_command(
        &root().join("tests/corpus/specs/adyen-TransferService-v4.yaml"),
        12,
    );
}

/// Adyen Checkout: 22 operations declare `Idempotency-Key`, none has a
/// contract (the full corpus only).
#[test]
fn adyen_checkout_without_contracts_is_told_how_to_add_them() {
    let Some(corpus) = crate::support::corpus::full_corpus_dir() else {
        crate::support::skip::skipped(
            "the full corpus is not at ../shared/corpus (set IDEMGEN_CORPUS)",
        );
        return;
    };
    let spec = corpus.join("specs/adyen-CheckoutService-v71.yaml");
    assert_eq!(keyed_without_contract(&spec).len(), 22);
    spec_without_contracts_gets_the_overlay_command(&spec, 28);
}

/// A run through an overlay of the user's own (here one that fixes the
/// spec's title) is told a `gen` command that still applies it: a
/// command-line `--overlay` replaces the list, so dropping it would read
/// the spec without the user's fix.
#[test]
fn the_overlay_command_keeps_the_overlays_already_applied() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("transfers.yaml");
    std::fs::copy(
        root().join("tests/corpus/specs/adyen-TransferService-v4.yaml"),
        &spec,
    )
    .unwrap();
    let own = dir.path().join("own-fixes.yaml");
    std::fs::write(
        &own,
        "overlay: 1.0.0\ninfo:\n  title: our fixes\n  version: 1.0.0\nactions:\n  \
         - target: $.info\n    update:\n      title: Transfers\n",
    )
    .unwrap();
    let out = dir.path().join("svc");
    let output = gen_into(&spec, &out, &["--overlay", own.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let expected = format!(
        "idemgen gen --overlay {} --overlay {} {} -o {}",
        own.display(),
        dir.path().join("transfers.idempotency.yaml").display(),
        spec.display(),
        out.display()
    );
    assert!(
        stdout.lines().any(|line| line.trim() == expected),
        "no `{expected}` in:\n{stdout}"
    );
    // lint reads the same overlays before writing the last one.
    let fix = format!(
        "idemgen lint --fix --unsafe-fixes --overlay {} --overlay {} {}",
        own.display(),
        dir.path().join("transfers.idempotency.yaml").display(),
        spec.display(),
    );
    assert!(
        stdout.lines().any(|line| line.trim() == fix),
        "no `{fix}` in:\n{stdout}"
    );

    // The overlay the note names, applied already under another spelling
    // of its path, is listed once.
    let named = dir.path().join("transfers.idempotency.yaml");
    std::fs::copy(&own, &named).unwrap();
    let spelled = dir.path().join(".").join("transfers.idempotency.yaml");
    let output = gen_into(&spec, &out, &["--overlay", spelled.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let expected = format!(
        "idemgen gen --overlay {} {} -o {}",
        named.display(),
        spec.display(),
        out.display()
    );
    assert!(
        stdout.lines().any(|line| line.trim() == expected),
        "no `{expected}` in:\n{stdout}"
    );
}

/// One route captures its segments under the first operation's names, so
/// an operation that names them otherwise at the same place (a template
/// OpenAPI does not allow) is not served, and `gen` says why.
#[test]
fn parameters_named_otherwise_on_one_route_are_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("things.yaml");
    std::fs::write(
        &spec,
        "openapi: 3.1.0\ninfo: {title: things, version: '1'}\npaths:\n  \
         /things/{id}:\n    get:\n      operationId: getThing\n      parameters:\n        \
         - {name: id, in: path, required: true, schema: {type: string}}\n      \
         responses:\n        '200': {description: ok}\n  \
         /things/{thing}:\n    delete:\n      operationId: deleteThing\n      parameters:\n        \
         - {name: thing, in: path, required: true, schema: {type: string}}\n      \
         responses:\n        '204': {description: gone}\n",
    )
    .unwrap();
    let out = dir.path().join("svc");
    let output = gen_into(&spec, &out, &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "deleteThing: DELETE /things/{thing} names its path parameters otherwise than \
             GET /things/{id}, served earlier at the same place"
        ),
        "{stderr}"
    );
    assert!(out.join("src/business/get_thing.rs").exists());
    assert!(!out.join("src/business/delete_thing.rs").exists());
}

/// A spec whose writes declare no key at all (Stripe's, say) is still told
/// the command that writes their contracts, keys included: the writes get
/// one, the search that is a read does not.
#[test]
fn writes_without_any_key_are_told_the_command_too() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("shop.yaml");
    let operation = |path: &str, id: &str| {
        format!(
            "  {path}:\n    post:\n      operationId: {id}\n      responses:\n        \"201\": {{description: done, content: {{application/json: {{schema: {{type: object}}}}}}}}\n"
        )
    };
    std::fs::write(
        &spec,
        format!(
            "openapi: 3.1.0\ninfo: {{title: Shop, version: '1'}}\npaths:\n{}{}{}",
            operation("/orders", "createOrder"),
            operation("/charges", "createCharge"),
            operation("/orders/search", "searchOrders"),
        ),
    )
    .unwrap();
    let output = gen_into(&spec, &dir.path().join("svc"), &[]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains(
            "none declares an idempotency key; lint writes a contract and its key for the 2 it \
             takes for writes a retry could repeat."
        ),
        "{stdout}"
    );
    let overlay = dir.path().join("shop.idempotency.yaml");
    let command = format!(
        "idemgen lint --fix --unsafe-fixes --overlay {} {}",
        overlay.display(),
        spec.display()
    );
    assert!(
        stdout.lines().any(|line| line.trim() == command),
        "{stdout}"
    );
    idemgen(&command.split_whitespace().skip(1).collect::<Vec<_>>());
    let written = std::fs::read_to_string(&overlay).expect("the command writes the overlay");
    for (target, contracted) in [
        ("/orders", true),
        ("/charges", true),
        ("/orders/search", false),
    ] {
        let contract =
            format!("- target: \"$.paths['{target}'].post\"\n    update:\n      x-idempotency:");
        assert_eq!(
            written.contains(&contract),
            contracted,
            "{target}:\n{written}"
        );
    }
}
