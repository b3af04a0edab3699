//! A client that trickles its request (slowloris) cannot hold a connection,
//! or the megabyte a body may take, for as long as it likes: headers must
//! arrive within the header timeout (`HEADER_TIMEOUT` in `serve`, 3 s
//! here), a body within `BODY_READ_TIMEOUT` (answered 408, nothing claimed).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use idemgen_runtime::{BODY_READ_TIMEOUT, Request};

use crate::support;

const HEADER_TIMEOUT: Duration = Duration::from_secs(3);

async fn echo(request: axum::extract::Request) -> axum::response::Response {
    match Request::read(request).await {
        Ok(request) => axum::response::IntoResponse::into_response(request.body),
        Err(answer) => answer,
    }
}

/// Everything the server sends until it closes the connection, and when.
/// Sends each raw request on a connection of its own and reads each
/// answer until the server closes the connection.
async fn answers_to(address: String, requests: Vec<String>) -> Vec<String> {
    tokio::task::spawn_blocking(move || {
        requests
            .iter()
            .map(|request| {
                let mut stream = support::connect(&address);
                let _ = stream.write_all(request.as_bytes());
                until_closed(stream).0
            })
            .collect()
    })
    .await
    .unwrap()
}

fn until_closed(mut stream: TcpStream) -> (String, Duration) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_headers_and_bodies_are_cut_off() {
    let router = Router::new().route("/pay", post(echo));
    let (address, server) = support::serve_on_a_free_port(router, HEADER_TIMEOUT);
    let connect = move || support::connect(&address);
    let (headers, body) = tokio::task::spawn_blocking(move || {
        let mut headers = connect();
        headers
            .write_all(b"POST /pay HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        let mut body = connect();
        body.write_all(b"POST /pay HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"amount\":")
            .unwrap();
        let body = std::thread::spawn(move || until_closed(body));
        (until_closed(headers), body.join().unwrap())
    })
    .await
    .unwrap();
    let slack = Duration::from_secs(5);
    let (_, waited) = headers;
    assert!(
        waited >= HEADER_TIMEOUT - Duration::from_secs(1) && waited < HEADER_TIMEOUT + slack,
        "unfinished headers held the connection for {waited:?}"
    );
    let (answer, waited) = body;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request body too slow"), "{answer}");
    // A problem of its own kind, as every refusal of the runtime.
    assert!(
        answer.contains("content-type: application/problem+json"),
        "{answer}"
    );
    assert!(
        answer.contains(idemgen_runtime::ProblemKind::BodyTooSlow.type_uri()),
        "{answer}"
    );
    assert!(waited < BODY_READ_TIMEOUT + slack, "{waited:?}");
    server.abort();
}

/// A chunked body hyper cannot parse (a chunk size past `u64`, a chunk
/// extension too long) was answered 413 "body too large", as if it were
/// over the limit. It is malformed: 400, and a body that is over the limit
/// is still 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_chunked_body_is_400_not_413() {
    let router = Router::new().route("/pay", post(echo));
    let (address, _server) = support::serve_on_a_free_port(router, HEADER_TIMEOUT);
    let head = "POST /pay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
                Transfer-Encoding: chunked\r\n\r\n";
    let malformed = [
        format!("{head}ffffffffffffffffffff\r\nab\r\n0\r\n\r\n"),
        format!("{head}2;{}\r\nab\r\n0\r\n\r\n", "x".repeat(100_000)),
    ];
    let over_limit = format!(
        "{head}{:x}\r\n{}\r\n0\r\n\r\n",
        idemgen_runtime::MAX_BODY_BYTES + 1,
        "a".repeat(idemgen_runtime::MAX_BODY_BYTES + 1)
    );
    let requests = malformed.iter().cloned().chain([over_limit]).collect();
    let answers = answers_to(address, requests).await;
    for answer in &answers[..2] {
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
        assert!(
            answer.contains("urn:idemgen:problem:invalid-body"),
            "{answer}"
        );
    }
    assert!(answers[2].starts_with("HTTP/1.1 413 "), "{}", answers[2]);
}

/// `Transfer-Encoding: gzip, chunked` was read as plain chunked: hyper
/// undoes `chunked` only, and the body, gzip or not, went on as if no
/// other coding were named. A transfer coding the server does not
/// implement is 501 (RFC 9112, section 6.1), before anything is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_coding_other_than_chunked_is_501() {
    let router = Router::new().route("/pay", post(echo));
    let (address, _server) = support::serve_on_a_free_port(router, HEADER_TIMEOUT);
    let request = |codings: &str| {
        format!(
            "POST /pay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Transfer-Encoding: {codings}\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
        )
    };
    let requests = [
        request("gzip, chunked"),
        request("x-custom, chunked"),
        request("chunked"),
        request("Chunked"),
    ];
    let answers = answers_to(address, requests.to_vec()).await;
    for answer in &answers[..2] {
        assert!(answer.starts_with("HTTP/1.1 501 "), "{answer}");
        assert!(
            answer.contains("urn:idemgen:problem:unsupported-transfer-coding"),
            "{answer}"
        );
    }
    for answer in &answers[2..] {
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        assert!(answer.ends_with("{}"), "{answer}");
    }
}

/// `Transfer-Encoding: chunked, chunked` was read as chunked once: the
/// body the client framed twice went on half undone. Chunked may be
/// applied once only (RFC 9112, section 6.1): 400, nothing read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_chunked_twice_is_400() {
    let router = Router::new().route("/pay", post(echo));
    let (address, _server) = support::serve_on_a_free_port(router, HEADER_TIMEOUT);
    let answers = answers_to(
        address,
        vec![
            "POST /pay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Transfer-Encoding: chunked, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
                .to_string(),
        ],
    )
    .await;
    let answer = &answers[0];
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(
        answer.contains("urn:idemgen:problem:invalid-body"),
        "{answer}"
    );
}
