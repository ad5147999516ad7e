//! The daemon's Prometheus metrics, served at `GET /metrics` (behind the same token and `Host`
//! checks as `/mcp`, and 503 until the daemon serves).
//!
//! Everything is counted with `prometheus-client`: counters and histograms that the hot paths
//! update through handles created at start-up (one atomic add per counter, one short
//! uncontended lock per histogram observation, no allocation and no label lookup by hashing
//! label sets), and gauges read at scrape time from the values the daemon keeps anyway
//! (sessions, requests in flight, the store's counts). The answer is the Prometheus text format
//! (0.0.4), or OpenMetrics when the scraper's `Accept` asks for it.
//!
//! `HOOKS_MCP_METRICS=off` turns it all off: `/metrics` answers 404 and the request paths skip
//! every measurement (the benchmark compares both in one run).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::Duration;

use hook_dispatch::Event;
use prometheus_client::encoding::{EncodeLabelSet, prometheus_text, text};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use server_full::{CallObserver, CallOutcome};
use store::{Counts, Firing, Lease, StoreError};

/// Every metric name starts with this (and `_`).
const PREFIX: &str = "hooks_mcp";

/// The `Content-Type` of the OpenMetrics text answer.
pub(crate) const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The `Content-Type` of the Prometheus text answer.
pub(crate) const PROMETHEUS_CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Upper bounds (seconds) of the tool-call and hook-event latency buckets: from 100 µs (a read
/// answered on the async thread) to 10 s (a condition script near its time limit).
const LATENCY_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Upper bounds (seconds) of the scheduler-lag buckets: a tick is a second by default, so most
/// firings land below 1 s; the long tail shows a stalled or overloaded scheduler.
const LAG_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The label value of tool calls whose tool name this server does not know (so a client cannot
/// create series by calling made-up names).
pub(crate) const UNKNOWN_TOOL: &str = "(unknown)";
/// The label value of hook events whose name is no known event.
pub(crate) const UNKNOWN_EVENT: &str = "(unknown)";
/// The label value of Claude Code's other events, answered with nothing
/// (`hook_dispatch::QUIET_EVENTS`): one series for all of them, as they are many.
pub(crate) const QUIET_EVENT: &str = "(quiet)";

/// Reads `HOOKS_MCP_METRICS`: `on` (or unset), `off`.
///
/// # Errors
/// A message naming the setting for any other value.
/// Environment variable: `on` (default) or `off`: whether the daemon keeps and serves metrics.
pub const METRICS_ENV: &str = "HOOKS_MCP_METRICS";

pub(crate) fn parse_switch(raw: Option<&str>) -> Result<bool, String> {
    match raw.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("" | "on" | "true" | "1") => Ok(true),
        Some("off" | "false" | "0") => Ok(false),
        Some(other) => Err(format!(
            "{METRICS_ENV}: `{other}` is neither `on` nor `off`; unset it to serve /metrics"
        )),
    }
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookLabels {
    route: &'static str,
    event: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookRouteLabels {
    route: &'static str,
    event: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreErrorLabels {
    operation: &'static str,
    kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabels {
    transport: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// Minutes kept by [`PerMinute`]: the last hour.
pub(crate) const MINUTES: usize = 60;

/// Events per minute over the last hour, for the operator console's charts: a ring of
/// [`MINUTES`] slots, each the count of one minute (Unix minute numbers).
#[derive(Debug)]
pub(crate) struct PerMinute {
    slots: Mutex<[(i64, u64); MINUTES]>,
}

impl Default for PerMinute {
    fn default() -> Self {
        PerMinute {
            slots: Mutex::new([(i64::MIN, 0); MINUTES]),
        }
    }
}

impl PerMinute {
    /// Counts one event at `now_ms` (Unix milliseconds).
    pub(crate) fn record(&self, now_ms: i64) {
        let minute = now_ms.div_euclid(60_000);
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = slots.get_mut(minute.rem_euclid(MINUTES as i64) as usize) {
            if slot.0 == minute {
                slot.1 += 1;
            } else {
                *slot = (minute, 1);
            }
        }
    }

    /// The counts of the last [`MINUTES`] minutes up to `now_ms`'s, oldest first (the last one
    /// is the minute in progress).
    pub(crate) fn last_hour(&self, now_ms: i64) -> Vec<u64> {
        let current = now_ms.div_euclid(60_000);
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        (0..MINUTES as i64)
            .rev()
            .map(|back| {
                let minute = current - back;
                slots
                    .get(minute.rem_euclid(MINUTES as i64) as usize)
                    .filter(|slot| slot.0 == minute)
                    .map_or(0, |slot| slot.1)
            })
            .collect()
    }
}

/// One tool's series: a counter per outcome and the latency histogram.
#[derive(Debug, Clone)]
struct ToolSeries {
    calls: [Counter; 3],
    duration: Histogram,
}

/// The tool-call series of every tool a session may call, created at start-up; the call path
/// finds its tool's series by name without allocating.
#[derive(Debug)]
pub(crate) struct ToolTable {
    index: HashMap<String, usize>,
    series: Vec<ToolSeries>,
    unknown: ToolSeries,
    per_minute: Arc<PerMinute>,
}

impl CallObserver for ToolTable {
    fn record(&self, tool: &str, outcome: CallOutcome, elapsed: Duration) {
        let series = self
            .index
            .get(tool)
            .and_then(|&i| self.series.get(i))
            .unwrap_or(&self.unknown);
        let slot = match outcome {
            CallOutcome::Ok => 0,
            CallOutcome::ToolError => 1,
            CallOutcome::ProtocolError => 2,
        };
        series.calls[slot].inc();
        series.duration.observe(elapsed.as_secs_f64());
        self.per_minute.record(server_full::now_ms());
    }
}

/// Which hook route answered an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookRouteKind {
    /// `POST /hooks/{Event}`: Claude Code's HTTP hooks.
    Http,
    /// `POST /hook/{event}`: events forwarded by command hooks.
    Forward,
}

impl HookRouteKind {
    const ALL: [HookRouteKind; 2] = [HookRouteKind::Http, HookRouteKind::Forward];

    fn label(self) -> &'static str {
        match self {
            HookRouteKind::Http => "http",
            HookRouteKind::Forward => "forward",
        }
    }
}

/// How a hook event ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookOutcome {
    /// Answered (200 with an answer, or 204 with nothing to say).
    Answered,
    /// Refused as the request's fault (4xx: a bad payload, a wrong method, too large).
    Refused,
    /// The daemon failed to answer (500).
    Failed,
}

impl HookOutcome {
    const ALL: [HookOutcome; 3] = [
        HookOutcome::Answered,
        HookOutcome::Refused,
        HookOutcome::Failed,
    ];

    fn label(self) -> &'static str {
        match self {
            HookOutcome::Answered => "answered",
            HookOutcome::Refused => "refused",
            HookOutcome::Failed => "failed",
        }
    }
}

/// Events as label values: the known ones, then [`QUIET_EVENT`], then [`UNKNOWN_EVENT`].
const EVENTS: usize = Event::ALL.len() + 2;

/// A hook event's place among the label values (a known event, [`QUIET_EVENT`] or
/// [`UNKNOWN_EVENT`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventSlot(usize);

impl EventSlot {
    /// The slot of the event named `name` (as a request's path gives it, any case).
    pub(crate) fn of(name: &str) -> EventSlot {
        let known = Event::parse(name).and_then(|e| Event::ALL.iter().position(|&k| k == e));
        EventSlot(match known {
            Some(slot) => slot,
            None if hook_dispatch::quiet_event(name).is_some() => Event::ALL.len(),
            None => Event::ALL.len() + 1,
        })
    }
}

fn event_label(slot: usize) -> &'static str {
    match Event::ALL.get(slot) {
        Some(event) => event.name(),
        None if slot == Event::ALL.len() => QUIET_EVENT,
        None => UNKNOWN_EVENT,
    }
}

/// The hook-event series, created at start-up for every route, event and outcome.
#[derive(Debug)]
pub(crate) struct HookMetrics {
    /// `[route][event][outcome]`.
    events: Vec<Counter>,
    /// `[route][event]`.
    durations: Vec<Histogram>,
    /// Events answered per minute, every route together.
    pub(crate) per_minute: PerMinute,
}

impl HookMetrics {
    /// Counts one `event` answered by `route`.
    pub(crate) fn record(
        &self,
        route: HookRouteKind,
        event: EventSlot,
        outcome: HookOutcome,
        elapsed: Duration,
    ) {
        let route = match route {
            HookRouteKind::Http => 0,
            HookRouteKind::Forward => 1,
        };
        let slot = route * EVENTS + event.0;
        let outcome = match outcome {
            HookOutcome::Answered => 0,
            HookOutcome::Refused => 1,
            HookOutcome::Failed => 2,
        };
        if let Some(counter) = self.events.get(slot * HookOutcome::ALL.len() + outcome) {
            counter.inc();
        }
        if let Some(histogram) = self.durations.get(slot) {
            histogram.observe(elapsed.as_secs_f64());
        }
        self.per_minute.record(server_full::now_ms());
    }
}

/// The scheduler tick's series.
#[derive(Debug)]
pub(crate) struct SchedulerMetrics {
    ticks_ok: Counter,
    ticks_failed: Counter,
    firings: Counter,
    skipped: Counter,
    lag: Histogram,
}

impl SchedulerMetrics {
    /// A tick at `fired_ms` (Unix ms) that made `firings`.
    pub(crate) fn tick(&self, firings: &[Firing], fired_ms: i64) {
        self.ticks_ok.inc();
        for firing in firings {
            self.firings.inc();
            self.skipped.inc_by(firing.skipped);
            let lag_ms = fired_ms.saturating_sub(firing.scheduled_for).max(0);
            #[allow(clippy::cast_precision_loss)]
            self.lag.observe(lag_ms as f64 / 1000.0);
        }
    }

    /// A tick that failed.
    pub(crate) fn tick_failed(&self) {
        self.ticks_failed.inc();
    }
}

/// Where the daemon met a store error it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreOperation {
    /// The scheduler tick firing due schedules.
    SchedulerFire,
    /// `/health?level=db|full` pinging the store.
    HealthPing,
    /// `/health?level=full` reading the counts.
    HealthCounts,
    /// A `/metrics` scrape reading the counts.
    MetricsCounts,
}

