//! Serving one session over stdio, from the start or after the light front end's handoff.
//!
//! The transport reads newline-delimited JSON itself (instead of rmcp's codec) so that bad input
//! gets the replies the JSON-RPC specification asks for, which rmcp does not send: `-32700` with
//! `"id": null` for unparsable text, `-32600` for invalid messages, `-32602` for malformed
//! `tools/call` params. The session always continues.

use std::future::Future;
use std::sync::Arc;

use protocol_lite::light::{Taken, Unserved};
use protocol_lite::{jsonrpc, modern};
use rmcp::model::{
    ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Notify, mpsc, watch};

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
    /// The settings could not be used: the store could not be located, opened or migrated,
    /// or the start mode is invalid.
    #[error("{}", settings_failure(.0))]
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

/// What a settings failure says at start: a store's failure names the store; a setting's
/// own message names the setting.
fn settings_failure(error: &crate::SettingsError) -> String {
    match error {
        crate::SettingsError::Store(_) => format!("opening the store: {error}"),
        _ => error.to_string(),
    }
}

pub use protocol_lite::setting::{REPLAY_FD_ENV, SUPPRESS_ACKS_ENV, SUPPRESS_ID_ENV};
/// How long an idle blocking thread of the stdio server lives. Short: an agent's tool calls
/// come seconds apart, and a new thread costs tens of microseconds, so a session waiting for
/// its next request keeps only its main thread and stdin's reader.
const BLOCKING_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_millis(250);

