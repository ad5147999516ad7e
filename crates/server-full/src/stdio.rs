//! Serving one session over stdio, from the start or after the light front end's handoff.
//!
//! The transport reads newline-delimited JSON itself (instead of rmcp's codec) so that bad input
//! gets the replies the JSON-RPC specification asks for, which rmcp does not send: `-32700` with
//! `"id": null` for unparsable text, `-32600` for invalid messages, `-32602` for malformed
//! `tools/call` params. The session always continues.

use std::future::Future;
use std::sync::Arc;

use protocol_lite::jsonrpc;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Notify};

use crate::HooksServer;
use crate::server::INITIALIZED_GRACE;

/// Why a stdio session ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StdioError {
    /// The handshake (replayed or not) failed inside the full server.
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    /// The session loop ended with an error.
    #[error("the MCP session failed: {0}")]
    Session(String),
}

/// Serves `server` on this process's stdin and stdout until the client closes stdin.
///
/// `replay` is read before stdin (the handshake the light front end answered, the line that
/// triggered the handoff and any bytes it had read ahead); the response to the request with id
/// `suppress` (the `initialize` the light path already answered) is not written again.
///
/// # Errors
/// [`StdioError`] when the handshake or the session fails.
pub async fn serve_stdio(
    server: HooksServer,
    replay: Vec<u8>,
    suppress: Option<Value>,
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
    suppress: Option<Value>,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let suppress = suppress.and_then(|id| serde_json::from_value::<RequestId>(id).ok());
    let transport = LineTransport {
        reader: BufReader::new(input),
        writer: Arc::new(Mutex::new(output)),
        suppress,
        initialized: server.initialized_signal(),
        await_initialized: false,
        seen_request: false,
        line: Vec::with_capacity(4096),
    };
    let running = server.serve(transport).await.map_err(|e| StdioError::Handshake(e.to_string()))?;
    running.waiting().await.map_err(|e| StdioError::Session(e.to_string()))?;
    Ok(())
}

struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    /// The id whose first response is swallowed (the light path already answered it).
    suppress: Option<RequestId>,
    initialized: Arc<Notify>,
    /// The last message handed to rmcp was `notifications/initialized`: rmcp handles each
    /// message in its own task, so wait until the handler ran before handing over the next one.
    await_initialized: bool,
    /// Notifications before the first request are dropped (there is no session yet).
    seen_request: bool,
    line: Vec<u8>,
}

impl<R, W> LineTransport<R, W>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Checks one line: `Some` message for rmcp, or `None` after answering or skipping it.
    async fn accept(&mut self, line: &[u8]) -> Option<ClientJsonRpcMessage> {
        let (value, incoming) = match jsonrpc::parse_line(line) {
            Ok(parsed) => parsed,
            Err(reply) => {
                tracing::debug!(code = reply.code, "answered a bad line: {}", reply.message);
                if let Err(e) = write_line(self.writer.clone(), &reply.to_line()).await {
                    tracing::warn!("cannot write an error reply: {e}");
                }
                return None;
            }
        };
        let (id, method) = match &incoming {
            jsonrpc::Incoming::Notification { .. } if !self.seen_request => return None,
            jsonrpc::Incoming::Request { id, method, .. } => (Some(id.clone()), method.clone()),
            jsonrpc::Incoming::Notification { method } => (None, method.clone()),
            jsonrpc::Incoming::Response => (None, String::new()),
        };
        match serde_json::from_value::<ClientJsonRpcMessage>(value) {
            Ok(message) => {
                if id.is_some() {
                    self.seen_request = true;
                }
                self.await_initialized = method == "notifications/initialized";
                Some(message)
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
                if let Err(e) = write_line(self.writer.clone(), &reply.to_line()).await {
                    tracing::warn!("cannot write an error reply: {e}");
                }
                None
            }
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(writer: Arc<Mutex<W>>, bytes: &[u8]) -> std::io::Result<()> {
    let mut writer = writer.lock().await;
    writer.write_all(bytes).await?;
    writer.flush().await
}

fn response_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(r) => Some(&r.id),
        JsonRpcMessage::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let suppressed = match (&self.suppress, response_id(&item)) {
            (Some(wanted), Some(id)) if wanted == id => {
                self.suppress = None;
                tracing::debug!(?id, "suppressed the full server's duplicate initialize response");
                true
            }
            _ => false,
        };
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
        if std::mem::take(&mut self.await_initialized)
            && tokio::time::timeout(INITIALIZED_GRACE, self.initialized.notified()).await.is_err()
        {
            tracing::warn!("`notifications/initialized` was not handled in time; reading on");
        }
        loop {
            self.line.clear();
            match self.reader.read_until(b'\n', &mut self.line).await {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("stdin closed: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            let accepted =
                if jsonrpc::is_blank(trimmed) { None } else { self.accept(trimmed).await };
            self.line = line;
            if let Some(message) = accepted {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut writer = self.writer.lock().await;
        writer.flush().await
    }
}
