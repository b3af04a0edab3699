//! A value that satisfies a JSON Schema, for request bodies and parameters
//! the spec gives no example for: `$ref`s followed, `allOf` merged, the
//! first `oneOf`/`anyOf` branch, `const`/`example`/`default`/`enum` first,
//! then formats, bounds and simple patterns.

use serde_json::{Map, Number, Value};

use idemgen_spec::{Node, Workspace};

use super::key::{Rng, today};

/// Deepest schema nesting followed; deeper values are `null`.
const MAX_DEPTH: usize = 24;

pub struct Sampler<'a> {
    pub workspace: &'a Workspace,
    pub rng: &'a mut Rng,
}

impl Sampler<'_> {
    pub fn sample(&mut self, schema: &Node) -> Value {
        self.value(schema, 0)
    }

    fn value(&mut self, schema: &Node, depth: usize) -> Value {
        let Some(schema) = self.workspace.deref(schema).filter(|_| depth < MAX_DEPTH) else {
            return Value::Null;
        };
        for given in ["const", "example", "default"] {
            if let Some(value) = schema.get(given) {
                return value.to_json();
            }
        }
        if let Some(first) = schema
            .get("examples")
            .and_then(Node::as_seq)
            .and_then(|items| items.first())
        {
            return first.to_json();
        }
        if let Some(choice) = schema.get("enum").and_then(Node::as_seq).and_then(|items| {
            items
                .iter()
                .map(Node::to_json)
                .find(|value| !value.is_null())
        }) {
            return choice;
        }
        if let Some(branches) = schema.get("allOf").and_then(Node::as_seq) {
            let mut merged = self.typed(schema, depth);
            for branch in branches {
                match (&mut merged, self.value(branch, depth + 1)) {
                    (Value::Object(into), Value::Object(from)) => into.extend(from),
                    (slot @ Value::Null, value) => *slot = value,
                    _ => {}
                }
            }
            return merged;
        }
        for combinator in ["oneOf", "anyOf"] {
            if let Some(first) = schema
                .get(combinator)
                .and_then(Node::as_seq)
                .and_then(|branches| branches.first())
            {
                return self.value(first, depth + 1);
            }
        }
        self.typed(schema, depth)
    }

    /// A value from `type` and its constraints (`Null` for an untyped
    /// schema without properties, so `allOf` branches fill it).
    fn typed(&mut self, schema: &Node, depth: usize) -> Value {
        match schema_type(schema) {
            Some("object") => self.object(schema, depth),
            Some("array") => {
                let count = number(schema, "minItems").unwrap_or(1.0).max(1.0) as usize;
                let items = schema.get("items");
                Value::Array(
                    (0..count.min(16))
                        .map(|_| items.map_or(Value::Null, |items| self.value(items, depth + 1)))
                        .collect(),
                )
            }
            Some("string") => Value::String(self.string(schema)),
            Some("integer") => Value::from(integer(schema)),
            Some("number") => {
                Number::from_f64(integer(schema) as f64).map_or(Value::Null, Value::Number)
            }
            Some("boolean") => Value::Bool(true),
            _ => Value::Null,
        }
    }

    fn object(&mut self, schema: &Node, depth: usize) -> Value {
        let mut out = Map::new();
        let properties = schema
            .get("properties")
            .and_then(|node| self.workspace.deref(node))
            .and_then(Node::as_map)
            .unwrap_or_default();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Node::as_seq)
            .unwrap_or_default()
            .iter()
            .filter_map(Node::as_str)
            .collect();
        for entry in properties {
            // Servers set read-only properties; requests must not.
            let read_only = self
                .workspace
                .deref(&entry.value)
                .and_then(|property| property.get("readOnly"))
                .and_then(Node::as_bool)
                == Some(true);
            // Without a `required` list every property is filled in: a
            // fuller body is likelier to be accepted than an empty one.
            if !read_only && (required.is_empty() || required.contains(&&*entry.key)) {
                let value = self.value(&entry.value, depth + 1);
                out.insert(entry.key.to_string(), value);
            }
        }
        Value::Object(out)
    }

    fn string(&mut self, schema: &Node) -> String {
        let format = schema.get("format").and_then(Node::as_str).unwrap_or("");
        let (year, month, day) = {
            let date = today();
            (
                date[0..4].to_string(),
                date[4..6].to_string(),
                date[6..8].to_string(),
            )
        };
        let text = match format {
            "date-time" => format!("{year}-{month}-{day}T00:00:00Z"),
            "date" => format!("{year}-{month}-{day}"),
            "time" => "12:00:00Z".into(),
            "uuid" => self.rng.uuid(),
            "email" | "idn-email" => "probe@example.com".into(),
            "uri" | "url" | "iri" | "uri-reference" | "iri-reference" => {
                "https://example.com/probe".into()
            }
            "hostname" | "idn-hostname" => "example.com".into(),
            "ipv4" => "127.0.0.1".into(),
            "ipv6" => "::1".into(),
            "byte" => "cHJvYmU=".into(),
            _ => match schema
                .get("pattern")
                .and_then(Node::as_str)
                .and_then(from_pattern)
            {
                Some(text) => return text,
                None => "probe".into(),
            },
        };
        fit_length(text, schema)
    }
}

