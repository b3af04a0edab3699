//! YAML/JSON text → positioned [`Node`] tree, with limits that keep hostile
//! input (deep nesting, alias bombs) to a clear error instead of a crash.
//!
//! The tree is built from saphyr's event stream with an explicit stack, so
//! nesting depth never turns into native recursion. Strict JSON reaches the
//! same builder through [`super::json_parse`], a faster tokenizer that
//! emits the same events at the same positions.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span as ParserSpan, Tag};

use super::node::{Entry, Mapping, Node, Span, Value};
use super::source::FileId;

/// Deepest nesting of mappings and lists accepted. Real specs stay under 40.
pub const MAX_DEPTH: usize = 256;
/// Most nodes that alias expansion may add to one file (YAML bombs).
pub const MAX_ALIAS_NODES: usize = 1_000_000;
/// Most nodes one file may hold; the 4 MB Stripe spec has about 200,000.
pub const MAX_NODES: usize = 4_000_000;
/// Most duplicate keys reported per file: past this, the file has a
/// problem no list of findings will make clearer.
pub const MAX_DUPLICATES_REPORTED: usize = 100;
/// Mappings up to this size look keys up by scanning; larger ones by hash.
const INDEX_KEYS_FROM: usize = 16;

/// A fatal problem with one file's text.
#[derive(Debug, Clone)]
pub struct ParseError {
    pub message: String,
    pub help: String,
    /// Character index, line (1-based) and column (0-based) of the problem.
    pub index: usize,
    pub line: usize,
    pub col: usize,
}

/// A problem that does not stop the load.
#[derive(Debug, Clone)]
pub struct DuplicateKey {
    pub key: String,
    pub first: Span,
    pub again: Span,
}

pub struct Parsed {
    pub root: Node,
    pub duplicates: Vec<DuplicateKey>,
}

enum Frame {
    Seq {
        anchor: usize,
        span: Span,
        items: Vec<Node>,
    },
    Map {
        anchor: usize,
        span: Span,
        entries: Vec<Entry>,
        pending_key: Option<(Box<str>, Span)>,
        /// Key → entry index, built once a mapping grows past
        /// `INDEX_KEYS_FROM` entries, so duplicate checks stay linear.
        index: Option<HashMap<Box<str>, usize>>,
    },
}

pub fn parse(file: FileId, text: &str) -> Result<Parsed, ParseError> {
    let mut builder = Builder::new(file);
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|error| {
            let marker = error.marker();
            let (message, help) = scan_error_words(error.info(), text, marker.index());
            ParseError {
                message,
                help,
                index: marker.index(),
                line: marker.line(),
                col: marker.col(),
            }
        })?;
        if matches!(event, Event::StreamEnd) {
            break;
        }
        builder.event(event, span)?;
    }
    builder.finish_tree()
}

/// Builds the tree from parser events; [`super::json_parse`] feeds it too.
pub(super) struct Builder {
    file: FileId,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    alias_nodes: usize,
    nodes: usize,
    duplicates: Vec<DuplicateKey>,
    root: Option<Node>,
    documents: usize,
}

impl Builder {
    pub(super) fn new(file: FileId) -> Builder {
        Builder {
            file,
            stack: Vec::new(),
            anchors: HashMap::new(),
            alias_nodes: 0,
            nodes: 0,
            duplicates: Vec::new(),
            root: None,
            documents: 0,
        }
    }

    /// The tree, once every event is in.
    pub(super) fn finish_tree(self) -> Result<Parsed, ParseError> {
        let root = self.root.ok_or_else(|| ParseError {
            message: "the file is empty: it holds no YAML or JSON document".into(),
            help: "an OpenAPI document starts with `openapi: 3.1.0`".into(),
            index: 0,
            line: 1,
            col: 0,
        })?;
        Ok(Parsed {
            root,
            duplicates: self.duplicates,
        })
    }

    fn limit_error(&self, node: &Node, message: String, help: &str) -> ParseError {
        ParseError {
            message,
            help: help.into(),
            index: node.span.start as usize,
            line: node.span.line as usize,
            col: node.span.col as usize,
        }
    }

    fn span(&self, span: ParserSpan) -> Span {
        Span {
            file: self.file,
            start: clamp(span.start.index()),
            end: clamp(span.end.index()),
            line: clamp(span.start.line()),
            col: clamp(span.start.col()),
        }
    }

