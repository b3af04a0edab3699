//! JSON-RPC over stdio with `Content-Length` framing.
//!
//! `lsp-server`'s own stdio transport ends its reader thread on the first
//! malformed message, which would leave the editor talking to a dead
//! server. This one reads the frames itself: a body that is not JSON gets a
//! `ParseError` response, JSON that is not a JSON-RPC message an
//! `InvalidRequest` one, and reading goes on with the next frame.

use std::io::{self, BufRead, Write};
use std::thread;

use crossbeam_channel::{Receiver, Sender, bounded};
use lsp_server::{ErrorCode, Message};
use serde_json::{Value, json};

/// Largest message body accepted: a 32 MiB spec, escaped, fits.
const MAX_BODY_BYTES: usize = 96 * 1024 * 1024;

/// The longest header line kept (`Content-Length: …` takes 30 bytes).
const MAX_HEADER_LINE_BYTES: usize = 8 * 1024;

/// Messages queued each way between the threads. When a client stops
/// reading, the writer blocks on the full pipe, then whoever answers
/// blocks here, and then the reader stops reading: the client's own
/// writes block, as they would with any server, instead of the answers
/// piling up in memory. Enough for a burst of edits to coalesce.
const QUEUED_MESSAGES: usize = 64;

/// What the reader hands the server loop.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// A frame that is not a JSON-RPC message: already answered with an
    /// error response, logged here for the server.
    Malformed(String),
}

/// What the writer sends: a message, or a raw JSON-RPC object (an error
/// response whose `id` is `null`, which `lsp_server::Response` cannot say).
#[derive(Debug)]
pub enum Outgoing {
    Message(Message),
    Raw(Value),
}

impl From<Message> for Outgoing {
    fn from(message: Message) -> Self {
        Outgoing::Message(message)
    }
}

pub struct Transport {
    pub incoming: Receiver<Incoming>,
    pub outgoing: Sender<Outgoing>,
    writer: thread::JoinHandle<()>,
}

impl Transport {
    /// Starts the reader and writer threads on stdin and stdout.
    pub fn stdio() -> Transport {
        Transport::over(io::BufReader::new(io::stdin()), io::stdout())
    }

    /// The same threads on any byte stream pair: stdio for editors, memory
    /// for the fuzz targets.
    pub fn over(
        mut input: impl BufRead + Send + 'static,
        mut output: impl Write + Send + 'static,
    ) -> Transport {
        let (outgoing, to_write) = bounded::<Outgoing>(QUEUED_MESSAGES);
        let writer = thread::Builder::new()
            .name("lsp-writer".into())
            .spawn(move || {
                for message in to_write {
                    let written = match message {
                        Outgoing::Message(message) => message.write(&mut output),
                        Outgoing::Raw(value) => write_frame(&mut output, &value.to_string()),
                    };
                    if written.is_err() {
                        break; // the client is gone
                    }
                }
            })
            .expect("spawning the writer thread");
        let (to_server, incoming) = bounded::<Incoming>(QUEUED_MESSAGES);
        let replies = outgoing.clone();
        thread::Builder::new()
            .name("lsp-reader".into())
            .spawn(move || read_loop(&mut input, &to_server, &replies))
            .expect("spawning the reader thread");
        Transport {
            incoming,
            outgoing,
            writer,
        }
    }

    /// Flushes what is queued for the client and waits for the writer.
    /// The reader, if it still runs, holds a sender of answers: with the
    /// server's queue gone its next message ends it.
    pub fn finish(self) {
        drop(self.incoming);
        drop(self.outgoing);
        let _ = self.writer.join();
    }
}

/// Reads frames until end of input or `exit`.
fn read_loop(input: &mut impl BufRead, to_server: &Sender<Incoming>, replies: &Sender<Outgoing>) {
    loop {
        let incoming = match read_frame(input) {
            Ok(None) | Err(_) => return,
            Ok(Some(Frame::Body(body))) => decode(&body, replies),
            Ok(Some(Frame::Bad { why, body })) => {
                // Answered before the body is skipped: the client may be
                // waiting for the answer, not sending that body.
                let _ = replies.send(error_without_id(ErrorCode::ParseError, &why));
                if to_server.send(Incoming::Malformed(why)).is_err() || skip(input, body).is_err() {
                    return;
                }
                continue;
            }
        };
        let is_exit =
            matches!(&incoming, Incoming::Message(Message::Notification(n)) if n.method == "exit");
        if to_server.send(incoming).is_err() || is_exit {
            return;
        }
    }
}

