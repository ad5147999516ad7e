//! Hook events answered by the daemon over its store, with `hook-dispatch`:
//!
//! - `POST /hook/{event}`: events that short-lived command hooks forward (on PostgreSQL), so
//!   that they use the daemon's pooled store instead of opening a connection each; the daemon
//!   returns the store's part and the hook completes the answer
//!   (`hook_dispatch::forward`).
//! - `POST /hooks/{Event}`: Claude Code's HTTP hooks. The body is the event's payload; the
//!   answer is what the command hook would print (200 with the JSON, or 204 with nothing), the
//!   conditions' scripts run here (`hook_dispatch::http`).
//!
//! Both sit behind the same bearer token, `Host`/`Origin` checks, readiness gate (503 until
//! serving) and body limit as `/mcp`, count as in flight for the shutdown drain, and never run
//! on the runtime's worker threads: a forwarded event (store calls only) runs on the blocking
//! pool the store's calls share, an HTTP hook on a thread of its own (at most
//! [`HOOK_THREADS`] at once), since its conditions' scripts may run for seconds and would
//! otherwise hold that pool (one thread on SQLite) from every other request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use store::StoreHandle;

use crate::metrics::{EventSlot, HookOutcome, HookRouteKind, Metrics};
use server_full::now_ms;

/// Most HTTP hooks answered at once, each on a thread of its own; more wait for a turn.
pub(crate) const HOOK_THREADS: usize = 32;

/// The routes' limit and counters, shared by the handlers.
#[derive(Debug)]
pub(crate) struct HookRoute {
    max_body_bytes: usize,
    /// Turns on the HTTP hooks' own threads.
    hook_threads: Arc<tokio::sync::Semaphore>,
    answered: AtomicU64,
    refused: AtomicU64,
    http_answered: AtomicU64,
    http_refused: AtomicU64,
    /// HTTP hooks of Claude Code events answered with nothing (`hook_dispatch::QUIET_EVENTS`).
    http_quiet: AtomicU64,
    /// The daemon's metrics, when it keeps them.
    metrics: Option<Arc<Metrics>>,
}

/// What the blocking part produced.
enum Outcome {
    /// 200 with this JSON body.
    Json(Vec<u8>),
    /// 204: nothing to say.
    Empty,
    /// 204: a Claude Code event with nothing to do (counted apart).
    Quiet,
    /// Refused with this status and one-line reason.
    Refused(StatusCode, String),
}

impl HookRoute {
    pub(crate) fn new(max_body_bytes: usize, metrics: Option<Arc<Metrics>>) -> HookRoute {
        HookRoute {
            metrics,
            max_body_bytes,
            hook_threads: Arc::new(tokio::sync::Semaphore::new(HOOK_THREADS)),
            answered: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            http_answered: AtomicU64::new(0),
            http_refused: AtomicU64::new(0),
            http_quiet: AtomicU64::new(0),
        }
    }

    /// What `/health?level=full` reports.
    pub(crate) fn report(&self) -> serde_json::Value {
        json!({
            "enabled": true,
            "answered": self.answered.load(Ordering::Relaxed),
            "refused": self.refused.load(Ordering::Relaxed),
            "http": {
                "answered": self.http_answered.load(Ordering::Relaxed),
                "refused": self.http_refused.load(Ordering::Relaxed),
                "quiet": self.http_quiet.load(Ordering::Relaxed),
            },
        })
    }

    /// Answers one authorized request for `event` (an HTTP hook when `http_hook`, else a
    /// forwarded event), once the daemon serves `store`; counts it in the metrics by the
    /// answer's status.
    pub(crate) async fn handle(
        &self,
        event: String,
        http_hook: bool,
        store: StoreHandle,
        request: Request,
    ) -> Response {
        let Some(metrics) = &self.metrics else {
            return self.answer(event, http_hook, store, request).await;
        };
        let started = Instant::now();
        let slot = EventSlot::of(&event);
        let response = self.answer(event, http_hook, store, request).await;
        let outcome = if response.status().is_server_error() {
            HookOutcome::Failed
        } else if response.status().is_client_error() {
            HookOutcome::Refused
        } else {
            HookOutcome::Answered
        };
        let route = if http_hook {
            HookRouteKind::Http
        } else {
            HookRouteKind::Forward
        };
        metrics
            .hooks
            .record(route, slot, outcome, started.elapsed());
        response
    }