impl StoreOperation {
    fn label(self) -> &'static str {
        match self {
            StoreOperation::SchedulerFire => "scheduler_fire",
            StoreOperation::HealthPing => "health_ping",
            StoreOperation::HealthCounts => "health_counts",
            StoreOperation::MetricsCounts => "metrics_counts",
        }
    }
}

/// A store error's kind, as a label value.
pub(crate) fn store_error_kind(e: &StoreError) -> &'static str {
    match e {
        StoreError::Missing { .. } => "missing",
        StoreError::NoLocation => "no_location",
        StoreError::Corrupt { .. } => "corrupt",
        StoreError::ReadOnly { .. } => "read_only",
        StoreError::Locked { .. } => "locked",
        StoreError::NewerSchema { .. } => "newer_schema",
        StoreError::MissingTable { .. } => "missing_table",
        StoreError::Unavailable { .. } => "unavailable",
        StoreError::Refused { .. } => "refused",
        StoreError::Disk { .. } => "disk",
        StoreError::InvalidSetting { .. } => "invalid_setting",
        StoreError::NotFound { .. } => "not_found",
        StoreError::Conflict(_) => "conflict",
        StoreError::InvalidData(_) => "invalid_data",
        StoreError::Database(_) => "database",
        StoreError::WouldWait => "would_wait",
        StoreError::Io { .. } => "io",
        StoreError::NoWatch { .. } => "no_watch",
        _ => "other",
    }
}

