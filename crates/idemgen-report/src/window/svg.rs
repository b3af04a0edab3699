//! A self-contained SVG timeline of the window math, one panel per
//! operation, for design reviews and pull requests.
//!
//! Each panel draws the worst case the bounds assume: every attempt times
//! out, every backoff gets its full jitter, and the server takes
//! `max-processing`. Time 0 is the first attempt's arrival. No external
//! fonts, scripts or stylesheets: presentation attributes only, so the file
//! renders the same in a browser, an `<img>` tag or a GitHub preview.

use super::render::{WindowRow, format_ms, format_retries, truncate_chars};
use idemgen_spec::window::{Attempt, Schedule, Verdict, WindowMath};

const WIDTH: f64 = 1000.0;
const PANEL_X: f64 = 10.0;
const PANEL_WIDTH: f64 = WIDTH - 2.0 * PANEL_X;
const PLOT_LEFT: f64 = 160.0;
const PLOT_RIGHT: f64 = 950.0;
const PLOT_WIDTH: f64 = PLOT_RIGHT - PLOT_LEFT;
const PANEL_GAP: f64 = 14.0;
const FONT_STACK: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";

// Vertical layout of a timeline panel, relative to its top edge.
const TITLE_Y: f64 = 26.0;
const SUBTITLE_Y: f64 = 46.0;
const UPPER_MARKER_LABEL_Y: f64 = 70.0;
const CLIENT_Y: f64 = 80.0;
const CLIENT_HEIGHT: f64 = 24.0;
const LEASE_Y: f64 = 116.0;
const LAST_PROCESSING_Y: f64 = 138.0;
const SERVER_HEIGHT: f64 = 18.0;
const KEY_Y: f64 = 170.0;
const KEY_HEIGHT: f64 = 24.0;
const LOWER_MARKER_LABEL_Y: f64 = 210.0;
const AXIS_Y: f64 = 220.0;
const AXIS_LABEL_Y: f64 = 236.0;
const CAPTION_Y: f64 = 262.0;
const TIMELINE_PANEL_HEIGHT: f64 = 276.0;
const UNKNOWN_PANEL_HEIGHT: f64 = 96.0;

// Beyond this many attempts each bar is thinner than a few pixels, so the
// middle retries are drawn as one block (and the SVG stays small).
const MAX_DRAWN_ATTEMPTS: usize = 40;

// Colours (colour-blind-friendly Tableau palette) by meaning.
const ATTEMPT_COLOUR: &str = "#4c78a8";
const BACKOFF_COLOUR: &str = "#9aa5b1";
const LEASE_COLOUR: &str = "#fdd0a2";
const LEASE_STROKE: &str = "#e6550d";
const PROCESSING_COLOUR: &str = "#f58518";
const WINDOW_COLOUR: &str = "#54a24b";
const UNCOVERED_COLOUR: &str = "#e45756";
const TWO_X_COLOUR: &str = "#6f42c1";
const SPAN_COLOUR: &str = "#222222";
const TEXT_COLOUR: &str = "#222222";
const MUTED_COLOUR: &str = "#5f6b7a";

/// Renders every row as one panel of a single SVG document.
pub fn svg(rows: &[WindowRow]) -> String {
    svg_or_note(rows, "No operations with x-idempotency.")
}

/// Like [`svg`], with `note` in place of the panels when there are none.
pub fn svg_or_note(rows: &[WindowRow], note: &str) -> String {
    let mut body = String::new();
    let mut y = legend(&mut body);
    if rows.is_empty() {
        body.push_str(&text(
            PANEL_X + 12.0,
            y + 24.0,
            14.0,
            MUTED_COLOUR,
            "",
            note,
        ));
        y += 40.0;
    }
    for row in rows {
        y += panel(&mut body, row, y) + PANEL_GAP;
    }
    let height = y.ceil();
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"{FONT_STACK}\" fill=\"{TEXT_COLOUR}\">\n\
         <title>idemgen window timeline</title>\n{defs}\
         <rect x=\"0\" y=\"0\" width=\"{WIDTH}\" height=\"{height}\" fill=\"#ffffff\"/>\n\
         {body}</svg>\n",
        defs = DEFS,
    )
}

/// Hatch patterns: jitter (grey) and the uncovered region (red, so it reads
/// as "missing" even in greyscale print).
const DEFS: &str = "<defs>\n\
<pattern id=\"idemgen-jitter\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#e3e7ec\"/>\
<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#7b8794\" stroke-width=\"2\"/></pattern>\n\
<pattern id=\"idemgen-uncovered\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" \
patternTransform=\"rotate(45)\"><rect width=\"8\" height=\"8\" fill=\"#e45756\"/>\
<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"#b22b38\" stroke-width=\"3\"/></pattern>\n\
</defs>\n";

