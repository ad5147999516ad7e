//! The long-lived network daemon (`MCP_TRANSPORT=streamable-http` or `sse`): one process that
//! every agent session on the machine connects to.
//!
//! Start-up runs in phases, each logged with its duration: configuration validated (including
//! the instance lock and the listener, bound early so `/health` can answer 503 meanwhile);
//! store opened; store verified; tool registry built; scheduler started; listener serving MCP.
//! A failing phase stops start-up with a message saying what failed and how to fix it, and the
//! daemon never serves. SIGTERM or SIGINT first turns the readiness probes to 503 while every
//! request is still served, for the shutdown delay (so that a load balancer stops sending
//! first), then stops accepting connections, ends open `subscriptions/listen` streams with
//! their final result, lets in-flight calls finish within a deadline, closes the sessions and
//! the store, and returns success.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use catalogue::Setting;
use operator_web::OperatorWeb;
use server_full::StoreChanges;
use store::{Opened, StoreError, StoreHandle, StoreLocation};
use tokio_util::sync::CancellationToken;

use crate::auth::{Access, LOOPBACK_HOSTS, Token, authority_host};
use crate::fast_call::FastCalls;
use crate::hook_route::HookRoute;
use crate::http::{self, BindError, McpOptions};
use crate::metrics::{Metrics, StoreOperation};
use crate::state::{InFlight, Sessions, Shared};
use crate::status::{Phase, Status};
use server_full::HooksServer;
use server_full::{Settings, SettingsError, now_ms};

/// Selects the transport: `stdio` (default), `streamable-http` or `sse`.
pub const TRANSPORT_ENV: &str = "MCP_TRANSPORT";
/// The host name or address the daemon listens on (the hook's client reads it too).
pub const HOST_ENV: &str = protocol_lite::local_daemon::HOST_ENV;
/// The port the daemon listens on (0: any free port).
pub const PORT_ENV: &str = protocol_lite::local_daemon::PORT_ENV;
/// The bearer token MCP requests must carry.
pub const TOKEN_ENV: &str = protocol_lite::local_daemon::TOKEN_ENV;
/// A file holding the bearer token.
pub const TOKEN_FILE_ENV: &str = protocol_lite::local_daemon::TOKEN_FILE_ENV;
/// Extra `Host` names requests may carry.
pub const ALLOWED_HOSTS_ENV: &str = "HOOKS_MCP_ALLOWED_HOSTS";
/// Extra browser origins allowed.
pub const ALLOWED_ORIGINS_ENV: &str = "HOOKS_MCP_ALLOWED_ORIGINS";
/// Seconds without traffic after which a session is closed.
pub const SESSION_IDLE_ENV: &str = "HOOKS_MCP_SESSION_IDLE_SECS";
/// The most sessions served at once.
pub const MAX_SESSIONS_ENV: &str = "HOOKS_MCP_MAX_SESSIONS";
/// The largest request body accepted, in bytes.
pub const MAX_BODY_ENV: &str = "HOOKS_MCP_MAX_BODY_BYTES";
/// Seconds a connection has to send a whole request head (also closes idle keep-alive
/// connections).
pub const HEADER_TIMEOUT_ENV: &str = "HOOKS_MCP_HEADER_TIMEOUT_SECS";
/// Seconds a request body may go without delivering data.
pub const BODY_TIMEOUT_ENV: &str = "HOOKS_MCP_BODY_TIMEOUT_SECS";
/// The most HTTP connections open at once.
pub const MAX_CONNECTIONS_ENV: &str = "HOOKS_MCP_MAX_CONNECTIONS";
/// Seconds shutdown waits for in-flight calls.
pub const DRAIN_ENV: &str = "HOOKS_MCP_DRAIN_SECS";
/// Seconds, on SIGTERM, the daemon keeps serving while its readiness probes answer 503, before
/// it stops accepting connections.
pub const SHUTDOWN_DELAY_ENV: &str = "HOOKS_MCP_SHUTDOWN_DELAY_SECS";
/// Milliseconds between scheduler ticks.
pub const TICK_ENV: &str = "HOOKS_MCP_SCHEDULER_TICK_MS";
/// Scheduler lag (ms) above which `/health?level=full` reports `degraded`.
pub const MAX_LAG_ENV: &str = "HOOKS_MCP_SCHEDULER_MAX_LAG_MS";
/// Test-only: a delay before the last start-up phase, to observe `/health` during start-up.
pub const TEST_PHASE_DELAY_ENV: &str = "HOOKS_MCP_TEST_PHASE_DELAY_MS";
/// Environment variable: how many threads run store calls at once.
pub const STORE_THREADS_ENV: &str = "HOOKS_MCP_STORE_THREADS";
pub use crate::fast_call::FAST_CALLS_ENV;
pub use crate::metrics::METRICS_ENV;
/// The lock file beside `state.db` that keeps a second daemon off the same store.
pub const LOCK_FILE: &str = "daemon.lock";

/// The default port.
pub const DEFAULT_PORT: u16 = protocol_lite::local_daemon::DEFAULT_PORT;

