//! The daemon's HTTP side: the router (`/health`, Streamable HTTP at `/mcp`, legacy SSE at
//! `/sse` + `/messages`, forwarded hook events at `/hook/{event}`, HTTP hooks at
//! `/hooks/{Event}`, Prometheus metrics at `/metrics`), access checks, the session cap,
//! in-flight accounting, and the listeners.
//!
//! The listener is bound before the store is opened so that `/health` can answer 503 with the
//! phase in progress during start-up; MCP requests get 503 until the last phase completes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::transport::streamable_http_server::session::SessionStore;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use tokio_util::sync::CancellationToken;

use crate::fast_call;
use crate::health;
use crate::http_sessions::{HttpSessions, StoredSessions};
use crate::metrics::{self, Snapshot, StoreOperation, StoreSnapshot};
use crate::sse::SseSessions;
use crate::state::{InFlightGuard, Sessions, Shared};
use server_full::HooksServer;

/// The top-level router: `/health` always, everything else through access checks and the
/// readiness gate to the MCP routes.
pub(crate) fn app(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/health", get(health::handler))
        .route("/health/ready", get(health::ready))
        .route("/health/live", get(health::live))
        .fallback(gate)
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            check_host_and_origin,
        ))
        .with_state(shared)
}

async fn check_host_and_origin(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let checked = if is_balancer_probe(&request) {
        shared.access.check_origin(request.headers())
    } else {
        let target = request.uri().authority().map(|a| a.as_str());
        shared
            .access
            .check_host_and_origin(request.headers(), target)
    };
    match checked {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

/// Whether `request` is a plain probe (`GET` or `HEAD /health` with no level or
/// `level=alive`, `/health/ready` or `/health/live`), which needs no `Host` check: load balancers send none (HAProxy's
/// `GET /health HTTP/1.0`) or name the address they probe (a Kubernetes probe's
/// `Host: 10.1.2.3:8080`), and the answer (ready or not, and for how long) is no secret. The
/// `db` and `full` levels, and every other route, keep the DNS-rebinding checks; `Origin`,
/// which only browsers send, is checked everywhere.
fn is_balancer_probe(request: &Request) -> bool {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return false;
    }
    match request.uri().path() {
        "/health" => {}
        "/health/ready" | "/health/live" => return true,
        _ => return false,
    }
    // Decoded as the handler decodes them: `?%6cevel=full` is `level=full`, which keeps the
    // `Host` check. A query that does not decode is no probe (the handler refuses it).
    let Ok(pairs) = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(request.uri())
    else {
        return false;
    };
    pairs
        .0
        .iter()
        .all(|(key, level)| key != "level" || matches!(level.trim(), "" | "alive"))
}

/// Authenticates, waits for readiness, applies the session cap, and counts the request in
/// flight until its response body ends.
async fn gate(State(shared): State<Arc<Shared>>, mut request: Request) -> Response {
    let path = request.uri().path();
    if path == operator_web::CONSOLE_PREFIX || path.starts_with("/console/") {
        // The console checks its own sessions (a cookie, or the bearer token to start one).
        let Some(console) = shared.console.get().filter(|_| shared.status.is_serving()) else {
            return shared.status.unavailable();
        };
        return match tower::ServiceExt::oneshot(console.clone(), request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
    }
    if let Err(refusal) = shared.access.authorize(request.headers()) {
        return refusal.into_response();
    }
    // The token has done its job: nothing downstream (handlers, logs) ever sees it.
    request.headers_mut().remove(header::AUTHORIZATION);
    let Some(router) = shared.mcp.get().filter(|_| shared.status.is_serving()) else {
        return shared.status.unavailable();
    };
    let path = request.uri().path();
    if path == "/metrics" {
        let method_ok = matches!(*request.method(), Method::GET | Method::HEAD);
        let openmetrics = request
            .headers()
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("application/openmetrics-text"));
        drop(request);
        return scrape(&shared, method_ok, openmetrics).await;
    }
    let hook = (path.strip_prefix("/hook/").map(|e| (e, false)))
        .or_else(|| path.strip_prefix("/hooks/").map(|e| (e, true)));
    if let Some((event, http_hook)) = hook {
        let Some(store) = shared.status.store.get().cloned() else {
            return shared.status.unavailable();
        };
        let event = event.to_owned();
        let _in_flight = shared.inflight.enter();
        return shared.hooks.handle(event, http_hook, store, request).await;
    }
    let opens_session = match (request.method(), request.uri().path()) {
        (&Method::POST, "/mcp") => opens_a_session(request.headers()),
        (&Method::GET, "/sse") => true,
        _ => false,
    };
    if opens_session && shared.sessions.is_full() {
        return shared.sessions.full_response();
    }
    let guard = (request.method() == Method::POST && request.uri().path() == "/mcp")
        .then(|| shared.inflight.enter());
    // A stateless tools/call is answered here, past the same checks and counted the same way;
    // anything else, and anything unusual, goes on to rmcp as it came.
    let request = match (&guard, shared.fast_calls.get()) {
        (Some(_), Some(fast)) => match fast.answer(request).await {
            fast_call::Outcome::Answered(response) => return counted(response, guard),
            fast_call::Outcome::Declined(request) => request,
        },
        _ => request,
    };
    let response = match tower::ServiceExt::oneshot(router.clone(), request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    counted(response, guard)
}

/// Whether a POST to `/mcp` with `headers` may open a legacy session, and so meets the cap: one
/// without `Mcp-Session-Id`, unless it is a 2026-07-28 request (its `Mcp-Method` names a method
/// other than `initialize`), which holds no session and is answered past a full cap. Its
/// header is checked against its body downstream, so the header cannot smuggle an
/// `initialize` past the cap.
fn opens_a_session(headers: &axum::http::HeaderMap) -> bool {
    if headers.contains_key("mcp-session-id") {
        return false;
    }
    match headers.get("mcp-method") {
        Some(method) => method.as_bytes().eq_ignore_ascii_case(b"initialize"),
        None => true,
    }
}

/// `response`, counted in flight (when `guard` is some) until its body has been sent or the
/// client dropped it: the reply to a request streams (SSE) until its response was sent.
fn counted(response: Response, guard: Option<InFlightGuard>) -> Response {
    match guard {
        Some(guard) => response.map(|body| {
            Body::new(Counted {
                body,
                _in_flight: guard,
            })
        }),
        None => response,
    }
}

/// A response body that holds its request's place in flight until it is dropped. Frames,
/// the end and the size pass through unchanged (a whole body keeps its `Content-Length`).
struct Counted {
    body: Body,
    _in_flight: InFlightGuard,
}

impl hyper::body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// How long a scrape waits for the store's counts before answering without them.
const SCRAPE_STORE_WAIT: Duration = Duration::from_secs(5);

/// `GET /metrics` (already authorized and serving; `method_ok` for GET and HEAD): every metric,
/// in the Prometheus text format, or OpenMetrics when `Accept` asked for it (`openmetrics`).
/// 404 when metrics are off.
async fn scrape(shared: &Shared, method_ok: bool, openmetrics: bool) -> Response {
    let Some(metrics) = shared.metrics.clone() else {
        return (
            StatusCode::NOT_FOUND,
            "metrics are off on this daemon (HOOKS_MCP_METRICS=off)\n",
        )
            .into_response();
    };
    if !method_ok {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET, HEAD")],
            "GET /metrics\n",
        )
            .into_response();
    }
    let (http, sse, max) = shared.sessions.open();
    let mut snapshot = Snapshot {
        sessions_http: http as u64,
        sessions_sse: sse as u64,
        sessions_max: max as u64,
        in_flight: shared.inflight.count() as u64,
        scheduler_last_tick_ms: shared.status.scheduler.last_tick_ms.load(Ordering::Acquire),
        store: None,
    };
    if let Some(store) = shared.status.store.get().cloned() {
        let now = server_full::now_ms();
        let retention = shared.retention;
        let reporter = metrics.store_reporter.clone();
        let read = tokio::task::spawn_blocking(move || {
            StoreSnapshot::read(&*store, &reporter, now, &retention)
        });
        snapshot.store = match tokio::time::timeout(SCRAPE_STORE_WAIT, read).await {
            Ok(Ok(Ok(store))) => Some(store),
            Ok(Ok(Err(e))) => {
                tracing::debug!("a metrics scrape could not read the store's counts: {e}");
                metrics.store_error(StoreOperation::MetricsCounts, &e);
                None
            }
            Ok(Err(e)) => {
                tracing::error!("a metrics scrape's store read failed: {e}");
                None
            }
            Err(_) => {
                metrics.store_error_of_kind(StoreOperation::MetricsCounts, "timeout");
                None
            }
        };
    }
    let (content_type, text) = if openmetrics {
        (
            metrics::OPENMETRICS_CONTENT_TYPE,
            metrics.render(&snapshot, true),
        )
    } else {
        (
            metrics::PROMETHEUS_CONTENT_TYPE,
            metrics.render(&snapshot, false),
        )
    };
    match text {
        Ok(text) => (StatusCode::OK, [(header::CONTENT_TYPE, content_type)], text).into_response(),
        Err(e) => {
            tracing::error!("cannot render the metrics: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "hooks-mcp: the metrics could not be rendered (see the daemon's log)\n",
            )
                .into_response()
        }
    }
}

/// Transport settings for the MCP routes.
#[derive(Debug, Clone)]
pub(crate) struct McpOptions {
    /// Sessions without traffic for this long are closed.
    pub(crate) idle: Duration,
    /// The largest request body accepted.
    pub(crate) max_body_bytes: usize,
    /// Allowed `Host` names (`*` for any), as in [`Access`].
    pub(crate) allowed_hosts: Vec<String>,
    /// Interval of SSE keep-alive comments.
    pub(crate) keep_alive: Duration,
}

/// The MCP routes over `server`: `/mcp`, `/sse`, `/messages`.
pub(crate) fn mcp_router(
    server: HooksServer,
    shared: &Arc<Shared>,
    options: &McpOptions,
    cancel: &CancellationToken,
) -> Router {
    // Sessions are kept in the store, so that any daemon of it resumes any of them.
    let kept = (shared.status.store.get().cloned()).map(|s| Arc::new(StoredSessions::new(s)));
    let manager = Arc::new(HttpSessions::new(
        shared.sessions.clone(),
        options.idle,
        kept.clone(),
    ));
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_sse_keep_alive(Some(options.keep_alive))
        // No priming event: rmcp's carries the id `0` on every stream of a session, where the
        // transport asks for ids unique across the session's streams, and sends a client that
        // loses a reply stream to resume it, which these streams cannot (they keep no events).
        .with_sse_retry(None)
        .with_cancellation_token(cancel.child_token());
    config.session_store = kept.map(|k| k as Arc<dyn SessionStore>);
    config = if options.allowed_hosts.iter().any(|h| h == "*") {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(options.allowed_hosts.clone())
    };
    let prototype = server.clone();
    let streamable = StreamableHttpService::new(
        move || {
            Ok(prototype
                .fork_session()
                .on_transport(store::Transport::StreamableHttp))
        },
        manager.clone(),
        config,
    );
    let sse = Arc::new(SseSessions::new(
        server,
        shared.sessions.clone(),
        shared.inflight.clone(),
        options.idle,
        options.max_body_bytes,
        options.keep_alive,
        cancel.child_token(),
    ));
    // One handler for every method, so that no `Allow` header is added to rmcp's answers
    // (axum's method router adds its own routed methods to every response it passes on).
    let endpoint = {
        let manager = manager.clone();
        move |request: Request| {
            let (manager, streamable) = (manager.clone(), streamable.clone());
            async move {
                if request.method() == Method::DELETE {
                    return end_session(manager, streamable, request).await;
                }
                match tower::ServiceExt::oneshot(streamable, request).await {
                    Ok(response) => response.into_response(),
                    Err(never) => match never {},
                }
            }
        }
    };
    Router::new()
        .route("/mcp", axum::routing::any(endpoint))
        .route_layer(axum::middleware::from_fn_with_state(
            options.max_body_bytes,
            crate::mcp_headers::fill_notification_method,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            options.max_body_bytes,
            crate::mcp_headers::json_body_refusals,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            options.max_body_bytes,
            crate::mcp_headers::removed_methods,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            options.max_body_bytes,
            crate::mcp_headers::protocol_version_header,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            (manager.clone(), shared.sessions.clone()),
            resume_under_the_cap,
        ))
        .route("/sse", get(crate::sse::connect))
        .route("/messages", post(crate::sse::message))
        .with_state(sse)
}

/// A request for a session this daemon does not hold in memory but the store keeps resumes it,
/// which takes a place under the session cap: past a full cap it gets the cap's 503 with
/// `Retry-After`, as a new session does, rather than rmcp's 500 for a failed restore.
async fn resume_under_the_cap(
    State((manager, sessions)): State<(Arc<HttpSessions>, Arc<Sessions>)>,
    request: Request,
    next: Next,
) -> Response {
    let resumed = match request.headers().get("mcp-session-id") {
        Some(id) if request.method() != Method::DELETE && sessions.is_full() => {
            let id = id.to_str().unwrap_or_default();
            // Kept in the store (an ended or unknown one stays rmcp's 404).
            !manager.holds(id) && manager.is_live(id).await
        }
        _ => false,
    };
    if resumed {
        return sessions.full_response();
    }
    next.run(request).await
}

/// `DELETE /mcp`: ends a live session with 200 (the SDKs' servers answer 200, and the Python
/// client treats anything but 200 or 204 as a failure), and answers 404 for an id that never
/// existed or whose session already ended, as the specification asks of every request that
/// carries an ended session's id. A request without a session id is rmcp's to refuse (400).
async fn end_session(
    sessions: Arc<HttpSessions>,
    streamable: StreamableHttpService<HooksServer, HttpSessions>,
    request: Request,
) -> Response {
    let id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let live = match &id {
        Some(id) => sessions.is_live(id).await,
        None => true,
    };
    if let Some(id) = id.filter(|_| !live) {
        tracing::debug!(session = %id, "DELETE for a session that is not live");
        return (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {
                    "code": -32001,
                    "message": "session not found: it ended, expired or never existed; \
                                initialize a new session (POST /mcp without Mcp-Session-Id)",
                },
            })
            .to_string(),
        )
            .into_response();
    }
    let response = match tower::ServiceExt::oneshot(streamable, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if response.status() == StatusCode::ACCEPTED {
        return StatusCode::OK.into_response();
    }
    response.map(Body::new)
}

/// Why a listener could not be bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// Another process listens on the port.
    #[error(
        "MCP_PORT: port {port} on {addr} is already in use (another hooks-mcp daemon or another \
         service); stop that process or choose another port with MCP_PORT"
    )]
    InUse {
        /// The address.
        addr: std::net::IpAddr,
        /// The port.
        port: u16,
    },
    /// Any other failure.
    #[error("MCP_HOST: cannot listen on {addr}: {cause}; check MCP_HOST and MCP_PORT")]
    Other {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        cause: std::io::Error,
    },
    /// No address could be bound.
    #[error("MCP_HOST: none of the addresses it resolves to can be bound")]
    Nothing,
}