/// What a scrape reads from the daemon's own state (no store call).
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Open Streamable HTTP sessions.
    pub(crate) sessions_http: u64,
    /// Open legacy SSE sessions.
    pub(crate) sessions_sse: u64,
    /// The session cap.
    pub(crate) sessions_max: u64,
    /// MCP requests and hook events being answered.
    pub(crate) in_flight: u64,
    /// When the scheduler's last tick completed (Unix ms; 0 before the first).
    pub(crate) scheduler_last_tick_ms: i64,
    /// What the store said, or `None` when it could not answer in time.
    pub(crate) store: Option<StoreSnapshot>,
}

/// What a scrape reads from the store (one blocking call per scrape).
#[derive(Debug, Clone, Default)]
pub(crate) struct StoreSnapshot {
    /// The fleet-wide gauges, on the one daemon of the store that reports them (it holds the
    /// store's [`STORE_LEASE`]); `None` on the others.
    pub(crate) fleet: Option<FleetGauges>,
}

/// The gauges that describe the whole store rather than this daemon: reported by one daemon
/// of a store at a time, so that summing over the daemons counts them once.
#[derive(Debug, Clone, Default)]
pub(crate) struct FleetGauges {
    /// The store's record counts (what `/health?level=full` reports).
    pub(crate) counts: Counts,
    /// Live agent sessions as the store counts them (seen within the live window), over
    /// every daemon, stdio server and hook of the fleet. `None` leaves the gauge out.
    pub(crate) live_sessions: Option<u64>,
}

