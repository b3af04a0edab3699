//! What the generators refuse whatever `idemgen.toml` sets the lint rules
//! to: a retry schedule that can outlast the window. Lint levels may
//! silence a finding; they must not make generated code unsafe, because a
//! retry that reaches the server after the key's record is gone runs the
//! operation again.

use idemgen_spec::Workspace;
use idemgen_spec::analysis::Analysis;
use idemgen_spec::contract::model::Located;
use idemgen_spec::window::{WindowInputs, compute, schedule};

/// Every operation whose schedule can end after its window, as one
/// message naming the operation, the fields and where they are; `None`
/// when every schedule fits.
pub fn unsafe_schedules(workspace: &Workspace, analysis: &Analysis) -> Option<String> {
    let mut problems = Vec::new();
    for (analysed, contract) in analysis.contracted() {
        let (Some(window), Some(schedule)) = (&contract.window_ms, schedule(contract)) else {
            continue;
        };
        let math = compute(&WindowInputs::of(contract));
        // With `server.max-processing`, the last attempt ends when its
        // processing does (the retry span); without it, at its timeout.
        let end_ms = math.retry_span_ms.unwrap_or(schedule.last().timeout_end_ms);
        if end_ms <= window.value {
            continue;
        }
        let fields = if contract.max_processing_ms.is_some() {
            "`client.timeout`, `client.retries`, `client.jitter` and `server.max-processing`"
        } else {
            "`client.timeout`, `client.retries` and `client.jitter`"
        };
        problems.push(format!(
            "{}: its last attempt starts as late as {} ms and can end at {end_ms} ms, after `window: {} ms` ({}); \
             set `window` to at least {end_ms} ms or shorten {fields}",
            analysed.operation.name(),
            schedule.last().start_ms,
            window.value,
            place(workspace, window),
        ));
    }
    (!problems.is_empty()).then(|| {
        format!(
            "a retry could reach the server after the key's window has closed, and run the operation again; \
             idemgen does not generate such code, whatever idemgen.toml sets the lint rules to:\n  {}",
            problems.join("\n  ")
        )
    })
}

/// `file:line:col` of a contract value.
fn place<T>(workspace: &Workspace, located: &Located<T>) -> String {
    let span = located.origin.span;
    format!(
        "{}:{}:{}",
        workspace.file(span.file).display,
        span.line,
        span.col
    )
}
