//! The session's client as tool handlers reach it during a call ([`catalogue::ClientLink`]):
//! progress and log notifications and requests such as `sampling/createMessage`, each tied to
//! the call so a Streamable HTTP session delivers it on the call's own reply stream.

use catalogue::{ClientLink, LogLevel, ToolError};
use rmcp::model::{GetExtensions, ProgressToken, RequestId, ServerNotification, ServerRequest};
use rmcp::service::OriginatingRequestId;
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

/// One call's link to its client. Its methods block: handlers run on a blocking thread.
pub(crate) struct CallClient {
    /// The session's peer; `None` for a call answered without a reply stream
    /// ([`crate::HooksServer::call_without_stream`]), which can send nothing before its result.
    pub(crate) peer: Option<Peer<RoleServer>>,
    pub(crate) request: RequestId,
    pub(crate) progress_token: Option<ProgressToken>,
    /// The least severe level to send; `None`: no log messages (a 2026-07-28 request that
    /// named no level in its `_meta`).
    pub(crate) min_level: Option<LogLevel>,
    /// Served by the 2026-07-28 rules, which have no server-to-client requests.
    pub(crate) modern: bool,
    pub(crate) runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for CallClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallClient")
            .field("request", &self.request)
            .field("min_level", &self.min_level)
            .finish_non_exhaustive()
    }
}

fn closed(e: impl std::fmt::Display) -> ToolError {
    ToolError::Internal(format!("the client session is gone: {e}"))
}

impl CallClient {
    fn notify(&self, method: &str, params: Value) -> Result<(), ToolError> {
        let mut notification: ServerNotification =
            serde_json::from_value(json!({ "method": method, "params": params }))
                .map_err(|e| ToolError::Internal(format!("malformed {method}: {e}")))?;
        notification
            .extensions_mut()
            .insert(OriginatingRequestId(self.request.clone()));
        let Some(peer) = &self.peer else {
            return Ok(());
        };
        self.runtime
            .block_on(peer.send_notification(notification))
            .map_err(closed)
    }
}

impl ClientLink for CallClient {
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<&str>,
    ) -> Result<(), ToolError> {
        let Some(token) = &self.progress_token else {
            return Ok(());
        };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify("notifications/progress", params)
    }

    fn log(&self, level: LogLevel, data: Value) -> Result<(), ToolError> {
        if self.min_level.is_none_or(|min| level < min) {
            return Ok(());
        }
        self.notify(
            "notifications/message",
            json!({ "level": level.as_str(), "data": data }),
        )
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, ToolError> {
        if self.modern {
            return Err(ToolError::Refused(format!(
                "{method}: a 2026-07-28 request cannot be answered by a server-to-client \
                 request; open the session with initialize to use this tool's {method}"
            )));
        }
        let mut request: ServerRequest =
            serde_json::from_value(json!({ "method": method, "params": params })).map_err(|e| {
                ToolError::InvalidArguments(format!("not a request a server may send: {e}"))
            })?;
        request
            .extensions_mut()
            .insert(OriginatingRequestId(self.request.clone()));
        let Some(peer) = &self.peer else {
            return Err(ToolError::Refused(format!(
                "{method}: this call has no stream to the client"
            )));
        };
        let result = self
            .runtime
            .block_on(peer.send_request(request))
            .map_err(|e| ToolError::Refused(format!("the client did not answer {method}: {e}")))?;
        serde_json::to_value(result).map_err(|e| ToolError::Internal(e.to_string()))
    }
}
