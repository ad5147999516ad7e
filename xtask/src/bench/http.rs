//! `cargo xtask bench http`: the network daemon under load, printed as markdown tables.
//!
//! A bounded load generator (one thread and one keep-alive connection per client, a fixed
//! number of calls per level) measures `tools/call` throughput and p50/p99 latency over
//! Streamable HTTP at several concurrency levels, then the private dirty memory each idle
//! session costs the daemon (Streamable HTTP, and legacy SSE with its stream open), and how
//! often a daemon with no client wakes. With `taskset` and two or more CPUs the daemon runs on
//! CPU 0 and the generator on the others.
//!
//! The stateless section (alone with `--only-stateless`) runs two daemons, one with
//! `HOOKS_MCP_FAST_CALLS=off`, and measures in rotating rounds at each level: 2026-07-28
//! stateless calls on the daemon's fast path, the same calls served by rmcp's own stateless
//! mode, and legacy session calls (`initialize`, then `Mcp-Session-Id`), with the ratio of the
//! first two; beside them a floor (`floor-http` answering with the fast path's reply, canned)
//! and two partial requests (an unknown path, a call whose arguments the tool refuses), which
//! split one client's round trip into the HTTP server, the call's handling and the tool.
//!
//! With `--compare-metrics` it runs a daemon with `HOOKS_MCP_METRICS=off` beside one with
//! metrics instead, in alternating rounds, so the cost of the metrics is read from one run on
//! the same machine state. Nothing here asserts a timing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::util::cargo::{self, Profile};
use crate::util::daemon::{Daemon, pinned_command};
use crate::util::http::{Conn, tool_call};
use crate::util::procfs::{self, TICKS_PER_SECOND, cpu_ticks, private_dirty_kib};

/// Why processes run unpinned: asked for, or `taskset` or a second CPU missing.
fn unpinned_why(args: &Args) -> &'static str {
    if args.unpinned {
        "unpinned (`--unpinned`: where the kernel puts them)"
    } else {
        "unpinned (taskset or a second CPU missing)"
    }
}

/// Options of `cargo xtask bench http`.
#[derive(Debug, Clone, clap::Args)]
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
    pub(super) debug: bool,
    /// Compare the daemon with metrics on and off (`HOOKS_MCP_METRICS`): two daemons, each
    /// level measured in `--rounds` alternating rounds on both; no memory measurement.
    #[arg(long)]
    compare_metrics: bool,
    /// Rounds per level and daemon with `--compare-metrics`, and per level and path in the
    /// stateless section.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Run only the stateless section: the fast path, rmcp's stateless mode, legacy sessions,
    /// the floor and the two partial requests, in rotating rounds.
    #[arg(long)]
    only_stateless: bool,
    /// Leave every process where the kernel puts it, as deployed, instead of the daemon on
    /// CPU 0 and the load generator on the others: with one client, whether a round trip
    /// crosses CPUs (two wake-ups of an idle CPU) then depends on the scheduler, not on the
    /// benchmark.
    #[arg(long)]
    unpinned: bool,
    /// Use the binaries as built (`target/release/hooks-mcp-full`, and `floor-http` for the
    /// stateless section; the debug ones with `--debug` or `--smoke`) instead of building them.
    #[arg(long)]
    skip_build: bool,
    /// Smoke run: levels of 1 and 2 sessions, a few calls and idle sessions, one round, a
    /// debug daemon; every path runs, the figures mean nothing.
    #[arg(long)]
    pub(super) smoke: bool,
}

