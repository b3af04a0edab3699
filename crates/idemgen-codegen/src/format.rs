//! The one formatter of generated Rust: `syn` parses it, `prettyplease`
//! prints it. The layout depends on the code alone, never on the machine
//! (no rustfmt is run or needed), and a template mistake is a parse error
//! naming the file and line, never broken output.
//!
//! prettyplease keeps doc comments (they are attributes) but a `//`
//! comment is not part of the syntax tree. So each whole-line `//`
//! comment becomes a `#[comment = "…"]` attribute on what follows it (an
//! item, statement, struct field or match arm), which prettyplease prints
//! back as the same `//` line at the indentation of its new place. A
//! comment with nothing after it to carry it, one after code on its line,
//! or a block comment is refused: prettyplease would drop it. The comments
//! of the output are then checked against those of the input, so none is
//! ever lost or mangled silently.

/// `source` parsed and printed; `path` names the file in errors.
pub fn rust(path: &str, source: &str) -> Result<String, String> {
    print(path, source, Verbatim::AsWritten)
}

/// How a `macro_rules!` definition comes out. prettyplease prints a
/// macro's body as a flat run of tokens, so a definition keeps the layout
/// its template gives it (rustfmt leaves them alone too).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verbatim {
    AsWritten,
    /// Its tokens and comments alone, to compare two layouts.
    Tokens,
}

fn print(path: &str, source: &str, verbatim: Verbatim) -> Result<String, String> {
    let (rest, macros) = set_aside_macros(source);
    let carried = carry_blank_lines(&carry_comments(path, &rest)?);
    let file = syn::parse_file(&carried).map_err(|error| {
        let start = error.span().start();
        let line = rest.lines().nth(start.line.saturating_sub(1)).unwrap_or("");
        let hint = if syn::parse_file(&without_comments(&rest)).is_ok() {
            "\n  help: a `//` comment is kept only where an item, statement, struct field \
             or match arm follows it; move it there or remove it"
        } else {
            ""
        };
        format!(
            "the generated {path} is not valid Rust: {error} at line {}, column {}:\n  {}{hint}",
            start.line,
            start.column + 1,
            line.trim_end()
        )
    })?;
    let mut printed = blank_lines(&prettyplease::unparse(&file).replace(BLANK, ""));
    for (index, text) in macros.iter().enumerate() {
        let text = match verbatim {
            Verbatim::AsWritten => text.clone(),
            Verbatim::Tokens => {
                let tokens: proc_macro2::TokenStream = text.parse().unwrap_or_default();
                format!("{tokens} {:?}", plain_comments(text))
            }
        };
        printed = printed.replacen(&placeholder(index), &text, 1);
    }
    let before = plain_comments(source);
    let after = plain_comments(&printed);
    if verbatim == Verbatim::AsWritten && before != after {
        let lost = before
            .iter()
            .find(|comment| !after.contains(comment))
            .map_or_else(String::new, |comment| format!(": `//{comment}`"));
        return Err(format!(
            "a `//` comment of the generated {path} did not survive formatting{lost}\n  help: \
             a comment is kept only where an item, statement, struct field or match arm \
             follows it"
        ));
    }
    Ok(printed)
}

/// A blank line the template chose, as prettyplease prints it (see
/// [`carry_blank_lines`]).
const BLANK: &str = "//\u{1}";

