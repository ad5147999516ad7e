//! The legacy HTTP+SSE transport (protocol revision 2024-11-05), which rmcp no longer ships,
//! on the same `HooksServer`.
//!
//! `GET /sse` opens a session: the stream's first event (`endpoint`) names
//! `/messages?sessionId=ID`; every server message follows as a `message` event. The client
//! POSTs its messages to that URL (202 Accepted; the answers arrive on the stream). The session
//! ends when the stream closes, when it stays idle too long, or at shutdown.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use protocol_lite::jsonrpc;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::mcp_headers::json_rpc_error;
use crate::state::{InFlight, InFlightGuard, Kind, SessionPermit, Sessions};
use server_full::HooksServer;

/// Messages a session buffers from the client before a POST waits. Channel slots hold boxes:
/// a channel allocates its first 32 slots up front, and an idle session should not pay for 32
/// whole messages per direction.
const INCOMING_CAPACITY: usize = 64;
/// Messages a session buffers for a slow stream before the server waits.
const OUTGOING_CAPACITY: usize = 64;

type Pending = Arc<Mutex<HashMap<RequestId, InFlightGuard>>>;

/// The live SSE sessions and what a new one is built from.
#[derive(Debug)]
pub(crate) struct SseSessions {
    server: HooksServer,
    sessions: Arc<Sessions>,
    inflight: Arc<InFlight>,
    idle: Duration,
    max_body_bytes: usize,
    keep_alive: Duration,
    cancel: CancellationToken,
    live: Mutex<HashMap<String, Handle>>,
}

/// What `POST /messages` needs to reach a session.
#[derive(Debug, Clone)]
struct Handle {
    incoming: mpsc::Sender<Box<ClientJsonRpcMessage>>,
    pending: Pending,
}

