//! The spec's validation keywords on a request, checked before any key is
//! claimed: what serde's types do not hold (`minimum`, `pattern`,
//! `maxItems`, …) as a table the generator writes per operation.
//!
//! A [`Constraint`] names where it applies as a JSON pointer whose `*`
//! segment stands for every item of an array (or member of an object);
//! [`check`] walks the parsed JSON, and the first value that breaks one
//! is a [`Violation`] naming the value's own pointer (`/items/2/qty`) and
//! the keyword. A pointer that reaches no value (an optional member left
//! out) checks nothing: `required` is serde's, through the types.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;
use serde_json::Value;

use crate::decimal::Decimal;

/// One keyword of the spec at one place of the request.
#[derive(Debug, Clone, Copy)]
pub struct Constraint {
    /// JSON pointer from the body (or the parameters object), `*` for any
    /// array item or object member.
    pub at: &'static str,
    pub check: Check,
}

/// The keywords of the JSON body of one declared response, which the
/// answers a business function builds are checked against before they
/// are sent or stored ([`crate::Reply::typed_checked`]).
#[derive(Debug, Clone, Copy)]
pub struct AnswerConstraints {
    /// The response's key in the spec: `"200"`, `"4XX"` or `"default"`.
    pub status: &'static str,
    /// Its media type without parameters (`application/json`).
    pub media_type: &'static str,
    pub constraints: &'static [Constraint],
}

impl AnswerConstraints {
    /// The keywords an answer of `status` and `content_type` is held to:
    /// those of the response the spec answers `status` with (its code,
    /// else its class, else `default`), for that media type. None where
    /// the response or the media type declares none.
    pub fn of(
        answers: &'static [AnswerConstraints],
        status: u16,
        content_type: &str,
    ) -> &'static [Constraint] {
        // How closely a response's key names `status`: 0 its code, 1 its
        // class, 2 `default`; `None` another status.
        let closeness = |key: &str| match key.as_bytes() {
            _ if key.parse() == Ok(status) => Some(0),
            [class, x, y] if x.eq_ignore_ascii_case(&b'x') && y.eq_ignore_ascii_case(&b'x') => {
                (u16::from(class.wrapping_sub(b'0')) == status / 100).then_some(1)
            }
            _ => (key == "default").then_some(2),
        };
        let essence = content_type.split(';').next().unwrap_or("").trim();
        let Some(closest) = answers.iter().filter_map(|answer| closeness(answer.status)).min()
        else {
            return &[];
        };
        answers
            .iter()
            .find(|answer| {
                closeness(answer.status) == Some(closest)
                    && answer.media_type.eq_ignore_ascii_case(essence)
            })
            .map_or(&[], |answer| answer.constraints)
    }
}

