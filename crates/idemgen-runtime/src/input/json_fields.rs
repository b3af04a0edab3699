//! Form fields whose `encoding` declares a JSON `contentType`
//! (`metadata=%7B%22order%22%3A6735%7D`): OpenAPI sends such a value as
//! JSON text inside the form. The text is read as JSON and laid out as
//! the form's own brackets (`metadata[order]=6735`), so the form reader
//! takes it into its type, the validation keywords see its values and
//! the fingerprint hashes the value, not its spelling.

use std::borrow::Cow;

use serde_json::Value;

use super::{form_text, pair_name};

/// `body` with the value of each field of `json` (sent under its bare
/// name) read as JSON and written as its leaves in brackets: `null`, an
/// empty array and an empty object have no leaf and leave the field
/// absent. `Err` names a field whose text is not one JSON document.
pub(crate) fn expand<'a>(body: &'a [u8], json: &[&str]) -> Result<Cow<'a, [u8]>, String> {
    let field_of = |pair: &[u8]| {
        let name = form_text(pair_name(pair))?;
        json.iter().find(|field| **field == name).copied()
    };
    if json.is_empty() || !body.split(|byte| *byte == b'&').any(|pair| field_of(pair).is_some()) {
        return Ok(Cow::Borrowed(body));
    }
    let mut expanded: Vec<u8> = Vec::with_capacity(body.len() + 32);
    for pair in body.split(|byte| *byte == b'&') {
        let Some(field) = field_of(pair) else {
            push_pair(&mut expanded, pair);
            continue;
        };
        let not_json = || {
            format!(
                "`{field}` must be a JSON document, as its `encoding` declares (a JSON \
                 `contentType`)"
            )
        };
        let raw_value = pair.get(pair_name(pair).len() + 1..).unwrap_or_default();
        let text = form_text(raw_value).ok_or_else(not_json)?;
        let value: Value = crate::input::exact_json(text.as_bytes())
            .ok()
            .and_then(|canonical| serde_json::from_slice(&canonical).ok())
            .ok_or_else(not_json)?;
        let mut leaves = Vec::new();
        leaves_of(field.to_string(), &value, &mut leaves);
        for (name, text) in leaves {
            let mut leaf = Vec::new();
            leaf.extend(form_urlencoded::byte_serialize(name.as_bytes()).flat_map(str::bytes));
            leaf.push(b'=');
            leaf.extend(form_urlencoded::byte_serialize(text.as_bytes()).flat_map(str::bytes));
            push_pair(&mut expanded, &leaf);
        }
    }
    Ok(Cow::Owned(expanded))
}

fn push_pair(body: &mut Vec<u8>, pair: &[u8]) {
    if !body.is_empty() {
        body.push(b'&');
    }
    body.extend_from_slice(pair);
}

/// Each leaf of `value` under `name`, in brackets (`name[key]`,
/// `name[0]`): a string as itself, a number or boolean as JSON writes it.
fn leaves_of(name: String, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                leaves_of(format!("{name}[{index}]"), item, out);
            }
        }
        Value::Object(members) => {
            for (key, member) in members {
                leaves_of(format!("{name}[{key}]"), member, out);
            }
        }
        Value::String(text) => out.push((name, text.clone())),
        other => out.push((name, other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(body: &str, json: &[&str]) -> Result<String, String> {
        expand(body.as_bytes(), json).map(|body| String::from_utf8(body.into_owned()).unwrap())
    }

    #[test]
    fn a_json_field_is_laid_out_in_brackets() {
        let body = "amount=5&metadata=%7B%22order%22%3A%226735%22%2C%22n%22%3A%5B1%2Ctrue%5D%7D";
        assert_eq!(
            expanded(body, &["metadata"]).unwrap(),
            "amount=5&metadata%5Bn%5D%5B0%5D=1&metadata%5Bn%5D%5B1%5D=true&metadata%5Border%5D=6735"
        );
        // Not named: left as sent, borrowed.
        assert!(matches!(expand(body.as_bytes(), &[]).unwrap(), Cow::Borrowed(_)));
        assert!(matches!(expand(body.as_bytes(), &["other"]).unwrap(), Cow::Borrowed(_)));
        // A scalar document is the field's own text; `null` leaves it out.
        assert_eq!(expanded("count=5", &["count"]).unwrap(), "count=5");
        assert_eq!(expanded("label=%22a+b%22", &["label"]).unwrap(), "label=a+b");
        assert_eq!(expanded("a=1&metadata=null", &["metadata"]).unwrap(), "a=1");
        // Sent in brackets already: read as brackets.
        assert_eq!(expanded("metadata[k]=v", &["metadata"]).unwrap(), "metadata[k]=v");
    }

    #[test]
    fn a_json_field_that_is_not_json_is_refused_by_name() {
        for body in ["metadata=%7Bnope", "metadata=", "metadata=%7B%22a%22%3A1%2C%22a%22%3A2%7D"] {
            let refused = expanded(body, &["metadata"]).unwrap_err();
            assert!(refused.starts_with("`metadata` must be a JSON document"), "{body}: {refused}");
        }
    }
}
