//! The server loop: the initialize handshake, then requests and
//! notifications in the order they arrive, with diagnostics pushed from the
//! background linter (or pulled, when the client asks for them).

use std::collections::{BTreeSet, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::select;
use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionParams, CodeActionProviderCapability,
    CompletionOptions, CompletionParams, CompletionResponse, DiagnosticOptions,
    DiagnosticServerCapabilities, DidChangeTextDocumentParams, DidChangeWatchedFilesParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    DocumentDiagnosticParams, DocumentDiagnosticReport, DocumentDiagnosticReportResult,
    FullDocumentDiagnosticReport, GotoDefinitionParams, HoverParams, HoverProviderCapability,
    InitializeParams, InitializeResult, LogMessageParams, MessageType, OneOf,
    PublishDiagnosticsParams, Registration, RegistrationParams,
    RelatedFullDocumentDiagnosticReport, SaveOptions, ServerCapabilities, ServerInfo,
    ShowMessageParams, TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, Uri,
};
use serde_json::{Value, json};

use super::documents::{Document, Documents, LineIndex, uri_to_path};
use super::linter::{Job, Linter, Outcome};
use super::load::{Loaded, load, looks_like_openapi};
use super::locate::{char_index, locate};
use super::transport::{Incoming, Outgoing, Transport};
use super::workspace_config::WorkspaceConfig;
use super::{code_actions, completion, definition, diagnostics, hover};

/// Runs until `exit`; `true` when the client asked for `shutdown` first.
pub fn serve() -> bool {
    serve_over(Transport::stdio())
}

/// Serves on `transport` until `exit` or the end of its input.
pub fn serve_over(transport: Transport) -> bool {
    let clean = match handshake(&transport) {
        Some(server) => server.run(&transport),
        None => false,
    };
    transport.finish();
    clean
}

struct Server {
    outgoing: crossbeam_channel::Sender<Outgoing>,
    documents: Documents,
    config: WorkspaceConfig,
    options: Arc<idemgen_lint::LintOptions>,
    /// The client pulls diagnostics (`textDocument/diagnostic`), so none
    /// are pushed.
    pull: bool,
    /// The client lets the server ask to be told of file changes.
    watch: bool,
    /// The client pulls again when asked (`workspace/diagnostic/refresh`).
    refresh: bool,
    linter: Linter,
    /// Documents to lint once the queued messages are handled.
    dirty: BTreeSet<String>,
    /// Documents that showed findings of their own lint: one that stops
    /// being a spec (emptied, another kind of file) gets an empty list, not
    /// its old findings left in place. Files that are not specs (a
    /// referenced fragment shows its root's findings) are left alone.
    published: BTreeSet<String>,
    shutdown: bool,
    next_request: i32,
}

