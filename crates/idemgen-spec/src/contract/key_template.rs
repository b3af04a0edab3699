//! Key templates (`pay:{date}:{uuid}`): parsing, worst-case length, how
//! guessable the key is, and the regular expression servers validate with.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Uuid,
    Ulid,
    /// N random bytes, base64url without padding.
    Random(u32),
    Date,
    Timestamp,
    Seq,
    /// Must equal the request-body field at this JSON pointer.
    Field(String),
    /// A key the client chooses (a UUID, a nanoid): 1 to `key.max-length`
    /// visible ASCII characters (`!` to `~`), which the server can check
    /// only for shape and length.
    Opaque,
    /// Any key the IETF draft's `Idempotency-Key` allows: the text of an
    /// sf-string, 1 to `key.max-length` printable ASCII characters, the
    /// space (0x20) included.
    SfString,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Literal(String),
    Segment(Segment),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    pub source: String,
    pub parts: Vec<Part>,
}

/// The `{segment}` names a key format may use.
pub const SEGMENT_NAMES: [&str; 9] = [
    "uuid",
    "ulid",
    "random:N",
    "date",
    "timestamp",
    "seq",
    "field:/pointer",
    "opaque",
    "sf-string",
];

/// The characters of an `{opaque}` key, as a regex class every dialect
/// reads alike: visible ASCII, `!` (0x21) to `~` (0x7E).
pub const OPAQUE_CLASS: &str = "[!-~]";

/// The characters of an `{sf-string}` key, the text an RFC 9651 String
/// carries: printable ASCII, the space (0x20) to `~` (0x7E).
pub const SF_STRING_CLASS: &str = "[ -~]";

/// How hard a key is to guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predictability {
    /// Has a CSPRNG segment (`{uuid}`, `{ulid}`, `{random:N≥16}`).
    Unpredictable,
    /// Its only non-guessable part comes from request fields.
    FieldDerived,
    /// Only dates, timestamps, counters and literals.
    Guessable,
    /// Its unpredictable part is an `{opaque}` key the client chose: the
    /// server cannot tell a UUID from `1`.
    ClientChosen,
}

impl Segment {
    /// Longest text the segment can produce; `None` when unbounded.
    pub fn max_len(&self) -> Option<usize> {
        match self {
            Segment::Uuid => Some(36),
            Segment::Ulid => Some(26),
            Segment::Random(bytes) => Some((*bytes as usize * 4).div_ceil(3)),
            Segment::Date => Some(8),
            Segment::Timestamp => Some(13),
            Segment::Seq => Some(20),
            Segment::Field(_) => None,
            // Its shortest: an opaque key takes whatever room
            // `key.max-length` leaves, and the server refuses longer ones.
            Segment::Opaque | Segment::SfString => Some(1),
        }
    }

    pub fn is_random(&self) -> bool {
        match self {
            Segment::Uuid | Segment::Ulid => true,
            Segment::Random(bytes) => *bytes >= 16,
            _ => false,
        }
    }

    /// A regular expression (Rust `regex` syntax) for the segment's text.
    pub fn pattern(&self) -> String {
        match self {
            Segment::Uuid => {
                "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
                    .into()
            }
            Segment::Ulid => "[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}".into(),
            Segment::Random(bytes) => {
                format!("[A-Za-z0-9_-]{{{}}}", (*bytes as usize * 4).div_ceil(3))
            }
            Segment::Date => "[0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])".into(),
            Segment::Timestamp => "[0-9]{1,13}".into(),
            Segment::Seq => "[0-9]{1,20}".into(),
            // Any text: the server compares it with the body field itself.
            Segment::Field(_) => ".+?".into(),
            Segment::Opaque => format!("{OPAQUE_CLASS}+"),
            Segment::SfString => format!("{SF_STRING_CLASS}+"),
        }
    }
}