/// Binds every address, all on one port (the first bound, when the port is 0). An address
/// family this machine lacks (no IPv6) is skipped with a warning while another binds.
///
/// # Errors
/// [`BindError`] when a port is taken or nothing can be bound.
pub(crate) fn bind(addrs: &[SocketAddr]) -> Result<Vec<TcpListener>, BindError> {
    let mut listeners: Vec<TcpListener> = Vec::new();
    let mut port = None;
    for &addr in addrs {
        let mut addr = addr;
        if let Some(port) = port {
            addr.set_port(port);
        }
        // std's bind sets SO_REUSEADDR (restart while old connections linger in TIME_WAIT)
        // and never SO_REUSEPORT: a second listener on the port fails instead of sharing it.
        match std::net::TcpListener::bind(addr) {
            Ok(listener) => {
                let bound = listener
                    .local_addr()
                    .map_err(|cause| BindError::Other { addr, cause })?;
                port = Some(bound.port());
                listener
                    .set_nonblocking(true)
                    .map_err(|cause| BindError::Other { addr, cause })?;
                let listener = TcpListener::from_std(listener)
                    .map_err(|cause| BindError::Other { addr, cause })?;
                listeners.push(listener);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                return Err(BindError::InUse {
                    addr: addr.ip(),
                    port: addr.port(),
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::AddrNotAvailable | std::io::ErrorKind::Unsupported // EAFNOSUPPORT: the kernel has no IPv6 at all.
                ) || e.raw_os_error() == Some(97) =>
            {
                tracing::warn!(%addr, "skipping an address this machine cannot bind: {e}");
            }
            Err(cause) => return Err(BindError::Other { addr, cause }),
        }
    }
    if listeners.is_empty() {
        return Err(BindError::Nothing);
    }
    Ok(listeners)
}

/// Limits on connections, so that slow or hostile clients cannot hold the daemon's sockets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// A connection must deliver a whole request head within this long after it opens or
    /// after its previous response; otherwise it is closed (this also ends idle keep-alive
    /// connections).
    pub(crate) header_timeout: Duration,
    /// A request body must arrive whole within this long of its request's head; otherwise it
    /// is cut off and its connection closed (a body that trickles in holds no place for
    /// longer).
    pub(crate) body_timeout: Duration,
    /// The most connections open at once over every listener; further clients wait in the
    /// kernel's accept queue until one closes.
    pub(crate) max_connections: usize,
}

/// Serves `app` on every listener until `stop` is cancelled (then stops accepting and lets
/// open connections finish their current response). Accepted sockets get `TCP_NODELAY`: SSE
/// replies are small writes that Nagle's algorithm would hold back.
pub(crate) fn serve(
    listeners: Vec<TcpListener>,
    app: Router,
    stop: &CancellationToken,
    limits: ConnectionLimits,
) -> Vec<tokio::task::JoinHandle<std::io::Result<()>>> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    listeners
        .into_iter()
        .map(|listener| {
            tokio::spawn(accept_loop(
                listener,
                app.clone(),
                stop.clone(),
                open.clone(),
                limits,
            ))
        })
        .collect()
}

