//! `cargo xtask bench hook --store-sizes 100,1000,10000,100000`: how the hook's cost grows with
//! the store.
//!
//! Each size gets a store of its own holding that many unexpired broadcasts: `info` ones on 20
//! channels with a 24-hour lifetime, as a busy fleet publishes them, beside the same 10 `alert`
//! and 2 `critical` messages at every size. A tenth as many sessions (at least ten) are known:
//! each was shown what was due once, as its first prompt does. Timed through `hooks-mcp-hook`,
//! every channel subscribed, the delivery budget at its default: a known session's
//! `UserPromptSubmit` and `PreToolUse` (nothing new for it, its urgent messages again), and a
//! new session's first `UserPromptSubmit` (a session id of its own at every run), with the
//! size of what it prints. The smallest size is the reference: the targets are a known
//! session's events within 1.25× of the smallest store's and a new session's first prompt
//! within 2×, its broadcasts within the budget. Nothing is asserted; the table says.
//!
//! With `--postgres` each size is a fresh schema of the database `HOOKS_MCP_DATABASE_URL`
//! names, each served by a local daemon (`hooks-mcp-full serve`) the hook forwards its events
//! to; its hook counter confirms that every run was answered by it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;
use store::{Actor, DeliveryPoint, NewMessage, Severity, Sighting, Store, Subscribed, Transport};
use tools_channels::DeliveryBudget;

use super::{Args, Case, KNOWN_SESSION, Measured, NEW_SESSION_ENV, measure_cases};
use super::{PRE_TOOL_USE, USER_PROMPT_SUBMIT};
use crate::bench::now_ms;
use crate::bench::store_bench::PgSchema;
use crate::util::daemon::Daemon;

/// Channels the broadcasts are spread over.
const CHANNELS: usize = 20;
/// Alert and critical messages, the same at every size.
const ALERTS: usize = 10;
const CRITICALS: usize = 2;
/// Sizes measured when `--store-sizes` is given without values.
pub(crate) const DEFAULT_SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];

/// One size's store: where it is, and what serves it.
struct Sized {
    messages: usize,
    sessions: usize,
    /// The variables a hook on it runs with.
    vars: Vec<(&'static str, String)>,
    /// SQLite: its directory; PostgreSQL: the daemon's.
    _home: tempfile::TempDir,
    /// PostgreSQL: the schema and the daemon answering for it.
    pg: Option<(PgSchema, Daemon)>,
}

/// Runs the growth series over `sizes` with the hook `lean` (and, on PostgreSQL, the daemon
/// `full`), the floor `floor` as the std-only reference.
pub(super) fn run(
    args: &Args,
    sizes: &[usize],
    lean: &Path,
    full: &Path,
    floor: &Path,
) -> anyhow::Result<()> {
    anyhow::ensure!(!sizes.is_empty(), "--store-sizes: at least one size");
    let mut sizes = sizes.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    let work = tempfile::tempdir().context("creating a temporary directory")?;
    let pre = work.path().join("pre.json");
    let ups = work.path().join("ups.json");
    std::fs::write(&pre, PRE_TOOL_USE)?;
    std::fs::write(&ups, USER_PROMPT_SUBMIT)?;
    let version = if args.postgres {
        Some(PgSchema::server_version()?)
    } else {
        None
    };
    let mut stores = Vec::with_capacity(sizes.len());
    for &messages in &sizes {
        stores.push(prepare(args, messages, full)?);
    }

    let hook = |event: &str| -> Vec<OsString> { vec![lean.into(), "hook".into(), event.into()] };
    let mut cases: Vec<Case<'_>> = vec![(
        "floor-hook (std only)".to_owned(),
        ups.as_path(),
        vec![floor.into()],
        Vec::new(),
    )];
    for s in &stores {
        let size = s.messages;
        let mut new_session = s.vars.clone();
        new_session.push((NEW_SESSION_ENV, "1".to_owned()));
        cases.extend([
            (
                format!("{size}: known session, UserPromptSubmit"),
                ups.as_path(),
                hook("UserPromptSubmit"),
                s.vars.clone(),
            ),
            (
                format!("{size}: known session, PreToolUse"),
                pre.as_path(),
                hook("PreToolUse"),
                s.vars.clone(),
            ),
            (
                format!("{size}: new session, first UserPromptSubmit"),
                ups.as_path(),
                hook("UserPromptSubmit"),
                new_session,
            ),
        ]);
    }
    let answered = |s: &Sized| -> anyhow::Result<u64> {
        let Some((_, daemon)) = &s.pg else {
            return Ok(0);
        };
        let (_, body) = daemon::probe_health(daemon.addr(), Some("full"), Duration::from_secs(2))?;
        let v: Value = serde_json::from_str(&body)?;
        v["hooks"]["answered"]
            .as_u64()
            .context("the daemon's /health?level=full reports no hook counter")
    };
    let before = stores
        .iter()
        .map(answered)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let exe = std::env::current_exe().context("locating this program")?;
    let results = measure_cases(args, &exe, work.path(), cases)?;
    for (s, before) in stores.iter().zip(before) {
        if s.pg.is_some() {
            let forwarded = answered(s)? - before;
            let expected = 3 * (args.runs + args.warmup) as u64;
            if forwarded != expected {
                bail!(
                    "the daemon of the {}-message store answered {forwarded} hooks, not the \
                     {expected} the series ran: it did not measure forwarding",
                    s.messages
                );
            }
        }
    }
    for s in &mut stores {
        if let Some((_, daemon)) = &mut s.pg {
            daemon.stop()?;
        }
    }
    report(args, &stores, &results, version.as_deref());
    Ok(())
}

