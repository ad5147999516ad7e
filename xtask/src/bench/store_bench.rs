//! `cargo xtask bench store`: the store's write and read latency in one process, the publish
//! throughput of several processes sharing one database, and the scheduler's claim rate with one
//! and three firers, on SQLite or (`--backend postgres`) on PostgreSQL.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use store::{
    DeliveryPoint, MessageQuery, NewSchedule, PgOptions, PostgresStore, Severity, SqliteStore,
    Store, StoreResult, Trigger,
};

use super::fixtures::message;
use super::now_ms;
use super::stats::{Summary, micros, num};
use crate::markdown::{Align, table};

/// Options of `cargo xtask bench store`.
#[derive(Debug, Clone, clap::Args)]
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
    /// Rounds of each concurrent run (throughput is their median).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Which store: `sqlite` (temporary files) or `postgres` (fresh schemas in the database
    /// HOOKS_MCP_DATABASE_URL names, dropped afterwards).
    #[arg(long, value_enum, default_value = "sqlite")]
    backend: Backend,
    /// Due one-shot schedules per scheduler claim-rate round.
    #[arg(long, default_value_t = 2000)]
    schedules: usize,
    /// Smoke run: a few operations per series, up to two publishers, one round; every path
    /// runs, the figures mean nothing.
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
            iterations: 10,
            processes: 2,
            per_process: 10,
            rounds: 1,
            schedules: 20,
            ..self.clone()
        }
    }
}

