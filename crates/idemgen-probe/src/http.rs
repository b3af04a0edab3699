//! Sending requests safely: loopback only unless allowed, no redirects
//! followed, a timeout on every request, a total request budget and a
//! deadline for the whole run.

use std::io::Read;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ureq::http::{self, Uri};

use crate::server_text::{BODY_CHARS, HEADER_CHARS, printable};

/// Largest response body read: a longer one is cut there and the answer
/// marked [`Answer::cut`], so the checks compare the first 1 MiB and the
/// evidence says the rest was not read.
const MAX_BODY_BYTES: u64 = 1024 * 1024;

pub struct Outgoing {
    pub method: String,
    /// Path and query, appended to the base URL.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// At most [`MAX_BODY_BYTES`] of it.
    pub body: Vec<u8>,
    /// The body was longer than [`MAX_BODY_BYTES`] and `body` is its start.
    pub cut: bool,
    /// Index of the `--base-url` that answered.
    pub instance: usize,
    /// When it was sent and when the answer was complete, since the probe
    /// started.
    pub sent: Duration,
    pub received: Duration,
}

#[derive(Debug, Clone)]
pub enum SendError {
    /// `--max-requests` reached.
    Budget(usize),
    /// `--deadline` passed.
    Deadline,
    /// No answer: refused, reset, timed out.
    Transport(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Budget(max) => write!(
                out,
                "the request budget (--max-requests {max}) is spent; raise it or probe fewer operations"
            ),
            SendError::Deadline => {
                write!(out, "the probe's deadline (--deadline) passed; raise it")
            }
            SendError::Transport(why) => write!(out, "no answer: {why}"),
        }
    }
}

pub struct Client {
    agent: ureq::Agent,
    /// The instances, each a base URL without a trailing `/`.
    bases: Vec<String>,
    /// Round-robin position: request N goes to instance N mod len.
    turn: AtomicUsize,
    started: Instant,
    deadline: Instant,
    /// `--timeout`, the longest one request may take.
    timeout: Duration,
    sent: AtomicUsize,
    max_requests: usize,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A header's value as a report may show it ([`shown_header`]).
    pub fn shown_header(&self, name: &str) -> Option<String> {
        self.header(name).map(shown_header)
    }

    /// `429 Too Many Requests` (plus `Retry-After: 1` when present).
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", self.status, reason(self.status));
        if let Some(value) = self.shown_header("retry-after") {
            text.push_str(&format!(" (Retry-After: {value})"));
        }
        text.trim_end().to_string()
    }

    /// Whether the two bodies are the same, as far as the probe read them:
    /// a body cut at 1 MiB is not the same as one that ended there.
    pub fn same_body(&self, other: &Answer) -> bool {
        self.cut == other.cut && self.body == other.body
    }

    /// The body as text for evidence ([`excerpt`]), saying when the probe
    /// read only its first 1 MiB.
    pub fn excerpt(&self) -> String {
        let excerpt = excerpt(&self.body);
        if self.cut {
            format!("{excerpt} (only the first 1 MiB of a longer body was read)")
        } else {
            excerpt
        }
    }
}

/// A body as text for evidence: one line, at most [`BODY_CHARS`]
/// characters, made [`printable`].
pub fn excerpt(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    // Decoding only what can show keeps a 1 MiB body from being copied.
    let start = &body[..body.len().min(4 * BODY_CHARS + 4)];
    printable(&String::from_utf8_lossy(start), BODY_CHARS)
}

/// A header value from the service as a report may show it: one line, at
/// most [`HEADER_CHARS`] characters, made [`printable`].
pub fn shown_header(value: &str) -> String {
    printable(value, HEADER_CHARS)
}

