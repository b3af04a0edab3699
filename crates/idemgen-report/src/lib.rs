//! Reporters turn a [`Report`](idemgen_diagnostics::Report) into text.
//! They know nothing about rules beyond the registry's metadata.

mod excerpt;
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod pretty;
pub mod sarif;
pub mod statistics;
mod totals;
pub mod window;

/// A file name as CI systems want it: relative to the checkout. Inside a
/// GitHub Actions job (`GITHUB_WORKSPACE` set) a path under the workspace
/// is made relative to it, so annotations and SARIF land on the right file
/// even when idemgen ran in a subdirectory; otherwise the name is kept.
/// Backslashes become slashes and a leading `./` is dropped.
pub fn checkout_relative(file: &str) -> String {
    let mut name = file.replace('\\', "/");
    if let Some(workspace) = std::env::var_os("GITHUB_WORKSPACE").filter(|w| !w.is_empty()) {
        let path = std::path::Path::new(file);
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let workspace = std::path::absolute(std::path::Path::new(&workspace))
            .unwrap_or_else(|_| std::path::PathBuf::from(&workspace));
        if let Ok(relative) = idemgen_spec::normalize(&absolute).strip_prefix(&workspace) {
            name = relative.to_string_lossy().replace('\\', "/");
        }
    }
    match name.strip_prefix("./") {
        Some(rest) => rest.to_string(),
        None => name,
    }
}
