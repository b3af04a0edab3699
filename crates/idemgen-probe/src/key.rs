//! Fresh idempotency keys from a `key.format` template, and deliberately
//! broken ones for the missing-key checks.
//!
//! Probe keys must be unique and well formed, not secret, so a small
//! seeded generator is enough (no CSPRNG dependency).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use idemgen_spec::contract::key_template::{KeyTemplate, Part, Segment};

/// SplitMix64, seeded from std's per-process random hasher keys, the
/// clock and the process id, so two probe runs never share keys.
pub struct Rng(u64);

impl Default for Rng {
    fn default() -> Rng {
        Rng::new()
    }
}

impl Rng {
    pub fn new() -> Rng {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(now().as_nanos());
        hasher.write_u32(std::process::id());
        Rng(hasher.finish())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn bytes(&mut self, count: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(count + 8);
        while out.len() < count {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(count);
        out
    }

    /// A random UUID v4, lower-case.
    pub fn uuid(&mut self) -> String {
        let mut bytes = self.bytes(16);
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[0..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    }

    /// A ULID: 48-bit millisecond time and 80 random bits, Crockford base32.
    pub fn ulid(&mut self) -> String {
        const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        let value = ((now().as_millis() & ((1 << 48) - 1)) << 80)
            | (u128::from(self.next_u64()) << 16)
            | u128::from(self.next_u64() & 0xffff);
        (0..26)
            .rev()
            .map(|index| ALPHABET[((value >> (index * 5)) & 31) as usize] as char)
            .collect()
    }

    /// `count` random bytes, base64url without padding.
    pub fn base64url(&mut self, count: usize) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bytes = self.bytes(count);
        let mut out = String::with_capacity(count.div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let word = chunk.iter().enumerate().fold(0u32, |word, (at, byte)| {
                word | (u32::from(*byte) << (16 - 8 * at))
            });
            for index in 0..=chunk.len() {
                out.push(ALPHABET[((word >> (18 - 6 * index)) & 63) as usize] as char);
            }
        }
        out
    }

    /// Lower-case hex of `count` random bytes.
    pub fn hex(&mut self, count: usize) -> String {
        self.bytes(count)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

fn now() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Today (UTC) as `yyyyMMdd`.
pub fn today() -> String {
    let (year, month, day) = civil_from_days((now().as_secs() / 86_400) as i64);
    format!("{year:04}{month:02}{day:02}")
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The text a body value contributes to a `{field:…}` segment: strings as
/// they are, numbers as written (what servers compare the key with).
pub fn field_text(body: &Value, pointer: &str) -> Option<String> {
    match body.pointer(pointer)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// A fresh key that matches `template`; `{field:…}` segments take the
/// body's values. Errors name the field the body lacks.
pub fn generate(template: &KeyTemplate, body: &Value, rng: &mut Rng) -> Result<String, String> {
    let mut key = String::new();
    for part in &template.parts {
        match part {
            Part::Literal(text) => key.push_str(text),
            Part::Segment(segment) => key.push_str(&segment_text(segment, body, rng)?),
        }
    }
    Ok(key)
}

fn segment_text(segment: &Segment, body: &Value, rng: &mut Rng) -> Result<String, String> {
    Ok(match segment {
        Segment::Uuid => rng.uuid(),
        Segment::Ulid => rng.ulid(),
        Segment::Random(bytes) => rng.base64url(*bytes as usize),
        Segment::Date => today(),
        Segment::Timestamp => now().as_millis().to_string(),
        // Microseconds plus randomness: unique across runs and threads.
        Segment::Seq => (now().as_micros() as u64 / 1000 * 1000 + rng.next_u64() % 1000)
            .to_string(),
        // What Stripe-style clients send for a key they choose.
        Segment::Opaque | Segment::SfString => rng.uuid(),
        Segment::Field(pointer) => field_text(body, pointer).ok_or_else(|| {
            format!(
                "the key format needs the body field `{pointer}` (a string or number), and the request body has none; add it with --set {pointer}=VALUE"
            )
        })?,
    })
}

/// A key of the right shape except one typed segment is nonsense
/// (`pay:20240615:not-a-uuid`), or, for templates made only of field
/// segments, the key without its business prefix. `None`: no way to
/// break it that a server could tell.
pub fn malformed(template: &KeyTemplate, body: &Value, rng: &mut Rng) -> Option<String> {
    let broken_at = template.parts.iter().position(
        |part| matches!(part, Part::Segment(segment) if !matches!(segment, Segment::Field(_))),
    );
    let mut key = String::new();
    for (index, part) in template.parts.iter().enumerate() {
        match part {
            // Dropping the prefix is the only break left.
            Part::Literal(_) if broken_at.is_none() && index == 0 => {}
            Part::Literal(text) => key.push_str(text),
            // Each broken key is fresh (a random tail that keeps it broken),
            // so a service that wrongly keeps records under it never
            // answers a later run with an earlier run's stored answer.
            Part::Segment(segment) if Some(index) == broken_at => {
                let fresh = rng.hex(4);
                key.push_str(&match segment {
                    Segment::Uuid => format!("not-a-uuid-{fresh}"),
                    Segment::Ulid => format!("not-a-ulid-{fresh}"),
                    Segment::Date => format!("notadate{fresh}"),
                    // A space: visible ASCII only.
                    Segment::Opaque => format!("not valid {fresh}"),
                    // A tab: a header carries it, an sf-string does not.
                    Segment::SfString => format!("not\tvalid {fresh}"),
                    _ => format!("not!valid-{fresh}"),
                })
            }
            Part::Segment(segment) => key.push_str(&segment_text(segment, body, rng).ok()?),
        }
    }
    let changed = broken_at.is_some() || matches!(template.parts.first(), Some(Part::Literal(_)));
    changed.then_some(key)
}

/// A key one character longer than `max_length`: the template's literal
/// prefix padded with random hex digits, fresh each time.
pub fn over_long(template: &KeyTemplate, max_length: usize, rng: &mut Rng) -> String {
    let mut key = template.prefix().to_string();
    let room = (max_length + 1).saturating_sub(key.chars().count());
    key.push_str(&rng.hex(room.div_ceil(2))[..room]);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_889), (2024, 6, 15));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(today().len(), 8);
    }

    #[test]
    fn keys_match_their_segments() {
        let mut rng = Rng::new();
        let uuid = rng.uuid();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"));
        let ulid = rng.ulid();
        assert_eq!(ulid.len(), 26);
        assert!(ulid.as_bytes()[0] <= b'7');
        for count in [1, 2, 3, 16, 17] {
            assert_eq!(rng.base64url(count).len(), (count * 4).div_ceil(3));
        }
        assert_ne!(rng.uuid(), rng.uuid());
    }

    #[test]
    fn field_segments_follow_the_body() {
        let template = KeyTemplate::parse("pay:{date}:{field:/txn_id}").unwrap();
        let body = serde_json::json!({"txn_id": "TXN-1"});
        let key = generate(&template, &body, &mut Rng::new()).unwrap();
        assert_eq!(key, format!("pay:{}:TXN-1", today()));
        assert!(generate(&template, &serde_json::json!({}), &mut Rng::new()).is_err());
        let broken = malformed(&template, &body, &mut Rng::new()).unwrap();
        assert!(broken.starts_with("pay:notadate"), "{broken}");
        assert!(broken.ends_with(":TXN-1"), "{broken}");
        let only_field = KeyTemplate::parse("pay:{field:/txn_id}").unwrap();
        assert_eq!(
            malformed(&only_field, &body, &mut Rng::new()).unwrap(),
            "TXN-1"
        );
        let mut rng = Rng::new();
        let long = over_long(&only_field, 10, &mut rng);
        assert_eq!(long.len(), 11);
        assert!(long.starts_with("pay:"), "{long}");
        assert_ne!(long, over_long(&only_field, 10, &mut rng));
    }

    /// A store that wrongly keeps a record under a refused key must not
    /// answer a later run's refused key from it: each is new.
    #[test]
    fn refused_keys_are_fresh_each_time_and_stay_refused() {
        let body = serde_json::json!({});
        let mut rng = Rng::new();
        for format in [
            "{opaque}",
            "{sf-string}",
            "{uuid}",
            "pay:{ulid}",
            "pay:{date}:{uuid}",
        ] {
            let template = KeyTemplate::parse(format).unwrap();
            let first = malformed(&template, &body, &mut rng).unwrap();
            let second = malformed(&template, &body, &mut rng).unwrap();
            assert_ne!(first, second, "{format}");
        }
        let opaque = malformed(&KeyTemplate::parse("{opaque}").unwrap(), &body, &mut rng).unwrap();
        assert!(opaque.contains(' '), "{opaque}");
        let any = KeyTemplate::parse("{sf-string}").unwrap();
        let refused = malformed(&any, &body, &mut rng).unwrap();
        assert!(
            refused.chars().any(|c| !(' '..='~').contains(&c)),
            "{refused:?}"
        );
    }
}
