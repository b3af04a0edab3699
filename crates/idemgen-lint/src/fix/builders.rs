//! Fixes that several rules offer (the window, a declared response) and
//! the pieces they share (a new contract block, a key's schema); a fix only one rule offers lives
//! in that rule's file.

use idemgen_spec::Node;
use idemgen_spec::analysis::OperationContext;
use idemgen_spec::contract::Contract;
use idemgen_spec::contract::duration::format_ms;
use idemgen_spec::contract::key_template::KeyTemplate;
use idemgen_spec::contract::model::KeyLocation;
use idemgen_spec::contract::parse::parse_block;
use idemgen_spec::contract::placeholder;
use idemgen_spec::key_names::is_idempotency_key;
use idemgen_spec::window::{WindowInputs, compute};

use super::edit::Editor;
use super::emit::Emit;
use super::{FixDefaults, Offer};

/// The comment the window fix writes beside the value it sets.
pub const WINDOW_FLOOR_NOTE: &str =
    "the floor (idemgen window); clients that resume after a restart need hours or days";

/// `window` → the smallest window both bounds accept.
pub fn window(context: &OperationContext<'_>, contract: &Contract) -> Option<Offer> {
    let window = contract.window_ms.as_ref()?;
    let smallest = compute(&WindowInputs::of(contract)).smallest_safe_ms?;
    let mut editor = Editor::new(context.workspace);
    editor.replace_scalar_noting(
        window.origin.span,
        &Emit::str(format_ms(smallest)),
        Some(WINDOW_FLOOR_NOTE),
    )?;
    editor.finish(format!(
        "Set `window` to its floor, the smallest safe window, {}: a minimum, not a recommendation (clients that resume a request after a restart need hours or days)",
        format_ms(smallest)
    ))
}

/// What a response the contract promises is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    InProgress,
    Conflict,
    MissingKey,
}

/// Declares the response for `status`, with a `Retry-After` header for
/// the in-progress answer (added to an existing response that lacks it).
pub fn declare_response(
    context: &OperationContext<'_>,
    status: u16,
    answer: Answer,
) -> Option<Offer> {
    let mut editor = Editor::new(context.workspace);
    let title = match context.response(status) {
        Some(response) => {
            if answer != Answer::InProgress
                || context.response_header(response, "Retry-After").is_some()
            {
                return None;
            }
            editor.set(response, &["headers", "Retry-After"], retry_after_header())?;
            format!("Declare a `Retry-After` header on response {status}")
        }
        None => {
            let description = match answer {
                Answer::InProgress => {
                    "A request with this idempotency key is still being processed; retry with the same key after `Retry-After` seconds."
                }
                Answer::Conflict => {
                    "This idempotency key was already used with a different request; the first request's result stands."
                }
                Answer::MissingKey => {
                    "The idempotency key is missing, malformed or too long; nothing was processed."
                }
            };
            let mut response = vec![("description", Emit::str(description))];
            if answer == Answer::InProgress {
                response.push((
                    "headers",
                    Emit::map([("Retry-After", retry_after_header())]),
                ));
            }
            editor.set(
                context.operation.node,
                &["responses", &status.to_string()],
                Emit::map(response),
            )?;
            format!("Declare response {status}")
        }
    };
    editor.finish(title)
}

fn retry_after_header() -> Emit {
    Emit::map([
        ("required", Emit::Bool(true)),
        (
            "description",
            Emit::str("Whole seconds to wait before retrying with the same key."),
        ),
        (
            "schema",
            Emit::map([("type", Emit::str("integer")), ("minimum", Emit::Int(1))]),
        ),
    ])
}

/// The schema a key parameter gets: the contract's template as `pattern`,
/// its worst-case length as `maxLength`.
pub(crate) fn key_schema_value(template: &KeyTemplate, max_length: u64) -> Emit {
    Emit::map([
        ("type", Emit::str("string")),
        ("pattern", Emit::str(template.schema_pattern())),
        ("maxLength", Emit::Int(max_length as i64)),
    ])
}

/// A key-like input an operation already accepts.
pub(crate) struct KeyInput {
    pub(crate) location: KeyLocation,
    /// Parameter name, or JSON pointer for a body field.
    pub(crate) name: String,
    pub(crate) required: bool,
    /// Whether the API already takes it (not a header the fix adds).
    pub(crate) existing: bool,
    pub(crate) max_length: Option<u64>,
    /// The name the key's template is derived from when its declaration
    /// is shared with other operations (a parameter or schema under
    /// `components`): every operation then guesses the same template.
    pub(crate) shared_name: Option<String>,
    /// The `pattern` its schema already has: the template when it spells
    /// one (the author's keys are kept, not replaced by a guess).
    pub(crate) pattern: Option<String>,
    /// What its schema's own `pattern` and `maxLength` say, as
    /// `key-schema-mismatch` reads them once the contract exists.
    pub(crate) written: WrittenSchema,
    /// How long the API says it keeps keys, from the key's description
    /// ("The server stores keys for 45 days"): the contract's window.
    pub(crate) stated_window_ms: Option<u64>,
}

