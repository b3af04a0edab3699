//! This crate's own sources, for a generated project to build against
//! on a machine that has no idemgen checkout and reaches only crates.io:
//! `idemgen gen` writes them to the project's `vendor/idemgen-runtime/`.
//! Always compiled, and all the crate is without a database feature, so
//! the CLI that embeds them builds none of the engine's dependencies.

/// Every file of the crate a build needs: its path inside the crate and
/// its contents, byte for byte.
pub const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../Cargo.toml")),
    ("README.md", include_str!("../README.md")),
    (
        "src/canonical_json.rs",
        include_str!("../src/canonical_json.rs"),
    ),
    ("src/constraints.rs", include_str!("../src/constraints.rs")),
    ("src/contract.rs", include_str!("../src/contract.rs")),
    ("src/db.rs", include_str!("../src/db.rs")),
    ("src/db/kept.rs", include_str!("../src/db/kept.rs")),
    ("src/db/primary.rs", include_str!("../src/db/primary.rs")),
    (
        "src/db/unanswered.rs",
        include_str!("../src/db/unanswered.rs"),
    ),
    ("src/decimal.rs", include_str!("../src/decimal.rs")),
    ("src/engine.rs", include_str!("../src/engine.rs")),
    ("src/fingerprint.rs", include_str!("../src/fingerprint.rs")),
    ("src/in_flight.rs", include_str!("../src/in_flight.rs")),
    ("src/in_place.rs", include_str!("../src/in_place.rs")),
    ("src/input.rs", include_str!("../src/input.rs")),
    ("src/input/deep.rs", include_str!("../src/input/deep.rs")),
    (
        "src/input/json_fields.rs",
        include_str!("../src/input/json_fields.rs"),
    ),
    ("src/key.rs", include_str!("../src/key.rs")),
    ("src/lib.rs", include_str!("../src/lib.rs")),
    ("src/metrics.rs", include_str!("../src/metrics.rs")),
    ("src/multipart.rs", include_str!("../src/multipart.rs")),
    ("src/otel.rs", include_str!("../src/otel.rs")),
    ("src/outcome.rs", include_str!("../src/outcome.rs")),
    ("src/principal.rs", include_str!("../src/principal.rs")),
    ("src/problem.rs", include_str!("../src/problem.rs")),
    (
        "src/reachability.rs",
        include_str!("../src/reachability.rs"),
    ),
    ("src/reply.rs", include_str!("../src/reply.rs")),
    ("src/run_to_end.rs", include_str!("../src/run_to_end.rs")),
    (
        "src/request_span.rs",
        include_str!("../src/request_span.rs"),
    ),
    (
        "src/response_headers.rs",
        include_str!("../src/response_headers.rs"),
    ),
    ("src/security.rs", include_str!("../src/security.rs")),
    ("src/service.rs", include_str!("../src/service.rs")),
    (
        "src/single_flight.rs",
        include_str!("../src/single_flight.rs"),
    ),
    ("src/sources.rs", include_str!("../src/sources.rs")),
    ("src/store.rs", include_str!("../src/store.rs")),
    ("src/time.rs", include_str!("../src/time.rs")),
    (
        "src/trace_context.rs",
        include_str!("../src/trace_context.rs"),
    ),
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    /// A source file added to the crate but not listed would leave
    /// vendored copies that do not build.
    #[test]
    fn every_file_a_build_needs_is_listed_once() {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut expected: BTreeSet<String> = ["Cargo.toml", "README.md"]
            .into_iter()
            .map(String::from)
            .collect();
        let mut pending = vec![crate_dir.join("src")];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let relative = path.strip_prefix(crate_dir).unwrap();
                    expected.insert(relative.to_string_lossy().into_owned());
                }
            }
        }
        let listed: Vec<&str> = super::FILES.iter().map(|(path, _)| *path).collect();
        let unique: BTreeSet<String> = listed.iter().map(|path| path.to_string()).collect();
        assert_eq!(
            unique.len(),
            listed.len(),
            "a file is listed twice: {listed:?}"
        );
        assert_eq!(
            unique, expected,
            "sources::FILES and the crate's files differ"
        );
    }
}
