//! Streamable HTTP sessions: the session layer rmcp's `StreamableHttpService` drives, kept lean
//! because every agent session on the machine holds one for hours, mostly idle.
//!
//! rmcp's own `LocalSessionManager` runs a worker task per session between the HTTP side and
//! the MCP service, with channels whose first blocks hold 32 whole messages each (about 16 KiB
//! apiece), and a replay cache per reply stream. Here there is no worker: a request's reply
//! stream is registered under its JSON-RPC id, the message goes straight to the service, and
//! the service's transport routes each message it sends, synchronously and in order:
//! - a response or error ends the stream of the request it answers;
//! - a progress or cancellation notification, or a request or notification the service makes
//!   while answering one (marked with rmcp's `OriginatingRequestId`), joins that request's
//!   stream;
//! - everything else (`tools/list_changed`, log messages) goes to the session's standalone
//!   GET stream, waiting there (a bounded few) until the client opens one.
//!
//! Reply streams carry no event ids (the daemon turns rmcp's priming event off), so a client
//! that loses one does not resume it (a `Last-Event-ID` gets an empty stream): it retries the
//! call. State that matters lives in the store, never in a stream.
//!
//! What a session needs to go on elsewhere lives in the store too ([`StoredSessions`], rmcp's
//! session store over [`store::DaemonStateStore`]): the client's `initialize` parameters, kept
//! after its handshake and forgotten on `DELETE`. A request naming a session this process does
//! not hold (opened by another daemon of the store, or before a restart, or expired here) is
//! served by a session restored under the same id ([`HttpSessions::restore_session`]): rmcp
//! replays the handshake to it from the stored parameters, and the client never notices.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::Stream;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta, JsonRpcMessage,
    JsonRpcNotification, ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{OriginatingRequestId, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use store::StoreHandle;
use tokio::sync::{mpsc, oneshot};

use crate::state::{Kind, SessionPermit, Sessions};

/// Client messages a session buffers before a POST waits. Every channel here carries boxes:
/// a tokio channel allocates its first 32 slots when created, and a slot the size of a whole
/// message would make an idle session pay for 32 of them.
const INCOMING_CAPACITY: usize = 16;
/// Messages a reply stream buffers before the service waits for the client to read.
const REPLY_CAPACITY: usize = 4;
/// Messages the standalone stream buffers before the service waits.
const STANDALONE_CAPACITY: usize = 16;
/// Messages kept for a standalone stream not yet open; older ones are dropped past this.
const WAITING_LIMIT: usize = 16;
// A new GET stream takes every waiting message at once, so none is left behind newer ones.
const _: () = assert!(WAITING_LIMIT <= STANDALONE_CAPACITY);

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    /// The session cap is reached.
    #[error(
        "the session cap is reached; retry later, close idle sessions, or raise \
         HOOKS_MCP_MAX_SESSIONS"
    )]
    Full,
    /// No such session (expired, deleted, or from before a restart).
    #[error("no such session; initialize a new one")]
    NotFound,
    /// The session ended while the message was on its way.
    #[error("the session has ended; initialize a new one")]
    Ended,
    /// The message cannot open a reply stream.
    #[error("only a request opens a reply stream")]
    NotARequest,
    /// Another request in this session is being answered under the same id.
    #[error("request id {0} is already being answered in this session; use a new id")]
    DuplicateId(RequestId),
    /// Replies are not replayed.
    #[error("reply streams are not resumable here; retry the call instead")]
    NotResumable,
}

/// The Streamable HTTP sessions of the daemon, under its session cap.
pub(crate) struct HttpSessions {
    live: Mutex<HashMap<SessionId, Session>>,
    cap: Arc<Sessions>,
    idle: Duration,
    /// Where sessions are kept for any daemon of the store to resume (none in unit tests).
    kept: Option<Arc<StoredSessions>>,
}

/// The way into a session's service.
type Incoming = mpsc::Sender<Box<ClientJsonRpcMessage>>;
/// A reply stream or the standalone stream, as the service's side sees it.
type Outgoing = mpsc::Sender<Box<ServerJsonRpcMessage>>;

/// What the HTTP side holds of one session.
struct Session {
    /// Into the service. Dropping it (with the session) ends the service.
    incoming: Incoming,
    routes: Arc<Mutex<Routes>>,
    _permit: SessionPermit,
}