/// The `pattern` and `maxLength` a key's schema itself holds (not through
/// `allOf`): the values `key-schema-mismatch` compares with the contract
/// and, where they differ, overwrites.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WrittenSchema {
    /// `None`: no `pattern`; `Some(None)`: one that is not a string.
    pub(crate) pattern: Option<Option<String>>,
    /// `None`: no `maxLength`; `Some(None)`: one that is not an integer.
    pub(crate) max_length: Option<Option<i64>>,
}

impl WrittenSchema {
    fn of(context: &OperationContext<'_>, schema: Option<&Node>) -> WrittenSchema {
        let Some(schema) = schema.and_then(|schema| context.workspace.deref(schema)) else {
            return WrittenSchema::default();
        };
        WrittenSchema {
            pattern: schema
                .get("pattern")
                .map(|node| node.as_str().map(str::to_string)),
            max_length: schema.get("maxLength").map(|node| match node.value {
                idemgen_spec::Value::Int(length) => Some(length),
                _ => None,
            }),
        }
    }

    /// Whether a contract with `template` and `max_length` agrees with
    /// what the schema says, so no later fix rewrites the author's values.
    fn agrees(&self, template: &KeyTemplate, max_length: u64) -> bool {
        let pattern_ok = match &self.pattern {
            None => true,
            Some(pattern) => pattern
                .as_deref()
                .is_some_and(|pattern| template.pattern_matches(pattern)),
        };
        let length_ok = match self.max_length {
            None => true,
            Some(length) => {
                length.and_then(|length| u64::try_from(length).ok()) == Some(max_length)
            }
        };
        pattern_ok && length_ok
    }
}

pub(crate) fn key_input(context: &OperationContext<'_>) -> Option<KeyInput> {
    let from_parameter = context.parameters().into_iter().find_map(|parameter| {
        let name = parameter.get("name").and_then(Node::as_str)?;
        let location = match parameter.get("in").and_then(Node::as_str)? {
            "header" => KeyLocation::Header,
            "query" => KeyLocation::Query,
            _ => return None,
        };
        let description = parameter.get("description").and_then(Node::as_str);
        is_idempotency_key(name, description).then(|| KeyInput {
            shared_name: shared_name(context, parameter),
            location,
            name: name.to_string(),
            required: parameter.get("required").and_then(Node::as_bool) == Some(true),
            existing: true,
            max_length: parameter
                .get("schema")
                .and_then(|schema| context.max_length(schema))
                .map(|length| length as u64)
                .or_else(|| description.and_then(stated_max_length)),
            stated_window_ms: description.and_then(stated_retention_ms),
            pattern: parameter
                .get("schema")
                .and_then(|schema| pattern_of(context, schema)),
            written: WrittenSchema::of(context, parameter.get("schema")),
        })
    });
    from_parameter.or_else(|| {
        let schema = context.request_schema()?;
        let properties = context.workspace.deref(schema.get("properties")?)?;
        let entry = properties.as_map()?.iter().find(|entry| {
            let field = context.workspace.deref(&entry.value);
            let description = field
                .and_then(|f| f.get("description"))
                .and_then(Node::as_str);
            is_idempotency_key(&entry.key, description)
        })?;
        let required = schema
            .get("required")
            .and_then(Node::as_seq)
            .is_some_and(|names| names.iter().any(|name| name.as_str() == Some(&entry.key)));
        let description = context
            .workspace
            .deref(&entry.value)
            .and_then(|field| field.get("description"))
            .and_then(Node::as_str);
        Some(KeyInput {
            shared_name: shared_name(context, schema),
            location: KeyLocation::Body,
            name: idemgen_spec::node::pointer_join("", &entry.key),
            required,
            existing: true,
            max_length: context
                .max_length(&entry.value)
                .map(|length| length as u64)
                .or_else(|| description.and_then(stated_max_length)),
            stated_window_ms: description.and_then(stated_retention_ms),
            pattern: pattern_of(context, &entry.value),
            written: WrittenSchema::of(context, Some(&entry.value)),
        })
    })
}