impl KeyTemplate {
    pub fn parse(source: &str) -> Result<KeyTemplate, String> {
        // A key travels in a header, a query string or a JSON field, and
        // a control character (a line break, NUL) is sent in none of them
        // as itself: every key such a template spells would be refused.
        if let Some(control) = source.chars().find(|c| c.is_control()) {
            return Err(format!(
                "`{}` holds the control character {control:?}, which no key can carry; remove it",
                source.escape_debug()
            ));
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = source;
        while let Some(open) = rest.find(['{', '}']) {
            if rest.as_bytes()[open] == b'}' {
                return Err(format!("`}}` without a matching `{{` in `{source}`"));
            }
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some(close) = after.find('}') else {
                return Err(format!("`{{` is never closed in `{source}`"));
            };
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(Part::Segment(parse_segment(&after[..close])?));
            rest = &after[close + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        if !parts.iter().any(|part| matches!(part, Part::Segment(_))) {
            return Err(format!(
                "`{source}` has no segment, so every request would share one key; add one such as `{{uuid}}`"
            ));
        }
        Ok(KeyTemplate {
            source: source.to_string(),
            parts,
        })
    }

    /// The literal text before the first segment, e.g. `pay:`.
    pub fn prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(text)) => text,
            _ => "",
        }
    }

    /// Whether the template starts with a business prefix: a name of
    /// letters, digits, `_`, `-` or `.` that starts with a letter, then `:`.
    pub fn has_business_prefix(&self) -> bool {
        let prefix = self.prefix();
        let Some(name) = prefix.split(':').next().filter(|_| prefix.contains(':')) else {
            return false;
        };
        name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    }

    /// Whether the template is just `{opaque}` or `{sf-string}`: a key the
    /// client chooses whole, as the IETF draft and Stripe have it.
    pub fn is_opaque(&self) -> bool {
        matches!(
            self.parts.as_slice(),
            [Part::Segment(Segment::Opaque | Segment::SfString)]
        )
    }

    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.parts.iter().filter_map(|part| match part {
            Part::Segment(segment) => Some(segment),
            Part::Literal(_) => None,
        })
    }

    /// Longest key the template admits; `field_len` gives each `{field:…}`
    /// segment's `maxLength` when the schema declares one. `None`: unbounded.
    /// An `{opaque}` segment counts its shortest (1): it is bounded by
    /// `key.max-length` itself, so this is the room the rest needs.
    pub fn max_len(&self, field_len: impl Fn(&str) -> Option<usize>) -> Option<usize> {
        self.parts.iter().try_fold(0usize, |total, part| {
            let len = match part {
                Part::Literal(text) => text.chars().count(),
                Part::Segment(Segment::Field(pointer)) => field_len(pointer)?,
                Part::Segment(segment) => segment.max_len()?,
            };
            total.checked_add(len)
        })
    }

    pub fn predictability(&self) -> Predictability {
        if self.segments().any(Segment::is_random) {
            Predictability::Unpredictable
        } else if self
            .segments()
            .any(|s| matches!(s, Segment::Opaque | Segment::SfString))
        {
            Predictability::ClientChosen
        } else if self.segments().any(|s| matches!(s, Segment::Field(_))) {
            Predictability::FieldDerived
        } else {
            Predictability::Guessable
        }
    }

    /// An anchored regular expression that accepts exactly the keys the
    /// template describes (a field segment accepts any non-empty text; that
    /// it equals the body field is checked separately).
    pub fn regex(&self) -> String {
        let mut pattern = String::from("^");
        for part in &self.parts {
            match part {
                Part::Literal(text) => pattern.push_str(&regex_escape(text)),
                Part::Segment(segment) => {
                    pattern.push('(');
                    pattern.push_str(&segment.pattern());
                    pattern.push(')');
                }
            }
        }
        pattern.push('$');
        pattern
    }
}

impl KeyTemplate {
    /// The template as a JSON Schema `pattern` for the key's parameter or
    /// body field: anchored, and portable across regex dialects
    /// (ECMA-262 with or without the `u` flag, Python, Rust, PCRE), so
    /// generic tools generate and accept exactly the keys the server does.
    pub fn schema_pattern(&self) -> String {
        let mut pattern = String::from("^");
        for part in &self.parts {
            match part {
                Part::Literal(text) => pattern.push_str(&portable_escape(text)),
                Part::Segment(Segment::Field(_)) => pattern.push_str(".+"),
                Part::Segment(segment) => pattern.push_str(&segment.pattern()),
            }
        }
        pattern.push('$');
        pattern
    }