impl Args {
    /// These options, or the smallest sizes for a smoke run.
    fn sized(&self) -> Args {
        if !self.smoke {
            return self.clone();
        }
        Args {
            sessions: vec![1, 2],
            calls: 40,
            idle: 4,
            debug: true,
            rounds: 1,
            ..self.clone()
        }
    }
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized();
    anyhow::ensure!(
        args.sessions.iter().all(|&s| (1..=256).contains(&s)),
        "--sessions: each level must be 1 to 256"
    );
    anyhow::ensure!(args.calls >= 1, "--calls: must be at least 1");
    anyhow::ensure!(args.idle <= 2000, "--idle: at most 2000");
    anyhow::ensure!((1..=50).contains(&args.rounds), "--rounds: must be 1 to 50");
    let profile = Profile::debug_if(args.debug);
    let bin = if args.skip_build {
        cargo::built_bin(profile, "hooks-mcp-full")?
    } else {
        cargo::build_daemon(profile)?
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pinned = !args.unpinned && cpus >= 2 && Command::new("taskset").arg("-V").output().is_ok();
    if args.only_stateless {
        return stateless(args, profile, &bin, cpus, pinned);
    }
    // A smoke run takes every path: metrics on against off, the stateless section, then the
    // plain levels and memory.
    if args.compare_metrics || args.smoke {
        compare_metrics(args, &bin, cpus, pinned)?;
        if !args.smoke {
            return Ok(());
        }
    }
    stateless(args, profile, &bin, cpus, pinned)?;
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
        pin_generator(cpus);
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
            unpinned_why(args).into()
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
        let level = load(
            addr,
            daemon.pid(),
            sessions,
            args.calls,
            &args.tool,
            Client::Session,
            None,
        )?;
        let per_call_us = level.cpu_per_call_us();
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
            if !args.smoke {
                procfs::write_back_page_cache();
            }
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
    idle_wakeups(&bin, pinned, args.smoke)
}

/// How often a daemon with no client wakes: the context switches of all its threads over a
/// quiet time, counted once start-up has settled (the scheduler's first looks done).
fn idle_wakeups(bin: &Path, pinned: bool, smoke: bool) -> anyhow::Result<()> {
    let (settle, window) = if smoke { (1, 1) } else { (12, 30) };
    let home = tempfile::tempdir()?;
    let mut daemon = Daemon::start_with(
        bin,
        home.path(),
        &home.path().join("daemon.log"),
        &[("HOOKS_MCP_LOG", "warn")],
        pinned.then_some("0"),
    )?;
    std::thread::sleep(Duration::from_secs(settle));
    let before = procfs::context_switches(daemon.pid())?;
    std::thread::sleep(Duration::from_secs(window));
    let after = procfs::context_switches(daemon.pid())?;
    daemon.stop()?;
    let woke = after.saturating_sub(before);
    println!("\n## An idle daemon's wake-ups\n");
    println!(
        "A fresh daemon on SQLite, no client, {settle} s after start-up: the context switches \
         of all its threads (each a wake-up or a preemption) over {window} s.\n"
    );
    println!("| wake-ups | per second |");
    println!("|---:|---:|");
    println!("| {woke} | {:.2} |", woke as f64 / window as f64);
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
        pin_generator(cpus);
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
            unpinned_why(args).into()
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
                let level = load(
                    addr,
                    daemon.pid(),
                    sessions,
                    args.calls,
                    &args.tool,
                    Client::Session,
                    None,
                )?;
                rates[which].push(level.throughput);
                cpu[which].push(level.cpu_per_call_us());
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

/// The ways of calling a tool the stateless section compares, and its floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// 2026-07-28 stateless calls, answered on the daemon's fast path.
    Fast,
    /// The same calls to a daemon with `HOOKS_MCP_FAST_CALLS=off`: rmcp's stateless mode.
    Rmcp,
    /// Legacy session calls (`initialize`, `Mcp-Session-Id`) to the fast path's daemon.
    Session,
    /// The stateless calls to `floor-http`, which answers with the fast path's reply, canned.
    Floor,
    /// The same requests to a path nothing serves, on the fast path's daemon: past the gate's
    /// checks, its router answers 404.
    Unrouted,
    /// The stateless calls with an argument the tool does not take: the fast path answers
    /// them in-band (`isError`) without reading the store.
    Refused,
}

impl Way {
    const ALL: [Way; 6] = [
        Way::Fast,
        Way::Rmcp,
        Way::Session,
        Way::Floor,
        Way::Unrouted,
        Way::Refused,
    ];

    fn name(self) -> &'static str {
        match self {
            Way::Fast => "stateless, hooks-mcp fast path",
            Way::Rmcp => "stateless, rmcp's own",
            Way::Session => "legacy session",
            Way::Floor => "floor: canned reply (std only)",
            Way::Unrouted => "fast path's daemon, unknown path (404 past the gate)",
            Way::Refused => "fast path, arguments refused (no store read)",
        }
    }

    fn client(self) -> Client {
        match self {
            Way::Session => Client::Session,
            _ => Client::Stateless,
        }
    }

