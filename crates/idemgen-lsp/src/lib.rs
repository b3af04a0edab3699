//! `idemgen lsp`: the contract checked as you type, over the Language
//! Server Protocol on stdio.
//!
//! Every open YAML or JSON document that is an OpenAPI 3.x spec is loaded
//! and linted exactly as `idemgen lint` does it (with the editor's unsaved
//! text of every open file), and the findings become diagnostics. Hover
//! shows the window math, code actions apply the `--fix` edits or add an
//! `x-idemgen-ignore` entry, completion offers the extension's fields and
//! values, and go-to-definition follows `$ref`s. Nothing here re-implements
//! a rule, a fix or the window math.

mod code_actions;
mod completion;
mod definition;
mod diagnostics;
mod documents;
mod hover;
mod linter;
mod load;
mod locate;
mod server;
mod transport;
mod workspace_config;

use std::process::ExitCode;

/// Serves until the client says `exit`: 0 after a `shutdown`, else 1, as
/// the protocol asks.
pub fn run() -> ExitCode {
    if server::serve() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A whole session in memory, for the fuzz targets in `fuzz/`: not part of
/// the crate's API, and free to change.
#[doc(hidden)]
pub mod fuzzing {
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

    use super::server::serve_over;
    use super::transport::Transport;

    /// Whether the server checks a document with this text at all.
    pub use super::load::looks_like_openapi;

    /// Serves a client that sends `input` (frames, as on stdin) and then
    /// hangs up; every byte the server wrote back, in order.
    pub fn session(input: Vec<u8>) -> Vec<u8> {
        let output = Shared::default();
        serve_over(Transport::over(io::Cursor::new(input), output.clone()));
        std::mem::take(
            &mut *output
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let mut buffer = self
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            buffer.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
}
