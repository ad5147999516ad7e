//! `cargo xtask bench-http`: the network daemon under load, printed as markdown tables.
//!
//! A bounded load generator (one thread and one keep-alive connection per session, a fixed
//! number of calls per level) measures `tools/call` throughput and p50/p99 latency over
//! Streamable HTTP at several concurrency levels, then the private dirty memory each idle
//! session costs the daemon (Streamable HTTP, and legacy SSE with its stream open). With
//! `taskset` and two or more CPUs the daemon runs on CPU 0 and the generator on the others.
//! With `--compare-metrics` it runs two daemons instead, one with `HOOKS_MCP_METRICS=off`, and
//! measures each level in alternating rounds on both, so the cost of the metrics is read from
//! one run on the same machine state. Nothing here asserts a timing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::conformance::{Daemon, build_daemon};

/// Options of `cargo xtask bench-http`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Concurrent sessions per level, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32")]
    sessions: Vec<usize>,
    /// Calls measured per level (after a warm-up of 20 per session).
    #[arg(long, default_value_t = 20000)]
    calls: usize,
    /// Idle sessions opened for the memory measurement.
    #[arg(long, default_value_t = 200)]
    idle: usize,
    /// The tool called (it must take empty arguments).
    #[arg(long, default_value = "channel_list")]
    tool: String,
    /// Measure debug builds (quick to build; the numbers are not representative).
    #[arg(long)]
    debug: bool,
    /// Compare the daemon with metrics on and off (`HOOKS_MCP_METRICS`): two daemons, each
    /// level measured in `--rounds` alternating rounds on both; no memory measurement.
    #[arg(long)]
    compare_metrics: bool,
    /// Rounds per level and daemon with `--compare-metrics`.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.sessions.iter().all(|&s| (1..=256).contains(&s)),
        "--sessions: each level must be 1 to 256"
    );
    anyhow::ensure!(args.calls >= 1, "--calls: must be at least 1");
    anyhow::ensure!(args.idle <= 2000, "--idle: at most 2000");
    anyhow::ensure!((1..=50).contains(&args.rounds), "--rounds: must be 1 to 50");
    if cfg!(debug_assertions) && !args.debug {
        return rerun_optimised();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("no workspace root")?
        .to_path_buf();
    eprintln!("bench-http: building hooks-mcp-full...");
    let bin = build_daemon(&root, !args.debug)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pinned = cpus >= 2 && Command::new("taskset").arg("-V").output().is_ok();
    if args.compare_metrics {
        return compare_metrics(args, &bin, cpus, pinned);
    }
    let home = tempfile::tempdir()?;
    let max_sessions = (args.idle * 2 + 300).to_string();
    let daemon = Daemon::start_with(
        &bin,
        home.path(),
        &home.path().join("daemon.log"),
        &[
            ("HOOKS_MCP_MAX_SESSIONS", &max_sessions),
            ("HOOKS_MCP_LOG", "warn"),
        ],
        pinned.then_some("0"),
    )?;
    if pinned {
        let others = format!("1-{}", cpus - 1);
        let _ = Command::new("taskset")
            .args(["-a", "-p", "-c", &others, &std::process::id().to_string()])
            .output();
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], daemon.port));

    // Something for the tool to return.
    let mut setup = Conn::session(addr)?;
    for i in 0..20 {
        let args = json!({ "channel": format!("bench{}", i % 4), "message": "load" });
        setup.call(&tool_call(i, "channel_publish", args))?;
    }

    println!("## Streamable HTTP `tools/call` ({})\n", args.tool);
    println!(
        "{} build; daemon {}; {} calls per level.\n",
        if args.debug { "debug" } else { "release" },
        if pinned {
            format!("on CPU 0, load generator on CPU(s) 1-{}", cpus - 1)
        } else {
            "unpinned (taskset or a second CPU missing)".into()
        },
        args.calls
    );
    println!(
        "Daemon CPU per call is the daemon's user + system time over the level (from \
         /proc/PID/stat) divided by its calls: steadier than wall-clock figures on a shared \
         machine.\n"
    );
    println!("| sessions | calls/s | p50 (ms) | p99 (ms) | daemon CPU per call (µs) |");
    println!("|---:|---:|---:|---:|---:|");
    for &sessions in &args.sessions {
        let level = load(addr, daemon.pid(), sessions, args.calls, &args.tool)?;
        let per_call_us = level.cpu_ticks as f64 * 1e6 / TICKS_PER_SECOND / level.calls as f64;
        println!(
            "| {sessions} | {:.0} | {:.3} | {:.3} | {per_call_us:.1} |",
            level.throughput, level.p50_ms, level.p99_ms
        );
    }

    let mut daemon = daemon;
    daemon.stop()?;

    println!("\n## Memory per idle session\n");
    println!(
        "Private dirty memory (smaps_rollup) of a fresh daemon after 10 warm-up sessions, then \
         after {} more idle sessions; the difference divided by their number.\n",
        args.idle
    );
    println!("| transport | before (MiB) | after (MiB) | per session (KiB) |");
    println!("|---|---:|---:|---:|");
    let mut per_session = Vec::new();
    if args.idle > 0 {
        for kind in [Idle::Http, Idle::HttpWithGet, Idle::Subscribed, Idle::Sse] {
            // Written pages of a freshly built binary count as private dirty until synced.
            let _ = Command::new("sync").status();
            let home = tempfile::tempdir()?;
            let mut daemon = Daemon::start_with(
                &bin,
                home.path(),
                &home.path().join("daemon.log"),
                &[
                    ("HOOKS_MCP_MAX_SESSIONS", &max_sessions),
                    ("HOOKS_MCP_LOG", "warn"),
                ],
                pinned.then_some("0"),
            )?;
            let addr = SocketAddr::from(([127, 0, 0, 1], daemon.port));
            // Streamable HTTP sessions outlive their connections (they are not streams); a
            // session with its GET stream open, or a legacy SSE session (which lives as long as
            // its stream), keeps a connection, so those are kept open.
            let mut streams = Vec::new();
            let mut open = |n: usize| -> anyhow::Result<()> {
                for _ in 0..n {
                    match kind {
                        Idle::Http => drop(Conn::session(addr)?),
                        Idle::HttpWithGet => streams.push(Conn::session(addr)?.open_get()?),
                        Idle::Subscribed => {
                            let mut conn = Conn::session(addr)?;
                            let channel = format!("bench{}", streams.len() % 4);
                            let subscribe = json!({
                                "jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                                "params": { "uri": format!("hooks://channels/{channel}") }
                            });
                            let reply = conn.request("POST", &subscribe.to_string())?;
                            anyhow::ensure!(
                                reply.status == 200 && reply.body.contains("\"result\""),
                                "resources/subscribe: {} {}",
                                reply.status,
                                reply.body
                            );
                            streams.push(conn.open_get()?);
                        }
                        Idle::Sse => streams.push(open_sse_session(addr)?),
                    }
                }
                Ok(())
            };
            open(10)?;
            std::thread::sleep(Duration::from_millis(300));
            let before = private_dirty_kib(daemon.pid())?;
            open(args.idle)?;
            std::thread::sleep(Duration::from_millis(300));
            let after = private_dirty_kib(daemon.pid())?;
            per_session.push((kind, print_memory(kind.name(), before, after, args.idle)));
            drop(streams);
            daemon.stop()?;
        }
        let of = |wanted: Idle| {
            per_session
                .iter()
                .find(|(kind, _)| *kind == wanted)
                .map(|(_, kib)| *kib)
        };
        if let (Some(subscribed), Some(open)) = (of(Idle::Subscribed), of(Idle::HttpWithGet)) {
            println!(
                "\nA subscription (with the resource watcher running) adds {:.1} KiB to a \
                 session with its GET stream open.",
                subscribed - open
            );
        }
    }
    Ok(())
}