/// The schema's type: `type` (the first non-null of a 3.1 list), else
/// what its keywords imply.
fn schema_type(schema: &Node) -> Option<&str> {
    match schema.get("type") {
        Some(node) if node.as_str().is_some() => node.as_str(),
        Some(node) => node
            .as_seq()?
            .iter()
            .filter_map(Node::as_str)
            .find(|name| *name != "null"),
        None if schema.get("properties").is_some() => Some("object"),
        None if schema.get("items").is_some() => Some("array"),
        None if ["pattern", "format", "minLength", "maxLength"]
            .iter()
            .any(|key| schema.get(key).is_some()) =>
        {
            Some("string")
        }
        None => None,
    }
}

fn number(schema: &Node, key: &str) -> Option<f64> {
    match schema.get(key)?.value {
        idemgen_spec::Value::Int(value) => Some(value as f64),
        idemgen_spec::Value::Float(value) => Some(value),
        _ => None,
    }
}

/// The smallest allowed integer at or above 1 (else the largest allowed),
/// rounded up to `multipleOf`.
fn integer(schema: &Node) -> i64 {
    let exclusive_flag = |key| schema.get(key).and_then(Node::as_bool) == Some(true);
    let minimum = number(schema, "exclusiveMinimum")
        .map(|value| value.floor() as i64 + 1)
        .or_else(|| {
            number(schema, "minimum")
                .map(|value| value.ceil() as i64 + i64::from(exclusive_flag("exclusiveMinimum")))
        });
    let maximum = number(schema, "exclusiveMaximum")
        .map(|value| value.ceil() as i64 - 1)
        .or_else(|| {
            number(schema, "maximum")
                .map(|value| value.floor() as i64 - i64::from(exclusive_flag("exclusiveMaximum")))
        });
    let mut value = minimum.unwrap_or(1);
    if let Some(step) = number(schema, "multipleOf").filter(|step| *step >= 1.0) {
        let step = step as i64;
        value = value.div_euclid(step) * step + if value % step == 0 { 0 } else { step };
    }
    match maximum {
        Some(maximum) if value > maximum => maximum,
        _ => value,
    }
}

fn fit_length(mut text: String, schema: &Node) -> String {
    let min = number(schema, "minLength").unwrap_or(0.0) as usize;
    let max = number(schema, "maxLength").map(|max| max as usize);
    while text.chars().count() < min {
        text.push('x');
    }
    if let Some(max) = max.filter(|max| text.chars().count() > *max) {
        text = text.chars().take(max).collect();
    }
    text
}

/// A string matching a simple regular expression: literals, escapes
/// (`\d`, `\w`, `\.`), classes (`[A-Z0-9]`), groups with alternatives
/// (the first is taken) and quantifiers (`{n}`, `{n,m}`, `?`, `*`, `+`,
/// the least count). `None` for anything fancier.
pub fn from_pattern(pattern: &str) -> Option<String> {
    let pattern = pattern.strip_prefix('^').unwrap_or(pattern);
    let pattern = pattern.strip_suffix('$').unwrap_or(pattern);
    let chars: Vec<char> = pattern.chars().collect();
    let mut at = 0;
    let text = sequence(&chars, &mut at)?;
    (at == chars.len()).then_some(text)
}

