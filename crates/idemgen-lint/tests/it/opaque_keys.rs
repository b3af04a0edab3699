//! `{opaque}` keys: a key the client chooses whole. Under the profiles
//! whose clients choose their keys (`ietf-draft`, `stripe`) a format of
//! just `{opaque}` needs no business prefix; under `retry-after` it does.
//! Either way `key-predictable` warns that the server cannot check it, and
//! a schema silent about the key's shape is left as it is.

use idemgen_diagnostics::{Diagnostic, Severity};
use idemgen_lint::LintOptions;
use idemgen_lint::fix_loop::fix_document;

use crate::support::findings;

/// `POST /orders` under `profile`, its key `format`, with the answers the
/// profile names declared, and the key's parameter schema `key_schema`.
fn spec(profile: &str, format: &str, key_schema: &str) -> String {
    let (busy, conflict) = match profile {
        "retry-after" => ("429", "409"),
        // Stripe's conflict is its 400.
        "stripe" => ("409", ""),
        _ => ("409", "422"),
    };
    let conflict = if conflict.is_empty() {
        String::new()
    } else {
        format!("        '{conflict}': {{description: key reused}}\n")
    };
    format!(
        "openapi: 3.1.0
info: {{title: t, version: '1'}}
paths:
  /orders:
    post:
      operationId: createOrder
      parameters:
        - name: Idempotency-Key
          in: header
          required: true
          schema: {key_schema}
      x-idempotency:
        profile: {profile}
        key: {{in: header, name: Idempotency-Key, format: '{format}', max-length: 255}}
        window: 1d
        client: {{timeout: 5s}}
        server: {{max-processing: 3s}}
      responses:
        '201': {{description: created, content: {{application/json: {{schema: {{type: object}}}}}}}}
        '400': {{description: bad key}}
{conflict}        '{busy}': {{description: in progress, headers: {{Retry-After: {{required: true, schema: {{type: integer}}}}}}}}
"
    )
}

const FIXED_SCHEMA: &str = "{type: string, maxLength: 255, pattern: '^[!-~]+$'}";

fn of_rule<'a>(findings: &'a [Diagnostic], rule: &str) -> Vec<&'a Diagnostic> {
    findings
        .iter()
        .filter(|finding| finding.rule == rule)
        .collect()
}

#[test]
fn client_chosen_profiles_need_no_prefix_and_are_warned_about_entropy() {
    for profile in ["ietf-draft", "stripe"] {
        let found = findings(&spec(profile, "{opaque}", FIXED_SCHEMA));
        assert!(
            of_rule(&found, "key-prefix-missing").is_empty(),
            "{profile}: {found:#?}"
        );
        let predictable = of_rule(&found, "key-predictable");
        assert_eq!(predictable.len(), 1, "{profile}: {found:#?}");
        assert_eq!(predictable[0].severity, Severity::Warning);
        assert!(
            predictable[0]
                .message
                .contains("the server cannot check that it is unpredictable"),
            "{}",
            predictable[0].message
        );
        // The document declares no security: that warning is not the key's.
        assert!(
            found.iter().all(|finding| matches!(
                finding.rule,
                "key-predictable" | "replay-unauthenticated"
            )),
            "{profile}: only the entropy warning is left: {found:#?}"
        );
    }
}

#[test]
fn the_retry_after_profile_keeps_the_prefix_rule() {
    let found = findings(&spec("retry-after", "{opaque}", FIXED_SCHEMA));
    let prefix = of_rule(&found, "key-prefix-missing");
    assert_eq!(prefix.len(), 1, "{found:#?}");
    assert_eq!(prefix[0].severity, Severity::Error);
    // Only a format of just `{opaque}` is exempt, under any profile.
    let found = findings(&spec("ietf-draft", "k{opaque}", FIXED_SCHEMA));
    assert_eq!(of_rule(&found, "key-prefix-missing").len(), 1, "{found:#?}");
}

/// An `{opaque}` key is of the client's own shape: a schema that says
/// nothing of shape or length agrees with it, and no fix narrows it (a
/// new `pattern` or `maxLength` would turn away keys today's clients may
/// send). A schema that states a length other than the contract's is
/// still reported, and fixed to the contract's.
#[test]
fn an_opaque_key_leaves_a_silent_schema_as_it_is() {
    let before = spec("ietf-draft", "{opaque}", "{type: string}");
    assert!(
        of_rule(&findings(&before), "key-schema-mismatch").is_empty(),
        "{:#?}",
        findings(&before)
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spec.yaml");
    std::fs::write(&path, &before).unwrap();
    let outcome = fix_document(&path, &LintOptions::default(), false).unwrap();
    assert!(!outcome.unfinished);
    assert!(
        outcome
            .files
            .iter()
            .all(|file| !file.after.contains("pattern") && !file.after.contains("maxLength")),
        "{:#?}",
        outcome
            .files
            .iter()
            .map(|file| &file.after)
            .collect::<Vec<_>>()
    );

    let stated = spec("ietf-draft", "{opaque}", "{type: string, maxLength: 64}");
    let found = findings(&stated);
    let mismatch = of_rule(&found, "key-schema-mismatch");
    assert_eq!(mismatch.len(), 1, "{found:#?}");
    assert!(
        mismatch[0]
            .message
            .contains("`maxLength` other than key.max-length 255"),
        "{}",
        mismatch[0].message
    );
}

/// `key-schema-mismatch`'s help shows the pattern to set. Copied into
/// YAML it must mean the pattern the fix writes: a format with a `.` gives
/// a pattern with `\.`, which a YAML double-quoted string must escape.
#[test]
fn the_pattern_the_help_shows_is_the_one_the_fix_writes_once_pasted() {
    let spec = "openapi: 3.1.0
info: {title: t, version: '1'}
paths:
  /pay:
    post:
      operationId: pay
      parameters:
        - {in: header, name: Idempotency-Key, required: true, schema: {type: string}}
      x-idempotency:
        key: {in: header, name: Idempotency-Key, format: 'pay.v1:{uuid}'}
      responses:
        '200': {description: ok}
";
    let found = findings(spec);
    let mismatch = found
        .iter()
        .find(|finding| finding.rule == "key-schema-mismatch")
        .expect("the key schema has no pattern");
    let help = mismatch.help.as_deref().unwrap();
    let shown = help
        .strip_prefix("set `")
        .and_then(|rest| rest.split_once("` and"))
        .map(|(pattern, _)| pattern)
        .unwrap_or_else(|| panic!("{help}"));
    let pasted = idemgen_spec::parse_tree("schema.yaml", shown)
        .unwrap_or_else(|error| panic!("{shown}: {}", error.message))
        .to_json();
    let fixed = crate::support::fix_keeping_the_rest("openapi.yaml", spec);
    let written = idemgen_spec::parse_tree("openapi.yaml", &fixed)
        .unwrap()
        .to_json()["paths"]["/pay"]["post"]["parameters"][0]["schema"]["pattern"]
        .clone();
    assert!(
        written.as_str().unwrap().starts_with("^pay\\.v1:"),
        "{written}"
    );
    assert_eq!(pasted["pattern"], written);
}
