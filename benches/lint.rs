//! Lint speed and memory on the corpus, each beside a bare saphyr parse of
//! the same file measured in the same run.
//!
//! Run: `cargo bench --bench lint` (the corpus beside the project, or set
//! `IDEMGEN_CORPUS`). Prints a Markdown table; ratios are what matter, since
//! absolute times depend on the machine.
//!
//! Targets: lint ≤ 1.5× the bare parse; Stripe copied 8× takes ≤ 9× the
//! time of 1×; peak memory ≤ 100 MiB on Stripe.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use idemgen_lint::{LintOptions, lint};
use idemgen_spec::Workspace;
use saphyr::LoadableYamlNode;

const RUNS: usize = 7;

fn main() {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--peak-memory") {
        // Child mode: lint one file, then report this process's peak RSS.
        let path = PathBuf::from(args.next().expect("a file"));
        let workspace = Workspace::load(&path).expect("loads");
        black_box(lint(&workspace, &LintOptions::default()));
        println!("{}", peak_rss_kib());
        return;
    }
    let corpus = std::env::var_os("IDEMGEN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"))
        .join("specs");
    let scratch = tempfile::tempdir().expect("a temp dir");
    let stripe = corpus.join("stripe-spec3.yaml");
    let mut files: Vec<(String, PathBuf)> = [
        "stripe-spec3.yaml",
        "github-api.github.com.json",
        "openai-openapi.yaml",
    ]
    .iter()
    .map(|name| (name.to_string(), corpus.join(name)))
    .collect();
    for copies in [2, 4, 8] {
        let path = scratch.path().join(format!("stripe-x{copies}.yaml"));
        std::fs::write(
            &path,
            scale_paths(&std::fs::read_to_string(&stripe).expect("stripe"), copies),
        )
        .unwrap();
        files.push((format!("stripe ×{copies}"), path));
    }

    println!("| file | size | bare saphyr parse | idemgen lint | lint / parse | peak RSS |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut stripe_lint = None;
    for (name, path) in &files {
        let text = std::fs::read_to_string(path).expect("readable");
        let parse = median(|| {
            black_box(saphyr::Yaml::load_from_str(&text).expect("parses"));
        });
        let linted = median(|| {
            let workspace = Workspace::load(path).expect("loads");
            black_box(lint(&workspace, &LintOptions::default()));
        });
        let memory = peak_memory_of_lint(path);
        if name == "stripe-spec3.yaml" {
            stripe_lint = Some(linted);
        }
        println!(
            "| {name} | {:.1} MB | {:.0} ms | {:.0} ms | {:.2}× | {:.0} MiB |",
            text.len() as f64 / 1e6,
            ms(parse),
            ms(linted),
            linted.as_secs_f64() / parse.as_secs_f64(),
            memory as f64 / 1024.0
        );
        if let (Some(base), Some(copies)) = (stripe_lint, name.strip_prefix("stripe ×")) {
            println!(
                "|   ↳ {copies}× input vs 1× | | | | {:.2}× time | |",
                linted.as_secs_f64() / base.as_secs_f64()
            );
        }
    }
}

/// Copies every path item `copies` times under `/copyN` prefixes.
fn scale_paths(text: &str, copies: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|line| *line == "paths:")
        .expect("a paths section")
        + 1;
    let end = lines[start..]
        .iter()
        .position(|line| !line.is_empty() && !line.starts_with(' '))
        .map_or(lines.len(), |offset| start + offset);
    let mut out: Vec<String> = lines[..end].iter().map(|line| line.to_string()).collect();
    for copy in 1..copies {
        for line in &lines[start..end] {
            let renamed = match line.strip_prefix("  ") {
                Some(key) if !key.starts_with(' ') => {
                    let quote = if key.starts_with(['"', '\'']) {
                        &key[..1]
                    } else {
                        ""
                    };
                    format!("  {quote}/copy{copy}{}", &key[quote.len()..])
                }
                _ => line.to_string(),
            };
            out.push(renamed);
        }
    }
    out.extend(lines[end..].iter().map(|line| line.to_string()));
    out.join("\n")
}

fn median(mut run: impl FnMut()) -> Duration {
    run(); // warm the page cache and the allocator
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Peak RSS (KiB) of a fresh process that loads and lints `path`.
fn peak_memory_of_lint(path: &Path) -> u64 {
    let output = Command::new(std::env::current_exe().unwrap())
        .arg("--peak-memory")
        .arg(path)
        .output()
        .expect("runs itself");
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