    /// The template a key schema's `pattern` spells, when it is one: a
    /// pattern [`KeyTemplate::schema_pattern`] or [`KeyTemplate::regex`]
    /// wrote (or one equal to it, see [`KeyTemplate::pattern_matches`]).
    /// `None` for any other pattern, and for `{field:…}` segments, whose
    /// pointer a pattern does not name.
    pub fn from_pattern(pattern: &str) -> Option<KeyTemplate> {
        let written = canonical_pattern(pattern);
        let mut rest = written.strip_prefix('^')?.strip_suffix('$')?;
        let segments = [
            (Segment::Uuid, "{uuid}"),
            (Segment::Ulid, "{ulid}"),
            (Segment::Date, "{date}"),
            (Segment::Timestamp, "{timestamp}"),
            (Segment::Seq, "{seq}"),
        ]
        .map(|(segment, source)| (canonical_pattern(&segment.pattern()), source));
        let mut source = String::new();
        while !rest.is_empty() {
            if let Some((pattern, name)) = segments
                .iter()
                .find(|(pattern, _)| rest.starts_with(pattern.as_str()))
            {
                source.push_str(name);
                rest = &rest[pattern.len()..];
                continue;
            }
            if let Some(after) = rest.strip_prefix("[A-Za-z0-9_-]{") {
                let (digits, after) = after.split_once('}')?;
                let length: u32 = digits.parse().ok()?;
                let bytes = (1..=1024).find(|bytes: &u32| (bytes * 4).div_ceil(3) == length)?;
                source.push_str(&format!("{{random:{bytes}}}"));
                rest = after;
                continue;
            }
            let mut chars = rest.chars();
            let literal = match chars.next()? {
                '\\' => chars.next().filter(|c| !c.is_ascii_alphanumeric())?,
                c if "^$.|?*+()[]{}".contains(c) => return None,
                c => c,
            };
            if matches!(literal, '{' | '}') {
                return None;
            }
            source.push(literal);
            rest = chars.as_str();
        }
        KeyTemplate::parse(&source)
            .ok()
            .filter(|template| template.pattern_matches(pattern))
    }

    /// Whether a schema's `pattern` says the same as the template: equal
    /// to [`KeyTemplate::schema_pattern`] or [`KeyTemplate::regex`] up to
    /// groups, lazy `.+?` and escapes of characters that need none.
    pub fn pattern_matches(&self, pattern: &str) -> bool {
        let written = canonical_pattern(pattern);
        written == canonical_pattern(&self.schema_pattern())
            || written == canonical_pattern(&self.regex())
    }
}

/// Escapes only the regex syntax characters, which every dialect accepts
/// escaped (`\-` or `\:` would be an error under ECMA-262's `u` flag).
fn portable_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// A pattern with groups removed, `.+?` read as `.+` and punctuation that
/// needs no escape unescaped, for comparing two spellings.
fn canonical_pattern(pattern: &str) -> String {
    let pattern = pattern.replace("(?:", "(").replace(".+?", ".+");
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next)
                    if !in_class
                        && !next.is_ascii_alphanumeric()
                        && !"\\^$.|?*+()[]{}".contains(next) =>
                {
                    out.push(next)
                }
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '(' | ')' if !in_class => {}
            _ => out.push(c),
        }
    }
    out
}

