//! `minimum`, `maximum` and `multipleOf` against an outside truth:
//! Python's `decimal` module, given the same values and limits as text.
//! Thousands of random ones (the values of up to 15 significant digits a
//! client writes, integers out to `u64::MAX`, limits and steps as a spec
//! writes them, past a float's digits too) must get the answers exact
//! decimal arithmetic gives. Prints `SKIPPED:` without `python3`.

use std::io::Write;
use std::process::{Command, Stdio};

use idemgen_runtime::{Check, Constraint};
use serde_json::Value;

/// Python's verdicts, one line per case: the value's order against the
/// limit (-1, 0, 1) and whether it is a multiple of the step (0, 1).
const TRUTH: &str = r#"
import sys
from decimal import Decimal, getcontext
getcontext().prec = 2000
for line in sys.stdin:
    value, limit, step = (Decimal(t) for t in line.split())
    order = (value > limit) - (value < limit)
    print(order, int(value % step == 0))
"#;

/// A small deterministic generator (xorshift), so a failure is the same
/// case on every run.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// JSON number text of `digits` significant digits, its decimal point
    /// or exponent somewhere in `-shift..=shift` places.
    fn decimal(&mut self, digits: u64, shift: i64, negative: bool) -> String {
        let mut mantissa: String = (0..digits)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect();
        if mantissa.starts_with('0') {
            mantissa.replace_range(0..1, &(1 + self.below(9)).to_string());
        }
        let exponent = self.below(2 * shift as u64 + 1) as i64 - shift;
        let sign = if negative { "-" } else { "" };
        match self.below(3) {
            // `123e-2`
            0 => format!("{sign}{mantissa}e{exponent}"),
            // `1.23e0`
            1 => format!(
                "{sign}{}.{}e{}",
                &mantissa[..1],
                if digits > 1 { &mantissa[1..] } else { "0" },
                exponent + digits as i64 - 1
            ),
            // `1.23`, `0.0123`, `12300`
            _ => {
                let point = mantissa.len() as i64 + exponent;
                if exponent >= 0 {
                    format!("{sign}{mantissa}{}", "0".repeat(exponent as usize))
                } else if point > 0 {
                    let (whole, fraction) = mantissa.split_at(point as usize);
                    format!("{sign}{whole}.{fraction}")
                } else {
                    format!("{sign}0.{}{mantissa}", "0".repeat((-point) as usize))
                }
            }
        }
    }

    fn value(&mut self) -> String {
        match self.below(4) {
            0 => self.next().to_string(),
            1 => (self.next() as i64).to_string(),
            _ => {
                let digits = 1 + self.below(15);
                let negative = self.below(2) == 0;
                self.decimal(digits, 12, negative)
            }
        }
    }

    fn limit(&mut self) -> String {
        let digits = 1 + self.below(22);
        let negative = self.below(2) == 0;
        self.decimal(digits, 12, negative)
    }

    fn step(&mut self) -> String {
        let digits = 1 + self.below(4);
        self.decimal(digits, 4, false)
    }
}

fn leak(text: &str) -> &'static str {
    Box::leak(text.to_string().into_boxed_str())
}

/// Whether `value`'s member `v` breaks `check`.
fn refused(value: &Value, check: Check) -> bool {
    idemgen_runtime::constraints::check(value, &[Constraint { at: "/v", check }]).is_err()
}

#[test]
fn limits_and_steps_agree_with_pythons_decimal() {
    let mut cases = Cases(0x9E37_79B9_7F4A_7C15);
    let mut lines = Vec::new();
    for _ in 0..3000 {
        let (value, limit, step) = (cases.value(), cases.limit(), cases.step());
        // A quarter of the limits are the value itself: the edge where a
        // float's rounding would show.
        let limit = match cases.below(4) {
            0 => value.clone(),
            _ => limit,
        };
        lines.push((value, limit, step));
    }
    let input: String = lines
        .iter()
        .map(|(value, limit, step)| format!("{value} {limit} {step}\n"))
        .collect();
    let child = Command::new("python3")
        .args(["-c", TRUTH])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!(
            "SKIPPED: python3 is not installed (limits_and_steps_agree_with_pythons_decimal)"
        );
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python3 failed");
    let truth = String::from_utf8(output.stdout).unwrap();
    let verdicts: Vec<&str> = truth.lines().collect();
    assert_eq!(verdicts.len(), lines.len());
    let mut multiples = 0;
    let mut orders = [0_usize; 3];
    for ((value_text, limit, step), verdict) in lines.iter().zip(verdicts) {
        let value: Value = serde_json::from_str(&format!("{{\"v\": {value_text}}}")).unwrap();
        let (order, multiple) = verdict.split_once(' ').unwrap();
        let over = refused(&value, Check::Maximum(leak(limit)));
        let under = refused(&value, Check::Minimum(leak(limit)));
        let seen = match (over, under) {
            (true, false) => "1",
            (false, true) => "-1",
            (false, false) => "0",
            (true, true) => panic!("{value_text} is both over and under {limit}"),
        };
        assert_eq!(seen, order, "{value_text} against the limit {limit}");
        orders[(order.parse::<i8>().unwrap() + 1) as usize] += 1;
        let not_multiple = refused(&value, Check::MultipleOf(leak(step)));
        assert_eq!(
            (!not_multiple) as u8,
            multiple.parse::<u8>().unwrap(),
            "{value_text} as a multiple of {step}"
        );
        multiples += usize::from(!not_multiple);
    }
    // Not vacuous: every answer occurs, the edges too.
    eprintln!("below / at / above the limit: {orders:?}; multiples of the step: {multiples}");
    assert!(orders.iter().all(|n| *n > 300), "{orders:?}");
    assert!(
        multiples > 100 && multiples < lines.len() - 100,
        "{multiples}"
    );
}