/// Serves one stdio session as the environment describes it: from the start, or the session
/// the light front end handed over ([`REPLAY_FD_ENV`]: the replay file, whose first line names
/// what the front end answered, [`SUPPRESS_ID_ENV`] and [`SUPPRESS_ACKS_ENV`]). Opens the store
/// (created if missing), builds the registry, and runs on a current-thread runtime until the
/// client closes stdin or stops reading stdout. A handed-over session whose store cannot be
/// opened is served as [`without_store`] says.
///
/// # Errors
/// [`StdioError`] when the replay, the store, the registry, the runtime or the session fails.
pub fn serve_from_env() -> Result<(), StdioError> {
    crate::memory::one_arena();
    let handed_over = std::env::var(REPLAY_FD_ENV).ok();
    let (mut replay, in_file) = match &handed_over {
        Some(fd) => {
            let mut bytes = std::fs::read(format!("/dev/fd/{}", fd.trim())).map_err(|source| {
                StdioError::Replay {
                    fd: fd.clone(),
                    source,
                }
            })?;
            let (settings, rest) = protocol_lite::light::read_file(&bytes);
            let header = bytes.len() - rest.len();
            bytes.drain(..header);
            (bytes, settings)
        }
        None => (Vec::new(), Vec::new()),
    };
    // What the replay file names, else the environment (as a front end of another build set it).
    let setting = |name: &str| {
        in_file
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, text)| text.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let mut suppress = Suppress {
        initialize: setting(SUPPRESS_ID_ENV).and_then(|id| serde_json::from_str::<Value>(&id).ok()),
        acknowledgements: setting(SUPPRESS_ACKS_ENV)
            .and_then(|ids| serde_json::from_str::<Vec<Value>>(&ids).ok())
            .unwrap_or_default(),
    };
    let (settings, warnings, opened) = match crate::Settings::stdio_from_env() {
        Ok(opened) => opened,
        // Nothing was answered yet: the client sees the process fail at its start.
        Err(e) if handed_over.is_none() => return Err(StdioError::Store(e)),
        Err(e) => {
            let resumed = without_store(&replay, suppress, e).map_err(StdioError::Store)?;
            (replay, suppress) = (resumed.replay, resumed.suppress);
            resumed.opened
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
    let outcome = runtime.block_on(Box::pin(serve_stdio(server, replay, suppress)));
    // A session that ended because stdout broke may leave a read of stdin waiting on the
    // blocking pool: the process ends without waiting for the client to close stdin.
    runtime.shutdown_background();
    outcome
}

/// The store opened at last, and how to start the session from there.
struct Resumed {
    /// What opening the store gave.
    opened: (
        crate::Settings,
        Vec<catalogue::FilterWarning>,
        store::Opened,
    ),
    /// The lines the light path answered or holds, the request that found the store open and
    /// what was read after it.
    replay: Vec<u8>,
    /// What must not be answered again (a held subscription cancelled meanwhile is gone).
    suppress: Suppress,
}

/// Serves a handed-over session while its store cannot be opened (another process holds a
/// write for longer than the busy timeout; the file is corrupt, unwritable or its disk full).
///
/// Every request still gets an answer. Those handed over share the first attempt's: an
/// internal error (`-32603`) with the store's reason. After that, each new request tries to
/// open the store again, and once it opens, the session is served normally from that request
/// on (the function returns what the full session starts from); until then the request gets
/// the new attempt's reason. Trying again rather than answering errors to the end: a lock is
/// transient, and a store repaired or given room while the agent works should not cost the
/// agent its session. At each request rather than on a timer: an attempt may wait the busy
/// timeout, which a request's caller waits anyway, and an idle session stays idle.
///
/// The new start replays what the light path answered or holds ([`Unserved`]), whose answers
/// stay suppressed.
///
/// # Errors
/// The last reason the store could not be opened, once stdin ends or stdout breaks first.
fn without_store(
    replay: &[u8],
    mut suppress: Suppress,
    first: crate::SettingsError,
) -> Result<Resumed, crate::SettingsError> {
    use std::io::{BufRead as _, Write as _};
    let mut last = first;
    tracing::warn!("cannot open the store: {last}; each new request tries again");
    let Ok(mut out) = std_stream(std::io::stdout()) else {
        return Err(last);
    };
    let mut kept = Unserved::new(suppress.initialize.clone(), suppress.acknowledgements);
    // The bytes handed over may end inside a request (the front end read ahead): that piece
    // is the start of the next line read from stdin, not a line of its own.
    let complete = replay
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let (lines, unfinished) = replay.split_at(complete);
    for line in lines.split_inclusive(|&b| b == b'\n') {
        let reply = match kept.take(line) {
            Taken::Request(id) => unserved(id, &last),
            Taken::Reply(reply) => reply,
            Taken::Nothing => continue,
        };
        if out.write_all(&reply).is_err() {
            return Err(last);
        }
    }
    let Ok(stdin) = std_stream(std::io::stdin()) else {
        return Err(last);
    };
    let mut input = std::io::BufReader::new(std::io::Read::chain(
        std::io::Cursor::new(unfinished),
        stdin,
    ));
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return Err(last),
            Ok(_) => {}
        }
        let reply = match kept.take(&line) {
            Taken::Request(id) => match crate::Settings::stdio_from_env() {
                Ok(opened) => {
                    tracing::info!("the store opened: serving the session from here on");
                    let (replay, held) = kept.resume(&line, input.buffer());
                    suppress.acknowledgements = held;
                    return Ok(Resumed {
                        opened,
                        replay,
                        suppress,
                    });
                }
                Err(e) => {
                    last = e;
                    unserved(id, &last)
                }
            },
            Taken::Reply(reply) => reply,
            Taken::Nothing => continue,
        };
        if out.write_all(&reply).is_err() {
            return Err(last);
        }
    }
}

/// The internal error a request gets while the store cannot be opened.
fn unserved(id: Value, why: &crate::SettingsError) -> Vec<u8> {
    jsonrpc::ErrorReply {
        id,
        code: jsonrpc::INTERNAL_ERROR,
        message: format!(
            "hooks-mcp cannot serve this session for now: {why}; each new request tries to \
             open the store again"
        ),
    }
    .to_line()
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
/// these listings; then, on a second line, when the store's next message expires
/// (`{"nextExpiry": MILLIS}`, `null` when none will), the one change no write announces. No
/// runtime starts.
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
    let expiry = crate::watch::next_expiry(&settings.extensions, ctx.now_ms());
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, &listed)
        .map_err(std::io::Error::other)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| {
            serde_json::to_writer(&mut out, &serde_json::json!({ "nextExpiry": expiry }))
                .map_err(std::io::Error::other)
        })
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| StdioError::Session(format!("writing the listing: {e}")))
}

