//! `cargo xtask bench store`: the SQLite store's write and read latency in one process, and the
//! publish throughput of several processes sharing one database.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use store::{
    ChannelStore, DeliveryPoint, EnforcementStore, MessageQuery, Severity, SqliteStore, StoreResult,
};

use super::fixtures::message;
use super::now_ms;
use super::stats::{Summary, micros, millis, num};
use crate::markdown::{Align, table};

/// Options of `cargo xtask bench store`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Timed operations per sequential series.
    #[arg(long, default_value_t = 2000)]
    iterations: usize,
    /// The largest number of concurrent publishing processes (runs 1, 2, 4... up to it).
    #[arg(long, default_value_t = 4)]
    processes: usize,
    /// Timed publications per concurrent process.
    #[arg(long, default_value_t = 2000)]
    per_process: usize,
}

/// Options of the hidden `bench store-worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    /// The database to publish into (it must exist).
    #[arg(long)]
    db: PathBuf,
    /// How many messages to publish.
    #[arg(long)]
    ops: usize,
    /// This worker's number (names its channel).
    #[arg(long)]
    worker: usize,
}

/// Untimed operations before each timed series.
const WARM_UP: usize = 50;
/// Active broadcasts in the read and delivery series.
const ACTIVE: usize = 100;

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let n = args.iterations.max(1);
    println!("## Store: sequential, one process\n");
    println!(
        "SQLite in WAL mode (synchronous=NORMAL) on a temporary directory, one connection, \
         {n} timed operations per row after {WARM_UP} untimed; each row on a fresh store. \
         ops/s is operations over the series' wall time.\n"
    );
    let mut rows = Vec::new();
    let mut add = |name: &str, series: Series| {
        rows.push(vec![
            name.to_string(),
            series.summary.n.to_string(),
            num(series.summary.median, 1),
            num(series.summary.p99, 1),
            num(series.per_second, 0),
        ]);
    };

    eprintln!("bench: store publish");
    let (_dir, store) = fresh()?;
    add(
        "`publish`",
        series(n, |i| {
            store
                .publish(&message(i, Severity::Alert, now_ms()))
                .map(drop)
        })?,
    );

    eprintln!("bench: store count_tool_call");
    let (_dir, store) = fresh()?;
    add(
        "`count_tool_call` (8 sessions in turn)",
        series(n, |i| {
            store
                .count_tool_call(&format!("session-{}", i % 8), now_ms())
                .map(drop)
        })?,
    );

    eprintln!("bench: store acknowledge");
    let (_dir, store) = fresh()?;
    let now = now_ms();
    let mut ids = Vec::with_capacity(WARM_UP + n);
    for i in 0..WARM_UP + n {
        ids.push(store.publish(&message(i, Severity::Alert, now))?.id);
    }
    add(
        "`acknowledge` (a new message each time)",
        series(n, |i| {
            store.acknowledge(ids[i], "session-1", now_ms()).map(drop)
        })?,
    );

    eprintln!("bench: store reads");
    let (_dir, store) = seeded(ACTIVE)?;
    add(
        "`read_messages` limit 20 of 100 active, with a session",
        series(n, |_| {
            store
                .read_messages(&MessageQuery {
                    channel: None,
                    session_id: Some("session-1".into()),
                    include_acknowledged: false,
                    limit: 20,
                    now: now_ms(),
                })
                .map(drop)
        })?,
    );
    add(
        "`deliver` at Prompt, 100 broadcasts, same session (steady state)",
        series(n, |_| {
            store
                .deliver("session-1", None, DeliveryPoint::Prompt, now_ms())
                .map(drop)
        })?,
    );
    add(
        "`deliver` at ToolCall, 100 broadcasts, same session (steady state)",
        series(n, |_| {
            store
                .deliver("session-1", None, DeliveryPoint::ToolCall, now_ms())
                .map(drop)
        })?,
    );
    add(
        "`deliver` at Prompt, 100 broadcasts, a new session each time (records 100)",
        series(n, |i| {
            store
                .deliver(&format!("new-{i}"), None, DeliveryPoint::Prompt, now_ms())
                .map(drop)
        })?,
    );
    println!(
        "{}",
        table(
            &[
                ("Operation", Align::Left),
                ("n", Align::Right),
                ("median µs", Align::Right),
                ("p99 µs", Align::Right),
                ("ops/s", Align::Right),
            ],
            &rows,
        )
    );
    println!(
        "The 100 broadcasts are info, alert and critical in turn (34/33/33): at Prompt the \
         same session is due the 66 alert and critical ones, at ToolCall the 33 critical ones.\n"
    );

    println!("## Store: concurrent publishers, separate processes\n");
    let per = args.per_process.max(1);
    println!(
        "Each process (a copy of this xtask, `bench store-worker`) opens its own connection to \
         one shared database, publishes {WARM_UP} untimed messages, waits for a common start \
         signal, then publishes {per} messages back to back. Throughput is all publications over the wall time from the start signal \
         to the last process's report.\n"
    );
    let mut rows = Vec::new();
    let mut counts = vec![1];
    while counts.last().copied().unwrap_or(1) * 2 <= args.processes.max(1) {
        counts.push(counts.last().copied().unwrap_or(1) * 2);
    }
    if counts.last() != Some(&args.processes.max(1)) {
        counts.push(args.processes.max(1));
    }
    let mut single = None;
    for &processes in &counts {
        eprintln!("bench: {processes} concurrent publisher(s)");
        let run = concurrent(processes, per)?;
        let per_second = run.ops as f64 / run.wall.as_secs_f64();
        let base = *single.get_or_insert(per_second);
        rows.push(vec![
            processes.to_string(),
            run.ops.to_string(),
            num(millis(run.wall), 0),
            num(per_second, 0),
            format!("{:.2}×", per_second / base),
            num(run.latency.median, 1),
            num(run.latency.p99, 1),
        ]);
    }
    println!(
        "{}",
        table(
            &[
                ("Processes", Align::Right),
                ("Publications", Align::Right),
                ("Wall ms", Align::Right),
                ("Publications/s", Align::Right),
                ("vs 1 process", Align::Right),
                ("median µs", Align::Right),
                ("p99 µs", Align::Right),
            ],
            &rows,
        )
    );
    Ok(())
}