    fn shape(self) -> Shape {
        match self {
            Way::Unrouted => Shape::Unrouted,
            Way::Refused => Shape::Refused,
            _ => Shape::Call,
        }
    }
}

/// What a [`Lean`] connection sends, and the answer it expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The call of the tool with empty arguments: its result.
    Call,
    /// The same call with an argument the tool does not take: refused in-band (`isError`).
    Refused,
    /// The same request to a path nothing serves: 404.
    Unrouted,
}

/// Where a virtual machine's guest kernel says how long an idle CPU polls before it halts.
const GUEST_HALT_POLL: &str = "/sys/module/haltpoll/parameters/guest_halt_poll_ns";

/// What this machine's idle CPUs do, when it says (a virtual machine's guest with the
/// `haltpoll` idle driver): with one client, every call wakes the daemon's CPU and then the
/// load generator's, and a CPU that halted at once is woken by an interrupt through the
/// hypervisor, which the waking process pays for. See docs/benchmarks.md.
fn idle_polling() -> Option<String> {
    let ns: u64 = std::fs::read_to_string(GUEST_HALT_POLL)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(if ns == 0 {
        "Idle CPUs on this machine halt at once (`haltpoll.guest_halt_poll_ns=0`): each \
         wake-up of the other CPU is an interrupt through the hypervisor, paid by the process \
         that wakes it. One client's figures depend on it (docs/benchmarks.md)."
            .to_owned()
    } else {
        format!(
            "Idle CPUs on this machine poll for up to {} µs before they halt \
             (`haltpoll.guest_halt_poll_ns={ns}`): a CPU woken within it takes no interrupt.",
            ns / 1000
        )
    })
}

/// The floor's binary name in bench-floor.
const FLOOR_BIN: &str = "floor-http";

/// Pins this process (the load generator, every thread) to the CPUs after the first, which
/// the daemons keep.
fn pin_generator(cpus: usize) {
    let others = format!("1-{}", cpus - 1);
    let _ = Command::new("taskset")
        .args(["-a", "-p", "-c", &others, &std::process::id().to_string()])
        .output();
}

/// A running `floor-http`, stopped when dropped (it also exits when its stdin closes).
struct Floor {
    child: std::process::Child,
    addr: SocketAddr,
}

