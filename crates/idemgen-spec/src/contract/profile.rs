//! Status-code profiles: which codes answer in-progress, conflict and
//! missing-key requests unless `responses` says otherwise.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The article's: 429 + Retry-After, 409, 400.
    RetryAfter,
    /// The IETF HTTPAPI Idempotency-Key draft: 409, 422, 400.
    IetfDraft,
    /// Stripe's: 409, 400, and the key is optional.
    Stripe,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::RetryAfter, Profile::IetfDraft, Profile::Stripe];
    pub const NAMES: [&'static str; 3] = ["retry-after", "ietf-draft", "stripe"];

    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL
            .into_iter()
            .find(|profile| profile.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::RetryAfter => "retry-after",
            Profile::IetfDraft => "ietf-draft",
            Profile::Stripe => "stripe",
        }
    }

    pub fn in_progress_status(self) -> u16 {
        match self {
            Profile::RetryAfter => 429,
            Profile::IetfDraft | Profile::Stripe => 409,
        }
    }

    pub fn conflict_status(self) -> u16 {
        match self {
            Profile::RetryAfter => 409,
            Profile::IetfDraft => 422,
            Profile::Stripe => 400,
        }
    }

    /// `None`: the key is optional and a request without one is served
    /// without idempotency.
    pub fn missing_key_status(self) -> Option<u16> {
        match self {
            Profile::RetryAfter | Profile::IetfDraft => Some(400),
            Profile::Stripe => None,
        }
    }
}
