//! Durations as the contract writes them (`1m30s`, `PT0.5S`): any text is
//! a value within the limit or an error that says why, never a panic, and
//! every value formats to text that parses back to itself.
#![no_main]

use idemgen_spec::contract::duration::{MAX_MS, format_ms, parse_duration};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse_duration(text) {
        Ok(ms) => {
            assert!(ms <= MAX_MS, "{text:?} parsed to {ms} ms, past the limit");
            let written = format_ms(ms);
            assert_eq!(
                parse_duration(&written),
                Ok(ms),
                "{text:?} → {ms} ms → {written:?} does not parse back"
            );
        }
        Err(why) => assert!(!why.is_empty(), "{text:?}: an empty error"),
    }
});
