//! What unauthenticated clients can make a server hold is bounded: a
//! credential the verifier can refuse from the head alone (missing,
//! malformed, stale) is refused before the body is read; the bytes of
//! bodies read at once are bounded (past them `503` with `Retry-After`,
//! the body unread), and so are connections (past them `503` at once, the
//! request unread) and request heads (431 past `MAX_HEAD_BYTES`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use idemgen_runtime::service::{HEADER_READ_TIMEOUT, Limits, MAX_HEAD_BYTES, serve_with};
use idemgen_runtime::{
    ApiKeyIn, Credential, Principal, Refusal, Request, Scheme, SchemeKind, Security, Verify,
    read_authenticated,
};

use crate::support;

const SIGNED: Scheme = Scheme {
    name: "signature",
    kind: SchemeKind::ApiKey {
        location: ApiKeyIn::Header,
        name: "X-Signature",
    },
    realm: "",
};
static SECURITY: Security = Security {
    alternatives: &[&[SIGNED]],
};

/// Signatures are `fresh:<anything>`; `fresh:good` verifies, with the body.
struct Signatures;

static VERIFIED: AtomicUsize = AtomicUsize::new(0);

impl Verify for Signatures {
    async fn verify(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> Result<Principal, Refusal> {
        VERIFIED.fetch_add(1, Ordering::SeqCst);
        match credential {
            Credential::ApiKey(signature)
                if signature == "fresh:good" && !request.body.is_empty() =>
            {
                Ok(Principal::new("provider", scheme.name))
            }
            Credential::Missing => Err(Refusal::missing(scheme)),
            _ => Err(Refusal::unauthenticated("the signature does not match")),
        }
    }

    fn precheck(
        &self,
        scheme: &'static Scheme,
        credential: &Credential,
        request: &Request,
    ) -> Result<(), Refusal> {
        assert!(request.body.is_empty(), "the precheck sees no body");
        match credential {
            Credential::ApiKey(signature) if signature.starts_with("fresh:") => Ok(()),
            Credential::ApiKey(_) => Err(Refusal::unauthenticated("the signature is stale")),
            _ => Err(Refusal::missing(scheme)),
        }
    }
}

async fn signed(request: axum::extract::Request) -> axum::response::Response {
    match read_authenticated(&SECURITY, &Signatures, request).await {
        Ok(request) => axum::response::IntoResponse::into_response(request.body),
        Err(answer) => answer,
    }
}

async fn echo(request: axum::extract::Request) -> axum::response::Response {
    match Request::read(request).await {
        Ok(request) => axum::response::IntoResponse::into_response(request.body),
        Err(answer) => answer,
    }
}

fn serve(limits: Limits) -> (String, tokio::task::JoinHandle<std::io::Result<()>>) {
    let router = Router::new()
        .route("/signed", post(signed))
        .route("/echo", post(echo));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let server = tokio::spawn({
        let address = address.clone();
        async move { serve_with(&address, router, HEADER_READ_TIMEOUT, limits).await }
    });
    (address, server)
}

/// Sends `head` and the first `sent` bytes of a body of `length`, and
/// keeps the connection.
fn start(
    address: &str,
    path: &str,
    signature: Option<&str>,
    length: usize,
    sent: usize,
) -> TcpStream {
    let mut stream = support::connect(address);
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let signature = signature.map_or(String::new(), |value| format!("X-Signature: {value}\r\n"));
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: x\r\n{signature}Content-Length: {length}\r\n\r\n"
    )
    .unwrap();
    stream.write_all(&vec![b'a'; sent]).unwrap();
    stream
}