/// Options of the hidden `bench store-worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    /// The SQLite database to publish into (it must exist); without it, the PostgreSQL
    /// database HOOKS_MCP_DATABASE_URL names.
    #[arg(long)]
    db: Option<PathBuf>,
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
    let args = &args.sized();
    let n = args.iterations.max(1);
    let backend = args.backend;
    println!("## Store: sequential, one process ({})\n", backend.name());
    match backend {
        Backend::Sqlite => println!(
            "SQLite in WAL mode (synchronous=NORMAL) on a temporary directory, one connection, \
             {n} timed operations per row after {WARM_UP} untimed; each row on a fresh store. \
             ops/s is operations over the series' wall time, so the rare slow operation (a WAL \
             checkpoint writing pages back, see max) counts in it.\n"
        ),
        Backend::Postgres => println!(
            "PostgreSQL {} at {}, one pooled connection, {n} timed operations per row after \
             {WARM_UP} untimed; each row on a fresh schema. ops/s is operations over the \
             series' wall time.\n",
            PgSchema::server_version()?,
            backend.fresh()?.describe()
        ),
    }
    let mut rows = Vec::new();
    let mut add = |name: &str, series: Series| {
        rows.push(vec![
            name.to_string(),
            series.summary.n.to_string(),
            num(series.summary.median, 1),
            num(series.summary.p99, 1),
            num(series.summary.max, 0),
            num(series.per_second, 0),
        ]);
    };

    eprintln!("bench: store publish");
    let store = backend.fresh()?;
    add(
        "`publish`",
        series(n, |i| {
            store
                .publish(
                    &message(i, Severity::Alert, now_ms()),
                    &store::Actor::Daemon,
                )
                .map(drop)
        })?,
    );

    eprintln!("bench: store count_tool_call");
    let store = backend.fresh()?;
    add(
        "`count_tool_call` (8 sessions in turn)",
        series(n, |i| {
            store
                .count_tool_call(&format!("session-{}", i % 8), now_ms())
                .map(drop)
        })?,
    );

    eprintln!("bench: store acknowledge");
    let store = backend.fresh()?;
    let now = now_ms();
    let mut ids = Vec::with_capacity(WARM_UP + n);
    for i in 0..WARM_UP + n {
        ids.push(
            store
                .publish(&message(i, Severity::Alert, now), &store::Actor::Daemon)?
                .id,
        );
    }
    add(
        "`acknowledge` (a new message each time)",
        series(n, |i| {
            store
                .acknowledge(ids[i], "session-1", now_ms(), &store::Actor::Daemon)
                .map(drop)
        })?,
    );

    eprintln!("bench: store reads");
    let store = seeded(backend, ACTIVE)?;
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
                    before: None,
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

    eprintln!("bench: store fire_due, nothing due");
    let store = backend.fresh()?;
    let later = now_ms() + 3_600_000;
    for i in 0..PENDING {
        store.create_schedule(&one_shot(i, later), &store::Actor::Daemon)?;
    }
    add(
        "`fire_due` with nothing due, 100 schedules pending (an idle tick)",
        series(n, |_| {
            tools_scheduler::fire_due(&**store, now_ms(), &store::Actor::Daemon).map(drop)
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
                ("max µs", Align::Right),
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
         signal, then publishes {per} messages back to back. Throughput is all publications \
         over the wall time from the start signal to the last process's report; each row is \
         {rounds} rounds on fresh databases (throughput: their median, lowest and highest; \
         latencies: all rounds pooled).\n",
        rounds = args.rounds.max(1)
    );
    let mut rows = Vec::new();
    let mut counts = vec![1];
    while counts.last().copied().unwrap_or(1) * 2 <= args.processes.max(1) {
        counts.push(counts.last().copied().unwrap_or(1) * 2);
    }
    if counts.last() != Some(&args.processes.max(1)) {
        counts.push(args.processes.max(1));
    }
    let rounds = args.rounds.max(1);
    let mut single = None;
    for &processes in &counts {
        eprintln!("bench: {processes} concurrent publisher(s), {rounds} rounds");
        let mut throughputs = Vec::with_capacity(rounds);
        let mut latencies = Vec::new();
        let mut ops = 0;
        for _ in 0..rounds {
            let run = concurrent(backend, processes, per)?;
            throughputs.push(run.samples.len() as f64 / run.wall.as_secs_f64());
            ops = run.samples.len();
            latencies.extend(run.samples);
        }
        let throughput = Summary::of(&throughputs).context("no rounds")?;
        let latency = Summary::of(&latencies).context("no samples")?;
        let base = *single.get_or_insert(throughput.median);
        let lowest = throughputs.iter().copied().fold(f64::INFINITY, f64::min);
        rows.push(vec![
            processes.to_string(),
            ops.to_string(),
            format!(
                "{} ({}–{})",
                num(throughput.median, 0),
                num(lowest, 0),
                num(throughput.max, 0)
            ),
            format!("{:.2}×", throughput.median / base),
            num(latency.median, 1),
            num(latency.p99, 1),
            num(latency.max, 0),
        ]);
    }
    println!(
        "{}",
        table(
            &[
                ("Processes", Align::Right),
                ("Publications per round", Align::Right),
                ("Publications/s, median (min–max)", Align::Right),
                ("vs 1 process", Align::Right),
                ("median µs", Align::Right),
                ("p99 µs", Align::Right),
                ("max µs", Align::Right),
            ],
            &rows,
        )
    );

    claim_table(backend, args.schedules.max(1), rounds)
}

/// The scheduler claim-rate section: 1 and 3 firers over one backlog of due schedules.
fn claim_table(backend: Backend, schedules: usize, rounds: usize) -> anyhow::Result<()> {
    println!("## Store: scheduler claim rate\n");
    println!(
        "{schedules} one-shot schedules, all due, fired by 1 or 3 threads that each hold a \
         store handle of their own (their own connection, as separate daemons have) and call \
         `fire_due` (the daemon's tick) until every schedule fired; a firer that found nothing \
         due waits 1 ms before trying again. Schedules/s is the backlog over the wall time \
         from the common start to the last firer's return; {rounds} rounds on fresh stores \
         (median, lowest and highest). Calls: `fire_due` calls per round, all firers together \
         (median); share: what the busiest firer fired (median).\n"
    );
    let mut rows = Vec::new();
    let mut single = None;
    for firers in [1, 3] {
        eprintln!("bench: scheduler claim rate, {firers} firer(s), {rounds} rounds");
        let mut rates = Vec::with_capacity(rounds);
        let mut calls = Vec::with_capacity(rounds);
        let mut shares = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let run = claim(backend, firers, schedules)?;
            rates.push(schedules as f64 / run.wall.as_secs_f64());
            calls.push(run.calls as f64);
            shares.push(run.busiest as f64 / schedules as f64 * 100.0);
        }
        let rate = Summary::of(&rates).context("no rounds")?;
        let base = *single.get_or_insert(rate.median);
        let lowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
        rows.push(vec![
            firers.to_string(),
            schedules.to_string(),
            format!(
                "{} ({}–{})",
                num(rate.median, 0),
                num(lowest, 0),
                num(rate.max, 0)
            ),
            format!("{:.2}×", rate.median / base),
            num(Summary::of(&calls).context("no rounds")?.median, 0),
            format!(
                "{} %",
                num(Summary::of(&shares).context("no rounds")?.median, 0)
            ),
        ]);
    }
    println!(
        "{}",
        table(
            &[
                ("Firers", Align::Right),
                ("Schedules per round", Align::Right),
                ("Schedules/s, median (min–max)", Align::Right),
                ("vs 1 firer", Align::Right),
                ("Calls", Align::Right),
                ("Busiest firer's share", Align::Right),
            ],
            &rows,
        )
    );
    Ok(())
}