/// The daemon's settings, for the generated configuration reference.
pub const NETWORK_SETTINGS: &[Setting] = &[
    Setting {
        env: TRANSPORT_ENV,
        flag: "",
        default: "stdio",
        effect: "`streamable-http` or `sse` starts the long-lived daemon, which serves both \
                 Streamable HTTP at `/mcp` and the legacy SSE transport at `/sse`.",
    },
    Setting {
        env: HOST_ENV,
        flag: "",
        default: "localhost",
        effect: "Where the daemon listens: every address the name resolves to (`localhost`: \
                 its loopback addresses). A non-loopback address requires a token.",
    },
    Setting {
        env: PORT_ENV,
        flag: "",
        default: "8642",
        effect: "The daemon's port; 0 picks a free one (the `listening on` line on stderr \
                 names it).",
    },
    Setting {
        env: TOKEN_ENV,
        flag: "",
        default: "unset",
        effect: "Bearer token every MCP request must carry (at least 16 characters; set but \
                 empty refuses to start).",
    },
    Setting {
        env: TOKEN_FILE_ENV,
        flag: "",
        default: "unset",
        effect: "A file holding the token instead (systemd credentials, Docker secrets).",
    },
    Setting {
        env: ALLOWED_HOSTS_ENV,
        flag: "",
        default: "unset",
        effect: "Comma-separated extra `Host` names clients may use (loopback names and \
                 MCP_HOST are always allowed); `*` allows any.",
    },
    Setting {
        env: ALLOWED_ORIGINS_ENV,
        flag: "",
        default: "unset",
        effect: "Comma-separated extra browser origins (`https://app.example.com`); origins on \
                 an allowed host are always allowed.",
    },
    Setting {
        env: SESSION_IDLE_ENV,
        flag: "",
        default: "1800",
        effect: "Seconds without traffic after which a session is closed in this daemon's \
                 memory, freeing its place under the cap; a Streamable HTTP session's next \
                 request resumes it from the store (a legacy SSE client connects again).",
    },
    Setting {
        env: MAX_SESSIONS_ENV,
        flag: "",
        default: "256",
        effect: "Most sessions (both transports) served at once; more get 503.",
    },
    Setting {
        env: MAX_BODY_ENV,
        flag: "",
        default: "1048576",
        effect: "Largest request body accepted, in bytes; larger ones get 413.",
    },
    Setting {
        env: HEADER_TIMEOUT_ENV,
        flag: "",
        default: "10",
        effect: "Seconds a connection has to send a whole request head, counted from when it \
                 opens or its previous response ends; then it is closed (a stalled client, or \
                 an idle keep-alive connection, which the client simply reopens).",
    },
    Setting {
        env: BODY_TIMEOUT_ENV,
        flag: "",
        default: "30",
        effect: "Seconds a request body has to arrive whole, counted from its request's \
                 head; then the request fails and its connection is closed (a body that \
                 trickles in holds its connection no longer).",
    },
    Setting {
        env: MAX_CONNECTIONS_ENV,
        flag: "",
        default: "512",
        effect: "Most HTTP connections open at once (each open SSE, GET or \
                 `subscriptions/listen` stream holds one, and so does a `/health` probe); \
                 further clients wait in the kernel's accept queue until one closes. Keep it \
                 below the process's open-file limit, and well above the streams clients hold \
                 open.",
    },
    Setting {
        env: DRAIN_ENV,
        flag: "",
        default: "10",
        effect: "Seconds shutdown waits for in-flight calls before closing sessions.",
    },
    Setting {
        env: SHUTDOWN_DELAY_ENV,
        flag: "",
        default: "0",
        effect: "Seconds, after SIGTERM, that the daemon keeps serving every request while \
                 `/health` and `/health/ready` answer 503 `draining`, so that a load balancer \
                 or Kubernetes takes it out of rotation before it stops accepting connections \
                 (then in-flight calls drain as usual). Behind a balancer set it above the \
                 balancer's time to notice (HAProxy: `fall` × `inter`); a second SIGTERM ends \
                 it early. See docs/deployment.md.",
    },
    Setting {
        env: TICK_ENV,
        flag: "",
        default: "1000",
        effect: "Milliseconds between the daemon's scheduler ticks (firing due schedules) \
                 while it cannot hear the store's changes. While it can (SQLite's files \
                 watched, PostgreSQL's LISTEN), a schedule change wakes the scheduler and a \
                 timer fires the next due schedule; the tick then only checks that the store \
                 answers and prunes old records, every 10 s (under a third of \
                 `HOOKS_MCP_SCHEDULER_MAX_LAG_MS`, never more often than this).",
    },
    Setting {
        env: STORE_THREADS_ENV,
        flag: "",
        default: "1 (SQLite), the pool size (PostgreSQL)",
        effect: "Threads that run store calls (tool calls, hook events, probes, scheduler \
                 ticks); more calls queue for them. SQLite serves writes on one connection, so \
                 more threads only contend for it (read-only tool calls are answered on a \
                 reader connection without a thread when they need not wait); PostgreSQL uses \
                 one connection per thread.",
    },
    Setting {
        env: MAX_LAG_ENV,
        flag: "",
        default: "30000",
        effect: "Scheduler lag (the time since its last completed tick) in milliseconds \
                 above which `/health?level=full` answers 503 `degraded`.",
    },
    Setting {
        env: METRICS_ENV,
        flag: "",
        default: "on",
        effect: "`off` stops counting and makes `/metrics` answer 404; `on` serves Prometheus \
                 metrics at `/metrics`, behind the token and `Host` checks (see \
                 docs/operations.md).",
    },
    Setting {
        env: FAST_CALLS_ENV,
        flag: "",
        default: "on",
        effect: "`on` answers a stateless 2026-07-28 `tools/call` that needs no reply stream \
                 directly (the same reply, without rmcp's per-request session machinery); \
                 `off` leaves every request to rmcp (for comparison; see docs/benchmarks.md).",
    },
];

/// Whether `MCP_TRANSPORT`'s value selects the daemon.
pub fn is_network_transport(name: &str) -> bool {
    matches!(name.trim(), "streamable-http" | "sse")
}

/// Why the daemon did not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// A setting is invalid; the message starts with its name.
    #[error("{0}")]
    Config(String),
    /// Another daemon serves the same store.
    #[error(
        "another hooks-mcp daemon (pid {pid}) already serves the store in {dir} (lock {lock}); \
         connect to it instead, stop it first, or set HOOKS_MCP_HOME to another directory"
    )]
    AlreadyRunning {
        /// The store directory.
        dir: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The holder's pid, as its lock file says.
        pid: String,
    },
    /// The lock file could not be created or locked.
    #[error(
        "cannot take the daemon lock {path}: {cause}; give this user write access to the \
         store directory"
    )]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        cause: std::io::Error,
    },
    /// The store directory cannot be made: what is in the way and what to do.
    #[error("{0}")]
    StoreDir(String),
    /// The listener could not be bound.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// Phase "store opened" failed.
    #[error("start-up failed while opening the store: {0}")]
    StoreOpen(StoreError),
    /// Phase "store verified" failed: the daemon never serves an unverified store.
    #[error("start-up failed: the store did not pass verification, so it is not served: {0}")]
    StoreVerify(StoreError),
    /// Phase "tool registry built" failed.
    #[error("start-up failed while building the tool registry: {0}")]
    Registry(SettingsError),
    /// The async runtime or a signal handler could not be set up.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The operator console could not be set up.
    #[error("start-up failed while setting up the operator console: {0}")]
    Console(String),
    /// A start-up task died.
    #[error("a start-up task failed unexpectedly: {0}; this is a bug, please report it")]
    Task(String),
}

