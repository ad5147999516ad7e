//! `cargo xtask bench api`: the read API's latency on a filled SQLite store, one request at a
//! time on a keep-alive connection to a release daemon, every route of the OpenAPI document.
//!
//! The store holds 10,000 unexpired messages on 20 channels, 1,000 sessions (each subscribed
//! to one channel, 100 of them with first deliveries recorded), 20 reminders, 10 conditions,
//! 20 interval schedules with 10 firings each, and 1,000 audit entries (the entries of the
//! rest are pruned first; 1,000 acknowledgements make the ones kept).
//! `--store-sizes 1000,10000,100000` measures stores of each size side by side (a tenth as
//! many sessions as messages), with the target of every route's p99 within 20 ms judged at the
//! largest; `--postgres` fills a fresh schema of the database `HOOKS_MCP_DATABASE_URL` names
//! for each store instead, and the daemon serves it. Nothing here asserts a timing.

use std::time::Instant;

use anyhow::{Context, bail};
use std::sync::Arc;

use store::{
    Actor, Condition, DeliveryPoint, Millis, NewMessage, NewReminder, NewSchedule, NextFire,
    PutMode, Schedule, ScriptLanguage, Severity, Sighting, SqliteStore, Step, Store, Subscribed,
    Transport, Trigger,
};

use super::now_ms;
use super::stats::{Summary, millis, num};
use super::store_bench::PgSchema;
use crate::markdown::{Align, table};
use crate::util::cargo::{self, Profile};
use crate::util::daemon::Daemon;
use crate::util::http::Conn;
use crate::util::procfs;

/// Options of `cargo xtask bench api`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Timed requests per route (after 20 warm-up ones).
    #[arg(long, default_value_t = 300)]
    requests: usize,
    /// What the store holds.
    #[command(flatten)]
    size: StoreSize,
    /// Measure stores of these many messages side by side (comma separated; without a value
    /// 1000,10000,100000), each with a tenth as many sessions; replaces --messages and
    /// --sessions.
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 0..,
        default_missing_values = ["1000", "10000", "100000"]
    )]
    store_sizes: Option<Vec<usize>>,
    /// Fill PostgreSQL instead (a fresh schema of the database HOOKS_MCP_DATABASE_URL names,
    /// per store), served by the daemon.
    #[arg(long)]
    postgres: bool,
    /// Smoke run: the smallest store, two requests per route, a dev daemon; every route is
    /// asked, the figures mean nothing.
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
            requests: 2,
            size: StoreSize::SMOKE,
            store_sizes: self
                .store_sizes
                .as_ref()
                .map(|_| vec![StoreSize::SMOKE.messages, StoreSize::SMOKE.messages * 10]),
            ..self.clone()
        }
    }
}

/// How much the filled store holds (shared by `bench api` and `bench console`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct StoreSize {
    /// Messages in the store.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) messages: usize,
    /// Sessions in the store.
    #[arg(long, default_value_t = 1_000)]
    pub(crate) sessions: usize,
}

impl StoreSize {
    /// The smallest store [`Filled::start`] accepts, for smoke runs.
    pub(super) const SMOKE: StoreSize = StoreSize {
        messages: CHANNELS,
        sessions: 100,
    };
}

/// A daemon (no token) over a freshly filled SQLite store.
pub(super) struct Filled {
    /// The daemon; stopped on drop.
    pub(super) daemon: Daemon,
    /// The store's file.
    pub(super) db: std::path::PathBuf,
    /// A message with deliveries and acknowledgements.
    pub(super) message_id: i64,
    /// Audit entries kept.
    pub(super) audit_rows: usize,
    /// On PostgreSQL: the schema (dropped after the daemon stopped).
    _schema: Option<PgSchema>,
    // Declared last: removed after the daemon stopped.
    _home: tempfile::TempDir,
}

impl Filled {
    /// Builds the daemon in `profile`, fills a store as `size` says and starts the daemon on
    /// it (`bench` names the benchmark in progress messages).
    pub(super) fn start(bench: &str, size: &StoreSize, profile: Profile) -> anyhow::Result<Filled> {
        Filled::start_on(bench, size, profile, false)
    }

