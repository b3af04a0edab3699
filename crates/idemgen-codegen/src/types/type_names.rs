//! Type names that depend on the schema, not on the order types are met.
//!
//! Types are converted twice. The first pass asks a name for each type
//! with the words it would be named after (`Order shipping`) and its place
//! in the spec (a JSON pointer, or an operation's pointer and role), and
//! gets a provisional one. Then every name is settled at once, from all
//! the requests: a name that is too long is shortened by meaning (a word
//! said twice in a row, `Params`/`Request` inside a name) and, only if it
//! still does not fit, keeps its first and last words and a suffix
//! hashed from its place; a name two types would share goes to the one
//! the spec names so (a component with that exact key, else the only
//! one not shortened into it), and the others get their place's hash
//! too. The second pass asks again and gets the settled names. So a
//! type keeps its name when an operation or a schema is added before it,
//! unless the new one claims the very same name by a better or an equal
//! right (then, with an equal one, both get their place's hash).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::naming::pascal_case;
use crate::names::MAX_IDENTIFIER;

/// The longest type name. Nothing is appended to a type's name (a
/// builder has its struct's name, in a module of its own), so it may be
/// as long as any identifier.
pub const MAX_TYPE_NAME: usize = MAX_IDENTIFIER;

/// Names the generated module uses itself (std prelude, serde, the
/// types it refers to): a schema with one of these names gets `Model`
/// appended so that it does not shadow them.
const TAKEN_TYPE_NAMES: &[&str] = &[
    "Self",
    "String",
    "Option",
    "Some",
    "None",
    "Vec",
    "Box",
    "Result",
    "Ok",
    "Err",
    "BTreeMap",
    "Serialize",
    "Deserialize",
    "Default",
    "Clone",
    "Debug",
    "PartialEq",
];

/// Words that say how a type is reached rather than what it is: dropped
/// inside a name that is too long (never its last word).
const NOISE_WORDS: &[&str] = &["Params", "Parameters", "Request", "Body"];

/// Digits of a place's hash in a name; more only when two places' hashes
/// would still give one name.
const HASH_DIGITS: usize = 5;

/// One type's claim to a name.
#[derive(Debug, Clone)]
struct Request {
    /// Where the type's schema is: unique per type.
    place: String,
    /// `PascalCase` of the words, valid and unshadowing, not yet bounded.
    ideal: String,
    /// A component whose key is exactly `ideal`.
    exact_component: bool,
    component: bool,
}

/// The type names of one models module.
#[derive(Default)]
pub struct TypeNames {
    requests: Vec<Request>,
    /// Provisional names given in the first pass, by place.
    provisional: HashMap<String, String>,
    taken: HashSet<String>,
    /// How often each place was asked for: a place asked again (a node
    /// reached under two roles) is a place of its own, the same in both
    /// passes, which ask the same questions in the same order.
    asked: HashMap<String, usize>,
    /// The settled names, by place, in the second pass.
    settled: Option<HashMap<String, String>>,
}

impl TypeNames {
    /// The name of the type at `place`, named after `words`.
    pub fn assign(&mut self, place: &str, words: &str) -> String {
        self.claim(place, words, false)
    }

    /// The name of the component schema `key` (at `place`).
    pub fn assign_component(&mut self, place: &str, key: &str) -> String {
        self.claim(place, key, true)
    }

    fn claim(&mut self, place: &str, words: &str, component: bool) -> String {
        let times = self.asked.entry(place.to_string()).or_default();
        let place = format!("{place}{}", "'".repeat(*times));
        *times += 1;
        if let Some(settled) = &self.settled {
            if let Some(name) = settled.get(&place) {
                return name.clone();
            }
            // A name no type took in the first pass (an operation's body
            // that is a `$ref`): never defined, but kept apart all the same.
            let name = hashed(&ideal_name(words), &place, HASH_DIGITS);
            return unique_fallback(&mut self.taken, name);
        }
        let ideal = ideal_name(words);
        // Unique within the first pass; the marks vanish from the words of
        // the types named after it (`pascal_case` drops them).
        let mut provisional = ideal.clone();
        while !self.taken.insert(provisional.clone()) {
            provisional.push('\'');
        }
        self.provisional.insert(place.clone(), provisional.clone());
        self.requests.push(Request {
            exact_component: component && words == ideal,
            component,
            ideal,
            place,
        });
        provisional
    }