/// Draws the heading and legend; returns the y where panels start.
fn legend(out: &mut String) -> f64 {
    out.push_str(&text(
        PANEL_X + 2.0,
        24.0,
        17.0,
        TEXT_COLOUR,
        "font-weight=\"700\"",
        "Idempotency window: how long a key must be remembered",
    ));
    out.push_str(&text(
        PANEL_X + 2.0,
        44.0,
        12.5,
        MUTED_COLOUR,
        "",
        "Worst case: every attempt times out, every backoff gets its full jitter, \
         the server takes max-processing. Time 0 = the first attempt arrives.",
    ));
    #[derive(Clone, Copy)]
    enum Swatch {
        Fill(&'static str),
        Outlined(&'static str, &'static str),
        Dashed(&'static str, &'static str),
    }
    let items = [
        (Swatch::Fill(ATTEMPT_COLOUR), "attempt (client timeout)"),
        (Swatch::Fill(BACKOFF_COLOUR), "backoff delay"),
        (Swatch::Fill("url(#idemgen-jitter)"), "jitter"),
        (
            Swatch::Outlined(LEASE_COLOUR, LEASE_STROKE),
            "lease of attempt 1",
        ),
        (Swatch::Fill(PROCESSING_COLOUR), "last retry's processing"),
        (Swatch::Fill(WINDOW_COLOUR), "key remembered (window)"),
        (Swatch::Fill("url(#idemgen-uncovered)"), "not covered"),
        (Swatch::Dashed(TWO_X_COLOUR, "6 4"), "2× bound"),
        (Swatch::Dashed(SPAN_COLOUR, "2 3"), "retry span"),
    ];
    let (mut x, mut y) = (PANEL_X + 2.0, 62.0);
    for (swatch, label) in items {
        let item_width = 24.0 + text_width(label, 12.0) + 18.0;
        if x + item_width > WIDTH - PANEL_X {
            x = PANEL_X + 2.0;
            y += 22.0;
        }
        match swatch {
            Swatch::Fill(fill) => out.push_str(&rect(x, y, 18.0, 12.0, fill, "")),
            Swatch::Outlined(fill, stroke) => out.push_str(&rect(
                x,
                y,
                18.0,
                12.0,
                fill,
                &format!("stroke=\"{stroke}\""),
            )),
            Swatch::Dashed(colour, dashes) => out.push_str(&format!(
                "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x1:.1}\" y2=\"{y2:.1}\" \
                 stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"{dashes}\"/>\n",
                x1 = x + 9.0,
                y1 = y - 2.0,
                y2 = y + 14.0,
            )),
        }
        out.push_str(&text(x + 24.0, y + 10.5, 12.0, TEXT_COLOUR, "", label));
        x += item_width;
    }
    y + 30.0
}

/// Draws one operation's panel at `top`; returns its height.
fn panel(out: &mut String, row: &WindowRow, top: f64) -> f64 {
    let math = &row.math;
    let timeline = match (row.inputs.timeout_ms, row.inputs.processing_ms) {
        (Some(timeout_ms), Some(processing_ms)) if math.verdict != Verdict::Unknown => {
            Some((timeout_ms, processing_ms))
        }
        _ => None,
    };
    let height = if timeline.is_some() {
        TIMELINE_PANEL_HEIGHT
    } else {
        UNKNOWN_PANEL_HEIGHT
    };
    out.push_str(&format!("<g transform=\"translate(0 {top:.1})\">\n"));
    out.push_str(&rect(
        PANEL_X,
        0.0,
        PANEL_WIDTH,
        height,
        PANEL_FILL,
        "stroke=\"#d0d7de\" rx=\"6\"",
    ));
    title(out, row);
    match timeline {
        Some((timeout_ms, processing_ms)) => {
            timeline_panel(out, row, timeout_ms, processing_ms);
        }
        None => unknown_panel(out, row),
    }
    out.push_str("</g>\n");
    height
}

/// Operation name, method and path, and the verdict as a coloured badge.
fn title(out: &mut String, row: &WindowRow) {
    let name = truncate_chars(&row.operation, 48);
    let route = truncate_chars(&format!("{} {}", row.method, row.path), 48);
    out.push_str(&format!(
        "<text x=\"{x:.1}\" y=\"{TITLE_Y:.1}\" font-size=\"16\" font-weight=\"700\" \
         fill=\"{TEXT_COLOUR}\">{name}<tspan dx=\"10\" font-size=\"13\" font-weight=\"400\" \
         fill=\"{MUTED_COLOUR}\">{route}</tspan></text>\n",
        x = PANEL_X + 12.0,
        name = escape_xml(&name),
        route = escape_xml(&route),
    ));
    let (label, fill) = match row.math.verdict {
        Verdict::Ok => ("OK", WINDOW_COLOUR),
        Verdict::TooShort => ("TOO SHORT", "#c62a35"),
        Verdict::Unknown => ("UNKNOWN", "#6e7781"),
    };
    let badge_width = text_width(label, 12.0) + 20.0;
    let badge_x = PANEL_X + PANEL_WIDTH - 12.0 - badge_width;
    out.push_str(&rect(
        badge_x,
        TITLE_Y - 15.0,
        badge_width,
        20.0,
        fill,
        "rx=\"10\"",
    ));
    out.push_str(&text(
        badge_x + badge_width / 2.0,
        TITLE_Y - 0.5,
        12.0,
        "#ffffff",
        "font-weight=\"700\" text-anchor=\"middle\"",
        label,
    ));
}

/// A panel that cannot be drawn: says which inputs are missing.
fn unknown_panel(out: &mut String, row: &WindowRow) {
    let missing = row.inputs.missing_fields();
    let missing = if missing.is_empty() {
        "an input".to_string()
    } else {
        missing.join(", ")
    };
    out.push_str(&text(
        PANEL_X + 12.0,
        52.0,
        13.0,
        TEXT_COLOUR,
        "",
        &format!("No timeline: x-idempotency is missing {missing}."),
    ));
    let hint = match row.math.smallest_safe_ms {
        Some(safe) => format!(
            "The declared timeout, retries and max-processing need a window of at least {}.",
            format_ms(safe)
        ),
        None => "Set it in the operation's block or the document-level x-idempotency.".into(),
    };
    out.push_str(&text(PANEL_X + 12.0, 74.0, 12.5, MUTED_COLOUR, "", &hint));
}

/// The worst-case schedule the window math and the generated client share.
fn schedule(row: &WindowRow) -> Vec<Attempt> {
    Schedule::of(&row.inputs)
        .map(|schedule| schedule.attempts)
        .unwrap_or_default()
}

/// Maps milliseconds to x positions on an axis that ends at a round tick.
struct Scale {
    end_ms: f64,
    step_ms: u64,
}

impl Scale {
    fn new(largest_ms: u64) -> Scale {
        let step_ms = tick_step_ms(largest_ms.max(1));
        let ticks = (largest_ms.max(1) as f64 / step_ms as f64).ceil();
        Scale {
            end_ms: ticks * step_ms as f64,
            step_ms,
        }
    }

    fn x(&self, ms: u64) -> f64 {
        PLOT_LEFT + (ms as f64 / self.end_ms).min(1.0) * PLOT_WIDTH
    }

    /// Tick values from 0 to the axis end, inclusive.
    fn ticks(&self) -> Vec<u64> {
        let count = (self.end_ms / self.step_ms as f64).round() as u64;
        (0..=count)
            .map_while(|index| index.checked_mul(self.step_ms))
            .collect()
    }
}

/// A step a person reads easily (1, 2, 5 × 10ⁿ ms, then 15 s, 30 s, minutes,
/// hours, days) giving at most 10 intervals.
fn tick_step_ms(largest_ms: u64) -> u64 {
    const SECOND: u64 = 1_000;
    const MINUTE: u64 = 60 * SECOND;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const STEPS: [u64; 32] = [
        1,
        2,
        5,
        10,
        20,
        50,
        100,
        200,
        500,
        SECOND,
        2 * SECOND,
        5 * SECOND,
        10 * SECOND,
        15 * SECOND,
        30 * SECOND,
        MINUTE,
        2 * MINUTE,
        5 * MINUTE,
        10 * MINUTE,
        15 * MINUTE,
        30 * MINUTE,
        HOUR,
        2 * HOUR,
        3 * HOUR,
        6 * HOUR,
        12 * HOUR,
        DAY,
        2 * DAY,
        7 * DAY,
        14 * DAY,
        30 * DAY,
        90 * DAY,
    ];
    const MAX_INTERVALS: u64 = 10;
    let needed = largest_ms.div_ceil(MAX_INTERVALS);
    if let Some(step) = STEPS.iter().find(|step| **step >= needed) {
        return *step;
    }
    // Beyond a few years (only absurd inputs): 1, 2, 5 × 10ⁿ days.
    let mut step = DAY;
    for factor in [2, 5, 2].iter().cycle() {
        if step >= needed {
            break;
        }
        match step.checked_mul(*factor) {
            Some(next) => step = next,
            None => return u64::MAX,
        }
    }
    step
}

fn timeline_panel(out: &mut String, row: &WindowRow, timeout_ms: u64, processing_ms: u64) {
    let math = &row.math;
    let inputs = &row.inputs;
    let attempts = schedule(row);
    let last = attempts
        .last()
        .expect("schedule always has the first attempt");
    let last_processing_end = last.start_ms.saturating_add(processing_ms);
    let window_ms = math.window_ms.unwrap_or(0);
    let required_ms = math.required_ms.unwrap_or(0);
    let span_ms = math.retry_span_ms.unwrap_or(0);
    let largest = [
        window_ms,
        required_ms,
        span_ms,
        last.timeout_end_ms,
        last_processing_end,
    ]
    .into_iter()
    .max()
    .unwrap_or(1);
    let scale = Scale::new(largest);

    out.push_str(&text(
        PANEL_X + 12.0,
        SUBTITLE_Y,
        12.5,
        MUTED_COLOUR,
        "",
        &format!(
            "timeout {} · retries {} · jitter {} each · max-processing {} · window {}",
            format_ms(timeout_ms),
            format_retries(&inputs.retries_ms),
            format_ms(inputs.jitter_ms),
            format_ms(processing_ms),
            math.window_ms.map_or_else(|| "?".into(), format_ms),
        ),
    ));

    // Grid and axis first, so bars and markers draw over them.
    for tick in scale.ticks() {
        let x = scale.x(tick);
        out.push_str(&format!(
            "<line x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{AXIS_Y:.1}\" \
             stroke=\"#e6e9ed\" stroke-width=\"1\"/>\n\
             <line x1=\"{x:.1}\" y1=\"{AXIS_Y:.1}\" x2=\"{x:.1}\" y2=\"{tick_end:.1}\" \
             stroke=\"#57606a\" stroke-width=\"1\"/>\n",
            top = CLIENT_Y - 4.0,
            tick_end = AXIS_Y + 5.0,
        ));
        out.push_str(&text(
            x,
            AXIS_LABEL_Y,
            11.0,
            MUTED_COLOUR,
            "text-anchor=\"middle\"",
            &format_ms(tick),
        ));
    }
    out.push_str(&format!(
        "<line x1=\"{PLOT_LEFT:.1}\" y1=\"{AXIS_Y:.1}\" x2=\"{PLOT_RIGHT:.1}\" y2=\"{AXIS_Y:.1}\" \
         stroke=\"#57606a\" stroke-width=\"1\"/>\n"
    ));

    lane_label(out, "client", CLIENT_Y + CLIENT_HEIGHT / 2.0);
    lane_label(
        out,
        "server",
        (LEASE_Y + LAST_PROCESSING_Y + SERVER_HEIGHT) / 2.0,
    );
    lane_label(out, "key remembered", KEY_Y + KEY_HEIGHT / 2.0);

    // Labels go on top of the marker lines, each with a halo in its
    // background colour, so a dashed line never runs through a word.
    let mut labels = String::new();
    client_lane(out, &mut labels, &attempts, &scale);
    server_lane(out, &mut labels, &attempts, processing_ms, &scale);
    key_lane(out, &mut labels, math, &scale);
    markers(out, &mut labels, math, &scale);
    out.push_str(&labels);
    caption(out, math);
}

fn lane_label(out: &mut String, label: &str, centre_y: f64) {
    out.push_str(&text(
        PANEL_X + 14.0,
        centre_y + 4.5,
        13.0,
        TEXT_COLOUR,
        "font-weight=\"600\"",
        label,
    ));
}

fn client_lane(out: &mut String, labels: &mut String, attempts: &[Attempt], scale: &Scale) {
    let centre_y = CLIENT_Y + CLIENT_HEIGHT / 2.0;
    let grouped = attempts.len() > MAX_DRAWN_ATTEMPTS;
    let last_index = attempts.len() - 1;
    let mut every_label_fits = true;
    let drawn: Vec<(usize, &Attempt)> = if grouped {
        // The middle retries as one block: still every ms accounted for.
        let (x1, x2) = (
            scale.x(attempts[1].start_ms),
            scale.x(attempts[last_index].start_ms),
        );
        let block = Bar::new(x1, x2, centre_y, "#93abc9");
        out.push_str(&block.rect(CLIENT_Y, CLIENT_HEIGHT, ""));
        every_label_fits &= block.label(
            labels,
            &[
                &format!("retries 1–{} (each timeout + backoff)", last_index - 1),
                &format!("retries 1–{}", last_index - 1),
            ],
            Placement::InsideOnly,
        );
        vec![(0, &attempts[0]), (last_index, &attempts[last_index])]
    } else {
        attempts.iter().enumerate().collect()
    };

    for (index, attempt) in drawn {
        let bar = Bar::new(
            scale.x(attempt.start_ms),
            scale.x(attempt.timeout_end_ms),
            centre_y,
            ATTEMPT_COLOUR,
        );
        out.push_str(&bar.rect(
            CLIENT_Y,
            CLIENT_HEIGHT,
            "stroke=\"#ffffff\" stroke-width=\"0.5\"",
        ));
        let (long, short) = if index == 0 {
            ("attempt 1".to_string(), "1".to_string())
        } else {
            (format!("retry {index}"), format!("r{index}"))
        };
        // Beside-the-bar labels would land on the next attempt: inside only.
        every_label_fits &= bar.label(labels, &[&long, &short], Placement::InsideOnly);
        if grouped && index == 0 {
            // The block covers this attempt's backoff.
            continue;
        }
        if let Some(backoff) = attempt.backoff {
            let (backoff_end, next_start) = (backoff.end_ms, backoff.next_start_ms);
            let (b1, b2, j2) = (
                scale.x(attempt.timeout_end_ms),
                scale.x(backoff_end),
                scale.x(next_start),
            );
            let thin_y = centre_y - 5.0;
            if backoff_end > attempt.timeout_end_ms {
                out.push_str(&rect(
                    b1,
                    thin_y,
                    (b2 - b1).max(1.0),
                    10.0,
                    BACKOFF_COLOUR,
                    "",
                ));
            }
            if next_start > backoff_end {
                out.push_str(&rect(
                    b2,
                    thin_y,
                    (j2 - b2).max(1.0),
                    10.0,
                    "url(#idemgen-jitter)",
                    "stroke=\"#7b8794\" stroke-width=\"0.5\"",
                ));
            }
        }
    }

    // Bars too narrow to name: say what the lane holds after its end.
    if !every_label_fits {
        let last = &attempts[last_index];
        let summary = format!(
            "{} attempts: attempt 1 + {last_index} retries, the last starting at {}",
            attempts.len(),
            format_ms(last.start_ms)
        );
        let x = scale.x(last.timeout_end_ms) + 8.0;
        if x + text_width(&summary, LABEL_FONT) <= PLOT_RIGHT {
            labels.push_str(&halo_text(
                x,
                centre_y + 4.0,
                TEXT_COLOUR,
                PANEL_FILL,
                "",
                &summary,
            ));
        }
    }
}

fn server_lane(
    out: &mut String,
    labels: &mut String,
    attempts: &[Attempt],
    processing_ms: u64,
    scale: &Scale,
) {
    let processing = format_ms(processing_ms);
    let lease = Bar::new(
        PLOT_LEFT,
        scale.x(processing_ms),
        LEASE_Y + SERVER_HEIGHT / 2.0,
        LEASE_COLOUR,
    )
    .with_text_colour(TEXT_COLOUR);
    out.push_str(&lease.rect(
        LEASE_Y,
        SERVER_HEIGHT,
        &format!("stroke=\"{LEASE_STROKE}\""),
    ));
    let lease_label = if attempts.len() == 1 {
        format!("attempt 1: processing and lease, {processing}")
    } else {
        format!("lease of attempt 1 (max-processing {processing})")
    };
    lease.label(labels, &[&lease_label, &processing], Placement::Beside);

    let last_index = attempts.len() - 1;
    if last_index == 0 {
        return;
    }
    let start_ms = attempts[last_index].start_ms;
    let last = Bar::new(
        scale.x(start_ms),
        scale.x(start_ms.saturating_add(processing_ms)),
        LAST_PROCESSING_Y + SERVER_HEIGHT / 2.0,
        PROCESSING_COLOUR,
    );
    out.push_str(&last.rect(LAST_PROCESSING_Y, SERVER_HEIGHT, ""));
    last.label(
        labels,
        &[
            &format!("retry {last_index}: worst-case processing {processing}"),
            &processing,
        ],
        Placement::Beside,
    );
}

fn key_lane(out: &mut String, labels: &mut String, math: &WindowMath, scale: &Scale) {
    let (Some(window_ms), Some(safe_ms)) = (math.window_ms, math.smallest_safe_ms) else {
        return;
    };
    let centre_y = KEY_Y + KEY_HEIGHT / 2.0;
    let window = Bar::new(PLOT_LEFT, scale.x(window_ms), centre_y, WINDOW_COLOUR);
    if window_ms > 0 {
        out.push_str(&window.rect(KEY_Y, KEY_HEIGHT, ""));
        let length = format_ms(window_ms);
        window.label(
            labels,
            &[&format!("window {length}"), &length],
            Placement::InsideOnly,
        );
    }
    if window_ms < safe_ms {
        let uncovered = Bar::new(
            window.x2,
            scale.x(safe_ms).max(window.x2 + 2.0),
            centre_y,
            UNCOVERED_COLOUR,
        );
        out.push_str(&uncovered.rect(KEY_Y, KEY_HEIGHT, &format!("stroke=\"{UNCOVERED_COLOUR}\"")));
        let gap = format_ms(safe_ms - window_ms);
        uncovered.label(
            labels,
            &[&format!("forgotten too early: {gap}"), &gap],
            Placement::InsideOnly,
        );
    }
}

/// Dashed lines at the 2× bound (label above the lanes) and the retry span
/// (label below the key lane), so the two labels never collide.
fn markers(out: &mut String, labels: &mut String, math: &WindowMath, scale: &Scale) {
    let bounds = [
        (
            math.required_ms,
            TWO_X_COLOUR,
            "6 4",
            "2× bound",
            UPPER_MARKER_LABEL_Y,
        ),
        (
            math.retry_span_ms,
            SPAN_COLOUR,
            "2 3",
            "retry span",
            LOWER_MARKER_LABEL_Y,
        ),
    ];
    for (bound, colour, dashes, name, label_y) in bounds {
        let Some(bound_ms) = bound else { continue };
        let x = scale.x(bound_ms);
        out.push_str(&format!(
            "<line x1=\"{x:.1}\" y1=\"{y1:.1}\" x2=\"{x:.1}\" y2=\"{y2:.1}\" stroke=\"{colour}\" \
             stroke-width=\"2\" stroke-dasharray=\"{dashes}\"/>\n",
            y1 = UPPER_MARKER_LABEL_Y + 3.0,
            y2 = AXIS_Y,
        ));
        let label = format!("{name} {}", format_ms(bound_ms));
        let half = text_width(&label, LABEL_FONT) / 2.0;
        let label_x = x.clamp(PLOT_LEFT + half, WIDTH - PANEL_X - 4.0 - half);
        labels.push_str(&halo_text(
            label_x,
            label_y,
            colour,
            PANEL_FILL,
            "text-anchor=\"middle\"",
            &label,
        ));
    }
}

/// One sentence saying what the picture means.
fn caption(out: &mut String, math: &WindowMath) {
    let (Some(window), Some(required), Some(span), Some(safe)) = (
        math.window_ms,
        math.required_ms,
        math.retry_span_ms,
        math.smallest_safe_ms,
    ) else {
        return;
    };
    let (sentence, colour) = if window >= safe {
        (
            format!(
                "Window {} covers the 2× bound ({}) and the retry span ({}).",
                format_ms(window),
                format_ms(required),
                format_ms(span)
            ),
            "#2f6f2a",
        )
    } else {
        let mut parts = Vec::new();
        if window < span {
            parts.push(format!(
                "Window ends {} before the last retry can finish",
                format_ms(span - window)
            ));
        }
        if window < required {
            parts.push(format!(
                "{} {} below the 2× bound",
                if parts.is_empty() {
                    "Window is"
                } else {
                    "and is"
                },
                format_ms(required - window)
            ));
        } else {
            // Exactly the case the article's rule misses: worth saying.
            parts.push(format!(
                "(the 2× bound, {}, misses this)",
                format_ms(required)
            ));
        }
        (
            format!(
                "{}; the smallest safe window is {}.",
                parts.join(" "),
                format_ms(safe)
            ),
            "#b42330",
        )
    };
    out.push_str(&text(
        PANEL_X + 14.0,
        CAPTION_Y,
        13.0,
        colour,
        "font-weight=\"600\"",
        &sentence,
    ));
}

const LABEL_FONT: f64 = 11.5;
const LABEL_PADDING: f64 = 6.0;
const PANEL_FILL: &str = "#fafbfc";

/// Where a label may go when it does not fit inside its bar.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Neighbouring bars sit right next to it: inside or nothing.
    InsideOnly,
    /// The row is otherwise empty: try the full label right, then left of
    /// the bar, before settling for a short one inside.
    Beside,
}

