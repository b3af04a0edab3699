//! Durations as the contract writes them: `250ms`, `5s`, `2m`, `1h`, `1d`,
//! combinations such as `1m30s`, or ISO-8601 (`PT18S`, `P1D`, `PT0.5S`).

/// Longest duration accepted: a year is already far past any sane window.
pub const MAX_MS: u64 = 366 * 24 * 3600 * 1000;

/// Parses a duration into milliseconds; the error says how to fix it.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration; write one like `5s` or `250ms`".into());
    }
    let total = if text.starts_with(['P', 'p']) {
        parse_iso8601(text)?
    } else {
        parse_units(text)?
    };
    if total > MAX_MS as f64 {
        return Err(format!(
            "`{text}` is longer than a year; windows and timeouts are seconds to hours"
        ));
    }
    Ok(total.round() as u64)
}

/// The `Retry-After` a `retry-after` of `ms` is sent as: the header
/// carries whole seconds (RFC 9110), so the delay is rounded up, and 0 is
/// sent as 1 (an immediate retry would only meet the held key again).
pub fn retry_after_header_secs(ms: u64) -> u64 {
    ms.div_ceil(1_000).max(1)
}

/// Formats milliseconds the way the contract writes durations: `250ms`,
/// `18s`, `1.5s`, `2m`, `1m30s`, `1h`, `3d`. Every output parses back.
pub fn format_ms(ms: u64) -> String {
    const SECOND: u64 = 1_000;
    const MINUTE: u64 = 60 * SECOND;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    if ms == 0 {
        return "0s".into();
    }
    if ms < SECOND {
        return format!("{ms}ms");
    }
    let mut text = String::new();
    let mut rest = ms;
    for (unit_ms, unit) in [(DAY, "d"), (HOUR, "h"), (MINUTE, "m")] {
        if rest >= unit_ms {
            text.push_str(&format!("{}{unit}", rest / unit_ms));
            rest %= unit_ms;
        }
    }
    if rest > 0 {
        let (whole, millis) = (rest / SECOND, rest % SECOND);
        if millis == 0 {
            text.push_str(&format!("{whole}s"));
        } else if text.is_empty() || whole > 0 {
            let fraction = format!("{millis:03}");
            text.push_str(&format!("{whole}.{}s", fraction.trim_end_matches('0')));
        } else {
            // `1m0.5s` reads oddly; `1m500ms` is what a person writes.
            text.push_str(&format!("{millis}ms"));
        }
    }
    text
}

fn unit_ms(unit: &str) -> Option<f64> {
    Some(match unit {
        "ms" => 1.0,
        "s" => 1000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    })
}

fn parse_units(text: &str) -> Result<f64, String> {
    let bytes = text.as_bytes();
    if bytes.iter().all(|b| b.is_ascii_digit() || *b == b'.') {
        return Err(format!(
            "`{text}` has no unit; write `{text}s` for seconds or `{text}ms` for milliseconds"
        ));
    }
    let mut total = 0.0;
    let mut rest = text;
    let mut seen: Vec<f64> = Vec::new();
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return Err(format!(
                "`{text}` is not a duration; write one like `18s`, `250ms`, `2m` or `PT18S`"
            ));
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| format!("`{}` in `{text}` is not a number", &rest[..number_len]))?;
        rest = &rest[number_len..];
        // The unit runs to the next number, so a unit that is not ASCII
        // (`µs`, a full-width `ｓ`) is named whole in the message.
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let Some(factor) = unit_ms(unit) else {
            if unit.contains(char::is_whitespace) {
                return Err(format!(
                    "`{text}` has a blank in it; write numbers and units together, like `1m30s`"
                ));
            }
            return Err(format!(
                "unknown unit `{unit}` in `{text}`; use ms, s, m, h or d"
            ));
        };
        // `1h1h` is a typo more often than a way to write `2h`.
        if seen.contains(&factor) {
            return Err(format!(
                "`{text}` gives `{unit}` twice; write each unit once, like `1m30s`"
            ));
        }
        seen.push(factor);
        total += number * factor;
        if total > MAX_MS as f64 {
            return Err(format!(
                "`{text}` is longer than a year; windows and timeouts are seconds to hours"
            ));
        }
        rest = &rest[unit_len..];
    }
    Ok(total)
}