/// `--compare-metrics`: the same levels on a daemon with metrics and one without, in
/// alternating rounds (off, on, then on, off, ...), so that drift on a shared machine falls on
/// both alike.
fn compare_metrics(args: &Args, bin: &Path, cpus: usize, pinned: bool) -> anyhow::Result<()> {
    let mut daemons = Vec::new();
    let mut homes = Vec::new();
    for metrics in ["off", "on"] {
        let home = tempfile::tempdir()?;
        let daemon = Daemon::start_with(
            bin,
            home.path(),
            &home.path().join("daemon.log"),
            &[
                ("HOOKS_MCP_LOG", "warn"),
                ("HOOKS_MCP_MAX_SESSIONS", "600"),
                ("HOOKS_MCP_METRICS", metrics),
            ],
            pinned.then_some("0"),
        )?;
        let addr = SocketAddr::from(([127, 0, 0, 1], daemon.port));
        let mut setup = Conn::session(addr)?;
        for i in 0..20 {
            let args = json!({ "channel": format!("bench{}", i % 4), "message": "load" });
            setup.call(&tool_call(i, "channel_publish", args))?;
        }
        daemons.push(daemon);
        homes.push(home);
    }
    if pinned {
        let others = format!("1-{}", cpus - 1);
        let _ = Command::new("taskset")
            .args(["-a", "-p", "-c", &others, &std::process::id().to_string()])
            .output();
    }
    println!(
        "## Metrics on and off: Streamable HTTP `tools/call` ({})\n",
        args.tool
    );
    println!(
        "{} build; daemons {}; {} calls per round, {} alternating rounds per daemon and level; \
         medians, range in brackets.\n",
        if args.debug { "debug" } else { "release" },
        if pinned {
            format!(
                "on CPU 0 (one loaded at a time), load generator on CPU(s) 1-{}",
                cpus - 1
            )
        } else {
            "unpinned (taskset or a second CPU missing)".into()
        },
        args.calls,
        args.rounds
    );
    println!(
        "| sessions | off: calls/s | on: calls/s | on/off | off: CPU per call (µs) | on: CPU per \
         call (µs) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for &sessions in &args.sessions {
        // [off, on]: throughput and CPU per call of each round.
        let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut cpu: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for round in 0..args.rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for which in order {
                let daemon = &daemons[which];
                let addr = SocketAddr::from(([127, 0, 0, 1], daemon.port));
                let level = load(addr, daemon.pid(), sessions, args.calls, &args.tool)?;
                rates[which].push(level.throughput);
                cpu[which]
                    .push(level.cpu_ticks as f64 * 1e6 / TICKS_PER_SECOND / level.calls as f64);
            }
        }
        let [off, on] = [median_range(&rates[0]), median_range(&rates[1])];
        println!(
            "| {sessions} | {:.0} ({:.0}–{:.0}) | {:.0} ({:.0}–{:.0}) | {:.3} | {:.1} | {:.1} |",
            off.0,
            off.1,
            off.2,
            on.0,
            on.1,
            on.2,
            on.0 / off.0,
            median_range(&cpu[0]).0,
            median_range(&cpu[1]).0
        );
    }
    for mut daemon in daemons {
        daemon.stop()?;
    }
    drop(homes);
    Ok(())
}

