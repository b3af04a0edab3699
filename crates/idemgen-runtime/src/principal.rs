//! Who called: what a security check hands to the engine and the
//! business function.

/// The caller a security scheme verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Who the caller is: a user, client or account id, stable across
    /// requests. Keys scoped by `principal` are namespaced by it alone, so
    /// it must never be shared by two callers, across schemes too: the
    /// same caller reached through two schemes (a token and an API key)
    /// may share one id on purpose, and then shares its keys, but a
    /// verifier whose schemes draw ids from different namespaces (users
    /// and API clients) prefixes them (`user:42`, `client:42`).
    pub id: String,
    /// The name of the scheme that verified it (its key in
    /// `components.securitySchemes`).
    pub scheme: &'static str,
}

impl Principal {
    pub fn new(id: impl Into<String>, scheme: &'static str) -> Principal {
        Principal {
            id: id.into(),
            scheme,
        }
    }
}