/// "a maximum of 64 characters", "at most 64 characters", "max 64
/// characters" in a key's description: the longest key the API accepts.
pub(crate) fn stated_max_length(description: &str) -> Option<u64> {
    let words: Vec<String> = description
        .to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty() && *word != "of")
        .map(str::to_string)
        .collect();
    words.windows(3).find_map(|three| {
        let bound = matches!(three[0].as_str(), "maximum" | "max" | "most" | "to");
        let unit = matches!(three[2].as_str(), "characters" | "chars" | "bytes");
        (bound && unit)
            .then(|| three[1].parse::<u64>().ok())
            .flatten()
    })
}

/// "The server stores keys for 6 hours" (PayPal), "keys are kept for 24
/// hours", "expire after 45 days": how long the API keeps a key, when a
/// sentence that speaks of keys being kept states it. "forever" states no
/// window.
pub(crate) fn stated_retention_ms(description: &str) -> Option<u64> {
    description.split(['.', ';']).find_map(|sentence| {
        let sentence = sentence.to_ascii_lowercase();
        let kept = ["store", "kept", "keep", "retain", "remember", "expire"]
            .iter()
            .any(|verb| sentence.contains(verb));
        if !sentence.contains("key") || !kept {
            return None;
        }
        let words: Vec<&str> = sentence.split_whitespace().collect();
        words.windows(2).find_map(|pair| {
            let count: u64 = pair[0].parse().ok()?;
            let unit = match pair[1].trim_end_matches([',', ')']) {
                "second" | "seconds" => 1_000,
                "minute" | "minutes" => 60_000,
                "hour" | "hours" => 3_600_000,
                "day" | "days" => 86_400_000,
                _ => return None,
            };
            (count > 0).then(|| count * unit)
        })
    })
}

/// The `pattern` of a schema (through `$ref`s).
fn pattern_of(context: &OperationContext<'_>, schema: &Node) -> Option<String> {
    let schema = context.workspace.deref(schema)?;
    schema
        .get("pattern")
        .and_then(Node::as_str)
        .map(str::to_string)
}

/// For a key declared outside the operation (under `components`, or in
/// another file), the name every operation that shares it derives the
/// same template from: the schema's name for a body field, the API's
/// title for a shared parameter.
fn shared_name(context: &OperationContext<'_>, node: &Node) -> Option<String> {
    let pointer = context.workspace.pointer_at(node.span);
    if pointer.starts_with(&context.operation.pointer) && !pointer.contains('#') {
        return None;
    }
    let segments: Vec<&str> = pointer.rsplit('#').next()?.split('/').collect();
    let schema_name = segments
        .windows(2)
        .find(|pair| pair[0] == "schemas")
        .map(|pair| pair[1].replace("~1", "/").replace("~0", "~"));
    schema_name.or_else(|| {
        let title = context
            .workspace
            .root()
            .get("info")?
            .get("title")?
            .as_str()?;
        Some(title.to_string())
    })
}

