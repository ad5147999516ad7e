//! Start-up phases and the `/health` endpoint (three levels), plus a small client for probes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use store::StoreHandle;

use crate::http::Shared;
use crate::settings::now_ms;

/// The daemon's start-up phases, in order, then its two running states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// Reading and checking the environment, taking the instance lock, binding the port.
    Config = 0,
    /// Opening (or creating) the store.
    StoreOpen,
    /// Checking the store's schema version, tables and integrity.
    StoreVerify,
    /// Building the tool registry from the filters.
    Registry,
    /// Starting the scheduler that fires due schedules.
    Scheduler,
    /// Opening the MCP endpoints.
    Listener,
    /// Every phase completed: serving MCP.
    Serving,
    /// Shutting down: finishing in-flight calls.
    Stopping,
}

impl Phase {
    const ALL: [Phase; 8] = [
        Phase::Config,
        Phase::StoreOpen,
        Phase::StoreVerify,
        Phase::Registry,
        Phase::Scheduler,
        Phase::Listener,
        Phase::Serving,
        Phase::Stopping,
    ];

    /// The phase's name in `/health` answers.
    pub fn id(self) -> &'static str {
        match self {
            Phase::Config => "config",
            Phase::StoreOpen => "store-open",
            Phase::StoreVerify => "store-verify",
            Phase::Registry => "registry",
            Phase::Scheduler => "scheduler",
            Phase::Listener => "listener",
            Phase::Serving => "serving",
            Phase::Stopping => "stopping",
        }
    }

    /// What completing the phase means, for the log.
    pub fn done(self) -> &'static str {
        match self {
            Phase::Config => "configuration validated",
            Phase::StoreOpen => "store opened",
            Phase::StoreVerify => "store verified",
            Phase::Registry => "tool registry built",
            Phase::Scheduler => "scheduler started",
            Phase::Listener => "listener serving MCP",
            Phase::Serving => "serving",
            Phase::Stopping => "stopped",
        }
    }
}

/// The phase in progress and the scheduler's progress, shared with the HTTP handlers.
#[derive(Debug)]
pub(crate) struct Status {
    phase: AtomicU8,
    started: Instant,
    /// The scheduler's progress.
    pub(crate) scheduler: SchedulerStats,
    /// The store, once opened.
    pub(crate) store: std::sync::OnceLock<StoreHandle>,
}

impl Status {
    pub(crate) fn new(tick: Duration, max_lag: Duration) -> Status {
        Status {
            phase: AtomicU8::new(Phase::Config as u8),
            started: Instant::now(),
            scheduler: SchedulerStats {
                tick,
                max_lag,
                started_ms: AtomicI64::new(0),
                last_tick_ms: AtomicI64::new(0),
                fired: AtomicU64::new(0),
                last_error: Mutex::new(None),
            },
            store: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn phase(&self) -> Phase {
        let n = self.phase.load(Ordering::Acquire);
        Phase::ALL
            .get(usize::from(n))
            .copied()
            .unwrap_or(Phase::Stopping)
    }

    pub(crate) fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Time since the daemon started.
    pub(crate) fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    pub(crate) fn is_serving(&self) -> bool {
        self.phase() == Phase::Serving
    }

    /// The answer for every request while the daemon is not serving (503 with the phase).
    pub(crate) fn unavailable(&self) -> Response {
        let phase = self.phase();
        let status = if phase == Phase::Stopping {
            "stopping"
        } else {
            "starting"
        };
        let body = json!({ "status": status, "phase": phase.id() });
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(axum::http::header::RETRY_AFTER, "1")],
            axum::Json(body),
        )
            .into_response()
    }
}

/// What the scheduler reports to `/health?level=full`.
#[derive(Debug)]
pub(crate) struct SchedulerStats {
    pub(crate) tick: Duration,
    pub(crate) max_lag: Duration,
    /// When the scheduler started (Unix ms; 0 before).
    pub(crate) started_ms: AtomicI64,
    /// When its last tick completed (Unix ms; 0 before the first).
    pub(crate) last_tick_ms: AtomicI64,
    /// Publications made since start.
    pub(crate) fired: AtomicU64,
    /// The last tick's error, if it failed.
    pub(crate) last_error: Mutex<Option<String>>,
}

