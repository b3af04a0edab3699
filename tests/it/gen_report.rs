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

/// A union whose variants accept each other's values is named, with its
/// pointer and why, and generated as a JSON value rather than guessed.
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
    assert_eq!(stderr.matches("not guessed").count(), 1, "{stderr}");
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