/// Answers `initialize`; requests before it get `ServerNotInitialized`,
/// and one with bad parameters `InvalidParams`, after which the client
/// may try again (as often as it likes: a loop, not recursion).
fn handshake(transport: &Transport) -> Option<Server> {
    let (id, params, refresh) = loop {
        let (id, params) = match transport.incoming.recv().ok()? {
            Incoming::Message(Message::Request(request)) if request.method == "initialize" => {
                (request.id, request.params)
            }
            Incoming::Message(Message::Request(request)) => {
                send_error(
                    &transport.outgoing,
                    request.id,
                    ErrorCode::ServerNotInitialized,
                    "the server is not initialized yet".into(),
                );
                continue;
            }
            Incoming::Message(Message::Notification(note)) if note.method == "exit" => return None,
            _ => continue,
        };
        // The protocol names it `workspace.diagnostics`; lsp-types reads
        // `diagnostic`, so the raw parameters are asked.
        let refresh = ["diagnostics", "diagnostic"].iter().any(|key| {
            params["capabilities"]["workspace"][key]["refreshSupport"] == Value::Bool(true)
        });
        match serde_json::from_value::<InitializeParams>(params) {
            Ok(params) => break (id, params, refresh),
            Err(error) => send_error(
                &transport.outgoing,
                id,
                ErrorCode::InvalidParams,
                format!("bad initialize parameters: {error}"),
            ),
        }
    };
    let pull = params
        .capabilities
        .text_document
        .as_ref()
        .is_some_and(|text| text.diagnostic.is_some());
    let watch = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|workspace| workspace.did_change_watched_files.as_ref())
        .and_then(|watched| watched.dynamic_registration)
        .unwrap_or(false);
    let mut config = WorkspaceConfig::new(workspace_root(&params));
    let outgoing = transport.outgoing.clone();
    let config_problem = config.reload().err();
    let result = InitializeResult {
        capabilities: capabilities(pull),
        server_info: Some(ServerInfo {
            name: "idemgen".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    };
    send(&outgoing, Response::new_ok(id, result));
    let server = Server {
        outgoing,
        options: Arc::new(config.options.clone()),
        documents: Documents::default(),
        config,
        pull,
        watch,
        refresh,
        linter: Linter::start(),
        dirty: BTreeSet::new(),
        published: BTreeSet::new(),
        shutdown: false,
        next_request: 0,
    };
    if let Some(problem) = config_problem {
        server.show_error(&problem);
    }
    Some(server)
}

#[allow(deprecated)] // root_uri: older clients send only it
fn workspace_root(params: &InitializeParams) -> PathBuf {
    params
        .workspace_folders
        .as_ref()
        .and_then(|folders| folders.first())
        .and_then(|folder| uri_to_path(&folder.uri))
        .or_else(|| params.root_uri.as_ref().and_then(uri_to_path))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."))
}

fn capabilities(pull: bool) -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some([":", " ", "{", "-"].map(String::from).to_vec()),
            ..CompletionOptions::default()
        }),
        definition_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
            ..CodeActionOptions::default()
        })),
        diagnostic_provider: pull.then(|| {
            DiagnosticServerCapabilities::Options(DiagnosticOptions {
                identifier: Some("idemgen".into()),
                inter_file_dependencies: true,
                workspace_diagnostics: false,
                ..DiagnosticOptions::default()
            })
        }),
        ..ServerCapabilities::default()
    }
}

impl Server {
    /// The main loop; `true` when `shutdown` came before `exit`.
    fn run(mut self, transport: &Transport) -> bool {
        loop {
            select! {
                recv(transport.incoming) -> incoming => {
                    let Ok(incoming) = incoming else { return self.shutdown };
                    if self.handle(incoming) {
                        return self.shutdown;
                    }
                    // Everything already queued is applied before linting,
                    // so a burst of edits costs one lint.
                    while let Ok(incoming) = transport.incoming.try_recv() {
                        if self.handle(incoming) {
                            return self.shutdown;
                        }
                    }
                    self.lint_dirty();
                }
                recv(self.linter.results) -> outcome => {
                    if let Ok(outcome) = outcome {
                        self.publish(outcome);
                    }
                }
            }
        }
    }

    /// Handles one message; `true` on `exit`.
    fn handle(&mut self, incoming: Incoming) -> bool {
        match incoming {
            Incoming::Malformed(why) => {
                eprintln!("idemgen lsp: ignored a malformed message: {why}")
            }
            Incoming::Message(Message::Request(request)) => self.request(request),
            Incoming::Message(Message::Notification(note)) => {
                if note.method == "exit" {
                    return true;
                }
                let method = note.method.clone();
                if catch_unwind(AssertUnwindSafe(|| self.notification(note))).is_err() {
                    eprintln!("idemgen lsp: failed on {method}; please report it");
                }
            }
            Incoming::Message(Message::Response(_)) => {} // to our registrations
        }
        false
    }