/// The first line and headers of the answer on `stream`, and how long it
/// took to come.
fn answer(stream: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => answer.extend_from_slice(&buffer[..read]),
        }
    }
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_refused_from_the_head_is_refused_before_the_body_is_read() {
    let (address, server) = serve(Limits::default());
    tokio::task::spawn_blocking(move || {
        let verified = VERIFIED.load(Ordering::SeqCst);
        // A megabyte announced, none of it sent: the answer comes at once,
        // not after the body's 10 s.
        for signature in [None, Some("stale:1")] {
            let mut stream = start(&address, "/signed", signature, 1024 * 1024, 0);
            let (head, took) = answer(&mut stream);
            assert!(head.starts_with("HTTP/1.1 401"), "{signature:?}: {head}");
            assert!(took < Duration::from_secs(3), "{signature:?}: {took:?}");
        }
        // A fresh one is checked with its body.
        let mut stream = start(&address, "/signed", Some("fresh:bad"), 5, 5);
        assert!(answer(&mut stream).0.starts_with("HTTP/1.1 401"));
        let mut stream = start(&address, "/signed", Some("fresh:good"), 5, 5);
        assert!(answer(&mut stream).0.starts_with("HTTP/1.1 200"));
        assert_eq!(
            VERIFIED.load(Ordering::SeqCst) - verified,
            2,
            "verify ran for the fresh ones only"
        );
    })
    .await
    .unwrap();
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_past_the_bytes_in_flight_are_503_unread_until_the_others_end() {
    let (address, server) = serve(Limits {
        body_bytes_in_flight: 1000,
        ..Limits::default()
    });
    tokio::task::spawn_blocking(move || {
        // 800 bytes announced and held half sent.
        let mut holding = start(&address, "/echo", None, 800, 400);
        std::thread::sleep(Duration::from_millis(200));
        // Another 800 would pass the thousand: refused at once.
        let mut refused = start(&address, "/echo", None, 800, 0);
        let (head, took) = answer(&mut refused);
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        assert!(head.to_lowercase().contains("retry-after: 1"), "{head}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        // A small one still fits.
        let mut small = start(&address, "/echo", None, 100, 100);
        assert!(answer(&mut small).0.starts_with("HTTP/1.1 200"));
        // A chunked body is counted as it arrives: refused once it passes.
        let mut chunked = support::connect(&address);
        chunked
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        write!(
            chunked,
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
             12c\r\n{}\r\n",
            "c".repeat(300)
        )
        .unwrap();
        let (head, _) = answer(&mut chunked);
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        // Once the first body is in, the budget is back.
        holding.write_all(&[b'a'; 400]).unwrap();
        assert!(answer(&mut holding).0.starts_with("HTTP/1.1 200"));
        let mut again = start(&address, "/echo", None, 800, 800);
        assert!(answer(&mut again).0.starts_with("HTTP/1.1 200"));
    })
    .await
    .unwrap();
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_answered_503_at_once() {
    let (address, server) = serve(Limits {
        max_connections: 2,
        ..Limits::default()
    });
    tokio::task::spawn_blocking(move || {
        let first = support::connect(&address);
        let _second = support::connect(&address);
        std::thread::sleep(Duration::from_millis(200));
        let mut third = start(&address, "/echo", None, 5, 5);
        let (head, took) = answer(&mut third);
        assert!(head.starts_with("HTTP/1.1 503"), "{head}");
        assert!(head.to_lowercase().contains("retry-after: 1"), "{head}");
        assert!(head.contains("application/problem+json"), "{head}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        drop(first);
        std::thread::sleep(Duration::from_millis(200));
        let mut fourth = start(&address, "/echo", None, 5, 5);
        assert!(answer(&mut fourth).0.starts_with("HTTP/1.1 200"));
    })
    .await
    .unwrap();
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_past_the_limit_is_431() {
    let (address, server) = serve(Limits::default());
    tokio::task::spawn_blocking(move || {
        let mut stream = support::connect(&address);
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let filler = "x".repeat(1000);
        let mut head = String::from("POST /echo HTTP/1.1\r\nHost: x\r\n");
        while head.len() <= MAX_HEAD_BYTES {
            head.push_str(&format!("X-Filler: {filler}\r\n"));
        }
        let _ = stream.write_all(head.as_bytes());
        assert!(answer(&mut stream).0.starts_with("HTTP/1.1 431"));
    })
    .await
    .unwrap();
    server.abort();
}