impl Floor {
    /// Starts `bin` answering with the response in `reply` (on the CPUs `cpus` names, when
    /// some), and waits for its address (its first line, printed before it accepts; it reads
    /// nothing from us first, so the wait ends with that line or with its exit).
    fn start(bin: &Path, reply: &Path, cpus: Option<&str>) -> anyhow::Result<Floor> {
        let mut child = pinned_command(bin, cpus)
            .arg(reply)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let read = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse::<SocketAddr>().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let status = child.wait();
            bail!(
                "{} did not print its address (it printed {line:?}, read: {read:?}, exit: \
                 {status:?}); its own error, if any, is above",
                bin.display()
            );
        };
        Ok(Floor { child, addr })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stateless section: at each level, rounds that rotate among the [`Way`]s (each
/// round starts with the next), so that drift on a shared machine falls on all alike.
fn stateless(
    args: &Args,
    profile: Profile,
    bin: &Path,
    cpus: usize,
    pinned: bool,
) -> anyhow::Result<()> {
    let floor_bin = if args.skip_build {
        cargo::built_bin(profile, FLOOR_BIN)?
    } else {
        cargo::build(profile, &["-p", "bench-floor", "--bin", FLOOR_BIN])?;
        profile.bin(FLOOR_BIN)
    };
    let mut daemons = Vec::new();
    let mut homes = Vec::new();
    for fast in ["on", "off"] {
        let home = tempfile::tempdir()?;
        let daemon = Daemon::start_with(
            bin,
            home.path(),
            &home.path().join("daemon.log"),
            &[
                ("HOOKS_MCP_LOG", "warn"),
                ("HOOKS_MCP_MAX_SESSIONS", "600"),
                ("HOOKS_MCP_FAST_CALLS", fast),
            ],
            pinned.then_some("0"),
        )?;
        let mut setup = Conn::session(daemon.addr())?;
        for i in 0..20 {
            let args = json!({ "channel": format!("bench{}", i % 4), "message": "load" });
            setup.call(&tool_call(i, "channel_publish", args))?;
        }
        daemons.push(daemon);
        homes.push(home);
    }
    // The floor answers with the fast path's own reply to the same call, byte for byte.
    let mut probe = Lean::open(
        daemons[0].addr(),
        Client::Stateless,
        &args.tool,
        Shape::Call,
    )?;
    probe.call(1)?;
    let canned = homes[0].path().join("floor-reply.http");
    std::fs::write(&canned, &probe.reply)?;
    drop(probe);
    let floor_server = Floor::start(&floor_bin, &canned, pinned.then_some("0"))?;
    if pinned {
        pin_generator(cpus);
    }
    println!(
        "\n## Stateless 2026-07-28 `tools/call` ({}): fast path, rmcp's stateless mode, legacy \
         sessions, floor\n",
        args.tool
    );
    println!(
        "{} build; two daemons {}, one with `HOOKS_MCP_FAST_CALLS=off` (rmcp serves its \
         stateless requests); {} calls per round, {} rounds per level and path, each round \
         starting with the next path; medians, range in brackets. Legacy sessions run on the \
         fast path's daemon. The floor is `floor-http`, a std-only server {} that answers \
         every request with the fast path's reply, canned: the round trip any server pays \
         here.\n",
        if args.debug { "debug" } else { "release" },
        if pinned {
            format!(
                "on CPU 0 (one loaded at a time), load generator on CPU(s) 1-{}",
                cpus - 1
            )
        } else {
            unpinned_why(args).into()
        },
        args.calls,
        args.rounds,
        if pinned {
            "on the daemons' CPU"
        } else {
            "placed as they are"
        },
    );
    if let Some(idle) = idle_polling() {
        println!("{idle}\n");
    }
    println!("| clients | path | calls/s | p50 (ms) | p99 (ms) | daemon CPU per call (µs) |");
    println!("|---:|---|---:|---:|---:|---:|");
    let mut ratios = Vec::new();
    for &clients in &args.sessions {
        let mut levels: [Vec<Level>; 6] = Default::default();
        for round in 0..args.rounds {
            for step in 0..Way::ALL.len() {
                let which = (round + step) % Way::ALL.len();
                let way = Way::ALL[which];
                let (addr, pid) = match way {
                    Way::Fast | Way::Session | Way::Unrouted | Way::Refused => {
                        (daemons[0].addr(), daemons[0].pid())
                    }
                    Way::Rmcp => (daemons[1].addr(), daemons[1].pid()),
                    Way::Floor => (floor_server.addr, floor_server.pid()),
                };
                let level = load(
                    addr,
                    pid,
                    clients,
                    args.calls,
                    &args.tool,
                    way.client(),
                    Some(way.shape()),
                )?;
                levels[which].push(level);
            }
        }
        for (which, way) in Way::ALL.iter().enumerate() {
            let rounds = &levels[which];
            let rate = stat(rounds, |l| l.throughput);
            let p99 = stat(rounds, |l| l.p99_ms);
            println!(
                "| {clients} | {} | {:.0} ({:.0}–{:.0}) | {:.3} | {:.3} ({:.3}–{:.3}) | {:.1} |",
                way.name(),
                rate.0,
                rate.1,
                rate.2,
                stat(rounds, |l| l.p50_ms).0,
                p99.0,
                p99.1,
                p99.2,
                stat(rounds, Level::cpu_per_call_us).0,
            );
        }
        let [fast, rmcp, session, floor, unrouted, refused] = &levels;
        // Round by round, the fast path against rmcp's stateless mode.
        let paired: Vec<f64> = fast
            .iter()
            .zip(rmcp)
            .map(|(fast, rmcp)| fast.throughput / rmcp.throughput)
            .collect();
        let median = |rounds: &[Level], f: fn(&Level) -> f64| stat(rounds, f).0;
        ratios.push(Ratios {
            clients,
            rate: median(fast, |l| l.throughput) / median(rmcp, |l| l.throughput),
            paired: median_range(&paired),
            p99: median(rmcp, |l| l.p99_ms) / median(fast, |l| l.p99_ms),
            cpu: median(rmcp, Level::cpu_per_call_us) / median(fast, Level::cpu_per_call_us),
            session: median(fast, |l| l.throughput) / median(session, |l| l.throughput),
            mean_us: [fast, rmcp, floor, unrouted, refused]
                .map(|way| Level::per_call_us(median(way, |l| l.throughput), clients)),
        });
    }
    println!(
        "\n| clients | fast/rmcp calls/s | paired by round | rmcp/fast p99 | rmcp/fast CPU per \
         call | fast/session calls/s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|");
    for r in &ratios {
        println!(
            "| {} | {:.2}× | {:.2}× ({:.2}–{:.2}) | {:.2}× | {:.2}× | {:.2}× |",
            r.clients, r.rate, r.paired.0, r.paired.1, r.paired.2, r.p99, r.cpu, r.session
        );
    }
    if let Some(r) = ratios.iter().find(|r| r.clients == 1) {
        let [fast, rmcp, floor, unrouted, refused] = r.mean_us;
        let tool = fast - refused;
        println!(
            "\nOne client's round trip, split (mean times per call, the inverse of calls/s, in \
             µs): the floor's; the HTTP server and the gate (the unknown path's 404 less the \
             floor); the call's own handling (the refused call less the 404: body, envelope, \
             dispatch, reply); the tool with its store read (the call less the refused one); \
             what twice rmcp's throughput allows above the floor (half rmcp's time less the \
             floor's); rmcp's own work beyond the floor and the tool; and the ceiling, the most \
             any fast path could reach against rmcp here (one costing nothing of its own, its \
             round trip the floor's plus the tool's: rmcp's time over that sum).\n"
        );
        println!("| one client | µs |");
        println!("|---|---:|");
        for (what, value) in [
            ("floor's round trip", floor),
            ("HTTP server and gate", unrouted - floor),
            ("the call's handling", refused - unrouted),
            ("the tool and its store read", tool),
            ("fast path above the floor, in all", fast - floor),
            ("what 2× rmcp allows above the floor", rmcp / 2.0 - floor),
            (
                "rmcp's own work beyond the floor and the tool",
                rmcp - floor - tool,
            ),
        ] {
            println!("| {what} | {value:.1} |");
        }
        println!("| ceiling against rmcp | {:.2}× |", rmcp / (floor + tool));
    }
    println!();
    drop(floor_server);
    for mut daemon in daemons {
        daemon.stop()?;
    }
    drop(homes);
    Ok(())
}

/// One level's comparison: the fast path's throughput over rmcp's (of the medians, and of
/// each round's pair), rmcp's p99 and CPU per call over the fast path's, the fast path's
/// throughput over the legacy session path's, and the fast path's time per call against the
/// floor's.
struct Ratios {
    clients: usize,
    rate: f64,
    paired: (f64, f64, f64),
    p99: f64,
    cpu: f64,
    session: f64,
    /// Mean time per call (clients over calls/s, of the medians), in microseconds: the fast
    /// path, rmcp, the floor, the unrouted requests and the refused calls.
    mean_us: [f64; 5],
}

/// Median, minimum and maximum of one figure over `rounds`.
fn stat(rounds: &[Level], figure: fn(&Level) -> f64) -> (f64, f64, f64) {
    median_range(&rounds.iter().map(figure).collect::<Vec<_>>())
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

/// How a load thread calls the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// In a legacy session: `initialize` first, then `Mcp-Session-Id` on every call, `DELETE`
    /// at the end.
    Session,
    /// 2026-07-28 requests without a session: the revision in each call's `_meta`, the
    /// standard headers on each POST.
    Stateless,
}

impl Client {
    /// A keep-alive connection ready for calls of `tool`.
    fn connect(self, addr: SocketAddr, tool: &str) -> anyhow::Result<Conn> {
        match self {
            Client::Session => Conn::session(addr),
            Client::Stateless => Ok(Conn::connect(addr)?.with_headers(&[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", tool),
            ])),
        }
    }

    /// The body of call `id` of `tool` (empty arguments).
    fn body(self, id: usize, tool: &str) -> String {
        match self {
            Client::Session => tool_call(id, tool, json!({})),
            Client::Stateless => format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{}}}",
                self.params(tool)
            ),
        }
    }

    /// The `params` of a call of `tool` (empty arguments).
    fn params(self, tool: &str) -> serde_json::Value {
        match self {
            Client::Session => json!({ "name": tool, "arguments": {} }),
            Client::Stateless => json!({
                "name": tool,
                "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            }),
        }
    }

    /// The headers of a call of `tool`, after `Host`, `Accept` and `Content-Type`.
    fn headers(self, tool: &str) -> Vec<(&'static str, String)> {
        match self {
            Client::Session => Vec::new(),
            Client::Stateless => vec![
                ("MCP-Protocol-Version", MODERN.to_owned()),
                ("Mcp-Method", "tools/call".to_owned()),
                ("Mcp-Name", tool.to_owned()),
            ],
        }
    }
}

/// What a load thread calls through: the general client ([`Conn`]), or [`Lean`].
trait Caller {
    /// Call number `id`; fails on anything but a successful result.
    fn call(&mut self, id: usize) -> anyhow::Result<()>;
    /// Ends the client's session, if it has one.
    fn finish(&mut self) -> anyhow::Result<()>;
}

/// [`Conn`] calling one tool as a [`Client`] does.
struct General {
    conn: Conn,
    client: Client,
    tool: String,
}

impl Caller for General {
    fn call(&mut self, id: usize) -> anyhow::Result<()> {
        self.conn.call(&self.client.body(id, &self.tool))
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        if self.client == Client::Session {
            self.conn.request("DELETE", "")?;
        }
        Ok(())
    }
}

/// A keep-alive connection that sends one prepared request over and over (only the JSON-RPC
/// id changes) and reads every reply into the same buffers, so that the load generator's own
/// work per call stays small beside the daemon's: with two CPUs, one for the daemon and one
/// for the generator, the general client's allocations and header parsing would otherwise
/// bound the fastest path's throughput at 32 clients.
struct Lean {
    stream: TcpStream,
    /// The request up to the value of `Content-Length`.
    head: Vec<u8>,
    /// The body before and after the id.
    before_id: Vec<u8>,
    after_id: Vec<u8>,
    /// The session, for `DELETE` at the end.
    session: Option<String>,
    addr: SocketAddr,
    shape: Shape,
    request: Vec<u8>,
    reply: Vec<u8>,
    body: Vec<u8>,
}

impl Lean {
    /// Connects (in a new session first, for [`Client::Session`]) and prepares requests of
    /// `shape` calling `tool`.
    fn open(addr: SocketAddr, client: Client, tool: &str, shape: Shape) -> anyhow::Result<Lean> {
        let session = match client {
            Client::Session => Some(Conn::session(addr)?.session.clone()),
            Client::Stateless => None,
        };
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        let path = match shape {
            Shape::Call | Shape::Refused => "/mcp",
            Shape::Unrouted => "/nowhere",
        };
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, \
             text/event-stream\r\nContent-Type: application/json\r\n"
        );
        if let Some(session) = &session {
            head.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        for (name, value) in client.headers(tool) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("Content-Length: ");
        let mut params = client.params(tool);
        if shape == Shape::Refused {
            params["arguments"] = json!({ "not_an_argument": true });
        }
        let after_id = format!(",\"method\":\"tools/call\",\"params\":{params}}}");
        Ok(Lean {
            stream,
            head: head.into_bytes(),
            before_id: b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec(),
            after_id: after_id.into_bytes(),
            session,
            addr,
            shape,
            request: Vec::with_capacity(1024),
            reply: Vec::with_capacity(4096),
            body: Vec::with_capacity(4096),
        })
    }

    /// Reads one reply; its status (the body, de-chunked, in `self.body`).
    fn read_reply(&mut self) -> anyhow::Result<u16> {
        self.reply.clear();
        self.body.clear();
        let head_end = loop {
            if let Some(at) = find(&self.reply, b"\r\n\r\n") {
                break at + 4;
            }
            self.fill()?;
        };
        let head = &self.reply[..head_end];
        let status = std::str::from_utf8(head.get(9..12).unwrap_or_default())
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .with_context(|| format!("no status in {:?}", String::from_utf8_lossy(head)))?;
        let lower = head.to_ascii_lowercase();
        if let Some(at) = find(&lower, b"\r\ncontent-length:") {
            let rest = &lower[at + 17..];
            let line = &rest[..find(rest, b"\r\n").unwrap_or(rest.len())];
            let length: usize = std::str::from_utf8(line)?.trim().parse()?;
            while self.reply.len() < head_end + length {
                self.fill()?;
            }
            self.body
                .extend_from_slice(&self.reply[head_end..head_end + length]);
        } else if find(&lower, b"\r\ntransfer-encoding: chunked").is_some() {
            let mut at = head_end;
            loop {
                let Some(eol) = find(&self.reply[at..], b"\r\n") else {
                    self.fill()?;
                    continue;
                };
                let size_text = std::str::from_utf8(&self.reply[at..at + eol])?;
                let size =
                    usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                        .with_context(|| format!("bad chunk size {size_text:?}"))?;
                let start = at + eol + 2;
                while self.reply.len() < start + size + 2 {
                    self.fill()?;
                }
                if size == 0 {
                    break;
                }
                self.body
                    .extend_from_slice(&self.reply[start..start + size]);
                at = start + size + 2;
            }
        }
        Ok(status)
    }

    /// Reads more of the reply.
    fn fill(&mut self) -> anyhow::Result<()> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk)?;
        anyhow::ensure!(n > 0, "the daemon closed the connection mid-reply");
        self.reply.extend_from_slice(&chunk[..n]);
        Ok(())
    }
}

