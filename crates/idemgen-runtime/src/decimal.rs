//! Exact decimal values of JSON number text, for the validation keywords
//! whose limits a payment spec writes in cents and fractions (`0.01`):
//! ordered and divided as decimals, never as the floats nearest them.
//! Without a database feature too: the generator reads a spec's limits
//! with the same grammar the service checks them with.

use std::cmp::Ordering;

/// The largest exponent kept (larger ones count as this one): no limit
/// or value a request can hold comes near it, and every sum of exponents
/// here stays far inside an `i64`.
const EXPONENT_LIMIT: i64 = 1_000_000_000_000_000_000;

/// `digits × 10^exponent`, the digits (ASCII) without leading or trailing
/// zeros, none at all for zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

impl Decimal {
    /// The value of JSON number text (`-12.50`, `1e-7`); `None` for text
    /// that is not a JSON number.
    pub fn parse(text: &str) -> Option<Decimal> {
        fn digits(bytes: &[u8]) -> (&[u8], &[u8]) {
            bytes.split_at(bytes.iter().take_while(|b| b.is_ascii_digit()).count())
        }
        let (negative, rest) = match text.as_bytes() {
            [b'-', rest @ ..] => (true, rest),
            bytes => (false, bytes),
        };
        let (whole, rest) = digits(rest);
        if whole.is_empty() || (whole.len() > 1 && whole[0] == b'0') {
            return None;
        }
        let (fraction, rest) = match rest {
            [b'.', rest @ ..] => match digits(rest) {
                ([], _) => return None,
                found => found,
            },
            _ => (&[][..], rest),
        };
        let exponent = match rest {
            [] => 0,
            [b'e' | b'E', rest @ ..] => {
                let (sign, rest) = match rest {
                    [b'-', rest @ ..] => (-1, rest),
                    [b'+', rest @ ..] => (1, rest),
                    _ => (1, rest),
                };
                match digits(rest) {
                    ([], _) | (_, [_, ..]) => return None,
                    (written, []) => {
                        let magnitude = written
                            .iter()
                            .try_fold(0_i64, |sum, digit| {
                                sum.checked_mul(10)?.checked_add(i64::from(digit - b'0'))
                            })
                            .map_or(EXPONENT_LIMIT, |magnitude| magnitude.min(EXPONENT_LIMIT));
                        sign * magnitude
                    }
                }
            }
            _ => return None,
        };
        let mut all: Vec<u8> = whole.iter().chain(fraction).copied().collect();
        let trailing = all.iter().rev().take_while(|digit| **digit == b'0').count();
        all.truncate(all.len() - trailing);
        let leading = all.iter().take_while(|digit| **digit == b'0').count();
        all.drain(..leading);
        if all.is_empty() {
            return Some(Decimal {
                negative: false,
                digits: all,
                exponent: 0,
            });
        }
        Some(Decimal {
            negative,
            digits: all,
            exponent: exponent - fraction.len() as i64 + trailing as i64,
        })
    }

    /// How many digits the value has without leading and trailing zeros
    /// (`0.0150` has 2, zero none).
    pub fn significant_digits(&self) -> usize {
        self.digits.len()
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether `self / step` is a whole number; `None` when `step`'s
    /// significant digits do not fit a `u64` (the generator writes at most
    /// 19).
    pub fn is_multiple_of(&self, step: &Decimal) -> Option<bool> {
        if self.is_zero() {
            return Some(true);
        }
        let divisor = std::str::from_utf8(&step.digits)
            .ok()?
            .parse::<u64>()
            .ok()?;
        if divisor == 0 {
            return None;
        }
        // With no trailing zeros in either, a value whose last digit sits
        // below the step's last digit is no multiple of it.
        if self.exponent < step.exponent {
            return Some(false);
        }
        let divisor = u128::from(divisor);
        let remainder = self.digits.iter().fold(0_u128, |remainder, digit| {
            (remainder * 10 + u128::from(digit - b'0')) % divisor
        });
        let shift = pow10_mod(self.exponent - step.exponent, divisor);
        Some((remainder * shift).is_multiple_of(divisor))
    }
}

/// `10^power mod divisor`, by squaring (`divisor` below 2^64, so no
/// product overflows).
fn pow10_mod(mut power: i64, divisor: u128) -> u128 {
    let mut result = 1 % divisor;
    let mut base = 10 % divisor;
    while power > 0 {
        if power & 1 == 1 {
            result = result * base % divisor;
        }
        base = base * base % divisor;
        power >>= 1;
    }
    result
}

impl Ord for Decimal {
    fn cmp(&self, other: &Decimal) -> Ordering {
        let sign = |d: &Decimal| match (d.is_zero(), d.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if self.is_zero() => Ordering::Equal,
            Ordering::Equal => {
                // The place of the leading digit, then the digits themselves
                // (ASCII, so bytes order as digits do).
                let top = |d: &Decimal| d.digits.len() as i64 + d.exponent;
                let magnitude = top(self)
                    .cmp(&top(other))
                    .then_with(|| self.digits.cmp(&other.digits));
                if self.negative {
                    magnitude.reverse()
                } else {
                    magnitude
                }
            }
            unequal => unequal,
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Decimal) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap_or_else(|| panic!("{text} is JSON number text"))
    }