/// A store of `messages` broadcasts with its known sessions, and how a hook reaches it.
fn prepare(args: &Args, messages: usize, full: &Path) -> anyhow::Result<Sized> {
    let sessions = (messages / 10).max(10);
    let home = tempfile::tempdir().context("creating a store directory")?;
    eprintln!(
        "bench hook: a store of {messages} broadcasts and {sessions} known sessions{}...",
        if args.postgres { " (PostgreSQL)" } else { "" }
    );
    if !args.postgres {
        let db: PathBuf = home.path().join("state.db");
        let store: Arc<dyn Store> = Arc::new(store::SqliteStore::create(&db)?);
        fill(&store, messages, sessions, false)?;
        drop(store);
        return Ok(Sized {
            messages,
            sessions,
            vars: vec![("HOOKS_MCP_HOME", home.path().display().to_string())],
            _home: home,
            pg: None,
        });
    }
    let schema = PgSchema::create()?;
    let options = store::PgOptions {
        create: true,
        pool_size: 8,
        ..store::PgOptions::default()
    };
    let (pg, _) = store::PostgresStore::open(&schema.url, &options)?;
    let store: Arc<dyn Store> = Arc::new(pg);
    fill(&store, messages, sessions, true)?;
    drop(store);
    let log = home.path().join("daemon.log");
    let url = schema.url.clone();
    let daemon = Daemon::start_configured(full, home.path(), &log, None, |cmd| {
        cmd.env(store::DATABASE_URL_ENV, &url)
            .env("HOOKS_MCP_LOG", "warn");
    })?;
    let vars = vec![
        (store::DATABASE_URL_ENV, schema.url.clone()),
        ("MCP_HOST", "127.0.0.1".to_owned()),
        ("MCP_PORT", daemon.port.to_string()),
        ("HOOKS_MCP_HOOK_FORWARD", "auto".to_owned()),
    ];
    Ok(Sized {
        messages,
        sessions,
        vars,
        _home: home,
        pg: Some((schema, daemon)),
    })
}

/// Publishes `messages` broadcasts and makes `sessions` sessions known (the measured known
/// session first), in parallel on PostgreSQL.
fn fill(
    store: &Arc<dyn Store>,
    messages: usize,
    sessions: usize,
    parallel: bool,
) -> anyhow::Result<()> {
    let now = now_ms();
    let urgent = (ALERTS + CRITICALS).min(messages);
    let message = |i: usize| {
        let severity = if i < CRITICALS {
            Severity::Critical
        } else if i < urgent {
            Severity::Alert
        } else {
            Severity::Info
        };
        NewMessage {
            channel: format!("channel-{:02}", i % CHANNELS),
            body: format!(
                "Build {i} of main is green again: rebase before pushing and re-run the \
                 integration suite."
            ),
            severity,
            created_at: now - 3_600_000 + i64::try_from(i).unwrap_or(0) % 3_000_000,
            expires_at: now + 86_400_000,
            target: None,
        }
    };
    let session = |s: usize| {
        if s == 0 {
            KNOWN_SESSION.to_owned()
        } else {
            format!("known-{s:05}")
        }
    };
    let budget = DeliveryBudget::DEFAULT;
    let make_known = |store: &dyn Store, s: usize| -> anyhow::Result<()> {
        let id = session(s);
        store.record_sighting(&Sighting {
            session_id: id.clone(),
            at: now,
            event: "UserPromptSubmit".into(),
            transport: Transport::Hook,
            cwd: Some("/home/dev/src/app".into()),
            subscriptions: Some(Subscribed::All),
        })?;
        store.deliver_within(
            &id,
            None,
            DeliveryPoint::Prompt,
            now,
            &mut budget.for_event(),
        )?;
        Ok(())
    };
    let threads = if parallel { 8 } else { 1 };
    let actor = Actor::Daemon;
    let publish_range = |store: &dyn Store, t: usize| -> anyhow::Result<()> {
        let mut failed = None;
        let mut work = || {
            for i in (t..messages).step_by(threads) {
                if let Err(e) = store.publish(&message(i), &actor) {
                    failed = Some(e);
                    return;
                }
            }
        };
        store.in_one_transaction(true, &mut work)?;
        failed.map_or(Ok(()), |e| Err(e.into()))
    };
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || publish_range(&**store, t)))
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a seeding thread panicked"))??;
        }
        Ok(())
    })?;
    // The measured session first, so that it is known whatever follows.
    make_known(&**store, 0)?;
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> anyhow::Result<()> {
                    for s in (1..sessions).filter(|s| s % threads == t) {
                        make_known(&**store, s)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a seeding thread panicked"))??;
        }
        Ok(())
    })?;
    let counts = store.counts(now)?;
    anyhow::ensure!(
        counts.active_messages == messages as u64,
        "the store holds {} unexpired messages, not {messages}",
        counts.active_messages
    );
    Ok(())
}

