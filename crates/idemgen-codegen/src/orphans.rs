//! Business files a regeneration would stop compiling: the user's code for
//! an operation the spec renamed or removed.
//!
//! `src/business/mod.rs` is regenerated with one module per operation, and
//! each business file is the user's once written. When an operationId
//! changes, the old file no longer maps to an operation: writing the new
//! list would silently drop it from the build, and the renamed operation
//! would get a fresh stub answering 501. [`find`] names each such file,
//! what it served (from the `mod.rs` on disk) and, when an operation of
//! the same method and path is new, how to carry the code over.

use std::path::Path;

use crate::types::operation_type_words;

/// The business file of one operation the project serves.
#[derive(Debug, Clone)]
pub struct BusinessFile {
    /// `src/business/get_order.rs`.
    pub file: String,
    /// The operationId (or `METHOD path` without one).
    pub name: String,
    pub method: String,
    pub path: String,
}

/// A business file of the project on disk that no operation maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    pub file: String,
    /// What the file served, as the previous `mod.rs` named it
    /// (`getOrder: GET /orders/{order_no}`).
    pub served: Option<String>,
    /// The new operation at the same method and path, if there is one.
    pub successor: Option<Successor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Successor {
    pub name: String,
    /// Its (new) business file.
    pub file: String,
    /// The words the old and the new operation's types start with
    /// (`GetOrder`, `FetchOrder`).
    pub old_types: String,
    pub new_types: String,
}

const MOD_RS: &str = "src/business/mod.rs";

/// The business modules the `src/business/mod.rs` in `dir` lists whose
/// file exists and which `business` no longer has.
pub fn find(dir: &Path, business: &[BusinessFile]) -> Vec<Orphan> {
    let Ok(listed) = std::fs::read_to_string(dir.join(MOD_RS)) else {
        return Vec::new();
    };
    let mut orphans = Vec::new();
    let mut heading: Option<String> = None;
    for line in listed.lines() {
        let line = line.trim();
        if let Some(module) = line
            .strip_prefix("pub mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            let served = heading.take();
            let file = format!("src/business/{module}.rs");
            let exists =
                dir.join(&file).is_file() || dir.join("src/business").join(module).is_dir();
            if exists && !business.iter().any(|known| known.file == file) {
                let successor = served
                    .as_deref()
                    .and_then(|served| successor(dir, served, business));
                orphans.push(Orphan {
                    file,
                    served,
                    successor,
                });
            }
        } else if let Some(comment) = line.strip_prefix("// ") {
            // The first comment line over a module is `name: METHOD path`.
            if heading.is_none() {
                heading = Some(comment.to_string());
            }
        } else if line.is_empty() {
            heading = None;
        }
    }
    orphans
}

/// The operation at the same method and path as `served`
/// (`getOrder: GET /orders/{order_no}`) whose business file is not
/// written yet: the operation renamed.
fn successor(dir: &Path, served: &str, business: &[BusinessFile]) -> Option<Successor> {
    let (old_name, route) = served.rsplit_once(": ")?;
    let (method, path) = route.split_once(' ')?;
    let new = business.iter().find(|candidate| {
        candidate.method.eq_ignore_ascii_case(method)
            && candidate.path == path
            && !dir.join(&candidate.file).exists()
    })?;
    let id = |name: &str| (!name.contains(' ')).then(|| name.to_string());
    Some(Successor {
        name: new.name.clone(),
        file: new.file.clone(),
        old_types: operation_type_words(id(old_name).as_deref(), method, path),
        new_types: operation_type_words(id(&new.name).as_deref(), &new.method, &new.path),
    })
}

impl Orphan {
    /// One paragraph for the user: what the file served and what to do.
    pub fn describe(&self) -> String {
        let served = match &self.served {
            Some(served) => format!("your code for `{served}`"),
            None => "your code".to_string(),
        };
        match &self.successor {
            Some(next) => format!(
                "{file} holds {served}, now the operation `{name}`: carry it over with \
                 `mv {file} {new}`, rename the `{old}…` types it uses to `{newer}…`, then run \
                 `idemgen gen` again",
                file = self.file,
                name = next.name,
                new = next.file,
                old = next.old_types,
                newer = next.new_types,
            ),
            None => format!(
                "{} holds {served}, an operation the spec no longer has: src/business/mod.rs \
                 would no longer compile it (the file itself is kept)",
                self.file
            ),
        }
    }
}
