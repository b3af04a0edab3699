//! Values a fix inserts, written the way the surrounding file is: YAML
//! block or flow style, or JSON, pretty or compact.

use idemgen_spec::node::{Node, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Emit {
    Str(String),
    Int(i64),
    Bool(bool),
    Float(f64),
    Null,
    Map(Vec<(String, Emit)>),
    Seq(Vec<Emit>),
}

/// Longest flow mapping or list written on the key's own line.
const FLOW_WIDTH: usize = 72;

impl Emit {
    /// `node` as text to write (an overlaid spec, a changed value).
    pub fn of_node(node: &Node) -> Emit {
        match &node.value {
            Value::Null => Emit::Null,
            Value::Bool(flag) => Emit::Bool(*flag),
            Value::Int(number) => Emit::Int(*number),
            Value::Float(number) => Emit::Float(*number),
            Value::Str(text) => Emit::str(text.to_string()),
            Value::Seq(items) => Emit::Seq(items.iter().map(Emit::of_node).collect()),
            Value::Map(entries) => Emit::Map(
                entries
                    .iter()
                    .map(|entry| (entry.key.to_string(), Emit::of_node(&entry.value)))
                    .collect(),
            ),
        }
    }

    pub fn str(text: impl Into<String>) -> Emit {
        Emit::Str(text.into())
    }

    pub fn map<'k>(entries: impl IntoIterator<Item = (&'k str, Emit)>) -> Emit {
        Emit::Map(
            entries
                .into_iter()
                .map(|(key, value)| (key.to_string(), value))
                .collect(),
        )
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Emit::Map(_) | Emit::Seq(_))
    }

    pub fn json_compact(&self) -> String {
        self.json_inline(false)
    }

    /// JSON on one line; `tight` leaves out the spaces after `:` and `,`,
    /// as minified files do.
    pub fn json_inline(&self, tight: bool) -> String {
        let (colon, comma) = if tight { (":", ",") } else { (": ", ", ") };
        match self {
            Emit::Map(entries) => {
                let inner: Vec<String> = entries
                    .iter()
                    .map(|(key, value)| {
                        format!("{}{colon}{}", json_string(key), value.json_inline(tight))
                    })
                    .collect();
                format!("{{{}}}", inner.join(comma))
            }
            Emit::Seq(items) => {
                let inner: Vec<String> = items.iter().map(|item| item.json_inline(tight)).collect();
                format!("[{}]", inner.join(comma))
            }
            scalar => scalar.json_scalar(),
        }
    }

    /// Pretty JSON whose first line continues the current one and whose
    /// closing bracket sits at `indent`.
    pub fn json_pretty(&self, indent: &str, unit: &str) -> String {
        let inner = format!("{indent}{unit}");
        match self {
            Emit::Map(entries) if !entries.is_empty() => {
                let lines: Vec<String> = entries
                    .iter()
                    .map(|(key, value)| {
                        format!(
                            "{inner}{}: {}",
                            json_string(key),
                            value.json_pretty(&inner, unit)
                        )
                    })
                    .collect();
                format!("{{\n{}\n{indent}}}", lines.join(",\n"))
            }
            Emit::Seq(items) if !items.is_empty() => {
                let lines: Vec<String> = items
                    .iter()
                    .map(|item| format!("{inner}{}", item.json_pretty(&inner, unit)))
                    .collect();
                format!("[\n{}\n{indent}]", lines.join(",\n"))
            }
            other => other.json_compact(),
        }
    }

    fn json_scalar(&self) -> String {
        match self {
            Emit::Str(text) => json_string(text),
            Emit::Int(number) => number.to_string(),
            Emit::Bool(flag) => flag.to_string(),
            Emit::Float(number) => serde_json::Number::from_f64(*number)
                .map_or_else(|| "null".to_string(), |number| number.to_string()),
            Emit::Null => "null".to_string(),
            Emit::Map(_) | Emit::Seq(_) => self.json_compact(),
        }
    }

    pub fn yaml_scalar(&self) -> String {
        match self {
            Emit::Str(text) if plain_is_safe(text) => text.clone(),
            other => other.json_scalar(),
        }
    }

    pub fn yaml_flow(&self) -> String {
        match self {
            Emit::Map(entries) => {
                let inner: Vec<String> = entries
                    .iter()
                    .map(|(key, value)| format!("{}: {}", yaml_key(key, None), value.yaml_flow()))
                    .collect();
                format!("{{{}}}", inner.join(", "))
            }
            Emit::Seq(items) => {
                let inner: Vec<String> = items.iter().map(Emit::yaml_flow).collect();
                format!("[{}]", inner.join(", "))
            }
            scalar => scalar.yaml_scalar(),
        }
    }

    /// Small collections of scalars read best on one line.
    fn flows(&self) -> bool {
        let small = match self {
            Emit::Map(entries) => entries.iter().all(|(_, value)| value.is_scalar()),
            Emit::Seq(items) => items.iter().all(Emit::is_scalar),
            _ => true,
        };
        small && self.yaml_flow().len() <= FLOW_WIDTH
    }

    /// The text after `key:` for a key at column `column`: ` value` on the
    /// same line, or nested lines indented one `unit` deeper.
    pub fn yaml_block_value(&self, column: usize, unit: usize) -> String {
        if self.flows() {
            return format!(" {}", self.yaml_flow());
        }
        let inner = column + unit;
        match self {
            Emit::Map(entries) => format!("\n{}", yaml_block_entries(entries, inner, unit)),
            Emit::Seq(items) => {
                let lines: Vec<String> = items
                    .iter()
                    .map(|item| format!("{}{}", " ".repeat(inner), item.yaml_seq_item(inner, unit)))
                    .collect();
                format!("\n{}", lines.join("\n"))
            }
            scalar => format!(" {}", scalar.yaml_scalar()),
        }
    }

    /// A list item starting with `- ` at column `dash`.
    pub fn yaml_seq_item(&self, dash: usize, unit: usize) -> String {
        match self {
            Emit::Map(entries) if !self.flows() => {
                let body = yaml_block_entries(entries, dash + 2, unit);
                format!("- {}", &body[dash + 2..])
            }
            other => format!("- {}", other.yaml_flow()),
        }
    }
}