    /// The names settled from the first pass's requests, for the second:
    /// `defined` says which provisional names became types (a name
    /// reserved for an operation's body that is a `$ref` claims nothing).
    pub fn settle(&self, defined: impl Fn(&str) -> bool) -> TypeNames {
        let requests: Vec<Request> = self
            .requests
            .iter()
            .filter(|request| defined(&self.provisional[&request.place]))
            .cloned()
            .collect();
        let settled = settle(&requests);
        TypeNames {
            taken: settled.values().cloned().collect(),
            settled: Some(settled),
            ..TypeNames::default()
        }
    }
}

/// `PascalCase` of `words` as a valid type name that shadows nothing the
/// module uses, of any length.
fn ideal_name(words: &str) -> String {
    let mut name = pascal_case(words);
    if name.is_empty() {
        name = "Schema".into();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "Schema");
    }
    if TAKEN_TYPE_NAMES.contains(&name.as_str()) {
        name.push_str("Model");
    }
    name
}

/// Each request's name, by place (see the module's doc).
fn settle(requests: &[Request]) -> HashMap<String, String> {
    let wanted: Vec<(String, bool)> = requests
        .iter()
        .map(|request| match shortened(&request.ideal) {
            Ok(name) => {
                let shortened = name != request.ideal;
                (name, shortened)
            }
            Err(fewer_words) => (hashed(&fewer_words, &request.place, HASH_DIGITS), true),
        })
        .collect();
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, (name, _)) in wanted.iter().enumerate() {
        by_name.entry(name).or_default().push(index);
    }
    let mut names: HashMap<String, String> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    let mut displaced: Vec<usize> = Vec::new();
    for (name, claimants) in &by_name {
        let owner = match claimants.as_slice() {
            [only] => Some(*only),
            several => owner(several, |index| {
                let request = &requests[index];
                match (request.exact_component, request.component, wanted[index].1) {
                    (true, _, _) => 3,
                    (_, true, _) => 2,
                    (_, _, false) => 1,
                    _ => 0,
                }
            }),
        };
        for &index in claimants.iter() {
            if Some(index) == owner {
                names.insert(requests[index].place.clone(), name.to_string());
                taken.insert(name.to_string());
            } else {
                displaced.push(index);
            }
        }
    }
    // By place, so that which of two equal hashes grows does not depend
    // on the order of the spec.
    displaced.sort_by(|a, b| requests[*a].place.cmp(&requests[*b].place));
    for index in displaced {
        let request = &requests[index];
        let base = shortened(&request.ideal).unwrap_or_else(|fewer_words| fewer_words);
        let mut digits = HASH_DIGITS;
        let name = loop {
            let name = hashed(&base, &request.place, digits);
            if taken.insert(name.clone()) {
                break name;
            }
            digits += 1;
            if digits > 19 {
                break unique_fallback(&mut taken, name);
            }
        };
        names.insert(request.place.clone(), name);
    }
    names
}

/// The claimant whose rank is highest, when that rank is above 0 and no
/// other has it.
fn owner(claimants: &[usize], rank: impl Fn(usize) -> u8) -> Option<usize> {
    let best = claimants.iter().map(|&index| rank(index)).max()?;
    let mut best_ones = claimants.iter().filter(|&&index| rank(index) == best);
    let first = *best_ones.next()?;
    (best > 0 && best_ones.next().is_none()).then_some(first)
}

/// `name` made to fit [`MAX_TYPE_NAME`] by meaning, or (as the error)
/// as short as meaning makes it when that is not short enough.
fn shortened(name: &str) -> Result<String, String> {
    if name.len() <= MAX_TYPE_NAME {
        return Ok(name.to_string());
    }
    let mut words = words_of(name);
    let steps: [fn(&mut Vec<String>); 4] = [
        drop_stutters,
        drop_noise,
        drop_repeated_runs,
        drop_repeated_words,
    ];
    for step in steps {
        step(&mut words);
        let joined = words.concat();
        if joined.len() <= MAX_TYPE_NAME {
            return Ok(joined);
        }
    }
    Err(words.concat())
}

/// The words of a `PascalCase` name (`V1_0` stays one word).
fn words_of(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for c in name.chars() {
        match words.last_mut() {
            Some(word) if !c.is_ascii_uppercase() => word.push(c),
            _ => words.push(c.to_string()),
        }
    }
    words
}

/// A word said again right after itself, or as its plural or singular:
/// `IntentsIntent` → `Intents`, `AccountAccount` → `Account`.
fn drop_stutters(words: &mut Vec<String>) {
    let mut kept: Vec<String> = Vec::with_capacity(words.len());
    for word in words.drain(..) {
        let repeats = kept.last().is_some_and(|previous: &String| {
            *previous == word
                || previous.strip_suffix('s') == Some(word.as_str())
                || word.strip_suffix('s') == Some(previous.as_str())
        });
        if !repeats {
            kept.push(word);
        }
    }
    *words = kept;
}

