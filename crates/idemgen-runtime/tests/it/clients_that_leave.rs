//! A request whose client goes away before the answer still runs to its
//! end (and stores its answer, which the client's retry then gets); a
//! request that panics is answered 500 on a connection that stays up; a
//! client that half-closes after sending its request gets its answer.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use idemgen_runtime::service::HEADER_READ_TIMEOUT;

use crate::support;

static STARTED: AtomicUsize = AtomicUsize::new(0);
static FINISHED: AtomicUsize = AtomicUsize::new(0);

/// Work that outlasts its client.
async fn slow() -> &'static str {
    STARTED.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    FINISHED.fetch_add(1, Ordering::SeqCst);
    "done"
}

async fn panics() -> &'static str {
    panic!("a bug in a business function");
}

fn wait_for(counter: &AtomicUsize, value: usize, within: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if counter.load(Ordering::SeqCst) == value {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_client_left_runs_to_its_end() {
    let router = Router::new().route("/slow", get(slow));
    let (address, server) = support::serve_on_a_free_port(router, HEADER_READ_TIMEOUT);
    let finished = tokio::task::spawn_blocking(move || {
        let mut client = support::connect(&address);
        client
            .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        assert!(
            wait_for(&STARTED, 1, Duration::from_secs(10)),
            "the request never started"
        );
        // The client gives up before the answer and closes.
        drop(client);
        wait_for(&FINISHED, 1, Duration::from_secs(10))
    })
    .await
    .unwrap();
    assert!(finished, "the request stopped when its client left");
    server.abort();
}

/// Work that is still running when its client's half-close arrives.
async fn echo_later(body: String) -> String {
    tokio::time::sleep(Duration::from_millis(300)).await;
    format!("got {body}")
}

/// A client that sends its whole request and then half-closes
/// (`shutdown(SHUT_WR)`, as some client libraries do to say "that is all")
/// is still answered: before, the request ran (and a payment was made)
/// but the connection was closed without the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_half_closes_after_its_request_is_answered() {
    let router = Router::new().route("/echo", axum::routing::post(echo_later));
    let (address, server) = support::serve_on_a_free_port(router, HEADER_READ_TIMEOUT);
    let answer = tokio::task::spawn_blocking(move || {
        let mut client = support::connect(&address);
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        client
            .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap();
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer:?}");
    assert!(answer.ends_with("got hello"), "{answer:?}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_request_is_answered_500_and_the_connection_stays_up() {
    let router = Router::new().route("/panics", get(panics));
    let (address, server) = support::serve_on_a_free_port(router, HEADER_READ_TIMEOUT);
    let answers = tokio::task::spawn_blocking(move || {
        let mut client = support::connect(&address);
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answers = Vec::new();
        for path in ["/panics", "/panics"] {
            write!(client, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut buffer = [0u8; 1024];
            let read = client.read(&mut buffer).unwrap();
            answers.push(String::from_utf8_lossy(&buffer[..read]).into_owned());
        }
        answers
    })
    .await
    .unwrap();
    for answer in &answers {
        assert!(answer.starts_with("HTTP/1.1 500"), "{answers:?}");
    }
    server.abort();
}
