//! `--observe 'GET /orders/{order_no}=/payments'`: a read endpoint of the
//! service that counts a key's effects (payments made, rows written), so
//! the checks that send one key several times can count how often the
//! step took effect instead of inferring it from answers and replay marks.
//!
//! The read is a GET on the first `--base-url`, its `{…}` placeholders
//! filled from the request the check sends for its key (its path and query
//! parameters, its body, its key); the count is the number, or the length
//! of the array, at the JSON pointer after `=`. It is read once before any
//! check runs (anything wrong with it is a usage error), then before and
//! after each counted check.

use serde_json::Value;

use crate::http::{Answer, Client, Outgoing, SendError};
use crate::request::{Event, KeyUse, Plan, percent_encode};

/// What `--observe` reads, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observe {
    /// The option's value, for messages.
    pub text: String,
    /// Path and query, `{…}` placeholders included.
    target: String,
    /// JSON pointer to the count; empty: the whole document.
    pub pointer: String,
}

/// One reading of the count, for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// `GET /orders/ORD-1`, as sent.
    pub read: String,
    pub count: u64,
}

/// How `--observe` is written, for messages.
const SYNTAX: &str = "write it as 'GET /orders/{order_no}=/payments': a read's path (its {NAME} filled from the probe's request), `=`, and the JSON pointer to a number or an array whose length is the count";

