//! # sf-string
//!
//! **What it checks.** For a key sent in a header: a fresh key sent bare
//! (`k`) and, once answered, the same request with the key as an RFC 9651
//! Structured Field String (`"k"`, with `"` and `\` escaped); then another
//! fresh key the other way round, quoted first. Each second request must
//! get the first one's stored answer: the same status and body, and, from
//! a service that marks its replays, the replay mark.
//!
//! **Why it matters.** The IETF draft sends `Idempotency-Key` as a
//! Structured Field String, and many clients send the key bare: the
//! contract makes both one key. A service that keeps `"k"` and `k` apart
//! pays twice for one event when a client's library sends the other form,
//! or a retry goes through another one.
//!
//! **What a failure means.** The second form was refused (the service does
//! not read one of the forms as the key), got another status, ran the step
//! again (a 2xx with another body, or one without the replay mark from a
//! service that marks its replays: the two forms are two keys), or the
//! quoted form sent first was refused. The check does not apply when the
//! key travels in the query or the body (taken as sent) or the bare key's
//! first request does not succeed. When the service marks no replay and
//! the bodies are the same, a warning says the answers cannot tell a
//! replay from a second execution; with `--observe` the key's effect count
//! tells (one effect passes, more fail).

use super::Probe;
use crate::check::declare_check;
use crate::http::Answer;
use crate::request::{Event, KeyUse};
use crate::{CheckResult, Outcome};
use idemgen_spec::contract::model::KeyLocation;

declare_check!(
    "sf_string.rs",
    "sf-string",
    [
        "a header key sent bare, then as an sf-string (\"k\"), and the",
        "reverse: one key, the second request gets the stored answer",
    ]
);

/// `k` as a Structured Field String: `"k"`, `"` and `\` escaped.
pub fn sf_string(key: &str) -> String {
    let mut quoted = String::with_capacity(key.len() + 2);
    quoted.push('"');
    for c in key.chars() {
        if matches!(c, '"' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

impl Probe<'_> {
    /// One key in both wire forms, each order once: one record.
    pub fn sf_string(&self, bare_first: &Event, quoted_first: &Event) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        if self.plan.key_in != KeyLocation::Header {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "the key travels in the {}, where it is taken as sent",
                self.plan.key_in.name()
            );
            return check;
        }
        let mut parts = Vec::new();
        for (event, quoted) in [(bare_first, false), (quoted_first, true)] {
            let bare = event.key.clone();
            let sf = sf_string(&bare);
            let (one, two) = if quoted { (&sf, &bare) } else { (&bare, &sf) };
            let first_request = self.plan.request(event, KeyUse::Given(one));
            let before = self.count_before(event);
            let first = match self.settle(&first_request) {
                Ok(answer) => answer,
                Err(error) => return check.no_answer(error),
            };
            if !first.is_success() {
                if quoted && !self.ran(&first) {
                    parts.push(format!("`{one}`: {}", self.shown(&first)));
                    check.fail(format!(
                        "the key sent as an sf-string (`{one}`) got {}: the draft's form of the key is refused",
                        self.shown(&first)
                    ));
                    check
                        .evidence
                        .push(format!("its body: {}", first.excerpt()));
                    continue;
                }
                check.outcome = Outcome::NotApplicable;
                check.summary = format!(
                    "`{one}` answered {}: give the service a request it accepts (--example, --set POINTER=VALUE, --body-file)",
                    self.shown(&first)
                );
                return check;
            }
            let second = match self.settle(&self.plan.request(event, KeyUse::Given(two))) {
                Ok(answer) => answer,
                Err(error) => return check.no_answer(error),
            };
            let effects = self.count_after(before, event);
            self.record_effects(&mut check, &effects, 1, true);
            let same = second.status == first.status && second.same_body(&first);
            let mark = self.replay_mark(&second);
            parts.push(format!(
                "`{one}` then `{two}`: {}, then {}{}",
                self.shown(&first),
                self.shown(&second),
                mark.as_ref()
                    .map_or(String::new(), |mark| format!(" ({mark})"))
            ));
            if same && mark.is_some() {
                continue;
            }
            if same && effects.decides() {
                // The count says how often the step ran (more than once:
                // failed above), not the answers.
                if mark.is_none() && effects.once() {
                    if let Some(mark) = self.marks_replays(std::iter::empty(), &first_request) {
                        check.warn(format!(
                            "`{two}` got the first answer without the replay mark this service gives its replays (`{mark}`), though the effect count shows one effect"
                        ));
                    }
                }
                continue;
            }
            if same {
                match self.marks_replays(std::iter::empty(), &first_request) {
                    Some(mark) => check.fail(format!(
                        "`{two}` got the first answer without the replay mark this service gives its replays (`{mark}`): a first answer, so `{one}` and `{two}` are two keys and the step ran twice"
                    )),
                    None => check.warn(format!(
                        "`{two}` got the same answer as `{one}`, and the service marks no replay, so whether it ran the step again cannot be told"
                    )),
                }
                continue;
            }
            if second.is_success() && effects.once() {
                check.fail(format!(
                    "`{two}` got {} with another body than `{one}`'s, and the effect count shows one effect: not the stored answer",
                    self.shown(&second)
                ));
            } else if second.is_success() {
                check.fail(format!(
                    "`{two}` got {} with another body than `{one}`'s: the two forms are two keys, and the step ran twice for one event",
                    self.shown(&second)
                ));
            } else {
                check.fail(format!(
                    "`{two}` got {}, not `{one}`'s stored answer: the contract makes `{one}` and `{two}` one key",
                    self.shown(&second)
                ));
            }
            self.show(&mut check, &format!("`{one}`"), &first);
            self.show(&mut check, &format!("`{two}`"), &second);
        }
        check.summary = parts.join("; ");
        check
    }

    /// `200 OK from http://…`.
    fn shown(&self, answer: &Answer) -> String {
        format!("{}{}", answer.describe(), self.client.from(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::sf_string;

    #[test]
    fn a_key_as_a_structured_field_string() {
        assert_eq!(sf_string("pay:1"), r#""pay:1""#);
        assert_eq!(sf_string(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
