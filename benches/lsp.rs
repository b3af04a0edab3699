//! Edit → diagnostics latency of `idemgen lsp`, driven over stdio as an
//! editor drives it, beside a bare saphyr parse of the same file measured
//! in the same run.
//!
//! Run: `cargo bench --bench lsp` (the corpus beside the project, or set
//! `IDEMGEN_CORPUS`). For each spec: open it, then make repeated small
//! incremental edits (the `info.version` value), each timed from sending
//! `didChange` to receiving the `publishDiagnostics` of that version; then
//! a burst of edits sent back to back (they coalesce) and the server's
//! memory after it. Prints a Markdown table; the ratio is what matters.
//!
//! Targets: median edit → diagnostics ≤ 1.5× the bare parse and < 150 ms on
//! Stripe; memory bounded across hundreds of edits.

#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lsp_client::{Client, uri};
use saphyr::LoadableYamlNode;
use serde_json::{Value, json};

/// Timed edits per spec (the median is reported).
const EDITS: usize = 21;
/// Edits sent back to back before memory is read.
const BURST: usize = 300;
const PARSE_RUNS: usize = 7;

fn main() {
    let corpus = std::env::var_os("IDEMGEN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
        .join("specs");
    // The URI an editor sends names the file without `..`.
    let corpus = corpus.canonicalize().unwrap_or(corpus);
    println!(
        "| file | size | bare saphyr parse | open → diagnostics | edit → diagnostics (median of {EDITS}) | edit / parse | RSS after open | RSS after {BURST} more edits |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for name in ["stripe-spec3.yaml", "github-api.github.com.json"] {
        let path = corpus.join(name);
        let Ok(text) = std::fs::read_to_string(&path) else {
            println!(
                "SKIPPED: {} is not there (set IDEMGEN_CORPUS)",
                path.display()
            );
            continue;
        };
        bench(name, &path, &text);
    }
}

fn bench(name: &str, path: &Path, text: &str) {
    let parse = median_of(PARSE_RUNS, || {
        let start = Instant::now();
        black_box(saphyr::Yaml::load_from_str(text).expect("parses"));
        start.elapsed()
    });
    let root = tempfile::tempdir().expect("a temp dir");
    let mut client = Client::start(root.path(), json!({}));
    let uri = uri(path);
    let started = Instant::now();
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
    );
    published(&mut client, 1);
    let open = started.elapsed();
    let rss_open = memory_kib(client.pid(), "VmRSS");

    let mut edit = VersionEdit::new(text, &uri);
    let mut version = 1;
    let mut times = Vec::new();
    for _ in 0..EDITS {
        version += 1;
        let change = edit.next(version);
        let start = Instant::now();
        client.notify("textDocument/didChange", change);
        published(&mut client, version);
        times.push(start.elapsed());
    }
    let edited = median_of(times.len(), {
        let mut times = times.into_iter();
        move || times.next().expect("one per run")
    });
    for _ in 0..BURST {
        version += 1;
        let change = edit.next(version);
        client.notify("textDocument/didChange", change);
    }
    published(&mut client, version);
    let rss_burst = memory_kib(client.pid(), "VmRSS");
    println!(
        "| {name} | {:.1} MB | {:.0} ms | {:.0} ms | {:.0} ms | {:.2}× | {:.0} MiB | {:.0} MiB |",
        text.len() as f64 / 1e6,
        ms(parse),
        ms(open),
        ms(edited),
        edited.as_secs_f64() / parse.as_secs_f64(),
        rss_open as f64 / 1024.0,
        rss_burst as f64 / 1024.0,
    );
    client.notifications.clear();
    drop(client);
}

/// Waits for the diagnostics of `version`, dropping older ones.
fn published(client: &mut Client, version: i64) -> Value {
    let found = client.wait_for(|message| {
        message["method"] == "textDocument/publishDiagnostics"
            && message["params"]["version"] == version
    });
    client.notifications.clear();
    found
}

/// Rewrites the value of the first `version` key (`info.version`) in place.
struct VersionEdit {
    uri: String,
    line: u32,
    character: u32,
    current: String,
}

impl VersionEdit {
    fn new(text: &str, uri: &str) -> VersionEdit {
        let key = text
            .find("\n  version: ")
            .map(|at| at + "\n  version: ".len())
            .or_else(|| {
                text.find("\"version\": ")
                    .map(|at| at + "\"version\": ".len())
            })
            .expect("an info.version");
        let end = key + text[key..].find([',', '\n', '\r']).expect("the value ends");
        let line_start = text[..key].rfind('\n').map_or(0, |at| at + 1);
        VersionEdit {
            uri: uri.to_string(),
            line: text[..key].matches('\n').count() as u32,
            character: text[line_start..key].encode_utf16().count() as u32,
            current: text[key..end].to_string(),
        }
    }

    fn next(&mut self, version: i64) -> Value {
        let replacement = format!("\"bench-{version}\"");
        let change = json!({
            "textDocument": {"uri": self.uri, "version": version},
            "contentChanges": [{
                "range": {
                    "start": {"line": self.line, "character": self.character},
                    "end": {"line": self.line, "character": self.character + self.current.encode_utf16().count() as u32},
                },
                "text": replacement,
            }],
        });
        self.current = replacement;
        change
    }
}

fn median_of(runs: usize, mut run: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| run()).collect();
    times.sort();
    times[runs / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// A field of `/proc/PID/status`, in KiB (0 where there is no /proc).
fn memory_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .trim_start_matches(':')
                    .trim()
                    .trim_end_matches(" kB")
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}