/// What one frame's header says.
enum Frame {
    Body(Vec<u8>),
    /// A header that is bad, and the length of the body that follows it
    /// (to be skipped; 0 when it gave none).
    Bad {
        why: String,
        body: usize,
    },
}

/// One frame, `None` at end of input.
fn read_frame(input: &mut impl BufRead) -> io::Result<Option<Frame>> {
    let mut length: Option<usize> = None;
    let mut bad_header = None;
    let mut line = Vec::new();
    let mut saw_header = false;
    loop {
        line.clear();
        let (read, overlong) = read_header_line(input, &mut line)?;
        if read == 0 {
            return if saw_header {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "end of input inside a header",
                ))
            } else {
                Ok(None)
            };
        }
        let line = String::from_utf8_lossy(&line);
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if saw_header {
                break;
            }
            continue; // stray blank line between frames
        }
        saw_header = true;
        if overlong {
            bad_header = Some(format!(
                "a header line longer than {MAX_HEADER_LINE_BYTES} bytes"
            ));
            continue;
        }
        // The body of a frame without a length was not skipped, and ends
        // where the next frame's header begins: the header is taken from
        // there (the last match: the body may hold the words too), and what
        // came before it was that body, not headers of this frame, so one
        // bad frame costs only itself.
        let header = match header.to_ascii_lowercase().rfind("content-length:") {
            Some(at) if at > 0 && header.is_char_boundary(at) => {
                bad_header = None;
                &header[at..]
            }
            _ => header,
        };
        match header.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(bytes) => length = Some(bytes),
                    Err(_) => bad_header = Some(format!("bad Content-Length `{}`", value.trim())),
                }
            }
            Some(_) => {} // Content-Type and other headers are ignored
            None => bad_header = Some(format!("malformed header line `{header}`")),
        }
    }
    let (why, body) = match (length, bad_header) {
        (Some(length), None) if length <= MAX_BODY_BYTES => {
            let mut body = vec![0; length];
            input.read_exact(&mut body)?;
            return Ok(Some(Frame::Body(body)));
        }
        (Some(length), None) => (
            format!("a {length}-byte message is larger than the {MAX_BODY_BYTES}-byte limit"),
            length,
        ),
        (Some(length), Some(why)) => (why, length),
        (None, why) => (why.unwrap_or_else(|| "no Content-Length header".into()), 0),
    };
    Ok(Some(Frame::Bad { why, body }))
}

/// Reads one header line into `line`, at most [`MAX_HEADER_LINE_BYTES`] of
/// it: the rest of a longer line is read and dropped, so a line without end
/// cannot fill memory. Returns the bytes kept and whether the line was cut.
fn read_header_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<(usize, bool)> {
    let read = io::Read::take(&mut *input, MAX_HEADER_LINE_BYTES as u64).read_until(b'\n', line)?;
    if read < MAX_HEADER_LINE_BYTES || line.ends_with(b"\n") {
        return Ok((read, false));
    }
    loop {
        let buffer = input.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        match buffer.iter().position(|&byte| byte == b'\n') {
            Some(newline) => {
                input.consume(newline + 1);
                break;
            }
            None => {
                let all = buffer.len();
                input.consume(all);
            }
        }
    }
    Ok((read, true))
}

fn skip(input: &mut impl BufRead, bytes: usize) -> io::Result<()> {
    io::copy(&mut io::Read::take(input, bytes as u64), &mut io::sink()).map(drop)
}

