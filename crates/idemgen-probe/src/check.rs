//! What every probe check is: an id, the entry `idemgen probe --help` gives
//! it, and its documentation, all stated in the check's own file.

pub struct Check {
    /// Stable kebab-case id, e.g. `burst`; reports name the check by it.
    pub id: &'static str,
    /// What it sends and expects, in the lines `idemgen probe --help`
    /// prints: wrapped by hand where the help breaks them, so the help
    /// reads as it always has.
    pub help: &'static [&'static str],
    /// The check file's source; its leading `//!` lines are the documentation.
    pub source: &'static str,
}

impl Check {
    /// The help entry on one line, for tables and listings.
    pub fn summary(&self) -> String {
        self.help.join(" ")
    }

    /// The check file's leading `//!` documentation, as Markdown.
    pub fn docs(&self) -> String {
        let mut docs = String::new();
        for line in self.source.lines() {
            let Some(text) = line.strip_prefix("//!") else {
                break;
            };
            docs.push_str(text.strip_prefix(' ').unwrap_or(text));
            docs.push('\n');
        }
        docs.trim().to_string()
    }
}

/// Declares a check from inside its own file, taking the file's documentation.
macro_rules! declare_check {
    ($file:literal, $id:literal, [$($help:literal),+ $(,)?]) => {
        pub const CHECK: $crate::check::Check = $crate::check::Check {
            id: $id,
            help: &[$($help),+],
            source: include_str!($file),
        };
    };
}
pub(crate) use declare_check;