/// Parses alternatives up to `)` or the end; returns the first one's text.
fn sequence(chars: &[char], at: &mut usize) -> Option<String> {
    let mut first: Option<String> = None;
    let mut current = String::new();
    while *at < chars.len() {
        let atom = match chars[*at] {
            ')' => break,
            '|' => {
                *at += 1;
                first.get_or_insert(std::mem::take(&mut current));
                continue;
            }
            '(' => {
                *at += 1;
                if chars.get(*at) == Some(&'?') {
                    // Only non-capturing groups `(?:…)`.
                    (chars.get(*at + 1) == Some(&':')).then_some(())?;
                    *at += 2;
                }
                let inner = sequence(chars, at)?;
                (chars.get(*at) == Some(&')')).then_some(())?;
                *at += 1;
                inner
            }
            '[' => {
                let close = chars[*at..].iter().position(|c| *c == ']')? + *at;
                let class = &chars[*at + 1..close];
                *at = close + 1;
                match class {
                    ['^', ..] | [] => return None,
                    ['\\', 'd', ..] => "0".into(),
                    ['\\', 'w', ..] => "a".into(),
                    [c, ..] => c.to_string(),
                }
            }
            '\\' => {
                let escaped = *chars.get(*at + 1)?;
                *at += 2;
                match escaped {
                    'd' => "0".into(),
                    'w' => "a".into(),
                    's' => " ".into(),
                    c if c.is_ascii_alphanumeric() => return None,
                    c => c.to_string(),
                }
            }
            '.' => {
                *at += 1;
                "x".into()
            }
            '^' | '$' | '*' | '+' | '?' | '{' => return None,
            c => {
                *at += 1;
                c.to_string()
            }
        };
        let count = quantifier(chars, at)?;
        current.push_str(&atom.repeat(count));
    }
    Some(first.unwrap_or(current))
}

/// The least repetition count of a quantifier after an atom (1 if none).
fn quantifier(chars: &[char], at: &mut usize) -> Option<usize> {
    let count = match chars.get(*at) {
        Some('?' | '*') => 0,
        Some('+') => 1,
        Some('{') => {
            let close = chars[*at..].iter().position(|c| *c == '}')? + *at;
            let inside: String = chars[*at + 1..close].iter().collect();
            let least = inside.split(',').next()?.trim().parse().ok()?;
            *at = close;
            least
        }
        _ => return Some(1),
    };
    *at += 1;
    if chars.get(*at) == Some(&'?') {
        *at += 1; // lazy: same least count
    }
    Some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_from_schemas() {
        let text = r##"openapi: 3.1.0
info: {title: t, version: "1"}
paths: {}
components:
  schemas:
    Base:
      type: object
      required: [id, kind]
      properties:
        id: {type: string, readOnly: true}
        kind: {type: string, enum: [card, wire]}
    Pay:
      allOf:
        - $ref: "#/components/schemas/Base"
        - type: object
          required: [amount, at, ref, tags, note]
          properties:
            amount: {type: integer, exclusiveMinimum: 10, multipleOf: 5}
            at: {type: string, format: date-time}
            ref: {type: string, pattern: "^R-[0-9]{4}$"}
            tags: {type: array, minItems: 2, items: {type: string, minLength: 3, maxLength: 3}}
            note: {type: [string, "null"], example: hi}
"##;
        let workspace = Workspace::from_text(
            std::path::Path::new("/tmp/spec.yaml"),
            "spec.yaml".into(),
            text.into(),
        )
        .unwrap();
        let schema = workspace
            .root()
            .get("components")
            .and_then(|c| c.get("schemas"))
            .and_then(|s| s.get("Pay"))
            .unwrap();
        let mut rng = Rng::new();
        let value = Sampler {
            workspace: &workspace,
            rng: &mut rng,
        }
        .sample(schema);
        assert_eq!(value["kind"], "card");
        assert!(value.get("id").is_none(), "{value}");
        assert_eq!(value["amount"], 15);
        assert!(value["at"].as_str().unwrap().ends_with("T00:00:00Z"));
        assert_eq!(value["ref"], "R-0000");
        assert_eq!(value["tags"], serde_json::json!(["pro", "pro"]));
        assert_eq!(value["note"], "hi");
    }

    #[test]
    fn patterns() {
        assert_eq!(from_pattern("^[0-9]{8}$").as_deref(), Some("00000000"));
        assert_eq!(
            from_pattern("^TXN-[A-Z]{2}\\d+$").as_deref(),
            Some("TXN-AA0")
        );
        assert_eq!(from_pattern("^(?:ab|cd)-x?$").as_deref(), Some("ab-"));
        assert_eq!(from_pattern("^[^:]+$"), None);
        assert_eq!(from_pattern("(?=x)"), None);
    }
}
