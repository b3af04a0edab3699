//! What a generated service reads from every request: the idempotency key
//! (header, query, body field), the scope values, the credentials of each
//! security scheme, and the fingerprint. Arbitrary requests, read as the
//! service reads them, never panic; a key that is read holds no control
//! character; a scope is a hash; Basic credentials round-trip. A form's
//! lists declared joined in one text (`tags=a,b`) are split within a
//! bounded size, and fingerprint as the same items sent with the key
//! repeated (`tags=a&tags=b`).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use idemgen_runtime::axum::body::Body;
use idemgen_runtime::axum::http;
use idemgen_runtime::fuzzing::{
    credential, form_fingerprint, read, read_key, scope, split_joined, validate_key,
};
use idemgen_runtime::{
    ApiKeyIn, Contract, Credential, Fingerprint, JoinedList, Scheme, SchemeKind, Security, Source,
};
use libfuzzer_sys::fuzz_target;

const SOURCES: &[Source] = &[
    Source::Header("Idempotency-Key"),
    Source::Query("key"),
    Source::Body("/key"),
    Source::Body("/a/0/b~1c"),
    Source::Principal,
];

const HEADERS: &[&str] = &[
    "idempotency-key",
    "x-tenant",
    "authorization",
    "cookie",
    "x-api-key",
    "content-type",
];

/// A form's lists joined in one text, one per delimiter OpenAPI has; one
/// name that needs encoding.
static FORM_LISTS: [JoinedList; 3] = [
    JoinedList {
        name: "tags",
        delimiter: ',',
    },
    JoinedList {
        name: "codes",
        delimiter: '|',
    },
    JoinedList {
        name: "my list",
        delimiter: ' ',
    },
];

/// The form's lists of scalars: the joined ones, all of them lists.
static LIST_FIELDS: [&str; 3] = ["tags", "codes", "my list"];

/// Form fields sent as JSON text, read as the JSON they hold.
static JSON_FIELDS: [&str; 2] = ["metadata", "tags"];

static TENANT: [Source; 1] = [Source::Header("X-Tenant")];
static SCOPE: [Source; 3] = [
    Source::Header("X-Tenant"),
    Source::Query("tenant"),
    Source::Principal,
];

static CONTRACTS: [Contract; 3] = [
    Contract::header(
        "pay:{uuid}",
        "^pay:([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12})$",
        60_000,
        3_000,
    ),
    Contract {
        key: Source::Body("/key"),
        key_fields: &[(1, "/order")],
        scope: &SCOPE,
        fingerprint: Fingerprint {
            method: true,
            path: true,
            query: true,
            headers: &["X-Tenant", "Content-Type", "Authorization", "X-Api-Key"],
            body: true,
            canonical_json: true,
        },
        ..Contract::header(
            "{field:/order}-{seq}",
            "^(.+?)-([0-9]{1,20})$",
            60_000,
            3_000,
        )
    },
    Contract {
        key: Source::Query("key"),
        scope: &TENANT,
        fingerprint: Fingerprint {
            method: false,
            path: false,
            query: true,
            headers: &["idempotency-key", "cookie"],
            body: true,
            canonical_json: false,
        },
        ..Contract::header(
            "{date}",
            "^([0-9]{4}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01]))$",
            60_000,
            3_000,
        )
    },
];

static SCHEMES: [Scheme; 5] = [
    Scheme {
        name: "bearer",
        kind: SchemeKind::Bearer,
        realm: "",
    },
    Scheme {
        name: "basic",
        kind: SchemeKind::Basic,
        realm: "shop",
    },
    Scheme {
        name: "header",
        kind: SchemeKind::ApiKey {
            location: ApiKeyIn::Header,
            name: "x-api-key",
        },
        realm: "",
    },
    Scheme {
        name: "query",
        kind: SchemeKind::ApiKey {
            location: ApiKeyIn::Query,
            name: "api_key",
        },
        realm: "",
    },
    Scheme {
        name: "cookie",
        kind: SchemeKind::ApiKey {
            location: ApiKeyIn::Cookie,
            name: "session",
        },
        realm: "",
    },
];