impl SchedulerStats {
    /// Milliseconds since the last completed tick (or since start before the first one).
    pub(crate) fn lag_ms(&self, now: i64) -> i64 {
        let last = self.last_tick_ms.load(Ordering::Acquire);
        let since = if last > 0 {
            last
        } else {
            self.started_ms.load(Ordering::Acquire)
        };
        if since == 0 { 0 } else { (now - since).max(0) }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct HealthQuery {
    level: Option<String>,
}

/// `GET /health[?level=db|full]`.
pub(crate) async fn handler(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HealthQuery>,
) -> Response {
    let level = query.level.as_deref().map(str::trim).unwrap_or("");
    if !matches!(level, "" | "alive" | "db" | "full") {
        return (
            StatusCode::BAD_REQUEST,
            format!(
                "level: unknown health level `{level}`; use no level (alive and ready), `db` \
                 (store round trip) or `full` (counts and scheduler lag)\n"
            ),
        )
            .into_response();
    }
    let status = &shared.status;
    if !status.is_serving() {
        return status.unavailable();
    }
    let uptime_s = status.started.elapsed().as_secs();
    let mut body = json!({
        "status": "ok",
        "phase": Phase::Serving.id(),
        "uptime_s": uptime_s,
        "in_flight": shared.inflight.count(),
    });
    if level.is_empty() || level == "alive" {
        return (StatusCode::OK, axum::Json(body)).into_response();
    }
    let Some(store) = status.store.get().cloned() else {
        return status.unavailable();
    };
    let want_counts = level == "full";
    let now = now_ms();
    let probe = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let ping = store.ping();
        let rtt = started.elapsed();
        let counts = match (&ping, want_counts) {
            (Ok(()), true) => Some(store.counts(now)),
            _ => None,
        };
        (ping, rtt, counts)
    })
    .await;
    let (ping, rtt, counts) = match probe {
        Ok(result) => result,
        Err(e) => {
            tracing::error!("the health probe failed: {e}");
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(json!({ "status": "error", "db": { "reachable": false } })),
            )
                .into_response();
        }
    };
    if let Some(metrics) = &shared.metrics {
        if let Err(e) = &ping {
            metrics.store_error(crate::metrics::StoreOperation::HealthPing, e);
        }
        if let Some(Err(e)) = &counts {
            metrics.store_error(crate::metrics::StoreOperation::HealthCounts, e);
        }
    }
    let mut healthy = true;
    body["db"] = match &ping {
        Ok(()) => {
            json!({ "reachable": true, "round_trip_ms": (rtt.as_secs_f64() * 1e6).round() / 1e3 })
        }
        Err(e) => {
            healthy = false;
            json!({ "reachable": false, "error": e.to_string() })
        }
    };
    if want_counts {
        match counts {
            Some(Ok(c)) => {
                body["counts"] = json!({
                    "active_broadcasts": c.active_messages,
                    "enforcements": c.reminders,
                    "conditions": c.conditions,
                    "active_schedules": c.active_schedules,
                });
            }
            Some(Err(e)) => {
                healthy = false;
                body["counts"] = json!({ "error": e.to_string() });
            }
            None => {}
        }
        let sched = &status.scheduler;
        let lag = sched.lag_ms(now);
        let max_lag = i64::try_from(sched.max_lag.as_millis()).unwrap_or(i64::MAX);
        let last = sched.last_tick_ms.load(Ordering::Acquire);
        let last_error = sched
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        body["scheduler"] = json!({
            "last_tick": (last > 0).then(|| store::to_rfc3339(last)),
            "lag_ms": lag,
            "max_lag_ms": max_lag,
            "tick_ms": u64::try_from(sched.tick.as_millis()).unwrap_or(u64::MAX),
            "fired": sched.fired.load(Ordering::Relaxed),
            "last_error": last_error,
        });
        body["sessions"] = shared.sessions.report();
        body["hooks"] = shared.hooks.report();
        if healthy && lag > max_lag {
            body["status"] = Value::from("degraded");
            return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
    }
    if !healthy {
        body["status"] = Value::from("error");
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
    }
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// Asks a running daemon at `addr` for `/health` (with `level`, if any) over plain HTTP/1.0 (one
/// request per connection, no chunking);
/// returns the status code and the body. For supervisors' health checks.
///
/// # Errors
/// The I/O error when the daemon cannot be reached or answers garbage.
pub fn probe(
    addr: SocketAddr,
    level: Option<&str>,
    timeout: Duration,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let path = match level {
        Some(level) => format!("/health?level={level}"),
        None => "/health".to_owned(),
    };
    // `SocketAddr` displays IPv6 in brackets, as a Host header wants it.
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP response");
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(bad)?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(bad)?;
    Ok((code, body.to_owned()))
}