/// Everything the daemon needs, read and checked from the environment.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// `MCP_HOST` as given.
    pub host: String,
    /// The addresses to listen on (port included).
    pub addrs: Vec<SocketAddr>,
    /// Token and allowed hosts and origins.
    pub access: Access,
    /// Where the SQLite store lives; the instance lock goes in its directory (also when
    /// `HOOKS_MCP_DATABASE_URL` selects PostgreSQL).
    pub store: StoreLocation,
    /// Idle sessions are closed after this long.
    pub idle: Duration,
    /// Most sessions at once.
    pub max_sessions: usize,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// A request head must arrive within this long.
    pub header_timeout: Duration,
    /// A request body may go this long without data.
    pub body_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Shutdown waits this long for in-flight calls.
    pub drain: Duration,
    /// On SIGTERM, the daemon serves this long while not ready, before it stops accepting.
    pub shutdown_delay: Duration,
    /// Scheduler tick.
    pub tick: Duration,
    /// Scheduler lag that makes full health `degraded`.
    pub max_lag: Duration,
    /// Test-only delay before the last phase.
    pub phase_delay: Option<Duration>,
    /// Threads that run store calls at once (the runtime's blocking pool).
    pub store_threads: usize,
    /// Whether the daemon keeps and serves metrics (`HOOKS_MCP_METRICS`).
    pub metrics: bool,
    /// Whether stateless `tools/call` requests are answered on the fast path
    /// (`HOOKS_MCP_FAST_CALLS`).
    pub fast_calls: bool,
}

impl DaemonConfig {
    /// Reads the process environment.
    ///
    /// # Errors
    /// [`DaemonError::Config`] naming the first invalid setting.
    pub fn from_env() -> Result<DaemonConfig, DaemonError> {
        DaemonConfig::from_vars(|k| std::env::var(k).ok())
    }

    /// Reads settings through `var` (tests pass a map).
    ///
    /// # Errors
    /// [`DaemonError::Config`] naming the first invalid setting.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<DaemonConfig, DaemonError> {
        let get = |k: &str| {
            var(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let port: u16 = number(&get, PORT_ENV, DEFAULT_PORT, 0, u16::MAX)?;
        let host = get(HOST_ENV).unwrap_or_else(|| "localhost".into());
        let addrs = resolve(&host, port)?;
        if var(TOKEN_ENV).is_some_and(|v| v.trim().is_empty()) {
            // Most often `HOOKS_MCP_TOKEN=$(cat a-missing-file)`: serving without a token
            // because of it would be a silent downgrade (an empty token file is refused too).
            return Err(DaemonError::Config(format!(
                "{TOKEN_ENV}: set but empty; give a token of at least 16 characters \
                 (`openssl rand -hex 32`), or unset it to serve without one (loopback only)"
            )));
        }
        let token = token(&get)?;
        if token.is_none()
            && let Some(open) = addrs.iter().find(|a| !a.ip().is_loopback())
        {
            return Err(DaemonError::Config(format!(
                "{HOST_ENV}: `{host}` means listening on {} (not a loopback address), which \
                 requires a token; set {TOKEN_ENV} or {TOKEN_FILE_ENV} (generate one with \
                 `openssl rand -hex 32`), or listen on localhost",
                open.ip()
            )));
        }
        let mut allowed_hosts: Vec<String> = LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect();
        let mut allow = |h: String| {
            if !allowed_hosts.contains(&h) {
                allowed_hosts.push(h);
            }
        };
        let wildcard = |h: &str| {
            h.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_unspecified())
        };
        if let Some(h) = authority_host(&host).filter(|h| !wildcard(h)) {
            allow(h);
        }
        for addr in &addrs {
            if !addr.ip().is_unspecified() {
                allow(addr.ip().to_string());
            }
        }
        for entry in list(get(ALLOWED_HOSTS_ENV)) {
            let h = if entry == "*" {
                entry
            } else {
                authority_host(&entry).ok_or_else(|| {
                    DaemonError::Config(format!(
                        "{ALLOWED_HOSTS_ENV}: `{entry}` is not a host name; list names like \
                         `mcp.example.com,10.0.0.5`, or `*` to allow any"
                    ))
                })?
            };
            allow(h);
        }
        let mut allowed_origins = Vec::new();
        for entry in list(get(ALLOWED_ORIGINS_ENV)) {
            let entry = entry.to_ascii_lowercase();
            let valid = entry
                .split_once("://")
                .is_some_and(|(scheme, rest)| !scheme.is_empty() && authority_host(rest).is_some());
            if !valid {
                return Err(DaemonError::Config(format!(
                    "{ALLOWED_ORIGINS_ENV}: `{entry}` is not an origin; write \
                     `scheme://host[:port]` without a path, e.g. `https://app.example.com`"
                )));
            }
            allowed_origins.push(entry);
        }
        let store = StoreLocation::resolve(|k| get(k).map(PathBuf::from)).ok_or_else(|| {
            DaemonError::Config(
                "HOOKS_MCP_HOME: cannot locate the store; set HOOKS_MCP_HOME (or HOME / \
                 XDG_STATE_HOME)"
                    .into(),
            )
        })?;
        let idle_s: u64 = number(&get, SESSION_IDLE_ENV, 1_800, 1, 7 * 24 * 3600)?;
        let max_sessions: usize = number(&get, MAX_SESSIONS_ENV, 256, 1, 100_000)?;
        let max_body: usize = number(&get, MAX_BODY_ENV, 1 << 20, 1024, 64 << 20)?;
        let header_s: u64 = number(&get, HEADER_TIMEOUT_ENV, 10, 1, 3600)?;
        let body_s: u64 = number(&get, BODY_TIMEOUT_ENV, 30, 1, 3600)?;
        let max_connections: usize = number(&get, MAX_CONNECTIONS_ENV, 512, 1, 1_000_000)?;
        let drain_s: u64 = number(&get, DRAIN_ENV, 10, 0, 3600)?;
        let delay_s: u64 = number(&get, SHUTDOWN_DELAY_ENV, 0, 0, 3600)?;
        let tick_ms: u64 = number(&get, TICK_ENV, 1_000, 10, 3_600_000)?;
        let lag_ms: u64 = number(&get, MAX_LAG_ENV, 30_000, 1, 86_400_000)?;
        let delay_ms: u64 = number(&get, TEST_PHASE_DELAY_ENV, 0, 0, 600_000)?;
        // One SQLite connection serves every call; PostgreSQL gets a thread per pooled
        // connection (the pool's own setting and default).
        let store_threads_default = if get(store::DATABASE_URL_ENV).is_some() {
            number(&get, store::POOL_SIZE_ENV, 8, 1, 1000)?
        } else {
            1
        };
        let store_threads: usize = number(&get, STORE_THREADS_ENV, store_threads_default, 1, 1000)?;
        let metrics = crate::metrics::parse_switch(get(METRICS_ENV).as_deref())
            .map_err(DaemonError::Config)?;
        let fast_calls = crate::fast_call::parse_switch(get(FAST_CALLS_ENV).as_deref())
            .map_err(DaemonError::Config)?;
        // The start mode is read again when the registry is built; checked here, a bad one
        // stops the daemon before it touches the store.
        catalogue::StartMode::parse(
            &[],
            get(catalogue::MODE_ENV).as_deref(),
            get(catalogue::MODULES_ENV).as_deref(),
        )
        .map_err(|e| DaemonError::Config(e.to_string()))?;
        Ok(DaemonConfig {
            host,
            addrs,
            access: Access {
                token,
                allowed_hosts,
                allowed_origins,
            },
            store,
            idle: Duration::from_secs(idle_s),
            max_sessions,
            max_body_bytes: max_body,
            header_timeout: Duration::from_secs(header_s),
            body_timeout: Duration::from_secs(body_s),
            max_connections,
            drain: Duration::from_secs(drain_s),
            shutdown_delay: Duration::from_secs(delay_s),
            tick: Duration::from_millis(tick_ms),
            max_lag: Duration::from_millis(lag_ms),
            phase_delay: (delay_ms > 0).then(|| Duration::from_millis(delay_ms)),
            store_threads,
            metrics,
            fast_calls,
        })
    }
}