    fn request(&mut self, request: Request) {
        let Request { id, method, params } = request;
        if self.shutdown && method != "shutdown" {
            send_error(
                &self.outgoing,
                id,
                ErrorCode::InvalidRequest,
                "the server is shutting down".into(),
            );
            return;
        }
        let answer = catch_unwind(AssertUnwindSafe(|| self.answer(&method, params)));
        let response = match answer {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(_) => Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                format!("idemgen lsp failed on {method}; please report it"),
            ),
        };
        send(&self.outgoing, response);
    }

    fn answer(&mut self, method: &str, params: Value) -> Result<Value, (ErrorCode, String)> {
        fn parse<P: serde::de::DeserializeOwned>(params: Value) -> Result<P, (ErrorCode, String)> {
            serde_json::from_value(params)
                .map_err(|error| (ErrorCode::InvalidParams, format!("bad parameters: {error}")))
        }
        let value = match method {
            lsp_types::request::Shutdown::METHOD => {
                self.shutdown = true;
                Value::Null
            }
            lsp_types::request::HoverRequest::METHOD => {
                let params: HoverParams = parse(params)?;
                let at = params.text_document_position_params;
                let defaults = self.options.defaults;
                json!(
                    self.with_spec(&at.text_document.uri, |workspace, document| {
                        let located =
                            locate(workspace.root(), char_index(&document.text, at.position));
                        hover::hover(workspace, defaults, &located)
                    })
                )
            }
            lsp_types::request::GotoDefinition::METHOD => {
                let params: GotoDefinitionParams = parse(params)?;
                let at = params.text_document_position_params;
                json!(
                    self.with_spec(&at.text_document.uri, |workspace, document| {
                        let located =
                            locate(workspace.root(), char_index(&document.text, at.position));
                        definition::definition(workspace, &located)
                    })
                )
            }
            lsp_types::request::Completion::METHOD => {
                let params: CompletionParams = parse(params)?;
                let at = params.text_document_position;
                let items = self
                    .documents
                    .get(&at.text_document.uri)
                    .filter(|document| !idemgen_spec::json_escapes::looks_like_json(&document.text))
                    .map(|document| completion::complete(&document.text, at.position))
                    .unwrap_or_default();
                json!(CompletionResponse::Array(items))
            }
            lsp_types::request::CodeActionRequest::METHOD => {
                let params: CodeActionParams = parse(params)?;
                let options = Arc::clone(&self.options);
                json!(
                    self.with_spec(&params.text_document.uri, |workspace, document| {
                        let index = LineIndex::new(&document.text);
                        let start = index.offset(&document.text, params.range.start);
                        let end = index.offset(&document.text, params.range.end);
                        Some(code_actions::actions(workspace, &options, (start, end)))
                    })
                    .unwrap_or_default()
                )
            }
            lsp_types::request::DocumentDiagnosticRequest::METHOD => {
                let params: DocumentDiagnosticParams = parse(params)?;
                let uri = params.text_document.uri;
                let items = self.documents.get(&uri).and_then(|document| {
                    let mut checked = diagnostics::check(
                        &uri,
                        document.path.as_ref()?,
                        &self.documents.overlay(),
                        &self.options,
                    )?;
                    checked.remove(uri.as_str()).map(|(_, items)| items)
                });
                json!(DocumentDiagnosticReportResult::Report(
                    DocumentDiagnosticReport::Full(RelatedFullDocumentDiagnosticReport {
                        related_documents: None,
                        full_document_diagnostic_report: FullDocumentDiagnosticReport {
                            result_id: None,
                            items: items.unwrap_or_default(),
                        },
                    })
                ))
            }
            "initialize" => {
                return Err((
                    ErrorCode::InvalidRequest,
                    "the server is already initialized; `initialize` is sent once".into(),
                ));
            }
            other => {
                return Err((
                    ErrorCode::MethodNotFound,
                    format!("idemgen lsp does not handle `{other}`"),
                ));
            }
        };
        Ok(value)
    }

    /// Runs `answer` on the open document at `uri` when it loads as a spec.
    fn with_spec<T>(
        &self,
        uri: &Uri,
        answer: impl FnOnce(&idemgen_spec::Workspace, &Document) -> Option<T>,
    ) -> Option<T> {
        let document = self.documents.get(uri)?;
        match load(
            document.path.as_ref()?,
            &self.documents.overlay(),
            &self.options,
        ) {
            Loaded::Spec(workspace) => answer(&workspace, document),
            Loaded::NotOpenApi | Loaded::Failed(_) => None,
        }
    }

    fn notification(&mut self, note: Notification) {
        let Notification { method, params } = note;
        match method.as_str() {
            lsp_types::notification::DidOpenTextDocument::METHOD => {
                if let Some(params) = self.read::<DidOpenTextDocumentParams>(&method, params) {
                    let document = params.text_document;
                    self.dirty.insert(document.uri.as_str().to_string());
                    self.documents
                        .open(document.uri, document.version, document.text);
                }
            }
            lsp_types::notification::DidChangeTextDocument::METHOD => {
                if let Some(params) = self.read::<DidChangeTextDocumentParams>(&method, params) {
                    let uri = params.text_document.uri;
                    self.documents.change(
                        &uri,
                        params.text_document.version,
                        params.content_changes,
                    );
                    self.mark_changed(&uri);
                }
            }
            lsp_types::notification::DidCloseTextDocument::METHOD => {
                if let Some(params) = self.read::<DidCloseTextDocumentParams>(&method, params) {
                    let uri = params.text_document.uri;
                    self.documents.close(&uri);
                    self.dirty.remove(uri.as_str());
                    if !self.pull {
                        self.push(uri, Vec::new(), None);
                    }
                }
            }
            lsp_types::notification::DidSaveTextDocument::METHOD => {
                if let Some(params) = self.read::<DidSaveTextDocumentParams>(&method, params) {
                    if uri_to_path(&params.text_document.uri)
                        .is_some_and(|path| WorkspaceConfig::is_config(&path))
                    {
                        self.reload_config();
                    }
                }
            }
            lsp_types::notification::DidChangeWatchedFiles::METHOD => {
                if let Some(params) = self.read::<DidChangeWatchedFilesParams>(&method, params) {
                    let config_changed = params.changes.iter().any(|change| {
                        uri_to_path(&change.uri)
                            .is_some_and(|path| WorkspaceConfig::is_config(&path))
                    });
                    if config_changed {
                        self.reload_config();
                    }
                }
            }
            lsp_types::notification::Initialized::METHOD if self.watch => self.watch_config(),
            _ => {} // notifications the server does not use are ignored, as the protocol says
        }
    }

    /// A notification's parameters; ones that do not read are reported in
    /// the client's log, as a notification gets no error response.
    fn read<P: serde::de::DeserializeOwned>(&self, method: &str, params: Value) -> Option<P> {
        match serde_json::from_value(params) {
            Ok(params) => Some(params),
            Err(error) => {
                send(
                    &self.outgoing,
                    Notification::new(
                        lsp_types::notification::LogMessage::METHOD.into(),
                        LogMessageParams {
                            typ: MessageType::ERROR,
                            message: format!("idemgen: ignored {method}: bad parameters: {error}"),
                        },
                    ),
                );
                None
            }
        }
    }

    /// A changed document is linted again; a changed fragment (not itself
    /// an OpenAPI document) also re-lints every open document that may
    /// reference it.
    fn mark_changed(&mut self, uri: &Uri) {
        self.dirty.insert(uri.as_str().to_string());
        let is_spec = self
            .documents
            .get(uri)
            .is_some_and(|document| looks_like_openapi(&document.text));
        if !is_spec {
            self.dirty.extend(
                self.documents
                    .iter()
                    .map(|document| document.uri.as_str().to_string()),
            );
        }
    }

    fn reload_config(&mut self) {
        if let Err(problem) = self.config.reload() {
            self.show_error(&problem);
        }
        self.options = Arc::new(self.config.options.clone());
        if self.pull && self.refresh {
            // Pulled diagnostics are stale under the new configuration.
            self.next_request += 1;
            send(
                &self.outgoing,
                Request::new(
                    RequestId::from(format!("idemgen-{}", self.next_request)),
                    lsp_types::request::WorkspaceDiagnosticRefresh::METHOD.into(),
                    Value::Null,
                ),
            );
        }
        self.dirty.extend(
            self.documents
                .iter()
                .map(|document| document.uri.as_str().to_string()),
        );
    }

    /// Asks the client to report changes to `idemgen.toml` files.
    fn watch_config(&mut self) {
        self.next_request += 1;
        let registration = RegistrationParams {
            registrations: vec![Registration {
                id: "idemgen-config".into(),
                method: lsp_types::notification::DidChangeWatchedFiles::METHOD.into(),
                register_options: Some(json!({"watchers": [{"globPattern": "**/idemgen.toml"}]})),
            }],
        };
        send(
            &self.outgoing,
            Request::new(
                RequestId::from(format!("idemgen-{}", self.next_request)),
                lsp_types::request::RegisterCapability::METHOD.into(),
                registration,
            ),
        );
    }

    fn lint_dirty(&mut self) {
        if self.pull || self.dirty.is_empty() {
            self.dirty.clear();
            return;
        }
        let overlay = Arc::new(self.documents.overlay());
        for uri in std::mem::take(&mut self.dirty) {
            let Some(document) = self
                .documents
                .iter()
                .find(|document| document.uri.as_str() == uri)
            else {
                continue;
            };
            let Some(path) = document.path.clone() else {
                continue;
            };
            self.linter.submit(Job {
                uri: document.uri.clone(),
                version: document.version,
                path,
                overlay: Arc::clone(&overlay),
                options: Arc::clone(&self.options),
            });
        }
    }

    /// Publishes a lint result unless a newer edit has overtaken it.
    fn publish(&mut self, outcome: Outcome) {
        let current = self
            .documents
            .iter()
            .find(|document| document.uri.as_str() == outcome.uri);
        let Some(document) = current.filter(|document| document.version == outcome.version) else {
            return; // stale: the newer version's lint is queued
        };
        let version = document.version;
        let Some(checked) = outcome.checked else {
            if self.published.remove(&outcome.uri) {
                let uri = document.uri.clone();
                self.push(uri, Vec::new(), Some(version));
            }
            return;
        };
        let mut by_uri: HashMap<String, (Uri, Vec<lsp_types::Diagnostic>)> =
            checked.into_iter().collect();
        if let Some((uri, items)) = by_uri.remove(&outcome.uri) {
            if items.is_empty() {
                self.published.remove(&outcome.uri);
            } else {
                self.published.insert(outcome.uri.clone());
            }
            self.push(uri, items, Some(version));
        }
        // Findings in referenced files are shown when those are open.
        for (uri, items) in by_uri.into_values() {
            if let Some(open) = self.documents.get(&uri) {
                let version = open.version;
                self.push(uri, items, Some(version));
            }
        }
    }

    fn push(&self, uri: Uri, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        };
        send(
            &self.outgoing,
            Notification::new(
                lsp_types::notification::PublishDiagnostics::METHOD.into(),
                params,
            ),
        );
    }

    fn show_error(&self, message: &str) {
        send(
            &self.outgoing,
            Notification::new(
                lsp_types::notification::ShowMessage::METHOD.into(),
                ShowMessageParams {
                    typ: MessageType::ERROR,
                    message: format!("idemgen: {message} (using the built-in defaults)"),
                },
            ),
        );
    }
}

