//! A JSON fast path: a positioned JSON tokenizer that feeds the same tree
//! builder as the YAML parser, with the same positions (character index,
//! line, column), so everything downstream sees an identical tree. JSON is
//! a small grammar; saphyr's YAML scanner spends most of its time on
//! questions JSON never asks.
//!
//! Anything this strict reader refuses (comments, a YAML flow mapping
//! saved as `.json`, a syntax error) is handed to the YAML parser, which
//! accepts what it can and words the error.

use std::borrow::Cow;

use saphyr_parser::{Event, Marker, ScalarStyle, Span as ParserSpan};

use super::parse::{Builder, ParseError, Parsed};
use super::source::FileId;

/// The tree of a JSON text; `None` when it is not strict JSON.
pub fn parse(file: FileId, text: &str) -> Option<Result<Parsed, ParseError>> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        text,
        at: 0,
        index: 0,
        line: 1,
        col: 0,
    };
    let mut builder = Builder::new(file);
    match reader.document(&mut builder) {
        Ok(()) => Some(builder.finish_tree()),
        Err(Stop::NotJson) => None,
        Err(Stop::Limit(error)) => Some(Err(error)),
    }
}

enum Stop {
    /// Not strict JSON: the YAML parser decides.
    NotJson,
    /// A limit of the builder (depth, size): final.
    Limit(ParseError),
}

impl From<ParseError> for Stop {
    fn from(error: ParseError) -> Self {
        Stop::Limit(error)
    }
}

enum Frame {
    Object,
    Array,
}

struct Reader<'t> {
    bytes: &'t [u8],
    text: &'t str,
    /// Byte offset.
    at: usize,
    /// Character index, line (1-based), column (0-based, characters).
    index: usize,
    line: usize,
    col: usize,
}