    #[test]
    fn only_json_number_text_is_read() {
        for text in [
            "0", "-0", "1", "-12.50", "1e3", "1E+3", "2.5e-7", "0.000", "10",
        ] {
            assert!(Decimal::parse(text).is_some(), "{text}");
        }
        for text in [
            "", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1_000", "0x10", "NaN", "1 ", "1ee2",
        ] {
            assert!(Decimal::parse(text).is_none(), "{text}");
        }
    }

    #[test]
    fn significant_digits_leave_out_leading_and_trailing_zeros() {
        for (text, digits) in [
            ("0.0150", 2),
            ("100", 1),
            ("1.0e5", 1),
            ("0", 0),
            ("-12.5", 3),
        ] {
            assert_eq!(d(text).significant_digits(), digits, "{text}");
        }
    }

    #[test]
    fn one_value_is_one_decimal_however_it_is_written() {
        assert_eq!(d("1999"), d("1.999e3"));
        assert_eq!(d("1999"), d("1999.000"));
        assert_eq!(d("0.01"), d("1e-2"));
        assert_eq!(d("-0"), d("0.0"));
        assert_eq!(d("-0"), d("0e99"));
    }

    #[test]
    fn decimals_order_by_value() {
        let ascending = [
            "-1e400",
            "-10",
            "-9.99",
            "-1",
            "-0.1",
            "-0.01",
            "0",
            "0.01",
            "0.010000000000000000001",
            "0.1",
            "0.99",
            "1",
            "9007199254740992",
            "9007199254740993",
            "1e20",
            "1e400",
        ];
        for pair in ascending.windows(2) {
            assert_eq!(
                d(pair[0]).cmp(&d(pair[1])),
                Ordering::Less,
                "{} < {}",
                pair[0],
                pair[1]
            );
            assert_eq!(
                d(pair[1]).cmp(&d(pair[0])),
                Ordering::Greater,
                "{} > {}",
                pair[1],
                pair[0]
            );
        }
        assert_eq!(d("12.5").cmp(&d("1.25e1")), Ordering::Equal);
    }

    #[test]
    fn multiples_are_whole_quotients_in_decimal() {
        let multiple = |value: &str, step: &str| d(value).is_multiple_of(&d(step));
        assert_eq!(multiple("19.99", "0.01"), Some(true));
        assert_eq!(multiple("19.9900000001", "0.01"), Some(false));
        assert_eq!(
            multiple("0.3", "0.1"),
            Some(true),
            "0.1 + 0.2 is a float's problem"
        );
        assert_eq!(multiple("0", "0.07"), Some(true));
        assert_eq!(multiple("-1.5", "0.5"), Some(true));
        assert_eq!(multiple("1.25", "0.5"), Some(false));
        assert_eq!(multiple("1e300", "0.01"), Some(true));
        assert_eq!(multiple("1e300", "7"), Some(false));
        assert_eq!(multiple("7e300", "7"), Some(true));
        assert_eq!(multiple("9007199254740985", "5"), Some(true));
        assert_eq!(multiple("9007199254740981", "5"), Some(false));
        assert_eq!(multiple("2.5", "2.5"), Some(true));
        assert_eq!(multiple("12", "1.2"), Some(true));
        assert_eq!(
            multiple("1", "12345678901234567890123"),
            None,
            "past 19 digits"
        );
    }
}