fn send(outgoing: &crossbeam_channel::Sender<Outgoing>, message: impl Into<Message>) {
    let _ = outgoing.send(Outgoing::Message(message.into()));
}

fn send_error(
    outgoing: &crossbeam_channel::Sender<Outgoing>,
    id: RequestId,
    code: ErrorCode,
    message: String,
) {
    send(outgoing, Response::new_err(id, code as i32, message));
}

#[cfg(test)]
mod tests {
    use std::io::{self, Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::serve_over;
    use crate::fuzzing::session;
    use crate::transport::Transport;

    fn frame(message: &Value) -> Vec<u8> {
        let body = message.to_string();
        let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        out.extend_from_slice(body.as_bytes());
        out
    }

    /// Every message the server wrote, in order.
    fn replies(output: &[u8]) -> Vec<Value> {
        let text = String::from_utf8_lossy(output);
        let mut messages = Vec::new();
        let mut rest: &str = &text;
        while let Some(at) = rest.find("\r\n\r\n") {
            let length: usize = rest[..at]
                .trim()
                .strip_prefix("Content-Length: ")
                .and_then(|length| length.parse().ok())
                .expect("a Content-Length header");
            let body = &rest[at + 4..at + 4 + length];
            messages.push(serde_json::from_str(body).unwrap());
            rest = &rest[at + 4 + length..];
        }
        messages
    }

    #[test]
    fn any_number_of_bad_initialize_requests_is_answered_and_a_good_one_still_works() {
        let bad = frame(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": 5}}),
        );
        let mut input = bad.repeat(20_000);
        input.extend(frame(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}}),
        ));
        input.extend(frame(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}),
        ));
        input.extend(frame(&json!({"jsonrpc": "2.0", "method": "exit"})));
        let replies = replies(&session(input));
        assert_eq!(replies.len(), 20_002);
        assert!(
            replies[..20_000]
                .iter()
                .all(|reply| reply["id"] == 1 && reply["error"]["code"] == -32602),
            "{:?}",
            &replies[..2]
        );
        assert!(replies[20_000]["result"]["capabilities"].is_object());
        assert_eq!(
            replies[20_001],
            json!({"jsonrpc": "2.0", "id": 3, "result": null})
        );
    }

    /// A notification gets no answer, so one the server cannot read (a
    /// version past i32, a missing field) would be dropped unseen, and the
    /// document left out of step with the editor: the client's log says so.
    #[test]
    fn a_notification_with_bad_parameters_is_reported_in_the_log() {
        let mut input = frame(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}),
        );
        for params in [
            json!({"textDocument": {"uri": "file:///tmp/a.yaml", "languageId": "yaml", "version": 2_147_483_648_u64, "text": ""}}),
            json!({"textDocument": {"uri": "file:///tmp/a.yaml", "version": 2}}),
        ] {
            let method = if params["textDocument"]["text"].is_string() {
                "textDocument/didOpen"
            } else {
                "textDocument/didChange"
            };
            input.extend(frame(
                &json!({"jsonrpc": "2.0", "method": method, "params": params}),
            ));
        }
        input.extend(frame(&json!({"jsonrpc": "2.0", "method": "exit"})));
        let logged: Vec<String> = replies(&session(input))
            .iter()
            .filter(|message| message["method"] == "window/logMessage")
            .map(|message| message["params"]["message"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(logged.len(), 2, "{logged:?}");
        assert!(logged[0].contains("textDocument/didOpen"), "{logged:?}");
        assert!(logged[1].contains("textDocument/didChange"), "{logged:?}");
    }

    /// A client that sends `initialize`, `requests` requests, `shutdown`
    /// and `exit`, frame by frame as the server reads them.
    struct Sender {
        requests: usize,
        next: usize,
        pending: io::Cursor<Vec<u8>>,
        /// Frames the server has taken so far.
        taken: Arc<AtomicUsize>,
    }

    impl Read for Sender {
        fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
            if self.pending.position() as usize == self.pending.get_ref().len() {
                let message = match self.next {
                    0 => {
                        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}})
                    }
                    n if n <= self.requests => {
                        json!({"jsonrpc": "2.0", "id": n, "method": "idemgen/unknown"})
                    }
                    n if n == self.requests + 1 => {
                        json!({"jsonrpc": "2.0", "id": n, "method": "shutdown"})
                    }
                    n if n == self.requests + 2 => json!({"jsonrpc": "2.0", "method": "exit"}),
                    _ => return Ok(0),
                };
                self.next += 1;
                self.taken.store(self.next, Ordering::SeqCst);
                self.pending = io::Cursor::new(frame(&message));
            }
            self.pending.read(buffer)
        }
    }

    /// A client's end of the server's output that is not read until opened.
    #[derive(Clone, Default)]
    struct Unread {
        open: Arc<(Mutex<bool>, Condvar)>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Unread {
        fn start_reading(&self) {
            *self.open.0.lock().unwrap() = true;
            self.open.1.notify_all();
        }
    }

    impl Write for Unread {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            let (open, opened) = &*self.open;
            drop(
                opened
                    .wait_while(open.lock().unwrap(), |open| !*open)
                    .unwrap(),
            );
            self.written.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A client that writes requests and does not read the answers must
    /// not make the server queue them without bound: it stops reading (as
    /// a full pipe would), and goes on when the client reads.
    #[test]
    fn a_client_that_does_not_read_stops_the_server_reading_until_it_does() {
        const REQUESTS: usize = 100_000;
        let taken = Arc::new(AtomicUsize::new(0));
        let input = Sender {
            requests: REQUESTS,
            next: 0,
            pending: io::Cursor::new(Vec::new()),
            taken: Arc::clone(&taken),
        };
        let output = Unread::default();
        let server = {
            let output = output.clone();
            std::thread::spawn(move || {
                serve_over(Transport::over(io::BufReader::new(input), output))
            })
        };
        // Until the server stops taking requests (or has taken them all).
        let mut seen = 0;
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = taken.load(Ordering::SeqCst);
            if now == seen || now > REQUESTS {
                break;
            }
            seen = now;
        }
        let taken_unread = taken.load(Ordering::SeqCst);
        output.start_reading();
        assert!(server.join().unwrap(), "shutdown came before exit");
        assert!(
            taken_unread < REQUESTS / 10,
            "the server took {taken_unread} of {REQUESTS} requests while nothing was read"
        );
        let replies = replies(&output.written.lock().unwrap());
        assert_eq!(replies.len(), REQUESTS + 2);
        assert!(
            replies[1..=REQUESTS]
                .iter()
                .all(|reply| reply["error"]["code"] == -32601)
        );
    }
}