impl Observe {
    /// Parses `[GET ]PATH=POINTER`: the read's path and query, with
    /// `{NAME}` or `{/pointer}` placeholders, then, after the last `=`, a
    /// JSON pointer (empty: the whole document).
    pub fn parse(text: &str) -> Result<Observe, String> {
        let given = text.trim();
        let rest = match given.split_once(char::is_whitespace) {
            Some((method, rest)) if !method.starts_with('/') => {
                if !method.eq_ignore_ascii_case("GET") {
                    return Err(format!(
                        "`{method}`: the count is read with GET, never a write; {SYNTAX}"
                    ));
                }
                rest.trim_start()
            }
            _ => given,
        };
        let Some((target, pointer)) = rest.rsplit_once('=') else {
            return Err(format!("no `=` before the count's JSON pointer; {SYNTAX}"));
        };
        if !target.starts_with('/') {
            return Err(format!(
                "`{target}` is not a path on the service (it must start with `/`, and the read goes to the first --base-url); {SYNTAX}"
            ));
        }
        if let Some(bad) = target
            .chars()
            .find(|c| c.is_whitespace() || c.is_control() || *c == '#')
        {
            return Err(format!(
                "`{target}` holds {bad:?}, which a request target cannot; percent-encode it"
            ));
        }
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return Err(format!(
                "`{pointer}` is not a JSON pointer; write `=/{pointer}` (or `=` alone for a document that is the number or the array)"
            ));
        }
        let observe = Observe {
            text: given.to_string(),
            target: target.to_string(),
            pointer: pointer.to_string(),
        };
        observe.placeholders()?;
        Ok(observe)
    }

    /// The `{…}` names of the target, in order.
    fn placeholders(&self) -> Result<Vec<&str>, String> {
        let mut names = Vec::new();
        let mut rest = self.target.as_str();
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(format!("`{}` has a `}}` without its `{{`", self.target));
            }
            let after = &rest[open + 1..];
            let close = after
                .find(['{', '}'])
                .filter(|at| after[*at..].starts_with('}'))
                .ok_or_else(|| format!("`{}` has a `{{` without its `}}`", self.target))?;
            let name = &after[..close];
            if name.is_empty() {
                return Err(format!(
                    "`{}` has an empty `{{}}`; name a parameter or body field, e.g. {{order_no}}",
                    self.target
                ));
            }
            names.push(name);
            rest = &after[close + 1..];
        }
        Ok(names)
    }

    /// The target for `event`'s request: each placeholder filled and
    /// percent-encoded. `Err` names a placeholder nothing fills.
    pub fn target(&self, plan: &Plan, event: &Event) -> Result<String, String> {
        let mut target = String::with_capacity(self.target.len());
        let mut rest = self.target.as_str();
        while let Some(open) = rest.find('{') {
            target.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after.find('}').unwrap_or(after.len());
            let name = &after[..close];
            let value = placeholder_value(name, plan, event).ok_or_else(|| {
                if name.starts_with('/') {
                    format!(
                        "`{{{name}}}`: the request body has no number, string or boolean at `{name}`; fill it with --set {name}=VALUE, or name a path or query parameter"
                    )
                } else {
                    format!(
                        "`{{{name}}}` names no path or query parameter of the operation, no --param and no top-level field of its request body; fill it with --param {name}=VALUE or --set /{name}=VALUE"
                    )
                }
            })?;
            target.push_str(&percent_encode(&value));
            rest = after.get(close + 1..).unwrap_or("");
        }
        target.push_str(rest);
        Ok(target)
    }

    /// Reads the count for `event` on the first instance, with the
    /// request's headers (credentials, `--header`, scope values) and no
    /// key. `Err` says what went wrong and how to fix it.
    pub fn read(&self, client: &Client, plan: &Plan, event: &Event) -> Result<Reading, String> {
        let target = self.target(plan, event)?;
        let mut headers = plan.request(event, KeyUse::Missing).headers;
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case("content-type"));
        headers.push(("Accept".into(), "application/json".into()));
        let read = format!("GET {target}");
        let answer = client
            .send_to(
                0,
                &Outgoing {
                    method: "GET".into(),
                    target,
                    headers,
                    body: None,
                },
            )
            .map_err(|error| match error {
                SendError::Transport(_) => format!("{read}: {error}"),
                other => format!("{read} was not sent: {other}"),
            })?;
        let count = self.count(&answer).map_err(|why| format!("{read} {why}"))?;
        Ok(Reading { read, count })
    }

    /// The count `answer` holds, or what is wrong with it.
    fn count(&self, answer: &Answer) -> Result<u64, String> {
        if !answer.is_success() {
            return Err(format!(
                "answered {}: {}; --observe needs a read that answers 2xx for the probe's request (an order that exists: --param, --set, --example)",
                answer.describe(),
                answer.excerpt()
            ));
        }
        if answer.cut {
            return Err(
                "answered more than 1 MiB, more than the probe reads; point --observe at a smaller read (one key's, one order's)"
                    .into(),
            );
        }
        let document: Value = serde_json::from_slice(&answer.body).map_err(|error| {
            format!(
                "answered a body that is not JSON ({error}): {}; --observe needs a JSON read",
                answer.excerpt()
            )
        })?;
        let shown = if self.pointer.is_empty() {
            "the document".to_string()
        } else {
            format!("`{}`", self.pointer)
        };
        let Some(value) = document.pointer(&self.pointer) else {
            let keys = match &document {
                Value::Object(map) => format!(
                    " (its top-level names: {})",
                    map.keys()
                        .take(12)
                        .map(|key| format!("/{}", key.replace('~', "~0").replace('/', "~1")))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                _ => String::new(),
            };
            return Err(format!(
                "answered JSON without {shown}{keys}; give the pointer to the count after `=`"
            ));
        };
        match value {
            Value::Array(items) => Ok(items.len() as u64),
            Value::Number(number) => number.as_u64().ok_or_else(|| {
                format!("answered {number} at {shown}, not a count (a whole number, 0 or more)")
            }),
            other => Err(format!(
                "answered {} at {shown}, not a count; point at a number, or an array whose length is the count",
                kind(other)
            )),
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::String(_) => "a string",
        Value::Object(_) => "an object",
        Value::Number(_) => "a number",
        Value::Array(_) => "an array",
    }
}

/// What fills `{name}` for `event`: `{/pointer}` is the body's value
/// there; `{NAME}` a path or query parameter (as the probe sends it, or
/// `--param`), else the body's top-level field, else, for `{key}`, the
/// key. Only numbers, strings and booleans fill one.
fn placeholder_value(name: &str, plan: &Plan, event: &Event) -> Option<String> {
    let text = |value: &Value| match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    };
    if name.starts_with('/') {
        return event.body.as_ref()?.pointer(name).and_then(text);
    }
    if let Some((_, value)) = plan.params.iter().find(|(given, _)| given == name) {
        return Some(value.clone());
    }
    if let Some(value) = event
        .body
        .as_ref()
        .and_then(|body| body.get(name))
        .and_then(text)
    {
        return Some(value);
    }
    (name == "key").then(|| event.key.clone())
}