/// A JSON Schema validation keyword and its value.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// The bounds and the step hold the spec's number as written (JSON
    /// number text, `"0.01"`, `"9007199254740993"`), compared by its
    /// decimal value: a limit is never rounded to a float on its way here.
    Minimum(&'static str),
    Maximum(&'static str),
    ExclusiveMinimum(&'static str),
    ExclusiveMaximum(&'static str),
    MultipleOf(&'static str),
    /// An ECMA-262 regular expression, unanchored (as JSON Schema reads it).
    Pattern(&'static str),
    MinLength(u64),
    MaxLength(u64),
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    MinProperties(u64),
    MaxProperties(u64),
    /// The allowed values, each as JSON text (`1`, `"EUR"`, `null`).
    Enum(&'static [&'static str]),
    /// The one allowed value, as JSON text (`5`, `true`, `{"v":1}`).
    Const(&'static str),
    /// The keywords of one branch of a `oneOf`/`anyOf` whose branches are
    /// told apart by one property's value (Adyen's `paymentMethod` by
    /// `type`): held by an object whose property is one of the branch's.
    Chosen(&'static Chosen),
}

/// One branch of a union chosen by a property, and its keywords.
///
/// An object whose `property` is one of `values` can only be this branch
/// (no other branch allows those values), so it must keep the branch's
/// keywords; any other value, an object without the property included,
/// is not held to them.
#[derive(Debug, Clone, Copy)]
pub struct Chosen {
    /// The property's name in the JSON object (`type`).
    pub property: &'static str,
    /// The values that choose this branch (`scheme`).
    pub values: &'static [&'static str],
    /// The branch's keywords, their pointers from the union's object.
    pub constraints: &'static [Constraint],
}

impl Chosen {
    /// Whether `value` is an object this branch is chosen for.
    fn chooses(&self, value: &Value) -> bool {
        value
            .get(self.property)
            .and_then(Value::as_str)
            .is_some_and(|chosen| self.values.contains(&chosen))
    }
}

impl Check {
    /// The keyword's name in the spec.
    pub fn keyword(&self) -> &'static str {
        match self {
            Check::Minimum(_) => "minimum",
            Check::Maximum(_) => "maximum",
            Check::ExclusiveMinimum(_) => "exclusiveMinimum",
            Check::ExclusiveMaximum(_) => "exclusiveMaximum",
            Check::MultipleOf(_) => "multipleOf",
            Check::Pattern(_) => "pattern",
            Check::MinLength(_) => "minLength",
            Check::MaxLength(_) => "maxLength",
            Check::MinItems(_) => "minItems",
            Check::MaxItems(_) => "maxItems",
            Check::UniqueItems => "uniqueItems",
            Check::MinProperties(_) => "minProperties",
            Check::MaxProperties(_) => "maxProperties",
            Check::Enum(_) => "enum",
            Check::Const(_) => "const",
            Check::Chosen(_) => "oneOf",
        }
    }

    /// Why `value` breaks the keyword, or `None` when it keeps it (or the
    /// keyword does not apply to its type, as JSON Schema says).
    fn broken_by(&self, value: &Value) -> Option<String> {
        use std::cmp::Ordering::{Greater, Less};
        let number = match value {
            Value::Number(number) => Some(number),
            _ => None,
        };
        let length = value.as_str().map(|text| text.chars().count() as u64);
        let items = value.as_array();
        let members = value.as_object().map(|object| object.len() as u64);
        // The message is written only for a value that breaks the keyword:
        // every value of every request is checked, and nearly all pass.
        fn fails(holds: bool, why: impl FnOnce() -> String) -> Option<String> {
            (!holds).then(why)
        }
        match *self {
            Check::Minimum(limit) => number.and_then(|n| {
                fails(order(n, limit)? != Less, || format!("{value} is less than {limit}"))
            }),
            Check::Maximum(limit) => number.and_then(|n| {
                fails(order(n, limit)? != Greater, || format!("{value} is more than {limit}"))
            }),
            Check::ExclusiveMinimum(limit) => number.and_then(|n| {
                fails(order(n, limit)? == Greater, || format!("{value} is not more than {limit}"))
            }),
            Check::ExclusiveMaximum(limit) => number.and_then(|n| {
                fails(order(n, limit)? == Less, || format!("{value} is not less than {limit}"))
            }),
            Check::MultipleOf(step) => number.and_then(|n| {
                fails(multiple_of(n, step), || format!("{value} is not a multiple of {step}"))
            }),
            Check::Pattern(pattern) => {
                let text = value.as_str()?;
                let matched = with_regex(pattern, |regex| regex.is_match(text))?;
                fails(matched, || format!("{value} does not match `{pattern}`"))
            }
            Check::MinLength(min) => length.and_then(|n| {
                fails(n >= min, || format!("{n} characters, fewer than {min}"))
            }),
            Check::MaxLength(max) => {
                length.and_then(|n| fails(n <= max, || format!("{n} characters, more than {max}")))
            }
            Check::MinItems(min) => items.and_then(|items| {
                fails(items.len() as u64 >= min, || format!("{} items, fewer than {min}", items.len()))
            }),
            Check::MaxItems(max) => items.and_then(|items| {
                fails(items.len() as u64 <= max, || format!("{} items, more than {max}", items.len()))
            }),
            Check::UniqueItems => items.and_then(|items| {
                let repeated = items
                    .iter()
                    .enumerate()
                    .find(|(i, item)| items[..*i].contains(item));
                repeated.map(|(i, item)| format!("item {i} ({item}) repeats an earlier one"))
            }),
            Check::MinProperties(min) => members
                .and_then(|n| fails(n >= min, || format!("{n} members, fewer than {min}"))),
            Check::MaxProperties(max) => members
                .and_then(|n| fails(n <= max, || format!("{n} members, more than {max}"))),
            Check::Enum(allowed) => {
                let listed = allowed.iter().any(|text| is_value(value, text));
                fails(listed, || format!("{value} is not one of {}", allowed.join(", ")))
            }
            Check::Const(only) => {
                fails(is_value(value, only), || format!("{value} is not {only}"))
            }
            // Its branch's keywords are checked where the walk reaches it.
            Check::Chosen(_) => None,
        }
    }
}

/// Whether `value` is the JSON value `text` writes: a number as written
/// (`0.1` is not first rounded to a float), anything else as JSON equality.
fn is_value(value: &Value, text: &str) -> bool {
    use std::cmp::Ordering::Equal;
    match value {
        Value::Number(n) => order(n, text) == Some(Equal) || read_as_the_same_float(n, text),
        _ => serde_json::from_str::<Value>(text).is_ok_and(|v| same(&v, value)),
    }
}

/// Whether `number`, which the request's JSON held as a float, may have
/// been written as `listed`, a number with more digits than a float holds
/// (`99999999999999999999`): the client's copy of it reads as the same
/// float, and that float is all the request still tells.
fn read_as_the_same_float(number: &serde_json::Number, listed: &str) -> bool {
    let Some(float) = listed.parse::<f64>().ok().filter(|_| integer(number).is_none()) else {
        return false;
    };
    number.as_f64() == Some(float)
        && serde_json::Number::from_f64(float)
            .is_some_and(|shortest| decimal(&shortest) != Decimal::parse(listed))
}

/// JSON equality where numbers are equal by value (`1` and `1.0` are one
/// number), at any depth of an array or object.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (integer(x), integer(y)) {
            (Some(x), Some(y)) => x == y,
            _ => decimal(x).is_some_and(|x| decimal(y) == Some(x)),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(name, x)| y.get(name).is_some_and(|y| same(x, y)))
        }
        _ => a == b,
    }
}