/// Median, minimum and maximum of `values` (not empty).
fn median_range(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    (median, sorted[0], sorted[n - 1])
}

/// What an idle session keeps open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Idle {
    /// Nothing: a Streamable HTTP session between requests.
    Http,
    /// Its standalone GET stream, as clients that take server notifications keep.
    HttpWithGet,
    /// Its GET stream open and subscribed to a channel resource (one of four).
    Subscribed,
    /// Its legacy SSE stream (the session itself).
    Sse,
}

impl Idle {
    fn name(self) -> &'static str {
        match self {
            Idle::Http => "Streamable HTTP",
            Idle::HttpWithGet => "Streamable HTTP (GET stream open)",
            Idle::Subscribed => "Streamable HTTP (GET stream open, subscribed)",
            Idle::Sse => "legacy SSE (stream open)",
        }
    }
}

/// Prints a memory row; returns the KiB per session.
fn print_memory(name: &str, before: u64, after: u64, sessions: usize) -> f64 {
    let per = after.saturating_sub(before) as f64 / sessions as f64;
    println!(
        "| {name} | {:.2} | {:.2} | {per:.1} |",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    per
}

/// Builds the release xtask and runs this same command with it, so the load generator is not
/// the bottleneck.
pub(crate) fn rerun_optimised() -> anyhow::Result<()> {
    eprintln!("bench-http: building the optimised xtask (cargo build --release -p xtask)...");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--release", "-p", "xtask"])
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build --release -p xtask failed ({status})");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .map(|p| p.join("target"))
                .unwrap_or_else(|| "target".into())
        });
    let exe = target.join("release/xtask");
    let status = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .status()
        .with_context(|| format!("running {}", exe.display()))?;
    if !status.success() {
        bail!("the optimised benchmark run failed ({status})");
    }
    Ok(())
}

pub(crate) fn private_dirty_kib(pid: u32) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .context("reading the daemon's smaps_rollup (Linux only)")?;
    text.lines()
        .find_map(|l| l.strip_prefix("Private_Dirty:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no Private_Dirty line in smaps_rollup")
}

/// Clock ticks per second of /proc/PID/stat's times (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// User + system CPU time of every thread of `pid` so far, in clock ticks.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .context("reading the daemon's /proc/PID/stat (Linux only)")?;
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = text
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("malformed /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> anyhow::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|v| v.parse().ok())
            .context("malformed /proc/PID/stat")
    };
    Ok(field(14)? + field(15)?)
}