fn list(value: Option<String>) -> Vec<String> {
    value
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn number<T>(
    get: &impl Fn(&str) -> Option<String>,
    name: &str,
    default: T,
    min: T,
    max: T,
) -> Result<T, DaemonError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let Some(raw) = get(name) else {
        return Ok(default);
    };
    match raw.parse::<T>() {
        Ok(n) if n >= min && n <= max => Ok(n),
        _ => Err(DaemonError::Config(format!(
            "{name}: must be a whole number from {min} to {max} (got `{raw}`); unset it for \
             the default {default}"
        ))),
    }
}

/// The addresses `host` resolves to, IPv4 first, without duplicates. `localhost` keeps only
/// loopback addresses.
fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, DaemonError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let found = (bare, port).to_socket_addrs().map_err(|e| {
        DaemonError::Config(format!(
            "{HOST_ENV}: cannot resolve `{host}`: {e}; use a host name this machine resolves \
             or an address such as 127.0.0.1"
        ))
    })?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    for addr in found {
        if bare.eq_ignore_ascii_case("localhost") && !addr.ip().is_loopback() {
            continue;
        }
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    addrs.sort_by_key(|a| a.is_ipv6());
    if addrs.is_empty() {
        return Err(DaemonError::Config(format!(
            "{HOST_ENV}: `{host}` resolves to no usable address; use 127.0.0.1 or a host name \
             with an address"
        )));
    }
    Ok(addrs)
}

fn token(get: &impl Fn(&str) -> Option<String>) -> Result<Option<Token>, DaemonError> {
    match (get(TOKEN_ENV), get(TOKEN_FILE_ENV)) {
        (Some(_), Some(_)) => Err(DaemonError::Config(format!(
            "{TOKEN_ENV}: set either {TOKEN_ENV} or {TOKEN_FILE_ENV}, not both"
        ))),
        (Some(value), None) => Token::new(&value, TOKEN_ENV)
            .map(Some)
            .map_err(DaemonError::Config),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                DaemonError::Config(format!(
                    "{TOKEN_FILE_ENV}: cannot read the token file {path}: {e}; check the path \
                     and that this user may read it"
                ))
            })?;
            warn_if_shared(Path::new(&path));
            Token::new(&text, TOKEN_FILE_ENV)
                .map(Some)
                .map_err(DaemonError::Config)
        }
        (None, None) => Ok(None),
    }
}

fn warn_if_shared(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            path = %path.display(),
            "the token file is readable by other users; restrict it with `chmod 600`"
        );
    }
}

/// Where a local health probe should connect: the addresses `MCP_HOST` and `MCP_PORT` name,
/// with a wildcard address (`0.0.0.0`, `::`) replaced by loopback.
///
/// # Errors
/// [`DaemonError::Config`] for an invalid port or an unresolvable host.
pub fn probe_addresses() -> Result<Vec<SocketAddr>, DaemonError> {
    let get = |k: &str| {
        std::env::var(k)
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let port: u16 = number(&get, PORT_ENV, DEFAULT_PORT, 1, u16::MAX)?;
    let host = get(HOST_ENV).unwrap_or_else(|| "localhost".into());
    Ok(resolve(&host, port)?
        .into_iter()
        .map(|mut addr| {
            if addr.ip().is_unspecified() {
                addr.set_ip(match addr {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
                });
            }
            addr
        })
        .collect())
}

/// Why the store directory `dir` could not be made (`error`), in words that say what is in
/// the way: a file, a symbolic link to nothing, or a parent this user cannot write.
fn store_dir_failure(dir: &Path, error: &std::io::Error) -> String {
    let fix = "set HOOKS_MCP_HOME to a directory this user can write";
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let target =
                std::fs::read_link(dir).map_or_else(|_| "?".into(), |t| t.display().to_string());
            format!(
                "the store directory {} is a symbolic link to {target}, which does not exist \
                 or is not a directory: create it, or {fix}",
                dir.display()
            )
        }
        Ok(meta) if !meta.is_dir() => format!(
            "the store directory {} is a file, not a directory: move the file away, or {fix}",
            dir.display()
        ),
        _ => format!(
            "cannot create the store directory {}: {error}; give this user write access to its \
             parent, or {fix}",
            dir.display()
        ),
    }
}