/// Writes the operation's block (and the document's defaults when it has
/// none); returns the key template and max-length chosen.
pub(crate) fn contract_block(
    context: &OperationContext<'_>,
    defaults: &FixDefaults,
    input: &KeyInput,
    editor: &mut Editor<'_>,
) -> Option<(KeyTemplate, u64)> {
    let root = context.workspace.root();
    let document = root
        .get("x-idempotency")
        .filter(|block| block.as_map().is_some())
        .map(|block| parse_block(block, "/x-idempotency", &mut Vec::new()))
        .unwrap_or_default();
    let timeout = document.client_timeout.as_ref().map(|t| t.value);
    let max_processing = document.server_max_processing.as_ref().map(|t| t.value);
    let retries: Option<Vec<u64>> = match &document.client_retries {
        Some(retries) => Some(retries.value.iter().map(|delay| delay.value).collect()),
        // The document states a timeout and no retries: the contract's
        // default, none.
        None if timeout.is_some() => Some(Vec::new()),
        None => defaults.retries_ms.clone(),
    };
    let jitter = document.client_jitter.as_ref().map_or(0, |j| j.value);
    // Document-level values for what the document does not say yet: the
    // command line's, else placeholders that lint as errors (a guess
    // would read as a decision nobody made).
    let duration_or_placeholder = |value: Option<u64>, field: &str| match value {
        Some(ms) => Emit::str(format_ms(ms)),
        None => Emit::str(placeholder::text(field)),
    };
    // A value written but unreadable (a placeholder not filled in yet, a
    // typo) is the author's to mend: it is never overwritten.
    let written = |field| document.invalid.contains(&field);
    let mut client = Vec::new();
    if timeout.is_none() && !written("client.timeout") {
        client.push((
            "timeout",
            duration_or_placeholder(defaults.timeout_ms, "client.timeout"),
        ));
        if document.client_retries.is_none() && !written("client.retries") {
            let value = match &retries {
                Some(retries) => {
                    Emit::Seq(retries.iter().map(|ms| Emit::str(format_ms(*ms))).collect())
                }
                None => Emit::str(placeholder::text("client.retries")),
            };
            client.push(("retries", value));
        }
    }
    let mut server = Vec::new();
    if max_processing.is_none() && !written("server.max-processing") {
        server.push((
            "max-processing",
            duration_or_placeholder(defaults.max_processing_ms, "server.max-processing"),
        ));
    }
    let mut store = Vec::new();
    if let (Some(dialect), None) = (defaults.dialect, &document.store_dialect) {
        store.push(("dialect", Emit::str(dialect.name())));
    }
    let mut sections: Vec<(&str, Vec<(&str, Emit)>)> =
        [("client", client), ("server", server), ("store", store)]
            .into_iter()
            .filter(|(_, fields)| !fields.is_empty())
            .collect();
    // Guesses written at the document level reach every other contract
    // too: a window the author set for timeouts the document does not
    // state would turn "too short" and be rewritten to fit a guess. Where
    // another operation has a contract, the guesses stay in this one's.
    let own_sections = if other_contracts(context) {
        std::mem::take(&mut sections)
    } else {
        Vec::new()
    };
    if !sections.is_empty() {
        match root.get("x-idempotency") {
            None => {
                let block = Emit::map(
                    sections
                        .into_iter()
                        .map(|(name, fields)| (name, Emit::map(fields))),
                );
                editor.insert(root, Some("info"), "x-idempotency", &block)?;
            }
            Some(block) => {
                for (name, fields) in sections {
                    let has_section = context
                        .workspace
                        .deref(block)
                        .is_some_and(|block| block.get(name).is_some());
                    if has_section {
                        for (field, value) in fields {
                            editor.set(block, &[name, field], value)?;
                        }
                    } else {
                        // One new section with all its fields: a `set` a
                        // field would add the section once per field.
                        editor.set(block, &[name], Emit::map(fields))?;
                    }
                }
            }
        }
    }
    // The smallest safe window, when every value it needs is known.
    let computed = match (
        timeout.or(defaults.timeout_ms),
        &retries,
        max_processing.or(defaults.max_processing_ms),
    ) {
        (Some(timeout), Some(retries), Some(max_processing)) => {
            Some(window_for(timeout, retries, jitter, max_processing)?)
        }
        _ => None,
    };
    // What the API says it keeps keys for wins, when it is long enough
    // for the values known (`window-too-short` checks it again once the
    // placeholders are filled in); else the smallest safe window; else a
    // placeholder.
    let window = match (input.stated_window_ms, computed) {
        (Some(stated), Some(computed)) => Emit::str(format_ms(stated.max(computed))),
        (Some(stated), None) => Emit::str(format_ms(stated)),
        (None, Some(computed)) => Emit::str(format_ms(computed)),
        (None, None) => Emit::str(placeholder::text("window")),
    };
    let (template, max_length) = guess_template(context, input)?;
    let mut key = vec![
        ("in", Emit::str(input.location.name())),
        ("name", Emit::str(&input.name)),
        ("format", Emit::str(&template.source)),
    ];
    if input.max_length.is_some() {
        key.push(("max-length", Emit::Int(max_length as i64)));
    }
    let mut block = vec![("key", Emit::map(key)), ("window", window)];
    block.extend(
        own_sections
            .into_iter()
            .map(|(name, fields)| (name, Emit::map(fields))),
    );
    if !input.required {
        // The API lets clients leave the key out; the `stripe` profile is
        // the one whose key is optional.
        block.insert(0, ("profile", Emit::str("stripe")));
    } else if input.existing && template.is_opaque() {
        // A required key of the client's own shape: the IETF draft's.
        block.insert(0, ("profile", Emit::str("ietf-draft")));
    }
    editor.insert(
        context.operation.node,
        None,
        "x-idempotency",
        &Emit::map(block),
    )?;
    Some((template, max_length))
}

/// Whether an operation other than this one has an `x-idempotency` block.
fn other_contracts(context: &OperationContext<'_>) -> bool {
    let own = usize::from(idemgen_spec::operations::has_contract_block(
        context.operation,
    ));
    context.workspace.operations_with_a_contract_block() > own
}

fn window_for(timeout: u64, retries: &[u64], jitter: u64, processing: u64) -> Option<u64> {
    let inputs = WindowInputs {
        timeout_ms: Some(timeout),
        retries_ms: retries.to_vec(),
        jitter_ms: jitter,
        processing_ms: Some(processing),
        window_ms: None,
    };
    compute(&inputs).smallest_safe_ms
}

