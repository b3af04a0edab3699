//! Text renderings of the window math: a terminal table, a markdown table for
//! pull-request comments, and the `idemgen window --format json` document.

use serde_json::{Value, json};

pub use idemgen_spec::contract::duration::format_ms;

use idemgen_spec::window::{Verdict, WindowInputs, WindowMath, compute};

/// One operation's window math, ready to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowRow {
    /// `operationId`, or whatever name the caller chose when it is absent.
    pub operation: String,
    pub method: String,
    pub path: String,
    pub inputs: WindowInputs,
    pub math: WindowMath,
}

impl WindowRow {
    /// Builds a row and computes its math, so the two cannot disagree.
    pub fn new(
        operation: impl Into<String>,
        method: impl Into<String>,
        path: impl Into<String>,
        inputs: WindowInputs,
    ) -> WindowRow {
        let math = compute(&inputs);
        WindowRow {
            operation: operation.into(),
            method: method.into(),
            path: path.into(),
            inputs,
            math,
        }
    }
}

/// Short form of the retry list: every delay when there are a few, else the
/// count and total so a 200-entry list does not swamp the table.
pub(super) fn format_retries(retries_ms: &[u64]) -> String {
    const LISTED_AT_MOST: usize = 4;
    match retries_ms.len() {
        0 => "none".into(),
        count if count <= LISTED_AT_MOST => retries_ms
            .iter()
            .map(|ms| format_ms(*ms))
            .collect::<Vec<_>>()
            .join(", "),
        count if retries_ms.iter().all(|ms| *ms == retries_ms[0]) => {
            format!("{count} × {}", format_ms(retries_ms[0]))
        }
        count => {
            let total = retries_ms
                .iter()
                .fold(0u64, |sum, ms| sum.saturating_add(*ms));
            format!("{count} delays, Σ {}", format_ms(total))
        }
    }
}

fn format_optional(ms: Option<u64>) -> String {
    ms.map_or_else(|| "?".into(), format_ms)
}

/// Operation names are user input: control characters would corrupt a
/// terminal or break a table row, so show them escaped.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

const HEADERS: [&str; 10] = [
    "operation",
    "timeout",
    "retries",
    "jitter",
    "processing",
    "2× bound",
    "retry span",
    "window",
    "verdict",
    "smallest safe window",
];

/// The verdict cell, naming which bound the window misses.
fn verdict_cell(math: &WindowMath) -> String {
    match math.verdict {
        Verdict::TooShort => {
            let mut missed = Vec::new();
            if math.below_two_x_bound() {
                missed.push("2× bound");
            }
            if math.below_retry_span() {
                missed.push("retry span");
            }
            format!("too-short ({})", missed.join(", "))
        }
        verdict => verdict.as_str().into(),
    }
}

fn cells(row: &WindowRow) -> [String; 10] {
    [
        row.operation.clone(),
        format_optional(row.inputs.timeout_ms),
        format_retries(&row.inputs.retries_ms),
        format_ms(row.inputs.jitter_ms),
        format_optional(row.inputs.processing_ms),
        format_optional(row.math.required_ms),
        format_optional(row.math.retry_span_ms),
        format_optional(row.inputs.window_ms),
        verdict_cell(&row.math),
        format_optional(row.math.smallest_safe_ms),
    ]
}

