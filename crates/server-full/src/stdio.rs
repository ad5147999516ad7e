//! Serving one session over stdio, from the start or after the light front end's handoff.
//!
//! The transport reads newline-delimited JSON itself (instead of rmcp's codec) so that bad input
//! gets the replies the JSON-RPC specification asks for, which rmcp does not send: `-32700` with
//! `"id": null` for unparsable text, `-32600` for invalid messages, `-32602` for malformed
//! `tools/call` params. The session always continues.

use std::future::Future;
use std::sync::Arc;

use protocol_lite::handshake::STATELESS_VERSION;
use protocol_lite::{jsonrpc, modern};
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Notify, mpsc};

use crate::HooksServer;
use crate::memory::QuietTrim;
use crate::server::INITIALIZED_GRACE;

/// Why a stdio session ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// The handed-over session could not be read from its descriptor.
    #[error("reading the handed-over session from descriptor {fd}: {source}")]
    Replay {
        /// The descriptor the front end named.
        fd: String,
        /// What reading it said.
        source: std::io::Error,
    },
    /// The store could not be located, opened or migrated.
    #[error("opening the store: {0}")]
    Store(crate::SettingsError),
    /// The tool registry could not be built (filters, start mode, catalogue).
    #[error("building the tool registry: {0}")]
    Registry(crate::SettingsError),
    /// The async runtime could not start.
    #[error("starting the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The handshake (replayed or not) failed inside the full server.
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    /// The session loop ended with an error.
    #[error("the MCP session failed: {0}")]
    Session(String),
}

pub use protocol_lite::setting::{REPLAY_FD_ENV, SUPPRESS_ACKS_ENV, SUPPRESS_ID_ENV};
/// How long an idle blocking thread of the stdio server lives. Short: an agent's tool calls
/// come seconds apart, and a new thread costs tens of microseconds, so a session waiting for
/// its next request keeps only its main thread and stdin's reader.
const BLOCKING_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_millis(250);

/// Serves one stdio session as the environment describes it: from the start, or the session
/// the light front end handed over ([`REPLAY_FD_ENV`], [`SUPPRESS_ID_ENV`]). Opens the store
/// (created if missing), builds the registry, and runs on a current-thread runtime until the
/// client closes stdin.
///
/// # Errors
/// [`StdioError`] when the replay, the store, the registry, the runtime or the session fails.
pub fn serve_from_env() -> Result<(), StdioError> {
    crate::memory::one_arena();
    let handed_over = std::env::var(REPLAY_FD_ENV).ok();
    let replay = match &handed_over {
        Some(fd) => std::fs::read(format!("/dev/fd/{}", fd.trim())).map_err(|source| {
            StdioError::Replay {
                fd: fd.clone(),
                source,
            }
        })?,
        None => Vec::new(),
    };
    let suppress = Suppress {
        initialize: std::env::var(SUPPRESS_ID_ENV)
            .ok()
            .and_then(|id| serde_json::from_str::<Value>(&id).ok()),
        acknowledgements: std::env::var(SUPPRESS_ACKS_ENV)
            .ok()
            .and_then(|ids| serde_json::from_str::<Vec<Value>>(&ids).ok())
            .unwrap_or_default(),
    };
    let (settings, warnings, opened) = match crate::Settings::stdio_from_env() {
        Ok(opened) => opened,
        Err(e) => {
            answer_unserved(&replay, suppress.initialize.as_ref(), &e.to_string());
            return Err(StdioError::Store(e));
        }
    };
    if opened == store::Opened::Created {
        tracing::info!("created a new store");
    }
    let (server, more) = HooksServer::new(settings).map_err(StdioError::Registry)?;
    if handed_over.is_none() {
        // The front end already printed these before handing over.
        for w in warnings.iter().chain(&more) {
            protocol_lite::diag!("hooks-mcp: warning: {w}");
        }
    }
    tracing::debug!(
        replay_bytes = replay.len(),
        tools = server.tools().len(),
        "full server starting on stdio"
    );
    // Timers only: stdin and stdout go through the blocking pool, so the session needs no I/O
    // driver (and with it no signal driver, whose tables every process would keep).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .thread_keep_alive(BLOCKING_KEEP_ALIVE)
        .build()
        .map_err(StdioError::Runtime)?;
    // On the heap: the session future is large, and block_on would hold it (and copies made
    // while it is moved there) on the main thread's stack, whose touched pages stay dirty.
    runtime.block_on(Box::pin(serve_stdio(server, replay, suppress)))
}