impl Caller for Lean {
    fn call(&mut self, id: usize) -> anyhow::Result<()> {
        let digits = id.to_string();
        let length = self.before_id.len() + digits.len() + self.after_id.len();
        self.request.clear();
        self.request.extend_from_slice(&self.head);
        self.request
            .extend_from_slice(length.to_string().as_bytes());
        self.request.extend_from_slice(b"\r\n\r\n");
        self.request.extend_from_slice(&self.before_id);
        self.request.extend_from_slice(digits.as_bytes());
        self.request.extend_from_slice(&self.after_id);
        self.stream.write_all(&self.request)?;
        let status = self.read_reply()?;
        let expected = match self.shape {
            Shape::Call | Shape::Refused => {
                status == 200
                    && find(&self.body, b"\"result\"").is_some()
                    && find(&self.body, b"\"isError\":true").is_some()
                        == (self.shape == Shape::Refused)
            }
            Shape::Unrouted => status == 404,
        };
        anyhow::ensure!(
            expected,
            "{:?} request answered unexpectedly: {status} {}",
            self.shape,
            String::from_utf8_lossy(&self.body)
        );
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        if let Some(session) = &self.session {
            let request = format!(
                "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\n\r\n",
                self.addr
            );
            self.stream.write_all(request.as_bytes())?;
            self.read_reply()?;
        }
        Ok(())
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The stateless protocol revision.
const MODERN: &str = "2026-07-28";

/// One concurrency level's results.
struct Level {
    calls: usize,
    /// Daemon CPU time over the measured calls (after the warm-up), in clock ticks.
    cpu_ticks: u64,
    throughput: f64,
    p50_ms: f64,
    p99_ms: f64,
}

impl Level {
    /// The daemon's CPU time per measured call, in microseconds.
    fn cpu_per_call_us(&self) -> f64 {
        self.cpu_ticks as f64 * 1e6 / TICKS_PER_SECOND / self.calls as f64
    }

    /// The mean time one of `clients` waits per call at `throughput` calls a second.
    fn per_call_us(throughput: f64, clients: usize) -> f64 {
        clients as f64 * 1e6 / throughput
    }
}

/// `calls` calls of `tool` from `sessions` threads, each on its own keep-alive connection
/// (after 20 warm-up calls each), made as `client` says, through [`Lean`] sending requests of
/// the shape `lean` names when some (else through the general client, calls only).
fn load(
    addr: SocketAddr,
    pid: u32,
    sessions: usize,
    calls: usize,
    tool: &str,
    client: Client,
    lean: Option<Shape>,
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
                let opened = match lean {
                    Some(shape) => Lean::open(addr, client, &tool, shape)
                        .map(|c| Box::new(c) as Box<dyn Caller>),
                    None => client
                        .connect(addr, &tool)
                        .map(|conn| Box::new(General { conn, client, tool }) as Box<dyn Caller>),
                };
                let ready = opened.and_then(|mut caller| {
                    for i in 0..20 {
                        caller.call(i)?;
                    }
                    Ok(caller)
                });
                start.wait();
                let mut caller = ready?;
                let mut samples = Vec::with_capacity(calls / sessions + 1);
                let mut id = 100;
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    id += 1;
                    let began = Instant::now();
                    caller.call(id)?;
                    samples.push(began.elapsed());
                }
                caller.finish()?;
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