fn parse_iso8601(text: &str) -> Result<f64, String> {
    let bad = || format!("`{text}` is not an ISO-8601 duration such as `PT18S` or `P1D`");
    let body = &text[1..];
    let (date_part, time_part) = match body.split_once(['T', 't']) {
        Some((date, time)) => (date, Some(time)),
        None => (body, None),
    };
    let mut total = 0.0;
    let mut any = false;
    for (part, units) in [(date_part, "DW"), (time_part.unwrap_or(""), "HMS")] {
        let mut rest = part;
        while !rest.is_empty() {
            let number_len = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
                .unwrap_or(rest.len());
            if number_len == 0 || number_len == rest.len() {
                return Err(bad());
            }
            let number: f64 = rest[..number_len]
                .replace(',', ".")
                .parse()
                .map_err(|_| bad())?;
            let unit = rest.as_bytes()[number_len].to_ascii_uppercase() as char;
            if !units.contains(unit) {
                return Err(bad());
            }
            let factor = match (units, unit) {
                ("DW", 'D') => 86_400_000.0,
                ("DW", 'W') => 7.0 * 86_400_000.0,
                (_, 'H') => 3_600_000.0,
                (_, 'M') => 60_000.0,
                _ => 1000.0,
            };
            total += number * factor;
            any = true;
            rest = &rest[number_len + 1..];
        }
    }
    if !any || time_part == Some("") {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_it_does_not_know_is_named_whole() {
        assert_eq!(
            parse_duration("1µs"),
            Err("unknown unit `µs` in `1µs`; use ms, s, m, h or d".into())
        );
        assert_eq!(
            parse_duration("18ｓ"),
            Err("unknown unit `ｓ` in `18ｓ`; use ms, s, m, h or d".into())
        );
        assert_eq!(
            parse_duration("18 s"),
            Err("`18 s` has a blank in it; write numbers and units together, like `1m30s`".into())
        );
        assert_eq!(
            parse_duration("1m 30s"),
            Err(
                "`1m 30s` has a blank in it; write numbers and units together, like `1m30s`".into()
            )
        );
        assert_eq!(parse_duration("5m30s"), Ok(330_000));
        assert_eq!(
            parse_duration("1h1h"),
            Err("`1h1h` gives `h` twice; write each unit once, like `1m30s`".into())
        );
        assert_eq!(
            parse_duration("1m30min"),
            Err("`1m30min` gives `min` twice; write each unit once, like `1m30s`".into())
        );
    }

    #[test]
    fn parses_units_and_iso() {
        assert_eq!(parse_duration("250ms"), Ok(250));
        assert_eq!(parse_duration("5s"), Ok(5000));
        assert_eq!(parse_duration("1.5s"), Ok(1500));
        assert_eq!(parse_duration("2m"), Ok(120_000));
        assert_eq!(parse_duration("1h"), Ok(3_600_000));
        assert_eq!(parse_duration("1d"), Ok(86_400_000));
        assert_eq!(parse_duration("1m30s"), Ok(90_000));
        assert_eq!(parse_duration("PT18S"), Ok(18_000));
        assert_eq!(parse_duration("PT0.5S"), Ok(500));
        assert_eq!(parse_duration("P1DT1H"), Ok(90_000_000));
    }

    #[test]
    fn errors_explain_the_fix() {
        assert!(parse_duration("18").unwrap_err().contains("`18s`"));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("PT").is_err());
        assert!(parse_duration("P").is_err());
        assert!(
            parse_duration("99999999999999999999d")
                .unwrap_err()
                .contains("year")
        );
        assert!(parse_duration("1e400s").is_err());
    }

    #[test]
    fn formats_back() {
        assert_eq!(format_ms(18_000), "18s");
        assert_eq!(format_ms(250), "250ms");
        assert_eq!(format_ms(1500), "1.5s");
        assert_eq!(format_ms(120_000), "2m");
        assert_eq!(format_ms(90_500), "1m30.5s");
        assert_eq!(format_ms(60_500), "1m500ms");
    }
}