/// Answers every request the front end handed over (but the `initialize` it answered) with an
/// internal error saying why the server cannot serve it, so that the client learns the reason
/// (a store that cannot be opened) instead of seeing the process end with its call unanswered.
fn answer_unserved(replay: &[u8], answered: Option<&Value>, why: &str) {
    use std::io::Write as _;
    let why = format!("hooks-mcp cannot serve this session: {why}");
    let replies = jsonrpc::internal_errors_for(replay, answered, &why);
    // Nothing more to do when the client is gone.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&replies).and_then(|()| out.flush());
}

/// What the light front end already answered, which the full server must not answer again.
#[derive(Debug, Clone, Default)]
pub struct Suppress {
    /// The id of the `initialize` request the front end answered.
    pub initialize: Option<Value>,
    /// The ids of the `subscriptions/listen` requests it acknowledged.
    pub acknowledgements: Vec<Value>,
}

/// Prints the `resources/list` result (2026-07-28 form) of the store the environment names,
/// for the light front end, which holds a `resourcesListChanged` subscription by comparing
/// these listings. No runtime starts.
///
/// # Errors
/// [`StdioError::Store`] when the store cannot be opened, [`StdioError::Session`] when the
/// listing cannot be read or written.
pub fn print_resources_from_env() -> Result<(), StdioError> {
    use std::io::Write as _;
    let (settings, _, _) = crate::Settings::stdio_with(false).map_err(StdioError::Store)?;
    let policy = catalogue::SessionPolicy::ExplicitOnly;
    let ctx = catalogue::CallContext::new(crate::now_ms(), &policy, &settings.extensions);
    let listed = crate::resources_and_prompts::list_resources(&ctx)
        .map_err(|e| StdioError::Session(format!("listing the resources: {e}")))?;
    // Through rmcp's own type, so the light path forwards the bytes the full server answers.
    let listed: rmcp::model::ListResourcesResult = serde_json::from_value(listed)
        .map_err(|e| StdioError::Session(format!("listing the resources: {e}")))?;
    let listed = crate::modern::Cacheable::cached(listed, true, crate::modern::Cache::Private);
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &listed)
        .map_err(std::io::Error::other)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| StdioError::Session(format!("writing the listing: {e}")))
}

/// Serves `server` on this process's stdin and stdout until the client closes stdin.
///
/// `replay` is read before stdin (the handshake the light front end answered, the
/// subscriptions it held, the line that triggered the handoff and any bytes it had read
/// ahead); what `suppress` names (the `initialize` response and the subscriptions'
/// acknowledgements the light path already sent) is not written again.
///
/// # Errors
/// [`StdioError`] when the handshake or the session fails.
pub async fn serve_stdio(
    server: HooksServer,
    replay: Vec<u8>,
    suppress: Suppress,
) -> Result<(), StdioError> {
    let input = tokio::io::AsyncReadExt::chain(std::io::Cursor::new(replay), tokio::io::stdin());
    serve(server, input, tokio::io::stdout(), suppress).await
}

/// [`serve_stdio`] over any reader and writer (tests use in-memory pipes).
///
/// # Errors
/// [`StdioError`] when the handshake or the session fails.
pub async fn serve<R, W>(
    server: HooksServer,
    input: R,
    output: W,
    suppress: Suppress,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let suppress_acks = suppress
        .acknowledgements
        .into_iter()
        .filter_map(|id| serde_json::from_value::<RequestId>(id).ok())
        .collect();
    let suppress = suppress
        .initialize
        .and_then(|id| serde_json::from_value::<RequestId>(id).ok());
    let writer = Arc::new(Mutex::new(output));
    let listening = Arc::new(std::sync::Mutex::new(None));
    // A task of its own reads and checks lines: rmcp polls `receive` inside a `select!` and
    // drops it whenever another branch wins, so reading (and answering bad lines) there would
    // lose data. Receiving from a channel is cancel-safe.
    let (sender, receiver) = mpsc::channel(64);
    let reader = LineReader {
        reader: BufReader::new(input),
        writer: writer.clone(),
        sender,
        initialized: server.initialized_signal(),
        subscribed: server.subscribed_signal(),
        listening: listening.clone(),
        seen_request: false,
        lifecycle: false,
        server: server.clone(),
    };
    let reader = tokio::spawn(reader.run());
    let transport = LineTransport {
        receiver,
        writer,
        trim: QuietTrim::start(),
        suppress,
        suppress_acks,
        subscribed: server.subscribed_signal(),
        listening,
    };
    let pusher = crate::push::Pusher::of(&server);
    let outcome = match server.serve(transport).await {
        Ok(running) => {
            // Once a legacy session is open (`initialize` gave rmcp the client's info): what
            // is pending, then each new urgent message. A 2026-07-28 session is never pushed
            // into: that revision sends notifications only on a subscription the client holds.
            let peer = running.peer().clone();
            let pushing = pusher
                .filter(|_| peer.peer_info().is_some())
                .map(|p| tokio::spawn(p.run(peer)));
            let waited = running.waiting().await;
            if let Some(task) = pushing {
                task.abort();
            }
            waited
                .map(|_| ())
                .map_err(|e| StdioError::Session(e.to_string()))
        }
        // The client left before opening a session: a probe (`server/discover`) and nothing
        // else, or no request at all. Nothing failed.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => Ok(()),
        Err(e) => Err(StdioError::Handshake(e.to_string())),
    };
    reader.abort();
    outcome
}

