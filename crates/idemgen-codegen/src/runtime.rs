//! The `idemgen-runtime` crate's sources, embedded so that `gen` can write
//! a copy the generated project builds against (`vendor/idemgen-runtime/`)
//! on a machine that has no idemgen checkout and reaches only crates.io.

/// Where the copy goes, relative to the project.
pub const VENDOR_DIR: &str = "vendor/idemgen-runtime";

/// Every file of the crate a build needs: path inside the crate, contents.
pub const FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../idemgen-runtime/Cargo.toml"),
    ),
    ("README.md", include_str!("../../idemgen-runtime/README.md")),
    (
        "src/canonical_json.rs",
        include_str!("../../idemgen-runtime/src/canonical_json.rs"),
    ),
    (
        "src/contract.rs",
        include_str!("../../idemgen-runtime/src/contract.rs"),
    ),
    ("src/db.rs", include_str!("../../idemgen-runtime/src/db.rs")),
    (
        "src/engine.rs",
        include_str!("../../idemgen-runtime/src/engine.rs"),
    ),
    (
        "src/fingerprint.rs",
        include_str!("../../idemgen-runtime/src/fingerprint.rs"),
    ),
    (
        "src/input.rs",
        include_str!("../../idemgen-runtime/src/input.rs"),
    ),
    (
        "src/key.rs",
        include_str!("../../idemgen-runtime/src/key.rs"),
    ),
    (
        "src/lib.rs",
        include_str!("../../idemgen-runtime/src/lib.rs"),
    ),
    (
        "src/metrics.rs",
        include_str!("../../idemgen-runtime/src/metrics.rs"),
    ),
    (
        "src/reachability.rs",
        include_str!("../../idemgen-runtime/src/reachability.rs"),
    ),
    (
        "src/reply.rs",
        include_str!("../../idemgen-runtime/src/reply.rs"),
    ),
    (
        "src/security.rs",
        include_str!("../../idemgen-runtime/src/security.rs"),
    ),
    (
        "src/service.rs",
        include_str!("../../idemgen-runtime/src/service.rs"),
    ),
    (
        "src/store.rs",
        include_str!("../../idemgen-runtime/src/store.rs"),
    ),
    (
        "src/time.rs",
        include_str!("../../idemgen-runtime/src/time.rs"),
    ),
];

#[cfg(test)]
mod tests {
    /// A source file added to the crate but not here would leave vendored
    /// copies that do not build.
    #[test]
    fn every_source_file_of_the_crate_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../idemgen-runtime/src");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = format!("src/{}", entry.unwrap().file_name().to_string_lossy());
            assert!(
                super::FILES.iter().any(|(path, _)| *path == name),
                "{name} is not in runtime::FILES"
            );
        }
    }
}
