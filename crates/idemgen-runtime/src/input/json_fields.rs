//! Form fields whose `encoding` declares a JSON `contentType`
//! (`details=%7B%22order%22%3A7%7D`): OpenAPI sends such a value as JSON
//! text inside the form. The form reader hands each such field's text to
//! a JSON reader, so the field gets the document's value with its JSON
//! types (`"7"` is not `7`), and the fingerprint hashes that value, not
//! its spelling. The document is read where it lies: nothing is copied
//! or laid out again, so a hostile one costs what a JSON body of its size
//! costs.

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde_json::Value;

/// The value of a JSON field's text: its document, canonical (members
/// named once, numbers by their exact decimal value), as a JSON body is
/// read; `Err` says why it is not one.
fn document(field: &str, text: &str) -> Result<Value, String> {
    crate::input::exact_json_value(text.as_bytes()).ok_or_else(|| {
            format!(
                "`{field}` must be a JSON document, as its `encoding` declares (a JSON \
                 `contentType`)"
            )
        })
}

/// `tree` (a form as its reader reads it) with the text of each field of
/// `json` replaced by its document's value, for the fingerprint; `None`
/// when one is not one JSON text (a document, not brackets, a list or a
/// name without a value): the request is hashed as sent, and refused
/// when read.
pub(crate) fn with_documents(mut tree: Value, json: &[&str]) -> Option<Value> {
    if let Value::Object(fields) = &mut tree {
        for field in json {
            if let Some(value) = fields.get_mut(*field) {
                let Value::String(text) = value else {
                    return None;
                };
                *value = document(field, text).ok()?;
            }
        }
    }
    Some(tree)
}

/// A form's deserializer whose top-level fields named in `json` are read
/// from their text as JSON documents.
pub(crate) struct WithJsonFields<'j, D> {
    pub(crate) form: D,
    pub(crate) json: &'j [&'j str],
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for WithJsonFields<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.form.deserialize_any(Fields {
            visitor,
            json: self.json,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.form.deserialize_map(Fields {
            visitor,
            json: self.json,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.form.deserialize_struct(
            name,
            fields,
            Fields {
                visitor,
                json: self.json,
            },
        )
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct enum identifier ignored_any
    }
}

/// The visitor of the form's top level: its map's JSON fields are read as
/// JSON; anything else goes to `visitor` as the form reader gave it.
struct Fields<'j, V> {
    visitor: V,
    json: &'j [&'j str],
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Fields<'_, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(JsonFieldsMap {
            map,
            json: self.json,
            at: None,
        })
    }

    // What is not a map has no fields: as the form reader gave it.
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<V::Value, E> {
        self.visitor.visit_str(text)
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<V::Value, E> {
        self.visitor.visit_string(text)
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_some(inner)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, inner: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_newtype_struct(inner)
    }
}

/// The form's fields, each JSON one's text read as its document.
struct JsonFieldsMap<'j, A> {
    map: A,
    json: &'j [&'j str],
    /// The JSON field whose value comes next, if the next is one.
    at: Option<&'j str>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for JsonFieldsMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        // The form's names are text: read one to know whether its value
        // is JSON, then hand it on.
        let Some(name) = self.map.next_key::<String>()? else {
            return Ok(None);
        };
        self.at = self.json.iter().find(|field| **field == name).copied();
        seed.deserialize(name.into_deserializer()).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let Some(field) = self.at.take() else {
            return self.map.next_value_seed(seed);
        };
        // Read as the fingerprint's tree holds it, so that only one text
        // is taken: the form reader would also give a string for the last
        // item of `details[]=…` or for `details` without a value.
        let Value::String(text) = self.map.next_value::<Value>()? else {
            return Err(de::Error::custom(format!(
                "`{field}` must be one JSON text, as its `encoding` declares (a JSON \
                 `contentType`), not brackets, a list or a name without a value"
            )));
        };
        let value = document(field, &text).map_err(de::Error::custom)?;
        seed.deserialize(value).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug, PartialEq)]
    struct Details {
        order: u32,
        lines: Option<Vec<String>>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Order {
        amount: u32,
        details: Option<Details>,
    }

    fn read(body: &str) -> Result<Order, String> {
        let form = serde_qs::Deserializer::with_config(super::super::FORM, body.as_bytes())
            .map_err(|error| error.to_string())?;
        Order::deserialize(WithJsonFields {
            form,
            json: &["details"],
        })
        .map_err(|error| error.to_string())
    }

    #[test]
    fn a_json_field_is_read_as_its_document() {
        let order = read("amount=5&details=%7B%22order%22%3A7%2C%22lines%22%3A%5B%22a%5Bb%5D%22%5D%7D")
            .unwrap();
        assert_eq!(
            order,
            Order {
                amount: 5,
                details: Some(Details {
                    order: 7,
                    lines: Some(vec!["a[b]".into()]),
                }),
            }
        );
        // The other fields are read as form text, as without JSON fields.
        assert_eq!(read("amount=5").unwrap().details, None);
        // Numbers by their exact value, as a JSON body's.
        assert_eq!(read("amount=5&details=%7B%22order%22%3A7.0%7D").unwrap().details.unwrap().order, 7);
    }

    #[test]
    fn a_json_field_keeps_its_json_types_and_is_refused_by_name() {
        for (body, expected) in [
            // A string is not the integer it spells, as in a JSON body.
            ("amount=5&details=%7B%22order%22%3A%227%22%7D", "invalid type: string \"7\""),
            ("amount=5&details=%7Bnope", "`details` must be a JSON document"),
            ("amount=5&details=", "`details` must be a JSON document"),
            ("amount=5&details=%7B%22order%22%3A1%2C%22order%22%3A2%7D", "`details` must be a JSON document"),
            ("amount=5&details[order]=7", "`details` must be one JSON text"),
            ("amount=5&details[]=%7B%22order%22%3A7%7D", "`details` must be one JSON text"),
            ("amount=5&details", "`details` must be one JSON text"),
            ("amount=5&details=%7B%7D", "missing field `order`"),
        ] {
            let refused = read(body).unwrap_err();
            assert!(refused.contains(expected), "{body}: {expected} in {refused}");
        }
    }

    #[test]
    fn the_fingerprint_tree_holds_the_document_not_its_spelling() {
        let tree = |text: &str| with_documents(serde_json::json!({ "details": text, "n": "1" }), &["details"]);
        assert_eq!(tree(r#"{"a":1,"b":[true]}"#), tree(r#"{ "b": [true], "a": 1.0 }"#));
        assert_ne!(tree(r#"{"a":1}"#), tree(r#"{"a":"1"}"#));
        assert_eq!(tree("nope"), None);
        // Not one text: hashed as sent, as the reader refuses it.
        for sent in [serde_json::json!(["{}"]), serde_json::json!({"order": "7"}), Value::Null] {
            assert_eq!(with_documents(serde_json::json!({ "details": sent }), &["details"]), None);
        }
        // Not a JSON field, or not text: left as it is.
        assert_eq!(
            with_documents(serde_json::json!({ "n": "{}" }), &["details"]),
            Some(serde_json::json!({ "n": "{}" }))
        );
    }
}
