//! `cargo xtask soak --minutes N`: one network daemon under mixed load for N minutes, sampled
//! every few seconds for leaks and errors.
//!
//! The load (every loop ends at the deadline): Streamable HTTP clients that open a session,
//! make a few hundred requests (tool calls of every category, `tools/list`, `ping`), sometimes
//! with a standalone GET stream open, sometimes dropping a call mid-flight (and going on in the
//! same session on a new connection, or not), and then abandon the session without a DELETE, so
//! the daemon's idle expiry must reclaim it; legacy SSE clients that do the same over `/sse`;
//! hook events from the recorded payloads (`tests/fixtures/hooks/`), each posted the way a real
//! client posts it: every event to `POST /hooks/{Event}` as Claude Code's HTTP hook does, and
//! the events a command hook forwards also to `POST /hook/{event}` as that hook does (on SQLite
//! the daemon refuses those with 422 by design, since hooks open that store themselves; with
//! `HOOKS_MCP_DATABASE_URL` set the daemon runs on PostgreSQL and answers them); interval
//! schedules, created during the warm-up so that one fires every few seconds afterwards.
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
//!
//! `--smoke` runs every client and every check of the answers for a few seconds against a debug
//! daemon, and fails on any error; it asserts no figure (memory, fds, threads, firings).

mod clients;
mod exchange;
mod samples;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use self::clients::{HookEvent, hook_client, http_client, schedule_client, sse_client};
use self::exchange::Stats;
use self::samples::{Sample, expected_firings, growth, ranges};
use crate::util::cargo::{self, Profile};
use crate::util::daemon::Daemon;
use crate::util::paths;
use crate::util::procfs;

/// Options of `cargo xtask soak`.
#[derive(Debug, Clone, clap::Args)]
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
    /// Smoke run: six seconds of load from a few clients of every kind on a debug daemon,
    /// sampled every two seconds; fails on any error, asserts no figure.
    #[arg(long)]
    smoke: bool,
}

impl Args {
    /// These options, or the smallest sizes for a smoke run; checked.
    fn sized(&self) -> anyhow::Result<Args> {
        let args = if self.smoke {
            Args {
                minutes: 0.1,
                sessions: 2,
                sse: 1,
                hooks: 1,
                schedules: 2,
                interval: 2,
                session_idle: 5,
                debug: true,
                ..self.clone()
            }
        } else {
            self.clone()
        };
        args.check()?;
        Ok(args)
    }

    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.minutes >= 0.1 && self.minutes <= 24.0 * 60.0,
            "--minutes: 0.1 to 1440"
        );
        let clients = self.sessions + self.sse + self.hooks;
        anyhow::ensure!(
            (1..=64).contains(&clients),
            "--sessions + --sse + --hooks: 1 to 64 clients"
        );
        anyhow::ensure!((1..=600).contains(&self.interval), "--interval: 1 to 600");
        anyhow::ensure!(self.schedules <= 100, "--schedules: at most 100");
        anyhow::ensure!(
            (5..=3600).contains(&self.session_idle),
            "--session-idle: 5 to 3600"
        );
        Ok(())
    }
}

/// Calls per growth unit.
pub(super) const PER_CALLS: f64 = 100_000.0;

/// The daemon under soak and what the run knows about it.
struct Soaked {
    daemon: Daemon,
    addr: SocketAddr,
    log: PathBuf,
    /// The hook requests the hook clients post in turn.
    hook_events: Vec<HookEvent>,
    /// The daemon serves SQLite (forwarded hook events are refused by design).
    sqlite: bool,
    stats: Stats,
    /// The load's warm-up: no growth is measured over it.
    warmup: Duration,
}

impl Soaked {
    fn sample(&self, at: Duration) -> anyhow::Result<Sample> {
        Sample::take(self.daemon.pid(), self.addr, &self.log, at, &self.stats)
    }
}

