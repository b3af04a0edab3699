//! `idemgen probe`: attack a running service's idempotent operations and
//! report which promises of the contract hold.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::ValueEnum;

use super::input::{self, ConfigArgs};
use super::{EXIT_BAD_INPUT, EXIT_FINDINGS, duration_arg, print};
use idemgen_probe::observe::Observe;
use idemgen_probe::request::{RequestOptions, SetValue};
use idemgen_probe::{ProbeOptions, ReplayHeader, report};
use idemgen_spec::contract::profile::Profile;

#[derive(Clone, Copy, ValueEnum)]
pub enum ProbeFormat {
    Table,
    Json,
    Junit,
}

/// The help's list of checks, from the probe's registry: each check's
/// help lines, ids padded to one column (a longer id pushes only its first
/// line right).
fn checks_help() -> String {
    const ID_COLUMN: usize = 15;
    let mut help = String::from("Checks, per operation with x-idempotency:\n");
    for check in idemgen_probe::CHECKS {
        let (first, rest) = check
            .help
            .split_first()
            .expect("declare_check! takes one line or more");
        let width = ID_COLUMN.max(check.id.len() + 2);
        help.push_str(&format!("  {:width$}{first}\n", check.id));
        for line in rest {
            help.push_str(&format!("  {:ID_COLUMN$}{line}\n", ""));
        }
    }
    help.push('\n');
    help.push_str(USAGE);
    help
}

/// What the help says after the checks: how the flags shape them.
const USAGE: &str = "\
--as NAME='Header: value' gives a principal's credentials (repeat it for a
second header of the same NAME); the first NAME sends every request of the
other checks. Header values never appear in the report. An operation whose
key.scope names `principal` needs two --as (exit 2 otherwise).

Several --base-url (instances of one deployment): the burst, the in-progress
duplicates and the replays go round-robin over all of them, and each answer
in the report names the instance it came from; instances that do not share
one idempotency store fail the burst, and the shared-store check sends a
key one instance answered, with a changed body, to each of the others.

Replays are recognised by the contract's responses.replayed-header
(Idempotent-Replayed unless it says otherwise; --replay-header overrides it)
and the common names; with several instances, 2xx answers without a mark
from two of them are two first answers unless --replay-header none says
the service marks none, and then the shared-store test decides.

--observe 'GET /orders/{order_no}=/payments' names a read of the service
that counts a key's effects: after `=`, the JSON pointer to a number, or
to an array whose length is the count (`=` alone: the whole document).
{NAME} is filled from the request each check sends (a path or query
parameter, --param, a top-level body field; {/pointer} a body value;
{key} the key), and the read goes to the first --base-url with the
request's headers. It is read for each probed operation (choose the one
it counts with --op), once before any check (a read that fails, is not
JSON or holds no count stops the probe, exit 2), then before and
after burst, replay, conflict, the key checks, in-progress, retry-after,
shared-store, sf-string and window-end: a count that rose by more than
one for a key (by any for a replay or a changed body) fails the check
whatever the answers said; one that rose by exactly one is its evidence,
and decides the verdicts marks and the store test cannot.

--window-wait DURATION lets window-end reuse a key after its window ends
(the probe waits the window plus 1 s, and the deadline must allow it).

The burst needs a request the service accepts (an order that exists, say):
use the spec's examples, --example, --set or --body-file.

Exit codes: 0 every check passed or did not apply; 1 a check failed;
2 bad usage, an unreachable or non-loopback service, or a probe cut short
by --max-requests/--deadline.";

