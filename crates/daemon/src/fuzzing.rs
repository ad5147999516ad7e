//! Crate-internal pieces the fuzz targets drive (feature `fuzzing`). Not a stable API: it
//! exists so that the fuzz checks reach the daemon's own session layer without a socket.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::http_sessions::HttpSessions;
use crate::state::Sessions;
use server_full::HooksServer;

/// What [`mcp_router`] serves with.
#[derive(Debug, Clone)]
pub struct McpRouterOptions {
    /// The session cap (both transports share it in the daemon).
    pub max_sessions: usize,
    /// Sessions without traffic for this long are closed.
    pub idle: Duration,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// Allowed `Host` names; empty allows any.
    pub allowed_hosts: Vec<String>,
}

/// A router serving `/mcp` as the daemon does: rmcp's Streamable HTTP service over the
/// daemon's session layer ([`HttpSessions`]), one forked [`HooksServer`] per session. Drive it
/// with `tower::ServiceExt::oneshot`; cancelling `cancel` ends its sessions.
pub fn mcp_router(
    server: HooksServer,
    options: &McpRouterOptions,
    cancel: &CancellationToken,
) -> Router {
    let cap = Arc::new(Sessions::new(options.max_sessions));
    let manager = Arc::new(HttpSessions::new(cap, options.idle, None));
    let mut config = StreamableHttpServerConfig::default()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_cancellation_token(cancel.child_token());
    config = if options.allowed_hosts.is_empty() {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(options.allowed_hosts.clone())
    };
    let prototype = server;
    let streamable =
        StreamableHttpService::new(move || Ok(prototype.fork_session()), manager, config);
    Router::new().route_service("/mcp", streamable)
}