/// `key: value` lines at `column`, the first one indented too.
pub fn yaml_block_entries(entries: &[(String, Emit)], column: usize, unit: usize) -> String {
    entries
        .iter()
        .map(|(key, value)| {
            format!(
                "{}{}:{}",
                " ".repeat(column),
                yaml_key(key, None),
                value.yaml_block_value(column, unit)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A mapping key, quoted like its siblings (`quote`) or only when needed.
pub fn yaml_key(key: &str, quote: Option<char>) -> String {
    match quote {
        Some('"') => json_string(key),
        Some('\'') => format!("'{}'", key.replace('\'', "''")),
        _ if plain_is_safe(key) => key.to_string(),
        _ => json_string(key),
    }
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// Whether `text` reads back as the same string when written unquoted, in
/// block and flow context alike.
fn plain_is_safe(text: &str) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    let lower = text.to_ascii_lowercase();
    !"-?:,[]{}#&*!|>'\"%@`~ ".contains(first)
        && !text.ends_with([' ', ':'])
        && !text.contains(": ")
        && !text.contains(" #")
        && !text.contains(['\n', '\t', '\r', ',', '[', ']', '{', '}'])
        && !matches!(
            lower.as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        )
        && text.parse::<f64>().is_err()
        && !lower.starts_with("0x")
        && !lower.starts_with("0o")
        && !lower.starts_with(".inf")
        && !lower.starts_with(".nan")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_quoted_only_when_needed() {
        assert_eq!(Emit::str("18s").yaml_scalar(), "18s");
        assert_eq!(Emit::str("pay:{uuid}").yaml_scalar(), "\"pay:{uuid}\"");
        assert_eq!(Emit::str("429").yaml_scalar(), "\"429\"");
        assert_eq!(Emit::str("true").yaml_scalar(), "\"true\"");
        assert_eq!(Emit::str("^a\\.b$").yaml_scalar(), "^a\\.b$");
        assert_eq!(yaml_key("429", Some('\'')), "'429'");
    }

    #[test]
    fn block_and_json_layouts() {
        let value = Emit::map([
            ("description", Emit::str("in progress")),
            (
                "headers",
                Emit::map([(
                    "Retry-After",
                    Emit::map([
                        ("required", Emit::Bool(true)),
                        ("schema", Emit::map([("type", Emit::str("integer"))])),
                    ]),
                )]),
            ),
        ]);
        assert_eq!(
            value.yaml_block_value(4, 2),
            "\n      description: in progress\n      headers:\n        Retry-After:\n          required: true\n          schema: {type: integer}"
        );
        assert_eq!(
            Emit::map([("a", Emit::Int(1))]).json_pretty("  ", "  "),
            "{\n    \"a\": 1\n  }"
        );
        let item = Emit::map([
            ("name", Emit::str("Idempotency-Key")),
            ("schema", Emit::map([("type", Emit::str("string"))])),
            ("description", Emit::str("x".repeat(80))),
        ]);
        assert_eq!(
            item.yaml_seq_item(6, 2),
            format!(
                "- name: Idempotency-Key\n        schema: {{type: string}}\n        description: {}",
                "x".repeat(80)
            )
        );
    }
}
