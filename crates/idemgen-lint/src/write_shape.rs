//! What a POST or PATCH does, judged from its path, operationId and summary,
//! so that `missing-idempotency` warns about the writes a retry can repeat
//! with effect and leaves the rest alone or reports it apart.
//!
//! The words come from the operation's *action*: the last literal path
//! segment (`/payments/{id}/capture` → `capture`; none when the path ends
//! in a parameter), and the operationId's verb when it is not spelled from
//! the method and path (`CancelPayment`, `authorizations.void`,
//! `invoices.search-invoices`; not Stripe's `PostChargesChargeCapture` or
//! Adyen's `post-validateShopperId`, which repeat the path). A leading
//! `bulk`/`batch` is skipped (`BulkRetrieveBookings` retrieves).
//!
//! The evidence for each list is in the rule pages of `missing-idempotency`
//! and `naturally-idempotent-write`: the corpus's payment APIs (Stripe,
//! Adyen, PayPal, Square), judged operation by operation.

/// How a write without a contract is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A read that uses POST for its body (search, retrieve, validate…):
    /// repeating it changes nothing, so nothing is reported.
    Read(&'static str),
    /// Moves money (capture, refund, payout, transfer, charge, pay…): a
    /// retry that runs twice moves it twice, always a warning.
    Money(&'static str),
    /// A state transition that a second run cannot repeat (cancel, void,
    /// expire, delete…), or an update that sets fields (`PATCH`, `POST
    /// /things/{id}`, `update…`, `upsert…`): reported apart, at info level.
    Repeatable(&'static str),
    /// Anything else, creations above all: a warning.
    Other,
}

/// First words that make a POST a read.
const READ_VERBS: &[&str] = &[
    "search",
    "retrieve",
    "lookup",
    "validate",
    "validation",
    "calculate",
    "compute",
    "list",
    "get",
    "query",
    "verify",
    "estimate",
    "preview",
    "check",
    "fetch",
    "find",
    "count",
    "reveal",
];

/// Words that move money; plural forms match too.
const MONEY_VERBS: &[&str] = &[
    "capture",
    "refund",
    "payout",
    "transfer",
    "charge",
    "pay",
    "cashout",
    "withdraw",
    "withdrawal",
    "disburse",
    "donate",
    "donation",
    "authorise",
    "authorize",
    "reauthorize",
    "reauthorise",
    "reverse",
    "reversal",
    "topup",
];

/// First words of a transition that lands in one state however often it
/// runs.
const TRANSITION_VERBS: &[&str] = &[
    "cancel",
    "void",
    "expire",
    "delete",
    "remove",
    "close",
    "archive",
    "activate",
    "deactivate",
    "reactivate",
    "enable",
    "disable",
    "suspend",
    "pause",
    "resume",
    "revoke",
    "attach",
    "detach",
    // Not "link": Stripe's `/v1/link_account_sessions` creates sessions.
    "unlink",
    "finalize",
    "finalise",
    "approve",
    "decline",
    "deny",
    "reject",
    "accept",
    "dismiss",
    "publish",
    "unpublish",
    "submit",
    "escalate",
    "release",
    "redact",
    "mark",
    "acknowledge",
];

/// First words of an update that sets fields to given values.
const SET_VERBS: &[&str] = &[
    "update", "upsert", "set", "modify", "amend", "edit", "patch", "change",
];

/// The shape of an operation under `paths`.
pub fn of(operation: &idemgen_spec::operations::Operation<'_>) -> Shape {
    classify(
        &operation.method,
        &operation.path,
        operation.operation_id.as_deref(),
        operation
            .node
            .get("summary")
            .and_then(idemgen_spec::Node::as_str),
    )
}

/// Classifies a POST, PATCH or custom-method operation.
pub fn classify(
    method: &str,
    path: &str,
    operation_id: Option<&str>,
    summary: Option<&str>,
) -> Shape {
    let path_action = last_literal_segment(path).map(words);
    let id_action = operation_id
        .and_then(|id| id_verb_phrase(id, method))
        .map(words);
    let summary_action = summary.map(words);
    let actions: Vec<Vec<String>> = [path_action.clone(), id_action]
        .into_iter()
        .flatten()
        .map(skip_bulk)
        .filter(|action| !action.is_empty())
        .collect();

    let money_in = |action: &[String]| {
        let first = action.first().and_then(|word| member(word, MONEY_VERBS));
        // `cancelOrRefund`: a money verb joined to the first one.
        let joined = action.windows(2).find_map(|pair| {
            matches!(pair[0].as_str(), "or" | "and")
                .then(|| member(&pair[1], MONEY_VERBS))
                .flatten()
        });
        first.or(joined)
    };
    for action in &actions {
        if let Some(word) = member(&action[0], READ_VERBS) {
            return Shape::Read(word);
        }
    }
    if let Some(word) = summary_action
        .as_deref()
        .and_then(|action| action.first())
        .and_then(|word| member(word, READ_VERBS))
        .filter(|_| actions.iter().all(|action| money_in(action).is_none()))
    {
        return Shape::Read(word);
    }
    for action in &actions {
        if let Some(word) = money_in(action) {
            return Shape::Money(word);
        }
    }
    for action in &actions {
        if let Some(word) = member(&action[0], TRANSITION_VERBS) {
            return Shape::Repeatable(word);
        }
        if let Some(word) = member(&action[0], SET_VERBS) {
            return Shape::Repeatable(word);
        }
    }
    if method.eq_ignore_ascii_case("PATCH") {
        return Shape::Repeatable("patch");
    }
    if path_action.is_none() && path.trim_end_matches('/').ends_with('}') {
        return Shape::Repeatable("update");
    }
    Shape::Other
}

/// The listed word `word` is, singular or plural.
fn member(word: &str, list: &[&'static str]) -> Option<&'static str> {
    list.iter().copied().find(|listed| {
        word == *listed
            || word.strip_suffix('s') == Some(listed)
            || word.strip_suffix("es") == Some(listed)
    })
}

/// The path's last segment when it is not a parameter.
fn last_literal_segment(path: &str) -> Option<&str> {
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    (!last.is_empty() && !last.contains('{')).then_some(last)
}

/// The part of an operationId that names the action, or `None` when the id
/// is spelled from the method and path (`PostChargesCharge`,
/// `post-payments`), which the path already says.
fn id_verb_phrase<'a>(id: &'a str, method: &str) -> Option<&'a str> {
    let phrase = id.rsplit('.').next().unwrap_or(id);
    let lower = phrase.to_ascii_lowercase();
    let method = method.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix(&method) {
        let next = phrase[method.len()..].chars().next();
        if rest.is_empty() || next.is_some_and(|c| c.is_ascii_uppercase() || c == '-' || c == '_') {
            return None;
        }
    }
    Some(phrase)
}

/// Lower-case words of an identifier or phrase: `validateShopperId`,
/// `search-invoices`, `verify_microdeposits`, `Get the 3DS result`.
fn words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_ascii_alphabetic() {
            if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
                found.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_ascii_lowercase();
            current.push(c.to_ascii_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                found.push(std::mem::take(&mut current));
            }
            if c.is_ascii_digit() {
                continue;
            }
        }
    }
    if !current.is_empty() {
        found.push(current);
    }
    found
}

