//! The spec's validation keywords on form and multipart bodies: each kind
//! refused naming the value's JSON pointer and the keyword, with the
//! status the operation answers a JSON body's (422, or 400 when it
//! declares no 422), while values on the boundary pass.

use std::collections::BTreeMap;

use idemgen_runtime::{Check, Constraint, Part, Reply, Request, Scalar};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Deserialize, Serialize)]
struct Line {
    qty: f64,
}

#[derive(Debug, Deserialize, Serialize)]
struct Payment {
    amount: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lines: Option<Vec<Line>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<Vec<String>>,
    #[serde(rename = "meta-data", skip_serializing_if = "Option::is_none")]
    metadata: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<f64>,
}

const PAYMENT: &[Constraint] = &[
    Constraint {
        at: "/amount",
        check: Check::Minimum("1"),
    },
    Constraint {
        at: "/amount",
        check: Check::Maximum("9007199254740992"),
    },
    Constraint {
        at: "/amount",
        check: Check::MultipleOf("5"),
    },
    Constraint {
        at: "/date",
        check: Check::Pattern("^[0-9]{8}$"),
    },
    Constraint {
        at: "/code",
        check: Check::MinLength(2),
    },
    Constraint {
        at: "/code",
        check: Check::MaxLength(3),
    },
    Constraint {
        at: "/lines",
        check: Check::MinItems(1),
    },
    Constraint {
        at: "/lines",
        check: Check::MaxItems(2),
    },
    Constraint {
        at: "/lines/*/qty",
        check: Check::ExclusiveMinimum("0"),
    },
    Constraint {
        at: "/lines/*/qty",
        check: Check::ExclusiveMaximum("100"),
    },
    Constraint {
        at: "/tags",
        check: Check::UniqueItems,
    },
    Constraint {
        at: "/meta-data",
        check: Check::MinProperties(1),
    },
    Constraint {
        at: "/meta-data",
        check: Check::MaxProperties(2),
    },
    Constraint {
        at: "/priority",
        check: Check::Enum(&["1", "2", "3"]),
    },
    Constraint {
        at: "/rate",
        check: Check::MultipleOf("0.01"),
    },
];