/// The exclusive lock on the store directory (held until dropped).
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
    path: PathBuf,
}

impl InstanceLock {
    /// Takes the lock `dir/daemon.lock` and writes this process's pid into it.
    ///
    /// # Errors
    /// [`DaemonError::AlreadyRunning`] naming the holder's pid; [`DaemonError::Lock`] when the
    /// file cannot be created.
    pub fn acquire(dir: &Path) -> Result<InstanceLock, DaemonError> {
        let path = dir.join(LOCK_FILE);
        let lock_err = |cause| DaemonError::Lock {
            path: path.clone(),
            cause,
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| DaemonError::StoreDir(store_dir_failure(dir, &e)))?;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(lock_err)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(DaemonError::AlreadyRunning {
                    dir: dir.to_path_buf(),
                    lock: path.clone(),
                    pid: if pid.is_empty() {
                        "unknown".into()
                    } else {
                        pid.into()
                    },
                });
            }
            Err(e) => return Err(lock_err(e.into())),
        }
        file.set_len(0).map_err(lock_err)?;
        file.rewind().map_err(lock_err)?;
        writeln!(file, "{}", std::process::id()).map_err(lock_err)?;
        file.flush().map_err(lock_err)?;
        Ok(InstanceLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Runs the daemon from the environment until SIGTERM or SIGINT; what `hooks-mcp-full serve`
/// does for a network transport.
///
/// # Errors
/// [`DaemonError`] when a start-up phase fails (the daemon then never served).
pub fn serve_from_env() -> Result<(), DaemonError> {
    let started = Instant::now();
    let config = DaemonConfig::from_env()?;
    let lock = InstanceLock::acquire(config.store.dir())?;
    // Store calls run on the blocking pool, capped: past the cap they queue, and the threads
    // take them one after another instead of waking (and contending) by the dozen.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("hooks-mcp")
        .max_blocking_threads(config.store_threads)
        .build()
        .map_err(DaemonError::Runtime)?;
    let outcome = runtime.block_on(run(config, started));
    // Whatever still runs (a session task that ignored cancellation) gets a moment, then the
    // runtime drops it, and with it the last handles on the store.
    runtime.shutdown_timeout(Duration::from_secs(2));
    drop(lock);
    if outcome.is_ok() {
        tracing::info!("stopped; the store is closed");
    }
    outcome
}

/// One phase's bookkeeping: the phase in progress for `/health`, the duration for the log.
struct Phases<'a> {
    status: &'a Status,
    current: Phase,
    since: Instant,
}

impl Phases<'_> {
    fn begin(&mut self, phase: Phase) {
        self.status.set_phase(phase);
        self.current = phase;
        self.since = Instant::now();
    }

    fn done(&self) {
        let elapsed = self.since.elapsed();
        tracing::info!(
            phase = self.current.id(),
            ms = %millis(elapsed),
            "{}",
            self.current.done()
        );
    }
}

/// A response mapper for the console: its 413 (a form over the body limit, refused by axum's
/// extractor in words of its own) names the limit and its setting, as the other routes' do.
fn too_large_says_the_limit(
    max_body_bytes: usize,
) -> impl Fn(axum::response::Response) -> std::future::Ready<axum::response::Response> + Clone {
    move |response: axum::response::Response| {
        use axum::response::IntoResponse as _;
        std::future::ready(
            if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                (
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the form is larger than {max_body_bytes} bytes (HOOKS_MCP_MAX_BODY_BYTES)\n"
                ),
            )
                .into_response()
            } else {
                response
            },
        )
    }
}

/// How long a stopping daemon waits for its scheduler's look at the store in progress.
const SCHEDULER_STOP_WAIT: Duration = Duration::from_secs(2);

