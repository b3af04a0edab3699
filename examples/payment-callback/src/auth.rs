//! Who may call this service: only the payment provider may report a
//! payment or read an order. It signs every request, as payment providers
//! sign their callbacks (an order read has an empty body):
//!
//! ```text
//! X-Signature: t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 of "<t>.<raw body>">
//! ```
//!
//! keyed with the secret both sides share (`PAYMENT_CALLBACK_SECRET` here).
//! The timestamp is signed with the body and must be within
//! `PAYMENT_CALLBACK_TOLERANCE_SECS` (default 300) of this server's clock,
//! so a captured callback is refused once that much time has passed. The
//! idempotency key is not signed: within the tolerance a captured callback
//! can be sent again under any key, and what stops a second payment then is
//! the business step's own check (only an `UNPAID` order becomes paid). The
//! spec declares the header as the `apiKey` scheme `providerSignature`; the
//! generated handler calls [`Auth::verify`] with it before the callback's
//! key is claimed, so an unsigned, stale or badly signed callback is
//! answered 401, records nothing and pays nothing. A missing, malformed or
//! stale header is refused before the body is even read
//! (`Verify::precheck`).
//!
//! Without `PAYMENT_CALLBACK_SECRET` the service refuses to start (a typo
//! or a missing secret mount must not open it to everyone), unless
//! `PAYMENT_CALLBACK_INSECURE=1` says that callbacks are to be accepted
//! unauthenticated (local use, load tests): then it warns at start and on
//! every callback it accepts that way.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use idemgen_runtime::{Credential, Principal, Refusal, Scheme, Verify};
use sha2::Sha256;

use crate::Request;

/// The environment variable that holds the shared secret.
pub const SECRET_VARIABLE: &str = "PAYMENT_CALLBACK_SECRET";

/// Set to `1` to run without signature checks (local use only).
pub const INSECURE_VARIABLE: &str = "PAYMENT_CALLBACK_INSECURE";

/// How far a signature's timestamp may be from this server's clock, in
/// seconds.
pub const TOLERANCE_VARIABLE: &str = "PAYMENT_CALLBACK_TOLERANCE_SECS";

/// The default of [`TOLERANCE_VARIABLE`], as payment providers use.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// Who a verified callback comes from.
pub const PROVIDER: &str = "payment-provider";

/// At most this many `v1` signatures (a provider rotating its secret sends
/// two), and a header at most this long: each is checked against one MAC.
const MAX_SIGNATURES: usize = 4;
const MAX_HEADER_BYTES: usize = 1024;

const FORMAT: &str = "`X-Signature` must be `t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 \
                      of \"<t>.<raw body>\">`";

/// The shared secret (`None`: callbacks are not authenticated, on purpose)
/// and how old a signature may be.
pub struct Auth {
    secret: Option<Vec<u8>>,
    tolerance: Duration,
}

impl Auth {
    /// Reads `PAYMENT_CALLBACK_SECRET`, `PAYMENT_CALLBACK_INSECURE` and
    /// `PAYMENT_CALLBACK_TOLERANCE_SECS`. No secret is an error, naming the
    /// variable, unless `PAYMENT_CALLBACK_INSECURE=1`.
    pub fn from_env() -> Result<Auth, Box<dyn std::error::Error>> {
        let tolerance = match std::env::var(TOLERANCE_VARIABLE) {
            Err(_) => DEFAULT_TOLERANCE,
            Ok(secs) => secs.parse().map(Duration::from_secs).map_err(|_| {
                format!("{TOLERANCE_VARIABLE} must be a whole number of seconds, not `{secs}`")
            })?,
        };
        let insecure = std::env::var(INSECURE_VARIABLE).is_ok_and(|value| value == "1");
        match std::env::var(SECRET_VARIABLE) {
            Ok(secret) if secret.is_empty() => Err(format!(
                "{SECRET_VARIABLE} is empty; set it to the secret shared with the payment provider"
            )
            .into()),
            Ok(secret) => Ok(Auth::with_secret(secret.as_bytes()).with_tolerance(tolerance)),
            Err(_) if insecure => {
                tracing::warn!(
                    "{INSECURE_VARIABLE}=1 and no {SECRET_VARIABLE}: payment callbacks are NOT \
                     authenticated, and anyone who can reach this service can mark orders \
                     paid. Never expose it like this."
                );
                Ok(Auth::unauthenticated())
            }
            Err(_) => Err(format!(
                "{SECRET_VARIABLE} is not set: set it to the secret shared with the payment \
                 provider (or, for local use only, set {INSECURE_VARIABLE}=1 to accept \
                 unsigned callbacks)"
            )
            .into()),
        }
    }

    /// Callbacks must be signed with `secret`.
    pub fn with_secret(secret: &[u8]) -> Auth {
        Auth {
            secret: Some(secret.to_vec()),
            tolerance: DEFAULT_TOLERANCE,
        }
    }

