//! Comparing parsed documents: does a fixed document still say everything
//! the original said?

// Each of the targets that include this file uses only part of it.
#![allow(dead_code)]

use serde_json::Value;

/// Whether everything `old` says, `new` still says: every key with a
/// contained value, every list item in order (new items may follow).
pub fn contains(old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => old
            .iter()
            .all(|(key, value)| new.get(key).is_some_and(|n| contains(value, n))),
        (Value::Array(old), Value::Array(new)) => {
            old.len() <= new.len() && old.iter().zip(new).all(|(o, n)| contains(o, n))
        }
        _ => old == new,
    }
}

/// The first place where `new` lost something `old` had, as a pointer.
pub fn first_loss(old: &Value, new: &Value, at: &str) -> Option<String> {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => old.iter().find_map(|(key, value)| {
            let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
            match new.get(key) {
                Some(n) => first_loss(value, n, &here),
                None => Some(here),
            }
        }),
        (Value::Array(old), Value::Array(new)) if old.len() <= new.len() => old
            .iter()
            .zip(new)
            .enumerate()
            .find_map(|(index, (o, n))| first_loss(o, n, &format!("{at}/{index}"))),
        _ if old == new => None,
        _ => Some(at.to_string()),
    }
}

/// Every place where `new` lost or changed something `old` had.
pub fn losses(old: &Value, new: &Value, at: &str, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match new.get(key) {
                    Some(n) => losses(value, n, &here, out),
                    None => out.push(here),
                }
            }
        }
        (Value::Array(old), Value::Array(new)) if old.len() <= new.len() => {
            for (index, (o, n)) in old.iter().zip(new).enumerate() {
                losses(o, n, &format!("{at}/{index}"), out);
            }
        }
        _ if old == new => {}
        _ => out.push(at.to_string()),
    }
}
