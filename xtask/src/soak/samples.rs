//! The soak's samples of the daemon (memory, fds, threads, sessions, schedule firings), and
//! what is read from them: memory growth per calls, ranges, firings expected.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use super::PER_CALLS;
use super::exchange::Stats;
use crate::util::daemon::log_tail;
use crate::util::procfs;

/// One sample of the daemon.
#[derive(Debug, Clone)]
pub(super) struct Sample {
    pub(super) at: Duration,
    pub(super) calls: u64,
    pub(super) requests: u64,
    pub(super) private_dirty_kib: u64,
    pub(super) fds: u64,
    pub(super) threads: u64,
    pub(super) http_sessions: u64,
    pub(super) sse_sessions: u64,
    pub(super) fired: u64,
    pub(super) errors: u64,
}

impl Sample {
    pub(super) fn take(
        pid: u32,
        addr: SocketAddr,
        log: &Path,
        at: Duration,
        stats: &Stats,
    ) -> anyhow::Result<Sample> {
        if !procfs::alive(pid) {
            anyhow::bail!(
                "the daemon (pid {pid}) exited; the end of its log ({}):\n{}",
                log.display(),
                log_tail(log, 20)
            );
        }
        let private_dirty_kib = procfs::private_dirty_kib(pid)?;
        let fds = procfs::fds(pid)?;
        let threads = procfs::threads(pid)?;
        let health: Value = match health_full(addr) {
            Ok(h) => h,
            Err(e) => {
                stats.error("health", format!("{e:#}"));
                Value::Null
            }
        };
        let number = |v: &Value| v.as_u64().unwrap_or(0);
        Ok(Sample {
            at,
            calls: stats.calls.load(Ordering::Relaxed),
            requests: stats.requests.load(Ordering::Relaxed),
            private_dirty_kib,
            fds,
            threads,
            http_sessions: number(&health["sessions"]["streamable_http"]),
            sse_sessions: number(&health["sessions"]["sse"]),
            fired: number(&health["scheduler"]["fired"]),
            errors: stats.error_count(),
        })
    }

    pub(super) fn print(&self) {
        println!(
            "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} |",
            self.at.as_secs(),
            self.calls,
            self.requests,
            self.private_dirty_kib as f64 / 1024.0,
            self.fds,
            self.threads,
            self.http_sessions,
            self.sse_sessions,
            self.fired,
            self.errors
        );
        let _ = std::io::stdout().flush();
    }
}

/// `GET /health?level=full`, which must answer 200.
fn health_full(addr: SocketAddr) -> anyhow::Result<Value> {
    let (status, body) = daemon::probe_health(addr, Some("full"), Duration::from_secs(10))
        .context("GET /health?level=full")?;
    anyhow::ensure!(status == 200, "/health?level=full: HTTP {status}: {body}");
    serde_json::from_str(&body).context("/health?level=full: not JSON")
}

/// Private dirty memory against calls after the warm-up.
#[derive(Debug)]
pub(super) struct Growth {
    pub(super) first_kib: u64,
    pub(super) first_calls: u64,
    pub(super) last_kib: u64,
    pub(super) last_calls: u64,
    /// Least-squares slope, KiB per 100,000 calls.
    pub(super) slope_kib: f64,
    /// First to last sample, KiB per 100,000 calls.
    pub(super) endpoints_kib: f64,
}

pub(super) fn growth(samples: &[&Sample]) -> Option<Growth> {
    let (first, last) = (samples.first()?, samples.last()?);
    if samples.len() < 2 || last.calls <= first.calls {
        return None;
    }
    let n = samples.len() as f64;
    let mean_x = samples.iter().map(|s| s.calls as f64).sum::<f64>() / n;
    let mean_y = samples
        .iter()
        .map(|s| s.private_dirty_kib as f64)
        .sum::<f64>()
        / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for s in samples {
        let dx = s.calls as f64 - mean_x;
        sxy += dx * (s.private_dirty_kib as f64 - mean_y);
        sxx += dx * dx;
    }
    let span = (last.calls - first.calls) as f64;
    Some(Growth {
        first_kib: first.private_dirty_kib,
        first_calls: first.calls,
        last_kib: last.private_dirty_kib,
        last_calls: last.calls,
        slope_kib: if sxx > 0.0 {
            sxy / sxx * PER_CALLS
        } else {
            0.0
        },
        endpoints_kib: (last.private_dirty_kib as f64 - first.private_dirty_kib as f64) / span
            * PER_CALLS,
    })
}

/// Smallest and largest fds and threads over `samples`.
pub(super) fn ranges(samples: &[&Sample]) -> (u64, u64, u64, u64) {
    let fds = samples.iter().map(|s| s.fds);
    let threads = samples.iter().map(|s| s.threads);
    (
        fds.clone().min().unwrap_or(0),
        fds.max().unwrap_or(0),
        threads.clone().min().unwrap_or(0),
        threads.max().unwrap_or(0),
    )
}

/// Firings due by `ended` (since `started`) for schedules of 60 s created at `created`.
pub(super) fn expected_firings(created: &[Instant], started: Instant, ended: Duration) -> u64 {
    let end = started + ended;
    created
        .iter()
        .map(|c| end.saturating_duration_since(*c).as_secs() / 60)
        .sum()
}