    async fn answer(
        &self,
        event: String,
        http_hook: bool,
        store: StoreHandle,
        request: Request,
    ) -> Response {
        if request.method() != Method::POST {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "POST")],
                "POST the hook event's JSON\n",
            )
                .into_response();
        }
        let channels = request
            .headers()
            .get(hook_dispatch::http::CHANNELS_HEADER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
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
        let outcome = if http_hook {
            on_own_thread(&self.hook_threads, move || {
                http_answer(&name, &body, channels.as_deref(), &store)
            })
            .await
        } else {
            tokio::task::spawn_blocking(move || {
                match hook_dispatch::forward::answer_forwarded(&name, &body, &*store, now_ms()) {
                    Ok(answer) => Outcome::Json(answer),
                    Err(why) => Outcome::Refused(StatusCode::UNPROCESSABLE_ENTITY, why.0),
                }
            })
            .await
            .map_err(|e| e.to_string())
        };
        let outcome = outcome.unwrap_or_else(|e| {
            tracing::error!(event = %event, "answering a hook event failed: {e}");
            Outcome::Refused(
                StatusCode::INTERNAL_SERVER_ERROR,
                "hooks-mcp: answering the hook event failed (see the daemon's log)".into(),
            )
        });
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let (answered, refused) = if http_hook {
            (&self.http_answered, &self.http_refused)
        } else {
            (&self.answered, &self.refused)
        };
        match outcome {
            Outcome::Json(answer) => {
                answered.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(event = %event, http_hook, ms = %format!("{ms:.2}"), "hook event answered");
                (
                    StatusCode::OK,
                    [(header::CONTENT_TYPE, "application/json")],
                    Body::from(answer),
                )
                    .into_response()
            }
            Outcome::Quiet => {
                answered.fetch_add(1, Ordering::Relaxed);
                self.http_quiet.fetch_add(1, Ordering::Relaxed);
                StatusCode::NO_CONTENT.into_response()
            }
            Outcome::Empty => {
                answered.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(event = %event, http_hook, ms = %format!("{ms:.2}"), "hook event answered (nothing to say)");
                StatusCode::NO_CONTENT.into_response()
            }
            Outcome::Refused(status, why) => {
                refused.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(event = %event, http_hook, "hook event refused: {why}");
                (status, format!("{why}\n")).into_response()
            }
        }
    }
}

/// The HTTP hook's answer, its notes written to the log (a command hook's stderr).
/// Runs `work` on a new thread once one of `turns` is free, and waits for its result without
/// holding a runtime thread.
///
/// # Errors
/// Why there is no result: no thread could be started, or the work panicked.
async fn on_own_thread<T: Send + 'static>(
    turns: &Arc<tokio::sync::Semaphore>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let turn = turns
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| e.to_string())?;
    let (sender, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("hooks-mcp-hook".into())
        .spawn(move || {
            let _turn = turn;
            let _ = sender.send(work());
        })
        .map_err(|e| format!("cannot start a thread for it: {e}"))?;
    result
        .await
        .map_err(|_| "its thread ended without an answer".to_owned())
}

fn http_answer(event: &str, body: &[u8], channels: Option<&str>, store: &StoreHandle) -> Outcome {
    match hook_dispatch::http::answer_http(event, body, channels, &**store, now_ms()) {
        Ok(answer) => {
            for line in &answer.notes {
                tracing::warn!("{line}");
            }
            match answer.body {
                Some(body) => Outcome::Json(body),
                None if answer.quiet => Outcome::Quiet,
                None => Outcome::Empty,
            }
        }
        Err(why @ hook_dispatch::http::HttpHookError::UnknownEvent(_)) => {
            Outcome::Refused(StatusCode::NOT_FOUND, why.to_string())
        }
        Err(why) => Outcome::Refused(StatusCode::BAD_REQUEST, why.to_string()),
    }
}