    /// [`Filled::start`], on PostgreSQL with `postgres` (a fresh schema of the database
    /// `HOOKS_MCP_DATABASE_URL` names).
    pub(super) fn start_on(
        bench: &str,
        size: &StoreSize,
        profile: Profile,
        postgres: bool,
    ) -> anyhow::Result<Filled> {
        anyhow::ensure!(
            size.messages >= CHANNELS && size.sessions >= 100,
            "--messages: at least {CHANNELS}; --sessions: at least 100"
        );
        let bin = cargo::build_daemon(profile)?;
        let home = tempfile::tempdir()?;
        eprintln!(
            "bench {bench}: filling a store with {} messages, {} sessions{}...",
            size.messages,
            size.sessions,
            if postgres { " (PostgreSQL)" } else { "" }
        );
        let db = home.path().join("state.db");
        let (schema, store): (Option<PgSchema>, Arc<dyn Store>) = if postgres {
            let schema = PgSchema::create()?;
            let options = store::PgOptions {
                create: true,
                pool_size: 8,
                ..store::PgOptions::default()
            };
            let (pg, _) = store::PostgresStore::open(&schema.url, &options)?;
            (Some(schema), Arc::new(pg))
        } else {
            (None, Arc::new(SqliteStore::create(&db)?))
        };
        let (message_id, audit_rows) = fill(&store, size.messages, size.sessions, postgres)?;
        drop(store);
        if profile == Profile::Release {
            procfs::write_back_page_cache();
        }
        let url = schema.as_ref().map(|s| s.url.clone());
        let daemon = Daemon::start_configured(
            &bin,
            home.path(),
            &home.path().join("daemon.log"),
            None,
            |cmd| {
                cmd.env("HOOKS_MCP_LOG", "warn");
                if let Some(url) = &url {
                    cmd.env(store::DATABASE_URL_ENV, url);
                }
            },
        )?;
        Ok(Filled {
            daemon,
            db,
            message_id,
            audit_rows,
            _schema: schema,
            _home: home,
        })
    }
}

/// Channels the messages are spread over.
pub(super) const CHANNELS: usize = 20;

/// One route's figures on one store.
#[derive(Debug, Clone)]
struct RouteFigures {
    median: f64,
    p99: f64,
    max: f64,
    bytes: usize,
}

/// The read API's target: every route's p99 within this at the largest store.
const P99_TARGET_MS: f64 = 20.0;

/// Runs the benchmark.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized();
    anyhow::ensure!(args.requests >= 1, "--requests: at least 1");
    let sizes: Vec<StoreSize> = match &args.store_sizes {
        None => vec![args.size.clone()],
        Some(list) => {
            let list = if list.is_empty() {
                vec![1_000, 10_000, 100_000]
            } else {
                list.clone()
            };
            list.into_iter()
                .map(|messages| StoreSize {
                    messages,
                    sessions: (messages / 10).max(100),
                })
                .collect()
        }
    };
    let version = if args.postgres {
        Some(PgSchema::server_version()?)
    } else {
        None
    };
    let mut paths: Vec<String> = Vec::new();
    let mut columns: Vec<(StoreSize, usize, Vec<RouteFigures>)> = Vec::new();
    for size in &sizes {
        let filled = Filled::start_on("api", size, Profile::for_smoke(args.smoke), args.postgres)?;
        let (message_id, audit_rows) = (filled.message_id, filled.audit_rows);
        let mut conn = Conn::connect(filled.daemon.addr())?;
        if paths.is_empty() {
            let doc = get(&mut conn, "/api/v1/openapi.json")?;
            let doc: serde_json::Value =
                serde_json::from_str(&doc).context("the OpenAPI document")?;
            paths = doc["paths"]
                .as_object()
                .context("the OpenAPI document has no paths")?
                .keys()
                .cloned()
                .collect();
        }
        let mut figures = Vec::with_capacity(paths.len());
        for path in &paths {
            let concrete = concrete(path, message_id);
            eprintln!("bench api: {} messages: GET {concrete}", size.messages);
            figures.push(measure_route(&mut conn, &concrete, args.requests)?);
        }
        drop(filled);
        columns.push((size.clone(), audit_rows, figures));
    }

    let backend = match &version {
        Some(v) => format!("PostgreSQL {v}"),
        None => "SQLite".to_owned(),
    };
    println!("## Read API latency (`cargo xtask bench api`)\n");
    let build = if args.smoke {
        "Dev (smoke run)"
    } else {
        "Release"
    };
    if let [(size, audit_rows, figures)] = columns.as_slice() {
        println!(
            "{build} daemon on {backend}; the store holds {} unexpired messages on {CHANNELS} \
             channels, {} sessions and {audit_rows} audit entries. {} sequential requests per \
             route on one keep-alive connection (after 20 warm-up ones); client-side times, \
             request written to response read.\n",
            size.messages, size.sessions, args.requests
        );
        let rows: Vec<Vec<String>> = paths
            .iter()
            .zip(figures)
            .map(|(path, f)| {
                vec![
                    format!("`GET {path}`"),
                    num(f.median, 2),
                    num(f.p99, 2),
                    num(f.max, 2),
                    f.bytes.to_string(),
                ]
            })
            .collect();
        print!(
            "{}",
            table(
                &[
                    ("route", Align::Left),
                    ("p50 ms", Align::Right),
                    ("p99 ms", Align::Right),
                    ("max ms", Align::Right),
                    ("body bytes", Align::Right),
                ],
                &rows,
            )
        );
        return Ok(());
    }
    println!(
        "{build} daemon on {backend}, one store per column ({CHANNELS} channels, a tenth as \
         many sessions as messages). {} sequential requests per route on one keep-alive \
         connection (after 20 warm-up ones); p50 / p99 in ms, client-side, request written to \
         response read.\n",
        args.requests
    );
    let headers: Vec<String> = columns
        .iter()
        .map(|(size, ..)| format!("{} msgs / {} sessions", size.messages, size.sessions))
        .collect();
    let mut header: Vec<(&str, Align)> = vec![("route", Align::Left)];
    header.extend(headers.iter().map(|h| (h.as_str(), Align::Right)));
    header.push(("largest: p99 ≤ 20 ms", Align::Left));
    let rows: Vec<Vec<String>> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let mut row = vec![format!("`GET {path}`")];
            for (_, _, figures) in &columns {
                let f = &figures[i];
                row.push(format!("{} / {}", num(f.median, 2), num(f.p99, 2)));
            }
            let verdict = match columns.last() {
                Some(_) if args.smoke => "–".to_owned(),
                Some((_, _, figures)) if figures[i].p99 <= P99_TARGET_MS => "met".to_owned(),
                Some(_) => "not met".to_owned(),
                None => "–".to_owned(),
            };
            row.push(verdict);
            row
        })
        .collect();
    print!("{}", table(&header, &rows));
    Ok(())
}