/// Where the service's messages go.
#[derive(Default)]
struct Routes {
    /// Reply streams of the requests being answered.
    replies: HashMap<RequestId, Outgoing>,
    /// Progress tokens of those requests.
    progress: HashMap<ProgressToken, RequestId>,
    /// The `initialize` request, answered as a value rather than a stream.
    initialize: Option<(RequestId, oneshot::Sender<ServerJsonRpcMessage>)>,
    /// The standalone GET stream, while one is open.
    standalone: Option<Outgoing>,
    /// Standalone messages sent while no GET stream was open.
    waiting: VecDeque<Box<ServerJsonRpcMessage>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl HttpSessions {
    /// Sessions counted under `cap`, closed after `idle` without traffic.
    pub(crate) fn new(
        cap: Arc<Sessions>,
        idle: Duration,
        kept: Option<Arc<StoredSessions>>,
    ) -> HttpSessions {
        HttpSessions {
            live: Mutex::default(),
            cap,
            idle,
            kept,
        }
    }

    /// Whether a session with this id can be served: live here, or kept in the store for any
    /// daemon to resume (not ended, pruned or never created).
    pub(crate) async fn is_live(&self, id: &str) -> bool {
        if lock(&self.live).contains_key(id) {
            return true;
        }
        match &self.kept {
            Some(kept) => kept.load(id).await.is_ok_and(|state| state.is_some()),
            None => false,
        }
    }

    /// Whether the session `id` is live in this daemon's memory (not only kept in the store).
    pub(crate) fn holds(&self, id: &str) -> bool {
        lock(&self.live).contains_key(id)
    }

    /// A new session under `id` and the cap: its transport for the service.
    fn open(&self, id: SessionId) -> Result<SessionTransport, SessionError> {
        let permit = self.cap.admit(Kind::Http).ok_or(SessionError::Full)?;
        let (incoming, incoming_rx) = mpsc::channel(INCOMING_CAPACITY);
        let routes = Arc::new(Mutex::new(Routes::default()));
        lock(&self.live).insert(
            id.clone(),
            Session {
                incoming,
                routes: routes.clone(),
                _permit: permit,
            },
        );
        Ok(SessionTransport {
            incoming: incoming_rx,
            routes,
            idle: self.idle,
            session: id,
        })
    }

    /// The session's way in and its routes.
    fn handle(&self, id: &SessionId) -> Result<(Incoming, Arc<Mutex<Routes>>), SessionError> {
        lock(&self.live)
            .get(id)
            .map(|s| (s.incoming.clone(), s.routes.clone()))
            .ok_or(SessionError::NotFound)
    }

    /// Hands `message` to the session's service.
    async fn push(incoming: &Incoming, message: ClientJsonRpcMessage) -> Result<(), SessionError> {
        incoming
            .send(Box::new(message))
            .await
            .map_err(|_| SessionError::Ended)
    }
}

impl std::fmt::Debug for HttpSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSessions")
            .field("live", &lock(&self.live).len())
            .finish()
    }
}

/// The request's JSON-RPC id, if `message` is a request.
fn request_id(message: &ClientJsonRpcMessage) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Request(r) => Some(r.id.clone()),
        _ => None,
    }
}

/// A receiver as a stream of SSE messages (no event ids: see the module docs).
fn stream_of(
    mut rx: mpsc::Receiver<Box<ServerJsonRpcMessage>>,
) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
    futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|m| m.map(|m| ServerSseMessage::from_message(*m)))
    })
}

impl SessionManager for HttpSessions {
    type Error = SessionError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let id = rmcp::transport::common::server_side_http::session_id();
        let transport = self.open(id.clone())?;
        tracing::debug!(session = %id, "streamable HTTP session opened");
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let (incoming, routes) = self.handle(id)?;
        let request = request_id(&message).ok_or(SessionError::NotARequest)?;
        let (tx, rx) = oneshot::channel();
        lock(&routes).initialize = Some((request, tx));
        Self::push(&incoming, message).await?;
        rx.await.map_err(|_| SessionError::Ended)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(lock(&self.live).contains_key(id))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let Some(session) = lock(&self.live).remove(id) else {
            return Ok(());
        };
        // Every open stream of the session ends now; the service ends once its way in closes.
        let mut routes = lock(&session.routes);
        routes.replies.clear();
        routes.progress.clear();
        routes.standalone = None;
        routes.waiting.clear();
        drop(routes);
        tracing::debug!(session = %id, "streamable HTTP session closed");
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (incoming, routes) = self.handle(id)?;
        let JsonRpcMessage::Request(request) = &message else {
            return Err(SessionError::NotARequest);
        };
        let (tx, rx) = mpsc::channel(REPLY_CAPACITY);
        {
            let mut routes = lock(&routes);
            if routes.replies.contains_key(&request.id) {
                return Err(SessionError::DuplicateId(request.id.clone()));
            }
            routes.replies.insert(request.id.clone(), tx);
            if let Some(token) = progress_token(&request.request) {
                routes.progress.insert(token, request.id.clone());
            }
        }
        let request_id = request.id.clone();
        if let Err(e) = Self::push(&incoming, message).await {
            lock(&routes).forget(&request_id);
            return Err(e);
        }
        Ok(stream_of(rx))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        let (incoming, _) = self.handle(id)?;
        Self::push(&incoming, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (_, routes) = self.handle(id)?;
        let (tx, rx) = mpsc::channel(STANDALONE_CAPACITY);
        let mut routes = lock(&routes);
        // What waited for a stream goes first (it all fits: see WAITING_LIMIT); a newer GET
        // stream replaces an older one.
        for message in routes.waiting.drain(..) {
            let _ = tx.try_send(message);
        }
        routes.standalone = Some(tx);
        Ok(stream_of(rx))
    }