/// Accepts connections while a place under the connection cap is free, and serves each as
/// HTTP/1.1 with the header and body timeouts.
async fn accept_loop(
    listener: TcpListener,
    app: Router,
    stop: CancellationToken,
    open: Arc<Semaphore>,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => break,
            permit = open.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let tcp = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _peer)) => tcp,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was accepted: the
                    // listener itself is fine. Pause briefly so a persistent condition does
                    // not spin.
                    tracing::debug!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        let app = app.clone();
        let body_timeout = limits.body_timeout;
        let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
            let request = request.map(|body| Body::new(DeadlineBody::new(body, body_timeout)));
            tower::ServiceExt::oneshot(app.clone(), request)
        });
        let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(tcp), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("connection ended: {e}");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A request body that must arrive whole by a deadline set when its request's head was read:
/// a client that sends a byte now and then cannot hold its connection (and a place under
/// the cap) for longer than that.
struct DeadlineBody {
    body: hyper::body::Incoming,
    /// When the head was read, plus the limit.
    due: tokio::time::Instant,
    /// The timer, made only when the body first has to wait: a body that is there at once (or
    /// a request without one) costs no timer.
    deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    limit: Duration,
}

impl DeadlineBody {
    fn new(body: hyper::body::Incoming, limit: Duration) -> DeadlineBody {
        DeadlineBody {
            body,
            due: tokio::time::Instant::now() + limit,
            deadline: None,
            limit,
        }
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        use std::future::Future;
        use std::task::Poll;
        let this = self.get_mut();
        if let Poll::Ready(frame) = std::pin::Pin::new(&mut this.body).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        let due = this.due;
        let deadline = this
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the request body did not arrive whole within {} s of its head; send it \
                     faster, or raise HOOKS_MCP_BODY_TIMEOUT_SECS",
                    this.limit.as_secs()
                ),
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
