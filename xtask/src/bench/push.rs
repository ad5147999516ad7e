//! Pushing into an idle session, for `cargo xtask bench stdio`: idle sessions of the front end
//! with `HOOKS_MCP_CHANNEL_PUSH=on` beside push off, in interleaved pairs on fresh stores. After
//! the legacy opening (`initialize`, `notifications/initialized`, `tools/list`) and an idle
//! time each process is read: which program it is, its threads and private dirty memory. The
//! session with push on is then sent an alert published through a store handle of this
//! process (another process, for the session): the time from the publication's commit to the
//! `notifications/claude/channel` line, and the process read again after the same idle time.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;
use store::ChannelStore;

use super::client::{INITIALIZE, INITIALIZED, Proc, request};
use super::stats::{Summary, median_p90, millis, num};
use crate::markdown::{Align, table};
use crate::util::procfs::ProcSample;

/// One idle session's figures.
#[derive(Debug)]
struct Run {
    /// After the opening and the idle time.
    idle: ProcSample,
    /// The program it runs then (`/proc/PID/comm`).
    program: String,
    /// With push on: publication → notification, and the reading after the push and the idle
    /// time.
    pushed: Option<(Duration, ProcSample)>,
}

/// Runs `pairs` pairs of idle sessions (push off, push on) on the front end `front` (its
/// companions beside `full`) and returns the report; targets are judged unless `smoke`.
pub(crate) fn series(
    front: &Path,
    full: &Path,
    pairs: usize,
    idle: Duration,
    smoke: bool,
) -> anyhow::Result<String> {
    let mut off = Vec::with_capacity(pairs);
    let mut on = Vec::with_capacity(pairs);
    for pair in 0..pairs {
        eprintln!("bench: push, pair {}/{pairs}", pair + 1);
        let order = if pair % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for push in order {
            let home = tempfile::tempdir().context("creating a temporary directory")?;
            store::SqliteStore::create(home.path().join("state.db"))?;
            let run = session(front, full, home.path(), push, idle)?;
            if push { on.push(run) } else { off.push(run) }
        }
    }
    Ok(report(&off, &on, idle, smoke))
}

/// One session: the opening, the idle time, the reading; with push on, an alert and again.
fn session(
    front: &Path,
    full: &Path,
    home: &Path,
    push: bool,
    idle: Duration,
) -> anyhow::Result<Run> {
    let env: &[(&str, &str)] = if push {
        &[("HOOKS_MCP_CHANNEL_PUSH", "on")]
    } else {
        &[]
    };
    let mut proc = Proc::spawn_with(front, &[], home, full, env)?;
    let (init, _) = proc.ask(INITIALIZE)?;
    let declared = init["capabilities"]["experimental"]["claude/channel"] == json!({});
    if declared != push {
        bail!("push {push} but the capability declared is {declared}: {init}");
    }
    proc.send(INITIALIZED)?;
    proc.ask(&request(2, "tools/list", json!({})))?;
    std::thread::sleep(idle);
    let sample = proc.sample()?;
    let program = proc.program()?;
    let pushed = if push {
        let writer = store::SqliteStore::create(home.join("state.db"))?;
        let now = super::now_ms();
        writer.publish(
            &store::NewMessage {
                channel: "bench".into(),
                body: "an alert for an idle session".into(),
                severity: store::Severity::Alert,
                created_at: now,
                expires_at: now + 3_600_000,
                target: None,
            },
            &store::Actor::Operator("bench".into()),
        )?;
        let committed = Instant::now();
        let line = proc.recv()?;
        let delay = committed.elapsed();
        if line["method"] != "notifications/claude/channel" {
            bail!("expected a push, got {line}");
        }
        drop(writer);
        std::thread::sleep(idle);
        Some((delay, proc.sample()?))
    } else {
        None
    };
    Ok(Run {
        idle: sample,
        program,
        pushed,
    })
}

