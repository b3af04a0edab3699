//! Writing a planned project to disk: only what the [`manifest`] allows,
//! directories created one at a time without following symbolic links,
//! and the manifest itself last.

use std::path::Path;

use super::manifest::{self, Action, MANIFEST, Manifest};
use super::{File, Owner};

/// What one run did to the project directory.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Written {
    pub created: usize,
    pub updated: usize,
    pub unchanged: usize,
    /// The user's business files that existed and were left alone.
    pub kept: Vec<String>,
    /// The user's business files written for the first time.
    pub fresh: Vec<String>,
    /// Files an earlier run generated that this one does not (an engine
    /// file now in the runtime crate, say), unchanged since: deleted.
    pub removed: Vec<String>,
    /// Such files the user changed since: left in place.
    pub stale: Vec<String>,
}

/// Writes the files the manifest allows and the manifest itself. Nothing
/// is written when one file would overwrite what idemgen did not write,
/// or what the user changed since, unless `force`.
pub fn write(dir: &Path, files: &[File], force: bool) -> Result<Written, String> {
    let previous = Manifest::read(dir);
    let actions = manifest::actions(dir, files, &previous, force);
    let refused: Vec<&str> = files
        .iter()
        .zip(&actions)
        .filter(|(_, action)| **action == Action::Refuse)
        .map(|(file, _)| file.path.as_str())
        .collect();
    if !refused.is_empty() {
        return Err(format!(
            "refusing to overwrite {} file{} that idemgen did not write or that changed since \
             (pass --force to overwrite):\n  {}",
            refused.len(),
            if refused.len() == 1 { "" } else { "s" },
            refused.join("\n  ")
        ));
    }
    std::fs::create_dir_all(dir)
        .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let mut manifest = Manifest::default();
    let mut written = Written::default();
    for (file, action) in files.iter().zip(&actions) {
        let (generated, _) = manifest::split_user_tail(file.contents.as_bytes());
        if file.owner == Owner::Idemgen {
            manifest
                .files
                .insert(file.path.clone(), manifest::sha256_hex(generated));
        }
        match action {
            Action::Unchanged => written.unchanged += 1,
            Action::Keep => written.kept.push(file.path.clone()),
            Action::Create | Action::Update => {
                let path = manifest::inside(dir, &file.path).ok_or_else(|| {
                    format!("refusing to write outside {}: {}", dir.display(), file.path)
                })?;
                create_parents(dir, &file.path)?;
                refuse_symlink(&path)?;
                // What the user added below the marker stays.
                let mut contents = generated.to_vec();
                if let Ok(existing) = std::fs::read(&path) {
                    contents.extend_from_slice(manifest::split_user_tail(&existing).1);
                } else {
                    contents = file.contents.clone().into_bytes();
                }
                std::fs::write(&path, &contents)
                    .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
                if *action == Action::Create {
                    written.created += 1;
                    if file.owner == Owner::User {
                        written.fresh.push(file.path.clone());
                    }
                } else {
                    written.updated += 1;
                }
            }
            Action::Refuse => unreachable!("refusals return early"),
        }
    }
    for (path, hash) in &previous.files {
        if manifest.files.contains_key(path) {
            continue;
        }
        let Some(full) = manifest::inside(dir, path) else {
            continue;
        };
        let is_file = std::fs::symlink_metadata(&full).is_ok_and(|meta| meta.is_file());
        match std::fs::read(&full) {
            Ok(bytes) if is_file && manifest::sha256_hex(&bytes) == *hash => {
                std::fs::remove_file(&full)
                    .map_err(|error| format!("cannot remove {}: {error}", full.display()))?;
                written.removed.push(path.clone());
            }
            Ok(_) => written.stale.push(path.clone()),
            Err(_) => {}
        }
    }
    let manifest_path = dir.join(MANIFEST);
    refuse_symlink(&manifest_path)?;
    std::fs::write(&manifest_path, manifest.render())
        .map_err(|error| format!("cannot write {}: {error}", manifest_path.display()))?;
    Ok(written)
}

/// A symbolic link where a file goes could lead out of the project.
fn refuse_symlink(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(format!(
            "refusing to write through the symbolic link {}",
            path.display()
        ));
    }
    Ok(())
}

/// Creates the directories of `relative` under `dir` one at a time,
/// refusing a symbolic link on the way (it could lead out of `dir`).
fn create_parents(dir: &Path, relative: &str) -> Result<(), String> {
    let mut current = dir.to_path_buf();
    let parents: Vec<&str> = relative.split('/').collect();
    for component in &parents[..parents.len() - 1] {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "refusing to write {relative} outside {}: {} is a symbolic link",
                    dir.display(),
                    current.display()
                ));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(format!("{} is not a directory", current.display())),
            Err(_) => std::fs::create_dir(&current)
                .map_err(|error| format!("cannot create {}: {error}", current.display()))?,
        }
    }
    Ok(())
}

/// Whether an enclosing Cargo workspace lists `dir` as a member (then the
/// project must not declare a workspace of its own).
pub fn is_workspace_member(dir: &Path) -> bool {
    let absolute = match std::path::absolute(dir) {
        Ok(path) => idemgen_spec::normalize(&path),
        Err(_) => return false,
    };
    for ancestor in absolute.ancestors().skip(1) {
        let Ok(text) = std::fs::read_to_string(ancestor.join("Cargo.toml")) else {
            continue;
        };
        if !text.contains("[workspace]") {
            continue;
        }
        let Ok(relative) = absolute.strip_prefix(ancestor) else {
            return false;
        };
        let relative = relative.to_string_lossy().replace('\\', "/");
        return text.contains(&format!("\"{relative}\""));
    }
    false
}
