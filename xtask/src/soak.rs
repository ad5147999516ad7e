//! `cargo xtask soak --minutes N`: one network daemon under mixed load for N minutes, sampled
//! every few seconds for leaks and errors.
//!
//! The load (every loop ends at the deadline): Streamable HTTP clients that open a session,
//! make a few hundred requests (tool calls of every category, `tools/list`, `ping`), sometimes
//! with a standalone GET stream open, sometimes dropping a call mid-flight (and going on in the
//! same session on a new connection, or not), and then abandon the session without a DELETE, so
//! the daemon's idle expiry must reclaim it; legacy SSE clients that do the same over `/sse`;
//! hook events posted to `POST /hook/{event}` (on SQLite the daemon refuses them with 422 by
//! design, since hooks open that store themselves; with `HOOKS_MCP_DATABASE_URL` set the daemon
//! runs on PostgreSQL and answers them); interval schedules, created during the warm-up
//! so that one fires every few seconds afterwards.
//!
//! Every `--interval` seconds it samples the daemon's private dirty memory
//! (`/proc/PID/smaps_rollup`), open file descriptors, threads, live sessions and schedule
//! firings, prints a row, and at the end the growth of private dirty memory per 100,000 calls
//! after the warm-up. Unexpected HTTP statuses, JSON-RPC errors, tool errors and I/O failures
//! are counted by kind. It exits non-zero when anything failed, when file descriptors or
//! threads did not come back to their level before the load once the clients are gone, or
//! (with at least 100,000 calls after the warm-up) when memory grew by more than
//! `--max-growth-kib` per 100,000 calls. An idle keep-alive connection that the daemon closes
//! is reconnected, not counted as an error.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};

use crate::bench_http::{ClosedBeforeReply, Conn, Reply, private_dirty_kib, tool_call};
use crate::conformance::{Daemon, build_daemon};

/// Options of `cargo xtask soak`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// How long the load runs, in minutes.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Concurrent Streamable HTTP clients.
    #[arg(long, default_value_t = 10)]
    sessions: usize,
    /// Concurrent legacy SSE clients.
    #[arg(long, default_value_t = 2)]
    sse: usize,
    /// Concurrent clients posting hook events.
    #[arg(long, default_value_t = 1)]
    hooks: usize,
    /// Interval schedules created during the warm-up (each fires every 60 s afterwards).
    #[arg(long, default_value_t = 12)]
    schedules: usize,
    /// Seconds between samples.
    #[arg(long, default_value_t = 10)]
    interval: u64,
    /// Seconds an abandoned session lives in the daemon (HOOKS_MCP_SESSION_IDLE_SECS).
    #[arg(long, default_value_t = 15)]
    session_idle: u64,
    /// Largest private dirty growth per 100,000 calls after the warm-up, in KiB; enforced when
    /// at least 100,000 calls were made after it.
    #[arg(long, default_value_t = 1024.0)]
    max_growth_kib: f64,
    /// Soak a debug build of the daemon (quick to build; memory figures not representative).
    #[arg(long)]
    debug: bool,
    /// Use the daemon already built in target/ (release, or debug with --debug).
    #[arg(long)]
    skip_build: bool,
    /// Keep the daemon's home directory (store and log) and print where it is.
    #[arg(long)]
    keep: bool,
}