/// A body as a message; anything else is answered here.
fn decode(body: &[u8], replies: &Sender<Outgoing>) -> Incoming {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(error) => {
            let why = format!("the message is not JSON: {error}");
            let _ = replies.send(error_without_id(ErrorCode::ParseError, &why));
            return Incoming::Malformed(why);
        }
    };
    let id = value.get("id").cloned();
    match serde_json::from_value::<Message>(value) {
        // A request whose id is neither an integer nor a string (`1.5`,
        // `null`, `{}`) reads as a notification, which gets no answer:
        // it is an invalid request, answered with the id where JSON-RPC
        // allows one (a number or a string), else `null`.
        Ok(Message::Notification(notification)) if id.is_some() => {
            let why = format!(
                "the request `{}` has an id that is not a 32-bit integer or a string",
                notification.method
            );
            let id = id.filter(|id| id.is_number() || id.is_string());
            let _ = replies.send(Outgoing::Raw(json!({
                "jsonrpc": "2.0",
                "id": id.unwrap_or(Value::Null),
                "error": {"code": ErrorCode::InvalidRequest as i32, "message": why},
            })));
            Incoming::Malformed(why)
        }
        Ok(message) => Incoming::Message(message),
        Err(error) => {
            let why = format!("not a JSON-RPC request, response or notification: {error}");
            let _ = replies.send(Outgoing::Raw(json!({
                "jsonrpc": "2.0",
                "id": id.unwrap_or(Value::Null),
                "error": {"code": ErrorCode::InvalidRequest as i32, "message": why},
            })));
            Incoming::Malformed(why)
        }
    }
}

fn error_without_id(code: ErrorCode, message: &str) -> Outgoing {
    Outgoing::Raw(json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code as i32, "message": message},
    }))
}

