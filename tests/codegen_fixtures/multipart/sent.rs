//! Real requests to the generated `uploadFile` operation: the parts of a
//! multipart body arrive typed in the business code (which echoes them),
//! parts that do not fit (or break the spec's keywords) are 400 problems
//! naming them and claim no key, a retry with another
//! boundary is a replay, and the generated client's multipart body is read
//! as the spec says.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use multipart::App;

/// One part: its `Content-Disposition` parameters, further header lines
/// and content.
type Part<'a> = (&'a str, &'a str, &'a [u8]);

fn body(boundary: &str, parts: &[Part<'_>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (disposition, headers, content) in parts {
        bytes.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; {disposition}\r\n{headers}\r\n")
                .as_bytes(),
        );
        bytes.extend_from_slice(content);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    bytes
}

async fn app() -> App {
    let file = std::env::temp_dir().join(format!("multipart-test-{}.db", uuid::Uuid::new_v4()));
    App::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("connect and migrate")
}

fn new_key() -> String {
    format!("file:{}", uuid::Uuid::new_v4())
}

async fn send(app: &App, key: &str, boundary: &str, parts: &[Part<'_>]) -> (StatusCode, HeaderMap, Value) {
    let request = Request::post("/files")
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .header("idempotency-key", key)
        .body(Body::from(body(boundary, parts)))
        .unwrap();
    let answer = app.router().oneshot(request).await.unwrap();
    let status = answer.status();
    let headers = answer.headers().clone();
    let bytes = axum::body::to_bytes(answer.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, headers, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff];
const FILE: Part = ("name=\"file\"; filename=\"logo.png\"", "Content-Type: image/png\r\n", PNG);
const PURPOSE: Part = ("name=\"purpose\"", "", b"dispute_evidence");

fn upload() -> Vec<Part<'static>> {
    vec![
        FILE,
        PURPOSE,
        ("name=\"copies\"", "", b"2"),
        ("name=\"public\"", "", b"true"),
        ("name=\"file_link_data\"", "Content-Type: application/json\r\n", br#"{"create": true, "expires_at": 1700000000}"#),
        ("name=\"link_options[notify]\"", "", b"true"),
        ("name=\"link_options[expires_in]\"", "", b"3600"),
        ("name=\"link_options[metadata][order]\"", "", b"6735"),
        ("name=\"labels\"", "", b"q3|tax"),
        ("name=\"expand[]\"", "", b"file_link"),
        ("name=\"expand[]\"", "", b"links"),
        ("name=\"pages\"; filename=\"1.txt\"", "", b"one"),
        ("name=\"pages\"; filename=\"2.txt\"", "Content-Type: text/plain\r\n", b"two"),
    ]
}

fn echoed_upload() -> Value {
    json!({
        "body": {
            "file": {"file_name": "logo.png", "content_type": "image/png", "bytes": PNG},
            "purpose": "dispute_evidence",
            "copies": 2,
            "public": true,
            "file_link_data": {"create": true, "expires_at": 1700000000},
            "link_options": {"notify": true, "expires_in": 3600, "metadata": {"order": "6735"}},
            "labels": ["q3", "tax"],
            "expand": ["file_link", "links"],
            "pages": [
                {"file_name": "1.txt", "bytes": b"one"},
                {"file_name": "2.txt", "content_type": "text/plain", "bytes": b"two"},
            ],
        },
    })
}

#[tokio::test]
async fn every_part_arrives_as_its_type() {
    let app = app().await;
    let (status, _, echoed) = send(&app, &new_key(), "b0undary", &upload()).await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed, echoed_upload());
    // `labels`, declared joined, is also read as its part repeated.
    let mut repeated: Vec<Part> = upload().into_iter().filter(|part| !part.0.contains("labels")).collect();
    repeated.extend([("name=\"labels\"", "", &b"q3"[..]), ("name=\"labels\"", "", b"tax")]);
    let (status, _, echoed) = send(&app, &new_key(), "b0undary", &repeated).await;
    assert_eq!(status, StatusCode::OK, "{echoed}");
    assert_eq!(echoed, echoed_upload());
}

#[tokio::test]
async fn a_part_that_does_not_fit_is_a_400_naming_it() {
    let app = app().await;
    let refused = |parts: Vec<Part<'static>>, expected: &'static str| {
        let app = app.clone();
        async move {
            let (status, headers, problem) = send(&app, &new_key(), "b", &parts).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
            assert_eq!(headers["content-type"], "application/problem+json");
            let detail = problem["detail"].as_str().unwrap_or_default();
            assert!(detail.contains(expected), "{expected} in {detail}");
        }
    };
    refused(vec![FILE, PURPOSE, ("name=\"copies\"", "", b"two")], "the part `copies` must be an integer, not `two`").await;
    refused(vec![FILE, PURPOSE, ("name=\"public\"", "", b"yes")], "the part `public` must be `true` or `false`").await;
    refused(vec![FILE, ("name=\"purpose\"", "", b"selfie")], "`purpose`: unknown variant `selfie`").await;
    refused(vec![PURPOSE], "missing field `file`").await;
    refused(vec![FILE, PURPOSE, ("name=\"file_link_data\"", "", b"create=true")], "the part `file_link_data` is not a JSON document").await;
    refused(vec![FILE, PURPOSE, ("name=\"file_link_data\"", "", br#"{"expires_at": 1}"#)], "`file_link_data`: missing field `create`").await;
    refused(vec![FILE, PURPOSE, PURPOSE], "the part `purpose` is sent more than once").await;
    let notify: Part = ("name=\"link_options[notify]\"", "", b"maybe");
    refused(vec![FILE, PURPOSE, notify], "the part `link_options[notify]` must be `true` or `false`, not `maybe`").await;
    refused(vec![FILE, PURPOSE, ("name=\"link_options[metadata][a][b]\"", "", b"c")], "`link_options.metadata.a`: invalid type: map").await;
    let both: Part = ("name=\"link_options\"", "Content-Type: application/json\r\n", br#"{"notify": true}"#);
    refused(vec![FILE, PURPOSE, both, notify], "the part `link_options` is sent both whole and in brackets").await;
    refused(vec![FILE, PURPOSE, ("name=\"note\"", "", b"hi")], "unknown field `note`").await;
}

/// The spec's keywords (`minimum`, `exclusiveMinimum`, `maxItems`) are
/// checked on the parts as read, before the key is claimed: the refusal
/// names the value's JSON pointer and the keyword, and a retry under the
/// same key with fitting parts is a first attempt, not a conflict.
#[tokio::test]
async fn a_part_breaking_a_keyword_is_refused_before_the_key_is_claimed() {
    let app = app().await;
    let link = |json: &'static [u8]| ("name=\"file_link_data\"", "Content-Type: application/json\r\n", json);
    let expand: Part = ("name=\"expand[]\"", "", b"x");
    for (extra, expected) in [
        (vec![("name=\"copies\"", "", &b"0"[..])], "/copies breaks `minimum`"),
        (vec![("name=\"copies\"", "", &b"11"[..])], "/copies breaks `maximum`"),
        (vec![link(br#"{"create": true, "expires_at": 0}"#)], "/file_link_data/expires_at breaks `exclusiveMinimum`"),
        (vec![expand, expand, expand, expand], "/expand breaks `maxItems`"),
        (vec![("name=\"link_options[expires_in]\"", "", &b"59"[..])], "/link_options/expires_in breaks `minimum`"),
    ] {
        let key = new_key();
        let mut parts = vec![FILE, PURPOSE];
        parts.extend(extra);
        let (status, headers, problem) = send(&app, &key, "b", &parts).await;
        // The operation declares no 422: a body that does not fit is a 400.
        assert_eq!(status, StatusCode::BAD_REQUEST, "{expected}: {problem}");
        assert_eq!(headers["content-type"], "application/problem+json");
        assert_eq!(problem["type"], "urn:idemgen:problem:schema-mismatch", "{problem}");
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with(expected), "{expected} in {detail}");
        let (status, headers, echoed) = send(&app, &key, "b", &upload()).await;
        assert_eq!(status, StatusCode::OK, "{expected}, then under its key: {echoed}");
        assert!(headers.get("idempotent-replayed").is_none(), "{expected}: a first attempt");
        assert_eq!(echoed, echoed_upload());
    }
    // On the boundary: `copies` 1 and 10, three `expand` items.
    for copies in [&b"1"[..], b"10"] {
        let parts = vec![FILE, PURPOSE, ("name=\"copies\"", "", copies), expand, expand, expand];
        let (status, _, echoed) = send(&app, &new_key(), "b", &parts).await;
        assert_eq!(status, StatusCode::OK, "{echoed}");
    }
}

#[tokio::test]
async fn a_retry_with_another_boundary_and_order_is_a_replay() {
    let app = app().await;
    let key = new_key();
    let (status, _, first) = send(&app, &key, "first-boundary", &upload()).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let mut reordered = upload();
    reordered.reverse();
    // The two `expand` items keep their order: a list's order is its meaning.
    let expand: Vec<Part> = reordered.iter().filter(|part| part.0.contains("expand")).copied().collect();
    for (at, item) in reordered
        .iter_mut()
        .filter(|part| part.0.contains("expand"))
        .zip(expand.iter().rev())
    {
        *at = *item;
    }
    let pages: Vec<Part> = reordered.iter().filter(|part| part.0.contains("pages")).copied().collect();
    for (at, item) in reordered
        .iter_mut()
        .filter(|part| part.0.contains("pages"))
        .zip(pages.iter().rev())
    {
        *at = *item;
    }
    let (status, headers, replay) = send(&app, &key, "another-0123456789", &reordered).await;
    assert_eq!(status, StatusCode::OK, "{replay}");
    assert_eq!(headers["idempotent-replayed"], "true");
    assert_eq!(replay, first);
    // `labels` joined in one part or as its part repeated: one list, one
    // request.
    let mut repeated: Vec<Part> = upload().into_iter().filter(|part| !part.0.contains("labels")).collect();
    repeated.extend([("name=\"labels\"", "", &b"q3"[..]), ("name=\"labels\"", "", b"tax")]);
    let (status, headers, replay) = send(&app, &key, "b", &repeated).await;
    assert_eq!((status, &headers["idempotent-replayed"]), (StatusCode::OK, &"true".parse::<axum::http::HeaderValue>().unwrap()), "{replay}");
    // Another file under the same key is another request.
    let mut changed = upload();
    changed[0] = ("name=\"file\"; filename=\"logo.png\"", "Content-Type: image/png\r\n", b"GIF89a");
    let (status, _, conflict) = send(&app, &key, "first-boundary", &changed).await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");
}

#[tokio::test]
async fn the_generated_client_sends_the_body_as_multipart() {
    use multipart_client::models;
    let app = app().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = app.router();
    tokio::spawn(async move { axum::serve(listener, router).await });
    // The signer sees each attempt's body bytes: what went on the wire.
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let seen = sent.clone();
    let client = multipart_client::Client::new(&format!("http://{address}"))
        .unwrap()
        .with_signer(move |_, _, body| {
            *seen.lock().unwrap() = body.to_vec();
            reqwest::header::HeaderMap::new()
        });
    let mut body = models::UploadFileRequest::new(
        models::FilePart {
            file_name: Some("logo.png".into()),
            content_type: Some("image/png".into()),
            bytes: PNG.to_vec(),
        },
        models::UploadFileRequestPurpose::DisputeEvidence,
    );
    body.copies = Some(2);
    body.public = Some(true);
    body.file_link_data = Some(models::UploadFileRequestFileLinkData {
        create: true,
        expires_at: Some(1700000000),
    });
    // Declared `deepObject`: the client sends it in brackets.
    body.link_options = Some(models::UploadFileRequestLinkOptions {
        notify: Some(true),
        expires_in: Some(3600),
        metadata: Some([("order".to_string(), "6735".to_string())].into()),
    });
    // Declared `pipeDelimited`: the client joins it in one part.
    body.labels = Some(vec!["q3".into(), "tax".into()]);
    body.expand = Some(vec!["file_link".into(), "links".into()]);
    body.pages = Some(vec![
        models::FilePart {
            file_name: Some("1.txt".into()),
            content_type: None,
            bytes: b"one".to_vec(),
        },
        models::FilePart {
            file_name: Some("2.txt".into()),
            content_type: Some("text/plain".into()),
            bytes: b"two".to_vec(),
        },
    ]);
    let params = models::UploadFileParams {
        idempotency_key: String::new(),
    };
    let answer = client
        .upload_file(multipart_client::Key::New, &params, &body)
        .await
        .expect("an answer");
    let models::UploadFileResponse::Ok(echoed) = answer.response else {
        panic!("not a 200: {:?}", answer.response);
    };
    let mut expected = echoed_upload();
    // A file part the client sends without a content type is sent as
    // `application/octet-stream`.
    expected["body"]["pages"][0]["content_type"] = json!("application/octet-stream");
    assert_eq!(echoed, expected);
    // On the wire: `link_options` in brackets, `labels` in one part.
    let wire = String::from_utf8_lossy(&sent.lock().unwrap()).into_owned();
    for part in [
        "name=\"link_options[notify]\"\r\n\r\ntrue\r\n",
        "name=\"link_options[expires_in]\"\r\n\r\n3600\r\n",
        "name=\"link_options[metadata][order]\"\r\n\r\n6735\r\n",
        "name=\"labels\"\r\n\r\nq3|tax\r\n",
    ] {
        assert!(wire.contains(part), "{part:?} in {wire}");
    }
    assert_eq!(wire.matches("name=\"labels\"").count(), 1, "{wire}");
    assert!(!wire.contains("name=\"link_options\""), "{wire}");
}