/// An integer value as itself: an amount in cents beyond 2^53 is never
/// rounded to the float nearest it before it is compared.
fn integer(number: &serde_json::Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

/// How `number` compares with `limit` (JSON number text): as integers
/// where both are, else by their decimal values, `number` being the
/// shortest decimal that reads as its float (`0.1`, as the client wrote
/// it). `None` for a limit that is not a number (a table edited by hand),
/// which checks nothing.
fn order(number: &serde_json::Number, limit: &str) -> Option<std::cmp::Ordering> {
    if let (Some(n), Ok(limit)) = (integer(number), limit.parse::<i128>()) {
        return Some(n.cmp(&limit));
    }
    Some(decimal(number)?.cmp(&Decimal::parse(limit)?))
}

/// `number` as the decimal it is written as: an integer's digits, or the
/// shortest decimal that reads as its float.
fn decimal(number: &serde_json::Number) -> Option<Decimal> {
    Decimal::parse(&number.to_string())
}

/// Whether `number` is a whole multiple of `step` (JSON number text), in
/// decimal: `19.99` is a multiple of `0.01` and `19.9900000001` is not,
/// though their floats' quotients are both within a rounding of whole. A
/// step that is not a number, or one too long to divide by, checks
/// nothing.
fn multiple_of(number: &serde_json::Number, step: &str) -> bool {
    if let (Some(n), Ok(step)) = (integer(number), step.parse::<i128>())
        && step != 0
    {
        return n % step == 0;
    }
    match (decimal(number), Decimal::parse(step)) {
        (Some(n), Some(step)) => n.is_multiple_of(&step).unwrap_or(true),
        _ => true,
    }
}

/// Runs `f` with the compiled `pattern`, compiled once per process; `None`
/// when Rust's regex cannot read it (the generator leaves such patterns
/// out, so this is a spec edited by hand).
fn with_regex<T>(pattern: &'static str, f: impl FnOnce(&Regex) -> T) -> Option<T> {
    static COMPILED: OnceLock<Mutex<HashMap<&'static str, Option<Regex>>>> = OnceLock::new();
    let mut compiled = COMPILED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let regex = compiled
        .entry(pattern)
        .or_insert_with(|| Regex::new(pattern).ok());
    regex.as_ref().map(f)
}

/// The first value of a request that breaks a constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The value's JSON pointer (`/amount`, `/items/2/qty`).
    pub pointer: String,
    /// The keyword it breaks (`minimum`).
    pub keyword: &'static str,
    /// How (`-5 is less than 1`).
    pub why: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() { "the value" } else { &self.pointer };
        write!(f, "{at} breaks `{}`: {}", self.keyword, self.why)
    }
}