#[derive(clap::Args)]
#[command(after_long_help = checks_help())]
pub struct ProbeArgs {
    /// The OpenAPI document the service implements.
    pub spec: PathBuf,
    /// Where the service listens, e.g. http://127.0.0.1:8080. Only
    /// loopback hosts unless --allow-remote. Repeat it for each instance
    /// of a deployment: requests go round-robin over all of them.
    #[arg(long, value_name = "URL", required = true)]
    pub base_url: Vec<String>,
    /// Only these operations (operationId, or `METHOD /path`).
    #[arg(long = "op", value_name = "ID")]
    pub operations: Vec<String>,
    /// Identical requests sent at once in the burst check.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub burst: u16,
    /// Requests of the burst in flight at once (default: all of them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: Option<u16>,
    /// Extra request header, e.g. 'Authorization: Bearer …' (repeatable).
    #[arg(long = "header", value_name = "'NAME: VALUE'", value_parser = header_arg)]
    pub headers: Vec<(String, String)>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ProbeFormat,
    /// Send writes to a host that is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// Most requests the whole probe sends.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_requests: usize,
    /// Longest wait for one answer.
    #[arg(long, default_value = "10s", value_parser = duration_arg, value_name = "DURATION")]
    pub timeout: u64,
    /// Longest the whole probe may take; no request is sent, or waited
    /// for, after it.
    #[arg(long, default_value = "2m", value_parser = duration_arg, value_name = "DURATION")]
    pub deadline: u64,
    /// Request body (JSON) to send instead of the spec's example.
    #[arg(long, value_name = "FILE", conflicts_with = "example")]
    pub body_file: Option<PathBuf>,
    /// Use this named example of the request body.
    #[arg(long, value_name = "NAME")]
    pub example: Option<String>,
    /// Set a body value: `/order_no=ORD-1` (JSON values such as `5` or
    /// `true` are parsed; anything else is a string). `{uuid}`, `{ulid}`
    /// or `{seq}` in VALUE (`/payment_id={uuid}`, `/order_no=ORD-{seq}`)
    /// is fresh for every new key the probe sends; `{seq}` counts 1, 2, 3…
    /// and alone is a number. Repeatable.
    #[arg(long = "set", value_name = "POINTER=VALUE", value_parser = set_arg)]
    pub sets: Vec<(String, SetValue)>,
    /// A principal's credentials, e.g. alice='Authorization: Bearer …'.
    /// Repeat with a second NAME for the principals check, or with the
    /// same NAME for another header; the first NAME sends every other
    /// request. Values are never printed.
    #[arg(long = "as", value_name = "NAME='Header: value'")]
    pub principals: Vec<String>,
    /// A `key.scope` value, NAME as the contract names it (`X-Tenant`,
    /// `tenant`, `/account_id`): `X-Tenant=acme`. The first value goes on
    /// every request; repeat NAME for the scope check's second value. A
    /// NAME no probed `key.scope` declares is an error.
    #[arg(long = "scope", value_name = "NAME=VALUE", value_parser = param_arg)]
    pub scopes: Vec<(String, String)>,
    /// Set a path or query parameter: `order_no=ORD-1`. Repeatable.
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = param_arg)]
    pub params: Vec<(String, String)>,
    /// The header the service marks its replays with (value `true`), or
    /// `none` when it marks none; by default what each operation's
    /// contract says (`responses.replayed-header`, Idempotent-Replayed
    /// unless set). The common names (Idempotent-Replayed,
    /// Idempotency-Replayed, X-Idempotent-Replayed, X-Idempotency-Replayed)
    /// count as marks whatever this says.
    #[arg(long, value_name = "NAME|none", value_parser = replay_header_arg)]
    pub replay_header: Option<ReplayHeader>,
    /// A read that counts a key's effects, `[GET ]PATH=POINTER`, e.g.
    /// 'GET /orders/{order_no}=/payments': the JSON pointer to a number,
    /// or to an array whose length is the count. {NAME} is filled from
    /// each check's request; see the end of --help.
    #[arg(long, value_name = "'GET /PATH=/POINTER'", value_parser = observe_arg)]
    pub observe: Option<Observe>,
    /// Longest the window-end check may wait for a key's window to end
    /// (it needs the contract's window plus 2 s); without it the check
    /// does not run.
    #[arg(long, value_parser = duration_arg, value_name = "DURATION")]
    pub window_wait: Option<u64>,
    /// Status-code profile of contracts that name none (overrides
    /// idemgen.toml); it sets the conflict, missing-key and in-progress
    /// statuses the checks expect, as it does for lint.
    #[arg(long, value_parser = super::values::profile())]
    pub profile: Option<Profile>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

