//! `--format sarif`: SARIF 2.1.0, the format GitHub code scanning uploads.
//!
//! One run whose driver lists every rule that ran, with its summary and the
//! long explanation `idemgen rule ID` prints (GitHub shows it as the alert's
//! help), and one result per finding. Columns count characters, as the
//! run's `columnKind` says. Each result carries the finding's operation and
//! JSON pointer as a logical location and a partial fingerprint built from
//! rule, operation and pointer, so an alert survives lines moving.

use serde_json::{Map, Value, json};

use idemgen_diagnostics::{Diagnostic, Report, Severity};

pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

pub fn render(report: &Report) -> String {
    let mut text =
        serde_json::to_string_pretty(&document(report)).expect("JSON values always serialise");
    text.push('\n');
    text
}

/// The SARIF log as a JSON value.
pub fn document(report: &Report) -> Value {
    // Every rule that ran, plus any rule a finding names (all are in the
    // registry; the union keeps `ruleIndex` valid whatever the caller set).
    let mut rule_ids: Vec<&str> = report.rules.clone();
    for diagnostic in &report.diagnostics {
        if !rule_ids.contains(&diagnostic.rule) {
            rule_ids.push(diagnostic.rule);
        }
    }
    let rules: Vec<Value> = rule_ids
        .iter()
        .map(|id| rule_descriptor(report, id))
        .collect();
    let results: Vec<Value> = report
        .diagnostics
        .iter()
        .map(|diagnostic| {
            let index = rule_ids
                .iter()
                .position(|id| *id == diagnostic.rule)
                .expect("every finding's rule is listed");
            result(report, diagnostic, index)
        })
        .collect();
    let artifacts: Vec<Value> = report
        .linted
        .iter()
        .map(|file| json!({"location": artifact_location(&file.file)}))
        .collect();
    let mut log = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "idemgen",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "artifacts": artifacts,
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {
                "errors": report.errors(),
                "warnings": report.warnings(),
                "files": report.files,
                "operations": report.operations,
            },
        }]
    });
    // A file that could not be read is a run that did not finish: SARIF
    // says so in the invocation, so an upload is not taken for a clean
    // scan that closes earlier alerts.
    let notifications: Vec<Value> = report
        .load_failures
        .iter()
        .map(|failure| {
            let mut place = json!({"artifactLocation": artifact_location(&failure.file)});
            if let (Some(line), Some(column)) = (failure.line, failure.column) {
                place["region"] = json!({"startLine": line, "startColumn": column});
            }
            json!({
                "level": "error",
                "message": {"text": format!("{} (help: {})", failure.message, failure.help)},
                "locations": [{"physicalLocation": place}],
            })
        })
        .collect();
    log["runs"][0]["invocations"] = json!([{
        "executionSuccessful": notifications.is_empty(),
        "toolExecutionNotifications": notifications,
    }]);
    let home = option_env!("CARGO_PKG_HOMEPAGE")
        .filter(|uri| !uri.is_empty())
        .or(option_env!("CARGO_PKG_REPOSITORY").filter(|uri| !uri.is_empty()));
    if let Some(home) = home {
        log["runs"][0]["tool"]["driver"]["informationUri"] = json!(home);
    }
    log
}

/// SARIF's level for a severity.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn rule_descriptor(report: &Report, id: &str) -> Value {
    let Some(rule) = report.rule(id) else {
        return json!({"id": id});
    };
    let docs = rule.docs();
    let plain = docs.replace("**", "").replace('`', "");
    json!({
        "id": rule.id,
        "name": pascal_case(rule.id),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.summary},
        "help": {"text": plain, "markdown": docs},
        "defaultConfiguration": {"level": level(rule.severity)},
        "properties": {"tags": ["idempotency", "openapi"]},
    })
}

fn result(report: &Report, diagnostic: &Diagnostic, index: usize) -> Value {
    let location = &diagnostic.location;
    let mut region = Map::new();
    region.insert("startLine".into(), json!(location.line));
    region.insert("startColumn".into(), json!(location.column));
    if let Some(text) = report.sources.get(&location.file) {
        let end = (location.offset + location.length).min(text.len());
        if let Some(snippet) = text.get(location.offset..end) {
            region.insert("endLine".into(), json!(location.line));
            region.insert(
                "endColumn".into(),
                json!(location.column + snippet.chars().count().max(1)),
            );
        }
    }
    let mut logical = Map::new();
    if let Some(operation) = &diagnostic.operation {
        logical.insert("name".into(), json!(operation));
    }
    logical.insert("fullyQualifiedName".into(), json!(diagnostic.pointer));
    logical.insert("kind".into(), json!("member"));
    let mut message = diagnostic.message.clone();
    if let Some(help) = &diagnostic.help {
        message.push_str("\nhelp: ");
        message.push_str(help);
    }
    let related: Vec<Value> = diagnostic
        .related
        .iter()
        .enumerate()
        .map(|(id, related)| {
            json!({
                "id": id,
                "message": {"text": related.message},
                "physicalLocation": {
                    "artifactLocation": artifact_location(&related.location.file),
                    "region": {
                        "startLine": related.location.line,
                        "startColumn": related.location.column,
                    },
                },
                "logicalLocations": [{"fullyQualifiedName": related.pointer}],
            })
        })
        .collect();
    let mut result = json!({
        "ruleId": diagnostic.rule,
        "ruleIndex": index,
        "level": level(diagnostic.severity),
        "message": {"text": message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": artifact_location(&location.file),
                "region": region,
            },
            "logicalLocations": [logical],
        }],
        "partialFingerprints": {
            "idemgen/v1": fingerprint(diagnostic),
        },
    });
    if !related.is_empty() {
        result["relatedLocations"] = Value::Array(related);
    }
    result
}

/// A stable identity for a finding: rule, operation and pointer, hashed
/// with FNV-1a (no line numbers, so moved code keeps its alerts).
pub fn fingerprint(diagnostic: &Diagnostic) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [
        diagnostic.rule,
        diagnostic.operation.as_deref().unwrap_or(""),
        &diagnostic.pointer,
    ] {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// Where a file is: relative to the checkout (`%SRCROOT%`), or a `file:`
/// URI when the path given was absolute.
fn artifact_location(file: &str) -> Value {
    let path = uri(&super::checkout_relative(file));
    if path.starts_with('/') {
        json!({"uri": format!("file://{path}")})
    } else {
        json!({"uri": path, "uriBaseId": "%SRCROOT%"})
    }
}

/// A relative URI reference for a file name: forward slashes, and the
/// characters a URI cannot hold percent-encoded.
pub fn uri(file: &str) -> String {
    let file = file.replace('\\', "/");
    let file = file.strip_prefix("./").unwrap_or(&file);
    let mut out = String::with_capacity(file.len());
    for byte in file.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `window-too-short` → `WindowTooShort`.
fn pascal_case(id: &str) -> String {
    id.split('-')
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_references() {
        assert_eq!(uri("./api/spec one.yaml"), "api/spec%20one.yaml");
        assert_eq!(uri(r"api\spec.yaml"), "api/spec.yaml");
        assert_eq!(pascal_case("window-too-short"), "WindowTooShort");
    }
}