/// Checks `value` against every constraint, in order.
pub fn check(value: &Value, constraints: &[Constraint]) -> Result<(), Violation> {
    for constraint in constraints {
        let segments: Vec<&str> = constraint.at.split('/').skip(1).collect();
        visit(value, &segments, &mut String::new(), constraint)?;
    }
    Ok(())
}

/// `name` as a JSON pointer segment (`~` as `~0`, `/` as `~1`), copied
/// only when it holds one.
pub(crate) fn escape(name: &str) -> std::borrow::Cow<'_, str> {
    match name.contains(['~', '/']) {
        true => std::borrow::Cow::Owned(name.replace('~', "~0").replace('/', "~1")),
        false => std::borrow::Cow::Borrowed(name),
    }
}

fn visit(
    value: &Value,
    segments: &[&str],
    pointer: &mut String,
    constraint: &Constraint,
) -> Result<(), Violation> {
    let Some((first, rest)) = segments.split_first() else {
        if let Check::Chosen(branch) = constraint.check {
            if branch.chooses(value) {
                for inner in branch.constraints {
                    let segments: Vec<&str> = inner.at.split('/').skip(1).collect();
                    visit(value, &segments, pointer, inner)?;
                }
            }
            return Ok(());
        }
        return match constraint.check.broken_by(value) {
            Some(why) => Err(Violation {
                pointer: pointer.clone(),
                keyword: constraint.check.keyword(),
                why,
            }),
            None => Ok(()),
        };
    };
    let descend = |child: &Value, segment: &str, pointer: &mut String| {
        let length = pointer.len();
        pointer.push('/');
        pointer.push_str(&escape(segment));
        let result = visit(child, rest, pointer, constraint);
        pointer.truncate(length);
        result
    };
    match (*first, value) {
        ("*", Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                descend(item, &index.to_string(), pointer)?;
            }
            Ok(())
        }
        ("*", Value::Object(members)) => {
            for (name, member) in members {
                descend(member, name, pointer)?;
            }
            Ok(())
        }
        (segment, Value::Object(members)) => {
            let name = match segment.contains('~') {
                true => std::borrow::Cow::Owned(segment.replace("~1", "/").replace("~0", "~")),
                false => std::borrow::Cow::Borrowed(segment),
            };
            match members.get(name.as_ref()) {
                Some(member) => descend(member, &name, pointer),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PAYMENT: &[Constraint] = &[
        Constraint { at: "/amount", check: Check::Minimum("1") },
        Constraint { at: "/date", check: Check::Pattern("^[0-9]{8}$") },
        Constraint { at: "/lines", check: Check::MaxItems(2) },
        Constraint { at: "/lines/*/qty", check: Check::ExclusiveMinimum("0") },
        Constraint { at: "/lines/*/qty", check: Check::MultipleOf("0.5") },
        Constraint { at: "/tags", check: Check::UniqueItems },
        Constraint { at: "/currency", check: Check::Enum(&["\"EUR\"", "\"USD\""]) },
        Constraint { at: "/code", check: Check::MaxLength(3) },
    ];

    fn broken(value: Value) -> Option<(String, &'static str)> {
        check(&value, PAYMENT).err().map(|v| (v.pointer, v.keyword))
    }

    #[test]
    fn const_holds_one_value_of_any_type() {
        let only: &[Constraint] = &[
            Constraint { at: "/version", check: Check::Const("2") },
            Constraint { at: "/live", check: Check::Const("true") },
            Constraint { at: "/shape", check: Check::Const(r#"{"v":1}"#) },
        ];
        let broken = |value: Value| check(&value, only).err().map(|v| (v.pointer, v.keyword));
        assert_eq!(broken(json!({"version": 2, "live": true, "shape": {"v": 1}})), None);
        assert_eq!(broken(json!({"version": 2.0})), None, "2.0 is the number 2");
        assert_eq!(broken(json!({"version": 3})), Some(("/version".into(), "const")));
        assert_eq!(broken(json!({"live": false})), Some(("/live".into(), "const")));
        assert_eq!(broken(json!({"shape": {"v": 2}})), Some(("/shape".into(), "const")));
    }

    #[test]
    fn each_keyword_names_the_value_and_itself() {
        assert_eq!(broken(json!({"amount": 5, "date": "20240615"})), None);
        assert_eq!(broken(json!({})), None, "absent members check nothing");
        assert_eq!(broken(json!({"amount": -5})), Some(("/amount".into(), "minimum")));
        assert_eq!(broken(json!({"date": "2024-06-15"})), Some(("/date".into(), "pattern")));
        assert_eq!(broken(json!({"lines": [{}, {}, {}]})), Some(("/lines".into(), "maxItems")));
        assert_eq!(
            broken(json!({"lines": [{"qty": 1}, {"qty": 0}]})),
            Some(("/lines/1/qty".into(), "exclusiveMinimum"))
        );
        assert_eq!(
            broken(json!({"lines": [{"qty": 1.25}]})),
            Some(("/lines/0/qty".into(), "multipleOf"))
        );
        assert_eq!(broken(json!({"lines": [{"qty": 1.5}]})), None);
        assert_eq!(broken(json!({"tags": ["a", "b", "a"]})), Some(("/tags".into(), "uniqueItems")));
        assert_eq!(broken(json!({"currency": "GBP"})), Some(("/currency".into(), "enum")));
        assert_eq!(broken(json!({"code": "ÄÖÜ"})), None, "characters, not bytes");
        assert_eq!(broken(json!({"code": "ABCD"})), Some(("/code".into(), "maxLength")));
    }

    #[test]
    fn an_integer_is_compared_as_itself_not_its_nearest_float() {
        let limits: &[Constraint] = &[
            Constraint { at: "/cents", check: Check::Maximum("9007199254740992") },
            Constraint { at: "/cents", check: Check::MultipleOf("5") },
            Constraint { at: "/code", check: Check::Enum(&["9007199254740993"]) },
        ];
        let broken = |value: Value| check(&value, limits).err().map(|v| v.keyword);
        // 2^53 + 1 reads as the float 2^53, which would pass.
        assert_eq!(broken(json!({"cents": 9007199254740993_u64})), Some("maximum"));
        assert_eq!(broken(json!({"cents": 9007199254740985_u64})), None);
        assert_eq!(broken(json!({"cents": 9007199254740981_i64})), Some("multipleOf"));
        assert_eq!(broken(json!({"code": 9007199254740992_u64})), Some("enum"));
        assert_eq!(broken(json!({"code": 9007199254740993_u64})), None);
        assert_eq!(broken(json!({"cents": 9007199254740990.0})), None, "a float as before");
    }

    #[test]
    fn a_decimal_limit_is_its_written_value_not_a_float() {
        let limits: &[Constraint] = &[
            Constraint { at: "/price", check: Check::MultipleOf("0.01") },
            Constraint { at: "/price", check: Check::Maximum("0.3") },
            Constraint { at: "/price", check: Check::ExclusiveMinimum("0.1") },
            Constraint { at: "/cents", check: Check::Maximum("99999999999999999999") },
        ];
        let broken = |value: Value| check(&value, limits).err().map(|v| v.keyword);
        assert_eq!(broken(json!({"price": 0.29})), None);
        // Within a float's rounding of a whole quotient, yet no multiple.
        assert_eq!(broken(json!({"price": 0.2900000001})), Some("multipleOf"));
        // 0.1 + 0.2 is 0.30000000000000004 as a float: more than 0.3.
        assert_eq!(broken(json!({"price": 0.1 + 0.2})), Some("multipleOf"));
        assert_eq!(broken(json!({"price": 0.3})), None, "0.3 is not more than 0.3");
        assert_eq!(broken(json!({"price": 0.31})), Some("maximum"));
        assert_eq!(broken(json!({"price": 0.1})), Some("exclusiveMinimum"));
        // 10^20 - 1 as a float is 10^20: the limit itself is not rounded.
        assert_eq!(broken(json!({"cents": 18446744073709551615_u64})), None);
        assert_eq!(broken(json!({"cents": 1e20})), Some("maximum"));
        assert_eq!(broken(json!({"cents": 99999999999999999999.0})), Some("maximum"));
    }

    #[test]
    fn an_enum_compares_numbers_by_their_written_value_at_any_depth() {
        let listed: &[Constraint] = &[
            Constraint { at: "/rate", check: Check::Enum(&["0.1", "2.50", "99999999999999999999"]) },
            Constraint { at: "/pair", check: Check::Enum(&["[1.0, {\"n\": 2}]"]) },
        ];
        let broken = |value: Value| check(&value, listed).err().map(|v| v.keyword);
        assert_eq!(broken(json!({"rate": 0.1})), None);
        assert_eq!(broken(json!({"rate": 2.5})), None, "2.50 is 2.5");
        assert_eq!(broken(json!({"rate": 0.1 + 0.2})), Some("enum"));
        // 10^20 - 1, written in full, reads as the float 10^20: it may be
        // the listed value, so it passes, as does 10^20 itself.
        let written: Value = serde_json::from_str(r#"{"rate": 99999999999999999999}"#).unwrap();
        assert_eq!(broken(written), None);
        assert_eq!(broken(json!({"rate": 1e20})), None);
        assert_eq!(broken(json!({"rate": 1e19})), Some("enum"));
        // A listed value a float holds is matched exactly.
        assert_eq!(broken(json!({"rate": 0.1000000000000001})), Some("enum"));
        assert_eq!(broken(json!({"rate": "0.1"})), Some("enum"), "a string is no number");
        // Numbers inside a listed array or object are equal by value too.
        assert_eq!(broken(json!({"pair": [1, {"n": 2.0}]})), None);
        assert_eq!(broken(json!({"pair": [1, {"n": 3}]})), Some("enum"));
        assert_eq!(broken(json!({"pair": [1, {"n": 2, "m": 0}]})), Some("enum"));
        assert_eq!(broken(json!({"pair": [1]})), Some("enum"));
    }

    #[test]
    fn an_answer_is_held_to_its_code_else_its_class_else_default() {
        const CODE: &[Constraint] = &[Constraint { at: "/a", check: Check::MinLength(1) }];
        const CLASS: &[Constraint] = &[Constraint { at: "/b", check: Check::MinLength(1) }];
        const PROBLEM: &[Constraint] = &[Constraint { at: "/c", check: Check::MinLength(1) }];
        const ANY: &[Constraint] = &[Constraint { at: "/d", check: Check::MinLength(1) }];
        static ANSWERS: &[AnswerConstraints] = &[
            AnswerConstraints { status: "201", media_type: "application/json", constraints: CODE },
            AnswerConstraints { status: "2XX", media_type: "application/json", constraints: CLASS },
            AnswerConstraints { status: "4xx", media_type: "application/problem+json", constraints: PROBLEM },
            AnswerConstraints { status: "default", media_type: "application/json", constraints: ANY },
        ];
        let held = |status, content_type| AnswerConstraints::of(ANSWERS, status, content_type)[0].at;
        assert_eq!(held(201, "application/json"), "/a");
        assert_eq!(held(200, "Application/JSON; charset=utf-8"), "/b");
        assert_eq!(held(404, "application/problem+json"), "/c");
        assert_eq!(held(500, "application/json"), "/d");
        // A 201 sent as another media type than the 201 declares: its
        // class or `default` does not stand in for it.
        assert!(AnswerConstraints::of(ANSWERS, 201, "application/vnd.a+json").is_empty());
        assert!(AnswerConstraints::of(ANSWERS, 404, "application/json").is_empty());
    }

    #[test]
    fn a_violation_reads_as_pointer_keyword_and_why() {
        let violation = check(&json!({"amount": -5}), PAYMENT).unwrap_err();
        assert_eq!(violation.to_string(), "/amount breaks `minimum`: -5 is less than 1");
    }
    #[test]
    fn a_chosen_branch_holds_its_keywords_only_where_it_is_chosen() {
        const CARD: Chosen = Chosen {
            property: "type",
            values: &["scheme", "card"],
            constraints: &[
                Constraint { at: "/number", check: Check::MaxLength(4) },
                Constraint { at: "/cvc", check: Check::Pattern("^[0-9]{3}$") },
            ],
        };
        const IDEAL: Chosen = Chosen {
            property: "type",
            values: &["ideal"],
            constraints: &[Constraint { at: "/issuer", check: Check::MinLength(4) }],
        };
        const PAYMENT: &[Constraint] = &[
            Constraint { at: "/methods/*", check: Check::Chosen(&CARD) },
            Constraint { at: "/methods/*", check: Check::Chosen(&IDEAL) },
        ];
        let broken = |value: Value| check(&value, PAYMENT).err().map(|v| (v.pointer, v.keyword));
        let methods = |methods: Value| json!({ "methods": methods });
        assert_eq!(broken(methods(json!([{"type": "card", "number": "1234", "cvc": "123"}]))), None);
        assert_eq!(
            broken(methods(json!([{"type": "ideal", "issuer": "1121"}, {"type": "card", "number": "12345"}]))),
            Some(("/methods/1/number".into(), "maxLength")),
            "the card's keyword, at the value's own pointer"
        );
        assert_eq!(
            broken(methods(json!([{"type": "ideal", "issuer": "12"}]))),
            Some(("/methods/0/issuer".into(), "minLength"))
        );
        // Another branch's keywords do not apply: an iDEAL `number` may be
        // long, a card's `issuer` short.
        assert_eq!(broken(methods(json!([{"type": "ideal", "issuer": "1121", "number": "123456"}]))), None);
        assert_eq!(broken(methods(json!([{"type": "scheme", "issuer": "1"}]))), None);
        // Chosen by no value it names: held to no branch's keywords.
        assert_eq!(broken(methods(json!([{"number": "123456"}, {"type": 7, "number": "123456"}]))), None);
        assert_eq!(broken(methods(json!(["scheme", null]))), None);
    }
}