impl<'t> Reader<'t> {
    fn marker(&self) -> Marker {
        Marker::new(self.index, self.line, self.col)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Moves past one ASCII byte that is not a line break.
    fn bump(&mut self) {
        self.at += 1;
        self.index += 1;
        self.col += 1;
    }

    /// Spaces and tabs up to the next token on the same line: the YAML
    /// parser counts them into the end of the value before them.
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.bump();
        }
    }

    fn skip_space(&mut self) {
        while let Some(byte) = self.peek() {
            match byte {
                b' ' | b'\t' => self.bump(),
                b'\n' => {
                    self.at += 1;
                    self.index += 1;
                    self.line += 1;
                    self.col = 0;
                }
                // `\r\n` is one break; a lone `\r` too.
                b'\r' => {
                    self.at += 1;
                    self.index += 1;
                    if self.peek() == Some(b'\n') {
                        self.at += 1;
                        self.index += 1;
                    }
                    self.line += 1;
                    self.col = 0;
                }
                _ => return,
            }
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), Stop> {
        self.skip_space();
        if self.peek() != Some(byte) {
            return Err(Stop::NotJson);
        }
        self.bump();
        Ok(())
    }

    fn document(&mut self, builder: &mut Builder) -> Result<(), Stop> {
        let start = self.marker();
        builder.event(Event::StreamStart, ParserSpan::new(start, start))?;
        builder.event(Event::DocumentStart(false), ParserSpan::new(start, start))?;
        let mut stack: Vec<Frame> = Vec::new();
        'value: loop {
            self.skip_space();
            let start = self.marker();
            match self.peek().ok_or(Stop::NotJson)? {
                open @ (b'{' | b'[') => {
                    self.bump();
                    let (event, close) = if open == b'{' {
                        (Event::MappingStart(0, None), b'}')
                    } else {
                        (Event::SequenceStart(0, None), b']')
                    };
                    builder.event(event, ParserSpan::new(start, self.marker()))?;
                    self.skip_space();
                    if self.peek() == Some(close) {
                        self.close(builder, close)?;
                    } else {
                        if open == b'{' {
                            stack.push(Frame::Object);
                            self.key(builder)?;
                        } else {
                            stack.push(Frame::Array);
                        }
                        continue 'value;
                    }
                }
                b'"' => {
                    let value = self.string()?;
                    self.skip_blanks();
                    let span = ParserSpan::new(start, self.marker());
                    builder.event(
                        Event::Scalar(value, ScalarStyle::DoubleQuoted, 0, None),
                        span,
                    )?;
                }
                _ => {
                    let from = self.at;
                    while self.peek().is_some_and(|byte| {
                        byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
                    }) {
                        self.bump();
                    }
                    let word = &self.text[from..self.at];
                    if !is_literal(word) {
                        return Err(Stop::NotJson);
                    }
                    // Unlike quoted ones, plain scalars end where they end.
                    let span = ParserSpan::new(start, self.marker());
                    builder.event(
                        Event::Scalar(Cow::Borrowed(word), ScalarStyle::Plain, 0, None),
                        span,
                    )?;
                }
            }
            // After a value: a separator, or the ends of enclosing containers.
            loop {
                self.skip_space();
                match stack.last() {
                    None => {
                        if self.at != self.bytes.len() {
                            return Err(Stop::NotJson);
                        }
                        let end = self.marker();
                        builder.event(Event::DocumentEnd, ParserSpan::new(end, end))?;
                        return Ok(());
                    }
                    Some(frame) => {
                        let close = match frame {
                            Frame::Object => b'}',
                            Frame::Array => b']',
                        };
                        match self.peek() {
                            Some(b',') => {
                                self.bump();
                                if matches!(frame, Frame::Object) {
                                    self.key(builder)?;
                                }
                                continue 'value;
                            }
                            Some(byte) if byte == close => {
                                stack.pop();
                                self.close(builder, close)?;
                            }
                            _ => return Err(Stop::NotJson),
                        }
                    }
                }
            }
        }
    }

    /// The `}` or `]` at the cursor.
    fn close(&mut self, builder: &mut Builder, close: u8) -> Result<(), Stop> {
        let start = self.marker();
        self.bump();
        self.skip_blanks();
        let event = if close == b'}' {
            Event::MappingEnd
        } else {
            Event::SequenceEnd
        };
        builder.event(event, ParserSpan::new(start, self.marker()))?;
        Ok(())
    }

    /// A key and its colon.
    fn key(&mut self, builder: &mut Builder) -> Result<(), Stop> {
        self.skip_space();
        if self.peek() != Some(b'"') {
            return Err(Stop::NotJson);
        }
        let start = self.marker();
        let key = self.string()?;
        self.skip_blanks();
        let span = ParserSpan::new(start, self.marker());
        builder.event(Event::Scalar(key, ScalarStyle::DoubleQuoted, 0, None), span)?;
        self.expect(b':')
    }

    /// A string at the cursor (on its opening quote), decoded: borrowed
    /// from the text unless it has escapes.
    fn string(&mut self) -> Result<Cow<'t, str>, Stop> {
        self.bump();
        let from = self.at;
        loop {
            match self.peek().ok_or(Stop::NotJson)? {
                b'"' => {
                    let value = &self.text[from..self.at];
                    self.bump();
                    return Ok(Cow::Borrowed(value));
                }
                b'\\' => return self.string_with_escapes(from),
                // JSON strings hold no raw control character (a tab, a
                // line break, NUL): the YAML parser decides what they are.
                byte if byte < 0x20 => return Err(Stop::NotJson),
                byte if byte < 0x80 => self.bump(),
                byte => self.skip_char(byte),
            }
        }
    }

    /// Moves past one multi-byte character: one index, one column.
    fn skip_char(&mut self, first: u8) {
        self.at += utf8_width(first);
        self.index += 1;
        self.col += 1;
    }

    /// The slow path of [`Reader::string`]: from the string's start, with
    /// escapes decoded.
    fn string_with_escapes(&mut self, from: usize) -> Result<Cow<'t, str>, Stop> {
        let mut out = String::from(&self.text[from..self.at]);
        loop {
            let byte = self.peek().ok_or(Stop::NotJson)?;
            match byte {
                b'"' => {
                    self.bump();
                    return Ok(Cow::Owned(out));
                }
                b'\\' => {
                    self.bump();
                    let escape = self.peek().ok_or(Stop::NotJson)?;
                    self.bump();
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let high = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&high) {
                                if self.peek() != Some(b'\\') {
                                    return Err(Stop::NotJson);
                                }
                                self.bump();
                                if self.peek() != Some(b'u') {
                                    return Err(Stop::NotJson);
                                }
                                self.bump();
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(Stop::NotJson);
                                }
                                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                high
                            };
                            out.push(char::from_u32(code).ok_or(Stop::NotJson)?);
                        }
                        // What the loader writes for a surrogate pair
                        // (see `json_escapes`).
                        b'U' => {
                            let digits =
                                self.text.get(self.at..self.at + 8).ok_or(Stop::NotJson)?;
                            let code =
                                u32::from_str_radix(digits, 16).map_err(|_| Stop::NotJson)?;
                            out.push(char::from_u32(code).ok_or(Stop::NotJson)?);
                            for _ in 0..8 {
                                self.bump();
                            }
                        }
                        _ => return Err(Stop::NotJson),
                    }
                }
                byte if byte < 0x20 => return Err(Stop::NotJson),
                byte if byte < 0x80 => {
                    out.push(byte as char);
                    self.bump();
                }
                byte => {
                    let width = utf8_width(byte);
                    out.push_str(&self.text[self.at..self.at + width]);
                    self.skip_char(byte);
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, Stop> {
        let digits = self.text.get(self.at..self.at + 4).ok_or(Stop::NotJson)?;
        let value = u32::from_str_radix(digits, 16).map_err(|_| Stop::NotJson)?;
        for _ in 0..4 {
            self.bump();
        }
        Ok(value)
    }
}

fn utf8_width(first: u8) -> usize {
    match first {
        0xF0.. => 4,
        0xE0.. => 3,
        _ => 2,
    }
}

/// `true`, `false`, `null` or a JSON number.
fn is_literal(word: &str) -> bool {
    if matches!(word, "true" | "false" | "null") {
        return true;
    }
    let digits = word.strip_prefix('-').unwrap_or(word);
    let (mantissa, exponent) = match digits.find(['e', 'E']) {
        Some(at) => (&digits[..at], Some(&digits[at + 1..])),
        None => (digits, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (mantissa, None),
    };
    let all_digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    all_digits(whole)
        && (whole == "0" || !whole.starts_with('0'))
        && fraction.is_none_or(all_digits)
        && exponent.is_none_or(|exponent| {
            all_digits(exponent.strip_prefix(['+', '-']).unwrap_or(exponent))
        })
}