/// Every scheme at once: the fingerprint leaves each one's credential out.
static SECURITY: Security = Security {
    alternatives: &[&SCHEMES],
};

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let bits = chunk.iter().enumerate().fold(0u32, |bits, (i, byte)| {
            bits | u32::from(*byte) << (16 - 8 * i)
        });
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(bits >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Every byte but ASCII letters and digits as `%XX`: an encoder apart
/// from the runtime's, so the two cannot share a mistake.
fn percent_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() {
                char::from(byte).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    post: bool,
    path: &'a str,
    query: &'a str,
    headers: Vec<(u8, &'a [u8])>,
    body: &'a [u8],
    basic: Option<(String, String)>,
    joined: JoinedInput<'a>,
}

/// One list of [`FORM_LISTS`] sent joined, beside another field.
#[derive(Arbitrary, Debug)]
struct JoinedInput<'a> {
    list: u8,
    items: Vec<&'a str>,
    /// The delimiter sent encoded (`%2C`) rather than as itself.
    encoded_delimiter: bool,
    other: &'a str,
}

/// A form POST with `body`, built directly: a request read from the wire
/// would be refused past the body limit, and needs a runtime to read.
fn form_request(body: String) -> idemgen_runtime::Request {
    let mut request = idemgen_runtime::Request::new(http::Method::POST, "/pay");
    request.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    request.body = body.into();
    request
}

/// The lists of a form body: however an arbitrary one is spelt, the split
/// writes at most three bytes a byte (an item encoded again) and one name
/// and two bytes an item; and a list sent joined is the same request, by
/// its fingerprint, as its items sent with the key repeated or in
/// brackets (`tags[0]=a`), one item included.
fn check_joined_lists(body: &[u8], joined: &JoinedInput) {
    let split = split_joined(body, &FORM_LISTS);
    let longest_name = FORM_LISTS
        .iter()
        .map(|list| percent_encoded(list.name).len())
        .max()
        .unwrap_or(0);
    assert!(
        split.len() <= 3 * body.len() + (body.len() + 1) * (longest_name + 2),
        "splitting {} bytes wrote {}",
        body.len(),
        split.len()
    );

    let list = &FORM_LISTS[usize::from(joined.list) % FORM_LISTS.len()];
    let items: Vec<&str> = joined
        .items
        .iter()
        .copied()
        .filter(|item| !item.contains(list.delimiter))
        .collect();
    if items.is_empty() {
        // No items is no pair at all when repeated, an empty text joined.
        return;
    }
    let name = percent_encoded(list.name);
    let other = format!("note={}", percent_encoded(joined.other));
    let delimiter = if joined.encoded_delimiter {
        percent_encoded(&list.delimiter.to_string())
    } else if list.delimiter == ' ' {
        "+".to_string()
    } else {
        list.delimiter.to_string()
    };
    let joined_text: Vec<String> = items.iter().map(|item| percent_encoded(item)).collect();
    let joined_body = format!("{other}&{name}={}", joined_text.join(&delimiter));
    let repeated: Vec<String> = joined_text
        .iter()
        .map(|item| format!("{name}={item}"))
        .collect();
    let repeated_body = format!("{other}&{}", repeated.join("&"));
    let indexed: Vec<String> = joined_text
        .iter()
        .enumerate()
        .map(|(index, item)| format!("{name}[{index}]={item}"))
        .collect();
    let indexed_body = format!("{other}&{}", indexed.join("&"));
    let fingerprint_of = |body| {
        form_fingerprint(
            &CONTRACTS[0],
            &SECURITY,
            &FORM_LISTS,
            &LIST_FIELDS,
            &[],
            &form_request(body),
        )
    };
    let as_joined = fingerprint_of(joined_body);
    let as_repeated = fingerprint_of(repeated_body);
    assert!(as_joined.is_ok(), "{as_joined:?}");
    assert_eq!(
        as_joined, as_repeated,
        "{items:?} joined by {:?} and repeated fingerprint apart",
        list.delimiter
    );
    // One empty item sent as its key (`tags=`) is read as no item, in
    // brackets (`tags[0]=`) as one: two requests, rightly apart.
    if items != [""] {
        assert_eq!(
            as_repeated,
            fingerprint_of(indexed_body),
            "{items:?} repeated and in brackets fingerprint apart"
        );
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(input) = Input::arbitrary(&mut Unstructured::new(bytes)) else {
        return;
    };
    let uri = format!("/{}?{}", input.path.trim_start_matches('/'), input.query);
    let mut builder = http::Request::builder()
        .method(if input.post { "POST" } else { "PUT" })
        .uri(uri);
    for (name, value) in &input.headers {
        builder = builder.header(HEADERS[usize::from(*name) % HEADERS.len()], *value);
    }
    let basic = input.basic.filter(|(user, _)| !user.contains(':'));
    if let Some((user, password)) = &basic {
        builder = builder.header(
            "authorization",
            format!("Basic {}", base64(format!("{user}:{password}").as_bytes())),
        );
    }
    check_joined_lists(input.body, &input.joined);
    // A form with JSON fields is read, whatever it holds, without a panic.
    let _ = form_request(String::from_utf8_lossy(input.body).into_owned())
        .encoded_form_checked_as::<std::collections::BTreeMap<String, serde_json::Value>>(
            422,
            &[],
            &FORM_LISTS,
            &JSON_FIELDS,
        );
    let Ok(request) = builder.body(Body::from(input.body.to_vec())) else {
        return;
    };
    let Ok(request) = read(request) else { return };

    for source in SOURCES {
        if let Ok(Some(key)) = read_key(source, &request) {
            assert!(
                !key.chars().any(char::is_control),
                "{source:?} read a key with a control character: {key:?}"
            );
            for contract in &CONTRACTS {
                let _ = validate_key(contract, &key, &request);
            }
        }
    }
    for contract in &CONTRACTS {
        if let Ok(hash) = scope("pay", contract, &request) {
            assert!(
                hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                "scope {hash:?}"
            );
        }
        let first = form_fingerprint(contract, &SECURITY, &FORM_LISTS, &LIST_FIELDS, &JSON_FIELDS, &request);
        assert_eq!(
            first,
            form_fingerprint(contract, &SECURITY, &FORM_LISTS, &LIST_FIELDS, &JSON_FIELDS, &request),
            "the fingerprint is not a function of the request"
        );
    }
    for scheme in &SCHEMES {
        let found = credential(scheme, &request);
        if let (SchemeKind::Basic, Some((user, password))) = (scheme.kind, &basic) {
            let authorizations = request.headers.get_all("authorization").iter().count();
            if authorizations == 1 {
                assert_eq!(
                    found,
                    Credential::Basic {
                        user: user.clone(),
                        password: password.clone()
                    },
                    "Basic credentials do not round-trip"
                );
            }
        }
    }
});
