//! The daemon's state as `/health`, the read API and the console report it: the start-up
//! phase, uptime, the scheduler's progress, and the one rule that says when the daemon is
//! degraded.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use store::StoreHandle;

/// The daemon's start-up phases, in order, then its three running states.
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
    /// Every phase completed: serving MCP, and ready.
    Serving,
    /// SIGTERM received: still serving every request, but not ready (the readiness probes
    /// answer 503), first for the shutdown delay while a load balancer notices, then while
    /// in-flight calls finish on the connections still open.
    Draining,
    /// Shutting down: closing sessions and streams; nothing more is served.
    Stopping,
}

impl Phase {
    const ALL: [Phase; 9] = [
        Phase::Config,
        Phase::StoreOpen,
        Phase::StoreVerify,
        Phase::Registry,
        Phase::Scheduler,
        Phase::Listener,
        Phase::Serving,
        Phase::Draining,
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
            Phase::Draining => "draining",
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
            Phase::Draining => "drained",
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
                pace_ms: AtomicU64::new(u64::try_from(tick.as_millis()).unwrap_or(u64::MAX)),
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

    /// Whether requests are served: from the end of start-up until sessions close (the
    /// drain included).
    pub(crate) fn is_serving(&self) -> bool {
        matches!(self.phase(), Phase::Serving | Phase::Draining)
    }

    /// Whether the readiness probes answer 200: serving, and no SIGTERM received.
    pub(crate) fn is_ready(&self) -> bool {
        self.phase() == Phase::Serving
    }

    /// The answer while the daemon is not serving, and the readiness probes' answer while it
    /// is not ready (503 with the phase, and an `error` line: the read API's error shape).
    pub(crate) fn unavailable(&self) -> Response {
        let phase = self.phase();
        let (status, error) = if phase >= Phase::Draining {
            (
                "stopping",
                format!(
                    "the daemon is stopping (phase {}); send the request to another daemon \
                     of the fleet or retry once it has restarted",
                    phase.id()
                ),
            )
        } else {
            (
                "starting",
                format!(
                    "the daemon is starting (phase {}); retry in a moment",
                    phase.id()
                ),
            )
        };
        let body = json!({ "status": status, "phase": phase.id(), "error": error });
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
    /// The time between ticks now, in milliseconds: the tick, or the longer pace while the
    /// store's changes are heard ([`SchedulerStats::check_every`]).
    pub(crate) pace_ms: AtomicU64,
    /// When the scheduler started (Unix ms; 0 before).
    pub(crate) started_ms: AtomicI64,
    /// When its last tick completed (Unix ms; 0 before the first).
    pub(crate) last_tick_ms: AtomicI64,
    /// Publications made since start.
    pub(crate) fired: AtomicU64,
    /// The last tick's error, if it failed.
    pub(crate) last_error: Mutex<Option<String>>,
}

/// How often the scheduler looks at the store while the process hears the store's changes
/// (at most: see [`SchedulerStats::check_every`]).
const HEARD_CHECK: Duration = Duration::from_secs(10);

impl SchedulerStats {
    /// How long the scheduler waits between looks at the store when nothing wakes it. Without
    /// the feed of store changes (`connected` false) that is its tick. With it, a schedule
    /// change wakes the scheduler and a timer fires the next due schedule, so the periodic
    /// look only confirms that the store answers (for the lag) and prunes old records: every
    /// 10 s, kept under a third of the lag limit, and never more often than the tick.
    pub(crate) fn check_every(&self, connected: bool) -> Duration {
        if connected {
            self.tick.max(HEARD_CHECK.min(self.max_lag / 3))
        } else {
            self.tick
        }
    }

    /// Whether the daemon is degraded at `now`: its scheduler lags more than its limit. The
    /// one place this rule is written (`/health?level=full`, the read API and the console ask).
    pub(crate) fn degraded(&self, now: i64) -> bool {
        self.lag_ms(now) > i64::try_from(self.max_lag.as_millis()).unwrap_or(i64::MAX)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(tick_ms: u64, max_lag_ms: u64) -> SchedulerStats {
        Status::new(
            Duration::from_millis(tick_ms),
            Duration::from_millis(max_lag_ms),
        )
        .scheduler
    }

    #[test]
    fn the_scheduler_looks_every_tick_unless_it_hears_the_store() {
        let defaults = stats(1_000, 30_000);
        assert_eq!(defaults.check_every(false), Duration::from_secs(1));
        // Heard: 10 s, a third of the default lag limit.
        assert_eq!(defaults.check_every(true), Duration::from_secs(10));
        // A tight lag limit keeps the looks under a third of it, never under the tick.
        assert_eq!(
            stats(1_000, 6_000).check_every(true),
            Duration::from_secs(2)
        );
        assert_eq!(stats(1_000, 1).check_every(true), Duration::from_secs(1));
        // A tick longer than 10 s is kept either way.
        let slow = stats(600_000, 30_000);
        assert_eq!(slow.check_every(true), Duration::from_secs(600));
        assert_eq!(slow.check_every(false), Duration::from_secs(600));
    }
}