/// The template a key schema's `pattern` spells, else
/// `<operation>:{uuid}`, shortened (or with a shorter random segment) to
/// fit the key's existing `maxLength`. `None` when the schema says
/// something no contract agrees with (a `pattern` that spells no
/// template, a `maxLength` that is no valid `key.max-length`, a template
/// longer than it): a guessed contract would contradict the author, and
/// `key-schema-mismatch` would then overwrite the author's values with
/// the guess. The finding is then left for the author to settle.
fn guess_template(context: &OperationContext<'_>, input: &KeyInput) -> Option<(KeyTemplate, u64)> {
    let (template, max_length) = guess_unchecked(context, input)?;
    let fits = template
        .max_len(|_| None)
        .is_some_and(|longest| longest as u64 <= max_length);
    (fits && (1..=65_535).contains(&max_length) && input.written.agrees(&template, max_length))
        .then_some((template, max_length))
}

fn guess_unchecked(context: &OperationContext<'_>, input: &KeyInput) -> Option<(KeyTemplate, u64)> {
    let limit = input
        .max_length
        .unwrap_or(idemgen_spec::contract::model::DEFAULT_MAX_KEY_LENGTH);
    let name =
        input.shared_name.clone().unwrap_or_else(|| {
            context.operation.operation_id.clone().unwrap_or_else(|| {
                format!("{} {}", context.operation.method, context.operation.path)
            })
        });
    if let Some(template) = input.pattern.as_deref().and_then(KeyTemplate::from_pattern) {
        return Some((template, limit));
    }
    if input.existing && input.pattern.is_none() {
        // A key the API already takes, whose schema says nothing of its
        // shape: today's clients send whatever they send (Adyen and PayPal
        // suggest a bare UUID, Square "any valid string"). A business
        // prefix would turn them away; `{opaque}` accepts any key up to
        // the limit, and under the profiles of client-chosen keys
        // (`stripe` for an optional key, `ietf-draft` for a required one)
        // such a key needs no prefix.
        let template = KeyTemplate::parse("{opaque}").ok()?;
        return Some((template, limit));
    }
    let prefix = kebab(&name);
    for (segment, length) in [("{uuid}", 36), ("{ulid}", 26), ("{random:16}", 22)] {
        let Some(room) = limit.checked_sub(length + 1) else {
            continue; // a shorter random segment may fit
        };
        let room = room as usize;
        let prefix: String = prefix.chars().take(room.min(48)).collect();
        let prefix = prefix.trim_end_matches(['-', '.', '_']);
        if prefix.len() >= 2 {
            let template = KeyTemplate::parse(&format!("{prefix}:{segment}")).ok()?;
            return Some((template, limit));
        }
    }
    None
}

/// `createPaymentIntent` or `POST /v1/payment_intents` → a business
/// prefix such as `create-payment-intent` or `post-v1-payment-intents`.
fn kebab(name: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && previous_lower && !out.ends_with('-') {
                out.push('-');
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
            previous_lower = false;
        }
    }
    let trimmed = out.trim_matches('-');
    let start = trimmed
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(trimmed.len());
    let prefix = &trimmed[start..];
    if prefix.is_empty() {
        "op".into()
    } else {
        prefix.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::{kebab, stated_max_length, stated_retention_ms};

    #[test]
    fn what_key_descriptions_state() {
        // PayPal's and Adyen's own words.
        assert_eq!(
            stated_retention_ms("The server stores keys for 45 days."),
            Some(45 * 86_400_000)
        );
        assert_eq!(
            stated_retention_ms(
                "The server stores keys for 6 hours. The API callers can request the times to up to 72 hours by speaking to their Account Manager."
            ),
            Some(6 * 3_600_000)
        );
        assert_eq!(stated_retention_ms("The server stores keys forever."), None);
        assert_eq!(stated_retention_ms("Retry after 5 seconds."), None);
        assert_eq!(
            stated_max_length(
                "A unique identifier for the message with a maximum of 64 characters (we recommend a UUID)."
            ),
            Some(64)
        );
        assert_eq!(stated_max_length("A unique identifier."), None);
    }

    #[test]
    fn prefixes_from_operation_names() {
        assert_eq!(kebab("createPaymentIntent"), "create-payment-intent");
        assert_eq!(kebab("POST /v1/payment_intents"), "post-v1-payment-intents");
        assert_eq!(kebab("orders.create"), "orders-create");
        assert_eq!(kebab("PostPayments"), "post-payments");
        assert_eq!(kebab("123"), "op");
    }
}