/// Calls per growth unit.
const PER_CALLS: f64 = 100_000.0;

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.minutes >= 0.1 && args.minutes <= 24.0 * 60.0,
        "--minutes: 0.1 to 1440"
    );
    anyhow::ensure!(
        args.sessions + args.sse + args.hooks >= 1 && args.sessions + args.sse + args.hooks <= 64,
        "--sessions + --sse + --hooks: 1 to 64 clients"
    );
    anyhow::ensure!((1..=600).contains(&args.interval), "--interval: 1 to 600");
    anyhow::ensure!(args.schedules <= 100, "--schedules: at most 100");
    anyhow::ensure!(
        (5..=3600).contains(&args.session_idle),
        "--session-idle: 5 to 3600"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("no workspace root")?
        .to_path_buf();
    let bin = if args.skip_build {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| root.join("target"));
        let bin = target
            .join(if args.debug { "debug" } else { "release" })
            .join("hooks-mcp-full");
        anyhow::ensure!(bin.is_file(), "--skip-build: no {}", bin.display());
        bin
    } else {
        eprintln!("soak: building hooks-mcp-full...");
        build_daemon(&root, !args.debug)?
    };
    let hook_events = hook_events(&root.join("tests/fixtures/hooks"))?;
    // Freshly linked binaries sit in dirty page cache; written back, they are not counted.
    let _ = Command::new("sync").status();

    let home = tempfile::Builder::new()
        .prefix("hooks-mcp-soak")
        .disable_cleanup(args.keep)
        .tempdir()?;
    let log = home.path().join("daemon.log");
    if args.keep {
        eprintln!(
            "soak: the daemon's home (store, daemon.log) is kept in {}",
            home.path().display()
        );
    }
    let idle = args.session_idle.to_string();
    let mut daemon = Daemon::start_with(
        &bin,
        home.path(),
        &log,
        &[
            ("HOOKS_MCP_SESSION_IDLE_SECS", &idle),
            ("HOOKS_MCP_MAX_SESSIONS", "1024"),
            ("HOOKS_MCP_LOG", "warn"),
        ],
        None,
    )?;
    let pid = daemon.pid();
    let addr = SocketAddr::from(([127, 0, 0, 1], daemon.port));
    let total = Duration::from_secs_f64(args.minutes * 60.0);
    // The first minute, or the first 20% of a shorter run.
    let warmup = Duration::from_secs(60).min(total.mul_f64(0.2));

    // Prime every path once, then let the daemon settle: the reference for fds and threads.
    let stats = Stats::default();
    let primed = Instant::now() + Duration::from_secs(5);
    let mut rng = fastrand::Rng::with_seed(1);
    http_client(addr, &stats, &mut rng, primed, 0);
    sse_client(addr, &stats, &mut rng, primed);
    hook_client(addr, &stats, &hook_events, primed, 8);
    if let Some(errors) = stats.error_summary() {
        anyhow::bail!("priming the daemon failed:\n{errors}");
    }
    std::thread::sleep(Duration::from_secs(12));
    let before = Sample::take(pid, addr, &log, Duration::ZERO, &stats)?;

    println!("## Soak: {:.1} minutes\n", args.minutes);
    let backend = if hook_events.first().is_some_and(|e| e.sqlite) {
        "SQLite store (hook events refused by design)"
    } else {
        "PostgreSQL store"
    };
    println!(
        "{} build, {backend}; {} Streamable HTTP clients, {} legacy SSE clients, {} hook \
         client(s), {} interval schedules; abandoned sessions expire after {} s; warm-up {} s.\n",
        if args.debug { "debug" } else { "release" },
        args.sessions,
        args.sse,
        args.hooks,
        args.schedules,
        args.session_idle,
        warmup.as_secs()
    );
    println!(
        "| t (s) | calls | requests | private dirty (MiB) | fds | threads | HTTP sessions | SSE \
         sessions | fired | errors |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    before.print();

    let started = Instant::now();
    let deadline = started + total;
    let schedules = Mutex::new(Vec::new());
    let mut samples = vec![before.clone()];
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let stats = &stats;
        let hook_events = &hook_events;
        let schedules = &schedules;
        for worker in 0..args.sessions {
            scope.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(100 + worker as u64);
                while Instant::now() < deadline {
                    http_client(addr, stats, &mut rng, deadline, worker);
                }
            });
        }
        for worker in 0..args.sse {
            scope.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(200 + worker as u64);
                while Instant::now() < deadline {
                    sse_client(addr, stats, &mut rng, deadline);
                }
            });
        }
        for _ in 0..args.hooks {
            scope.spawn(move || hook_client(addr, stats, hook_events, deadline, u64::MAX));
        }
        let count = args.schedules;
        scope.spawn(move || schedule_client(addr, stats, schedules, count, warmup, deadline));

        let mut next = started;
        loop {
            next += Duration::from_secs(args.interval);
            let now = Instant::now();
            if next > deadline {
                std::thread::sleep(deadline.saturating_duration_since(now));
                break;
            }
            std::thread::sleep(next.saturating_duration_since(now));
            let sample = Sample::take(pid, addr, &log, started.elapsed(), stats)?;
            sample.print();
            samples.push(sample);
        }
        Ok(())
    })?;
    let ended = started.elapsed();
    let last = Sample::take(pid, addr, &log, ended, &stats)?;
    last.print();
    samples.push(last.clone());

    // With every client gone, fds and threads must come back to their level before the load.
    let settle_until = Instant::now() + Duration::from_secs(45);
    let settled = loop {
        let s = Sample::take(pid, addr, &log, started.elapsed(), &stats)?;
        if (s.fds <= before.fds && s.threads <= before.threads) || Instant::now() > settle_until {
            break s;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    settled.print();

    let mut failures = Vec::new();
    println!();
    let after_warmup: Vec<&Sample> = samples.iter().filter(|s| s.at >= warmup).collect();
    match growth(&after_warmup) {
        Some(g) => {
            println!(
                "Private dirty after the warm-up: {:.2} MiB at {} calls, {:.2} MiB at {} calls; \
                 growth per 100,000 calls: {:.1} KiB (least squares over {} samples), {:.1} KiB \
                 (first to last).",
                g.first_kib as f64 / 1024.0,
                g.first_calls,
                g.last_kib as f64 / 1024.0,
                g.last_calls,
                g.slope_kib,
                after_warmup.len(),
                g.endpoints_kib
            );
            let span = (g.last_calls - g.first_calls) as f64;
            if span >= PER_CALLS && g.slope_kib > args.max_growth_kib {
                failures.push(format!(
                    "private dirty grew {:.1} KiB per 100,000 calls (limit {:.0})",
                    g.slope_kib, args.max_growth_kib
                ));
            } else if span < PER_CALLS {
                println!(
                    "(Fewer than 100,000 calls after the warm-up: the memory limit is not \
                     enforced.)"
                );
            }
        }
        None => println!("Too few samples after the warm-up to measure growth."),
    }
    let (fds_min, fds_max, threads_min, threads_max) = ranges(&after_warmup);
    println!(
        "Under load after the warm-up: fds {fds_min}–{fds_max}, threads {threads_min}–{threads_max}. \
         Before the load: {} fds, {} threads; {} s after it: {} fds, {} threads.",
        before.fds,
        before.threads,
        (settled.at.saturating_sub(ended)).as_secs(),
        settled.fds,
        settled.threads
    );
    if settled.fds > before.fds {
        failures.push(format!(
            "open fds grew from {} to {} ({})",
            before.fds,
            settled.fds,
            fd_kinds(pid)
        ));
    }
    if settled.threads > before.threads {
        failures.push(format!(
            "threads grew from {} to {}",
            before.threads, settled.threads
        ));
    }

    let expected = expected_firings(
        &schedules.lock().map_err(|_| anyhow::anyhow!("poisoned"))?,
        started,
        ended,
    );
    let fired = last.fired.saturating_sub(before.fired);
    println!(
        "Schedules: {fired} firings during the load, {expected} expected; {} sessions opened, {} \
         calls dropped mid-flight, {} idle connections closed by the daemon and reopened.",
        stats.sessions.load(Ordering::Relaxed),
        stats.dropped.load(Ordering::Relaxed),
        stats.reconnects.load(Ordering::Relaxed)
    );
    let slack = args.schedules as u64;
    if fired + slack < expected || fired > expected + slack {
        stats.error(
            "schedule firings",
            format!("{fired} firings, {expected} expected"),
        );
    }
    match stats.error_summary() {
        Some(errors) => {
            println!("\nErrors by kind:\n\n{errors}");
            failures.push(format!("{} errors", stats.error_count()));
        }
        None => println!("Errors: none."),
    }

    daemon.stop()?;
    if failures.is_empty() {
        println!("\nsoak: passed");
        Ok(())
    } else {
        anyhow::bail!("soak failed: {}", failures.join("; "))
    }
}

/// What the clients counted.
#[derive(Debug, Default)]
struct Stats {
    /// `tools/call` requests and hook events answered.
    calls: AtomicU64,
    /// Every request answered (calls, `initialize`, `tools/list`, `ping`, notifications).
    requests: AtomicU64,
    /// Sessions opened (both transports).
    sessions: AtomicU64,
    /// Calls whose connection the client closed before the answer.
    dropped: AtomicU64,
    /// Idle keep-alive connections the daemon closed, reopened by the client.
    reconnects: AtomicU64,
    /// Errors by kind: count and the first one's details.
    errors: Mutex<BTreeMap<String, (u64, String)>>,
}

impl Stats {
    fn error(&self, kind: impl Into<String>, detail: impl std::fmt::Display) {
        if let Ok(mut errors) = self.errors.lock() {
            let entry = errors
                .entry(kind.into())
                .or_insert_with(|| (0, truncate(&detail.to_string(), 300)));
            entry.0 += 1;
        }
    }

    fn error_count(&self) -> u64 {
        self.errors
            .lock()
            .map(|e| e.values().map(|(n, _)| n).sum())
            .unwrap_or(0)
    }

    /// One line per kind, or `None` without errors.
    fn error_summary(&self) -> Option<String> {
        let errors = self.errors.lock().ok()?;
        if errors.is_empty() {
            return None;
        }
        Some(
            errors
                .iter()
                .map(|(kind, (n, first))| format!("- {kind}: {n} (first: {first})"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    fn answered(&self, call: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if call {
            self.calls.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A failed step: its kind (what is counted) and details (the first is printed).
#[derive(Debug)]
struct Failure {
    kind: String,
    detail: String,
}

impl Failure {
    fn new(kind: impl Into<String>, detail: impl std::fmt::Display) -> Failure {
        Failure {
            kind: kind.into(),
            detail: detail.to_string(),
        }
    }

    fn io(what: &str, e: impl std::fmt::Display) -> Failure {
        Failure::new(format!("i/o {what}"), format!("{e:#}"))
    }
}

type Step<T> = Result<T, Failure>;

/// Sends a request; when the daemon had closed the (idle keep-alive) connection before reading
/// it, sends it again once on a new connection.
fn send(conn: &mut Conn, stats: &Stats, path: &str, body: &str, what: &str) -> Step<Reply> {
    match conn.request_at("POST", path, body) {
        Ok(reply) => Ok(reply),
        Err(e) if e.is::<ClosedBeforeReply>() => {
            stats.reconnects.fetch_add(1, Ordering::Relaxed);
            conn.reconnect().map_err(|e| Failure::io("connect", e))?;
            conn.request_at("POST", path, body)
                .map_err(|e| Failure::io(what, e))
        }
        Err(e) => Err(Failure::io(what, e)),
    }
}

/// The JSON-RPC response with `id` in a reply body (JSON, or SSE `data:` lines).
fn response_in(body: &str, id: u64) -> Option<Value> {
    let trimmed = body.trim_start();
    let candidates: Vec<Value> = if trimmed.starts_with('{') {
        serde_json::from_str(trimmed).ok().into_iter().collect()
    } else {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    candidates.into_iter().find(|m| m["id"] == json!(id))
}

/// Checks a response: no JSON-RPC error, no tool error.
fn check(message: &Value, what: &str) -> Step<()> {
    if let Some(error) = message.get("error") {
        return Err(Failure::new(
            format!("JSON-RPC error {} ({what})", error["code"]),
            error,
        ));
    }
    if message["result"]["isError"] == json!(true) {
        return Err(Failure::new(
            format!("tool error ({what})"),
            &message["result"]["content"],
        ));
    }
    if message.get("result").is_none() {
        return Err(Failure::new(format!("no result ({what})"), message));
    }
    Ok(())
}

/// One `/mcp` request expecting a response with `id`.
fn mcp_request(conn: &mut Conn, stats: &Stats, body: &str, id: u64, what: &str) -> Step<()> {
    let reply = send(conn, stats, "/mcp", body, what)?;
    if reply.status != 200 {
        return Err(Failure::new(
            format!("HTTP {} ({what})", reply.status),
            reply.body,
        ));
    }
    let message = response_in(&reply.body, id)
        .ok_or_else(|| Failure::new(format!("no response ({what})"), &reply.body))?;
    check(&message, what)?;
    stats.answered(what.starts_with("tools/call"));
    Ok(())
}

fn initialize(id: u64, version: &str) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": { "name": "soak", "version": "1" }
        }
    })
    .to_string()
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A request of the mix: its body and what it is (for error kinds).
fn pick_request(rng: &mut fastrand::Rng, id: u64, worker: usize) -> (String, String) {
    let call = |tool: &str, args: Value| {
        (
            tool_call(id as usize, tool, args),
            format!("tools/call {tool}"),
        )
    };
    match rng.u32(0..100) {
        0..30 => call(
            "channel_publish",
            json!({
                "channel": format!("soak{}", rng.u32(0..8)),
                "message": format!("soak message {id} from client {worker}"),
                "ttl_seconds": 30,
            }),
        ),
        30..45 => call("channel_read", json!({ "limit": 20 })),
        45..50 => call(
            "channel_read",
            json!({ "channel": format!("soak{}", rng.u32(0..8)), "session_id": format!("soak-{worker}") }),
        ),
        50..62 => call("channel_list", json!({})),
        62..70 => call("schedule_list", json!({})),
        70..76 => call("condition_list", json!({})),
        76..82 => call("enforcement_list", json!({})),
        82..91 => (
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }).to_string(),
            "tools/list".into(),
        ),
        _ => (
            json!({ "jsonrpc": "2.0", "id": id, "method": "ping" }).to_string(),
            "ping".into(),
        ),
    }
}

/// How a client's session ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// It stops making requests and closes its connections (no DELETE).
    Abandon,
    /// It closes the connection during a call and abandons the session.
    DropMidCall,
    /// It closes the connection during a call, then goes on in the same session on a new one.
    DropAndResume,
    /// It sends half a request body, closes, then goes on on a new connection.
    HalfBodyAndResume,
}

fn ending(rng: &mut fastrand::Rng) -> Ending {
    match rng.u32(0..8) {
        0 => Ending::DropMidCall,
        1 => Ending::DropAndResume,
        2 => Ending::HalfBodyAndResume,
        _ => Ending::Abandon,
    }
}

/// One Streamable HTTP client: a session of a few hundred requests, ended as [`ending`] says.
fn http_client(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
    worker: usize,
) {
    if let Err(f) = http_session(addr, stats, rng, deadline, worker) {
        stats.error(f.kind, f.detail);
        // Never spin on a daemon that keeps failing.
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn http_session(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
    worker: usize,
) -> Step<()> {
    let mut conn = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
    let reply = conn
        .request("POST", &initialize(0, "2025-06-18"))
        .map_err(|e| Failure::io("initialize", e))?;
    if reply.status != 200 {
        return Err(Failure::new(
            format!("HTTP {} (initialize)", reply.status),
            reply.body,
        ));
    }
    let message = response_in(&reply.body, 0)
        .ok_or_else(|| Failure::new("no response (initialize)", &reply.body))?;
    check(&message, "initialize")?;
    conn.session = reply
        .session
        .ok_or_else(|| Failure::new("no Mcp-Session-Id (initialize)", ""))?;
    stats.answered(false);
    stats.sessions.fetch_add(1, Ordering::Relaxed);
    let reply = send(&mut conn, stats, "/mcp", INITIALIZED, "initialized")?;
    if reply.status != 202 {
        return Err(Failure::new(
            format!("HTTP {} (initialized)", reply.status),
            reply.body,
        ));
    }
    stats.answered(false);

    // A quarter of the sessions keep their standalone GET stream open while they work.
    let _get_stream = if rng.u32(0..4) == 0 {
        let mut get = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
        get.session = conn.session.clone();
        Some(get.open_get().map_err(|e| Failure::io("GET /mcp", e))?)
    } else {
        None
    };

    let requests = rng.u64(20..400);
    let end = ending(rng);
    let drop_at = rng.u64(0..requests);
    for id in 1..=requests {
        if Instant::now() >= deadline {
            return Ok(());
        }
        let (body, what) = pick_request(rng, id, worker);
        if id == drop_at && end != Ending::Abandon {
            let session = conn.session.clone();
            match end {
                Ending::HalfBodyAndResume => {
                    half_body(addr, &session, &body).map_err(|e| Failure::io("half body", e))?;
                }
                _ => {
                    // The call is sent, and its connection closed before the answer.
                    conn.send_at("POST", "/mcp", &body)
                        .map_err(|e| Failure::io("drop mid-call", e))?;
                    stats.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            if end == Ending::DropMidCall {
                return Ok(());
            }
            conn = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
            conn.session = session;
            continue;
        }
        mcp_request(&mut conn, stats, &body, id, &what)?;
    }
    Ok(())
}

/// Sends a request with half its body on a new connection, and closes it.
fn half_body(addr: SocketAddr, session: &str, body: &str) -> std::io::Result<()> {
    let mut stream = TcpStream::connect(addr)?;
    let half = &body.as_bytes()[..body.len() / 2];
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMcp-Session-Id: {session}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(half)?;
    stream.flush()
}

/// One legacy SSE client: a session of a few hundred requests on its stream.
fn sse_client(addr: SocketAddr, stats: &Stats, rng: &mut fastrand::Rng, deadline: Instant) {
    if let Err(f) = sse_session(addr, stats, rng, deadline) {
        stats.error(f.kind, f.detail);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A legacy SSE stream: its events, read line by line.
struct SseStream {
    events: BufReader<TcpStream>,
}

impl SseStream {
    fn open(addr: SocketAddr) -> std::io::Result<SseStream> {
        let mut stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "GET /sse HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
        )?;
        Ok(SseStream {
            events: BufReader::new(stream),
        })
    }

    /// The status line and headers.
    fn head(&mut self) -> Step<()> {
        let mut line = String::new();
        self.events
            .read_line(&mut line)
            .map_err(|e| Failure::io("GET /sse", e))?;
        if !line.contains(" 200 ") {
            return Err(Failure::new("HTTP status (GET /sse)", line.trim_end()));
        }
        loop {
            line.clear();
            let n = self
                .events
                .read_line(&mut line)
                .map_err(|e| Failure::io("GET /sse", e))?;
            if n == 0 || line.trim_end().is_empty() {
                return Ok(());
            }
        }
    }

    /// The next event: its type and data.
    fn next(&mut self) -> Step<(String, String)> {
        let (mut event, mut data) = (String::from("message"), String::new());
        let mut line = String::new();
        loop {
            line.clear();
            let n = self
                .events
                .read_line(&mut line)
                .map_err(|e| Failure::io("SSE stream", e))?;
            if n == 0 {
                return Err(Failure::new("SSE stream closed", "mid-session"));
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Ok((event, data));
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim());
            }
        }
    }

    /// The response with `id`, skipping other messages.
    fn response(&mut self, id: u64, what: &str) -> Step<()> {
        for _ in 0..100 {
            let (event, data) = self.next()?;
            if event != "message" {
                continue;
            }
            let message: Value = serde_json::from_str(&data)
                .map_err(|e| Failure::new(format!("bad SSE message ({what})"), e))?;
            if message["id"] == json!(id) {
                return check(&message, what);
            }
        }
        Err(Failure::new(
            format!("no response ({what})"),
            "100 other events",
        ))
    }
}

fn sse_session(
    addr: SocketAddr,
    stats: &Stats,
    rng: &mut fastrand::Rng,
    deadline: Instant,
) -> Step<()> {
    let mut stream = SseStream::open(addr).map_err(|e| Failure::io("connect", e))?;
    stream.head()?;
    let (event, endpoint) = stream.next()?;
    if event != "endpoint" {
        return Err(Failure::new("no endpoint event (GET /sse)", event));
    }
    let mut post = Conn::connect(addr).map_err(|e| Failure::io("connect", e))?;
    let exchange = |post: &mut Conn, body: &str, what: &str| -> Step<()> {
        let reply = send(post, stats, &endpoint, body, what)?;
        if reply.status != 202 {
            return Err(Failure::new(
                format!("HTTP {} (POST /messages {what})", reply.status),
                reply.body,
            ));
        }
        Ok(())
    };
    exchange(&mut post, &initialize(0, "2024-11-05"), "initialize")?;
    stream.response(0, "initialize")?;
    stats.answered(false);
    stats.sessions.fetch_add(1, Ordering::Relaxed);
    exchange(&mut post, INITIALIZED, "initialized")?;
    stats.answered(false);

    let requests = rng.u64(20..400);
    let drop_at = (rng.u32(0..4) == 0).then(|| rng.u64(1..=requests));
    for id in 1..=requests {
        if Instant::now() >= deadline {
            return Ok(());
        }
        let (body, what) = pick_request(rng, id, 1000);
        exchange(&mut post, &body, &what)?;
        if drop_at == Some(id) {
            // The stream (the session) closes before the answer arrives.
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        stream.response(id, &what)?;
        stats.answered(what.starts_with("tools/call"));
    }
    Ok(())
}

/// A hook event: its name and the hook's request body.
#[derive(Debug)]
struct HookEvent {
    event: String,
    body: String,
    /// The daemon serves SQLite: it refuses the event (422) by design.
    sqlite: bool,
}

/// The recorded hook payloads, wrapped as a hook posts them to the daemon.
fn hook_events(dir: &Path) -> anyhow::Result<Vec<HookEvent>> {
    // On PostgreSQL the daemon answers for the store it serves (the daemon inherits
    // HOOKS_MCP_DATABASE_URL); on SQLite it refuses every event, as hooks open that store
    // themselves.
    let store = store::identity_from_env()
        .context("HOOKS_MCP_DATABASE_URL")?
        .unwrap_or_else(|| "sqlite".into());
    let mut events = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let payload: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let event = payload["hook_event_name"]
            .as_str()
            .with_context(|| format!("no hook_event_name in {}", path.display()))?
            .to_owned();
        let body = json!({
            "v": 1, "store": store, "channels": null, "gate": true, "payload": payload
        })
        .to_string();
        events.push(HookEvent {
            event,
            body,
            sqlite: store == "sqlite",
        });
    }
    anyhow::ensure!(!events.is_empty(), "no hook fixtures in {}", dir.display());
    events.sort_by(|a, b| a.event.cmp(&b.event));
    Ok(events)
}

/// The answer the daemon gives every hook event on SQLite: hooks open that store themselves.
const SQLITE_REFUSAL: &str = "serves an SQLite store";

/// Posts hook events (up to `limit`) on a keep-alive connection until the deadline.
fn hook_client(
    addr: SocketAddr,
    stats: &Stats,
    events: &[HookEvent],
    deadline: Instant,
    limit: u64,
) {
    let sqlite = events.first().is_some_and(|e| e.sqlite);
    let mut conn = None;
    let mut n = 0u64;
    while Instant::now() < deadline && n < limit {
        let event = &events[n as usize % events.len()];
        n += 1;
        let result = (|| -> Step<()> {
            let conn = match &mut conn {
                Some(c) => c,
                None => conn.insert(Conn::connect(addr).map_err(|e| Failure::io("connect", e))?),
            };
            let what = format!("hook {}", event.event);
            let reply = send(
                conn,
                stats,
                &format!("/hook/{}", event.event),
                &event.body,
                &what,
            )?;
            match reply.status {
                200 => Ok(()),
                422 if sqlite && reply.body.contains(SQLITE_REFUSAL) => Ok(()),
                status => Err(Failure::new(format!("HTTP {status} ({what})"), reply.body)),
            }
        })();
        match result {
            Ok(()) => stats.answered(true),
            Err(f) => {
                stats.error(f.kind, f.detail);
                conn = None;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Creates `count` interval schedules spread over the warm-up, recording when each was made.
fn schedule_client(
    addr: SocketAddr,
    stats: &Stats,
    created: &Mutex<Vec<Instant>>,
    count: usize,
    warmup: Duration,
    deadline: Instant,
) {
    if count == 0 {
        return;
    }
    let spacing = warmup.div_f64(count as f64);
    let start = Instant::now();
    let mut conn = match Conn::session(addr) {
        Ok(c) => c,
        Err(e) => return stats.error("i/o schedule session", format!("{e:#}")),
    };
    for i in 0..count {
        let at = start + spacing.mul_f64(i as f64);
        if at >= deadline {
            return;
        }
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let body = tool_call(
            i + 1,
            "schedule_create",
            json!({
                "channel": "soak-schedules",
                "message": format!("soak schedule {i}"),
                "every_seconds": 60,
                "ttl_seconds": 30,
                "name": format!("soak{i}"),
            }),
        );
        match mcp_request(
            &mut conn,
            stats,
            &body,
            i as u64 + 1,
            "tools/call schedule_create",
        ) {
            Ok(()) => {
                if let Ok(mut created) = created.lock() {
                    created.push(Instant::now());
                }
            }
            Err(f) => stats.error(f.kind, f.detail),
        }
    }
}

/// Firings due by `ended` (since `started`) for schedules of 60 s created at `created`.
fn expected_firings(created: &[Instant], started: Instant, ended: Duration) -> u64 {
    let end = started + ended;
    created
        .iter()
        .map(|c| end.saturating_duration_since(*c).as_secs() / 60)
        .sum()
}

/// One sample of the daemon.
#[derive(Debug, Clone)]
struct Sample {
    at: Duration,
    calls: u64,
    requests: u64,
    private_dirty_kib: u64,
    fds: u64,
    threads: u64,
    http_sessions: u64,
    sse_sessions: u64,
    fired: u64,
    errors: u64,
}

impl Sample {
    fn take(
        pid: u32,
        addr: SocketAddr,
        log: &Path,
        at: Duration,
        stats: &Stats,
    ) -> anyhow::Result<Sample> {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            anyhow::bail!(
                "the daemon (pid {pid}) exited; the end of its log ({}):\n{}",
                log.display(),
                tail.join("\n")
            );
        }
        let private_dirty_kib = private_dirty_kib(pid)?;
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .context("listing the daemon's /proc/PID/fd")?
            .count() as u64;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .context("reading the daemon's /proc/PID/status")?;
        let threads = status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .context("no Threads line in /proc/PID/status")?;
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

    fn print(&self) {
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
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET /health?level=full HTTP/1.0\r\nHost: {addr}\r\n\r\n"
    )?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stream, &mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    anyhow::ensure!(head.contains(" 200 "), "/health?level=full: {text}");
    Ok(serde_json::from_str(body)?)
}

/// Private dirty memory against calls after the warm-up.
#[derive(Debug)]
struct Growth {
    first_kib: u64,
    first_calls: u64,
    last_kib: u64,
    last_calls: u64,
    /// Least-squares slope, KiB per 100,000 calls.
    slope_kib: f64,
    /// First to last sample, KiB per 100,000 calls.
    endpoints_kib: f64,
}

fn growth(samples: &[&Sample]) -> Option<Growth> {
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
fn ranges(samples: &[&Sample]) -> (u64, u64, u64, u64) {
    let fds = samples.iter().map(|s| s.fds);
    let threads = samples.iter().map(|s| s.threads);
    (
        fds.clone().min().unwrap_or(0),
        fds.max().unwrap_or(0),
        threads.clone().min().unwrap_or(0),
        threads.max().unwrap_or(0),
    )
}

/// What the daemon's open fds are, by kind (`socket`, `anon_inode:[eventfd]`, a file...).
fn fd_kinds(pid: u32) -> String {
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for entry in entries.flatten() {
            let target = std::fs::read_link(entry.path())
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            let kind = match target.split_once(':') {
                Some((k, _)) if k == "socket" || k == "pipe" => k.to_owned(),
                _ => target,
            };
            *kinds.entry(kind).or_default() += 1;
        }
    }
    kinds
        .iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(calls: u64, kib: u64) -> Sample {
        Sample {
            at: Duration::ZERO,
            calls,
            requests: calls,
            private_dirty_kib: kib,
            fds: 10,
            threads: 5,
            http_sessions: 0,
            sse_sessions: 0,
            fired: 0,
            errors: 0,
        }
    }

    #[test]
    fn growth_is_the_slope_per_hundred_thousand_calls() {
        let samples = [
            sample(0, 1000),
            sample(100_000, 1500),
            sample(200_000, 2000),
        ];
        let refs: Vec<&Sample> = samples.iter().collect();
        let g = growth(&refs).unwrap();
        assert!((g.slope_kib - 500.0).abs() < 1e-6, "{g:?}");
        assert!((g.endpoints_kib - 500.0).abs() < 1e-6, "{g:?}");
        let flat = [sample(0, 1000), sample(50_000, 1200), sample(100_000, 1000)];
        let refs: Vec<&Sample> = flat.iter().collect();
        assert!(growth(&refs).unwrap().slope_kib.abs() < 1e-6);
        assert!(growth(&refs[..1]).is_none());
    }

    #[test]
    fn responses_are_found_in_json_and_sse_bodies() {
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n";
        assert!(response_in(sse, 7).is_some());
        assert!(response_in(sse, 8).is_none());
        assert!(response_in("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", 3).is_some());
    }

    #[test]
    fn errors_and_tool_errors_are_failures() {
        let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
        assert!(check(&ok, "x").is_ok());
        let rpc = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m"}});
        assert_eq!(
            check(&rpc, "x").unwrap_err().kind,
            "JSON-RPC error -32602 (x)"
        );
        let tool = json!({"jsonrpc": "2.0", "id": 1, "result": {"isError": true, "content": []}});
        assert_eq!(check(&tool, "x").unwrap_err().kind, "tool error (x)");
    }

    #[test]
    fn firings_expected_count_whole_minutes() {
        let started = Instant::now();
        let created = [started, started + Duration::from_secs(30)];
        assert_eq!(
            expected_firings(&created, started, Duration::from_secs(150)),
            2 + 2
        );
        assert_eq!(
            expected_firings(&created, started, Duration::from_secs(59)),
            0
        );
    }
}
