//! Sending requests safely: loopback only unless allowed, no redirects
//! followed, a timeout on every request, a total request budget and a
//! deadline for the whole run.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ureq::http::{self, Uri};

/// Largest response body read; a longer one is cut (and then differs).
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
    pub body: Vec<u8>,
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

    /// `429 Too Many Requests` (plus `Retry-After: 1` when present).
    pub fn describe(&self) -> String {
        let mut text = format!("{} {}", self.status, reason(self.status));
        if let Some(value) = self.header("retry-after") {
            text.push_str(&format!(" (Retry-After: {value})"));
        }
        text.trim_end().to_string()
    }

    /// The body as text for evidence: at most 160 characters, one line.
    pub fn excerpt(&self) -> String {
        excerpt(&self.body)
    }
}

pub fn excerpt(body: &[u8]) -> String {
    if body.is_empty() {
        return "(empty body)".into();
    }
    let text = String::from_utf8_lossy(body);
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 160 {
        format!("{}…", one_line.chars().take(160).collect::<String>())
    } else {
        one_line
    }
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

    pub fn send(&self, outgoing: &Outgoing) -> Result<Answer, SendError> {
        if Instant::now() >= self.deadline {
            return Err(SendError::Deadline);
        }
        if self.sent.fetch_add(1, Ordering::Relaxed) >= self.max_requests {
            return Err(SendError::Budget(self.max_requests));
        }
        let instance = self.turn.fetch_add(1, Ordering::Relaxed) % self.bases.len();
        let mut builder = http::Request::builder()
            .method(outgoing.method.as_str())
            .uri(format!("{}{}", self.bases[instance], outgoing.target));
        for (name, value) in &outgoing.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(outgoing.body.clone().unwrap_or_default())
            .map_err(|error| SendError::Transport(format!("cannot build the request: {error}")))?;
        // With several instances, say which one did not answer.
        let lost = |why: String| {
            SendError::Transport(if self.bases.len() < 2 {
                why
            } else {
                format!("{} {why}", self.bases[instance])
            })
        };
        let sent = self.started.elapsed();
        let response = self
            .agent
            .run(request)
            .map_err(|error| lost(error.to_string()))?;
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
        let body = response
            .into_body()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
            .map_err(|error| lost(format!("reading the answer: {error}")))?;
        Ok(Answer {
            status,
            headers,
            body,
            instance,
            sent,
            received: self.started.elapsed(),
        })
    }
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