fn parse_segment(text: &str) -> Result<Segment, String> {
    let (name, argument) = match text.split_once(':') {
        Some((name, argument)) => (name.trim(), Some(argument.trim())),
        None => (text.trim(), None),
    };
    match (name, argument) {
        ("uuid", None) => Ok(Segment::Uuid),
        ("ulid", None) => Ok(Segment::Ulid),
        ("date", None) => Ok(Segment::Date),
        ("timestamp", None) => Ok(Segment::Timestamp),
        ("seq", None) => Ok(Segment::Seq),
        ("opaque", None) => Ok(Segment::Opaque),
        ("sf-string", None) => Ok(Segment::SfString),
        ("random", Some(count)) => match count.parse::<u32>() {
            Ok(bytes @ 1..=1024) => Ok(Segment::Random(bytes)),
            _ => Err(format!(
                "`{{random:{count}}}` needs a byte count from 1 to 1024, e.g. `{{random:16}}`"
            )),
        },
        ("random", None) => Err("`{random}` needs a byte count, e.g. `{random:16}`".into()),
        ("field", Some(pointer)) if pointer.starts_with('/') => Ok(Segment::Field(pointer.into())),
        ("field", _) => Err(format!(
            "`{{{text}}}` needs a JSON pointer into the request body, e.g. `{{field:/txn_id}}`"
        )),
        _ => {
            let suggestion = crate::contract::suggest::closest(name, SEGMENT_NAMES.iter().copied())
                .map(|name| format!("; did you mean `{{{name}}}`?"))
                .unwrap_or_default();
            Err(format!(
                "unknown key segment `{{{text}}}`{suggestion} (segments: {})",
                SEGMENT_NAMES.map(|name| format!("{{{name}}}")).join(", ")
            ))
        }
    }
}