/// A timed series: per-operation statistics (µs) and throughput.
struct Series {
    summary: Summary,
    per_second: f64,
}

/// Runs `op(i)` for `WARM_UP` untimed then `n` timed iterations.
fn series(n: usize, mut op: impl FnMut(usize) -> StoreResult<()>) -> anyhow::Result<Series> {
    for i in 0..WARM_UP {
        op(i)?;
    }
    let mut samples = Vec::with_capacity(n);
    let all = Instant::now();
    for i in WARM_UP..WARM_UP + n {
        let started = Instant::now();
        op(i)?;
        samples.push(micros(started.elapsed()));
    }
    let wall = all.elapsed();
    Ok(Series {
        summary: Summary::of(&samples).context("no samples")?,
        per_second: n as f64 / wall.as_secs_f64(),
    })
}

/// A fresh store in a temporary directory.
fn fresh() -> anyhow::Result<(tempfile::TempDir, SqliteStore)> {
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let store = SqliteStore::create(dir.path().join("state.db"))?;
    Ok((dir, store))
}

/// A fresh store with `active` one-hour broadcasts, severities in turn.
fn seeded(active: usize) -> anyhow::Result<(tempfile::TempDir, SqliteStore)> {
    const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Alert, Severity::Critical];
    let (dir, store) = fresh()?;
    let now = now_ms();
    for i in 0..active {
        store.publish(&message(i, SEVERITIES[i % 3], now))?;
    }
    Ok((dir, store))
}

/// What one concurrent run measured.
struct Concurrent {
    ops: usize,
    wall: Duration,
    latency: Summary,
}

/// `processes` workers publishing `per` messages each into one fresh database.
fn concurrent(processes: usize, per: usize) -> anyhow::Result<Concurrent> {
    let (dir, _store) = fresh()?;
    let db = dir.path().join("state.db");
    let exe = std::env::current_exe().context("locating the xtask binary")?;
    let mut workers = Vec::with_capacity(processes);
    for worker in 0..processes {
        workers.push(Worker::spawn(&exe, &db, per, worker)?);
    }
    for w in &mut workers {
        let line = w.line()?;
        if line != "ready" {
            bail!("a store worker did not get ready: {line}");
        }
    }
    let started = Instant::now();
    for w in &mut workers {
        w.go()?;
    }
    let mut samples = Vec::with_capacity(processes * per);
    for w in &mut workers {
        let line = w.line()?;
        let Some(numbers) = line.strip_prefix("done") else {
            bail!("a store worker failed: {line}");
        };
        for n in numbers.split_whitespace() {
            let nanos: u64 = n
                .parse()
                .with_context(|| format!("bad worker sample {n:?}"))?;
            samples.push(micros(Duration::from_nanos(nanos)));
        }
    }
    let wall = started.elapsed();
    for mut w in workers {
        let status = w.child.wait().context("waiting for a store worker")?;
        if !status.success() {
            bail!("a store worker exited with {status}");
        }
    }
    Ok(Concurrent {
        ops: samples.len(),
        wall,
        latency: Summary::of(&samples).context("no samples")?,
    })
}

/// One `bench store-worker` process.
struct Worker {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Worker {
    fn spawn(exe: &Path, db: &Path, ops: usize, worker: usize) -> anyhow::Result<Worker> {
        let mut child = Command::new(exe)
            .args(["bench", "store-worker", "--ops", &ops.to_string()])
            .args(["--worker", &worker.to_string(), "--db"])
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting a store worker")?;
        let stdout = child.stdout.take().context("no worker stdout")?;
        Ok(Worker {
            child,
            lines: BufReader::new(stdout).lines(),
        })
    }

    fn line(&mut self) -> anyhow::Result<String> {
        match self.lines.next() {
            Some(line) => Ok(line.context("reading a store worker")?),
            None => bail!("a store worker exited early (see its stderr above)"),
        }
    }

    fn go(&mut self) -> anyhow::Result<()> {
        let stdin = self.child.stdin.as_mut().context("no worker stdin")?;
        stdin
            .write_all(b"go\n")
            .and_then(|()| stdin.flush())
            .context("starting a store worker")
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hidden worker: open the store, warm up, print `ready`, wait for a line on stdin,
/// publish, print `done` and each timed publication's latency in nanoseconds.
pub(crate) fn worker(args: &WorkerArgs) -> anyhow::Result<()> {
    let options = store::OpenOptions::default();
    let (store, _) = SqliteStore::open(&store::StoreLocation::at(&args.db), &options)?;
    let channel = format!("worker-{}", args.worker);
    let publish = |i: usize| {
        let mut m = message(i, Severity::Info, now_ms());
        m.channel.clone_from(&channel);
        store.publish(&m).map(drop)
    };
    // Warm up like the sequential series: statements prepared, pages cached.
    for i in 0..WARM_UP {
        publish(i)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go)?;
    let mut nanos = Vec::with_capacity(args.ops);
    for i in WARM_UP..WARM_UP + args.ops {
        let started = Instant::now();
        publish(i)?;
        nanos.push(started.elapsed().as_nanos().to_string());
    }
    writeln!(out, "done {}", nanos.join(" "))?;
    out.flush()?;
    Ok(())
}