/// What the load left: when it started and ended, its samples and the schedules created.
struct Load {
    started: Instant,
    ended: Duration,
    samples: Vec<Sample>,
    schedules: Vec<Instant>,
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized()?;
    let bin = daemon_bin(args)?;
    if !args.smoke {
        procfs::write_back_page_cache();
    }
    let home = tempfile::Builder::new()
        .prefix("hooks-mcp-soak")
        .disable_cleanup(args.keep)
        .tempdir()?;
    if args.keep {
        eprintln!(
            "soak: the daemon's home (store, daemon.log) is kept in {}",
            home.path().display()
        );
    }
    let mut soaked = start(args, &bin, home.path())?;
    let before = prime(args, &soaked)?;
    print_header(args, &soaked);
    before.print();
    let load = drive_load(args, &soaked, before.clone())?;
    let Some(last) = load.samples.last().cloned() else {
        anyhow::bail!("the load left no sample");
    };
    let settled = settle(args, &soaked, &before, load.started)?;
    let failures = report(args, &soaked, &load, [&before, &last, &settled]);
    soaked.daemon.stop()?;
    if failures.is_empty() {
        println!("\nsoak: passed");
        Ok(())
    } else {
        anyhow::bail!("soak failed: {}", failures.join("; "))
    }
}

/// The daemon binary: built (release, or dev with `--debug`), or as built (`--skip-build`).
fn daemon_bin(args: &Args) -> anyhow::Result<PathBuf> {
    let profile = Profile::debug_if(args.debug);
    if args.skip_build {
        cargo::built_bin(profile, "hooks-mcp-full")
    } else {
        cargo::build_daemon(profile)
    }
}

/// Starts the daemon on a store in `home` and reads the hook fixtures.
fn start(args: &Args, bin: &Path, home: &Path) -> anyhow::Result<Soaked> {
    let hook_events = clients::hook_events(&paths::in_workspace("tests/fixtures/hooks"))?;
    let sqlite = clients::store_identity()?.is_none();
    let log = home.join("daemon.log");
    let idle = args.session_idle.to_string();
    let daemon = Daemon::start_with(
        bin,
        home,
        &log,
        &[
            ("HOOKS_MCP_SESSION_IDLE_SECS", &idle),
            ("HOOKS_MCP_MAX_SESSIONS", "1024"),
            ("HOOKS_MCP_LOG", "warn"),
        ],
        None,
    )?;
    let total = Duration::from_secs_f64(args.minutes * 60.0);
    Ok(Soaked {
        addr: daemon.addr(),
        daemon,
        log,
        hook_events,
        sqlite,
        stats: Stats::default(),
        // The first minute, or the first 20% of a shorter run.
        warmup: Duration::from_secs(60).min(total.mul_f64(0.2)),
    })
}

/// Primes every path once (a session of each transport, each hook request), then lets the
/// daemon settle; returns the sample taken then, the reference for fds and threads.
fn prime(args: &Args, soaked: &Soaked) -> anyhow::Result<Sample> {
    let (addr, stats) = (soaked.addr, &soaked.stats);
    let primed = Instant::now() + Duration::from_secs(5);
    let mut rng = fastrand::Rng::with_seed(1);
    http_client(addr, stats, &mut rng, primed, 0);
    sse_client(addr, stats, &mut rng, primed);
    let every_hook = soaked.hook_events.len() as u64;
    hook_client(
        addr,
        stats,
        &soaked.hook_events,
        soaked.sqlite,
        primed,
        every_hook,
    );
    if let Some(errors) = stats.error_summary() {
        anyhow::bail!("priming the daemon failed:\n{errors}");
    }
    // Long enough for the runtime's idle blocking threads to end; a smoke run compares nothing.
    std::thread::sleep(Duration::from_secs(if args.smoke { 1 } else { 12 }));
    soaked.sample(Duration::ZERO)
}