    /// No signature checks (local use only); every callback accepted this
    /// way is logged as a warning.
    pub fn unauthenticated() -> Auth {
        Auth {
            secret: None,
            tolerance: DEFAULT_TOLERANCE,
        }
    }

    /// This check with signatures accepted within `tolerance` of now.
    pub fn with_tolerance(mut self, tolerance: Duration) -> Auth {
        self.tolerance = tolerance;
        self
    }
}

/// The `X-Signature` value the provider sends for `body` at `timestamp`
/// (Unix seconds).
pub fn sign(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let timestamp = timestamp.to_string();
    let mac = mac(secret, &timestamp, body).finalize().into_bytes();
    format!("t={timestamp},v1={}", hex::encode(mac))
}

/// The Unix time now, in seconds.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The MAC over `<t>.<body>`, `t` exactly as sent.
fn mac(secret: &[u8], timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// A parsed `X-Signature`: its timestamp (as sent, and its value) and
/// every `v1` signature (a provider rotating its secret sends one per
/// secret).
struct SignatureHeader<'a> {
    timestamp_text: &'a str,
    timestamp: u64,
    signatures: Vec<[u8; 32]>,
}

fn parse(header: &str) -> Result<SignatureHeader<'_>, Refusal> {
    let malformed = |why: &str| Refusal::unauthenticated(format!("{why}: {FORMAT}"));
    if header.len() > MAX_HEADER_BYTES {
        return Err(malformed("the signature header is too long"));
    }
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (name, value) = part
            .trim()
            .split_once('=')
            .ok_or_else(|| malformed("malformed signature"))?;
        match name {
            "t" if timestamp.is_none() => {
                let digits = !value.is_empty()
                    && value.len() <= 19
                    && value.bytes().all(|byte| byte.is_ascii_digit());
                let seconds = value
                    .parse::<u64>()
                    .ok()
                    .filter(|_| digits)
                    .ok_or_else(|| malformed("the timestamp `t` is not Unix seconds"))?;
                timestamp = Some((value, seconds));
            }
            "t" => return Err(malformed("the timestamp `t` is sent twice")),
            "v1" if signatures.len() == MAX_SIGNATURES => {
                return Err(malformed("more than four signatures `v1`"));
            }
            "v1" => {
                let mut signature = [0u8; 32];
                hex::decode_to_slice(value, &mut signature).map_err(|_| {
                    malformed("the signature `v1` is not 64 hex digits (an HMAC-SHA256)")
                })?;
                signatures.push(signature);
            }
            // Other schemes (v0, a provider's next version) are not ours.
            _ => {}
        }
    }
    let (timestamp_text, timestamp) = timestamp.ok_or_else(|| malformed("no timestamp `t`"))?;
    if signatures.is_empty() {
        return Err(malformed("no signature `v1`"));
    }
    Ok(SignatureHeader {
        timestamp_text,
        timestamp,
        signatures,
    })
}

impl Auth {
    /// `header` parsed, if it is well formed and its timestamp within the
    /// tolerance of `now` (Unix seconds): all that can be checked before
    /// the body is read.
    fn fresh<'a>(&self, header: &'a str, now: u64) -> Result<SignatureHeader<'a>, Refusal> {
        let header = parse(header)?;
        let tolerance = self.tolerance.as_secs();
        if header.timestamp.saturating_add(tolerance) < now {
            return Err(Refusal::unauthenticated(format!(
                "the signature's timestamp is {} s old, past the tolerance of {tolerance} s",
                now - header.timestamp
            )));
        }
        if header.timestamp > now.saturating_add(tolerance) {
            return Err(Refusal::unauthenticated(format!(
                "the signature's timestamp is {} s in the future, past the tolerance of \
                 {tolerance} s",
                header.timestamp - now
            )));
        }
        Ok(header)
    }

    /// Checks `header` for `body` at `now` (Unix seconds).
    fn check(&self, secret: &[u8], header: &str, body: &[u8], now: u64) -> Result<(), Refusal> {
        let header = self.fresh(header, now)?;
        // One MAC over the body, however many signatures; `verify_slice`
        // compares in constant time.
        let expected = mac(secret, header.timestamp_text, body);
        let matches = header
            .signatures
            .iter()
            .any(|signature| expected.clone().verify_slice(signature).is_ok());
        if !matches {
            return Err(Refusal::unauthenticated(
                "the signature does not match the timestamp and body",
            ));
        }
        Ok(())
    }
}

impl Verify for Auth {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> Result<Principal, Refusal> {
        let Some(secret) = &self.secret else {
            tracing::warn!("accepted a payment callback without checking its signature");
            return Ok(Principal::new(PROVIDER, scheme.name));
        };
        let Credential::ApiKey(header) = credential else {
            return Err(Refusal::missing(scheme));
        };
        self.check(secret, header, &request.body, unix_now())?;
        Ok(Principal::new(PROVIDER, scheme.name))
    }