    pub(super) fn event(
        &mut self,
        event: Event<'_>,
        parser_span: ParserSpan,
    ) -> Result<(), ParseError> {
        let span = self.span(parser_span);
        let error_here = |message: String, help: &str| ParseError {
            message,
            help: help.into(),
            index: parser_span.start.index(),
            line: parser_span.start.line(),
            col: parser_span.start.col(),
        };
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(error_here(
                        "the file holds more than one YAML document".into(),
                        "keep one OpenAPI document per file; remove the `---` separator",
                    ));
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let value = scalar_value(&text, style, tag.as_deref())
                    .map_err(|(message, help)| error_here(message, help))?;
                self.finish(Node { value, span }, anchor)?;
            }
            Event::SequenceStart(anchor, tag) => {
                json_schema_tag(tag.as_deref(), Kind::Seq)
                    .map_err(|(message, help)| error_here(message, help))?;
                if self.stack.len() >= MAX_DEPTH {
                    return Err(error_here(
                        format!("nesting deeper than {MAX_DEPTH} levels"),
                        "real API descriptions nest far less; flatten the structure or use $ref",
                    ));
                }
                self.stack.push(Frame::Seq {
                    anchor,
                    span,
                    items: Vec::new(),
                });
            }
            Event::MappingStart(anchor, tag) => {
                json_schema_tag(tag.as_deref(), Kind::Map)
                    .map_err(|(message, help)| error_here(message, help))?;
                if self.stack.len() >= MAX_DEPTH {
                    return Err(error_here(
                        format!("nesting deeper than {MAX_DEPTH} levels"),
                        "real API descriptions nest far less; flatten the structure or use $ref",
                    ));
                }
                self.stack.push(Frame::Map {
                    anchor,
                    span,
                    entries: Vec::new(),
                    pending_key: None,
                    index: None,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let frame = self.stack.pop().expect("parser balances collection events");
                let (anchor, mut start_span, value) = match frame {
                    Frame::Seq {
                        anchor,
                        span,
                        items,
                    } => (anchor, span, Value::Seq(items)),
                    Frame::Map {
                        anchor,
                        span,
                        entries,
                        index,
                        ..
                    } => (anchor, span, Value::Map(Mapping::new(entries, index))),
                };
                start_span.end = span.end;
                self.finish(
                    Node {
                        value,
                        span: start_span,
                    },
                    anchor,
                )?;
            }
            Event::Alias(anchor) => {
                let Some(target) = self.anchors.get(&anchor) else {
                    return Err(error_here(
                        "alias to an unknown anchor".into(),
                        "define the anchor (`&name`) before using it (`*name`)",
                    ));
                };
                self.alias_nodes += target.size();
                if self.alias_nodes > MAX_ALIAS_NODES {
                    return Err(error_here(
                        format!("YAML aliases expand to more than {MAX_ALIAS_NODES} nodes"),
                        "this looks like an alias bomb; write the repeated parts once and use $ref",
                    ));
                }
                let mut copy = target.clone();
                copy.span = span;
                self.finish(copy, 0)?;
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => {}
        }
        Ok(())
    }

    /// Places a finished node into its parent (or as the root).
    fn finish(&mut self, node: Node, anchor: usize) -> Result<(), ParseError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.limit_error(
                &node,
                format!("the file holds more than {MAX_NODES} values"),
                "split the API description into several files",
            ));
        }
        if anchor != 0 {
            // The anchor keeps a copy of the subtree, which costs as much
            // as expanding an alias to it.
            self.alias_nodes += node.size();
            if self.alias_nodes > MAX_ALIAS_NODES {
                return Err(self.limit_error(
                    &node,
                    format!("YAML anchors and aliases copy more than {MAX_ALIAS_NODES} nodes"),
                    "this looks like an alias bomb; write the repeated parts once and use $ref",
                ));
            }
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map {
                entries,
                pending_key,
                index,
                ..
            }) => match pending_key.take() {
                None => {
                    let Some(key) = key_text(&node) else {
                        return Err(self.limit_error(
                            &node,
                            "a key that is a list or a mapping: keys in an OpenAPI document are strings".into(),
                            "write the key as a string (OpenAPI keeps YAML keys to scalars so the document reads the same as JSON)",
                        ));
                    };
                    *pending_key = Some((key, node.span));
                }
                Some((key, key_span)) => {
                    if index.is_none() && entries.len() >= INDEX_KEYS_FROM {
                        *index = Some(
                            entries
                                .iter()
                                .enumerate()
                                .map(|(at, entry)| (entry.key.clone(), at))
                                .collect(),
                        );
                    }
                    let first = match index {
                        Some(index) => index.get(&key).map(|&at| &entries[at]),
                        None => entries.iter().find(|entry| entry.key == key),
                    };
                    if let Some(first) = first {
                        if self.duplicates.len() >= MAX_DUPLICATES_REPORTED {
                            return Ok(());
                        }
                        self.duplicates.push(DuplicateKey {
                            key: key.to_string(),
                            first: first.key_span,
                            again: key_span,
                        });
                    } else {
                        if let Some(index) = index {
                            index.insert(key.clone(), entries.len());
                        }
                        entries.push(Entry {
                            key,
                            key_span,
                            value: node,
                        });
                    }
                }
            },
        }
        Ok(())
    }
}