/// The measured cases of one size, by their label's suffix.
fn of<'a>(results: &'a [Measured], size: usize, what: &str) -> Option<&'a Measured> {
    results
        .iter()
        .find(|m| m.label == format!("{size}: {what}"))
}

fn report(args: &Args, stores: &[Sized], results: &[Measured], pg: Option<&str>) {
    let backend = match pg {
        Some(version) => format!("PostgreSQL {version}, each hook forwarded to a local daemon"),
        None => "SQLite, each hook opening the store itself".to_owned(),
    };
    println!(
        "## hook command by store size ({backend}; {} runs each)\n",
        args.runs
    );
    let sizes: Vec<usize> = stores.iter().map(|s| s.messages).collect();
    let (Some(&small), Some(&large)) = (sizes.first(), sizes.last()) else {
        return;
    };
    let header: Vec<String> = stores
        .iter()
        .map(|s| format!("{} msgs / {} sessions", s.messages, s.sessions))
        .collect();
    println!("| event | {} | largest / smallest |", header.join(" | "));
    println!("|---|{}---:|", "---:|".repeat(sizes.len()));
    let budget = DeliveryBudget::DEFAULT;
    let rows = [
        ("known session, UserPromptSubmit", 1.25),
        ("known session, PreToolUse", 1.25),
        ("new session, first UserPromptSubmit", 2.0),
    ];
    let mut verdicts = Vec::new();
    for (what, limit) in rows {
        let cells: Vec<String> = sizes
            .iter()
            .map(|&size| match of(results, size, what) {
                Some(m) => format!("{:.2} ms (p90 {:.2})", m.median_ms, m.p90_ms),
                None => "–".to_owned(),
            })
            .collect();
        let ratio = match (of(results, small, what), of(results, large, what)) {
            (Some(a), Some(b)) => b.median_ms / a.median_ms,
            _ => f64::NAN,
        };
        println!("| {what} | {} | {ratio:.2}× |", cells.join(" | "));
        verdicts.push((what, ratio, limit));
    }
    let what = "new session, first UserPromptSubmit";
    let cells: Vec<String> = sizes
        .iter()
        .map(|&size| match of(results, size, what) {
            Some(m) => format!(
                "{:.0} B, {:.0} tokens",
                m.output_max_bytes, m.context_max_tokens
            ),
            None => "–".to_owned(),
        })
        .collect();
    println!(
        "| its output, largest (whole answer; broadcasts in tokens) | {} | – |",
        cells.join(" | ")
    );
    if let Some(floor) = results.iter().find(|m| m.label.starts_with("floor-hook")) {
        println!(
            "\nThe std-only floor (`floor-hook`, the same payload): {:.2} ms (p90 {:.2}).",
            floor.median_ms, floor.p90_ms
        );
    }
    println!(
        "\nEach store: that many unexpired broadcasts ({ALERTS} alert and {CRITICALS} critical, \
         the rest info on {CHANNELS} channels, a 24-hour lifetime) and a tenth as many known \
         sessions (each shown what was due once). The known session has nothing new and is \
         shown its unacknowledged alert and critical messages again; the new session is a new \
         id at every run. Budget: {} tokens (bytes / 4).\n",
        budget.tokens()
    );
    if args.smoke {
        println!("Smoke run (dev binaries, two runs per command): no target judged.");
        return;
    }
    println!(
        "| target ({large} against {small} messages, medians of the same run) | measured | verdict |"
    );
    println!("|---|---:|---|");
    for (what, ratio, limit) in verdicts {
        println!(
            "| {what} ≤ {limit:.2}× | {ratio:.2}× | {} |",
            if ratio <= limit { "met" } else { "not met" }
        );
    }
    if let Some(m) = of(results, large, what) {
        let tokens = f64::from(budget.tokens());
        println!(
            "| the new session's broadcasts ≤ {tokens:.0} tokens | {:.0} | {} |",
            m.context_max_tokens,
            if m.context_max_tokens <= tokens {
                "met"
            } else {
                "not met"
            }
        );
    }
}