/// [`NOISE_WORDS`] between the first word and the last.
fn drop_noise(words: &mut Vec<String>) {
    let last = words.len().saturating_sub(1);
    let mut index = 0;
    words.retain(|word| {
        let keep = index == 0 || index == last || !NOISE_WORDS.contains(&word.as_str());
        index += 1;
        keep
    });
}

/// A run of two or more words said earlier in the name, said again (the
/// parent's name repeated in its child's: `PaymentMethodCardPaymentMethod
/// Wallet` → `PaymentMethodCardWallet`); the last word stays.
fn drop_repeated_runs(words: &mut Vec<String>) {
    'search: loop {
        for length in (2..=words.len() / 2).rev() {
            for start in 1..words.len().saturating_sub(length) {
                let run = &words[start..start + length];
                let earlier =
                    (0..start).any(|at| at + length <= start && words[at..at + length] == *run);
                if earlier {
                    words.drain(start..start + length);
                    continue 'search;
                }
            }
        }
        return;
    }
}

/// A word said earlier in the name, said again (`CustomerBalance…Cash
/// BalanceTransaction` → `CustomerBalance…CashTransaction`); the first
/// and last words stay.
fn drop_repeated_words(words: &mut Vec<String>) {
    let last = words.len().saturating_sub(1);
    let mut seen: HashSet<String> = HashSet::new();
    let mut index = 0;
    words.retain(|word| {
        let keep = !seen.contains(word) || index == last;
        seen.insert(word.clone());
        index += 1;
        keep
    });
}

/// `name`'s first and last words around a hash of `place`, within
/// [`MAX_TYPE_NAME`]: the last resort for a name too long or shared.
fn hashed(name: &str, place: &str, digits: usize) -> String {
    let suffix = hash_digits(place, digits);
    let room = MAX_TYPE_NAME - suffix.len();
    let words = words_of(name);
    let mut tail: Vec<&str> = Vec::new();
    let mut tail_len = 0;
    // The last words say what the type is; at most half the room.
    for word in words.iter().rev() {
        if !tail.is_empty() && tail_len + word.len() > room / 2 {
            break;
        }
        tail.push(word);
        tail_len += word.len();
    }
    tail.reverse();
    let mut head = String::new();
    for word in &words[..words.len() - tail.len()] {
        if head.len() + word.len() + tail_len > room {
            break;
        }
        head.push_str(word);
    }
    let mut out = head + &tail.concat();
    // Digits after digits would read as one number: `Variant1_12345`.
    let separator = |out: &str| usize::from(out.ends_with(|c: char| c.is_ascii_digit()));
    while out.len() + separator(&out) > room {
        // One word longer than the room: cut it (ASCII, as names are).
        out.pop();
    }
    if separator(&out) == 1 {
        out.push('_');
    }
    out + &suffix
}

/// `digits` decimal digits of a stable hash (FNV-1a) of `place`: the same
/// for the same place in every run, on every platform.
fn hash_digits(place: &str, digits: usize) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in place.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let text = format!("{hash:020}");
    text[text.len() - digits.min(20)..].to_string()
}