fn clamp(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A mapping key as text; `None` for a list or a mapping, which no JSON
/// text (and so no OpenAPI document) can hold as a key.
fn key_text(node: &Node) -> Option<Box<str>> {
    Some(match &node.value {
        Value::Str(text) => text.clone(),
        Value::Int(number) => number.to_string().into(),
        Value::Float(number) => number.to_string().into(),
        Value::Bool(flag) => flag.to_string().into(),
        Value::Null => "null".into(),
        Value::Seq(_) | Value::Map(_) => return None,
    })
}

/// The tags of YAML's JSON schema, the only ones OpenAPI allows (so that a
/// YAML document reads the same as its JSON form).
const JSON_SCHEMA_TAGS: [&str; 7] = ["null", "bool", "int", "float", "str", "seq", "map"];
const CORE_TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// The node a tag is written on.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Scalar,
    Seq,
    Map,
}

/// The JSON schema's name of `tag` (`"int"` for `!!int`); `None` for no
/// tag or the non-specific `!`. Refuses a tag outside the JSON schema, or
/// one that does not fit its node (`!!str {…}`): idemgen cannot say what
/// an application tag (`!include`, `!!binary`) would have made of the
/// value, and reading it as if untagged would check a different document.
fn json_schema_tag(
    tag: Option<&Tag>,
    kind: Kind,
) -> Result<Option<&'static str>, (String, &'static str)> {
    let Some(tag) = tag else { return Ok(None) };
    if is_non_specific(tag) {
        return Ok(None);
    }
    let full = format!("{}{}", tag.handle, tag.suffix);
    let name = full.strip_prefix(CORE_TAG_PREFIX);
    let Some(known) = name.and_then(|name| JSON_SCHEMA_TAGS.iter().find(|known| **known == name))
    else {
        let written = match name {
            Some(name) => format!("!!{name}"),
            None if tag.handle == "!" => format!("!{}", tag.suffix),
            None => format!("!<{full}>"),
        };
        return Err((
            format!("the YAML tag `{written}` is not allowed in an OpenAPI document"),
            "remove the tag; OpenAPI allows only the JSON schema's (!!str, !!int, !!float, !!bool, !!null, !!seq, !!map)",
        ));
    };
    let fits = match kind {
        Kind::Seq => *known == "seq",
        Kind::Map => *known == "map",
        Kind::Scalar => !matches!(*known, "seq" | "map"),
    };
    if !fits {
        let node = match kind {
            Kind::Seq => "a list",
            Kind::Map => "a mapping",
            Kind::Scalar => "a scalar",
        };
        return Err((
            format!("the YAML tag `!!{known}` is written on {node}"),
            "remove the tag, or write the value it names",
        ));
    }
    Ok(Some(known))
}

/// The non-specific tag `!`: a scalar so tagged is a string.
fn is_non_specific(tag: &Tag) -> bool {
    format!("{}{}", tag.handle, tag.suffix) == "!"
}

/// Words a scanner error; a few of them get a clearer message than the
/// scanner's own.
fn scan_error_words(info: &str, text: &str, index: usize) -> (String, String) {
    if info == "recursion limit exceeded" {
        return (
            // The scanner counts open brackets in a byte.
            "brackets nested deeper than 255 levels".into(),
            "real API descriptions nest far less; flatten the structure or use $ref".into(),
        );
    }
    let mut message = format!("invalid YAML/JSON: {info}");
    if info == "found unprintable character" {
        // The snippet cannot show it: name it.
        if let Some(found) = text.chars().nth(index) {
            message.push_str(&format!(" U+{:04X}", u32::from(found)));
        }
    }
    (
        message,
        "fix the syntax at this position; a YAML linter shows more context".into(),
    )
}