/// A plain aligned table for terminals. `?` marks a value that cannot be
/// known because an input is missing.
pub fn table(rows: &[WindowRow]) -> String {
    // One generated name should not push every other column off screen.
    const LONGEST_OPERATION: usize = 48;
    let body: Vec<[String; 10]> = rows
        .iter()
        .map(|row| {
            let mut line = cells(row);
            line[0] = truncate_chars(&printable(&line[0]), LONGEST_OPERATION);
            line
        })
        .collect();
    // Width in chars, not bytes: `×` and `Σ` are multi-byte.
    let mut widths = HEADERS.map(|header| header.chars().count());
    for row in &body {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header_cells = HEADERS.map(String::from);
    for line in std::iter::once(&header_cells).chain(&body) {
        let padded: Vec<String> = line
            .iter()
            .zip(widths)
            .map(|(cell, width)| {
                let pad = width - cell.chars().count();
                format!("{cell}{}", " ".repeat(pad))
            })
            .collect();
        out.push_str(padded.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// What the smallest safe window is and is not, after the table and the
/// markdown: it covers one client's retries, not a client that keeps a key
/// and resends it later.
pub const FLOOR_NOTE: &str = "\
The smallest safe window is a floor: it covers one client's retries, not a
client that keeps a key and resends it after a restart or an outage. Such a
resumed call may start a new attempt only until window - max-processing
after the key's first send; money APIs and resumable clients keep keys for
hours or days (Stripe keeps them 24 h).
";

/// Cuts text to at most `max_chars` characters, marking the cut with `…`.
pub(super) fn truncate_chars(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut short: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// Escapes what would break a GitHub markdown table cell or inject markup.
fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in printable(text).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' | '*' | '_' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A GitHub-flavoured markdown table plus a paragraph explaining the bounds.
pub fn markdown(rows: &[WindowRow]) -> String {
    let mut out = String::new();
    out.push_str(&format!("| {} |\n", HEADERS.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(HEADERS.len())));
    for row in rows {
        let line: Vec<String> = cells(row).iter().map(|cell| markdown_cell(cell)).collect();
        out.push_str(&format!("| {} |\n", line.join(" | ")));
    }
    out.push('\n');
    out.push_str(
        "A key must be remembered until no retry of the same request can still arrive. \
         The **2× bound** is the article's rule, \
         `2 × (timeout + Σretries + retries×jitter + max-processing)`. \
         The **retry span** is the real time from the first attempt's arrival to the end of \
         the last retry's processing, \
         `retries×timeout + Σretries + retries×jitter + max-processing`; \
         with many retries it exceeds the 2× bound. \
         The window must cover both, so the smallest safe window is the larger one. \
         `?` means an input (`client.timeout`, `server.max-processing` or `window`) is missing.\n",
    );
    out.push('\n');
    let note = FLOOR_NOTE
        .replace('\n', " ")
        .replace("window - max-processing", "`window − max-processing`");
    out.push_str(note.trim_end());
    out.push('\n');
    out
}

/// One operation's math as a two-column markdown table (quantity, value),
/// narrow enough for an editor's hover.
pub fn markdown_one(row: &WindowRow) -> String {
    let mut out = String::from("| | |\n|---|---|\n");
    for (header, cell) in HEADERS.iter().zip(cells(row)).skip(1) {
        out.push_str(&format!("| {header} | {} |\n", markdown_cell(&cell)));
    }
    out
}

/// The `idemgen window --format json` document:
/// `{"operations": [{"operation", "method", "path", "timeout_ms",
/// "retry_delay_ms", "jitter_ms", "processing_ms", "required_ms",
/// "retry_span_ms", "window_ms", "verdict"}]}`.
///
/// `retry_delay_ms` is the **total** backoff, Σretries, without jitter; the
/// individual delays are in the extra `retries_ms` list. Unknown numbers are
/// `null`. Extra fields: `retries_ms` and `smallest_safe_ms`.
pub fn json(rows: &[WindowRow]) -> Value {
    let operations: Vec<Value> = rows
        .iter()
        .map(|row| {
            json!({
                "operation": row.operation,
                "method": row.method,
                "path": row.path,
                "timeout_ms": row.inputs.timeout_ms,
                "retry_delay_ms": row.inputs.total_retry_delay_ms(),
                "retries_ms": row.inputs.retries_ms,
                "jitter_ms": row.inputs.jitter_ms,
                "processing_ms": row.inputs.processing_ms,
                "required_ms": row.math.required_ms,
                "retry_span_ms": row.math.retry_span_ms,
                "smallest_safe_ms": row.math.smallest_safe_ms,
                "window_ms": row.inputs.window_ms,
                "verdict": row.math.verdict.as_str(),
            })
        })
        .collect();
    json!({ "operations": operations })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn one_operation_reads_top_down() {
        let text = markdown_one(&article_row(Some(16_000)));
        assert!(text.contains("| 2× bound | 18s |\n"), "{text}");
        assert!(text.contains("| retry span | 14s |\n"), "{text}");
        assert!(
            text.contains("| verdict | too-short (2× bound) |\n"),
            "{text}"
        );
        assert!(text.ends_with("| smallest safe window | 18s |\n"), "{text}");
    }

    pub(crate) fn article_row(window_ms: Option<u64>) -> WindowRow {
        WindowRow::new(
            "onPayCallback",
            "POST",
            "/callbacks/pay",
            WindowInputs {
                timeout_ms: Some(5_000),
                retries_ms: vec![200, 800],
                jitter_ms: 0,
                processing_ms: Some(3_000),
                window_ms,
            },
        )
    }

    #[test]
    fn durations_read_like_the_contract() {
        assert_eq!(format_ms(0), "0s");
        assert_eq!(format_ms(250), "250ms");
        assert_eq!(format_ms(1_000), "1s");
        assert_eq!(format_ms(1_500), "1.5s");
        assert_eq!(format_ms(17_999), "17.999s");
        assert_eq!(format_ms(18_000), "18s");
        assert_eq!(format_ms(120_000), "2m");
        assert_eq!(format_ms(90_000), "1m30s");
        assert_eq!(format_ms(60_500), "1m500ms");
        assert_eq!(format_ms(3_600_000), "1h");
        assert_eq!(format_ms(86_400_000 * 2 + 3_600_000), "2d1h");
        assert!(!format_ms(u64::MAX).is_empty());
    }

    #[test]
    fn json_has_exactly_the_contract_keys_plus_extras() {
        let value = json(&[article_row(Some(18_000))]);
        let object = value.as_object().unwrap();
        assert_eq!(object.keys().collect::<Vec<_>>(), vec!["operations"]);
        let operation = value["operations"][0].as_object().unwrap();
        let mut keys: Vec<&str> = operation.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut expected = vec![
            "operation",
            "method",
            "path",
            "timeout_ms",
            "retry_delay_ms",
            "jitter_ms",
            "processing_ms",
            "required_ms",
            "retry_span_ms",
            "window_ms",
            "verdict",
            "retries_ms",
            "smallest_safe_ms",
        ];
        expected.sort_unstable();
        assert_eq!(keys, expected);
        assert_eq!(
            value["operations"][0],
            serde_json::json!({
                "operation": "onPayCallback",
                "method": "POST",
                "path": "/callbacks/pay",
                "timeout_ms": 5000,
                "retry_delay_ms": 1000,
                "retries_ms": [200, 800],
                "jitter_ms": 0,
                "processing_ms": 3000,
                "required_ms": 18000,
                "retry_span_ms": 14000,
                "smallest_safe_ms": 18000,
                "window_ms": 18000,
                "verdict": "ok",
            })
        );
    }

    #[test]
    fn json_unknowns_are_null() {
        let mut row = article_row(None);
        row.inputs.timeout_ms = None;
        row.math = compute(&row.inputs);
        let operation = &json(&[row])["operations"][0];
        assert!(operation["timeout_ms"].is_null());
        assert!(operation["window_ms"].is_null());
        assert!(operation["required_ms"].is_null());
        assert!(operation["retry_span_ms"].is_null());
        assert_eq!(operation["verdict"], "unknown");

        let too_short = json(&[article_row(Some(10_000))]);
        assert_eq!(too_short["operations"][0]["verdict"], "too-short");
        assert_eq!(json(&[]), serde_json::json!({"operations": []}));
    }

    #[test]
    fn table_shows_the_numbers_aligned() {
        let rows = [
            article_row(Some(18_000)),
            article_row(Some(10_000)),
            WindowRow::new("noWindow", "POST", "/x", WindowInputs::default()),
        ];
        let text = table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("operation"));
        for needle in ["5s", "200ms, 800ms", "3s", "18s", "14s", "ok"] {
            assert!(
                lines[1].contains(needle),
                "{needle} missing in {}",
                lines[1]
            );
        }
        assert!(lines[2].contains("10s"));
        assert!(lines[2].contains("too-short (2× bound, retry span)"));
        assert!(lines[3].contains("unknown"));
        // Columns line up (the first column is ASCII, so bytes = chars).
        assert_eq!(lines[1].find("5s"), lines[2].find("5s"));
        assert_eq!(
            lines[0].find("timeout"),
            lines[1].find("5s"),
            "timeout column aligned"
        );
    }

    #[test]
    fn table_escapes_control_characters_and_summarises_long_retry_lists() {
        let mut row = article_row(Some(18_000));
        row.operation = "evil\u{1b}[2J\nname".into();
        row.inputs.retries_ms = vec![100; 30];
        let text = table(&[row.clone()]);
        assert!(!text.contains('\u{1b}'));
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains("30 × 100ms"));
        row.inputs.retries_ms.push(900);
        assert!(table(&[row.clone()]).contains("31 delays, Σ 3.9s"));

        row.operation = "x".repeat(200);
        let first_cell = table(&[row])
            .lines()
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string();
        assert_eq!(first_cell.chars().count(), 48);
        assert!(first_cell.ends_with('…'));
    }

    #[test]
    fn markdown_is_a_table_with_an_explanation() {
        let mut hostile = article_row(Some(10_000));
        hostile.operation = "a|b<script>".into();
        let text = markdown(&[article_row(Some(18_000)), hostile]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("| operation | timeout |"));
        assert_eq!(lines[1], format!("|{}", "---|".repeat(10)));
        assert!(lines[2].contains("| 18s | ok | 18s |"));
        assert!(lines[3].contains("a\\|b&lt;script&gt;"));
        assert!(text.contains("**2× bound**"));
        assert!(text.contains("**retry span**"));
        // Every table row has the same number of unescaped separators.
        let separators = |line: &str| line.replace("\\|", "").matches('|').count();
        assert_eq!(separators(lines[0]), separators(lines[3]));
    }
}