fn header_arg(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or("write a header as 'Name: value'")?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("`{name}` is not a header name"));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn replay_header_arg(text: &str) -> Result<ReplayHeader, String> {
    let name = text.trim();
    if name.eq_ignore_ascii_case("none") {
        return Ok(ReplayHeader::Unmarked);
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(format!(
            "`{name}` is not a header name; give one such as Idempotency-Replayed, or none"
        ));
    }
    Ok(ReplayHeader::Named(name.to_string()))
}

fn observe_arg(text: &str) -> Result<Observe, String> {
    Observe::parse(text)
}

fn set_arg(text: &str) -> Result<(String, SetValue), String> {
    let (pointer, value) = text
        .split_once('=')
        .ok_or("write it as POINTER=VALUE, e.g. /order_no=ORD-1")?;
    if !pointer.starts_with('/') {
        return Err(format!(
            "`{pointer}` is not a JSON pointer; write /{pointer}"
        ));
    }
    Ok((pointer.to_string(), SetValue::parse(value)?))
}

fn param_arg(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .ok_or_else(|| "write it as NAME=VALUE, e.g. order_no=ORD-1".to_string())
}

pub fn run(args: &ProbeArgs) -> ExitCode {
    let (workspace, config) = match input::open(&args.spec, &args.config) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let mut defaults = config.defaults;
    if args.profile.is_some() {
        defaults.profile = args.profile;
    }
    let body = match &args.body_file {
        None => None,
        Some(path) => match std::fs::read(path)
            .map_err(|error| error.to_string())
            .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|error| error.to_string()))
        {
            Ok(body) => Some(body),
            Err(error) => {
                eprintln!(
                    "error: --body-file {}: {error}; it must be one JSON document",
                    path.display()
                );
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
    };
    // Parsed here, not by clap, whose errors would quote the credential.
    let principals = match idemgen_probe::principal::parse(&args.principals) {
        Ok(principals) => principals,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let options = ProbeOptions {
        base_urls: args.base_url.clone(),
        defaults,
        operations: args.operations.clone(),
        burst: usize::from(args.burst),
        concurrency: usize::from(args.concurrency.unwrap_or(args.burst)),
        allow_remote: args.allow_remote,
        max_requests: args.max_requests,
        request_timeout: Duration::from_millis(args.timeout.max(1)),
        deadline: Duration::from_millis(args.deadline.max(1)),
        request: RequestOptions {
            body,
            example: args.example.clone(),
            sets: args.sets.clone(),
            params: args.params.clone(),
            headers: args.headers.clone(),
            scopes: args.scopes.clone(),
            principals,
        },
        replay_header: args.replay_header.clone(),
        window_wait: Duration::from_millis(args.window_wait.unwrap_or(0)),
        observe: args.observe.clone(),
    };
    let spec = args.spec.display().to_string();
    let report = match idemgen_probe::run(&workspace, &spec, &options) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("error: {}", error.0);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let text = match args.format {
        ProbeFormat::Table => report::table(&report),
        ProbeFormat::Json => {
            let mut text = serde_json::to_string_pretty(&report::json(&report))
                .expect("JSON values always serialise");
            text.push('\n');
            text
        }
        ProbeFormat::Junit => report::junit(&report),
    };
    print(&text);
    if report.failed() {
        ExitCode::from(EXIT_FINDINGS)
    } else if report.stopped_early() {
        // Unchecked promises are not kept promises.
        eprintln!(
            "error: the probe stopped early (--max-requests {} or --deadline ran out), so some checks did not run; raise the limit",
            args.max_requests
        );
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    }
}
