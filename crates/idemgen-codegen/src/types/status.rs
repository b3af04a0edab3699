//! Response keys (`200`, `4XX`, `default`) and the variant names they get.

/// Which statuses a declared response stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StatusPattern {
    /// One code: `200`.
    Exact(u16),
    /// A class, by its first digit: `4XX` is `Range(4)`.
    Range(u8),
    /// `default`: every status not declared otherwise.
    Default,
}

impl StatusPattern {
    /// Reads a key of a Responses Object; `None` when it is none of the
    /// three forms.
    pub fn parse(key: &str) -> Option<StatusPattern> {
        if key == "default" {
            return Some(StatusPattern::Default);
        }
        let bytes = key.as_bytes();
        if bytes.len() != 3 || !(b'1'..=b'5').contains(&bytes[0]) {
            return None;
        }
        if key[1..].eq_ignore_ascii_case("xx") {
            return Some(StatusPattern::Range(bytes[0] - b'0'));
        }
        key.parse().ok().map(StatusPattern::Exact)
    }

    /// Whether `code` is answered with this response when nothing more
    /// specific is declared (`default` stands for every code).
    pub fn matches(self, code: u16) -> bool {
        match self {
            StatusPattern::Exact(exact) => exact == code,
            StatusPattern::Range(class) => u16::from(class) == code / 100,
            StatusPattern::Default => true,
        }
    }

    /// Whether the variant carries its status (ranges and `default` do).
    pub fn carries_status(self) -> bool {
        !matches!(self, StatusPattern::Exact(_))
    }

    /// The variant name: the reason phrase (`NotFound`), else `Status418`.
    pub fn variant_name(self) -> String {
        match self {
            StatusPattern::Exact(code) => reason(code)
                .map(str::to_string)
                .unwrap_or_else(|| format!("Status{code}")),
            StatusPattern::Range(1) => "Informational".into(),
            StatusPattern::Range(2) => "Success".into(),
            StatusPattern::Range(3) => "Redirection".into(),
            StatusPattern::Range(4) => "ClientError".into(),
            StatusPattern::Range(5) => "ServerError".into(),
            StatusPattern::Range(class) => format!("Status{class}xx"),
            StatusPattern::Default => "Default".into(),
        }
    }

    /// How the key reads in a doc comment.
    pub fn label(self) -> String {
        match self {
            StatusPattern::Exact(code) => code.to_string(),
            StatusPattern::Range(class) => format!("{class}XX"),
            StatusPattern::Default => "default".into(),
        }
    }
}

fn reason(code: u16) -> Option<&'static str> {
    Some(match code {
        100 => "Continue",
        101 => "SwitchingProtocols",
        102 => "Processing",
        103 => "EarlyHints",
        200 => "Ok",
        201 => "Created",
        202 => "Accepted",
        203 => "NonAuthoritativeInformation",
        204 => "NoContent",
        205 => "ResetContent",
        206 => "PartialContent",
        207 => "MultiStatus",
        208 => "AlreadyReported",
        226 => "ImUsed",
        300 => "MultipleChoices",
        301 => "MovedPermanently",
        302 => "Found",
        303 => "SeeOther",
        304 => "NotModified",
        305 => "UseProxy",
        307 => "TemporaryRedirect",
        308 => "PermanentRedirect",
        400 => "BadRequest",
        401 => "Unauthorized",
        402 => "PaymentRequired",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        407 => "ProxyAuthenticationRequired",
        408 => "RequestTimeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "LengthRequired",
        412 => "PreconditionFailed",
        413 => "PayloadTooLarge",
        414 => "UriTooLong",
        415 => "UnsupportedMediaType",
        416 => "RangeNotSatisfiable",
        417 => "ExpectationFailed",
        418 => "ImATeapot",
        421 => "MisdirectedRequest",
        422 => "UnprocessableEntity",
        423 => "Locked",
        424 => "FailedDependency",
        425 => "TooEarly",
        426 => "UpgradeRequired",
        428 => "PreconditionRequired",
        429 => "TooManyRequests",
        431 => "RequestHeaderFieldsTooLarge",
        451 => "UnavailableForLegalReasons",
        500 => "InternalServerError",
        501 => "NotImplemented",
        502 => "BadGateway",
        503 => "ServiceUnavailable",
        504 => "GatewayTimeout",
        505 => "HttpVersionNotSupported",
        506 => "VariantAlsoNegotiates",
        507 => "InsufficientStorage",
        508 => "LoopDetected",
        510 => "NotExtended",
        511 => "NetworkAuthenticationRequired",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(StatusPattern::parse("200"), Some(StatusPattern::Exact(200)));
        assert_eq!(StatusPattern::parse("4XX"), Some(StatusPattern::Range(4)));
        assert_eq!(StatusPattern::parse("5xx"), Some(StatusPattern::Range(5)));
        assert_eq!(
            StatusPattern::parse("default"),
            Some(StatusPattern::Default)
        );
        assert_eq!(StatusPattern::parse("20"), None);
        assert_eq!(StatusPattern::parse("600"), None);
        assert_eq!(StatusPattern::parse("2X0"), None);
        assert_eq!(StatusPattern::Exact(429).variant_name(), "TooManyRequests");
        assert_eq!(StatusPattern::Exact(299).variant_name(), "Status299");
        assert_eq!(StatusPattern::Range(4).variant_name(), "ClientError");
    }
}