fn skip_bulk(mut action: Vec<String>) -> Vec<String> {
    if action
        .first()
        .is_some_and(|word| matches!(word.as_str(), "bulk" | "batch"))
    {
        action.remove(0);
    }
    action
}

#[cfg(test)]
mod tests {
    use super::{Shape, classify};

    fn shape(method: &str, path: &str, id: Option<&str>) -> Shape {
        classify(method, path, id, None)
    }

    #[test]
    fn reads_that_use_post_are_reads() {
        // Square, Adyen, PayPal: every one a real operation of the corpus.
        for (path, id) in [
            ("/v2/catalog/search", "SearchCatalogObjects"),
            ("/v2/gift-cards/from-nonce", "RetrieveGiftCardFromNonce"),
            ("/v2/catalog/batch-retrieve", "BatchRetrieveCatalogObjects"),
            ("/v2/bookings/bulk-retrieve", "BulkRetrieveBookings"),
            ("/v2/orders/calculate", "CalculateOrder"),
            ("/validateShopperId", "post-validateShopperId"),
            ("/transferRoutes/calculate", "post-transferRoutes-calculate"),
            ("/getAuthenticationResult", "post-getAuthenticationResult"),
            ("/v2/invoicing/search-invoices", "invoices.search-invoices"),
        ] {
            assert!(
                matches!(shape("POST", path, Some(id)), Shape::Read(_)),
                "{id}"
            );
        }
        assert_eq!(
            classify(
                "POST",
                "/paymentMethods/balance",
                Some("post-paymentMethods-balance"),
                Some("Get the balance of a gift card")
            ),
            Shape::Read("get")
        );
    }