/// The store-wide lease whose holder reports the fleet-wide gauges.
pub(crate) const STORE_LEASE: &str = "metrics-store-gauges";

/// Whether this daemon reports the store's gauges: the lease it holds, if any, and whether it
/// gave reporting up for good (it is stopping).
#[derive(Default)]
pub(crate) struct StoreReporter {
    lease: Mutex<Option<Box<dyn Lease>>>,
    given_up: AtomicBool,
}

impl std::fmt::Debug for StoreReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreReporter")
            .field("given_up", &self.given_up.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl StoreReporter {
    /// Whether this daemon reports the store's gauges now: it keeps the lease while it still
    /// holds it, and otherwise tries to take it (blocking calls: run it on the blocking pool,
    /// where a lease is also let go).
    ///
    /// # Errors
    /// The store's error when the lease could not be asked for.
    pub(crate) fn reports(&self, store: &dyn store::Store) -> Result<bool, StoreError> {
        let mut lease = self.lease.lock().unwrap_or_else(PoisonError::into_inner);
        if self.given_up.load(Ordering::Acquire) {
            *lease = None;
            return Ok(false);
        }
        if lease.as_mut().is_some_and(|held| !held.still_held()) {
            *lease = None;
        }
        if lease.is_none() {
            *lease = store.try_lease(STORE_LEASE)?;
        }
        if self.given_up.load(Ordering::Acquire) {
            *lease = None;
            return Ok(false);
        }
        Ok(lease.is_some())
    }

    /// Stops reporting for good and gives the lease up, so that another daemon of the store
    /// reports from its next scrape (on SIGTERM). Never blocks: a held lease is let go on a
    /// thread of its own (a PostgreSQL lease closes its connection, which must not happen on
    /// an async thread), and one a scrape holds at this moment is let go by that scrape.
    pub(crate) fn give_up(&self) {
        self.given_up.store(true, Ordering::Release);
        let held = match self.lease.try_lock() {
            Ok(mut lease) => lease.take(),
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().take(),
            Err(TryLockError::WouldBlock) => None,
        };
        if let Some(held) = held {
            let_go(held);
        }
    }
}

impl Drop for StoreReporter {
    fn drop(&mut self) {
        let held = self
            .lease
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(held) = held {
            let_go(held);
        }
    }
}

/// Drops `lease` on a thread of its own: a PostgreSQL lease closes its connection, which must
/// not happen on an async thread. Without a thread, the process's end frees it.
fn let_go(lease: Box<dyn Lease>) {
    let cell = Arc::new(Mutex::new(Some(lease)));
    let on_thread = cell.clone();
    let spawned = std::thread::Builder::new()
        .name("metrics-lease".into())
        .spawn(move || {
            let lease = on_thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            drop(lease);
        });
    if spawned.is_err() {
        std::mem::forget(cell);
    }
}

impl StoreSnapshot {
    /// Reads the snapshot from `store`: the fleet-wide gauges when `reporter` says this daemon
    /// reports them (blocking calls: run it on the blocking pool).
    ///
    /// A lease that cannot be asked for (a PostgreSQL server out of connections, a lease file
    /// that cannot be opened) is not the store being down: this daemon then reports no
    /// fleet-wide gauges, says why, and asks again at the next scrape.
    ///
    /// # Errors
    /// The store's error when the gauges cannot be read.
    pub(crate) fn read(
        store: &dyn store::Store,
        reporter: &StoreReporter,
        now: i64,
        retention: &store::Retention,
    ) -> Result<StoreSnapshot, StoreError> {
        match reporter.reports(store) {
            Ok(true) => {}
            Ok(false) => return Ok(StoreSnapshot { fleet: None }),
            Err(e) => {
                tracing::warn!(
                    "cannot ask for the store's metrics lease ({e}): this daemon reports no \
                     fleet-wide gauges until it can"
                );
                return Ok(StoreSnapshot { fleet: None });
            }
        }
        Ok(StoreSnapshot {
            fleet: Some(FleetGauges {
                counts: store.counts(now)?,
                live_sessions: Some(store.count_sessions(retention.live_since(now))?),
            }),
        })
    }
}

/// Every metric the daemon keeps.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    /// Tool calls answered per minute, every tool together.
    pub(crate) tool_calls_per_minute: Arc<PerMinute>,
    tool_calls: Family<ToolCallLabels, Counter>,
    tool_durations: Family<ToolLabels, Histogram, fn() -> Histogram>,
    /// The hook routes' series.
    pub(crate) hooks: HookMetrics,
    /// The scheduler's series.
    pub(crate) scheduler: SchedulerMetrics,
    store_errors: Family<StoreErrorLabels, Counter>,
    /// Whether this daemon reports the store's fleet-wide gauges.
    pub(crate) store_reporter: Arc<StoreReporter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Registers every metric (each series at zero).
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register(
            "build",
            "The running build: always 1, the version as a label",
            Info::new([("version", protocol_lite::handshake::SERVER_VERSION)]),
        );
        let start_time: Gauge = Gauge::default();
        start_time.set(server_full::now_ms() / 1000);
        registry.register_with_unit(
            "start_time",
            "When the daemon started, in Unix seconds",
            Unit::Seconds,
            start_time,
        );

        let tool_calls = Family::<ToolCallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "tools/call requests answered, by tool and outcome (ok, tool_error: a result with \
             isError, protocol_error: a JSON-RPC error)",
            tool_calls.clone(),
        );
        let tool_durations =
            Family::<ToolLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register_with_unit(
            "tool_call_duration",
            "Time from a tools/call reaching the server to its result, by tool",
            Unit::Seconds,
            tool_durations.clone(),
        );

        let hook_events = Family::<HookLabels, Counter>::default();
        registry.register(
            "hook_events",
            "Hook events the daemon answered, by route (http: POST /hooks/{Event}, forward: \
             POST /hook/{event}), event and outcome (answered, refused, failed)",
            hook_events.clone(),
        );
        let hook_durations =
            Family::<HookRouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                latency_histogram,
            );
        registry.register_with_unit(
            "hook_event_duration",
            "Time the daemon took to answer a hook event, by route and event",
            Unit::Seconds,
            hook_durations.clone(),
        );
        let mut events = Vec::new();
        let mut durations = Vec::new();
        for route in HookRouteKind::ALL {
            for slot in 0..EVENTS {
                let event = event_label(slot);
                for outcome in HookOutcome::ALL {
                    events.push(hook_events.get_or_create_owned(&HookLabels {
                        route: route.label(),
                        event,
                        outcome: outcome.label(),
                    }));
                }
                durations.push(hook_durations.get_or_create_owned(&HookRouteLabels {
                    route: route.label(),
                    event,
                }));
            }
        }

        let ticks = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "scheduler_ticks",
            "Scheduler ticks, by outcome (ok, error: the store could not fire due schedules)",
            ticks.clone(),
        );
        let firings = Counter::default();
        registry.register(
            "scheduler_firings",
            "Schedule occurrences fired (each published one broadcast)",
            firings.clone(),
        );
        let skipped = Counter::default();
        registry.register(
            "scheduler_skipped_occurrences",
            "Occurrences skipped because they were already past when their schedule fired",
            skipped.clone(),
        );
        let lag = Histogram::new(LAG_BUCKETS);
        registry.register_with_unit(
            "scheduler_lag",
            "Delay from an occurrence's due time to its firing",
            Unit::Seconds,
            lag.clone(),
        );
        let store_errors = Family::<StoreErrorLabels, Counter>::default();
        registry.register(
            "store_errors",
            "Store errors the daemon met outside tool calls and hook events, by operation and \
             kind",
            store_errors.clone(),
        );

        Metrics {
            registry,
            tool_calls_per_minute: Arc::default(),
            tool_calls,
            tool_durations,
            hooks: HookMetrics {
                events,
                durations,
                per_minute: PerMinute::default(),
            },
            scheduler: SchedulerMetrics {
                ticks_ok: ticks.get_or_create_owned(&OutcomeLabels { outcome: "ok" }),
                ticks_failed: ticks.get_or_create_owned(&OutcomeLabels { outcome: "error" }),
                firings,
                skipped,
                lag,
            },
            store_errors,
            store_reporter: Arc::default(),
        }
    }

    /// Creates the series of every tool in `names` (and of unknown tools).
    pub(crate) fn tool_table<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> ToolTable {
        let series = |tool: &str| ToolSeries {
            calls: CallOutcome::ALL.map(|outcome| {
                self.tool_calls.get_or_create_owned(&ToolCallLabels {
                    tool: tool.to_owned(),
                    outcome: outcome.label(),
                })
            }),
            duration: self.tool_durations.get_or_create_owned(&ToolLabels {
                tool: tool.to_owned(),
            }),
        };
        let mut index = HashMap::new();
        let mut all = Vec::new();
        for name in names {
            if !index.contains_key(name) {
                index.insert(name.to_owned(), all.len());
                all.push(series(name));
            }
        }
        ToolTable {
            index,
            series: all,
            unknown: series(UNKNOWN_TOOL),
            per_minute: self.tool_calls_per_minute.clone(),
        }
    }

    /// Counts a store error `e` met by `operation`.
    pub(crate) fn store_error(&self, operation: StoreOperation, e: &StoreError) {
        self.store_error_of_kind(operation, store_error_kind(e));
    }

    /// Counts a store failure of `kind` (a store error's kind, or `timeout`).
    pub(crate) fn store_error_of_kind(&self, operation: StoreOperation, kind: &'static str) {
        self.store_errors
            .get_or_create(&StoreErrorLabels {
                operation: operation.label(),
                kind,
            })
            .inc();
    }

    /// The exposition: every kept metric, then the gauges of `snapshot`; OpenMetrics when
    /// `openmetrics`, else the Prometheus text format.
    ///
    /// # Errors
    /// Only if formatting fails (it writes into a `String`).
    pub(crate) fn render(
        &self,
        snapshot: &Snapshot,
        openmetrics: bool,
    ) -> Result<String, std::fmt::Error> {
        let gauges = scrape_registry(snapshot);
        let mut out = String::with_capacity(16 * 1024);
        if openmetrics {
            text::encode_registry(&mut out, &self.registry)?;
            text::encode_registry(&mut out, &gauges)?;
            text::encode_eof(&mut out)?;
        } else {
            prometheus_text::encode(&mut out, &self.registry)?;
            prometheus_text::encode(&mut out, &gauges)?;
        }
        Ok(out)
    }
}