struct LineReader<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    sender: mpsc::Sender<ClientJsonRpcMessage>,
    initialized: Arc<Notify>,
    /// Signalled once a `subscriptions/listen` is in place (or refused).
    subscribed: Arc<Notify>,
    /// The `subscriptions/listen` request being established, shared with the transport.
    listening: Arc<std::sync::Mutex<Option<RequestId>>>,
    /// Notifications before the first request are dropped (there is no session yet).
    seen_request: bool,
    /// An `initialize` request was read: the legacy lifecycle, whose `ping` rmcp answers.
    lifecycle: bool,
    /// The server, whose open subscriptions end when the input does.
    server: HooksServer,
}

/// What the reader waits for after handing a message to rmcp (which runs each message in a
/// task of its own), so that what follows it is handled after it.
enum Settle {
    /// Nothing: read on.
    No,
    /// `notifications/initialized`: until the handshake is handled.
    Initialized,
    /// A `subscriptions/listen` request: until the subscription is in place or refused, so a
    /// change the next request makes reaches it.
    Listen,
}

impl<R, W> LineReader<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The input ended: the client is gone (the stdio transport's way to end a session), so
    /// its open `subscriptions/listen` end too, and rmcp, which waits for every running
    /// request before it returns, lets the process exit at once rather than seconds later.
    /// Requests still running (a tool call) are answered first.
    fn end(&self) {
        self.server.end_subscriptions();
    }

    async fn run(mut self) {
        let mut line = Vec::with_capacity(4096);
        loop {
            line.clear();
            match self.reader.read_until(b'\n', &mut line).await {
                Ok(0) => return self.end(),
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("stdin closed: {e}");
                    return self.end();
                }
            }
            let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            if jsonrpc::is_blank(trimmed) {
                continue;
            }
            let Some((message, settle)) = self.accept(trimmed).await else {
                continue;
            };
            if let (Settle::Listen, JsonRpcMessage::Request(request)) = (&settle, &message) {
                *self.listening.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(request.id.clone());
            }
            if self.sender.send(message).await.is_err() {
                return;
            }
            // rmcp handles each message in its own task: wait until `initialized` (or a
            // subscription) was handled before handing over what followed it.
            let (signal, what) = match settle {
                Settle::No => continue,
                Settle::Initialized => (&self.initialized, "`notifications/initialized`"),
                Settle::Listen => (&self.subscribed, "`subscriptions/listen`"),
            };
            if tokio::time::timeout(INITIALIZED_GRACE, signal.notified())
                .await
                .is_err()
            {
                tracing::warn!("{what} was not handled in time; reading on");
            }
        }
    }

    /// Checks one line: the message for rmcp (and what to wait for once it is handed over),
    /// or `None` after answering or skipping it.
    async fn accept(&mut self, line: &[u8]) -> Option<(ClientJsonRpcMessage, Settle)> {
        let (value, incoming) = match jsonrpc::parse_line(line) {
            Ok(parsed) => parsed,
            Err(reply) => {
                tracing::debug!(code = reply.code, "answered a bad line: {}", reply.message);
                self.write_line(&reply.to_line()).await;
                return None;
            }
        };
        let (id, method) = match incoming {
            jsonrpc::Incoming::Notification { .. } if !self.seen_request => return None,
            jsonrpc::Incoming::Request { id, method, params } => {
                // The light path's rules, so both sides of the hand-off answer alike: a method
                // 2026-07-28 removed (rmcp's message is the bare name), and a ping without a
                // lifecycle (rmcp refuses a bare one once the stateless era was chosen).
                let modern = modern::requested_version(params.as_ref()) == Some(STATELESS_VERSION);
                let reply = match modern
                    .then(|| modern::removed_method(&id, &method))
                    .flatten()
                {
                    Some(removed) => Some(removed.to_line()),
                    None if method == "ping" && !self.lifecycle => {
                        Some(modern::ping_reply_line(&id, params.as_ref()))
                    }
                    None => None,
                };
                if let Some(reply) = reply {
                    self.seen_request = true;
                    self.write_line(&reply).await;
                    return None;
                }
                self.lifecycle |= method == "initialize";
                (Some(id), method)
            }
            jsonrpc::Incoming::Notification { method } => (None, method),
            jsonrpc::Incoming::Response => (None, String::new()),
        };
        match serde_json::from_value::<ClientJsonRpcMessage>(value) {
            Ok(message) => {
                let settle = match (&id, method.as_str()) {
                    (None, "notifications/initialized") => Settle::Initialized,
                    (Some(_), "subscriptions/listen") => Settle::Listen,
                    _ => Settle::No,
                };
                if id.is_some() {
                    self.seen_request = true;
                }
                Some((message, settle))
            }
            Err(e) => {
                let Some(id) = id else {
                    tracing::debug!("skipped a malformed notification `{method}`: {e}");
                    return None;
                };
                let reply = jsonrpc::ErrorReply {
                    id,
                    code: jsonrpc::INVALID_PARAMS,
                    message: format!("Invalid params for `{method}`: {e}"),
                };
                self.write_line(&reply.to_line()).await;
                None
            }
        }
    }

    /// Writes one reply line of the reader's own (a client that stopped reading is logged).
    async fn write_line(&mut self, line: &[u8]) {
        let mut writer = self.writer.lock().await;
        let written = async {
            writer.write_all(line).await?;
            writer.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!("cannot write a reply: {e}");
        }
    }
}