/// What one claim-rate round measured.
struct Claim {
    /// From the common start to the last firer's return.
    wall: Duration,
    /// `fire_due` calls, all firers together.
    calls: usize,
    /// Schedules the busiest firer fired.
    busiest: usize,
}

/// `firers` threads, each with its own store handle, firing a backlog of `schedules` due
/// one-shot schedules in a fresh store.
fn claim(backend: Backend, firers: usize, schedules: usize) -> anyhow::Result<Claim> {
    let fresh = backend.fresh()?;
    let due = now_ms() - 1_000;
    for i in 0..schedules {
        fresh.create_schedule(&one_shot(i, due), &store::Actor::Daemon)?;
    }
    let handles = (0..firers)
        .map(|_| fresh.open_another())
        .collect::<anyhow::Result<Vec<_>>>()?;
    for handle in &handles {
        // Connected before the clock starts.
        handle.ping()?;
    }
    let fired = AtomicUsize::new(0);
    let start = Barrier::new(firers + 1);
    let deadline = Instant::now() + Duration::from_secs(600);
    std::thread::scope(|scope| {
        let threads: Vec<_> = handles
            .iter()
            .map(|handle| {
                let (fired, start) = (&fired, &start);
                scope.spawn(move || -> anyhow::Result<(usize, usize)> {
                    start.wait();
                    let (mut mine, mut calls) = (0, 0);
                    while fired.load(Ordering::Acquire) < schedules {
                        if Instant::now() > deadline {
                            bail!("the claim-rate round did not finish within 10 minutes");
                        }
                        let got =
                            tools_scheduler::fire_due(&**handle, now_ms(), &store::Actor::Daemon)?
                                .len();
                        calls += 1;
                        mine += got;
                        fired.fetch_add(got, Ordering::AcqRel);
                        if got == 0 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    Ok((mine, calls))
                })
            })
            .collect();
        start.wait();
        let started = Instant::now();
        let mut claim = Claim {
            wall: Duration::ZERO,
            calls: 0,
            busiest: 0,
        };
        for thread in threads {
            let (mine, calls) = thread
                .join()
                .map_err(|_| anyhow!("a firing thread panicked"))??;
            claim.calls += calls;
            claim.busiest = claim.busiest.max(mine);
        }
        claim.wall = started.elapsed();
        let total = fired.load(Ordering::Acquire);
        if total != schedules {
            bail!("{total} firings for {schedules} schedules: a schedule fired twice");
        }
        Ok(claim)
    })
}

/// A one-shot schedule due at `at`.
fn one_shot(i: usize, at: i64) -> NewSchedule {
    NewSchedule {
        name: None,
        channel: "ci".into(),
        message: format!("Scheduled check {i}: rebase on main before the freeze."),
        severity: Severity::Info,
        ttl_seconds: 3600,
        trigger: Trigger::At(at),
        next_fire_at: at,
        created_at: at - 1_000,
    }
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

/// Which store `bench store` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Backend {
    /// An SQLite file in a temporary directory.
    Sqlite,
    /// Fresh schemas in the PostgreSQL database `HOOKS_MCP_DATABASE_URL` names.
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }

    /// A fresh, empty store.
    fn fresh(self) -> anyhow::Result<Fresh> {
        match self {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().context("creating a temporary directory")?;
                let path = dir.path().join("state.db");
                let store = SqliteStore::create(&path)?;
                Ok(Fresh {
                    store: Box::new(store),
                    place: Place::Sqlite { _dir: dir, path },
                })
            }
            Backend::Postgres => {
                let schema = PgSchema::create()?;
                let (store, _) = PostgresStore::open(&schema.url, &PgOptions::from_env(true)?)?;
                Ok(Fresh {
                    store: Box::new(store),
                    place: Place::Postgres(schema),
                })
            }
        }
    }
}

/// A fresh store and where it lives (removed when dropped).
struct Fresh {
    store: Box<dyn Store>,
    place: Place,
}

/// Where a [`Fresh`] store lives.
enum Place {
    /// A file in a temporary directory.
    Sqlite {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
    /// A schema of its own.
    Postgres(PgSchema),
}

impl std::ops::Deref for Fresh {
    type Target = Box<dyn Store>;

    fn deref(&self) -> &Self::Target {
        &self.store
    }
}

impl Fresh {
    /// Another handle on the same store, with connections of its own (as another process has).
    fn open_another(&self) -> anyhow::Result<Box<dyn Store>> {
        Ok(match &self.place {
            Place::Sqlite { path, .. } => Box::new(
                SqliteStore::open(
                    &store::StoreLocation::at(path),
                    &store::OpenOptions::default(),
                )?
                .0,
            ),
            Place::Postgres(schema) => {
                Box::new(PostgresStore::open(&schema.url, &PgOptions::from_env(false)?)?.0)
            }
        })
    }