    async fn resume(
        &self,
        _id: &SessionId,
        _last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Err::<futures_util::stream::Empty<ServerSseMessage>, _>(SessionError::NotResumable)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // rmcp calls this once it found the session's state in the store; it then replays the
        // handshake to the new session's service.
        if lock(&self.live).contains_key(&id) {
            return Ok(RestoreOutcome::AlreadyPresent);
        }
        let transport = self.open(id.clone())?;
        tracing::debug!(session = %id, "streamable HTTP session resumed from the store");
        Ok(RestoreOutcome::Restored(transport))
    }
}

/// The sessions kept in the store: rmcp's [`SessionStore`] over
/// [`store::DaemonStateStore`], each call on the blocking pool.
pub(crate) struct StoredSessions {
    store: StoreHandle,
}

impl StoredSessions {
    /// Sessions kept in `store`.
    pub(crate) fn new(store: StoreHandle) -> StoredSessions {
        StoredSessions { store }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&StoreHandle) -> store::StoreResult<T> + Send + 'static,
    ) -> Result<T, SessionStoreError> {
        let store = self.store.clone();
        match tokio::task::spawn_blocking(move || call(&store)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(Box::new(e)),
            Err(e) => Err(Box::new(e)),
        }
    }

    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let id = id.to_owned();
        let now = server_full::now_ms();
        let Some(text) = self
            .blocking(move |store| store.http_session(&id, now))
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_str(&text)?))
    }

    async fn save(&self, id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let (id, text) = (id.to_owned(), serde_json::to_string(state)?);
        let now = server_full::now_ms();
        self.blocking(move |store| store.save_http_session(&id, &text, now))
            .await
    }

    async fn forget(&self, id: &str) -> Result<(), SessionStoreError> {
        let id = id.to_owned();
        self.blocking(move |store| store.delete_http_session(&id).map(|_| ()))
            .await
    }
}

/// A boxed future, as rmcp's `async_trait` [`SessionStore`] takes them.
type StoreFuture<'a, T> =
    std::pin::Pin<Box<dyn Future<Output = Result<T, SessionStoreError>> + Send + 'a>>;

impl SessionStore for StoredSessions {
    fn load<'a, 'b, 'c>(&'a self, session_id: &'b str) -> StoreFuture<'c, Option<SessionState>>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        Box::pin(StoredSessions::load(self, session_id))
    }

    fn store<'a, 'b, 'd, 'c>(
        &'a self,
        session_id: &'b str,
        state: &'d SessionState,
    ) -> StoreFuture<'c, ()>
    where
        'a: 'c,
        'b: 'c,
        'd: 'c,
        Self: 'c,
    {
        Box::pin(self.save(session_id, state))
    }

    fn delete<'a, 'b, 'c>(&'a self, session_id: &'b str) -> StoreFuture<'c, ()>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        Box::pin(self.forget(session_id))
    }
}

fn progress_token(request: &ClientRequest) -> Option<ProgressToken> {
    request.get_meta().get_progress_token()
}

/// Where one server message goes.
enum Route {
    /// A reply stream or the standalone stream without room yet: the send waits for it.
    Stream(Outgoing, Box<ServerJsonRpcMessage>),
    /// The answer to `initialize` (boxed: it is sent once per session).
    Initialize(
        oneshot::Sender<ServerJsonRpcMessage>,
        Box<ServerJsonRpcMessage>,
    ),
    /// Delivered already, kept for a stream not open yet, or dropped.
    Done,
}

impl Routes {
    fn forget(&mut self, id: &RequestId) {
        self.replies.remove(id);
        self.progress.retain(|_, request| request != id);
    }

    /// The reply stream of request `id`, if it is still being answered.
    fn reply(&self, id: &RequestId) -> Option<Outgoing> {
        self.replies.get(id).cloned()
    }

