//! RFC 9110 `token`, what a header field name is made of: letters, digits
//! and ``!#$%&'*+-.^_`|~``; no blank, colon, line break or non-ASCII.

/// Whether `byte` may stand in a token.
pub fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// The first character of `name` that no token holds.
pub fn first_non_token_char(name: &str) -> Option<char> {
    name.chars()
        .find(|&c| !u8::try_from(c).is_ok_and(is_token_byte))
}