/// `source` with the blank lines that carry meaning carried as [`BLANK`]
/// comments: one between two groups of `use`s, and one after a comment,
/// which then stands apart from the item below it.
fn carry_blank_lines(source: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = String::with_capacity(source.len());
    let is_use = |line: &str| {
        let line = line.trim_start();
        line.starts_with("use ") || line.starts_with("pub use ")
    };
    for (index, line) in lines.iter().enumerate() {
        let previous = index.checked_sub(1).map_or("", |index| lines[index].trim());
        let next = lines.get(index + 1).copied().unwrap_or("");
        let between_uses = is_use(previous) && previous.ends_with(';') && is_use(next);
        let after_comment = previous.starts_with("#[comment = ") && !next.trim().is_empty();
        if line.trim().is_empty() && (between_uses || after_comment) {
            out.push_str("#[comment = \"\u{1}\"]");
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The item that holds a `macro_rules!` definition's place while the rest
/// is printed.
fn placeholder(index: usize) -> String {
    format!("const __IDEMGEN_MACRO_{index}: () = ();")
}

/// `source` with each `macro_rules! name { … }` that starts a line replaced
/// by a [`placeholder`] (its attributes and doc comments stay on it), and
/// the definitions as written.
fn set_aside_macros(source: &str) -> (String, Vec<String>) {
    let mut rest = String::with_capacity(source.len());
    let mut macros = Vec::new();
    let mut copied = 0;
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let start = offset + (line.len() - line.trim_start().len());
        offset += line.len();
        if start < copied || !source[start..].starts_with("macro_rules!") {
            continue;
        }
        let Some(end) = macro_end(source, start) else {
            continue;
        };
        rest.push_str(&source[copied..start]);
        rest.push_str(&placeholder(macros.len()));
        // Lines keep their numbers for parse errors.
        rest.push_str(&"\n".repeat(source[start..end].matches('\n').count()));
        macros.push(source[start..end].to_string());
        copied = end;
    }
    rest.push_str(&source[copied..]);
    (rest, macros)
}

/// The byte offset just past the braces of the `macro_rules!` at `start`.
fn macro_end(source: &str, start: usize) -> Option<usize> {
    let tokens: proc_macro2::TokenStream = source[start..].parse().ok()?;
    let mut tokens = tokens.into_iter();
    let (Some(_), Some(_), Some(_), Some(proc_macro2::TokenTree::Group(body))) =
        (tokens.next(), tokens.next(), tokens.next(), tokens.next())
    else {
        return None;
    };
    if body.delimiter() != proc_macro2::Delimiter::Brace {
        return None;
    }
    // Lines count from 1 and columns in characters, from `start`.
    let end = body.span().end();
    let line_start: usize = source[start..]
        .split_inclusive('\n')
        .take(end.line - 1)
        .map(str::len)
        .sum();
    let line = &source[start + line_start..];
    let column: usize = line.chars().take(end.column).map(char::len_utf8).sum();
    Some(start + line_start + column)
}

/// Whether `a` and `b` are the same Rust apart from layout: the same
/// tokens and the same comments in the same places, as when rustfmt (or
/// `cargo fmt`) relaid out a file this module printed.
/// [`LEFT_AS_GENERATED`] is layout too: a user who deletes it to let
/// `cargo fmt` relay a file out has not edited its code.
pub fn same_but_layout(a: &str, b: &str) -> bool {
    let code = |text: &str| text.replacen(&format!("{LEFT_AS_GENERATED}\n"), "", 1);
    match (
        print("", &code(a), Verbatim::Tokens),
        print("", &code(b), Verbatim::Tokens),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A comment of the source, found by [`comments`].
#[derive(Debug, PartialEq, Eq)]
struct Comment {
    /// Byte offsets of `//` (or `/*`) and of the end of the comment.
    start: usize,
    end: usize,
    /// Only whitespace before it on its line.
    own_line: bool,
}

impl Comment {
    fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start..self.end]
    }

    /// A `//` comment, not a `///` or `//!` doc comment (`////` is a plain
    /// one again) and not a block comment.
    fn is_plain_line(&self, source: &str) -> bool {
        let text = self.text(source);
        text.starts_with("//")
            && !(text.starts_with("//!") || (text.starts_with("///") && !text.starts_with("////")))
    }

    fn is_doc(&self, source: &str) -> bool {
        let text = self.text(source);
        ["///", "//!", "/**", "/*!"]
            .iter()
            .any(|doc| text.starts_with(doc))
            && !text.starts_with("////")
            && !text.starts_with("/***")
            && text != "/**/"
    }
}

/// Every comment of `source`, skipping what looks like one inside a string
/// or character literal.
fn comments(source: &str) -> Vec<Comment> {
    let bytes = source.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
    let mut found = Vec::new();
    let mut line_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                line_start = i + 1;
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = source[i..].find('\n').map_or(source.len(), |n| i + n);
                found.push(Comment {
                    start: i,
                    end,
                    own_line: source[line_start..i].trim().is_empty(),
                });
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                // Block comments nest.
                let (start, mut depth) = (i, 0usize);
                while i < bytes.len() {
                    if bytes[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if bytes[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                found.push(Comment {
                    start,
                    end: i,
                    own_line: source[line_start..start].trim().is_empty(),
                });
            }
            b'"' => i = skip_string(bytes, i + 1, 0),
            b'r' | b'b' | b'c' if i == 0 || !ident(bytes[i - 1]) => {
                // A prefixed literal: b"…", r"…", r#"…"#, br#"…"#, b'…'.
                let mut j = i + 1;
                if bytes[i] != b'r' && bytes.get(j) == Some(&b'r') {
                    j += 1;
                }
                let raw = bytes[i..j].contains(&b'r');
                let hashes = bytes[j..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(j + hashes) == Some(&b'"') && (raw || hashes == 0) {
                    i = skip_string(bytes, j + hashes + 1, if raw { hashes + 1 } else { 0 });
                } else if bytes[i] == b'b' && bytes.get(j) == Some(&b'\'') {
                    i = skip_char(bytes, j);
                } else {
                    i = j;
                }
            }
            b'\'' => i = skip_char(bytes, i),
            _ => i += 1,
        }
    }
    found
}

/// Past the closing quote of a string whose contents start at `i`; `raw`
/// is 0 for an escaped string, else one more than its `#`s.
fn skip_string(bytes: &[u8], mut i: usize, raw: usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if raw == 0 => i += 2,
            b'"' if raw == 0 => return i + 1,
            b'"' if bytes[i + 1..]
                .iter()
                .take(raw - 1)
                .filter(|&&b| b == b'#')
                .count()
                == raw - 1 =>
            {
                return i + raw;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Past a character literal at `i` (its opening quote), or past the quote
/// of a lifetime or label.
fn skip_char(bytes: &[u8], i: usize) -> usize {
    if bytes.get(i + 1) == Some(&b'\\') {
        let close = bytes[i + 2..].iter().position(|&b| b == b'\'');
        return close.map_or(bytes.len(), |close| i + 2 + close + 1);
    }
    // One character (of up to four bytes) and a quote: a literal.
    let len = match bytes.get(i + 1) {
        Some(b) if *b < 0x80 => 1,
        Some(b) if *b >= 0xf0 => 4,
        Some(b) if *b >= 0xe0 => 3,
        Some(_) => 2,
        None => return bytes.len(),
    };
    if bytes.get(i + 1 + len) == Some(&b'\'') {
        i + len + 2
    } else {
        i + 1
    }
}

/// `source` with each whole-line `//` comment turned into a
/// `#[comment = "…"]` attribute; other comments are refused.
fn carry_comments(path: &str, source: &str) -> Result<String, String> {
    let mut out = String::with_capacity(source.len() + source.len() / 8);
    let mut copied = 0;
    for comment in comments(source) {
        if comment.is_doc(source) {
            continue;
        }
        let line = source[..comment.start].matches('\n').count() + 1;
        if !comment.own_line || !comment.is_plain_line(source) {
            return Err(format!(
                "the generated {path} has a comment at line {line} that formatting would drop: \
                 `{}`\n  help: write it as `//` lines of its own before an item, statement, \
                 struct field or match arm",
                comment.text(source).lines().next().unwrap_or("")
            ));
        }
        out.push_str(&source[copied..comment.start]);
        let text = comment.text(source)["//".len()..].trim_end();
        out.push_str("#[comment = ");
        out.push_str(&proc_macro2::Literal::string(text).to_string());
        out.push(']');
        copied = comment.end;
    }
    out.push_str(&source[copied..]);
    Ok(out)
}

/// `source` without its plain comments, to tell a misplaced comment from
/// other invalid Rust.
fn without_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut copied = 0;
    for comment in comments(source) {
        if !comment.is_doc(source) {
            out.push_str(&source[copied..comment.start]);
            copied = comment.end;
        }
    }
    out.push_str(&source[copied..]);
    out
}

/// The text after `//` of every plain `//` comment, in order.
fn plain_comments(source: &str) -> Vec<String> {
    comments(source)
        .iter()
        .filter(|comment| comment.is_plain_line(source))
        .map(|comment| comment.text(source)["//".len()..].trim_end().to_string())
        .collect()
}

/// A blank line after the module's inner doc and attributes, between
/// items and methods (not between one-line declarations of one kind or
/// `use`s: their groups are the template's, see [`carry_blank_lines`]),
/// and before a
/// comment that follows a finished statement, as a person would leave them
/// (prettyplease prints none).
fn blank_lines(source: &str) -> String {
    const STARTS: [&str; 7] = ["//", "#[", "pub ", "impl ", "fn ", "use ", "async fn "];
    let indent = |text: &str| text.len() - text.trim_start().len();
    let inner = |text: &str| text.starts_with("//!") || text.starts_with("#![");
    let mut out = String::with_capacity(source.len() + source.len() / 16);
    let mut previous: Option<&str> = None;
    for line in source.lines() {
        if let Some(before) = previous {
            let (a, b) = (before.trim(), line.trim());
            let ends_item = !a.starts_with("//")
                && (a.ends_with('}') || a.ends_with(';') || a.starts_with("#!["));
            let starts_item = STARTS.iter().any(|start| b.starts_with(start));
            let blank = if a.is_empty() || b.is_empty() {
                false
            } else if inner(a) {
                !inner(b)
            } else if a.ends_with(';') && a.starts_with("use ") && b.starts_with("use ") {
                false
            } else if a.ends_with(';') && item_kind(a).is_some() {
                item_kind(a) != item_kind(b) && starts_item
            } else if b.starts_with("//") && a.ends_with(';') && !a.starts_with("//") {
                // After a statement that ends on a continuation line.
                indent(before) >= indent(line)
            } else {
                ends_item && starts_item
            };
            if blank && indent(before) >= indent(line) {
                out.push('\n');
            }
        }
        out.push_str(line);
        out.push('\n');
        previous = Some(line);
    }
    out
}

/// The words that name a one-line declaration's kind (`pub mod`, `pub
/// const`), for a line that is one.
fn item_kind(line: &str) -> Option<&str> {
    const KINDS: [&str; 7] = [
        "pub mod ",
        "mod ",
        "pub use ",
        "pub const ",
        "const ",
        "pub static ",
        "static ",
    ];
    KINDS.into_iter().find(|kind| line.starts_with(kind))
}

/// The inner attribute that tells rustfmt (and so `cargo fmt`) to leave a
/// file idemgen owns as [`rust`] laid it out. prettyplease's layout is
/// not rustfmt's, and running rustfmt at generation time would make the
/// bytes depend on the machine; with it, `cargo fmt --check` passes in the
/// user's workspace and every machine generates the same bytes. rustc
/// never sees it (`cfg(rustfmt)` is false there). The files the user owns
/// do not carry it: their layout is rustfmt's already.
pub const LEFT_AS_GENERATED: &str = "#![cfg_attr(rustfmt, rustfmt::skip)]";

/// `source`, a file idemgen owns, with [`LEFT_AS_GENERATED`] after its
/// inner doc comment (or first, when it has none).
pub fn left_as_generated(source: &str) -> String {
    let doc: usize = source
        .split_inclusive('\n')
        .take_while(|line| line.starts_with("//!"))
        .map(str::len)
        .sum();
    format!("{}{LEFT_AS_GENERATED}\n{}", &source[..doc], &source[doc..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_keep_their_place_before_items_statements_fields_and_arms() {
        let source = "//! The module.\n\
            // Before an item.\n\
            fn f(x: Option<u8>) -> S {\n\
            // Before a statement.\n\
            //\n\
            //   indented text\n\
            let y = 1;\n\
            match x {\n\
            // Before an arm.\n\
            Some(_) => {}\n\
            None => {}\n\
            }\n\
            S {\n\
            // Before a field.\n\
            y,\n\
            }\n\
            }\n";
        let printed = rust("src/f.rs", source).unwrap();
        assert_eq!(
            printed,
            "//! The module.\n\
             \n\
             // Before an item.\n\
             fn f(x: Option<u8>) -> S {\n\
             \x20   // Before a statement.\n\
             \x20   //\n\
             \x20   //   indented text\n\
             \x20   let y = 1;\n\
             \x20   match x {\n\
             \x20       // Before an arm.\n\
             \x20       Some(_) => {}\n\
             \x20       None => {}\n\
             \x20   }\n\
             \x20   S {\n\
             \x20       // Before a field.\n\
             \x20       y,\n\
             \x20   }\n\
             }\n"
        );
        // Printing is idempotent, whatever the layout it starts from.
        assert_eq!(rust("src/f.rs", &printed).unwrap(), printed);
    }

    #[test]
    fn comment_like_text_in_literals_is_code() {
        let source = "fn f() -> [&'static str; 4] {\n\
            let c = '\"';\n\
            let _ = (c, b'\"', 'x');\n\
            [\"// not a comment\", r#\"\"// nor this\"#, b\"/* x */\", r\"\\\"]\n\
            }\n";
        assert!(comments(source).is_empty(), "{:?}", comments(source));
        assert_eq!(
            plain_comments(&rust("f.rs", source).unwrap()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_comment_formatting_would_drop_is_refused_with_its_line() {
        let trailing = rust("src/a.rs", "fn f() {\n    g(); // after code\n}\n").unwrap_err();
        assert!(
            trailing.contains("src/a.rs has a comment at line 2"),
            "{trailing}"
        );
        let block = rust("src/a.rs", "/* block */\nfn f() {}\n").unwrap_err();
        assert!(block.contains("at line 1"), "{block}");
        let last = rust(
            "src/a.rs",
            "fn f() {\n    g();\n    // nothing follows\n}\n",
        );
        let last = last.unwrap_err();
        assert!(
            last.contains("not valid Rust") && last.contains("a `//` comment is kept only"),
            "{last}"
        );
        let in_macro = rust(
            "src/a.rs",
            "fn f() {\n    m! {\n        // inside\n        1\n    }\n}\n",
        )
        .unwrap_err();
        assert!(
            in_macro.contains("did not survive formatting"),
            "{in_macro}"
        );
    }

    #[test]
    fn invalid_rust_names_the_file_and_line() {
        let error = rust("src/main.rs", "fn main() {}\nfn main( {\n").unwrap_err();
        assert!(
            error.starts_with("the generated src/main.rs is not valid Rust")
                && error.contains("line 2"),
            "{error}"
        );
        assert!(!error.contains("help"), "{error}");
    }

    #[test]
    fn a_relayout_is_the_same_but_an_edit_is_not() {
        let ours = rust(
            "a.rs",
            "use b::{c, d};\n// Why.\nfn f() -> u8 { match 1 { 1 => 2, _ => 3 } }\n",
        )
        .unwrap();
        let relaid = "use b::{c, d};\n\n// Why.\nfn f() -> u8 {\n    match 1 {\n        \
                      1 => { 2 }\n        _ => 3,\n    }\n}\n";
        assert!(same_but_layout(&ours, relaid));
        assert!(!same_but_layout(&ours, &relaid.replace("=> 3", "=> 4")));
        assert!(!same_but_layout(&ours, &relaid.replace("Why", "Why not")));
        assert!(!same_but_layout(&ours, "fn f( {"));
    }

    #[test]
    fn a_macro_definition_keeps_its_layout_and_comments() {
        let source = "//! M.\n\n/// Picks one.\n#[macro_export]\nmacro_rules! pick {\n    \
                      (a: $a:expr $(,)?) => {{\n        // The only one.\n        $a\n    }};\n}\n\n\
                      fn f() -> u8 {\n    2\n}\n\n/// Docs; with a `;`.\n/// More.\nfn g() {}\n";
        let printed = rust("m.rs", source).unwrap();
        assert_eq!(printed, source);
        let relaid = source.replace("    (a: $a:expr $(,)?) => {{", "  (a: $a:expr $(,)?) => {{");
        assert!(same_but_layout(&printed, &relaid));
        assert!(!same_but_layout(
            &printed,
            &relaid.replace("$a\n", "$a + 1\n")
        ));
    }

    #[test]
    fn a_comment_the_template_set_apart_stays_apart() {
        let source = "//! M.\n\n// Apart.\n\n// Attached.\nuse a::b;\n";
        assert_eq!(rust("m.rs", source).unwrap(), source);
    }

    #[test]
    fn blank_lines_group_uses_and_one_line_declarations() {
        let source = "pub mod a;\npub mod b;\nuse std::fmt;\n\nuse serde::Serialize;\n\
                      use crate::a::A;\npub const X: u8 = 1;\npub const Y: u8 = 2;\n\
                      #[cfg(test)]\nconst Z: u8 = 3;\nfn f() {\n    let x = g()\n        \
                      .h();\n    // Why.\n    x.i();\n}\n";
        assert_eq!(
            rust("a.rs", source).unwrap(),
            "pub mod a;\npub mod b;\n\nuse std::fmt;\n\nuse serde::Serialize;\n\
             use crate::a::A;\n\npub const X: u8 = 1;\npub const Y: u8 = 2;\n\n\
             #[cfg(test)]\nconst Z: u8 = 3;\n\nfn f() {\n    let x = g().h();\n\n    \
             // Why.\n    x.i();\n}\n"
        );
    }
}