/// A route of the OpenAPI document with its parameters filled in.
fn concrete(path: &str, message_id: i64) -> String {
    path.replace("{channel}", "channel-0")
        .replace("{id}", &message_id.to_string())
}

/// `requests` timed GETs of `path` after 20 warm-up ones.
fn measure_route(conn: &mut Conn, path: &str, requests: usize) -> anyhow::Result<RouteFigures> {
    let mut bytes = 0;
    for _ in 0..20 {
        bytes = get(conn, path)?.len();
    }
    let mut samples = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        get(conn, path)?;
        samples.push(millis(started.elapsed()));
    }
    let s = Summary::of(&samples).context("no samples")?;
    Ok(RouteFigures {
        median: s.median,
        p99: s.p99,
        max: s.max,
        bytes,
    })
}

/// One GET; its body. Fails on anything but 200.
fn get(conn: &mut Conn, path: &str) -> anyhow::Result<String> {
    let reply = conn.request_at("GET", path, "")?;
    if reply.status != 200 {
        bail!("GET {path}: {} {}", reply.status, reply.body);
    }
    Ok(reply.body)
}

/// Fills `store` (publishing from several threads with `parallel`, for PostgreSQL); returns
/// the id of a message with deliveries and acknowledgements, and the number of audit entries
/// kept.
fn fill(
    store: &Arc<dyn Store>,
    messages: usize,
    sessions: usize,
    parallel: bool,
) -> anyhow::Result<(i64, usize)> {
    let store: &dyn Store = &**store;
    let now = now_ms();
    let daemon = Actor::Daemon;
    let message = |i: usize| {
        let severity = match i % 10 {
            0 => Severity::Critical,
            1..=3 => Severity::Alert,
            _ => Severity::Info,
        };
        NewMessage {
            channel: format!("channel-{}", i % CHANNELS),
            body: format!("Build {i} is red on main: fix or revert before merging anything else."),
            severity,
            created_at: now - 1_000_000 + i64::try_from(i).unwrap_or(0),
            expires_at: now + 86_400_000,
            target: None,
        }
    };
    let threads = if parallel { 8 } else { 1 };
    let publish = |t: usize| -> anyhow::Result<Vec<(usize, i64)>> {
        let mut out = Vec::new();
        let mut failed = None;
        store.in_one_transaction(true, &mut || {
            for i in (t..messages).step_by(threads) {
                match store.publish(&message(i), &daemon) {
                    Ok(m) => out.push((i, m.id)),
                    Err(e) => {
                        failed = Some(e);
                        return;
                    }
                }
            }
        })?;
        failed.map_or(Ok(out), |e| Err(e.into()))
    };
    let mut published: Vec<(usize, i64)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || publish(t)))
            .collect();
        let mut all = Vec::with_capacity(messages);
        for h in handles {
            all.extend(
                h.join()
                    .map_err(|_| anyhow::anyhow!("a publishing thread panicked"))??,
            );
        }
        anyhow::Ok(all)
    })?;
    published.sort_unstable();
    let ids: Vec<i64> = published.into_iter().map(|(_, id)| id).collect();
    // Something in the other lists: reminders, conditions, schedules with firings.
    for i in 0..20 {
        store.add_reminder(
            &NewReminder {
                message: format!("Reminder {i}: run the tests before pushing."),
                cadence: 5 + i,
                tag: Some(format!("tag-{}", i % 4)),
                created_at: now,
            },
            &daemon,
        )?;
    }
    for i in 0..10 {
        let condition = Condition {
            name: format!("guard_{i}"),
            step: Step::Pre,
            matcher: "bash.git".into(),
            script: format!("#!/bin/sh\n# guard {i}\ngrep -q 'push --force' && exit 2\nexit 0\n"),
            language: ScriptLanguage::Bash,
            run_async: false,
            session_id: "session-0000".into(),
            created_at: now,
            updated_at: now,
        };
        store.put_condition(&condition, PutMode::CreateOnly, &daemon)?;
    }
    for i in 0..20 {
        store.create_schedule(
            &NewSchedule {
                name: Some(format!("every-{i}")),
                channel: format!("channel-{}", i % CHANNELS),
                message: format!("Scheduled note {i}"),
                severity: Severity::Info,
                ttl_seconds: 3600,
                trigger: Trigger::Every(60),
                next_fire_at: now - 600_000,
                created_at: now - 600_000,
            },
            &daemon,
        )?;
    }
    // Ten firings of each schedule, a minute apart.
    let every_minute = |s: &Schedule, at: Millis| NextFire {
        next_fire_at: s.next_fire_at.map(|n| n.max(at) + 60_000),
        skipped: 0,
    };
    for k in 0..10 {
        store.fire_due(now - 600_000 + k * 60_000, &every_minute, &daemon)?;
    }
    // Keep the audit trail at the acknowledgements below.
    store.prune_audit(now + 1)?;
    for s in 0..sessions {
        let channel = format!("channel-{}", s % CHANNELS);
        store.record_sighting(&Sighting {
            session_id: format!("session-{s:04}"),
            at: now - i64::try_from(s).unwrap_or(0) * 1_000,
            event: "UserPromptSubmit".into(),
            transport: Transport::Hook,
            cwd: Some(format!("/src/project-{}", s % 7)),
            subscriptions: Some(Subscribed::Channels(vec!["global".into(), channel.clone()])),
        })?;
        if s < 100 {
            store.deliver(
                &format!("session-{s:04}"),
                Some(&["global".into(), channel]),
                DeliveryPoint::Prompt,
                now,
            )?;
        }
    }
    // The newest message of channel-0 (whose sessions got deliveries): 50 acknowledgements,
    // and 950 more spread over the channel's other messages.
    let newest = ids
        .iter()
        .copied()
        .enumerate()
        .filter(|(i, _)| i % CHANNELS == 0)
        .map(|(_, id)| id)
        .next_back()
        .context("no message on channel-0")?;
    let mut acks = 0;
    for s in (0..sessions).step_by(CHANNELS).take(50) {
        store.acknowledge(
            newest,
            &format!("session-{s:04}"),
            now,
            &Actor::Session(format!("session-{s:04}")),
        )?;
        acks += 1;
    }
    for (n, id) in ids.iter().rev().filter(|id| **id != newest).enumerate() {
        if acks >= 1_000 {
            break;
        }
        let session = format!("session-{:04}", n % sessions);
        store.acknowledge(*id, &session, now, &Actor::Session(session.clone()))?;
        acks += 1;
    }
    Ok((newest, acks))
}
