//! The `/health` endpoint (three levels), the balancers' probes `/health/live` (liveness) and
//! `/health/ready` (readiness, the same answer as plain `/health`), plus a small client for
//! probes.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use server_full::now_ms;

use crate::state::Shared;
use crate::status::Phase;

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
    if !status.is_ready() {
        return status.unavailable();
    }
    let uptime_s = status.uptime().as_secs();
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
        // The same figures and degraded rule as the read API and the console.
        let state = operator_web::DaemonView::state(&*shared, now);
        let sched = &state.scheduler;
        body["scheduler"] = json!({
            "last_tick": sched.last_tick_ms.map(store::to_rfc3339),
            "lag_ms": sched.lag_ms,
            "max_lag_ms": sched.max_lag_ms,
            "tick_ms": sched.tick_ms,
            "fired": sched.fired,
            "last_error": sched.last_error,
        });
        body["sessions"] = shared.sessions.report();
        body["hooks"] = shared.hooks.report();
        if healthy && state.degraded {
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

/// `GET /health/ready`: 200 while the daemon serves and no SIGTERM has come, else 503 with the
/// phase (`starting` with a start-up phase, or `stopping` with `draining` or `stopping`): what a
/// load balancer or a Kubernetes readiness probe acts on. The same answer as plain `/health`.
pub(crate) async fn ready(state: State<Arc<Shared>>) -> Response {
    handler(state, Query(HealthQuery { level: None })).await
}

/// `GET /health/live`: 200 whenever the process answers at all, in every phase (starting,
/// serving, draining, stopping), with the phase: a liveness probe restarts a daemon that stops
/// answering, never one that is merely starting or draining.
pub(crate) async fn live(State(shared): State<Arc<Shared>>) -> Response {
    let status = &shared.status;
    let body = json!({
        "status": "alive",
        "phase": status.phase().id(),
        "ready": status.is_ready(),
        "uptime_s": status.uptime().as_secs(),
    });
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