    /// Points a `bench store-worker` command at this store.
    fn direct(&self, command: &mut Command) {
        match &self.place {
            Place::Sqlite { path, .. } => {
                command.arg("--db").arg(path);
            }
            Place::Postgres(schema) => {
                command.env(store::DATABASE_URL_ENV, &schema.url);
            }
        }
    }
}

/// A schema of its own in the database `HOOKS_MCP_DATABASE_URL` names, dropped when dropped.
pub(crate) struct PgSchema {
    /// The database's URL, as given.
    admin: String,
    /// The schema's name.
    name: String,
    /// The store's URL: the database, with the schema first on the `search_path`.
    pub(crate) url: String,
}

impl PgSchema {
    /// The database's URL.
    fn base_url() -> anyhow::Result<String> {
        std::env::var(store::DATABASE_URL_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .with_context(|| {
                format!(
                    "--backend postgres measures the database {} names: set it (e.g. `source \
                     .ci/postgres` and use its HOOKS_MCP_TEST_DATABASE_URL)",
                    store::DATABASE_URL_ENV
                )
            })
    }

    /// A plain client on the database, for what the store API does not do (schemas).
    fn client(url: &str) -> anyhow::Result<postgres::Client> {
        postgres::Client::connect(url, postgres::NoTls).with_context(|| {
            format!(
                "connecting to the database {} names (without TLS)",
                store::DATABASE_URL_ENV
            )
        })
    }

    /// The server's version.
    pub(crate) fn server_version() -> anyhow::Result<String> {
        let row = Self::client(&Self::base_url()?)?.query_one("SHOW server_version", &[])?;
        Ok(row.get(0))
    }

    /// Creates a fresh schema in the database `HOOKS_MCP_DATABASE_URL` names.
    pub(crate) fn create() -> anyhow::Result<PgSchema> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let admin = Self::base_url()?;
        let name = format!(
            "bench_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Self::client(&admin)?
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .with_context(|| format!("creating the schema {name}"))?;
        let sep = if admin.contains('?') { '&' } else { '?' };
        let url = format!("{admin}{sep}options=-c%20search_path%3D{name}");
        Ok(PgSchema { admin, name, url })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(mut client) = Self::client(&self.admin) {
            let _ = client.batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name));
        }
    }
}

/// Schedules pending (due in an hour) in the idle `fire_due` series.
const PENDING: usize = 100;

/// A fresh store with `active` one-hour broadcasts, severities in turn.
fn seeded(backend: Backend, active: usize) -> anyhow::Result<Fresh> {
    const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Alert, Severity::Critical];
    let store = backend.fresh()?;
    let now = now_ms();
    for i in 0..active {
        store.publish(&message(i, SEVERITIES[i % 3], now), &store::Actor::Daemon)?;
    }
    Ok(store)
}

/// What one concurrent run measured.
struct Concurrent {
    /// From the start signal to the last report.
    wall: Duration,
    /// Every timed publication's latency, µs.
    samples: Vec<f64>,
}

/// `processes` workers publishing `per` messages each into one fresh database.
fn concurrent(backend: Backend, processes: usize, per: usize) -> anyhow::Result<Concurrent> {
    let fresh = backend.fresh()?;
    let exe = std::env::current_exe().context("locating the xtask binary")?;
    let mut workers = Vec::with_capacity(processes);
    for worker in 0..processes {
        workers.push(Worker::spawn(&exe, &fresh, per, worker)?);
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
    Ok(Concurrent { wall, samples })
}

/// One `bench store-worker` process.
struct Worker {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Worker {
    fn spawn(exe: &Path, store: &Fresh, ops: usize, worker: usize) -> anyhow::Result<Worker> {
        let mut command = Command::new(exe);
        command
            .args(["bench", "store-worker", "--ops", &ops.to_string()])
            .args(["--worker", &worker.to_string()]);
        store.direct(&mut command);
        let mut child = command
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
    let store: Box<dyn Store> = match &args.db {
        Some(db) => {
            let options = store::OpenOptions::default();
            Box::new(SqliteStore::open(&store::StoreLocation::at(db), &options)?.0)
        }
        None => {
            let url = PgSchema::base_url()?;
            Box::new(PostgresStore::open(&url, &PgOptions::from_env(false)?)?.0)
        }
    };
    let channel = format!("worker-{}", args.worker);
    let publish = |i: usize| {
        let mut m = message(i, Severity::Info, now_ms());
        m.channel.clone_from(&channel);
        store.publish(&m, &store::Actor::Daemon).map(drop)
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
