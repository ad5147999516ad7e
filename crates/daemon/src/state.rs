//! What every request handler of the daemon shares: the status, access rules, the session cap,
//! the requests in flight, the hook route and metrics; and the narrow view of it that the
//! operator's pages read ([`operator_web::DaemonView`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::auth::Access;
use crate::fast_call::FastCalls;
use crate::hook_route::HookRoute;
use crate::metrics::Metrics;
use crate::status::Status;

/// Everything the HTTP handlers share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Phases, scheduler progress, the store once open.
    pub(crate) status: Status,
    /// Token, allowed hosts and origins.
    pub(crate) access: Access,
    /// The MCP routes, set once the tool registry is built.
    pub(crate) mcp: OnceLock<Router>,
    /// The fast path for stateless `tools/call` requests, set with the MCP routes unless
    /// `HOOKS_MCP_FAST_CALLS=off`.
    pub(crate) fast_calls: OnceLock<FastCalls>,
    /// The operator console's routes, set with the MCP routes.
    pub(crate) console: OnceLock<Router>,
    /// The session cap, shared by both transports.
    pub(crate) sessions: Arc<Sessions>,
    /// MCP requests being answered (for the shutdown drain).
    pub(crate) inflight: Arc<InFlight>,
    /// `POST /hook/{event}` and `POST /hooks/{Event}`: hook events answered over the daemon's
    /// store.
    pub(crate) hooks: HookRoute,
    /// The live window and retention periods (the session gauge, the read API, housekeeping).
    pub(crate) retention: store::Retention,
    /// What `/metrics` serves; `None` with `HOOKS_MCP_METRICS=off`.
    pub(crate) metrics: Option<Arc<Metrics>>,
}

/// The session cap: one permit per live session of either transport.
#[derive(Debug)]
pub(crate) struct Sessions {
    budget: Arc<Semaphore>,
    max: usize,
    http: Arc<AtomicUsize>,
    sse: Arc<AtomicUsize>,
}

/// Which transport a session uses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Http,
    Sse,
}

/// A live session's place under the cap; released on drop.
#[derive(Debug)]
pub(crate) struct SessionPermit {
    _permit: OwnedSemaphorePermit,
    counter: Arc<AtomicUsize>,
}

impl Drop for SessionPermit {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Sessions {
    pub(crate) fn new(max: usize) -> Sessions {
        Sessions {
            budget: Arc::new(Semaphore::new(max)),
            max,
            http: Arc::new(AtomicUsize::new(0)),
            sse: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A place for a new session, or `None` at the cap.
    pub(crate) fn admit(&self, kind: Kind) -> Option<SessionPermit> {
        let permit = self.budget.clone().try_acquire_owned().ok()?;
        let counter = match kind {
            Kind::Http => self.http.clone(),
            Kind::Sse => self.sse.clone(),
        };
        counter.fetch_add(1, Ordering::AcqRel);
        Some(SessionPermit {
            _permit: permit,
            counter,
        })
    }

    pub(crate) fn is_full(&self) -> bool {
        self.budget.available_permits() == 0
    }

    /// The answer to a new session over the cap.
    pub(crate) fn full_response(&self) -> Response {
        tracing::warn!(
            max = self.max,
            "refused a new session: the session cap is reached"
        );
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            format!(
                "the daemon already serves its maximum of {} sessions; retry later, close idle \
                 sessions, or raise HOOKS_MCP_MAX_SESSIONS\n",
                self.max
            ),
        )
            .into_response()
    }

    /// Open sessions: (Streamable HTTP, legacy SSE, the cap).
    pub(crate) fn open(&self) -> (usize, usize, usize) {
        (
            self.http.load(Ordering::Acquire),
            self.sse.load(Ordering::Acquire),
            self.max,
        )
    }

    pub(crate) fn report(&self) -> serde_json::Value {
        json!({
            "streamable_http": self.http.load(Ordering::Acquire),
            "sse": self.sse.load(Ordering::Acquire),
            "max": self.max,
        })
    }
}

/// Counts MCP requests being answered, so that shutdown can wait for them.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// One request in flight; done on drop.
#[derive(Debug)]
pub(crate) struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl InFlight {
    pub(crate) fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(self.clone())
    }

    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Returns once no request is in flight.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl operator_web::DaemonView for Shared {
    fn state(&self, now_ms: i64) -> operator_web::DaemonState {
        let sched = &self.status.scheduler;
        let last = sched.last_tick_ms.load(Ordering::Acquire);
        let (http, sse, max) = self.sessions.open();
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        operator_web::DaemonState {
            uptime_s: self.status.uptime().as_secs(),
            degraded: sched.degraded(now_ms),
            stopping: !self.status.is_ready(),
            scheduler: operator_web::SchedulerState {
                tick_ms: sched.pace_ms.load(Ordering::Relaxed),
                max_lag_ms: i64::try_from(sched.max_lag.as_millis()).unwrap_or(i64::MAX),
                last_tick_ms: (last > 0).then_some(last),
                lag_ms: sched.lag_ms(now_ms),
                fired: sched.fired.load(Ordering::Relaxed),
                last_error: sched
                    .last_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone(),
            },
            sessions: operator_web::OpenSessions {
                streamable_http: count(http),
                sse: count(sse),
                max: count(max),
            },
        }
    }

    fn charts(&self, now_ms: i64) -> Option<operator_web::Charts> {
        self.metrics.as_ref().map(|m| operator_web::Charts {
            tool_calls: m.tool_calls_per_minute.last_hour(now_ms),
            hook_events: m.hooks.per_minute.last_hour(now_ms),
        })
    }

    fn token_set(&self) -> bool {
        self.access.token.is_some()
    }

    fn token_matches(&self, candidate: &[u8]) -> bool {
        self.access
            .token
            .as_ref()
            .is_some_and(|t| t.matches(candidate))
    }

    fn authorized(&self, headers: &axum::http::HeaderMap) -> bool {
        self.access.authorize(headers).is_ok()
    }

    fn token_digest(&self) -> Option<[u8; 32]> {
        self.access.token.as_ref().map(crate::auth::Token::digest)
    }
}