    #[test]
    fn money_verbs_stay_warnings_even_beside_a_transition() {
        assert_eq!(
            shape("POST", "/cancelOrRefund", Some("post-cancelOrRefund")),
            Shape::Money("refund")
        );
        assert_eq!(
            shape("POST", "/v1/payment_intents/{intent}/capture", None),
            Shape::Money("capture")
        );
        assert_eq!(
            shape("POST", "/v1/charges/{charge}/refunds", None),
            Shape::Money("refund")
        );
        assert_eq!(shape("POST", "/cashouts", None), Shape::Money("cashout"));
        assert_eq!(
            shape("POST", "/v2/orders/{order_id}/pay", Some("PayOrder")),
            Shape::Money("pay")
        );
        // A summary that begins with "Get" does not hide a capture.
        assert_eq!(
            classify(
                "POST",
                "/capture",
                Some("post-capture"),
                Some("Get the money of an authorisation")
            ),
            Shape::Money("capture")
        );
    }

    #[test]
    fn transitions_and_updates_are_repeatable() {
        assert_eq!(
            shape("POST", "/v1/payment_intents/{intent}/cancel", None),
            Shape::Repeatable("cancel")
        );
        assert_eq!(
            shape(
                "POST",
                "/v2/payments/authorizations/{authorization_id}/void",
                Some("authorizations.void")
            ),
            Shape::Repeatable("void")
        );
        assert_eq!(
            shape(
                "POST",
                "/v1/accounts/{account}",
                Some("PostAccountsAccount")
            ),
            Shape::Repeatable("update")
        );
        assert_eq!(
            shape("PATCH", "/accountHolders/{id}", None),
            Shape::Repeatable("patch")
        );
        assert_eq!(
            shape(
                "POST",
                "/v2/customers/bulk-delete",
                Some("BulkDeleteCustomers")
            ),
            Shape::Repeatable("delete")
        );
        assert_eq!(
            shape("POST", "/payments/{id}/cancels", None),
            Shape::Repeatable("cancel")
        );
    }

    #[test]
    fn creations_are_other() {
        // "link" is a noun here: each call creates a session.
        assert_eq!(
            shape(
                "POST",
                "/v1/link_account_sessions",
                Some("PostLinkAccountSessions")
            ),
            Shape::Other
        );
        assert_eq!(
            shape("POST", "/v1/customers", Some("PostCustomers")),
            Shape::Other
        );
        assert_eq!(
            shape("POST", "/v2/invoicing/invoices", Some("invoices.create")),
            Shape::Other
        );
        // "checkout" is not "check", "listing" not "list".
        assert_eq!(shape("POST", "/v1/checkout/sessions", None), Shape::Other);
        assert_eq!(
            shape("POST", "/checkouts", Some("CreateCheckout")),
            Shape::Other
        );
    }
}