/// One concurrency level's results.
struct Level {
    calls: usize,
    /// Daemon CPU time over the measured calls (after the warm-up), in clock ticks.
    cpu_ticks: u64,
    throughput: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn load(
    addr: SocketAddr,
    pid: u32,
    sessions: usize,
    calls: usize,
    tool: &str,
) -> anyhow::Result<Level> {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(sessions + 1));
    let mut workers = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let next = next.clone();
        let start = start.clone();
        let tool = tool.to_owned();
        workers.push(std::thread::spawn(
            move || -> anyhow::Result<Vec<Duration>> {
                let ready = Conn::session(addr).and_then(|mut conn| {
                    for i in 0..20 {
                        conn.call(&tool_call(i, &tool, json!({})))?;
                    }
                    Ok(conn)
                });
                start.wait();
                let mut conn = ready?;
                let mut samples = Vec::new();
                let mut id = 100;
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    id += 1;
                    let body = tool_call(id, &tool, json!({}));
                    let began = Instant::now();
                    conn.call(&body)?;
                    samples.push(began.elapsed());
                }
                conn.request("DELETE", "")?;
                Ok(samples)
            },
        ));
    }
    start.wait();
    let began = Instant::now();
    let cpu_before = cpu_ticks(pid)?;
    let mut samples = Vec::with_capacity(calls);
    for worker in workers {
        let done = worker
            .join()
            .map_err(|_| anyhow::anyhow!("a load thread panicked"))??;
        samples.extend(done);
    }
    let wall = began.elapsed();
    let cpu_ticks = cpu_ticks(pid)?.saturating_sub(cpu_before);
    samples.sort_unstable();
    let rank = |p: f64| {
        let i = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
        samples[i].as_secs_f64() * 1000.0
    };
    Ok(Level {
        calls: samples.len(),
        cpu_ticks,
        throughput: samples.len() as f64 / wall.as_secs_f64(),
        p50_ms: rank(0.50),
        p99_ms: rank(0.99),
    })
}

pub(crate) fn tool_call(id: usize, tool: &str, arguments: serde_json::Value) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": tool, "arguments": arguments }
    })
    .to_string()
}

/// A keep-alive HTTP/1.1 connection to `/mcp`, in one session.
pub(crate) struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    addr: SocketAddr,
    /// The `Mcp-Session-Id` sent with each request (none while empty).
    pub(crate) session: String,
}

/// A response: status, session header and body (de-chunked).
pub(crate) struct Reply {
    /// The HTTP status code.
    pub(crate) status: u16,
    /// The `Mcp-Session-Id` header, if any.
    pub(crate) session: Option<String>,
    /// The body, de-chunked.
    pub(crate) body: String,
    /// The `app` duration of a `Server-Timing` header, in milliseconds, if any.
    pub(crate) server_ms: Option<f64>,
}

/// The server closed the connection before answering a request (an idle keep-alive
/// connection it had already given up): the request was not read, so it can be sent again on a
/// new connection.
#[derive(Debug)]
pub(crate) struct ClosedBeforeReply;

impl std::fmt::Display for ClosedBeforeReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the server closed the connection before answering")
    }
}

impl std::error::Error for ClosedBeforeReply {}