fn print_header(args: &Args, soaked: &Soaked) {
    println!("## Soak: {:.1} minutes\n", args.minutes);
    let backend = if soaked.sqlite {
        "SQLite store (forwarded hook events refused by design)"
    } else {
        "PostgreSQL store"
    };
    println!(
        "{} build{}, {backend}; {} Streamable HTTP clients, {} legacy SSE clients, {} hook \
         client(s), {} interval schedules; abandoned sessions expire after {} s; warm-up {} s.\n",
        if args.debug { "debug" } else { "release" },
        if args.smoke { " (smoke run)" } else { "" },
        args.sessions,
        args.sse,
        args.hooks,
        args.schedules,
        args.session_idle,
        soaked.warmup.as_secs()
    );
    println!(
        "| t (s) | calls | requests | private dirty (MiB) | fds | threads | HTTP sessions | SSE \
         sessions | fired | errors |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

/// Runs every client until the deadline, sampling every `--interval` seconds; the samples
/// start with `before` and end with one taken when the load ended.
fn drive_load(args: &Args, soaked: &Soaked, before: Sample) -> anyhow::Result<Load> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.minutes * 60.0);
    let schedules = Mutex::new(Vec::new());
    let mut samples = vec![before];
    std::thread::scope(|scope| -> anyhow::Result<()> {
        spawn_clients(scope, args, soaked, &schedules, deadline);
        let mut next = started;
        loop {
            next += Duration::from_secs(args.interval);
            let now = Instant::now();
            if next > deadline {
                std::thread::sleep(deadline.saturating_duration_since(now));
                return Ok(());
            }
            std::thread::sleep(next.saturating_duration_since(now));
            let sample = soaked.sample(started.elapsed())?;
            sample.print();
            samples.push(sample);
        }
    })?;
    let ended = started.elapsed();
    let last = soaked.sample(ended)?;
    last.print();
    samples.push(last);
    let schedules = schedules
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a schedule client panicked"))?;
    Ok(Load {
        started,
        ended,
        samples,
        schedules,
    })
}

/// Spawns the clients of every kind on `scope`, each looping until `deadline`.
fn spawn_clients<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    args: &Args,
    soaked: &'scope Soaked,
    schedules: &'scope Mutex<Vec<Instant>>,
    deadline: Instant,
) {
    let (addr, stats) = (soaked.addr, &soaked.stats);
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
        let (events, sqlite) = (&soaked.hook_events, soaked.sqlite);
        scope.spawn(move || hook_client(addr, stats, events, sqlite, deadline, u64::MAX));
    }
    let (count, warmup) = (args.schedules, soaked.warmup);
    scope.spawn(move || schedule_client(addr, stats, schedules, count, warmup, deadline));
}