    /// Decides where `message` goes, delivering it at once when its stream has room.
    fn route(&mut self, message: ServerJsonRpcMessage) -> Route {
        let answered = match &message {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        if let Some(id) = answered {
            if self
                .initialize
                .as_ref()
                .is_some_and(|(init, _)| *init == id)
                && let Some((_, tx)) = self.initialize.take()
            {
                return Route::Initialize(tx, Box::new(message));
            }
            let Some(tx) = self.replies.remove(&id) else {
                tracing::debug!(%id, "dropping the answer to a request whose stream is gone");
                return Route::Done;
            };
            self.progress.retain(|_, request| *request != id);
            // Once this sender and the message are gone, the stream ends.
            return deliver(tx, message);
        }
        let related = match &message {
            JsonRpcMessage::Request(r) => r
                .request
                .extensions()
                .get::<OriginatingRequestId>()
                .and_then(|o| self.reply(&o.0)),
            JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ServerNotification::ProgressNotification(n),
                ..
            }) => self
                .progress
                .get(&n.params.progress_token)
                .and_then(|id| self.reply(id)),
            JsonRpcMessage::Notification(JsonRpcNotification {
                notification: ServerNotification::CancelledNotification(n),
                ..
            }) => n.params.request_id.as_ref().and_then(|id| self.reply(id)),
            // A notification a tool sent during its call (a log message) joins that call.
            JsonRpcMessage::Notification(n) => n
                .notification
                .extensions()
                .get::<OriginatingRequestId>()
                .and_then(|o| self.reply(&o.0)),
            _ => None,
        };
        if let Some(tx) = related {
            return deliver(tx, message);
        }
        match &self.standalone {
            Some(tx) if !tx.is_closed() => deliver(tx.clone(), message),
            _ => {
                self.standalone = None;
                if self.waiting.len() >= WAITING_LIMIT {
                    self.waiting.pop_front();
                    tracing::debug!("no GET stream: dropping the oldest waiting message");
                }
                self.waiting.push_back(Box::new(message));
                Route::Done
            }
        }
    }
}

/// Puts `message` on `tx` now when there is room; otherwise the caller waits for room.
fn deliver(tx: Outgoing, message: ServerJsonRpcMessage) -> Route {
    match tx.try_send(Box::new(message)) {
        // Closed: the client stopped reading or left, so there is nothing to deliver to.
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => Route::Done,
        Err(mpsc::error::TrySendError::Full(message)) => Route::Stream(tx, message),
    }
}

/// The next client message of a session, or `None` when its way in closed or nothing came for
/// `idle` (the session then ends). rmcp polls a transport's `receive` inside `select!` and
/// restarts it after any event, so the timeout measures time without any traffic.
pub(crate) async fn receive_within(
    incoming: &mut mpsc::Receiver<Box<ClientJsonRpcMessage>>,
    idle: Duration,
    transport: &str,
    session: &str,
) -> Option<ClientJsonRpcMessage> {
    match tokio::time::timeout(idle, incoming.recv()).await {
        Ok(message) => message.map(|m| *m),
        Err(_) => {
            tracing::info!(session, "closing an idle {transport} session");
            None
        }
    }
}

/// One session as the MCP service sees it.
pub(crate) struct SessionTransport {
    incoming: mpsc::Receiver<Box<ClientJsonRpcMessage>>,
    routes: Arc<Mutex<Routes>>,
    idle: Duration,
    session: SessionId,
}

