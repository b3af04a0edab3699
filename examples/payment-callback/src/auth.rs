//! Who may call this service: only the payment provider may report a
//! payment. It signs every callback: `X-Signature` is the lowercase hex
//! HMAC-SHA256 of the raw request body, keyed with the secret both sides
//! share (`PAYMENT_CALLBACK_SECRET` here). The spec declares that header as
//! the `apiKey` scheme `providerSignature`; the generated handler calls
//! [`Auth::verify`] with it before the callback's key is claimed, so an
//! unsigned or badly signed callback is answered 401, records nothing and
//! pays nothing.
//!
//! Without `PAYMENT_CALLBACK_SECRET` the service still starts, for local
//! use, and warns loudly that callbacks are unauthenticated: anyone who
//! can reach it can mark orders paid.

use hmac::{Hmac, KeyInit, Mac};
use idemgen_runtime::{Credential, Principal, Refusal, Scheme, Verify};
use sha2::Sha256;

use crate::Request;

/// The environment variable that holds the shared secret.
pub const SECRET_VARIABLE: &str = "PAYMENT_CALLBACK_SECRET";

/// Who a verified callback comes from.
pub const PROVIDER: &str = "payment-provider";

/// The shared secret, if configured.
pub struct Auth {
    secret: Option<Vec<u8>>,
}

impl Auth {
    /// Reads `PAYMENT_CALLBACK_SECRET`; without it, warns that callbacks
    /// are not authenticated. An empty secret is a mistake, not "none".
    pub fn from_env() -> Result<Auth, Box<dyn std::error::Error>> {
        match std::env::var(SECRET_VARIABLE) {
            Ok(secret) if secret.is_empty() => Err(format!(
                "{SECRET_VARIABLE} is empty; set it to the secret shared with the payment \
                 provider, or unset it to run without signature checks"
            )
            .into()),
            Ok(secret) => Ok(Auth::with_secret(secret.as_bytes())),
            Err(_) => {
                tracing::warn!(
                    "{SECRET_VARIABLE} is not set: payment callbacks are NOT authenticated, and \
                     anyone who can reach this service can mark orders paid. Set it to the \
                     secret shared with the payment provider before exposing the service."
                );
                Ok(Auth { secret: None })
            }
        }
    }

    /// Callbacks must be signed with `secret`.
    pub fn with_secret(secret: &[u8]) -> Auth {
        Auth {
            secret: Some(secret.to_vec()),
        }
    }

    /// No signature checks (local use only).
    pub fn unauthenticated() -> Auth {
        Auth { secret: None }
    }
}

/// The `X-Signature` of `body` under `secret`: lowercase hex HMAC-SHA256.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    hex::encode(mac(secret, body).finalize().into_bytes())
}

fn mac(secret: &[u8], body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    mac
}

impl Verify for Auth {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> Result<Principal, Refusal> {
        let Some(secret) = &self.secret else {
            return Ok(Principal::new(PROVIDER, scheme.name));
        };
        let Credential::ApiKey(signature) = credential else {
            return Err(Refusal::missing(scheme));
        };
        let signature = hex::decode(signature).map_err(|_| {
            Refusal::unauthenticated("`X-Signature` must be the hex HMAC-SHA256 of the body")
        })?;
        // `verify_slice` compares in constant time.
        mac(secret, &request.body)
            .verify_slice(&signature)
            .map_err(|_| Refusal::unauthenticated("the signature does not match the body"))?;
        Ok(Principal::new(PROVIDER, scheme.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_rfc_4231_hmac_sha256_in_hex() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