/// With every client gone, waits (up to 45 s) for fds and threads to come back to their level
/// before the load; returns the last sample. A smoke run takes one sample and waits for nothing.
fn settle(
    args: &Args,
    soaked: &Soaked,
    before: &Sample,
    started: Instant,
) -> anyhow::Result<Sample> {
    let settle_until = Instant::now() + Duration::from_secs(if args.smoke { 0 } else { 45 });
    let settled = loop {
        let s = soaked.sample(started.elapsed())?;
        if (s.fds <= before.fds && s.threads <= before.threads) || Instant::now() > settle_until {
            break s;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    settled.print();
    Ok(settled)
}

/// Prints what the run measured; returns what failed (a smoke run fails on errors only).
fn report(args: &Args, soaked: &Soaked, load: &Load, samples: [&Sample; 3]) -> Vec<String> {
    let [before, last, settled] = samples;
    let mut failures = Vec::new();
    println!();
    let after_warmup: Vec<&Sample> = load
        .samples
        .iter()
        .filter(|s| s.at >= soaked.warmup)
        .collect();
    failures.extend(report_growth(args, &after_warmup));
    failures.extend(report_fds_threads(
        soaked,
        &after_warmup,
        before,
        settled,
        load.ended,
    ));
    check_firings(args, soaked, load, before, last);
    if args.smoke {
        println!("(Smoke run: no figure asserted.)");
        failures.clear();
    }
    let stats = &soaked.stats;
    match stats.error_summary() {
        Some(errors) => {
            println!("\nErrors by kind:\n\n{errors}");
            failures.push(format!("{} errors", stats.error_count()));
        }
        None => println!("Errors: none."),
    }
    failures
}

/// Memory growth per 100,000 calls after the warm-up; a failure when over the limit.
fn report_growth(args: &Args, after_warmup: &[&Sample]) -> Option<String> {
    let Some(g) = growth(after_warmup) else {
        println!("Too few samples after the warm-up to measure growth.");
        return None;
    };
    println!(
        "Private dirty after the warm-up: {:.2} MiB at {} calls, {:.2} MiB at {} calls; growth \
         per 100,000 calls: {:.1} KiB (least squares over {} samples), {:.1} KiB (first to \
         last).",
        g.first_kib as f64 / 1024.0,
        g.first_calls,
        g.last_kib as f64 / 1024.0,
        g.last_calls,
        g.slope_kib,
        after_warmup.len(),
        g.endpoints_kib
    );
    let span = (g.last_calls - g.first_calls) as f64;
    if span < PER_CALLS {
        println!("(Fewer than 100,000 calls after the warm-up: the memory limit is not enforced.)");
        return None;
    }
    (g.slope_kib > args.max_growth_kib).then(|| {
        format!(
            "private dirty grew {:.1} KiB per 100,000 calls (limit {:.0})",
            g.slope_kib, args.max_growth_kib
        )
    })
}

/// Fds and threads under load and after it; failures when they did not come back to their
/// level before the load.
fn report_fds_threads(
    soaked: &Soaked,
    after_warmup: &[&Sample],
    before: &Sample,
    settled: &Sample,
    ended: Duration,
) -> Vec<String> {
    let (fds_min, fds_max, threads_min, threads_max) = ranges(after_warmup);
    println!(
        "Under load after the warm-up: fds {fds_min}–{fds_max}, threads {threads_min}–{threads_max}. \
         Before the load: {} fds, {} threads; {} s after it: {} fds, {} threads.",
        before.fds,
        before.threads,
        (settled.at.saturating_sub(ended)).as_secs(),
        settled.fds,
        settled.threads
    );
    let mut failures = Vec::new();
    if settled.fds > before.fds {
        failures.push(format!(
            "open fds grew from {} to {} ({})",
            before.fds,
            settled.fds,
            procfs::fd_kinds(soaked.daemon.pid())
        ));
    }
    if settled.threads > before.threads {
        failures.push(format!(
            "threads grew from {} to {}",
            before.threads, settled.threads
        ));
    }
    failures
}

/// Schedule firings during the load against those expected (counted as an error when off by
/// more than one per schedule; not in a smoke run), and the clients' other counts.
fn check_firings(args: &Args, soaked: &Soaked, load: &Load, before: &Sample, last: &Sample) {
    let stats = &soaked.stats;
    let expected = expected_firings(&load.schedules, load.started, load.ended);
    let fired = last.fired.saturating_sub(before.fired);
    println!(
        "Schedules: {fired} firings during the load, {expected} expected; {} sessions opened, {} \
         calls dropped mid-flight, {} idle connections closed by the daemon and reopened.",
        stats.sessions.load(Ordering::Relaxed),
        stats.dropped.load(Ordering::Relaxed),
        stats.reconnects.load(Ordering::Relaxed)
    );
    let slack = args.schedules as u64;
    if !args.smoke && (fired + slack < expected || fired > expected + slack) {
        stats.error(
            "schedule firings",
            format!("{fired} firings, {expected} expected"),
        );
    }
}