impl SseSessions {
    pub(crate) fn new(
        server: HooksServer,
        sessions: Arc<Sessions>,
        inflight: Arc<InFlight>,
        idle: Duration,
        max_body_bytes: usize,
        keep_alive: Duration,
        cancel: CancellationToken,
    ) -> SseSessions {
        SseSessions {
            server,
            sessions,
            inflight,
            idle,
            max_body_bytes,
            keep_alive,
            cancel,
            live: Mutex::default(),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Handle>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Removes the session when its stream ends (client gone, idle, shutdown).
struct Guard {
    id: String,
    sessions: Arc<SseSessions>,
    cancel: CancellationToken,
    _permit: SessionPermit,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.sessions.live().remove(&self.id);
        self.cancel.cancel();
        tracing::debug!(session = %self.id, "SSE session closed");
    }
}

/// `GET /sse`: opens a session and streams its messages.
pub(crate) async fn connect(State(sessions): State<Arc<SseSessions>>) -> Response {
    let Some(permit) = sessions.sessions.admit(Kind::Sse) else {
        return sessions.sessions.full_response();
    };
    let id = rmcp::transport::common::server_side_http::session_id().to_string();
    let (incoming_tx, incoming_rx) = mpsc::channel(INCOMING_CAPACITY);
    let (outgoing_tx, outgoing_rx) = mpsc::channel(OUTGOING_CAPACITY);
    let pending: Pending = Arc::default();
    sessions.live().insert(
        id.clone(),
        Handle {
            incoming: incoming_tx,
            pending: pending.clone(),
        },
    );
    let cancel = sessions.cancel.child_token();
    let transport = SseTransport {
        incoming: incoming_rx,
        outgoing: outgoing_tx,
        pending,
        idle: sessions.idle,
        session: id.clone(),
    };
    let server = sessions
        .server
        .fork_session()
        .on_transport(store::Transport::Sse);
    let session_cancel = cancel.clone();
    let session_id = id.clone();
    tokio::spawn(async move {
        match server.serve_with_ct(transport, session_cancel).await {
            Ok(running) => {
                let reason = running.waiting().await;
                tracing::debug!(session = %session_id, ?reason, "SSE session ended");
            }
            Err(e) => tracing::debug!(session = %session_id, "SSE handshake failed: {e}"),
        }
    });
    tracing::debug!(session = %id, "SSE session opened");
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/messages?sessionId={id}"));
    let guard = Guard {
        id,
        sessions: sessions.clone(),
        cancel,
        _permit: permit,
    };
    let state = (Some(endpoint), outgoing_rx, guard);
    let stream = futures_util::stream::unfold(state, |(first, mut rx, guard)| async move {
        if let Some(event) = first {
            return Some((Ok::<_, Infallible>(event), (None, rx, guard)));
        }
        loop {
            let message = rx.recv().await?;
            match serde_json::to_string(&message) {
                Ok(json) => {
                    let event = Event::default().event("message").data(json);
                    return Some((Ok(event), (None, rx, guard)));
                }
                Err(e) => tracing::error!("cannot serialize a server message: {e}"),
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(sessions.keep_alive))
        .into_response()
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessagesQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

/// `POST /messages?sessionId=ID`: hands one client message to its session.
pub(crate) async fn message(
    State(sessions): State<Arc<SseSessions>>,
    Query(query): Query<MessagesQuery>,
    body: Body,
) -> Response {
    let Some(id) = query.session_id.filter(|s| !s.is_empty()) else {
        return (
            StatusCode::BAD_REQUEST,
            "sessionId: missing query parameter; POST to the URL the /sse stream's `endpoint` \
             event announced\n",
        )
            .into_response();
    };
    let Some(handle) = sessions.live().get(&id).cloned() else {
        return (
            StatusCode::NOT_FOUND,
            "sessionId: no such session (its /sse stream closed or it expired); open /sse \
             again\n",
        )
            .into_response();
    };
    let bytes = match axum::body::to_bytes(body, sessions.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the message is larger than {} bytes (HOOKS_MCP_MAX_BODY_BYTES)\n",
                    sessions.max_body_bytes
                ),
            )
                .into_response();
        }
    };
    let (value, incoming) = match jsonrpc::parse_line(&bytes) {
        Ok(parsed) => parsed,
        Err(reply) => return json_rpc_error(StatusCode::BAD_REQUEST, &reply),
    };
    let request_id = match &incoming {
        jsonrpc::Incoming::Request { id, .. } => Some(id.clone()),
        _ => None,
    };
    let message = match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(message) => message,
        Err(e) => {
            let (id, method) = match incoming {
                jsonrpc::Incoming::Request { id, method, .. } => (id, method),
                jsonrpc::Incoming::Notification { method } => (serde_json::Value::Null, method),
                jsonrpc::Incoming::Response => (serde_json::Value::Null, String::new()),
            };
            return json_rpc_error(
                StatusCode::BAD_REQUEST,
                &jsonrpc::ErrorReply {
                    id,
                    code: jsonrpc::INVALID_PARAMS,
                    message: format!("Invalid params for `{method}`: {e}"),
                },
            );
        }
    };
    if let Some(id) = request_id.and_then(|id| serde_json::from_value::<RequestId>(id).ok()) {
        let guard = sessions.inflight.enter();
        handle
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, guard);
    }
    if handle.incoming.send(Box::new(message)).await.is_err() {
        return (
            StatusCode::NOT_FOUND,
            "sessionId: the session has ended; open /sse again\n",
        )
            .into_response();
    }
    (StatusCode::ACCEPTED, "Accepted\n").into_response()
}

/// One session's side of the bridge, as rmcp sees it.
struct SseTransport {
    incoming: mpsc::Receiver<Box<ClientJsonRpcMessage>>,
    outgoing: mpsc::Sender<Box<ServerJsonRpcMessage>>,
    pending: Pending,
    idle: Duration,
    session: String,
}

impl Transport<RoleServer> for SseTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let pending = self.pending.clone();
        let outgoing = self.outgoing.clone();
        async move {
            let sent = outgoing.send(Box::new(item)).await;
            if let Some(id) = answered {
                // Written (or the stream is gone): the call is no longer in flight.
                pending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
            }
            sent.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the SSE stream closed")
            })
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        crate::http_sessions::receive_within(&mut self.incoming, self.idle, "SSE", &self.session)
            .await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}