impl Client {
    /// Checks every base URL (scheme, host, loopback) and that something
    /// listens there. Errors are usage errors (exit 2) naming the URL.
    pub fn connect(
        base_urls: &[String],
        allow_remote: bool,
        timeout: Duration,
        deadline: Duration,
        max_requests: usize,
    ) -> Result<Client, String> {
        if base_urls.is_empty() {
            return Err("give the service's address with --base-url".into());
        }
        for base_url in base_urls {
            check_base(base_url, allow_remote, timeout)?;
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // 0: a 3xx is an answer like any other, never followed (to
            // another host or at all).
            .max_redirects(0)
            .proxy(None)
            .timeout_global(Some(timeout))
            .user_agent(concat!("idemgen-probe/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let started = Instant::now();
        Ok(Client {
            agent,
            bases: base_urls
                .iter()
                .map(|base| base.trim_end_matches('/').to_string())
                .collect(),
            turn: AtomicUsize::new(0),
            started,
            deadline: started + deadline,
            timeout,
            sent: AtomicUsize::new(0),
            max_requests,
        })
    }

    pub fn requests_sent(&self) -> usize {
        self.sent.load(Ordering::Relaxed).min(self.max_requests)
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Time left before the probe's deadline.
    pub fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// The base URLs, in the order given.
    pub fn instances(&self) -> &[String] {
        &self.bases
    }

    /// ` from http://…` naming the instance that answered, or nothing when
    /// there is only one.
    pub fn from(&self, answer: &Answer) -> String {
        if self.bases.len() < 2 {
            return String::new();
        }
        format!(" from {}", self.bases[answer.instance])
    }

    /// Sends `outgoing` to the next instance in turn.
    pub fn send(&self, outgoing: &Outgoing) -> Result<Answer, SendError> {
        self.send_on(outgoing, None)
    }

    /// Sends `outgoing` to the instance at `instance` (an index into
    /// [`Client::instances`]), out of turn.
    pub fn send_to(&self, instance: usize, outgoing: &Outgoing) -> Result<Answer, SendError> {
        self.send_on(outgoing, Some(instance % self.bases.len()))
    }

    fn send_on(&self, outgoing: &Outgoing, instance: Option<usize>) -> Result<Answer, SendError> {
        if Instant::now() >= self.deadline {
            return Err(SendError::Deadline);
        }
        if self.sent.fetch_add(1, Ordering::Relaxed) >= self.max_requests {
            return Err(SendError::Budget(self.max_requests));
        }
        let instance = instance
            .unwrap_or_else(|| self.turn.fetch_add(1, Ordering::Relaxed) % self.bases.len());
        let mut builder = http::Request::builder()
            .method(outgoing.method.as_str())
            .uri(format!("{}{}", self.bases[instance], outgoing.target));
        for (name, value) in &outgoing.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(outgoing.body.clone().unwrap_or_default())
            .map_err(|error| SendError::Transport(format!("cannot build the request: {error}")))?;
        // No request outlives the deadline: the deadline bounds the whole
        // probe, the timeout each request.
        let left = self.deadline.saturating_duration_since(Instant::now());
        // With several instances, say which one did not answer; a request
        // the deadline cut short is out of time, not unanswered.
        let lost = |why: String| {
            if left < self.timeout && Instant::now() >= self.deadline {
                return SendError::Deadline;
            }
            SendError::Transport(if self.bases.len() < 2 {
                why
            } else {
                format!("{} {why}", self.bases[instance])
            })
        };
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(Some(self.timeout.min(left)))
            .build();
        let sent = self.started.elapsed();
        let response = self
            .agent
            .run(request)
            .map_err(|error| lost(transport_error(&error.to_string())))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect();
        // One byte past the limit tells a longer body from one that fits.
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_BODY_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|error| lost(transport_error(&format!("reading the answer: {error}"))))?;
        let cut = body.len() as u64 > MAX_BODY_BYTES;
        body.truncate(MAX_BODY_BYTES as usize);
        Ok(Answer {
            status,
            headers,
            body,
            cut,
            instance,
            sent,
            received: self.started.elapsed(),
        })
    }
}

/// Why a request got no answer, as a report may show it: the client's
/// message can quote what the service sent (a malformed status line).
fn transport_error(why: &str) -> String {
    printable(why, BODY_CHARS)
}

/// One `--base-url`: http, a host, no query, loopback unless allowed, and
/// something listening.
fn check_base(base_url: &str, allow_remote: bool, timeout: Duration) -> Result<(), String> {
    let uri: Uri = base_url.parse().map_err(|error| {
        format!("--base-url `{base_url}` is not a URL ({error}); e.g. http://127.0.0.1:8080")
    })?;
    let scheme = uri.scheme_str().unwrap_or("");
    let default_port = match scheme {
        "http" => 80,
        "https" if cfg!(feature = "https") => 443,
        "https" => {
            return Err(
                "this idemgen was built without TLS; probe the service over http on loopback, or rebuild with `--features https`"
                    .into(),
            );
        }
        _ => {
            return Err(format!(
                "--base-url `{base_url}` must start with http:// (e.g. http://127.0.0.1:8080)"
            ));
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| format!("--base-url `{base_url}` has no host"))?;
    if uri.query().is_some() {
        return Err(format!("--base-url `{base_url}` must not carry a query"));
    }
    let port = uri.port_u16().unwrap_or(default_port);
    let bare_host = host.trim_start_matches('[').trim_end_matches(']');
    let named_loopback = match bare_host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare_host.eq_ignore_ascii_case("localhost"),
    };
    let refuse = || {
        format!(
            "--base-url `{base_url}`: `{host}` is not a loopback address, and the probe sends real writes (payments, orders…); probe a local or test instance, or pass --allow-remote if you own the service and mean it"
        )
    };
    if !allow_remote && !named_loopback {
        return Err(refuse());
    }
    let addresses: Vec<SocketAddr> = (bare_host, port)
        .to_socket_addrs()
        .map_err(|error| format!("--base-url `{base_url}`: cannot resolve `{host}`: {error}"))?
        .collect();
    // `localhost` must also resolve to loopback only.
    if !allow_remote && !addresses.iter().all(|address| address.ip().is_loopback()) {
        return Err(refuse());
    }
    let reachable = addresses
        .iter()
        .any(|address| TcpStream::connect_timeout(address, timeout).is_ok());
    if !reachable {
        return Err(format!(
            "--base-url `{base_url}`: cannot connect to {host}:{port}: nothing answers there; start the service or fix the URL"
        ));
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        425 => "Too Early",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;

    use super::*;

    /// A server on loopback that answers every request with `answer` (or
    /// holds it unanswered when `None`); returns its base URL.
    fn serve(answer: Option<Vec<u8>>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let answer = answer.clone();
                std::thread::spawn(move || {
                    let mut head = Vec::new();
                    let mut byte = [0];
                    while !head.ends_with(b"\r\n\r\n") {
                        match stream.read(&mut byte) {
                            Ok(1) => head.push(byte[0]),
                            _ => return,
                        }
                    }
                    match answer {
                        Some(answer) => {
                            let _ = stream.write_all(&answer);
                        }
                        None => std::thread::sleep(Duration::from_secs(30)),
                    }
                });
            }
        });
        base
    }

    fn get() -> Outgoing {
        Outgoing {
            method: "GET".into(),
            target: "/".into(),
            headers: Vec::new(),
            body: None,
        }
    }

    fn answer_with(headers: &[(&str, &str)], body: &[u8]) -> Answer {
        Answer {
            status: 429,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            body: body.to_vec(),
            cut: false,
            instance: 0,
            sent: Duration::ZERO,
            received: Duration::ZERO,
        }
    }

    #[test]
    fn header_values_and_bodies_show_bounded_and_inert() {
        let hostile = format!("1\u{9b}31mC1RED \u{202e}evil{}", "9".repeat(60_000));
        let answer = answer_with(&[("Retry-After", &hostile)], hostile.as_bytes());
        let described = answer.describe();
        assert!(
            described.starts_with("429 Too Many Requests (Retry-After: 1 31mC1RED \u{FFFD}evil99")
        );
        assert!(described.ends_with("…)"), "{described}");
        let frame = "429 Too Many Requests (Retry-After: )".chars().count();
        assert_eq!(described.chars().count(), frame + HEADER_CHARS + 1);
        let excerpt = answer.excerpt();
        assert!(
            excerpt.starts_with("1 31mC1RED \u{FFFD}evil99"),
            "{excerpt}"
        );
        assert_eq!(excerpt.chars().count(), BODY_CHARS + 1);
        assert_eq!(
            answer.shown_header("retry-after"),
            Some(shown_header(&hostile))
        );
    }

    #[test]
    fn no_request_outlives_the_deadline() {
        let base = serve(None);
        let deadline = Duration::from_secs(1);
        let client =
            Client::connect(&[base], false, Duration::from_secs(20), deadline, 10).unwrap();
        let started = Instant::now();
        let error = client.send(&get()).unwrap_err();
        assert!(started.elapsed() < deadline * 4, "{:?}", started.elapsed());
        // Out of time, not a service that does not answer.
        assert!(matches!(error, SendError::Deadline), "{error}");
        assert!(matches!(client.send(&get()), Err(SendError::Deadline)));
    }

    #[test]
    fn a_body_over_the_limit_is_cut_and_says_so() {
        let limit = MAX_BODY_BYTES as usize;
        for (length, cut) in [(limit, false), (limit + 10, true)] {
            let mut response =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n").into_bytes();
            response.extend(std::iter::repeat_n(b'a', length));
            let answer = canned(response).send(&get()).unwrap();
            assert_eq!((answer.body.len(), answer.cut), (limit, cut));
            assert_eq!(
                answer.excerpt().contains("only the first 1 MiB"),
                cut,
                "{}",
                answer.excerpt()
            );
        }
    }

    /// A client of a server that answers every request with `response`.
    fn canned(response: Vec<u8>) -> Client {
        let base = serve(Some(response));
        Client::connect(
            &[base],
            false,
            Duration::from_secs(10),
            Duration::from_secs(20),
            10,
        )
        .unwrap()
    }

    #[test]
    fn a_transport_error_is_printable_whatever_the_server_sent() {
        let client = canned(b"HTTP/1.1 2\x1b[31m\xc2\x9b0 X\r\n\r\n".to_vec());
        let error = client.send(&get()).unwrap_err().to_string();
        assert!(
            error.chars().all(|c| !c.is_control()) && error.chars().count() < 200,
            "{error}"
        );
        assert!(error.contains("invalid response status"), "{error}");
        // This client names the fault without quoting the line; a message
        // that does quote the service is made inert and bounded all the
        // same.
        let quoted = transport_error(&format!(
            "bad status line `2\u{1b}[31m\u{9b}0 X{}`",
            "x".repeat(10_000)
        ));
        assert!(quoted.contains("[31m"), "{quoted}");
        assert!(
            quoted.chars().all(|c| !c.is_control()) && quoted.chars().count() <= BODY_CHARS + 1,
            "{quoted}"
        );
    }
}
