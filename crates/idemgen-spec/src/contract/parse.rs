//! One `x-idempotency` block (a YAML mapping) → [`RawContract`], with every
//! unknown field, wrong type and bad value reported where it was written.

use crate::node::{Entry, pointer_join};
use crate::{Node, Value};

use super::duration::parse_duration;
use super::key_template::KeyTemplate;
use super::model::{
    Canonical, ClaimMode, Dialect, FailedPolicy, FingerprintPart, KeyLocation, Located, Origin,
    RawContract, ReplayMark, RequestScope, ScopeSource,
};
use super::placeholder;
use super::profile::Profile;
use super::suggest::closest;

/// A field that could not be understood (`contract-invalid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractError {
    pub origin: Origin,
    pub message: String,
    pub help: Option<String>,
}

/// Field names at each level, for unknown-field suggestions and editor
/// completion.
pub const SECTIONS: [(&str, &[&str]); 9] = [
    (
        "",
        &[
            "profile",
            "key",
            "window",
            "client",
            "server",
            "fingerprint",
            "responses",
            "store",
            "monitoring",
        ],
    ),
    ("key", &["in", "name", "format", "max-length", "scope"]),
    ("client", &["timeout", "retries", "jitter"]),
    ("server", &["max-processing", "downstream"]),
    ("fingerprint", &["canonical", "include"]),
    (
        "responses",
        &[
            "in-progress",
            "completed",
            "failed",
            "conflict",
            "missing-key",
            "replayed-header",
        ],
    ),
    ("responses.in-progress", &["status", "retry-after"]),
    (
        "store",
        &[
            "dialect",
            "engine",
            "table",
            "database",
            "business-database",
            "claim",
        ],
    ),
    ("monitoring", &["replay-rate-alert"]),
];

/// The values of the fields that take one of a few words (other than
/// `profile` and `store.dialect`, whose names live on their types), for
/// editor completion; the parser below accepts exactly these.
pub const CHOICES: [(&str, &[&str]); 4] = [
    ("key.in", &["header", "query", "body"]),
    ("fingerprint.canonical", &["json", "raw"]),
    (
        "fingerprint.include",
        &["method", "path", "query", "headers", "body"],
    ),
    ("responses.failed", &["retry", "reject"]),
];

struct Parser<'e> {
    errors: &'e mut Vec<ContractError>,
    invalid: Vec<&'static str>,
}

/// Parses a block found at `pointer`. Errors go to `errors`; the returned
/// contract holds every field that parsed.
pub fn parse_block(node: &Node, pointer: &str, errors: &mut Vec<ContractError>) -> RawContract {
    let mut parser = Parser {
        errors,
        invalid: Vec::new(),
    };
    let mut raw = RawContract::default();
    let Some(entries) = parser.mapping(node, pointer, "x-idempotency") else {
        return raw;
    };
    for entry in parser.known_fields(entries, pointer, "") {
        let here = pointer_join(pointer, &entry.key);
        let value = &entry.value;
        match &*entry.key {
            "profile" => {
                raw.profile =
                    parser.choice(value, &here, "profile", &Profile::NAMES, Profile::parse);
            }
            "window" => raw.window = parser.duration(value, &here, "window"),
            "key" => parser.key(value, &here, &mut raw),
            "client" => parser.client(value, &here, &mut raw),
            "server" => {
                for field in parser.section(value, &here, "server") {
                    let at = pointer_join(&here, &field.key);
                    match &*field.key {
                        "max-processing" => {
                            raw.server_max_processing =
                                parser.duration(&field.value, &at, "server.max-processing");
                        }
                        "downstream" => {
                            raw.server_downstream =
                                parser.names(&field.value, &at, "server.downstream");
                        }
                        _ => unreachable!("known_fields filters names"),
                    }
                }
            }
            "fingerprint" => parser.fingerprint(value, &here, &mut raw),
            "responses" => parser.responses(value, &here, &mut raw),
            "store" => parser.store(value, &here, &mut raw),
            "monitoring" => {
                for field in parser.section(value, &here, "monitoring") {
                    let at = pointer_join(&here, &field.key);
                    raw.replay_rate_alert = parser.percentage(&field.value, &at);
                }
            }
            _ => unreachable!("known_fields filters names"),
        }
    }
    raw.invalid = parser.invalid;
    raw
}

fn origin(node: &Node, pointer: &str) -> Origin {
    Origin {
        span: node.span,
        pointer: pointer.to_string(),
    }
}