fn write_frame(out: &mut impl Write, body: &str) -> io::Result<()> {
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;

    fn frames(text: &str) -> (Vec<Incoming>, Vec<Outgoing>) {
        let (to_server, incoming) = unbounded();
        let (replies, outgoing) = unbounded();
        read_loop(&mut text.as_bytes(), &to_server, &replies);
        drop((to_server, replies));
        (incoming.iter().collect(), outgoing.iter().collect())
    }

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn a_bad_body_is_answered_and_reading_goes_on() {
        let input = frame("{not json")
            + &frame(r#"{"jsonrpc":"2.0","id":7}"#)
            + &frame(r#"{"jsonrpc":"2.0","id":8,"method":"shutdown"}"#);
        let (incoming, outgoing) = frames(&input);
        assert_eq!(incoming.len(), 3);
        assert!(
            matches!(&incoming[2], Incoming::Message(Message::Request(r)) if r.method == "shutdown")
        );
        let Outgoing::Raw(parse) = &outgoing[0] else {
            panic!("{outgoing:?}")
        };
        assert_eq!(parse["error"]["code"], -32700);
        assert_eq!(parse["id"], Value::Null);
        let Outgoing::Raw(invalid) = &outgoing[1] else {
            panic!("{outgoing:?}")
        };
        assert_eq!(invalid["error"]["code"], -32600);
        assert_eq!(invalid["id"], 7);
    }

    #[test]
    fn a_header_line_without_end_is_cut_and_reading_goes_on() {
        let input = format!("{}\r\n\r\n", "A".repeat(1 << 20))
            + &frame(r#"{"jsonrpc":"2.0","method":"exit"}"#);
        let (incoming, outgoing) = frames(&input);
        assert!(
            matches!(&incoming[0], Incoming::Malformed(why) if why == "a header line longer than 8192 bytes"),
            "{incoming:?}"
        );
        assert!(
            matches!(&incoming[1], Incoming::Message(Message::Notification(n)) if n.method == "exit")
        );
        assert_eq!(outgoing.len(), 1);
    }

    #[test]
    fn a_frame_without_a_length_costs_only_itself() {
        let input = r#"X-Other: 1

{"jsonrpc":"2.0","id":1,"method":"shutdown"}"#
            .replace('\n', "\r\n")
            + &frame(r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#)
            + &frame(r#"{"jsonrpc":"2.0","method":"exit"}"#);
        let (incoming, outgoing) = frames(&input);
        assert!(
            matches!(&incoming[0], Incoming::Malformed(why) if why == "no Content-Length header"),
            "{incoming:?}"
        );
        assert!(
            matches!(&incoming[1], Incoming::Message(Message::Request(r)) if r.id == 2.into()),
            "{incoming:?}"
        );
        assert!(
            matches!(&incoming[2], Incoming::Message(Message::Notification(n)) if n.method == "exit")
        );
        assert_eq!(outgoing.len(), 1);
    }

    #[test]
    fn a_request_whose_id_is_not_an_integer_or_a_string_is_invalid() {
        let input = [r#"1.5"#, "null", "{}", "true", "1180591620717411303424"]
            .iter()
            .map(|id| {
                frame(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"shutdown"}}"#
                ))
            })
            .collect::<String>();
        let (incoming, outgoing) = frames(&input);
        assert!(
            incoming
                .iter()
                .all(|message| matches!(message, Incoming::Malformed(_)))
        );
        let ids: Vec<Value> = outgoing
            .iter()
            .map(|reply| {
                let Outgoing::Raw(reply) = reply else {
                    panic!("{reply:?}")
                };
                assert_eq!(reply["error"]["code"], -32600, "{reply}");
                reply["id"].clone()
            })
            .collect();
        assert_eq!(ids.len(), 5);
        assert_eq!(ids[0], json!(1.5));
        assert_eq!(&ids[1..4], &[Value::Null, Value::Null, Value::Null]);
        assert!(ids[4].is_number(), "{:?}", ids[4]);
    }

    #[test]
    fn a_frame_without_a_length_whose_body_has_lines_and_the_words_costs_only_itself() {
        let input = "X-Other: 1\r\n\r\n{\r\n\"headers\": {\"Content-Length: 7\": 1}}".to_string()
            + &frame(r#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#)
            + &frame(r#"{"jsonrpc":"2.0","method":"exit"}"#);
        let (incoming, _) = frames(&input);
        assert!(
            incoming.iter().any(
                |message| matches!(message, Incoming::Message(Message::Request(r)) if r.id == 2.into())
            ),
            "{incoming:?}"
        );
        assert!(matches!(
            incoming.last(),
            Some(Incoming::Message(Message::Notification(n))) if n.method == "exit"
        ));
    }

    #[test]
    fn a_bad_header_skips_its_body() {
        let input = "Content-Length: 5\r\nX: \r\nbogus\r\n\r\nhello".to_string()
            + &frame(r#"{"jsonrpc":"2.0","method":"exit"}"#);
        let (incoming, outgoing) = frames(&input);
        assert!(matches!(&incoming[0], Incoming::Malformed(_)));
        assert!(
            matches!(&incoming[1], Incoming::Message(Message::Notification(n)) if n.method == "exit")
        );
        assert_eq!(outgoing.len(), 1);
    }

    /// A client that sends `header` and then neither more nor hangs up.
    struct Stalls {
        header: io::Cursor<Vec<u8>>,
        until: Receiver<()>,
    }

    impl io::Read for Stalls {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            let read = self.header.read(buffer)?;
            if read == 0 {
                let _ = self.until.recv(); // blocks until the test lets go
            }
            Ok(read)
        }
    }

    /// The answer to a frame whose header is bad goes out when the header
    /// has been read, not once its body has: a client that waits for it
    /// (a billion-gigabyte length, a body never sent) is told at once.
    #[test]
    fn a_bad_frame_is_answered_before_its_body_is_skipped() {
        for header in [
            "Content-Length: 1000000000000000\r\n\r\n{}",
            "Content-Length: 500\r\nbogus\r\n\r\n{}",
        ] {
            let (release, until) = unbounded::<()>();
            let mut input = io::BufReader::new(Stalls {
                header: io::Cursor::new(header.as_bytes().to_vec()),
                until,
            });
            let (to_server, _incoming) = unbounded();
            let (replies, outgoing) = unbounded();
            let reader = thread::spawn(move || read_loop(&mut input, &to_server, &replies));
            let reply = outgoing.recv_timeout(std::time::Duration::from_secs(10));
            drop(release);
            reader.join().unwrap();
            let Ok(Outgoing::Raw(reply)) = reply else {
                panic!("{header:?}: no answer while the body is awaited: {reply:?}")
            };
            assert_eq!(reply["error"]["code"], -32700, "{reply}");
        }
    }
}