/// Resolves a scalar with the YAML 1.2 core schema (which JSON also fits),
/// or by its tag: `!!int "12"` is the integer 12, `!!int abc` an error.
fn scalar_value(
    text: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
) -> Result<Value, (String, &'static str)> {
    let name = json_schema_tag(tag, Kind::Scalar)?;
    if tag.is_some_and(is_non_specific) || name == Some("str") {
        return Ok(Value::Str(text.into()));
    }
    let Some(wanted) = name else {
        if style != ScalarStyle::Plain {
            return Ok(Value::Str(text.into()));
        }
        return Ok(plain_value(text));
    };
    match (wanted, plain_value(text)) {
        ("null", Value::Null) => Ok(Value::Null),
        ("bool", value @ Value::Bool(_)) | ("int", value @ Value::Int(_)) => Ok(value),
        ("float", value @ Value::Float(_)) => Ok(value),
        ("float", Value::Int(number)) => Ok(Value::Float(number as f64)),
        _ => Err((
            format!("`{text}` is not what its YAML tag `!!{wanted}` says"),
            "remove the tag, or write the value it names",
        )),
    }
}

/// A plain scalar's value under the YAML 1.2 core schema.
fn plain_value(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return Value::Str(text.into());
    }
    if let Some(hex) = text.strip_prefix("0x") {
        if let Ok(number) = i64::from_str_radix(hex, 16) {
            return Value::Int(number);
        }
    } else if let Some(octal) = text.strip_prefix("0o") {
        if let Ok(number) = i64::from_str_radix(octal, 8) {
            return Value::Int(number);
        }
    } else if is_decimal_integer(text) {
        if let Ok(number) = text.parse::<i64>() {
            return Value::Int(number);
        }
        // Too large for i64: keep the digits rather than lose precision.
        return Value::Str(text.into());
    } else if is_float(text) {
        if let Ok(number) = text.parse::<f64>() {
            return Value::Float(number);
        }
    }
    Value::Str(text.into())
}

fn is_decimal_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