    /// A missing, malformed or stale `X-Signature` is refused before the
    /// body is read: no client can make the service hold a body without a
    /// fresh, well-formed signature (whose MAC needs the body).
    fn precheck(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        _request: &Request,
    ) -> Result<(), Refusal> {
        if self.secret.is_none() {
            return Ok(());
        }
        let Credential::ApiKey(header) = credential else {
            return Err(Refusal::missing(scheme));
        };
        self.fresh(header, unix_now()).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"Jefe";
    const NOW: u64 = 1_733_270_400;

    fn check(header: &str, body: &[u8]) -> Result<(), String> {
        Auth::with_secret(SECRET)
            .check(SECRET, header, body, NOW)
            .map_err(|refusal| format!("{refusal:?}"))
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_the_timestamp_a_dot_and_the_body() {
        // RFC 4231, test case 2, over "<t>.<body>".
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).unwrap();
        mac.update(b"1733270400.what do ya want for nothing?");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(
            sign(SECRET, NOW, b"what do ya want for nothing?"),
            format!("t=1733270400,v1={expected}")
        );
    }

    #[test]
    fn fresh_signatures_pass_and_everything_else_is_refused() {
        let body = b"{\"amount\":1}";
        assert_eq!(check(&sign(SECRET, NOW, body), body), Ok(()));
        assert_eq!(check(&sign(SECRET, NOW - 300, body), body), Ok(()));
        let stale = check(&sign(SECRET, NOW - 301, body), body).unwrap_err();
        assert!(stale.contains("301 s old"), "{stale}");
        let future = check(&sign(SECRET, NOW + 301, body), body).unwrap_err();
        assert!(future.contains("in the future"), "{future}");
        assert!(check(&sign(b"other", NOW, body), body).is_err());
        assert!(check(&sign(SECRET, NOW, body), b"{\"amount\":2}").is_err());
        // The timestamp is signed: moving it breaks the signature.
        let moved = sign(SECRET, NOW - 1000, body).replace("t=1733269400", "t=1733270400");
        assert!(check(&moved, body).is_err());
        for malformed in [
            "",
            "deadbeef",
            "v1=00",
            "t=now,v1=00",
            "t=1733270400",
            "t=1733270400,v1=zz",
            "t=1,t=2,v1=00",
            "t=+1733270400,v1=00",
            "t=1733270400,v1=",
            "t=1733270400,v1=00ff",
        ] {
            let refusal = check(malformed, body).unwrap_err();
            assert!(refusal.contains("X-Signature"), "{malformed}: {refusal}");
        }
        // A rotated secret: any one v1 may match.
        let good = sign(SECRET, NOW, body);
        let zeros = "0".repeat(64);
        let rotated = format!("t={NOW},v1={zeros},{}", &good[good.find("v1").unwrap()..]);
        assert_eq!(check(&rotated, body), Ok(()));
        // Bounded work: five signatures, or a long header, are refused
        // before any MAC is computed.
        let five = format!("t={NOW}{}", format!(",v1={zeros}").repeat(5));
        assert!(check(&five, body).unwrap_err().contains("more than four"));
        let long = format!("t={NOW},v1={zeros},x={}", "y".repeat(1024));
        assert!(check(&long, body).unwrap_err().contains("too long"));
    }

    /// What needs no body is refused before the body is read: a missing,
    /// malformed or stale header; a fresh one waits for its body's MAC.
    #[test]
    fn missing_malformed_and_stale_headers_are_refused_before_the_body() {
        static SCHEME: Scheme = Scheme {
            name: "providerSignature",
            kind: idemgen_runtime::SchemeKind::ApiKey {
                location: idemgen_runtime::ApiKeyIn::Header,
                name: "X-Signature",
            },
            realm: "",
        };
        let auth = Auth::with_secret(SECRET);
        let request = Request::new(axum::http::Method::POST, "/callbacks/pay");
        let precheck = |credential: Credential| auth.precheck(&SCHEME, &credential, &request);
        let now = unix_now();
        let zeros = "0".repeat(64);
        assert!(precheck(Credential::Missing).is_err());
        assert!(precheck(Credential::ApiKey("t=1,v1=00".into())).is_err());
        assert!(precheck(Credential::ApiKey(format!("t=1,v1={zeros}"))).is_err());
        assert!(precheck(Credential::ApiKey(format!("t={},v1={zeros}", now + 3600))).is_err());
        assert!(precheck(Credential::ApiKey(format!("t={now},v1={zeros}"))).is_ok());
        // Without a secret (local use), nothing is refused.
        let open = Auth::unauthenticated();
        assert!(
            open.precheck(&SCHEME, &Credential::Missing, &request)
                .is_ok()
        );
    }
}