/// Serves `server` on this process's stdin and stdout until the client closes stdin or stops
/// reading stdout.
///
/// `replay` is read before stdin (the handshake the light front end answered, the
/// subscriptions it held, the line that triggered the handoff and any bytes it had read
/// ahead); what `suppress` names (the `initialize` response and the subscriptions'
/// acknowledgements the light path already sent) is not written again. Both streams may be
/// non-blocking (`O_NONBLOCK` set by the client on the descriptions it shares): reading and
/// writing wait until they are ready, and the flag is left as found.
///
/// # Errors
/// [`StdioError`] when the handshake or the session fails.
pub async fn serve_stdio(
    server: HooksServer,
    replay: Vec<u8>,
    suppress: Suppress,
) -> Result<(), StdioError> {
    let input = tokio::io::AsyncReadExt::chain(
        std::io::Cursor::new(replay),
        BlockingInput::new(std_stream(std::io::stdin())),
    );
    let output = BlockingOutput::new(std_stream(std::io::stdout()));
    serve_with(server, input, output, suppress, Some(stdout_closed)).await
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
    serve_with(server, input, output, suppress, None).await
}

/// [`serve`]; `closed` tells whether the client closed its end of the output (asked before
/// each request runs).
async fn serve_with<R, W>(
    server: HooksServer,
    input: R,
    output: W,
    suppress: Suppress,
    closed: Option<fn() -> bool>,
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
    let (broken, broken_seen) = watch::channel(false);
    let output = Arc::new(Output {
        writer: Mutex::new(output),
        broken,
        closed,
    });
    let listening = Arc::new(std::sync::Mutex::new(None));
    // A task of its own reads and checks lines: rmcp polls `receive` inside a `select!` and
    // drops it whenever another branch wins, so reading (and answering bad lines) there would
    // lose data. Receiving from a channel is cancel-safe.
    let (sender, receiver) = mpsc::channel(64);
    let reader = LineReader {
        reader: BufReader::new(input),
        output: output.clone(),
        sender,
        initialized: server.initialized_signal(),
        subscribed: server.subscribed_signal(),
        listening: listening.clone(),
        seen_request: false,
        lifecycle: false,
        stateless: false,
        server: server.clone(),
    };
    let reader = tokio::spawn(reader.run());
    let transport = LineTransport {
        receiver,
        output,
        broken: broken_seen,
        trim: QuietTrim::start(),
        suppress,
        suppress_acks,
        subscribed: server.subscribed_signal(),
        listening,
        server: server.clone(),
    };
    let pusher = crate::push::Pusher::of(&server);
    let sightings = server.sightings();
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
    // The last calls' sightings, recorded after their answers, are not lost with the process.
    sightings.flush(SIGHTINGS_FLUSH).await;
    outcome
}

/// How long the end of a session waits for its last tool calls' sightings (a store locked by
/// another process past this costs the record of them, not the session's exit).
const SIGHTINGS_FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

struct LineReader<R, W> {
    reader: BufReader<R>,
    output: Arc<Output<W>>,
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
    /// A request before any `initialize` chose the stateless era for the process
    /// (`modern::chooses_stateless`, rmcp's rule): a later `initialize` is refused.
    stateless: bool,
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
    /// The input ended, or the output broke: the client is gone (the stdio transport's way to
    /// end a session), so its open `subscriptions/listen` end too, and rmcp, which waits for
    /// every running request before it returns, lets the process exit at once rather than
    /// seconds later. Requests still running (a tool call) are answered first.
    fn end(&self) {
        self.server.end_subscriptions();
    }