/// A horizontal bar in plot coordinates, at least 1 px wide so that even a
/// tiny duration stays visible.
struct Bar<'a> {
    x1: f64,
    x2: f64,
    centre_y: f64,
    fill: &'a str,
    text_colour: &'a str,
}

impl<'a> Bar<'a> {
    fn new(x1: f64, x2: f64, centre_y: f64, fill: &'a str) -> Bar<'a> {
        Bar {
            x1,
            x2: x2.max(x1 + 1.0),
            centre_y,
            fill,
            text_colour: "#ffffff",
        }
    }

    fn with_text_colour(self, text_colour: &'a str) -> Bar<'a> {
        Bar {
            text_colour,
            ..self
        }
    }

    fn rect(&self, y: f64, height: f64, extra: &str) -> String {
        let fill = if self.fill == UNCOVERED_COLOUR {
            "url(#idemgen-uncovered)"
        } else {
            self.fill
        };
        rect(self.x1, y, self.x2 - self.x1, height, fill, extra)
    }

    /// Places the first candidate that fits; returns false when none did.
    fn label(&self, labels: &mut String, candidates: &[&str], placement: Placement) -> bool {
        let fits_inside =
            |label: &str| text_width(label, LABEL_FONT) + 2.0 * LABEL_PADDING <= self.x2 - self.x1;
        let baseline = self.centre_y + 4.0;
        let inside = |labels: &mut String, label: &str| {
            labels.push_str(&halo_text(
                (self.x1 + self.x2) / 2.0,
                baseline,
                self.text_colour,
                self.fill,
                "text-anchor=\"middle\"",
                label,
            ));
        };
        let Some(full) = candidates.first() else {
            return true;
        };
        if fits_inside(full) {
            inside(labels, full);
            return true;
        }
        if placement == Placement::Beside {
            let width = text_width(full, LABEL_FONT);
            if self.x2 + LABEL_PADDING + width <= PLOT_RIGHT {
                labels.push_str(&halo_text(
                    self.x2 + LABEL_PADDING,
                    baseline,
                    TEXT_COLOUR,
                    PANEL_FILL,
                    "",
                    full,
                ));
                return true;
            }
            if self.x1 - LABEL_PADDING - width >= PLOT_LEFT {
                labels.push_str(&halo_text(
                    self.x1 - LABEL_PADDING,
                    baseline,
                    TEXT_COLOUR,
                    PANEL_FILL,
                    "text-anchor=\"end\"",
                    full,
                ));
                return true;
            }
        }
        match candidates[1..].iter().find(|label| fits_inside(label)) {
            Some(short) => {
                inside(labels, short);
                true
            }
            None => false,
        }
    }
}

/// Bold label text with a halo in the colour behind it, so lines crossing
/// the label do not cut through the letters.
fn halo_text(x: f64, y: f64, fill: &str, halo: &str, extra: &str, content: &str) -> String {
    text(
        x,
        y,
        LABEL_FONT,
        fill,
        &format!(
            "font-weight=\"600\" stroke=\"{halo}\" stroke-width=\"3\" \
             stroke-linejoin=\"round\" paint-order=\"stroke\" {extra}"
        ),
        content,
    )
}

fn rect(x: f64, y: f64, width: f64, height: f64, fill: &str, extra: &str) -> String {
    format!(
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{height:.1}\" \
         fill=\"{fill}\" {extra}/>\n"
    )
}

/// A text element; the content is always escaped.
fn text(x: f64, y: f64, size: f64, fill: &str, extra: &str, content: &str) -> String {
    format!(
        "<text x=\"{x:.1}\" y=\"{y:.1}\" font-size=\"{size}\" fill=\"{fill}\" {extra}>{}</text>\n",
        escape_xml(content)
    )
}

/// Generous estimate of rendered width (sans-serif averages ~0.55 em; wide
/// glyphs count double) so labels that "fit" really do.
fn text_width(text: &str, font_size: f64) -> f64 {
    let ems: f64 = text
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'm' | 'w' => 0.75,
            c if (c as u32) < 0x1100 => 0.6,
            _ => 1.0,
        })
        .sum();
    ems * font_size
}