fn regex_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_article_template() {
        let template = KeyTemplate::parse("pay:{date}:{uuid}").unwrap();
        assert_eq!(template.prefix(), "pay:");
        assert!(template.has_business_prefix());
        assert_eq!(template.max_len(|_| None), Some(4 + 8 + 1 + 36));
        assert_eq!(template.predictability(), Predictability::Unpredictable);
    }

    #[test]
    fn a_control_character_is_refused_wherever_it_is() {
        for source in [
            "pay:{uuid}\n",
            "pay:\u{0}{uuid}",
            "pay:\r\n{uuid}",
            "\u{7f}{uuid}",
        ] {
            let why = KeyTemplate::parse(source).unwrap_err();
            assert!(why.contains("control character"), "{source:?}: {why}");
        }
        assert_eq!(
            KeyTemplate::parse("pay:{uuid}\n").unwrap_err(),
            "`pay:{uuid}\\n` holds the control character '\\n', which no key can carry; remove it"
        );
    }

    #[test]
    fn field_segments() {
        let template = KeyTemplate::parse("pay:{date}:{field:/txn_id}").unwrap();
        assert_eq!(template.predictability(), Predictability::FieldDerived);
        assert_eq!(template.max_len(|_| None), None);
        assert_eq!(template.max_len(|_| Some(32)), Some(4 + 8 + 1 + 32));
    }

    #[test]
    fn guessable_and_prefixless() {
        let template = KeyTemplate::parse("{date}-{seq}").unwrap();
        assert_eq!(template.predictability(), Predictability::Guessable);
        assert!(!template.has_business_prefix());
        assert_eq!(
            KeyTemplate::parse("{random:8}").unwrap().predictability(),
            Predictability::Guessable
        );
    }

    #[test]
    fn errors() {
        assert!(
            KeyTemplate::parse("pay:{uuid")
                .unwrap_err()
                .contains("never closed")
        );
        assert!(
            KeyTemplate::parse("pay:{uid}")
                .unwrap_err()
                .contains("did you mean `{uuid}`")
        );
        assert!(
            KeyTemplate::parse("pay:")
                .unwrap_err()
                .contains("no segment")
        );
        assert!(KeyTemplate::parse("pay:{random:0}").is_err());
    }

    #[test]
    fn schema_patterns_are_portable_and_compared_by_meaning() {
        let template = KeyTemplate::parse("pay.v1:{date}:{uuid}").unwrap();
        let pattern = template.schema_pattern();
        assert!(pattern.starts_with("^pay\\.v1:[0-9]{4}"), "{pattern}");
        assert!(!pattern.contains("\\:") && !pattern.contains("\\-"));
        assert!(template.pattern_matches(&pattern));
        assert!(template.pattern_matches(&template.regex()));
        assert!(!template.pattern_matches("^pay\\.v1:.*$"));
        assert!(!template.pattern_matches(&pattern[1..]), "unanchored");
        let field = KeyTemplate::parse("pay:{field:/txn_id}").unwrap();
        assert_eq!(field.schema_pattern(), "^pay:.+$");
        assert!(field.pattern_matches("^pay:(.+?)$"));
    }

    #[test]
    fn opaque_keys_are_visible_ascii_in_every_dialect() {
        let template = KeyTemplate::parse("{opaque}").unwrap();
        assert!(template.is_opaque());
        assert!(!template.has_business_prefix());
        assert_eq!(template.predictability(), Predictability::ClientChosen);
        assert_eq!(template.schema_pattern(), "^[!-~]+$");
        assert!(template.pattern_matches("^[!-~]+$"));
        assert!(template.pattern_matches(&template.regex()));
        assert!(!template.pattern_matches("^.+$"));
        let regex = regex::Regex::new(&template.regex()).unwrap();
        let portable = regex::Regex::new(&template.schema_pattern()).unwrap();
        // What generic tools read: the pattern as JSON Schema (ECMA-262).
        let schema = jsonschema::validator_for(
            &serde_json::json!({"type": "string", "pattern": template.schema_pattern()}),
        )
        .unwrap();
        for key in [
            "8e03978e-40d5-43e8-bc93-6894a57f9324",
            "V1StGXR8_Z5jdHi6B-myT",
            "a",
            "!~\"\\",
        ] {
            assert!(regex.is_match(key) && portable.is_match(key), "{key}");
            assert!(schema.is_valid(&serde_json::json!(key)), "{key}");
        }
        for key in ["", "a b", " a", "caf\u{e9}", "a\tb"] {
            assert!(!regex.is_match(key) && !portable.is_match(key), "{key:?}");
            assert!(!schema.is_valid(&serde_json::json!(key)), "{key:?}");
        }
        // Room for one character is all an opaque segment needs.
        assert_eq!(template.max_len(|_| None), Some(1));
        let prefixed = KeyTemplate::parse("pay:{opaque}").unwrap();
        assert!(prefixed.has_business_prefix() && !prefixed.is_opaque());
        assert_eq!(prefixed.predictability(), Predictability::ClientChosen);
        let with_uuid = KeyTemplate::parse("{opaque}:{uuid}").unwrap();
        assert_eq!(with_uuid.predictability(), Predictability::Unpredictable);
        assert!(KeyTemplate::parse("{opaque:16}").is_err());
    }

    /// `{sf-string}` is every key the draft's header carries: `{opaque}`'s
    /// characters and the space; nothing else, in every dialect.
    #[test]
    fn sf_string_keys_are_printable_ascii_with_the_space() {
        let template = KeyTemplate::parse("{sf-string}").unwrap();
        assert!(template.is_opaque());
        assert_eq!(template.predictability(), Predictability::ClientChosen);
        assert_eq!(template.schema_pattern(), "^[ -~]+$");
        assert!(template.pattern_matches(&template.regex()));
        let regex = regex::Regex::new(&template.regex()).unwrap();
        let schema = jsonschema::validator_for(
            &serde_json::json!({"type": "string", "pattern": template.schema_pattern()}),
        )
        .unwrap();
        for key in [
            "8e03978e-40d5-43e8-bc93-6894a57f9324",
            "a b",
            " a",
            "!~\"\\",
        ] {
            assert!(regex.is_match(key), "{key}");
            assert!(schema.is_valid(&serde_json::json!(key)), "{key}");
        }
        for key in ["", "caf\u{e9}", "a\tb", "a\u{7f}"] {
            assert!(!regex.is_match(key), "{key:?}");
            assert!(!schema.is_valid(&serde_json::json!(key)), "{key:?}");
        }
        assert_eq!(template.max_len(|_| None), Some(1));
        assert!(KeyTemplate::parse("{sf-string:8}").is_err());
    }

    #[test]
    fn regex_is_anchored_and_escaped() {
        let template = KeyTemplate::parse("pay.v1:{date}:{uuid}").unwrap();
        assert!(template.regex().starts_with("^pay\\.v1:("));
        assert!(template.regex().ends_with(")$"));
    }
}