async fn run(config: DaemonConfig, started: Instant) -> Result<(), DaemonError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut signals = Signals {
        term: signal(SignalKind::terminate()).map_err(DaemonError::Runtime)?,
        int: signal(SignalKind::interrupt()).map_err(DaemonError::Runtime)?,
    };

    let metrics = config.metrics.then(|| Arc::new(Metrics::new()));
    let shared = Arc::new(Shared {
        status: Status::new(config.tick, config.max_lag),
        access: config.access.clone(),
        mcp: OnceLock::new(),
        fast_calls: OnceLock::new(),
        console: OnceLock::new(),
        sessions: Arc::new(Sessions::new(config.max_sessions)),
        inflight: Arc::new(InFlight::default()),
        hooks: HookRoute::new(config.max_body_bytes, metrics.clone()),
        metrics,
        retention: store::Retention::from_env().unwrap_or_else(|e| {
            tracing::warn!("{e}; keeping the audit trail and sessions for the default periods");
            store::Retention::default()
        }),
    });
    let stop_accepting = CancellationToken::new();
    let close_sessions = CancellationToken::new();
    let stop_scheduler = CancellationToken::new();

    let listeners = http::bind(&config.addrs)?;
    let bound: Vec<SocketAddr> = listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .collect();
    for addr in &bound {
        // Printed, not logged: scripts and tests read the bound port (MCP_PORT=0) from it at
        // any log level.
        protocol_lite::diag!("hooks-mcp: listening on http://{addr}");
    }
    let limits = http::ConnectionLimits {
        header_timeout: config.header_timeout,
        body_timeout: config.body_timeout,
        max_connections: config.max_connections,
    };
    let servers = http::serve(
        listeners,
        http::app(shared.clone()),
        &stop_accepting,
        limits,
    );
    let mut phases = Phases {
        status: &shared.status,
        current: Phase::Config,
        since: started,
    };
    phases.done();

    let startup = start(
        &config,
        &shared,
        &mut phases,
        &close_sessions,
        &stop_scheduler,
    );
    let started_up = tokio::select! {
        outcome = startup => match outcome {
            Ok(started_up) => Some(started_up),
            Err(e) => {
                stop(&shared, &stop_accepting, &close_sessions, &stop_scheduler, servers).await;
                return Err(e);
            }
        },
        signal = signals.next() => {
            tracing::info!("{signal} during start-up: stopping without serving");
            None
        }
    };
    if let Some(Started { scheduler, server }) = started_up {
        tracing::info!(
            ms = %millis(started.elapsed()),
            "ready: MCP at {}",
            bound
                .iter()
                .map(|a| format!("http://{a}/mcp (legacy SSE: http://{a}/sse)"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let signal = signals.next().await;
        // Not ready from now on, but still serving: a load balancer that polls the readiness
        // probe takes this daemon out of rotation while requests it still sends are answered.
        shared.status.set_phase(Phase::Draining);
        // Another daemon of the store reports the fleet-wide gauges from its next scrape.
        if let Some(metrics) = &shared.metrics {
            metrics.store_reporter.give_up();
        }
        if !config.shutdown_delay.is_zero() {
            tracing::info!(
                "{signal} received: not ready; serving for {} s ({SHUTDOWN_DELAY_ENV}) before \
                 no longer accepting connections",
                config.shutdown_delay.as_secs()
            );
            tokio::select! {
                () = tokio::time::sleep(config.shutdown_delay) => {}
                again = signals.next() => {
                    tracing::info!("{again} received again: ending the shutdown delay early");
                }
            }
        }
        stop_accepting.cancel();
        // Open `subscriptions/listen` streams end now with their final result, while their
        // connections are still served: a listen is a request in flight until its stream
        // ends, and would otherwise hold the drain to its deadline and then be cut off.
        server.end_subscriptions();
        tracing::info!(
            in_flight = shared.inflight.count(),
            "{signal} received: stopping (no new connections; in-flight calls may finish, \
             subscription streams end with their final result)"
        );
        if tokio::time::timeout(config.drain, shared.inflight.wait_idle())
            .await
            .is_err()
        {
            tracing::warn!(
                abandoned = shared.inflight.count(),
                "the drain deadline ({} s, {DRAIN_ENV}) passed; closing the remaining calls",
                config.drain.as_secs()
            );
        } else {
            tracing::info!("in-flight calls finished");
        }
        stop_scheduler.cancel();
        // Its look at the store in progress may finish (a firing commits whole or not at all,
        // so one cut short fires at the next look of any daemon), but not for long.
        if tokio::time::timeout(SCHEDULER_STOP_WAIT, scheduler)
            .await
            .is_err()
        {
            tracing::warn!(
                "the scheduler's look at the store did not end within {} s; stopping without it",
                SCHEDULER_STOP_WAIT.as_secs()
            );
        }
    }
    stop(
        &shared,
        &stop_accepting,
        &close_sessions,
        &stop_scheduler,
        servers,
    )
    .await;
    // A hook abandoned at the drain deadline (or by its client) may still wait for its
    // condition script, on a thread of its own: the script would outlive the daemon.
    let killed = hook_dispatch::conditions::kill_waited_scripts();
    if killed > 0 {
        tracing::warn!("ended {killed} condition script(s) that a hook was still waiting for");
    }
    Ok(())
}

/// SIGTERM and SIGINT, as they come.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Waits for the next one; its name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// Stops accepting, closes every session and waits (briefly) for the listeners to finish.
async fn stop(
    shared: &Shared,
    stop_accepting: &CancellationToken,
    close_sessions: &CancellationToken,
    stop_scheduler: &CancellationToken,
    servers: Vec<tokio::task::JoinHandle<std::io::Result<()>>>,
) {
    shared.status.set_phase(Phase::Stopping);
    stop_accepting.cancel();
    stop_scheduler.cancel();
    close_sessions.cancel();
    for server in servers {
        match tokio::time::timeout(Duration::from_secs(3), server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => tracing::warn!("a listener ended with an error: {e}"),
            Ok(Err(e)) => tracing::warn!("a listener task failed: {e}"),
            Err(_) => tracing::warn!("a listener did not close in time; dropping it"),
        }
    }
}

/// What start-up leaves running.
struct Started {
    /// The scheduler's task.
    scheduler: tokio::task::JoinHandle<()>,
    /// The MCP server every session forks from (shutdown ends its subscriptions).
    server: HooksServer,
}

/// The phases after configuration; returns what runs.
async fn start(
    config: &DaemonConfig,
    shared: &Arc<Shared>,
    phases: &mut Phases<'_>,
    close_sessions: &CancellationToken,
    stop_scheduler: &CancellationToken,
) -> Result<Started, DaemonError> {
    phases.begin(Phase::StoreOpen);
    // PostgreSQL when HOOKS_MCP_DATABASE_URL is set, else SQLite at the usual location (the
    // same choice every stdio server and hook makes).
    let (store, opened) = blocking(|| store::open_from_env(true))
        .await?
        .map_err(DaemonError::StoreOpen)?;
    if opened == Opened::Created {
        tracing::info!(store = %store.describe(), "created a new store");
    } else {
        tracing::info!(store = %store.describe(), "opened the store");
    }
    phases.done();

    phases.begin(Phase::StoreVerify);
    let checked = store.clone();
    let report = blocking(move || checked.verify())
        .await?
        .map_err(DaemonError::StoreVerify)?;
    tracing::debug!(
        schema_version = report.schema_version,
        tables = report.tables.len(),
        "store checks passed"
    );
    let _ = shared.status.store.set(store.clone());
    phases.done();

    phases.begin(Phase::Registry);
    let (settings, mut warnings) =
        Settings::network_from_env(store.clone()).map_err(DaemonError::Registry)?;
    let (server, more) = HooksServer::new(settings).map_err(DaemonError::Registry)?;
    if let Some(metrics) = &shared.metrics {
        let names = server.callable_tool_names();
        let table = metrics.tool_table(names.iter().map(String::as_str));
        server.observe_calls(Arc::new(table));
    }
    warnings.extend(more);
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let options = McpOptions {
        idle: config.idle,
        max_body_bytes: config.max_body_bytes,
        allowed_hosts: config.access.allowed_hosts.clone(),
        keep_alive: Duration::from_secs(15),
    };
    let changes = server
        .store_changes()
        .cloned()
        .unwrap_or_else(|| StoreChanges::new(store.clone()));
    let web = Arc::new(OperatorWeb {
        store: store.clone(),
        changes: changes.clone(),
        retention: shared.retention,
        view: shared.clone(),
        stop: close_sessions.clone(),
    });
    if config.fast_calls {
        let fast = server
            .clone()
            .on_transport(store::Transport::StreamableHttp);
        let _ = shared
            .fast_calls
            .set(FastCalls::new(fast, config.max_body_bytes));
    }
    let router =
        http::mcp_router(server.clone(), shared, &options, close_sessions).merge(web.api_router());
    let _ = shared.mcp.set(router);
    // The console's forms (its login too, which needs no session) take no larger body than
    // any other route (`HOOKS_MCP_MAX_BODY_BYTES`).
    let console = web
        .console_router()
        .map_err(|e| DaemonError::Console(e.to_string()))?
        .layer(axum::extract::DefaultBodyLimit::max(config.max_body_bytes))
        .layer(axum::middleware::map_response(too_large_says_the_limit(
            config.max_body_bytes,
        )));
    let _ = shared.console.set(console);
    phases.done();

    phases.begin(Phase::Scheduler);
    let scheduler = tokio::spawn(scheduler(
        store,
        changes,
        shared.clone(),
        stop_scheduler.clone(),
    ));
    phases.done();

    phases.begin(Phase::Listener);
    if let Some(delay) = config.phase_delay {
        tracing::warn!("{TEST_PHASE_DELAY_ENV}: holding start-up for {delay:?} (tests only)");
        tokio::time::sleep(delay).await;
    }
    phases.done();
    shared.status.set_phase(Phase::Serving);
    Ok(Started { scheduler, server })
}

/// A duration in milliseconds with one decimal, for the log.
fn millis(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DaemonError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| DaemonError::Task(e.to_string()))
}

/// How often the scheduler tick prunes the audit trail and old sessions, in milliseconds.
const HOUSEKEEPING_EVERY_MS: i64 = 60_000;

/// Fires due schedules on every tick until `stop`; records progress for `/health`; prunes the
/// audit trail and old session records once a minute.
///
/// While the process's feed of store changes reaches the store, a schedule change wakes it at
/// once and, after each tick, a timer is set for the next due schedule, so schedules fire on
/// time whichever process created them; the periodic tick is then only the fallback, and runs
/// less often ([`crate::status::SchedulerStats::check_every`]: an idle daemon wakes for it
/// every 10 s by default instead of every second). Losing the feed wakes the scheduler too
/// ([`server_full::StoreChanges`]), which then ticks at its own pace again.
async fn scheduler(
    store: StoreHandle,
    changes: StoreChanges,
    shared: Arc<Shared>,
    stop: CancellationToken,
) {
    let stats = &shared.status.scheduler;
    stats.started_ms.store(now_ms(), Ordering::Release);
    // The first tick at once; each next one a check period after the last one ended.
    let mut next_tick = tokio::time::Instant::now();
    let mut wakeups = changes.subscribe();
    let mut schedules_seen = wakeups.borrow_and_update().schedules;
    let mut due: Option<tokio::time::Instant> = None;
    let retention = shared.retention;
    // Housekeeping (audit trail, old sessions) runs once a minute, the first a minute after
    // start (start-up does no writes of its own).
    let mut next_housekeeping = now_ms().saturating_add(HOUSEKEEPING_EVERY_MS);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            () = tokio::time::sleep_until(next_tick) => {}
            changed = wakeups.changed() => {
                let schedules = wakeups.borrow_and_update().schedules;
                if changed.is_err() || schedules == schedules_seen {
                    continue;
                }
                schedules_seen = schedules;
            }
            _ = sleep_until(due), if due.is_some() => {}
        }
        let now = now_ms();
        let handle = store.clone();
        let plan = changes.connected();
        let housekeep = now >= next_housekeeping;
        if housekeep {
            next_housekeeping = now.saturating_add(HOUSEKEEPING_EVERY_MS);
        }
        let outcome = tokio::task::spawn_blocking(move || {
            if housekeep {
                match store::housekeeping(&*handle, now, &retention) {
                    Ok(pruned) => tracing::debug!(
                        audit = pruned.audit,
                        sessions = pruned.sessions,
                        "pruned the audit trail and old sessions"
                    ),
                    Err(e) => {
                        tracing::warn!("could not prune the audit trail and old sessions: {e}")
                    }
                }
                // Resumable HTTP sessions not seen for as long go too (the daemon's own state,
                // so not in the hooks' housekeeping).
                let before = now.saturating_sub(retention.sessions_ms);
                if let Err(e) = handle.prune_http_sessions(before) {
                    tracing::warn!("could not prune old resumable HTTP sessions: {e}");
                }
            }
            let fired = tools_scheduler::fire_due(&*handle, now, &store::Actor::Daemon);
            // Planned from the same instant: what was due by `now` was just fired (or is being
            // fired by another daemon); the next one is later.
            let next = if plan && fired.is_ok() {
                handle.next_fire_after(now).ok().flatten()
            } else {
                None
            };
            fired.map(|firings| (firings, next))
        });
        due = None;
        let error = match outcome.await {
            Ok(Ok((firings, next))) => {
                due = next.map(|at| {
                    let wait = u64::try_from(at.saturating_sub(now_ms())).unwrap_or(0);
                    // A millisecond late rather than early: the store compares whole ms.
                    tokio::time::Instant::now() + Duration::from_millis(wait + 1)
                });
                for firing in &firings {
                    tracing::debug!(
                        schedule = firing.schedule_id,
                        message = firing.message.id,
                        skipped = firing.skipped,
                        "schedule fired"
                    );
                }
                if let Some(metrics) = &shared.metrics {
                    metrics.scheduler.tick(&firings, now);
                }
                stats
                    .fired
                    .fetch_add(firings.len() as u64, Ordering::Relaxed);
                stats.last_tick_ms.store(now_ms(), Ordering::Release);
                None
            }
            Ok(Err(e)) => {
                tracing::warn!("the scheduler could not fire due schedules: {e}");
                if let Some(metrics) = &shared.metrics {
                    metrics.scheduler.tick_failed();
                    metrics.store_error(StoreOperation::SchedulerFire, &e);
                }
                Some(e.to_string())
            }
            Err(e) => {
                tracing::error!("the scheduler tick failed: {e}");
                if let Some(metrics) = &shared.metrics {
                    metrics.scheduler.tick_failed();
                }
                Some(format!("the tick failed: {e}"))
            }
        };
        *stats.last_error.lock().unwrap_or_else(|p| p.into_inner()) = error;
        let pace = stats.check_every(changes.connected());
        stats.pace_ms.store(
            u64::try_from(pace.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        next_tick = tokio::time::Instant::now() + pace;
    }
}

/// Sleeps until `due` (forever without one).
async fn sleep_until(due: Option<tokio::time::Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<DaemonConfig, DaemonError> {
        let mut map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        map.entry("HOOKS_MCP_HOME".into())
            .or_insert_with(|| "/nonexistent/hooks".into());
        DaemonConfig::from_vars(|k| map.get(k).cloned())
    }

    fn message(vars: &[(&str, &str)]) -> String {
        config(vars).unwrap_err().to_string()
    }

    #[test]
    fn defaults_listen_on_loopback_port_8642_without_a_token() {
        let c = config(&[]).unwrap();
        assert!(!c.addrs.is_empty());
        assert!(
            c.addrs
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 8642)
        );
        assert!(c.access.token.is_none());
        assert_eq!(c.max_sessions, 256);
        assert_eq!(c.store.path, PathBuf::from("/nonexistent/hooks/state.db"));
    }

    #[test]
    fn bad_numbers_name_the_setting() {
        assert!(message(&[(PORT_ENV, "http")]).starts_with("MCP_PORT: must be a whole number"));
        assert!(message(&[(PORT_ENV, "70000")]).starts_with("MCP_PORT:"));
        assert!(message(&[(MAX_SESSIONS_ENV, "0")]).starts_with("HOOKS_MCP_MAX_SESSIONS:"));
        assert_eq!(config(&[(PORT_ENV, "0")]).unwrap().addrs[0].port(), 0);
    }

    #[test]
    fn store_threads_follow_the_backend_unless_set() {
        let threads = |vars: &[(&str, &str)]| config(vars).unwrap().store_threads;
        assert_eq!(threads(&[]), 1, "SQLite: one connection, one thread");
        let url = (store::DATABASE_URL_ENV, "postgres://u@127.0.0.1/db");
        assert_eq!(threads(&[url]), 8, "PostgreSQL: the pool's default size");
        assert_eq!(threads(&[url, (store::POOL_SIZE_ENV, "3")]), 3);
        assert_eq!(threads(&[url, (STORE_THREADS_ENV, "5")]), 5);
        assert_eq!(threads(&[(STORE_THREADS_ENV, "2")]), 2);
        let m = message(&[(STORE_THREADS_ENV, "0")]);
        assert!(
            m.starts_with("HOOKS_MCP_STORE_THREADS: must be a whole number"),
            "{m}"
        );
    }

    #[test]
    fn a_non_loopback_address_requires_a_token() {
        let m = message(&[(HOST_ENV, "0.0.0.0")]);
        assert!(m.starts_with("MCP_HOST:") && m.contains(TOKEN_ENV), "{m}");
        let c = config(&[(HOST_ENV, "0.0.0.0"), (TOKEN_ENV, "0123456789abcdef")]).unwrap();
        assert!(c.access.token.is_some());
        assert!(!c.access.allowed_hosts.contains(&"0.0.0.0".to_string()));
    }

    #[test]
    fn tokens_come_from_one_place() {
        let both = message(&[(TOKEN_ENV, "0123456789abcdef"), (TOKEN_FILE_ENV, "/x")]);
        assert!(both.contains("not both"), "{both}");
        assert!(message(&[(TOKEN_ENV, "short")]).starts_with("HOOKS_MCP_TOKEN:"));
        for blank in ["", "   ", "\n"] {
            let m = message(&[(TOKEN_ENV, blank)]);
            assert!(m.starts_with("HOOKS_MCP_TOKEN: set but empty"), "{m}");
        }
        let missing = message(&[(TOKEN_FILE_ENV, "/nonexistent/token")]);
        assert!(
            missing.starts_with("HOOKS_MCP_TOKEN_FILE: cannot read"),
            "{missing}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "0123456789abcdef0123\n").unwrap();
        let c = config(&[(TOKEN_FILE_ENV, file.to_str().unwrap())]).unwrap();
        assert!(c.access.token.unwrap().matches(b"0123456789abcdef0123"));
    }

    #[test]
    fn allowed_hosts_and_origins_are_validated() {
        let c = config(&[
            (ALLOWED_HOSTS_ENV, "MCP.example.com, 10.0.0.5:8642"),
            (ALLOWED_ORIGINS_ENV, "https://App.example.com"),
        ])
        .unwrap();
        assert!(
            c.access
                .allowed_hosts
                .contains(&"mcp.example.com".to_string())
        );
        assert!(c.access.allowed_hosts.contains(&"10.0.0.5".to_string()));
        assert_eq!(c.access.allowed_origins, vec!["https://app.example.com"]);
        assert!(message(&[(ALLOWED_HOSTS_ENV, "a/b")]).starts_with(ALLOWED_HOSTS_ENV));
        assert!(
            message(&[(ALLOWED_ORIGINS_ENV, "app.example.com")]).starts_with(ALLOWED_ORIGINS_ENV)
        );
    }

    #[test]
    fn a_second_lock_names_the_first_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = InstanceLock::acquire(dir.path()).unwrap();
        let second = InstanceLock::acquire(dir.path()).unwrap_err();
        let text = second.to_string();
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        drop(first);
        assert!(InstanceLock::acquire(dir.path()).is_ok());
    }

    #[test]
    fn a_store_directory_in_the_way_is_named_for_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "x").unwrap();
        let text = InstanceLock::acquire(&file).unwrap_err().to_string();
        assert!(text.contains("is a file, not a directory"), "{text}");
        let link = dir.path().join("a-link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        let text = InstanceLock::acquire(&link).unwrap_err().to_string();
        assert!(text.contains("is a symbolic link to"), "{text}");
        assert!(text.contains("nowhere"), "{text}");
        assert!(!text.contains("daemon lock"), "{text}");
    }
}