fn gauge(value: u64) -> Gauge {
    let gauge: Gauge = Gauge::default();
    gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
    gauge
}

/// The gauges read at scrape time, in a registry of their own.
fn scrape_registry(snapshot: &Snapshot) -> Registry {
    let mut registry = Registry::with_prefix(PREFIX);
    let sessions = Family::<TransportLabels, Gauge>::default();
    for (transport, open) in [
        ("streamable-http", snapshot.sessions_http),
        ("sse", snapshot.sessions_sse),
    ] {
        sessions
            .get_or_create(&TransportLabels { transport })
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }
    registry.register(
        "sessions",
        "MCP sessions open on this daemon, by transport",
        sessions,
    );
    registry.register(
        "sessions_max",
        "The session cap over both transports (HOOKS_MCP_MAX_SESSIONS)",
        gauge(snapshot.sessions_max),
    );
    registry.register(
        "requests_in_flight",
        "MCP requests and hook events being answered",
        gauge(snapshot.in_flight),
    );
    if snapshot.scheduler_last_tick_ms > 0 {
        let last: Gauge = Gauge::default();
        last.set(snapshot.scheduler_last_tick_ms / 1000);
        registry.register_with_unit(
            "scheduler_last_tick_timestamp",
            "When the scheduler's last tick completed, in Unix seconds",
            Unit::Seconds,
            last,
        );
    }
    registry.register(
        "store_up",
        "1 when the store answered this scrape's count query, else 0",
        gauge(u64::from(snapshot.store.is_some())),
    );
    registry.register(
        "store_reporter",
        "1 on the one daemon of the store that reports its fleet-wide gauges \
         (hooks_mcp_store_records, hooks_mcp_live_sessions), else 0",
        gauge(u64::from(
            snapshot.store.as_ref().is_some_and(|s| s.fleet.is_some()),
        )),
    );
    if let Some(store) = snapshot.store.as_ref().and_then(|s| s.fleet.as_ref()) {
        let records = Family::<KindLabels, Gauge>::default();
        let counts = &store.counts;
        for (kind, n) in [
            ("active_broadcasts", counts.active_messages),
            ("enforcements", counts.reminders),
            ("conditions", counts.conditions),
            ("active_schedules", counts.active_schedules),
        ] {
            records
                .get_or_create(&KindLabels { kind })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        registry.register(
            "store_records",
            "Records in the store (shared by the fleet), by kind; reported by one daemon of the \
             store",
            records,
        );
        if let Some(live) = store.live_sessions {
            registry.register(
                "live_sessions",
                "Live agent sessions the store knows of, over the whole fleet; reported by one \
                 daemon of the store",
                gauge(live),
            );
        }
    }
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_that_cannot_be_asked_for_reports_no_fleet_gauges_and_no_store_error() {
        use store::DaemonStateStore;
        let retention = store::Retention::default();
        let now = 1_800_000_000_000;
        let dir = tempfile::tempdir().unwrap();
        let store = store::SqliteStore::create(dir.path().join("state.db")).unwrap();
        let held = StoreSnapshot::read(&store, &StoreReporter::default(), now, &retention);
        assert!(held.unwrap().fleet.is_some(), "the only daemon reports");
        // A store whose lease file cannot be opened (a directory stands in its place).
        let dir = tempfile::tempdir().unwrap();
        let store = store::SqliteStore::create(dir.path().join("state.db")).unwrap();
        std::fs::create_dir(dir.path().join(format!("state.db.{STORE_LEASE}.lease"))).unwrap();
        let err = store.try_lease(STORE_LEASE).err().unwrap();
        assert!(
            err.to_string().contains("cannot open the lease file"),
            "{err}"
        );
        let other = StoreSnapshot::read(&store, &StoreReporter::default(), now, &retention);
        assert!(other.unwrap().fleet.is_none());
    }

    fn sample<'a>(text: &'a str, series: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
    }

    #[test]
    fn per_minute_counts_fall_in_their_minute_and_age_out_after_an_hour() {
        let counts = PerMinute::default();
        // A minute boundary.
        let t0 = 1_800_000_000_000_i64;
        assert_eq!(t0 % 60_000, 0);
        counts.record(t0);
        counts.record(t0 + 59_999);
        counts.record(t0 + 60_000);
        let hour = counts.last_hour(t0 + 60_000);
        assert_eq!(hour.len(), MINUTES);
        assert_eq!(&hour[MINUTES - 2..], &[2, 1]);
        assert_eq!(hour.iter().sum::<u64>(), 3);
        // 59 minutes on, the first minute is the oldest shown; one more and it is gone, and
        // its slot is reused by the new minute.
        assert_eq!(counts.last_hour(t0 + 59 * 60_000)[0], 2);
        let later = t0 + 60 * 60_000;
        assert_eq!(counts.last_hour(later).iter().sum::<u64>(), 1);
        counts.record(later);
        assert_eq!(counts.last_hour(later), {
            let mut expected = vec![0; MINUTES];
            expected[0] = 1;
            expected[MINUTES - 1] = 1;
            expected
        });
    }

    #[test]
    fn the_switch_takes_on_and_off_only() {
        assert_eq!(parse_switch(None), Ok(true));
        assert_eq!(parse_switch(Some(" ON ")), Ok(true));
        assert_eq!(parse_switch(Some("off")), Ok(false));
        let e = parse_switch(Some("maybe")).unwrap_err();
        assert!(e.starts_with("HOOKS_MCP_METRICS:"), "{e}");
    }

    #[test]
    fn series_exist_at_zero_and_count() {
        let metrics = Metrics::new();
        let tools = metrics.tool_table(["channel_list", "channel_publish"]);
        let text = metrics.render(&Snapshot::default(), false).unwrap();
        assert_eq!(
            sample(
                &text,
                "hooks_mcp_tool_calls_total{tool=\"channel_list\",outcome=\"ok\"}"
            ),
            Some("0")
        );
        tools.record("channel_list", CallOutcome::Ok, Duration::from_micros(300));
        tools.record("made_up", CallOutcome::ProtocolError, Duration::ZERO);
        metrics.hooks.record(
            HookRouteKind::Http,
            EventSlot::of("pretooluse"),
            HookOutcome::Answered,
            Duration::from_millis(2),
        );
        metrics.hooks.record(
            HookRouteKind::Forward,
            EventSlot::of("NoSuchEvent"),
            HookOutcome::Refused,
            Duration::ZERO,
        );
        metrics.hooks.record(
            HookRouteKind::Http,
            EventSlot::of("notification"),
            HookOutcome::Answered,
            Duration::ZERO,
        );
        metrics.store_error(StoreOperation::SchedulerFire, &StoreError::WouldWait);
        let text = metrics.render(&Snapshot::default(), false).unwrap();
        for (series, value) in [
            (
                "hooks_mcp_tool_calls_total{tool=\"channel_list\",outcome=\"ok\"}",
                "1",
            ),
            (
                "hooks_mcp_tool_calls_total{tool=\"(unknown)\",outcome=\"protocol_error\"}",
                "1",
            ),
            (
                "hooks_mcp_tool_call_duration_seconds_bucket{tool=\"channel_list\",le=\"0.0005\"}",
                "1",
            ),
            (
                "hooks_mcp_tool_call_duration_seconds_bucket{tool=\"channel_list\",le=\"0.00025\"}",
                "0",
            ),
            (
                "hooks_mcp_hook_events_total{route=\"http\",event=\"PreToolUse\",outcome=\"answered\"}",
                "1",
            ),
            (
                "hooks_mcp_hook_events_total{route=\"forward\",event=\"(unknown)\",outcome=\"refused\"}",
                "1",
            ),
            (
                "hooks_mcp_hook_events_total{route=\"http\",event=\"(quiet)\",outcome=\"answered\"}",
                "1",
            ),
            (
                "hooks_mcp_hook_events_total{route=\"http\",event=\"(unknown)\",outcome=\"answered\"}",
                "0",
            ),
            (
                "hooks_mcp_store_errors_total{operation=\"scheduler_fire\",kind=\"would_wait\"}",
                "1",
            ),
            ("hooks_mcp_sessions{transport=\"sse\"}", "0"),
            ("hooks_mcp_store_up", "0"),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
        }
        assert!(
            text.contains(&format!(
                "hooks_mcp_build_info{{version=\"{}\"}} 1",
                protocol_lite::handshake::SERVER_VERSION
            )),
            "{text}"
        );
    }

    #[test]
    fn scheduler_lag_is_due_to_fired() {
        let metrics = Metrics::new();
        let message = store::Message {
            id: 1,
            channel: "c".into(),
            body: "b".into(),
            severity: store::Severity::Info,
            created_at: 0,
            expires_at: 60_000,
            target: None,
        };
        let firing = |scheduled_for| Firing {
            schedule_id: 1,
            scheduled_for,
            message: message.clone(),
            skipped: 2,
        };
        metrics
            .scheduler
            .tick(&[firing(10_000), firing(9_000)], 10_400);
        let text = metrics.render(&Snapshot::default(), true).unwrap();
        for (series, value) in [
            ("hooks_mcp_scheduler_firings_total", "2"),
            ("hooks_mcp_scheduler_skipped_occurrences_total", "4"),
            ("hooks_mcp_scheduler_lag_seconds_bucket{le=\"0.5\"}", "1"),
            ("hooks_mcp_scheduler_lag_seconds_bucket{le=\"1.0\"}", "1"),
            ("hooks_mcp_scheduler_lag_seconds_bucket{le=\"2.5\"}", "2"),
            ("hooks_mcp_scheduler_ticks_total{outcome=\"ok\"}", "1"),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn scrape_gauges_show_what_the_snapshot_holds() {
        let metrics = Metrics::new();
        let snapshot = Snapshot {
            sessions_http: 3,
            sessions_sse: 1,
            sessions_max: 256,
            in_flight: 2,
            scheduler_last_tick_ms: 1_700_000_000_500,
            store: Some(StoreSnapshot {
                fleet: Some(FleetGauges {
                    counts: Counts {
                        active_messages: 5,
                        ..Counts::default()
                    },
                    live_sessions: Some(7),
                }),
            }),
        };
        let text = metrics.render(&snapshot, false).unwrap();
        for (series, value) in [
            ("hooks_mcp_sessions{transport=\"streamable-http\"}", "3"),
            ("hooks_mcp_sessions{transport=\"sse\"}", "1"),
            ("hooks_mcp_sessions_max", "256"),
            ("hooks_mcp_requests_in_flight", "2"),
            (
                "hooks_mcp_scheduler_last_tick_timestamp_seconds",
                "1700000000",
            ),
            ("hooks_mcp_store_up", "1"),
            ("hooks_mcp_store_records{kind=\"active_broadcasts\"}", "5"),
            ("hooks_mcp_live_sessions", "7"),
            ("hooks_mcp_store_reporter", "1"),
        ] {
            assert_eq!(sample(&text, series), Some(value), "{series} in\n{text}");
        }
        // A daemon that does not report the store's gauges leaves them out and says so.
        let other = Snapshot {
            store: Some(StoreSnapshot { fleet: None }),
            ..snapshot
        };
        let text = metrics.render(&other, false).unwrap();
        assert_eq!(
            sample(&text, "hooks_mcp_store_reporter"),
            Some("0"),
            "{text}"
        );
        assert_eq!(sample(&text, "hooks_mcp_store_up"), Some("1"), "{text}");
        assert!(!text.contains("hooks_mcp_store_records{"), "{text}");
        assert!(!text.contains("hooks_mcp_live_sessions "), "{text}");
    }
}