impl Conn {
    /// A new connection without a session.
    pub(crate) fn connect(addr: SocketAddr) -> anyhow::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            addr,
            session: String::new(),
        })
    }

    /// Connects and opens a session (initialize, initialized).
    pub(crate) fn session(addr: SocketAddr) -> anyhow::Result<Conn> {
        let mut conn = Conn::connect(addr)?;
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "bench-http", "version": "1" }
            }
        });
        let reply = conn.request("POST", &init.to_string())?;
        anyhow::ensure!(
            reply.status == 200,
            "initialize: {} {}",
            reply.status,
            reply.body
        );
        conn.session = reply.session.context("initialize: no Mcp-Session-Id")?;
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let reply = conn.request("POST", &initialized.to_string())?;
        anyhow::ensure!(reply.status == 202, "initialized: {}", reply.status);
        Ok(conn)
    }

    /// Opens the session's standalone GET stream on this connection and keeps it.
    pub(crate) fn open_get(mut self) -> anyhow::Result<TcpStream> {
        let head = format!(
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {}\r\n\r\n",
            self.addr, self.session
        );
        self.writer.write_all(head.as_bytes())?;
        let mut line = String::new();
        self.reader.read_line(&mut line)?;
        anyhow::ensure!(line.contains(" 200 "), "GET /mcp: {line}");
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            if line.trim_end().is_empty() {
                break;
            }
        }
        Ok(self.writer)
    }

    /// One `tools/call`; fails on anything but a successful result.
    fn call(&mut self, body: &str) -> anyhow::Result<()> {
        let reply = self.request("POST", body)?;
        anyhow::ensure!(
            reply.status == 200
                && reply.body.contains("\"result\"")
                && !reply.body.contains("\"isError\":true"),
            "tools/call failed: {} {}",
            reply.status,
            reply.body
        );
        Ok(())
    }

    /// Replaces the connection with a new one to the same address, in the same session.
    pub(crate) fn reconnect(&mut self) -> anyhow::Result<()> {
        let session = std::mem::take(&mut self.session);
        *self = Conn::connect(self.addr)?;
        self.session = session;
        Ok(())
    }

    /// Sends a request to `/mcp` and reads its reply.
    pub(crate) fn request(&mut self, method: &str, body: &str) -> anyhow::Result<Reply> {
        self.request_at(method, "/mcp", body)
    }

    /// Sends a request to `path` and reads its reply.
    ///
    /// # Errors
    /// [`ClosedBeforeReply`] when the connection was closed (or reset) before any byte of the
    /// reply; any other I/O or HTTP framing error.
    pub(crate) fn request_at(
        &mut self,
        method: &str,
        path: &str,
        body: &str,
    ) -> anyhow::Result<Reply> {
        self.send_at(method, path, body)?;
        self.read_reply()
    }

    /// Writes a request to `path` without reading its reply.
    pub(crate) fn send_at(&mut self, method: &str, path: &str, body: &str) -> anyhow::Result<()> {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n",
            self.addr
        );
        if !self.session.is_empty() {
            head.push_str(&format!("Mcp-Session-Id: {}\r\n", self.session));
        }
        if method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        head.push_str(body);
        match self.writer.write_all(head.as_bytes()) {
            Err(e) if closed(&e) => Err(ClosedBeforeReply.into()),
            other => Ok(other?),
        }
    }

    /// Reads one reply.
    pub(crate) fn read_reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => return Err(ClosedBeforeReply.into()),
            Err(e) if closed(&e) => return Err(ClosedBeforeReply.into()),
            other => other?,
        };
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("not an HTTP status line: {line:?}"))?;
        let (mut length, mut chunked, mut session, mut server_ms) = (None, false, None, None);
        loop {
            line.clear();
            self.reader.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let value = value.trim();
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse::<usize>().ok(),
                    "transfer-encoding" => chunked = value.contains("chunked"),
                    "mcp-session-id" => session = Some(value.to_owned()),
                    "server-timing" => {
                        server_ms = value
                            .split_once("dur=")
                            .and_then(|(_, d)| d.split([',', ';']).next()?.trim().parse().ok());
                    }
                    _ => {}
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .with_context(|| format!("bad chunk size {line:?}"))?;
                if size == 0 {
                    line.clear();
                    self.reader.read_line(&mut line)?;
                    break;
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.reader.read_exact(&mut body[start..])?;
                let mut crlf = [0u8; 2];
                self.reader.read_exact(&mut crlf)?;
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            self.reader.read_exact(&mut body)?;
        }
        Ok(Reply {
            status,
            session,
            body: String::from_utf8_lossy(&body).into_owned(),
            server_ms,
        })
    }
}

/// Whether an I/O error means the peer closed or reset the connection.
fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
    )
}

/// Opens a legacy SSE session and completes its handshake; the session lives as long as the
/// returned stream.
fn open_sse_session(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "GET /sse HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
    )?;
    let mut seen = String::new();
    let mut buf = [0u8; 1024];
    while !seen.contains("sessionId=")
        || !seen[seen.find("sessionId=").unwrap_or(0)..].contains('\n')
    {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            bail!("the SSE stream closed before announcing its endpoint: {seen}");
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let endpoint = seen
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .context("no endpoint event")?
        .trim()
        .to_owned();
    let init = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": { "name": "bench-http", "version": "1" }
        }
    });
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    for message in [init, initialized] {
        let body = message.to_string();
        let mut post = TcpStream::connect(addr)?;
        write!(
            post,
            "POST {endpoint} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut reply = String::new();
        post.read_to_string(&mut reply)?;
        anyhow::ensure!(reply.contains(" 202 "), "POST {endpoint}: {reply}");
    }
    Ok(stream)
}
