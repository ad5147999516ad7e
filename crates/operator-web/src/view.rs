//! The narrow view of the daemon that the operator's pages read: what they show of it and the
//! one check they need from it, nothing of its transports or sessions.

use axum::http::HeaderMap;

/// What the operator's pages see of the daemon that serves them. The daemon implements it.
pub trait DaemonView: Send + Sync + std::fmt::Debug {
    /// The daemon's state at `now_ms` (Unix milliseconds).
    fn state(&self, now_ms: i64) -> DaemonState;
    /// Per-minute counts of tool calls and hook events over the last hour, when the daemon
    /// keeps metrics.
    fn charts(&self, now_ms: i64) -> Option<Charts>;
    /// Whether the daemon has a bearer token (the console then asks for it).
    fn token_set(&self) -> bool;
    /// Whether `candidate` is the daemon's token (compared in constant time).
    fn token_matches(&self, candidate: &[u8]) -> bool;
    /// Whether `headers` carry the daemon's bearer token (always true without a token).
    fn authorized(&self, headers: &HeaderMap) -> bool;
    /// A digest of the daemon's token (`None` without one), never the token: console sessions
    /// are signed with it, so a session begun under one token (or none) ends when the daemon
    /// starts with another.
    fn token_digest(&self) -> Option<[u8; 32]>;
}

/// The daemon at one instant.
#[derive(Debug, Clone, Default)]
pub struct DaemonState {
    /// Seconds since it started.
    pub uptime_s: u64,
    /// Whether it is degraded (the daemon's rule: its scheduler lags past its limit).
    pub degraded: bool,
    /// Whether it is stopping: SIGTERM came, it serves what is in flight but no longer reports
    /// ready (`/health` answers `stopping`).
    pub stopping: bool,
    /// Its scheduler's progress.
    pub scheduler: SchedulerState,
    /// Its open MCP sessions.
    pub sessions: OpenSessions,
}

/// The daemon's scheduler.
#[derive(Debug, Clone, Default)]
pub struct SchedulerState {
    /// The time between periodic ticks now, in milliseconds: the configured tick, or a longer
    /// one (10 s by default) while the daemon hears the store's changes (schedules then fire
    /// from those and a timer).
    pub tick_ms: u64,
    /// The lag above which the daemon is degraded, in milliseconds.
    pub max_lag_ms: i64,
    /// When its last tick completed (Unix ms).
    pub last_tick_ms: Option<i64>,
    /// Milliseconds since the last completed tick.
    pub lag_ms: i64,
    /// Publications made since the daemon started.
    pub fired: u64,
    /// The last tick's error, if it failed.
    pub last_error: Option<String>,
}

/// The daemon's open MCP sessions.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenSessions {
    /// Streamable HTTP sessions.
    pub streamable_http: u64,
    /// Legacy SSE sessions.
    pub sse: u64,
    /// The cap on both together.
    pub max: u64,
}

/// Per-minute counts over the last hour, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Charts {
    /// Tool calls per minute.
    pub tool_calls: Vec<u64>,
    /// Hook events per minute.
    pub hook_events: Vec<u64>,
}