fn form(body: &str) -> Request {
    let mut request = Request {
        body: body.to_string().into(),
        ..Request::new(axum::http::Method::POST, "/payments")
    };
    request.headers.insert(
        "content-type",
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    request
}

/// The refusal's status, problem type and detail.
fn refusal(refused: Reply) -> (u16, String, String) {
    let problem: Value = serde_json::from_slice(&refused.body).unwrap();
    (
        refused.status.as_u16(),
        problem["type"].as_str().unwrap_or_default().to_string(),
        problem["detail"].as_str().unwrap_or_default().to_string(),
    )
}

/// The pointer and keyword a refused form names, from its detail
/// (`/amount breaks `minimum`: …`).
fn form_breaks(body: &str) -> Option<(String, String)> {
    let refused = form(body).form_checked_as::<Payment>(422, PAYMENT).err()?;
    let (status, kind, detail) = refusal(refused);
    assert_eq!(status, 422, "{detail}");
    assert_eq!(kind, "urn:idemgen:problem:schema-mismatch", "{detail}");
    let (pointer, rest) = detail.split_once(" breaks `").expect(&detail);
    let keyword = rest.split_once('`').expect(&detail).0;
    Some((pointer.to_string(), keyword.to_string()))
}

fn names(pointer: &str, keyword: &str) -> Option<(String, String)> {
    Some((pointer.to_string(), keyword.to_string()))
}

/// A `format: float` field of a form is checked as the decimal it is
/// (`0.1`), not as the `f64` its `f32` widens to (0.10000000149011612),
/// which would break a `maximum` and a `multipleOf` of `0.1`.
#[test]
fn a_float_field_of_a_form_is_checked_as_its_own_decimal() {
    #[derive(serde::Deserialize, serde::Serialize)]
    struct Rate {
        rate: f32,
    }
    const RATE: &[Constraint] = &[
        Constraint {
            at: "/rate",
            check: Check::Maximum("0.1"),
        },
        Constraint {
            at: "/rate",
            check: Check::MultipleOf("0.1"),
        },
    ];
    let rate: Rate = form("rate=0.1").form_checked_as(422, RATE).unwrap();
    assert_eq!(rate.rate, 0.1);
    assert!(
        form("rate=0.11")
            .form_checked_as::<Rate>(422, RATE)
            .is_err()
    );
}

#[test]
fn a_form_value_breaking_each_keyword_is_refused_naming_its_pointer() {
    assert_eq!(form_breaks("amount=-5"), names("/amount", "minimum"));
    assert_eq!(form_breaks("amount=0"), names("/amount", "minimum"));
    assert_eq!(form_breaks("amount=12"), names("/amount", "multipleOf"));
    assert_eq!(
        form_breaks("amount=5&date=2024-06-15"),
        names("/date", "pattern")
    );
    assert_eq!(form_breaks("amount=5&code=A"), names("/code", "minLength"));
    assert_eq!(
        form_breaks("amount=5&code=ABCD"),
        names("/code", "maxLength")
    );
    assert_eq!(
        form_breaks("amount=5&lines[0][qty]=1&lines[1][qty]=2&lines[2][qty]=3"),
        names("/lines", "maxItems")
    );
    assert_eq!(
        form_breaks("amount=5&lines[0][qty]=1&lines[1][qty]=0"),
        names("/lines/1/qty", "exclusiveMinimum")
    );
    assert_eq!(
        form_breaks("amount=5&lines[0][qty]=100"),
        names("/lines/0/qty", "exclusiveMaximum")
    );
    assert_eq!(
        form_breaks("amount=5&tags[]=a&tags[]=b&tags[]=a"),
        names("/tags", "uniqueItems")
    );
    assert_eq!(
        form_breaks("amount=5&meta-data[a]=1&meta-data[b]=2&meta-data[c]=3"),
        names("/meta-data", "maxProperties")
    );
    assert_eq!(
        form_breaks("amount=5&priority=4"),
        names("/priority", "enum")
    );
    assert_eq!(
        form_breaks("amount=5&rate=0.015"),
        names("/rate", "multipleOf")
    );
}

#[test]
fn form_values_on_the_boundary_pass_and_absent_ones_check_nothing() {
    let read = |body: &str| form(body).form_checked_as::<Payment>(422, PAYMENT);
    let edge = read("amount=5&code=ÄÖÜ&lines[0][qty]=99.5&lines[1][qty]=0.5&priority=3&rate=0.07")
        .unwrap();
    assert_eq!((edge.amount, edge.code.as_deref()), (5, Some("ÄÖÜ")));
    assert_eq!(
        read("amount=5&code=AB").unwrap().code.as_deref(),
        Some("AB")
    );
    assert_eq!(
        read("amount=5&meta-data[a]=1")
            .unwrap()
            .metadata
            .unwrap()
            .len(),
        1
    );
    // Every optional field left out: only `amount` is checked.
    assert_eq!(read("amount=5").unwrap().amount, 5);
    // The integer decoded is the one checked, however it is spelled.
    assert_eq!(form_breaks("amount=%2B0"), names("/amount", "minimum"));
    assert_eq!(form_breaks("amount=-0"), names("/amount", "minimum"));
}

#[test]
fn a_form_amount_is_compared_as_the_integer_it_is() {
    // 2^53 + 3 is nearest the float 2^53 + 4 but breaks `maximum: 2^53`
    // by 3, and is no multiple of 5 though its nearest float is one.
    assert_eq!(
        form_breaks("amount=9007199254740995"),
        names("/amount", "maximum")
    );
    assert_eq!(
        form("amount=9007199254740990")
            .form_checked_as::<Payment>(422, PAYMENT)
            .unwrap()
            .amount,
        9_007_199_254_740_990
    );
}

#[test]
fn a_form_refusal_is_400_where_no_422_is_declared_and_so_is_a_misfit() {
    let refused = form("amount=-5")
        .form_checked_as::<Payment>(400, PAYMENT)
        .unwrap_err();
    let (status, kind, detail) = refusal(refused);
    assert_eq!(
        (status, kind.as_str()),
        (400, "urn:idemgen:problem:schema-mismatch")
    );
    assert!(detail.starts_with("/amount breaks `minimum`"), "{detail}");
    let misfit = form("amount=five")
        .form_checked_as::<Payment>(422, PAYMENT)
        .unwrap_err();
    let (status, _, detail) = refusal(misfit);
    assert_eq!(status, 422);
    assert!(detail.contains("amount"), "{detail}");
    // A scalar field sent twice does not fit either: no one value is sent.
    let twice = form("amount=5&amount=10")
        .form_checked_as::<Payment>(422, PAYMENT)
        .unwrap_err();
    let (status, kind, detail) = refusal(twice);
    assert_eq!(
        (status, kind.as_str()),
        (422, "urn:idemgen:problem:schema-mismatch")
    );
    assert!(detail.contains("`amount`"), "{detail}");
    // `form_as` checks no keyword: its refusals stay the form's own 400.
    assert_eq!(form("amount=-5").form_as::<Payment>().unwrap().amount, -5);
}

#[derive(Debug, Deserialize)]
struct File {
    file_name: Option<String>,
    bytes: Vec<u8>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Link {
    expires_at: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct Upload {
    purpose: String,
    copies: Option<u32>,
    file: File,
    link: Option<Link>,
    scans: Option<Vec<File>>,
    tags: Option<Vec<String>>,
}

const PARTS: &[Part] = &[
    Part::text("copies", Scalar::Integer),
    Part::file("file"),
    Part::json("link"),
    Part::file("scans").many(),
    Part::text("tags", Scalar::String).many(),
];

const UPLOAD: &[Constraint] = &[
    Constraint {
        at: "/purpose",
        check: Check::Pattern("^[a-z]+$"),
    },
    Constraint {
        at: "/purpose",
        check: Check::MaxLength(8),
    },
    Constraint {
        at: "/copies",
        check: Check::Minimum("1"),
    },
    Constraint {
        at: "/copies",
        check: Check::Maximum("10"),
    },
    Constraint {
        at: "/link/expires_at",
        check: Check::ExclusiveMinimum("0"),
    },
    Constraint {
        at: "/scans",
        check: Check::MaxItems(2),
    },
    Constraint {
        at: "/scans",
        check: Check::UniqueItems,
    },
    Constraint {
        at: "/tags",
        check: Check::MinItems(2),
    },
    Constraint {
        at: "/tags/*",
        check: Check::Enum(&["\"a\"", "\"b\"", "1"]),
    },
    // On a file: no keyword reads its bytes.
    Constraint {
        at: "/file",
        check: Check::MaxLength(1),
    },
];

/// A multipart body of `(disposition, headers, content)` parts.
fn multipart(parts: &[(&str, &str, &str)]) -> Request {
    let mut body = String::new();
    for (disposition, headers, content) in parts {
        body.push_str(&format!(
            "--b\r\nContent-Disposition: form-data; {disposition}\r\n{headers}\r\n{content}\r\n"
        ));
    }
    body.push_str("--b--\r\n");
    let mut request = Request {
        body: body.into(),
        ..Request::new(axum::http::Method::POST, "/files")
    };
    request.headers.insert(
        "content-type",
        "multipart/form-data; boundary=b".parse().unwrap(),
    );
    request
}

const FILE: (&str, &str, &str) = (
    "name=\"file\"; filename=\"a.png\"",
    "Content-Type: image/png\r\n",
    "PNG",
);

fn upload(extra: &[(&str, &str, &str)]) -> Request {
    let mut parts = vec![("name=\"purpose\"", "", "logo"), FILE];
    parts.extend_from_slice(extra);
    multipart(&parts)
}

fn upload_breaks(extra: &[(&str, &str, &str)]) -> Option<(String, String)> {
    let refused = upload(extra)
        .multipart_checked_as::<Upload>(PARTS, 422, UPLOAD)
        .err()?;
    let (status, kind, detail) = refusal(refused);
    assert_eq!(
        (status, kind.as_str()),
        (422, "urn:idemgen:problem:schema-mismatch"),
        "{detail}"
    );
    let (pointer, rest) = detail.split_once(" breaks `").expect(&detail);
    Some((
        pointer.to_string(),
        rest.split_once('`').expect(&detail).0.to_string(),
    ))
}

#[test]
fn a_multipart_value_breaking_each_keyword_is_refused_naming_its_pointer() {
    assert_eq!(
        upload_breaks(&[("name=\"copies\"", "", "0")]),
        names("/copies", "minimum")
    );
    assert_eq!(
        upload_breaks(&[("name=\"copies\"", "", "11")]),
        names("/copies", "maximum")
    );
    let link = (
        "name=\"link\"",
        "Content-Type: application/json\r\n",
        r#"{"expires_at": 0}"#,
    );
    assert_eq!(
        upload_breaks(&[link]),
        names("/link/expires_at", "exclusiveMinimum")
    );
    let scan = |name: &'static str| ("name=\"scans\"; filename=\"s.png\"", "", name);
    assert_eq!(
        upload_breaks(&[scan("1"), scan("2"), scan("3")]),
        names("/scans", "maxItems")
    );
    assert_eq!(
        upload_breaks(&[scan("1"), scan("1")]),
        names("/scans", "uniqueItems")
    );
    // One file name, other bytes: two different uploads.
    assert_eq!(upload_breaks(&[scan("1"), scan("2")]), None);
    assert_eq!(
        upload_breaks(&[("name=\"tags\"", "", "a")]),
        names("/tags", "minItems")
    );
    assert_eq!(
        upload_breaks(&[("name=\"tags[]\"", "", "a"), ("name=\"tags[]\"", "", "c")]),
        names("/tags/1", "enum")
    );
    let renamed = multipart(&[("name=\"purpose\"", "", "Logo"), FILE]);
    let refused = renamed
        .multipart_checked_as::<Upload>(PARTS, 400, UPLOAD)
        .unwrap_err();
    let (status, _, detail) = refusal(refused);
    assert_eq!(status, 400);
    assert!(detail.starts_with("/purpose breaks `pattern`"), "{detail}");
    let long = multipart(&[("name=\"purpose\"", "", "abcdefghi"), FILE]);
    let refused = long
        .multipart_checked_as::<Upload>(PARTS, 422, UPLOAD)
        .unwrap_err();
    assert!(
        refusal(refused)
            .2
            .starts_with("/purpose breaks `maxLength`")
    );
}

#[test]
fn multipart_values_on_the_boundary_pass_and_files_are_not_read_as_text() {
    let scan = |name: &'static str| ("name=\"scans\"; filename=\"s.png\"", "", name);
    let sent = upload(&[
        ("name=\"copies\"", "", "10"),
        scan("1"),
        scan("2"),
        ("name=\"tags\"", "", "a"),
        ("name=\"tags\"", "", "b"),
    ]);
    let read = sent
        .multipart_checked_as::<Upload>(PARTS, 422, UPLOAD)
        .unwrap();
    assert_eq!(read.copies, Some(10));
    assert_eq!(read.scans.map(|scans| scans.len()), Some(2));
    // `maxLength: 1` on the file does not read its three bytes.
    assert_eq!(
        (read.file.file_name.as_deref(), read.file.bytes.as_slice()),
        (Some("a.png"), &b"PNG"[..])
    );
    let eight = multipart(&[("name=\"purpose\"", "", "abcdefgh"), FILE]);
    assert!(
        eight
            .multipart_checked_as::<Upload>(PARTS, 422, UPLOAD)
            .is_ok()
    );
    // `multipart_as` checks no keyword.
    let zero = upload(&[("name=\"copies\"", "", "0")]);
    assert_eq!(zero.multipart_as::<Upload>(PARTS).unwrap().copies, Some(0));
}
