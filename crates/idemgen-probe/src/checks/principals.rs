//! # principals
//!
//! **What it checks.** With two or more `--as`: the first principal's key
//! and body sent as each other principal get a fresh answer or a refusal
//! (a 4xx), never the first principal's stored answer, nor the conflict,
//! in-progress, 409 or 422 status that tells them the first principal's
//! request exists. A refused principal is tried with a key of its own, to
//! tell a refusal of the key from credentials the service does not accept.
//!
//! **Why it matters.** Idempotency keys are often guessable or leak in
//! logs. If they are not namespaced by the caller, anyone who learns a key
//! reads its stored response (a payment, an address), or learns that the
//! request was made.
//!
//! **What a failure means.** Another principal got the first one's stored
//! answer, a status that reveals its request, or a 3xx or 5xx answer.
//! A principal refused even for its own key is a warning: check its
//! `--as`. The check does not apply with fewer than two `--as`, or when the
//! first principal's request did not succeed.

use super::Probe;
use crate::check::declare_check;
use crate::request::{Caller, Event, KeyUse};
use crate::{CheckResult, Outcome};

declare_check!(
    "principals.rs",
    "principals",
    [
        "with two --as: the first principal's key and body sent as",
        "each other principal get a fresh answer or a refusal, never",
        "the first one's stored answer, nor the conflict, in-progress,",
        "409 or 422 status that tells them its request exists",
    ]
);

impl Probe<'_> {
    /// `--as`: the first principal's key and body sent as each other
    /// principal must be a new key to them: a fresh answer or a refusal,
    /// never the first one's stored answer, nor an answer (conflict, in
    /// progress) that tells them the first one's request exists. `event`
    /// is a fresh event; `own` one fresh event per other principal, sent
    /// when that principal is refused, to tell a refusal of the key from
    /// credentials the service does not accept.
    pub fn principals(&self, event: &Event, own: &[Event]) -> CheckResult {
        let mut check = CheckResult::new(&CHECK);
        let principals = &self.plan.principals;
        let Some(owner) = principals.first() else {
            check.outcome = Outcome::NotApplicable;
            check.summary = "no --as principals given; pass two, e.g. --as alice='Authorization: Bearer …' --as bob='Authorization: Bearer …'".into();
            return check;
        };
        let owner = &owner.name;
        if principals.len() < 2 {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "one principal (`{owner}`) given; a second --as NAME='Header: value' checks that it never gets `{owner}`'s stored answer"
            );
            return check;
        }
        let as_caller = |event: &Event, caller| {
            self.plan
                .as_caller(self.plan.request(event, KeyUse::Valid), caller)
        };
        let first = match self.settle(&as_caller(event, Caller::Principal(0))) {
            Ok(answer) => answer,
            Err(error) => return check.no_answer(error),
        };
        if !first.is_success() {
            check.outcome = Outcome::NotApplicable;
            check.summary = format!(
                "as `{owner}` the first request answered {}{}, so there is no stored answer to leak",
                first.describe(),
                self.client.from(&first)
            );
            check
                .evidence
                .push(format!("its body: {}", first.excerpt()));
            return check;
        }
        let mut parts = vec![format!(
            "one key and body as `{owner}`: {}{}",
            first.describe(),
            self.client.from(&first)
        )];
        // Principals whose answer showed something either way.
        let mut judged = 0;
        for (index, principal) in principals.iter().enumerate().skip(1) {
            let name = &principal.name;
            let answer = match self
                .client
                .send(&as_caller(event, Caller::Principal(index)))
            {
                Ok(answer) => answer,
                Err(error) => return check.no_answer(error),
            };
            let shown = format!("{}{}", answer.describe(), self.client.from(&answer));
            let reveals = [
                self.plan.expect.conflict,
                self.plan.expect.in_progress,
                409,
                422,
            ]
            .contains(&answer.status);
            if let Some(sign) = self.stored_answer_of(&first, &answer) {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}, `{owner}`'s stored answer"));
                check.fail(format!(
                    "`{name}` got `{owner}`'s stored answer ({sign}): one principal sees another's response; keys are not namespaced by the principal"
                ));
                self.show(&mut check, &format!("`{owner}`"), &first);
                self.show(&mut check, &format!("`{name}`"), &answer);
            } else if answer.is_success() {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}, a fresh answer"));
            } else if reveals {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}"));
                check.fail(format!(
                    "`{name}` got {}: it tells `{name}` that `{owner}`'s request with this key exists; expected a fresh answer or a refusal",
                    answer.describe()
                ));
                check
                    .evidence
                    .push(format!("its body: {}", answer.excerpt()));
            } else if answer.status >= 500 || answer.status < 400 {
                judged += 1;
                parts.push(format!("as `{name}`: {shown}"));
                check.fail(format!(
                    "`{name}` got {}: expected a fresh answer or a refusal (a 4xx)",
                    answer.describe()
                ));
                check
                    .evidence
                    .push(format!("its body: {}", answer.excerpt()));
            } else {
                // A refusal: of this key, or of the principal altogether?
                let Some(own) = own.get(index - 1) else {
                    continue;
                };
                let control = match self.settle(&as_caller(own, Caller::Principal(index))) {
                    Ok(answer) => answer,
                    Err(error) => return check.no_answer(error),
                };
                if control.is_success() {
                    judged += 1;
                    parts.push(format!(
                        "as `{name}`: {shown}, refused (a key of `{name}`'s own: {})",
                        control.describe()
                    ));
                } else {
                    parts.push(format!(
                        "as `{name}`: {shown}, and {} for a key of `{name}`'s own",
                        control.describe()
                    ));
                    check.warn(format!(
                        "`{name}` is refused for a fresh key too ({}): the service does not accept these credentials or this request from `{name}`, so nothing shows whether `{name}` could see `{owner}`'s answer; check --as {name}",
                        control.describe()
                    ));
                }
            }
        }
        check.summary = parts.join("; ");
        if judged == 0 && check.outcome != Outcome::Fail {
            check.outcome = Outcome::NotApplicable;
        }
        check
    }
}
