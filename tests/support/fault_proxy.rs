//! A TCP proxy in front of a service, for the client tests: it counts the
//! connections (one per attempt: each misbehaviour below closes its
//! connection) with the time each opened, and misbehaves on the first ones
//! as told.

// Each test target that includes this file uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What the proxy does with the first `times` connections; later ones
/// pass through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Pass every connection through.
    None,
    /// Forward the request, wait for the whole head of the service's
    /// answer, then close the client's connection without forwarding it:
    /// the service did the work and answered, the client never hears.
    DropAfterAnswer { times: usize },
    /// Answer `503 Service Unavailable` without asking the service.
    Unavailable { times: usize },
}

/// A running proxy: its base URL and the requests it saw.
pub struct FaultProxy {
    pub base: String,
    requests: Requests,
}

/// When each request arrived, in order.
type Requests = Arc<Mutex<Vec<Instant>>>;

impl FaultProxy {
    /// A proxy on a free loopback port in front of `upstream` (`host:port`).
    pub fn start(upstream: &str, fault: Fault) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let requests: Requests = Arc::new(Mutex::new(Vec::new()));
        let upstream = upstream.to_string();
        let seen = requests.clone();
        thread::spawn(move || {
            for (index, client) in listener.incoming().enumerate() {
                let Ok(client) = client else { return };
                let (upstream, seen) = (upstream.clone(), seen.clone());
                thread::spawn(move || serve(client, &upstream, fault, index, &seen));
            }
        });
        FaultProxy { base, requests }
    }

    /// When each request arrived, in order. A client sends one request at
    /// a time per connection, and may reuse a connection for the next.
    pub fn requests(&self) -> Vec<Instant> {
        self.requests.lock().unwrap().clone()
    }
}

/// Serves one connection; `index` counts connections.
fn serve(client: TcpStream, upstream: &str, fault: Fault, index: usize, seen: &Requests) {
    match fault {
        Fault::Unavailable { times } if index < times => {
            let mut client = client;
            seen.lock().unwrap().push(Instant::now());
            // The whole request, so that closing does not reset the
            // connection before the client reads the answer.
            read_request(&mut client);
            let _ = client.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            let _ = client.shutdown(Shutdown::Both);
        }
        Fault::DropAfterAnswer { times } if index < times => {
            let Ok(mut server) = TcpStream::connect(upstream) else {
                return;
            };
            // The request goes through as it comes; the answer does not.
            let (from_client, to_server) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let seen = seen.clone();
            thread::spawn(move || forward_requests(from_client, to_server, &seen));
            read_response_head(&mut server);
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
        _ => {
            let Ok(server) = TcpStream::connect(upstream) else {
                return;
            };
            pipe(client, server, seen);
        }
    }
}

/// Copies both ways until either side closes.
fn pipe(client: TcpStream, server: TcpStream, seen: &Requests) {
    let (client_read, server_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let seen = seen.clone();
    let upstream = thread::spawn(move || forward_requests(client_read, server_write, &seen));
    let (mut server_read, mut client_write) = (server, client);
    let _ = std::io::copy(&mut server_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Both);
    let _ = upstream.join();
}

/// How a request line ends.
const REQUEST_LINE_END: &[u8] = b" HTTP/1.1\r\n";

/// Copies the client's bytes to the service, noting the time of each
/// request line (` HTTP/1.1` and its line end; the bodies here are JSON,
/// which holds no line end), then half-closes the service's side.
fn forward_requests(mut from: TcpStream, mut to: TcpStream, seen: &Requests) {
    let mut chunk = [0u8; 8192];
    loop {
        let read = match from.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let lines = chunk[..read]
            .windows(REQUEST_LINE_END.len())
            .filter(|window| *window == REQUEST_LINE_END)
            .count();
        seen.lock()
            .unwrap()
            .extend(std::iter::repeat_n(Instant::now(), lines));
        if to.write_all(&chunk[..read]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Reads a request: its head and the `content-length` bytes after it.
fn read_request(stream: &mut TcpStream) {
    let mut seen = read_head(stream);
    let head_end = seen
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map_or(seen.len(), |at| at + 4);
    let head = String::from_utf8_lossy(&seen[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    let mut chunk = [0u8; 1024];
    while seen.len() < head_end + length {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(read) => seen.extend_from_slice(&chunk[..read]),
        }
    }
}

fn read_response_head(stream: &mut TcpStream) {
    read_head(stream);
}

/// Reads until the blank line that ends an HTTP head (at most 30 s); what
/// was read.
fn read_head(stream: &mut TcpStream) -> Vec<u8> {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    while !seen.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(read) => seen.extend_from_slice(&chunk[..read]),
        }
    }
    seen
}