struct LineTransport<W> {
    receiver: mpsc::Receiver<ClientJsonRpcMessage>,
    writer: Arc<Mutex<W>>,
    /// Hands freed memory back once the session is quiet.
    trim: QuietTrim,
    /// The id whose first response is swallowed (the light path already answered it).
    suppress: Option<RequestId>,
    /// The subscriptions whose first acknowledgement is swallowed (the light path sent it).
    suppress_acks: Vec<RequestId>,
    /// Signalled when the `subscriptions/listen` being established is refused.
    subscribed: Arc<Notify>,
    /// That request, shared with the reader.
    listening: Arc<std::sync::Mutex<Option<RequestId>>>,
}

/// The subscription a `notifications/subscriptions/acknowledged` acknowledges.
fn acknowledged(message: &ServerJsonRpcMessage) -> Option<RequestId> {
    let JsonRpcMessage::Notification(n) = message else {
        return None;
    };
    if !matches!(
        n.notification,
        ServerNotification::SubscriptionsAcknowledgedNotification(_)
    ) {
        return None;
    }
    // The id travels in the notification's `_meta` (rmcp keeps it among its extensions).
    let value = serde_json::to_value(message).ok()?;
    let id = value.pointer("/params/_meta/io.modelcontextprotocol~1subscriptionId")?;
    serde_json::from_value(id.clone()).ok()
}

fn response_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(r) => Some(&r.id),
        JsonRpcMessage::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

impl<W> Transport<RoleServer> for LineTransport<W>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.trim.touch();
        if let (JsonRpcMessage::Error(e), Some(id)) = (&item, response_id(&item)) {
            let mut listening = self.listening.lock().unwrap_or_else(|p| p.into_inner());
            if listening.as_ref() == Some(id) {
                tracing::debug!(code = ?e.error.code, "a subscriptions/listen was refused");
                *listening = None;
                self.subscribed.notify_one();
            }
        }
        let mut suppressed = match (&self.suppress, response_id(&item)) {
            (Some(wanted), Some(id)) if wanted == id => {
                self.suppress = None;
                tracing::debug!(
                    ?id,
                    "suppressed the full server's duplicate initialize response"
                );
                true
            }
            _ => false,
        };
        if let Some(id) = acknowledged(&item)
            && let Some(at) = self.suppress_acks.iter().position(|s| *s == id)
        {
            self.suppress_acks.swap_remove(at);
            tracing::debug!(?id, "suppressed a duplicate subscription acknowledgement");
            suppressed = true;
        }
        let bytes = if suppressed {
            Ok(Vec::new())
        } else {
            serde_json::to_vec(&item).map(|mut b| {
                b.push(b'\n');
                b
            })
        };
        let writer = self.writer.clone();
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            if bytes.is_empty() {
                return Ok(());
            }
            let mut writer = writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.receiver.recv().await;
        self.trim.touch();
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut writer = self.writer.lock().await;
        writer.flush().await
    }
}