impl Transport<RoleServer> for SessionTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Routed here, in the order the service sends: a notification sent before a response
        // is on its stream before the response is on its own.
        let route = lock(&self.routes).route(item);
        async move {
            match route {
                Route::Stream(tx, message) => {
                    // The client stopped reading or left: nothing to deliver to.
                    let _ = tx.send(message).await;
                }
                Route::Initialize(tx, message) => {
                    let _ = tx.send(*message);
                }
                Route::Done => {}
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        receive_within(
            &mut self.incoming,
            self.idle,
            "streamable HTTP",
            &self.session,
        )
        .await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use futures_util::StreamExt;
    use serde_json::{Value, json};

    use super::*;

    fn client(value: Value) -> ClientJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    fn server(value: Value) -> ServerJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    fn call(id: i64, meta: Value) -> ClientJsonRpcMessage {
        client(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "channel_list", "arguments": {}, "_meta": meta}
        }))
    }

    fn answer(id: i64) -> ServerJsonRpcMessage {
        server(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}))
    }

    fn list_changed() -> ServerJsonRpcMessage {
        server(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
    }

    fn json_of(message: &ServerSseMessage) -> Value {
        serde_json::to_value(message.message.as_deref().unwrap()).unwrap()
    }

    async fn session(max: usize) -> (HttpSessions, SessionId, SessionTransport) {
        let sessions =
            HttpSessions::new(Arc::new(Sessions::new(max)), Duration::from_secs(60), None);
        let (id, transport) = sessions.create_session().await.unwrap();
        (sessions, id, transport)
    }

    #[tokio::test]
    async fn a_reply_stream_gets_its_progress_then_its_answer_and_ends() {
        let (sessions, id, mut transport) = session(4).await;
        let stream = sessions
            .create_stream(&id, call(7, json!({"progressToken": "p7"})))
            .await
            .unwrap();
        let received = transport.receive().await.unwrap();
        assert!(matches!(received, JsonRpcMessage::Request(ref r) if r.id == RequestId::Number(7)));
        let progress = server(json!({
            "jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "p7", "progress": 1}
        }));
        transport.send(progress).await.unwrap();
        // Another request's answer and an unrelated notification do not join this stream.
        transport.send(answer(8)).await.unwrap();
        transport.send(list_changed()).await.unwrap();
        transport.send(answer(7)).await.unwrap();
        let got: Vec<Value> = stream.map(|m| json_of(&m)).collect().await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0]["method"], "notifications/progress");
        assert_eq!(got[1]["id"], 7);
    }

    #[tokio::test]
    async fn standalone_messages_wait_for_a_get_stream_and_only_the_newest_are_kept() {
        let (sessions, id, mut transport) = session(4).await;
        for i in 0..(WAITING_LIMIT + 4) {
            let message = server(json!({
                "jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": i}
            }));
            transport.send(message).await.unwrap();
        }
        let mut stream = Box::pin(sessions.create_standalone_stream(&id).await.unwrap());
        let first = stream.next().await.unwrap();
        assert_eq!(
            json_of(&first)["params"]["data"],
            4,
            "the four oldest were dropped"
        );
        // Once the stream is open, new messages go straight to it, after the waiting ones.
        transport.send(list_changed()).await.unwrap();
        let mut rest = Vec::new();
        for _ in 0..WAITING_LIMIT {
            rest.push(json_of(&stream.next().await.unwrap()));
        }
        assert_eq!(rest[WAITING_LIMIT - 2]["params"]["data"], WAITING_LIMIT + 3);
        assert_eq!(
            rest[WAITING_LIMIT - 1]["method"],
            "notifications/tools/list_changed"
        );
    }

    #[tokio::test]
    async fn a_duplicate_request_id_is_refused_while_the_first_is_answered() {
        let (sessions, id, mut transport) = session(4).await;
        let _first = sessions
            .create_stream(&id, call(1, json!({})))
            .await
            .unwrap();
        let second = sessions.create_stream(&id, call(1, json!({}))).await;
        assert!(matches!(second, Err(SessionError::DuplicateId(_))));
        transport.receive().await.unwrap();
        transport.send(answer(1)).await.unwrap();
        // Answered: the id is free again.
        assert!(
            sessions
                .create_stream(&id, call(1, json!({})))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn closing_ends_the_service_and_the_streams_and_frees_the_cap() {
        let (sessions, id, mut transport) = session(1).await;
        assert!(matches!(
            sessions.create_session().await,
            Err(SessionError::Full)
        ));
        let stream = sessions.create_standalone_stream(&id).await.unwrap();
        sessions.close_session(&id).await.unwrap();
        assert!(!sessions.has_session(&id).await.unwrap());
        assert!(
            transport.receive().await.is_none(),
            "the service's way in closed"
        );
        assert_eq!(stream.count().await, 0, "the GET stream ended");
        assert!(matches!(
            sessions.accept_message(&id, call(2, json!({}))).await,
            Err(SessionError::NotFound)
        ));
        assert!(
            sessions.create_session().await.is_ok(),
            "the place is free again"
        );
    }

    #[tokio::test]
    async fn initialize_is_answered_as_a_value() {
        let (sessions, id, mut transport) = session(2).await;
        let init = client(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}
        }));
        let service = tokio::spawn(async move {
            let message = transport.receive().await.unwrap();
            assert!(matches!(message, JsonRpcMessage::Request(_)));
            transport.send(answer(0)).await.unwrap();
            transport
        });
        let response = sessions.initialize_session(&id, init).await.unwrap();
        assert!(
            matches!(response, JsonRpcMessage::Response(ref r) if r.id == RequestId::Number(0))
        );
        drop(service.await.unwrap());
    }
}