fn summary(runs: &[Run], f: impl Fn(&Run) -> Option<f64>) -> Option<Summary> {
    Summary::of(&runs.iter().filter_map(f).collect::<Vec<_>>())
}

/// The programs the sessions ran, with counts (`hooks-mcp ×20`).
fn programs(runs: &[Run]) -> String {
    super::client::program_counts(runs.iter().map(|r| r.program.as_str()))
}

/// The series as markdown, with its targets.
fn report(off: &[Run], on: &[Run], idle: Duration, smoke: bool) -> String {
    let dirty = |r: &Run| Some(r.idle.private_dirty_mib());
    let threads = |r: &Run| Some(r.idle.threads as f64);
    let delay = |r: &Run| r.pushed.as_ref().map(|(d, _)| millis(*d));
    let after_dirty = |r: &Run| r.pushed.as_ref().map(|(_, s)| s.private_dirty_mib());
    let after_threads = |r: &Run| r.pushed.as_ref().map(|(_, s)| s.threads as f64);
    let rows = vec![
        vec!["process when idle".to_string(), programs(off), programs(on)],
        vec![
            "threads when idle".to_string(),
            median_p90(summary(off, threads), 0),
            median_p90(summary(on, threads), 0),
        ],
        vec![
            "private dirty when idle, MiB".to_string(),
            median_p90(summary(off, dirty), 3),
            median_p90(summary(on, dirty), 3),
        ],
        vec![
            "publication committed → notification, ms".to_string(),
            "–".to_string(),
            median_p90(summary(on, delay), 1),
        ],
        vec![
            "threads, idle again after the push".to_string(),
            "–".to_string(),
            median_p90(summary(on, after_threads), 0),
        ],
        vec![
            "private dirty, idle again after the push, MiB".to_string(),
            "–".to_string(),
            median_p90(summary(on, after_dirty), 3),
        ],
    ];
    let mut out = format!(
        "\n## Stdio: an idle session with push on beside push off\n\n\
         {} pairs of `hooks-mcp` sessions, interleaved, each on a fresh HOOKS_MCP_HOME with a \
         store: the legacy opening, then {} ms idle and a reading; the session with \
         `HOOKS_MCP_CHANNEL_PUSH=on` is then sent an alert (published by the benchmark through \
         a store handle of its own) and read again after the same idle time. Cells are \
         median / p90.\n\n",
        off.len(),
        idle.as_millis()
    );
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("push off", Align::Right),
            ("push on", Align::Right),
        ],
        &rows,
    ));
    if smoke {
        return out;
    }
    let (Some(off_dirty), Some(on_dirty), Some(on_delay)) =
        (summary(off, dirty), summary(on, dirty), summary(on, delay))
    else {
        return out;
    };
    let all_front = on.iter().all(|r| r.program == "hooks-mcp");
    let most_threads = on.iter().map(|r| r.idle.threads).max().unwrap_or(0);
    let verdict = |met: bool| if met { "met" } else { "**not met**" };
    let rows = vec![
        vec![
            "still the front end while idle with push on".to_string(),
            programs(on),
            verdict(all_front).to_string(),
        ],
        vec![
            "one thread in every session".to_string(),
            format!("at most {most_threads}"),
            verdict(most_threads <= 1).to_string(),
        ],
        vec![
            "private dirty within 10% of push off's".to_string(),
            format!("{:.2}× push off", on_dirty.median / off_dirty.median),
            verdict(on_dirty.median <= off_dirty.median * 1.1).to_string(),
        ],
        vec![
            "pushed within a second (p90, nothing else writing the store)".to_string(),
            format!("{} ms", num(on_delay.p90, 1)),
            verdict(on_delay.p90 < 1000.0).to_string(),
        ],
    ];
    out.push_str("\n### Push targets (medians unless said)\n\n");
    out.push_str(&table(
        &[
            ("Target", Align::Left),
            ("Measured", Align::Right),
            ("Verdict", Align::Left),
        ],
        &rows,
    ));
    out
}