    async fn run(mut self) {
        let mut line = Vec::with_capacity(4096);
        loop {
            line.clear();
            // Nobody reads the answers any more: read no more requests.
            if self.output.is_broken() {
                return self.end();
            }
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
        // Whether the request, once rmcp has it, chooses the stateless era.
        let mut chooses = false;
        let (id, method) = match incoming {
            jsonrpc::Incoming::Notification { .. } if !self.seen_request => return None,
            jsonrpc::Incoming::Request { id, method, params } => {
                // The light path's rules, so both sides of the hand-off answer alike (rmcp
                // words some refusals otherwise, and answers an `initialize` after the
                // stateless era was chosen, then refuses every request without `_meta`).
                let era = modern::Era {
                    initialized: self.lifecycle,
                    stateless: self.stateless,
                };
                let reply = modern::answered_alike(&id, &method, params.as_ref(), era);
                if let Some(reply) = reply {
                    self.seen_request = true;
                    self.write_line(&reply).await;
                    return None;
                }
                chooses = !self.lifecycle && modern::chooses_stateless(&method, params.as_ref());
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
                self.stateless |= chooses;
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

    /// Writes one reply line of the reader's own (one that cannot be written ends the session,
    /// see [`Output::write`]).
    async fn write_line(&mut self, line: &[u8]) {
        self.output.write(line).await;
    }
}

struct LineTransport<W> {
    receiver: mpsc::Receiver<ClientJsonRpcMessage>,
    output: Arc<Output<W>>,
    /// Turns true once the output broke (the reader may be waiting for a line that never
    /// comes: the session ends without it).
    broken: watch::Receiver<bool>,
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
    /// The server, whose open subscriptions end when the output breaks.
    server: HooksServer,
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
        let output = self.output.clone();
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            if !bytes.is_empty() {
                // A reply that cannot be written ends the session (`Output::write` says so once);
                // rmcp would only log each failure, so it is not told.
                output.write(&bytes).await;
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = tokio::select! {
            biased;
            () = until_broken(&mut self.broken) => None,
            message = self.receiver.recv() => message,
        };
        // A request's answer must reach the client before the request runs: what it changes
        // would otherwise be done with nobody told.
        let message = message
            .filter(|m| !matches!(m, JsonRpcMessage::Request(_)) || self.output.still_open());
        if message.is_none() && self.output.is_broken() {
            self.server.end_subscriptions();
        }
        self.trim.touch();
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if self.output.is_broken() {
            return Ok(());
        }
        let mut writer = self.output.writer.lock().await;
        writer.flush().await
    }
}

/// Waits until `broken` turns true (never, if its sender is gone).
async fn until_broken(broken: &mut watch::Receiver<bool>) {
    if broken.wait_for(|b| *b).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Where the session's answers go: the reader's own (to bad lines) and rmcp's, one line at a
/// time. An answer that cannot be written means the client stopped reading (stdout closed,
/// `EPIPE`): the session ends there, reading no more requests, so that nothing is changed
/// whose confirmation nobody would receive.
struct Output<W> {
    writer: Mutex<W>,
    /// Turns true once an answer could not be written.
    broken: watch::Sender<bool>,
    /// Whether the client closed its end of the output, asked before each request runs (the
    /// process's stdout; `None` for other writers).
    closed: Option<fn() -> bool>,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes one line and flushes it; whether it was written. The first failure ends the
    /// session (logged once); after it nothing more is written.
    async fn write(&self, line: &[u8]) -> bool {
        if self.is_broken() {
            return false;
        }
        let mut writer = self.writer.lock().await;
        let written = async {
            writer.write_all(line).await?;
            writer.flush().await
        };
        match written.await {
            Ok(()) => true,
            Err(e) => {
                self.break_off(&e.to_string());
                false
            }
        }
    }

    /// Whether an answer could not be written.
    fn is_broken(&self) -> bool {
        *self.broken.borrow()
    }

    /// Whether an answer can still reach the client: false once one could not be written, or
    /// once the client closed its end of stdout.
    fn still_open(&self) -> bool {
        if self.is_broken() {
            return false;
        }
        if self.closed.is_some_and(|closed| closed()) {
            self.break_off("the client closed its end of stdout");
            return false;
        }
        true
    }

    fn break_off(&self, why: &str) {
        if !self.broken.send_replace(true) {
            tracing::warn!("cannot deliver answers ({why}): ending the session");
        }
    }
}

/// Whether the client closed its end of this process's stdout (a pipe without a reader, a
/// socket or terminal hung up): no answer can reach it.
fn stdout_closed() -> bool {
    protocol_lite::fdio::hung_up(&std::io::stdout())
}

/// This process's stdin or stdout, read or written directly through a duplicate of its
/// descriptor (no buffer of std's in between). A client may hand its pipes over with
/// `O_NONBLOCK` set: a read or write that would block waits in `poll` until the stream is
/// ready (on the blocking pool, or before the runtime starts), the flag left as found.
type StdStream = protocol_lite::fdio::Waiting<std::fs::File>;

/// [`StdStream`] over a duplicate of `fd`.
fn std_stream(fd: impl std::os::fd::AsFd) -> std::io::Result<StdStream> {
    Ok(protocol_lite::fdio::Waiting(
        fd.as_fd().try_clone_to_owned()?.into(),
    ))
}

/// The most one read of stdin takes.
const READ_CHUNK: usize = 64 * 1024;

/// A finished blocking read or write: the stream, its buffer and what the call said.
type Done<T> = tokio::task::JoinHandle<(StdStream, Vec<u8>, std::io::Result<T>)>;

/// The stream, or why it is not there: not open at the start, or lost with a task that failed.
fn lost(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        format!("{what} is not available"),
    )
}

/// [`StdStream`] (stdin) read on the blocking pool, one read at a time.
#[derive(Debug)]
struct BlockingInput {
    stream: Option<StdStream>,
    pending: Option<Done<usize>>,
    /// What the last read brought and the reader has not taken yet (`buf[at..]`).
    buf: Vec<u8>,
    at: usize,
}

impl BlockingInput {
    fn new(stream: std::io::Result<StdStream>) -> BlockingInput {
        if let Err(e) = &stream {
            tracing::debug!("stdin cannot be read: {e}");
        }
        BlockingInput {
            stream: stream.ok(),
            pending: None,
            buf: Vec::new(),
            at: 0,
        }
    }
}

impl AsyncRead for BlockingInput {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        dst: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            if this.at < this.buf.len() {
                let n = dst.remaining().min(this.buf.len() - this.at);
                dst.put_slice(&this.buf[this.at..this.at + n]);
                this.at += n;
                return Poll::Ready(Ok(()));
            }
            if dst.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if let Some(pending) = &mut this.pending {
                let joined = std::task::ready!(std::pin::Pin::new(pending).poll(cx));
                this.pending = None;
                let (stream, buf, read) = joined.map_err(std::io::Error::other)?;
                this.stream = Some(stream);
                this.buf = buf;
                this.at = 0;
                let n = read?;
                this.buf.truncate(n);
                if n == 0 {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            let Some(mut stream) = this.stream.take() else {
                return Poll::Ready(Err(lost("stdin")));
            };
            let mut buf = std::mem::take(&mut this.buf);
            buf.resize(dst.remaining().min(READ_CHUNK), 0);
            this.pending = Some(tokio::task::spawn_blocking(move || {
                let read = std::io::Read::read(&mut stream, &mut buf);
                (stream, buf, read)
            }));
        }
    }
}

/// [`StdStream`] (stdout) written on the blocking pool: a write is handed over and reported
/// done at once; its outcome comes with the next write or flush (so a flush waits for every
/// byte to be written, or fails).
#[derive(Debug)]
struct BlockingOutput {
    stream: Option<StdStream>,
    pending: Option<Done<()>>,
    /// The buffer of the last write, for the next.
    spare: Vec<u8>,
}

impl BlockingOutput {
    fn new(stream: std::io::Result<StdStream>) -> BlockingOutput {
        if let Err(e) = &stream {
            tracing::debug!("stdout cannot be written: {e}");
        }
        BlockingOutput {
            stream: stream.ok(),
            pending: None,
            spare: Vec::new(),
        }
    }

    /// Waits for the write in flight; what it said.
    fn poll_done(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let Some(pending) = &mut self.pending else {
            return std::task::Poll::Ready(Ok(()));
        };
        let joined = std::task::ready!(std::pin::Pin::new(pending).poll(cx));
        self.pending = None;
        let (stream, spare, written) = joined.map_err(std::io::Error::other)?;
        self.stream = Some(stream);
        self.spare = spare;
        std::task::Poll::Ready(written)
    }
}

impl AsyncWrite for BlockingOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_done(cx))?;
        let Some(mut stream) = this.stream.take() else {
            return std::task::Poll::Ready(Err(lost("stdout")));
        };
        let mut buf = std::mem::take(&mut this.spare);
        buf.clear();
        buf.extend_from_slice(data);
        this.pending = Some(tokio::task::spawn_blocking(move || {
            let written = std::io::Write::write_all(&mut stream, &buf);
            (stream, buf, written)
        }));
        std::task::Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.get_mut().poll_done(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.get_mut().poll_done(cx)
    }
}