fn is_float(text: &str) -> bool {
    let body = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (!whole.is_empty() || !fraction.is_empty())
                && whole.bytes().all(|b| b.is_ascii_digit())
                && fraction.bytes().all(|b| b.is_ascii_digit())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(is_decimal_integer);
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        parse(FileId(0), text).map(|parsed| parsed.root).unwrap()
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let node = root("a: 1\nb: '1'\nc: 1.5\nd: true\ne: ~\nf: 0x1F\ng: 2024-06-15\n");
        assert!(matches!(node.get("a").unwrap().value, Value::Int(1)));
        assert_eq!(node.get("b").unwrap().as_str(), Some("1"));
        assert!(matches!(node.get("c").unwrap().value, Value::Float(x) if x == 1.5));
        assert_eq!(node.get("d").unwrap().as_bool(), Some(true));
        assert!(matches!(node.get("e").unwrap().value, Value::Null));
        assert!(matches!(node.get("f").unwrap().value, Value::Int(31)));
        assert_eq!(node.get("g").unwrap().as_str(), Some("2024-06-15"));
    }

    #[test]
    fn positions_are_kept() {
        let node = root("openapi: 3.1.0\npaths:\n  /a:\n    post: {}\n");
        let post = node
            .get("paths")
            .unwrap()
            .get("/a")
            .unwrap()
            .get("post")
            .unwrap();
        assert_eq!((post.span.line, post.span.col), (4, 10));
    }

    #[test]
    fn duplicate_keys_are_reported() {
        let parsed = parse(FileId(0), "a: 1\nb: 2\na: 3\n").unwrap();
        assert_eq!(parsed.duplicates.len(), 1);
        assert_eq!(parsed.duplicates[0].again.line, 3);
    }

    #[test]
    fn duplicates_in_large_mappings_are_found() {
        let mut text: String = (0..100).map(|i| format!("k{i}: {i}\n")).collect();
        text.push_str("k7: again\nk99: again\n");
        let parsed = parse(FileId(0), &text).unwrap();
        let keys: Vec<&str> = parsed.duplicates.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["k7", "k99"]);
        assert_eq!(parsed.root.as_map().unwrap().len(), 100);
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = "- ".repeat(100_000);
        let error = parse(FileId(0), &text).err().unwrap();
        assert!(error.message.contains("nesting"), "{}", error.message);
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        let mut previous = 'a';
        for name in 'b'..='k' {
            let refs = vec![format!("*{previous}"); 9].join(", ");
            text.push_str(&format!("{name}: &{name} [{refs}]\n"));
            previous = name;
        }
        let error = parse(FileId(0), &text).err().unwrap();
        assert!(error.message.contains("alias"), "{}", error.message);
    }

    #[test]
    fn empty_input_is_an_error() {
        assert!(parse(FileId(0), "").is_err());
        assert!(parse(FileId(0), "# only a comment\n").is_err());
    }

    #[test]
    fn a_key_that_is_a_list_or_a_mapping_is_refused_where_it_is() {
        for text in [
            "a: 1\n? [x, y]\n: 2\n",
            "a: 1\n{x: y}: 2\n",
            "a: &k {x: y}\n*k : 2\n",
        ] {
            let error = parse(FileId(0), text).err().unwrap();
            assert!(
                error
                    .message
                    .contains("keys in an OpenAPI document are strings"),
                "{text:?}: {}",
                error.message
            );
            assert_eq!(error.line, 2, "{text:?}");
        }
        // Two different such keys were once one duplicate `<complex key>`.
        assert!(parse(FileId(0), "? [a, b]\n: c\n? {x: y}\n: d\n").is_err());
    }

    #[test]
    fn tags_outside_the_json_schema_are_refused_and_named() {
        for (text, named) in [
            ("a: !!binary aGVsbG8=\n", "`!!binary`"),
            ("a: !include common.yaml\n", "`!include`"),
            (
                "a: !<tag:example.com,2000:x> 1\n",
                "`!<tag:example.com,2000:x>`",
            ),
            ("a: !!set {x, y}\n", "`!!set`"),
        ] {
            let error = parse(FileId(0), text).err().unwrap();
            assert!(error.message.contains(named), "{text:?}: {}", error.message);
            assert!(error.help.contains("!!str"), "{}", error.help);
        }
    }

    #[test]
    fn json_schema_tags_are_read_and_the_non_specific_tag_makes_a_string() {
        let node = root(
            "a: !!str 12\nb: !!int 12\nc: ! 12\nd: !!map {x: 1}\ne: !<tag:yaml.org,2002:str> 1\nf: !!int \"12\"\ng: !!float 1\nh: !!null ''\n",
        );
        assert_eq!(node.get("a").unwrap().as_str(), Some("12"));
        assert!(matches!(node.get("b").unwrap().value, Value::Int(12)));
        assert_eq!(node.get("c").unwrap().as_str(), Some("12"));
        assert!(node.get("d").unwrap().get("x").is_some());
        assert_eq!(node.get("e").unwrap().as_str(), Some("1"));
        // A tag says what a quoted scalar is, too.
        assert!(matches!(node.get("f").unwrap().value, Value::Int(12)));
        assert!(matches!(node.get("g").unwrap().value, Value::Float(x) if x == 1.0));
        assert!(matches!(node.get("h").unwrap().value, Value::Null));
    }

    #[test]
    fn a_json_schema_tag_that_does_not_fit_its_node_is_refused() {
        for (text, said) in [
            ("a: !!str {x: 1}\n", "`!!str` is written on a mapping"),
            ("a: !!map [1]\n", "`!!map` is written on a list"),
            ("a: !!seq x\n", "`!!seq` is written on a scalar"),
            (
                "a: !!int abc\n",
                "`abc` is not what its YAML tag `!!int` says",
            ),
            (
                "a: !!bool 'yes'\n",
                "`yes` is not what its YAML tag `!!bool` says",
            ),
        ] {
            let error = parse(FileId(0), text).err().unwrap();
            assert!(error.message.contains(said), "{text:?}: {}", error.message);
        }
    }

    #[test]
    fn brackets_nested_past_the_scanner_limit_say_so() {
        let text = format!("a: {}{}", "[".repeat(300), "]".repeat(300));
        let error = parse(FileId(0), &text).err().unwrap();
        assert!(error.message.contains("nested deeper"), "{}", error.message);
        assert!(error.help.contains("flatten"), "{}", error.help);
    }

    #[test]
    fn an_unprintable_character_is_named() {
        let error = parse(FileId(0), "a: x\u{0}y\n").err().unwrap();
        assert!(error.message.ends_with("U+0000"), "{}", error.message);
    }
}