/// Escapes text for XML content and attributes; characters XML 1.0 forbids
/// (most control characters) become U+FFFD so the document stays well-formed.
fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::render::tests::article_row;
    use super::*;
    use idemgen_spec::window::WindowInputs;

    /// Checks that tags nest and close, attributes are quoted and every `&`
    /// starts an entity: a small stand-in for an XML parser.
    fn assert_well_formed(document: &str) {
        let mut open: Vec<String> = Vec::new();
        let mut rest = document;
        while let Some(start) = rest.find('<') {
            let text_before = &rest[..start];
            assert_entities_ok(text_before);
            let end = rest[start..].find('>').expect("unclosed tag") + start;
            let tag = &rest[start + 1..end];
            assert!(!tag.contains('<'), "`<` inside a tag: {tag}");
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes: {tag}");
            assert_entities_ok(tag);
            if let Some(name) = tag.strip_prefix('/') {
                let expected = open.pop().expect("closing tag without opening");
                assert_eq!(name.trim(), expected, "mismatched closing tag");
            } else if !tag.ends_with('/') && !tag.starts_with('?') && !tag.starts_with('!') {
                let name = tag.split_whitespace().next().unwrap().to_string();
                open.push(name);
            }
            rest = &rest[end + 1..];
        }
        assert!(open.is_empty(), "unclosed tags: {open:?}");
        assert!(document.trim_start().starts_with("<svg"));
    }

    fn assert_entities_ok(text: &str) {
        for (index, _) in text.match_indices('&') {
            let entity = &text[index..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"]
                    .iter()
                    .any(|known| entity.starts_with(known)),
                "bare & in {text}"
            );
        }
    }

    fn many_retries_row() -> WindowRow {
        WindowRow::new(
            "chargeCard",
            "POST",
            "/charges",
            WindowInputs {
                timeout_ms: Some(5_000),
                retries_ms: vec![100; 8],
                jitter_ms: 250,
                processing_ms: Some(1_000),
                window_ms: Some(20_000),
            },
        )
    }

    #[test]
    fn ok_panel_is_well_formed_and_has_no_red_region() {
        let document = svg(&[article_row(Some(18_000))]);
        assert_well_formed(&document);
        assert!(document.contains("onPayCallback"));
        assert!(document.contains(">attempt 1<"));
        assert!(document.contains(">retry 2<"));
        assert!(document.contains("2× bound 18s"));
        assert!(document.contains("retry span 14s"));
        assert!(document.contains(">OK<"));
        // Only the legend swatch uses the uncovered pattern.
        assert_eq!(
            document.matches("fill=\"url(#idemgen-uncovered)\"").count(),
            1
        );
    }

    #[test]
    fn too_short_panel_shows_the_uncovered_region() {
        let document = svg(&[article_row(Some(10_000))]);
        assert_well_formed(&document);
        assert_eq!(
            document.matches("fill=\"url(#idemgen-uncovered)\"").count(),
            2
        );
        assert!(document.contains("Window ends 4s before the last retry can finish"));
        assert!(document.contains("TOO SHORT"));

        let many = svg(&[many_retries_row()]);
        assert_well_formed(&many);
        assert!(many.contains("retry 8"));
        assert!(many.contains("Window ends"));
    }

    #[test]
    fn hostile_names_are_escaped() {
        let mut row = article_row(Some(18_000));
        row.operation = "<script>alert('x')</script> & \"quoted\" \u{1}".into();
        row.path = "/a?b=<c>&d".into();
        let document = svg(&[row]);
        assert_well_formed(&document);
        assert!(!document.contains("<script"));
        assert!(document.contains("&lt;script&gt;alert(&apos;x&apos;)"));
        assert!(document.contains("&amp; &quot;quoted&quot;"));
        assert!(!document.contains('\u{1}'));
    }

    #[test]
    fn unknown_panel_names_the_missing_inputs() {
        let row = WindowRow::new(
            "noTimeout",
            "POST",
            "/x",
            WindowInputs {
                window_ms: Some(18_000),
                processing_ms: Some(3_000),
                ..WindowInputs::default()
            },
        );
        let no_window = article_row(None);
        let document = svg(&[row, no_window]);
        assert_well_formed(&document);
        assert!(document.contains("missing client.timeout."));
        assert!(document.contains("missing window."));
        assert!(document.contains("at least 18s"));
        assert!(!document.contains(">attempt 1<"), "no bars when unknown");
    }

    #[test]
    fn absurd_inputs_still_render() {
        let year_ms = 366 * 24 * 3_600 * 1_000;
        let huge = WindowRow::new(
            "huge",
            "POST",
            "/h",
            WindowInputs {
                timeout_ms: Some(year_ms),
                retries_ms: vec![year_ms; 5_000],
                jitter_ms: year_ms,
                processing_ms: Some(year_ms),
                window_ms: Some(1),
            },
        );
        let extreme = WindowRow::new(
            "extreme",
            "POST",
            "/e",
            WindowInputs {
                timeout_ms: Some(u64::MAX),
                retries_ms: vec![u64::MAX; 3],
                jitter_ms: u64::MAX,
                processing_ms: Some(u64::MAX),
                window_ms: Some(u64::MAX),
            },
        );
        let zero = WindowRow::new(
            "zero",
            "POST",
            "/z",
            WindowInputs {
                timeout_ms: Some(0),
                retries_ms: vec![0],
                jitter_ms: 0,
                processing_ms: Some(0),
                window_ms: Some(0),
            },
        );
        let document = svg(&[huge, extreme, zero]);
        assert_well_formed(&document);
        assert!(!document.contains("NaN"));
        assert!(!document.contains("inf"));
        assert!(
            document.contains("retries 1–4999"),
            "middle retries grouped"
        );
        assert!(document.len() < 200_000);
        assert_well_formed(&svg(&[]));
    }

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(tick_step_ms(18_000), 2_000);
        assert_eq!(tick_step_ms(41_800), 5_000);
        assert_eq!(tick_step_ms(1), 1);
        assert_eq!(tick_step_ms(3_600_000), 600_000);
        let scale = Scale::new(18_000);
        assert_eq!(scale.ticks().len(), 10);
        assert_eq!(scale.ticks().last(), Some(&18_000));
        for largest in [1, 7, 999, 18_000, 86_400_000, u64::MAX / 3, u64::MAX] {
            let scale = Scale::new(largest);
            let ticks = scale.ticks();
            assert!(
                (2..=12).contains(&ticks.len()),
                "{largest}: {}",
                ticks.len()
            );
        }
    }
}
