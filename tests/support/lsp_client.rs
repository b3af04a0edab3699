//! A minimal LSP client for the tests: spawns `idemgen lsp`, frames
//! JSON-RPC over its stdio, and keeps the notifications it sends. Shared
//! by `tests/it/lsp.rs` and `benches/lsp.rs`, which each use part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Longest wait for any one answer: a hang fails the test instead of
/// blocking it.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Notifications seen while waiting for something else.
    pub notifications: Vec<Value>,
    next_id: i64,
}

impl Client {
    /// Starts the server and initializes it with `root` as the workspace
    /// and these client capabilities.
    pub fn start(root: &Path, capabilities: Value) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_idemgen"))
            .arg("lsp")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("idemgen lsp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_frame(&mut reader) {
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        let mut client = Client {
            child,
            stdin,
            messages,
            notifications: Vec::new(),
            next_id: 0,
        };
        let result = client.request(
            "initialize",
            json!({"processId": null, "rootUri": uri(root), "capabilities": capabilities}),
        );
        assert!(
            result["result"]["capabilities"]["hoverProvider"] == true,
            "{result}"
        );
        client.notify("initialized", json!({}));
        client
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send_raw(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&body.to_string());
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(&body.to_string());
        self.wait_for(|message| message["id"] == id && message.get("method").is_none())
    }

    /// The next message that `wanted` accepts; others are kept as
    /// notifications (and requests from the server are answered).
    pub fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.notifications.iter().position(&wanted) {
            return self.notifications.remove(at);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match self.messages.recv_timeout(left) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) => panic!("no answer within {PATIENCE:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
            };
            if wanted(&message) {
                return message;
            }
            if message.get("id").is_some() && message.get("method").is_some() {
                // A request from the server (registerCapability): accept it.
                let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": null});
                self.send_raw(&reply.to_string());
                continue;
            }
            self.notifications.push(message);
        }
    }

    /// The next diagnostics published for `uri`.
    pub fn diagnostics(&mut self, uri: &str) -> Value {
        self.wait_for(|message| {
            message["method"] == "textDocument/publishDiagnostics"
                && message["params"]["uri"] == uri
        })["params"]
            .clone()
    }

    pub fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
        );
    }

    /// `shutdown` then `exit`; returns the exit code.
    pub fn stop(mut self) -> i32 {
        let answer = self.request("shutdown", Value::Null);
        assert!(answer.get("error").is_none(), "{answer}");
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_frame(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length: ") {
            length = value.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// The `file:` URI of a path (absolute, percent-encoded).
pub fn uri(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap();
    let mut text = String::from("file://");
    for byte in absolute.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                text.push(byte as char)
            }
            other => text.push_str(&format!("%{other:02X}")),
        }
    }
    text
}

/// Applies LSP text edits (ranges in UTF-16 units; the test files are
/// ASCII, so units are bytes) to `text`.
pub fn apply_edits(text: &str, edits: &[Value]) -> String {
    let offset = |position: &Value| {
        let line = position["line"].as_u64().unwrap() as usize;
        let character = position["character"].as_u64().unwrap() as usize;
        let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
        start + character
    };
    let mut edits: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            (
                offset(&edit["range"]["start"]),
                offset(&edit["range"]["end"]),
                edit["newText"].as_str().unwrap(),
            )
        })
        .collect();
    edits.sort_by_key(|(start, end, _)| std::cmp::Reverse((*start, *end)));
    let mut out = text.to_string();
    for (start, end, new_text) in edits {
        out.replace_range(start..end, new_text);
    }
    out
}
