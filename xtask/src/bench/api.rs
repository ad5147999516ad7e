//! `cargo xtask bench api`: the read API's latency on a filled SQLite store, one request at a
//! time on a keep-alive connection to a release daemon, every route of the OpenAPI document.
//!
//! The store holds 10,000 unexpired messages on 20 channels, 1,000 sessions (each subscribed
//! to one channel, 100 of them with first deliveries recorded), 20 reminders, 10 conditions,
//! 20 interval schedules with 10 firings each, and 1,000 audit entries (the entries of the
//! rest are pruned first; 1,000 acknowledgements make the ones kept).
//! Nothing here asserts a timing.

use std::time::Instant;

use anyhow::{Context, bail};
use store::{
    Actor, AuditStore, ChannelStore, Condition, ConditionStore, DeliveryPoint, EnforcementStore,
    Millis, NewMessage, NewReminder, NewSchedule, NextFire, PutMode, Schedule, ScheduleStore,
    ScriptLanguage, SessionStore, Severity, Sighting, SqliteStore, Step, Subscribed, Transport,
    Trigger,
};

use super::now_ms;
use super::stats::{Summary, millis, num};
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
    // Declared last: removed after the daemon stopped.
    _home: tempfile::TempDir,
}

impl Filled {
    /// Builds the daemon in `profile`, fills a store as `size` says and starts the daemon on
    /// it (`bench` names the benchmark in progress messages).
    pub(super) fn start(bench: &str, size: &StoreSize, profile: Profile) -> anyhow::Result<Filled> {
        anyhow::ensure!(
            size.messages >= CHANNELS && size.sessions >= 100,
            "--messages: at least {CHANNELS}; --sessions: at least 100"
        );
        let bin = cargo::build_daemon(profile)?;
        let home = tempfile::tempdir()?;
        eprintln!(
            "bench {bench}: filling a store with {} messages, {} sessions...",
            size.messages, size.sessions
        );
        let db = home.path().join("state.db");
        let (message_id, audit_rows) = fill(&db, size.messages, size.sessions)?;
        if profile == Profile::Release {
            procfs::write_back_page_cache();
        }
        let daemon = Daemon::start_with(
            &bin,
            home.path(),
            &home.path().join("daemon.log"),
            &[("HOOKS_MCP_LOG", "warn")],
            None,
        )?;
        Ok(Filled {
            daemon,
            db,
            message_id,
            audit_rows,
            _home: home,
        })
    }
}

/// Channels the messages are spread over.
pub(super) const CHANNELS: usize = 20;

/// Runs the benchmark.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized();
    anyhow::ensure!(args.requests >= 1, "--requests: at least 1");
    let filled = Filled::start("api", &args.size, Profile::for_smoke(args.smoke))?;
    let (message_id, audit_rows, daemon) = (filled.message_id, filled.audit_rows, &filled.daemon);
    let mut conn = Conn::connect(daemon.addr())?;
    let doc = get(&mut conn, "/api/v1/openapi.json")?;
    let doc: serde_json::Value = serde_json::from_str(&doc).context("the OpenAPI document")?;
    let paths: Vec<String> = doc["paths"]
        .as_object()
        .context("the OpenAPI document has no paths")?
        .keys()
        .cloned()
        .collect();

    let mut rows = Vec::new();
    for path in &paths {
        let concrete = path
            .replace("{channel}", "channel-0")
            .replace("{id}", &message_id.to_string());
        let mut bytes = 0;
        for _ in 0..20 {
            bytes = get(&mut conn, &concrete)?.len();
        }
        let mut samples = Vec::with_capacity(args.requests);
        for _ in 0..args.requests {
            let started = Instant::now();
            get(&mut conn, &concrete)?;
            samples.push(millis(started.elapsed()));
        }
        let s = Summary::of(&samples).context("no samples")?;
        rows.push(vec![
            format!("`GET {concrete}`"),
            num(s.median, 2),
            num(s.p99, 2),
            num(s.max, 2),
            bytes.to_string(),
        ]);
    }
    drop(filled);

    println!("## Read API latency (`cargo xtask bench api`)\n");
    println!(
        "{} daemon on SQLite; the store holds {} unexpired messages on {CHANNELS} \
         channels, {} sessions and {audit_rows} audit entries. {} sequential requests per \
         route on one keep-alive connection (after 20 warm-up ones); client-side times, \
         request written to response read.\n",
        if args.smoke {
            "Dev (smoke run)"
        } else {
            "Release"
        },
        args.size.messages,
        args.size.sessions,
        args.requests
    );
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
    Ok(())
}

/// One GET; its body. Fails on anything but 200.
fn get(conn: &mut Conn, path: &str) -> anyhow::Result<String> {
    let reply = conn.request_at("GET", path, "")?;
    if reply.status != 200 {
        bail!("GET {path}: {} {}", reply.status, reply.body);
    }
    Ok(reply.body)
}

/// Fills the store at `db`; returns the id of a message with deliveries and acknowledgements,
/// and the number of audit entries kept.
fn fill(db: &std::path::Path, messages: usize, sessions: usize) -> anyhow::Result<(i64, usize)> {
    let store = SqliteStore::create(db)?;
    let now = now_ms();
    let daemon = Actor::Daemon;
    let mut ids = Vec::with_capacity(messages);
    for i in 0..messages {
        let severity = match i % 10 {
            0 => Severity::Critical,
            1..=3 => Severity::Alert,
            _ => Severity::Info,
        };
        let message = NewMessage {
            channel: format!("channel-{}", i % CHANNELS),
            body: format!("Build {i} is red on main: fix or revert before merging anything else."),
            severity,
            created_at: now - 1_000_000 + i64::try_from(i).unwrap_or(0),
            expires_at: now + 86_400_000,
        };
        ids.push(store.publish(&message, &daemon)?.id);
    }
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