/// `name`, or with a growing hash of itself until free: for names that
/// no pass foresaw.
fn unique_fallback(taken: &mut HashSet<String>, name: String) -> String {
    let mut candidate = name.clone();
    let mut round = 0u32;
    while !taken.insert(candidate.clone()) {
        round += 1;
        candidate = hashed(&name, &format!("{name}#{round}"), HASH_DIGITS);
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle_words(claims: &[(&str, &str, bool)]) -> HashMap<String, String> {
        let mut names = TypeNames::default();
        for (place, words, component) in claims {
            if *component {
                names.assign_component(place, words);
            } else {
                names.assign(place, words);
            }
        }
        let settled = names.settle(|_| true);
        settled.settled.unwrap()
    }

    #[test]
    fn a_name_is_the_words_in_pascal_case() {
        let names = settle_words(&[
            ("#/a", "order-item", true),
            ("#/b", "Result", true),
            ("#/c", "3ds", true),
            ("#/d", "v1.0", true),
            ("#/e", "", false),
            ("#/f", "HTTPServer", true),
        ]);
        assert_eq!(names["#/a"], "OrderItem");
        assert_eq!(names["#/b"], "ResultModel");
        assert_eq!(names["#/c"], "Schema3ds");
        assert_eq!(names["#/d"], "V1_0");
        assert_eq!(names["#/e"], "Schema");
        assert_eq!(names["#/f"], "HttpServer");
    }

    #[test]
    fn a_shared_name_goes_to_the_component_of_that_exact_key() {
        let names = settle_words(&[
            ("#/paths/~1pets/post (request)", "Pet", false),
            ("#/components/schemas/pet", "pet", true),
            ("#/components/schemas/Pet", "Pet", true),
        ]);
        assert_eq!(names["#/components/schemas/Pet"], "Pet");
        let others = [
            &names["#/components/schemas/pet"],
            &names["#/paths/~1pets/post (request)"],
        ];
        for other in others {
            assert!(
                other.starts_with("Pet") && other.len() == 3 + HASH_DIGITS,
                "{other}"
            );
        }
        assert_ne!(others[0], others[1]);
    }

    #[test]
    fn a_shared_name_with_no_better_claim_is_nobody_s() {
        let names = settle_words(&[("#/x", "Order item", false), ("#/y", "order_item", false)]);
        assert_ne!(names["#/x"], "OrderItem");
        assert_ne!(names["#/y"], "OrderItem");
        assert_ne!(names["#/x"], names["#/y"]);
    }

    #[test]
    fn names_do_not_depend_on_the_order_they_are_asked_in() {
        let claims = [
            ("#/components/schemas/Pet", "Pet", true),
            ("#/paths/~1a/get (response)", "Pet", false),
            ("#/paths/~1b/get (response)", "Pet", false),
            ("#/c", &*"very long words ".repeat(10), false),
            ("#/d", &*"very long words ".repeat(11), false),
        ];
        let forward = settle_words(&claims);
        let mut reversed = claims.to_vec();
        reversed.reverse();
        assert_eq!(forward, settle_words(&reversed));
    }

    #[test]
    fn long_names_lose_stutters_noise_and_repeats_before_words_that_mean_something() {
        assert_eq!(
            shortened("PostAccountsAccountPersonsPersonRequestVerificationAdditionalDocument"),
            Ok("PostAccountsPersonsRequestVerificationAdditionalDocument".into()),
            "no more than it takes to fit"
        );
        assert_eq!(
            shortened("CreateCheckoutSessionRequestPaymentMethodOptionsAcssDebitMandate"),
            Ok("CreateCheckoutSessionPaymentMethodOptionsAcssDebitMandate".into())
        );
        assert_eq!(
            shortened("PaymentMethodCardPaymentMethodWalletMasterpassBillingAddressDetails"),
            Ok("PaymentMethodCardWalletMasterpassBillingAddressDetails".into())
        );
        assert_eq!(
            shortened(
                "CustomerBalanceResourceCashBalanceTransactionResourceFundedTransactionBankTransfer"
            ),
            Ok("CustomerBalanceResourceCashTransactionFundedBankTransfer".into())
        );
        assert_eq!(
            shortened(
                "PostPaymentIntentsIntentConfirmRequestMandateDataCustomerAcceptanceOnlineUserAgentDetails"
            ),
            Err(
                "PostPaymentIntentsConfirmMandateDataCustomerAcceptanceOnlineUserAgentDetails"
                    .into()
            ),
            "still too long: hashed from here"
        );
        assert_eq!(shortened("Pet"), Ok("Pet".into()));
    }

    #[test]
    fn a_name_that_cannot_be_shortened_keeps_its_ends_and_a_hash_of_its_place() {
        let long = "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike";
        let names = settle_words(&[("#/a", long, false), ("#/b", long, false)]);
        for place in ["#/a", "#/b"] {
            let name = &names[place];
            assert!(name.len() <= MAX_TYPE_NAME, "{name}");
            assert!(name.starts_with("AlphaBravoCharlie"), "{name}");
            assert!(name.ends_with(&hash_digits(place, HASH_DIGITS)), "{name}");
            assert!(name.contains("KiloLimaMike"), "{name}");
        }
        assert_ne!(names["#/a"], names["#/b"]);
    }

    #[test]
    fn a_type_not_defined_in_the_first_pass_claims_nothing() {
        let mut names = TypeNames::default();
        let unused = names.assign("#/paths/~1a/post (request)", "Pet");
        names.assign_component("#/components/schemas/pet", "pet");
        let settled = names.settle(|name| name != unused);
        assert_eq!(settled.settled.unwrap()["#/components/schemas/pet"], "Pet");
    }
}