/// A check's counts for one key, before and after its requests.
#[derive(Debug, Clone)]
pub enum Effects {
    /// No `--observe`.
    Unobserved,
    /// Read before and after.
    Counted(EffectCount),
    /// A reading failed: why.
    Unread(String),
}

/// The count around one check's requests for one key, as the JSON report
/// gives it (`effects`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectCount {
    /// `GET /orders/ORD-1`, as sent.
    pub read: String,
    /// The JSON pointer read (empty: the document).
    pub pointer: String,
    pub before: u64,
    pub after: u64,
}

impl EffectCount {
    /// `/payments of GET /orders/ORD-1`.
    pub fn label(&self) -> String {
        if self.pointer.is_empty() {
            format!("the count of {}", self.read)
        } else {
            format!("`{}` of {}", self.pointer, self.read)
        }
    }

    /// How much it rose (negative: fell).
    pub fn rose(&self) -> i128 {
        i128::from(self.after) - i128::from(self.before)
    }
}

impl Effects {
    /// How much the count rose, when it was read both times.
    pub fn rose(&self) -> Option<i128> {
        match self {
            Effects::Counted(count) => Some(count.rose()),
            _ => None,
        }
    }

    /// The count shows the step took effect exactly once.
    pub fn once(&self) -> bool {
        self.rose() == Some(1)
    }

    /// The count shows the step took effect at least once, so it, not
    /// the answers, says how often.
    pub fn decides(&self) -> bool {
        self.rose().is_some_and(|rose| rose >= 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
            cut: false,
            instance: 0,
            sent: std::time::Duration::ZERO,
            received: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn the_syntax() {
        let observe = Observe::parse("GET /orders/{order_no}=/payments").unwrap();
        assert_eq!(observe.target, "/orders/{order_no}");
        assert_eq!(observe.pointer, "/payments");
        assert_eq!(observe.placeholders().unwrap(), ["order_no"]);
        // The method is optional, the last `=` ends the path, and an
        // empty pointer is the whole document.
        let observe = Observe::parse("/payments?order={/order_no}&state=paid=").unwrap();
        assert_eq!(observe.target, "/payments?order={/order_no}&state=paid");
        assert_eq!(observe.pointer, "");
        assert_eq!(observe.placeholders().unwrap(), ["/order_no"]);

        for (bad, says) in [
            ("POST /orders=/n", "read with GET"),
            ("/orders/{order_no}", "no `=`"),
            ("orders=/n", "must start with `/`"),
            ("/orders=payments", "write `=/payments`"),
            ("/orders/{order_no=/n", "without its `}`"),
            ("/orders/}x=/n", "without its `{`"),
            ("/orders/{}=/n", "empty `{}`"),
            ("/or ders=/n", "percent-encode"),
        ] {
            let error = Observe::parse(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn counts_are_numbers_or_array_lengths() {
        let at = |pointer: &str| Observe::parse(&format!("/x={pointer}")).unwrap();
        let body = r#"{"payments":[1,2,3],"total":2,"state":"paid","neg":-1,"half":1.5}"#;
        assert_eq!(at("/payments").count(&answer(200, body)), Ok(3));
        assert_eq!(at("/total").count(&answer(200, body)), Ok(2));
        assert_eq!(at("").count(&answer(200, "[]")), Ok(0));
        assert_eq!(at("").count(&answer(200, "7")), Ok(7));
        for (pointer, status, body, says) in [
            ("/payments", 404, "{}", "answered 404 Not Found"),
            ("/payments", 200, "<html>", "not JSON"),
            (
                "/nope",
                200,
                body,
                "without `/nope` (its top-level names: /half",
            ),
            ("/state", 200, body, "a string at `/state`, not a count"),
            ("/neg", 200, body, "-1 at `/neg`, not a count"),
            ("/half", 200, body, "1.5 at `/half`, not a count"),
            ("", 200, body, "an object at the document"),
        ] {
            let error = at(pointer).count(&answer(status, body)).unwrap_err();
            assert!(error.contains(says), "{pointer}: {error}");
        }
        let mut cut = answer(200, "[1,");
        cut.cut = true;
        assert!(at("").count(&cut).unwrap_err().contains("more than 1 MiB"));
    }
}