impl Parser<'_> {
    fn error(
        &mut self,
        node: &Node,
        pointer: &str,
        field: &'static str,
        message: String,
        help: Option<String>,
    ) {
        self.invalid.push(field);
        self.errors.push(ContractError {
            origin: origin(node, pointer),
            message,
            help,
        });
    }

    /// A `TODO: …` a fix wrote where the spec states no value.
    fn placeholder(&mut self, node: &Node, pointer: &str, field: &'static str) {
        let (message, help) = placeholder::problem(field);
        self.error(node, pointer, field, message, Some(help));
    }

    fn mapping<'n>(
        &mut self,
        node: &'n Node,
        pointer: &str,
        field: &'static str,
    ) -> Option<&'n [Entry]> {
        if let Some(entries) = node.as_map() {
            return Some(entries);
        }
        self.error(
            node,
            pointer,
            field,
            format!("`{field}` must be a mapping, found {}", node.kind()),
            None,
        );
        None
    }

    /// A sub-mapping's entries, unknown names reported.
    fn section<'n>(
        &mut self,
        node: &'n Node,
        pointer: &str,
        section: &'static str,
    ) -> Vec<&'n Entry> {
        match self.mapping(node, pointer, section) {
            Some(entries) => self.known_fields(entries, pointer, section),
            None => Vec::new(),
        }
    }

    fn known_fields<'n>(
        &mut self,
        entries: &'n [Entry],
        pointer: &str,
        section: &str,
    ) -> Vec<&'n Entry> {
        let names = SECTIONS
            .iter()
            .find(|(name, _)| *name == section)
            .map(|(_, names)| *names)
            .unwrap_or_default();
        let mut known = Vec::new();
        for entry in entries {
            if names.contains(&&*entry.key) {
                known.push(entry);
            } else if !entry.key.starts_with("x-") {
                let qualified = |name: &str| {
                    if section.is_empty() {
                        name.to_string()
                    } else {
                        format!("{section}.{name}")
                    }
                };
                let help = closest(&entry.key, names.iter().copied())
                    .map(|name| format!("did you mean `{}`?", qualified(name)))
                    .or_else(|| {
                        // A field written at the wrong level, e.g. `timeout` at the top.
                        SECTIONS.iter().find_map(|(other, fields)| {
                            (fields.contains(&&*entry.key) && *other != section)
                                .then(|| format!("`{}` belongs under `{other}`", entry.key))
                        })
                    })
                    .or_else(|| {
                        Some(format!(
                            "known fields here: {}",
                            names
                                .iter()
                                .map(|name| format!("`{name}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    });
                let place = if section.is_empty() {
                    "x-idempotency".to_string()
                } else {
                    section.to_string()
                };
                self.invalid.push("unknown field");
                self.errors.push(ContractError {
                    origin: Origin {
                        span: entry.key_span,
                        pointer: pointer_join(pointer, &entry.key),
                    },
                    message: format!("unknown field `{}` in `{place}`", entry.key),
                    help,
                });
            }
        }
        known
    }

    fn string(
        &mut self,
        node: &Node,
        pointer: &str,
        field: &'static str,
    ) -> Option<Located<String>> {
        match &node.value {
            Value::Str(text) => Some(Located::new(text.to_string(), origin(node, pointer))),
            _ => {
                self.error(
                    node,
                    pointer,
                    field,
                    format!("`{field}` must be a string, found {}", node.kind()),
                    None,
                );
                None
            }
        }
    }

    /// A list of non-empty names (`server.downstream`).
    fn names(
        &mut self,
        node: &Node,
        pointer: &str,
        field: &'static str,
    ) -> Option<Located<Vec<Located<String>>>> {
        let Some(items) = node.as_seq() else {
            self.error(
                node,
                pointer,
                field,
                format!("`{field}` must be a list of names, found {}", node.kind()),
                Some(format!(
                    "write the systems the business step calls, e.g. `{field}: [payment-provider]`"
                )),
            );
            return None;
        };
        let mut names = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let at = format!("{pointer}/{index}");
            let name = self.string(item, &at, field)?;
            if name.value.trim().is_empty() {
                self.error(
                    item,
                    &at,
                    field,
                    format!("`{field}` holds an empty name"),
                    Some("name the system the business step calls, e.g. `payment-provider`".into()),
                );
                return None;
            }
            names.push(name);
        }
        Some(Located::new(names, origin(node, pointer)))
    }

    /// `responses.replayed-header`: a header field name, or `none` for a
    /// service that does not mark its replays.
    fn replay_mark(&mut self, node: &Node, pointer: &str) -> Option<Located<ReplayMark>> {
        const FIELD: &str = "responses.replayed-header";
        let text = self.string(node, pointer, FIELD)?;
        let problem = if text.value.is_empty() {
            Some("is empty".to_string())
        } else {
            crate::http_token::first_non_token_char(&text.value)
                .map(|bad| format!("is not an HTTP header name: it holds {bad:?}"))
        };
        if let Some(problem) = problem {
            self.error(
                node,
                pointer,
                FIELD,
                format!("`{FIELD}` {:?} {problem}", text.value),
                Some(
                    "name the header that marks a replayed answer (letters, digits and `!#$%&'*+-.^_`|~`, e.g. `Idempotent-Replayed`), or write `none` if replays carry no mark".into(),
                ),
            );
            return None;
        }
        // `none` in any case, as `probe --replay-header` reads it.
        let mark = if text.value.eq_ignore_ascii_case("none") {
            ReplayMark::Unmarked
        } else {
            ReplayMark::Header(text.value)
        };
        Some(Located::new(mark, text.origin))
    }

    fn choice<T>(
        &mut self,
        node: &Node,
        pointer: &str,
        field: &'static str,
        names: &[&str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<Located<T>> {
        let text = self.string(node, pointer, field)?;
        if let Some(value) = parse(&text.value) {
            return Some(Located::new(value, text.origin));
        }
        let help = closest(&text.value, names.iter().copied())
            .map(|name| format!("did you mean `{name}`?"));
        self.error(
            node,
            pointer,
            field,
            format!(
                "`{field}` is `{}`; it must be one of {}",
                text.value,
                names
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            help,
        );
        None
    }

    fn duration(
        &mut self,
        node: &Node,
        pointer: &str,
        field: &'static str,
    ) -> Option<Located<u64>> {
        let parsed = match &node.value {
            Value::Str(text) if placeholder::is_placeholder(text) => {
                self.placeholder(node, pointer, field);
                return None;
            }
            Value::Str(text) => parse_duration(text),
            Value::Int(number) => Err(format!(
                "`{number}` has no unit; write `{number}s` for seconds or `{number}ms` for milliseconds"
            )),
            // A literal too large for a float reads as infinity: say so
            // rather than echo `inf`, which the author never wrote.
            Value::Float(number) if !number.is_finite() => Err(
                "a number too large to read, and with no unit; write a duration like `1.5s`".into(),
            ),
            Value::Float(number) => Err(format!("`{number}` has no unit; write it like `1.5s`")),
            _ => Err(format!(
                "expected a duration such as `5s`, found {}",
                node.kind()
            )),
        };
        match parsed {
            Ok(ms) => Some(Located::new(ms, origin(node, pointer))),
            Err(why) => {
                self.error(
                    node,
                    pointer,
                    field,
                    format!("bad duration for `{field}`: {why}"),
                    None,
                );
                None
            }
        }
    }

    fn status(&mut self, node: &Node, pointer: &str, field: &'static str) -> Option<Located<u16>> {
        let code = match &node.value {
            Value::Int(code) => Some(*code),
            Value::Str(text) => text.parse::<i64>().ok(),
            _ => None,
        };
        match code {
            Some(code @ 100..=599) => Some(Located::new(code as u16, origin(node, pointer))),
            _ => {
                self.error(
                    node,
                    pointer,
                    field,
                    format!("`{field}` must be an HTTP status code from 100 to 599"),
                    None,
                );
                None
            }
        }
    }

    fn percentage(&mut self, node: &Node, pointer: &str) -> Option<Located<f64>> {
        let field = "monitoring.replay-rate-alert";
        let parsed = node
            .as_str()
            .and_then(|text| text.trim().strip_suffix('%'))
            .and_then(|number| number.trim().parse::<f64>().ok())
            .filter(|percent| percent.is_finite() && (0.0..=100.0).contains(percent));
        if parsed.is_none() {
            self.error(
                node,
                pointer,
                field,
                format!("`{field}` must be a percentage from 0% to 100%"),
                Some("write it with a percent sign, e.g. `0.1%`".into()),
            );
        }
        parsed.map(|percent| Located::new(percent, origin(node, pointer)))
    }

    fn key(&mut self, node: &Node, pointer: &str, raw: &mut RawContract) {
        for field in self.section(node, pointer, "key") {
            let at = pointer_join(pointer, &field.key);
            let value = &field.value;
            match &*field.key {
                "in" => {
                    raw.key_in =
                        self.choice(value, &at, "key.in", &["header", "query", "body"], |name| {
                            match name {
                                "header" => Some(KeyLocation::Header),
                                "query" => Some(KeyLocation::Query),
                                "body" => Some(KeyLocation::Body),
                                _ => None,
                            }
                        });
                }
                "name" => raw.key_name = self.string(value, &at, "key.name"),
                "format" => {
                    let Some(text) = self.string(value, &at, "key.format") else {
                        continue;
                    };
                    match KeyTemplate::parse(&text.value) {
                        Ok(template) => raw.key_format = Some(Located::new(template, text.origin)),
                        Err(why) => self.error(
                            value,
                            &at,
                            "key.format",
                            format!("bad key template: {why}"),
                            None,
                        ),
                    }
                }
                "max-length" => match value.value {
                    Value::Int(length @ 1..=65_535) => {
                        raw.key_max_length = Some(Located::new(length as u64, origin(value, &at)));
                    }
                    _ => self.error(
                        value,
                        &at,
                        "key.max-length",
                        "`key.max-length` must be an integer from 1 to 65535".into(),
                        None,
                    ),
                },
                "scope" => {
                    let Some(items) = value.as_seq() else {
                        self.error(
                            value,
                            &at,
                            "key.scope",
                            "`key.scope` must be a list".into(),
                            None,
                        );
                        continue;
                    };
                    let mut scope = Vec::new();
                    for (index, item) in items.iter().enumerate() {
                        let item_at = format!("{at}/{index}");
                        let Some(text) = self.string(item, &item_at, "key.scope") else {
                            continue;
                        };
                        match parse_scope(&text.value) {
                            Some(source) => scope.push(Located::new(source, text.origin)),
                            None => self.error(
                                item,
                                &item_at,
                                "key.scope",
                                format!("`{}` is not a scope source", text.value),
                                Some("write `principal`, `header:X-Tenant-Id`, `query:tenant` or `body:/account_id`".into()),
                            ),
                        }
                    }
                    raw.key_scope = Some(Located::new(scope, origin(value, &at)));
                }
                _ => unreachable!("known_fields filters names"),
            }
        }
    }

    fn client(&mut self, node: &Node, pointer: &str, raw: &mut RawContract) {
        for field in self.section(node, pointer, "client") {
            let at = pointer_join(pointer, &field.key);
            let value = &field.value;
            match &*field.key {
                "timeout" => raw.client_timeout = self.duration(value, &at, "client.timeout"),
                "jitter" => raw.client_jitter = self.duration(value, &at, "client.jitter"),
                "retries" => {
                    if value.as_str().is_some_and(placeholder::is_placeholder) {
                        self.placeholder(value, &at, "client.retries");
                        continue;
                    }
                    let Some(items) = value.as_seq() else {
                        self.error(
                            value,
                            &at,
                            "client.retries",
                            format!(
                                "`client.retries` must be a list of durations, found {}",
                                value.kind()
                            ),
                            Some(
                                "write the backoff before each retry, e.g. `[200ms, 800ms]`".into(),
                            ),
                        );
                        continue;
                    };
                    if items.len() > 1000 {
                        self.error(
                            value,
                            &at,
                            "client.retries",
                            "more than 1000 retries".into(),
                            None,
                        );
                        continue;
                    }
                    let delays: Vec<_> = items
                        .iter()
                        .enumerate()
                        .filter_map(|(index, item)| {
                            self.duration(item, &format!("{at}/{index}"), "client.retries")
                        })
                        .collect();
                    raw.client_retries = Some(Located::new(delays, origin(value, &at)));
                }
                _ => unreachable!("known_fields filters names"),
            }
        }
    }

    fn fingerprint(&mut self, node: &Node, pointer: &str, raw: &mut RawContract) {
        for field in self.section(node, pointer, "fingerprint") {
            let at = pointer_join(pointer, &field.key);
            let value = &field.value;
            match &*field.key {
                "canonical" => {
                    raw.fingerprint_canonical = self.choice(
                        value,
                        &at,
                        "fingerprint.canonical",
                        &["json", "raw"],
                        |name| match name {
                            "json" => Some(Canonical::Json),
                            "raw" => Some(Canonical::Raw),
                            _ => None,
                        },
                    );
                }
                "include" => {
                    let Some(items) = value.as_seq() else {
                        self.error(
                            value,
                            &at,
                            "fingerprint.include",
                            "`fingerprint.include` must be a list".into(),
                            None,
                        );
                        continue;
                    };
                    let names = ["method", "path", "query", "headers", "body"];
                    let parts: Vec<_> = items
                        .iter()
                        .enumerate()
                        .filter_map(|(index, item)| {
                            self.choice(
                                item,
                                &format!("{at}/{index}"),
                                "fingerprint.include",
                                &names,
                                |name| match name {
                                    "method" => Some(FingerprintPart::Method),
                                    "path" => Some(FingerprintPart::Path),
                                    "query" => Some(FingerprintPart::Query),
                                    "headers" => Some(FingerprintPart::Headers),
                                    "body" => Some(FingerprintPart::Body),
                                    _ => None,
                                },
                            )
                            .map(|part| part.value)
                        })
                        .collect();
                    raw.fingerprint_include = Some(Located::new(parts, origin(value, &at)));
                }
                _ => unreachable!("known_fields filters names"),
            }
        }
    }

    fn responses(&mut self, node: &Node, pointer: &str, raw: &mut RawContract) {
        for field in self.section(node, pointer, "responses") {
            let at = pointer_join(pointer, &field.key);
            let value = &field.value;
            match &*field.key {
                "in-progress" => {
                    for part in self.section(value, &at, "responses.in-progress") {
                        let part_at = pointer_join(&at, &part.key);
                        if &*part.key == "status" {
                            raw.in_progress_status =
                                self.status(&part.value, &part_at, "responses.in-progress.status");
                        } else {
                            raw.in_progress_retry_after = self.duration(
                                &part.value,
                                &part_at,
                                "responses.in-progress.retry-after",
                            );
                        }
                    }
                }
                "completed" => {
                    self.choice(value, &at, "responses.completed", &["replay"], |name| {
                        (name == "replay").then_some(())
                    });
                }
                "failed" => {
                    raw.failed = self.choice(
                        value,
                        &at,
                        "responses.failed",
                        &["retry", "reject"],
                        |name| match name {
                            "retry" => Some(FailedPolicy::Retry),
                            "reject" => Some(FailedPolicy::Reject),
                            _ => None,
                        },
                    );
                }
                "conflict" => raw.conflict_status = self.status(value, &at, "responses.conflict"),
                "missing-key" => {
                    raw.missing_key_status = self.status(value, &at, "responses.missing-key")
                }
                "replayed-header" => raw.replayed_header = self.replay_mark(value, &at),
                _ => unreachable!("known_fields filters names"),
            }
        }
    }

    fn store(&mut self, node: &Node, pointer: &str, raw: &mut RawContract) {
        for field in self.section(node, pointer, "store") {
            let at = pointer_join(pointer, &field.key);
            let value = &field.value;
            match &*field.key {
                "dialect" => {
                    raw.store_dialect =
                        self.choice(value, &at, "store.dialect", &Dialect::NAMES, Dialect::parse);
                }
                "engine" => raw.store_engine = self.string(value, &at, "store.engine"),
                "table" => raw.store_table = self.string(value, &at, "store.table"),
                "database" => raw.store_database = self.string(value, &at, "store.database"),
                "business-database" => {
                    raw.store_business_database =
                        self.string(value, &at, "store.business-database");
                }
                "claim" => {
                    raw.store_claim = self.choice(
                        value,
                        &at,
                        "store.claim",
                        &ClaimMode::NAMES,
                        ClaimMode::parse,
                    );
                }
                _ => unreachable!("known_fields filters names"),
            }
        }
    }
}

fn parse_scope(text: &str) -> Option<ScopeSource> {
    if text == "principal" {
        return Some(ScopeSource::Principal);
    }
    let (location, name) = text.split_once(':')?;
    let location = match location {
        "header" => KeyLocation::Header,
        "query" => KeyLocation::Query,
        "body" if name.starts_with('/') => KeyLocation::Body,
        _ => return None,
    };
    (!name.is_empty()).then(|| {
        ScopeSource::Request(RequestScope {
            location,
            name: name.to_string(),
        })
    })
}
