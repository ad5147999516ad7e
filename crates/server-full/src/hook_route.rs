//! `POST /hook/{event}`: hook events that short-lived hook processes hand to the daemon, so
//! that they use its pooled store instead of opening a database connection each.
//!
//! The daemon does not know what a hook does: the binary that starts it supplies a
//! [`HookService`] (`hooks-mcp-full` passes its hook module). The route sits behind the same
//! bearer token, `Host`/`Origin` checks, readiness gate (503 until serving) and body limit as
//! `/mcp`, and counts as in flight for the shutdown drain. Without a service it answers 404.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use store::StoreHandle;

use crate::settings::now_ms;

/// Answers hook events forwarded to the daemon, over the daemon's store.
pub trait HookService: Send + Sync + fmt::Debug + 'static {
    /// The answer (a JSON body) to `request`, what a hook posted for the event named `event`,
    /// over `store` at `now` (Unix ms). Runs on a blocking thread.
    ///
    /// # Errors
    /// A sentence saying why the request is refused (422 to the hook, which then does the work
    /// itself): an unknown event, a malformed request, another store.
    fn answer(
        &self,
        event: &str,
        request: &[u8],
        store: &StoreHandle,
        now: i64,
    ) -> Result<Vec<u8>, String>;
}

/// The route's service, limit and counters, shared by the handlers.
#[derive(Debug)]
pub(crate) struct HookRoute {
    service: Option<Arc<dyn HookService>>,
    max_body_bytes: usize,
    answered: AtomicU64,
    refused: AtomicU64,
}

impl HookRoute {
    pub(crate) fn new(service: Option<Arc<dyn HookService>>, max_body_bytes: usize) -> HookRoute {
        HookRoute {
            service,
            max_body_bytes,
            answered: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// What `/health?level=full` reports.
    pub(crate) fn report(&self) -> serde_json::Value {
        json!({
            "enabled": self.service.is_some(),
            "answered": self.answered.load(Ordering::Relaxed),
            "refused": self.refused.load(Ordering::Relaxed),
        })
    }

    /// Answers one authorized request for `event`, once the daemon serves `store`.
    pub(crate) async fn handle(
        &self,
        event: String,
        store: StoreHandle,
        request: Request,
    ) -> Response {
        let Some(service) = self.service.clone() else {
            return (
                StatusCode::NOT_FOUND,
                "this daemon does not answer hook events; hooks open the store themselves\n",
            )
                .into_response();
        };
        if request.method() != Method::POST {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "POST")],
                "POST the hook event's JSON\n",
            )
                .into_response();
        }
        let body = match axum::body::to_bytes(request.into_body(), self.max_body_bytes).await {
            Ok(body) => body,
            Err(_) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "the hook request is larger than {} bytes (HOOKS_MCP_MAX_BODY_BYTES)\n",
                        self.max_body_bytes
                    ),
                )
                    .into_response();
            }
        };
        let started = Instant::now();
        let name = event.clone();
        let outcome =
            tokio::task::spawn_blocking(move || service.answer(&name, &body, &store, now_ms()))
                .await;
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        match outcome {
            Ok(Ok(answer)) => {
                self.answered.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(event = %event, ms = %format!("{ms:.2}"), "hook event answered");
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    Body::from(answer),
                )
                    .into_response()
            }
            Ok(Err(why)) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(event = %event, "hook event refused: {why}");
                (StatusCode::UNPROCESSABLE_ENTITY, format!("{why}\n")).into_response()
            }
            Err(e) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                tracing::error!(event = %event, "answering a hook event failed: {e}");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "answering the hook event failed; the hook opens the store itself\n",
                )
                    .into_response()
            }
        }
    }
}
