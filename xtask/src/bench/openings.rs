//! The stdio front end's two openings side by side, for `cargo xtask bench stdio`: the legacy
//! one (`initialize`, `notifications/initialized`, `tools/list`) and Claude Code's 2026-07-28
//! one (`server/discover`, `subscriptions/listen` for tool and resource list changes,
//! `tools/list`), in interleaved pairs on fresh stores, beside the 2026-07-28 opening followed
//! by one `tools/call` (the session handed over to the full server, its subscription with
//! it). After each opening and an idle time the process is read: which program it is (the
//! front end, or a server it handed over to), its threads and private dirty memory; then its
//! wake-ups over a second idle time of the same length (context switches of all its threads:
//! a quiet store should cost none); and the first request's send → reply time (`initialize`
//! against `server/discover`).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::client::{INITIALIZE, INITIALIZED, Proc, request};
use super::stats::{Summary, median_p90, millis, num};
use crate::markdown::{Align, table};
use crate::util::procfs::{ProcSample, context_switches};

/// The `_meta` every 2026-07-28 request of the benchmark carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hooks-mcp-bench", "version": "1.0"},
    })
}

/// A 2026-07-28 request line.
fn modern(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    request(id, method, params)
}

/// The openings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    Legacy,
    Modern,
    /// The 2026-07-28 opening, then one `tools/call` (handed over).
    ModernThenCall,
}

/// One opening's figures.
#[derive(Debug)]
struct Run {
    /// The first request (`initialize` or `server/discover`), send → reply.
    first: Duration,
    /// The `tools/list` that ends the opening, send → reply.
    list: Duration,
    /// The process after the idle time.
    sample: ProcSample,
    /// The program the process runs then (`/proc/PID/comm`).
    program: String,
    /// Context switches per second over the second idle time.
    wakeups: f64,
}

/// Runs `pairs` pairs of openings on the front end `front` (its companions beside `full`) and
/// returns the report; the 2026 opening's targets are judged unless `smoke`.
pub(crate) fn series(
    front: &Path,
    full: &Path,
    pairs: usize,
    idle: Duration,
    smoke: bool,
) -> anyhow::Result<String> {
    let mut legacy = Vec::with_capacity(pairs);
    let mut modern = Vec::with_capacity(pairs);
    let mut called = Vec::with_capacity(pairs);
    for pair in 0..pairs {
        eprintln!("bench: openings, pair {}/{pairs}", pair + 1);
        let order = if pair % 2 == 0 {
            [Opening::Legacy, Opening::Modern, Opening::ModernThenCall]
        } else {
            [Opening::ModernThenCall, Opening::Modern, Opening::Legacy]
        };
        for opening in order {
            let home = tempfile::tempdir().context("creating a temporary directory")?;
            store::SqliteStore::create(home.path().join("state.db"))?;
            let run = open(front, full, home.path(), opening, idle)?;
            match opening {
                Opening::Legacy => legacy.push(run),
                Opening::Modern => modern.push(run),
                Opening::ModernThenCall => called.push(run),
            }
        }
    }
    Ok(report(&legacy, &modern, &called, idle, smoke))
}

/// One session: the opening, the idle time, the reading.
fn open(
    front: &Path,
    full: &Path,
    home: &Path,
    opening: Opening,
    idle: Duration,
) -> anyhow::Result<Run> {
    let mut proc = Proc::spawn(front, &[], home, full)?;
    let (first, list) = match opening {
        Opening::Legacy => {
            let (_, first) = proc.ask(INITIALIZE)?;
            proc.send(INITIALIZED)?;
            let (_, list) = proc.ask(&request(2, "tools/list", json!({})))?;
            (first, list)
        }
        Opening::Modern | Opening::ModernThenCall => {
            let (_, first) = proc.ask(&modern(1, "server/discover", json!({})))?;
            let listen = json!({"notifications": {"toolsListChanged": true,
                                                  "resourcesListChanged": true}});
            proc.send(&modern(2, "subscriptions/listen", listen))?;
            let ack = proc.recv()?;
            if ack["method"] != "notifications/subscriptions/acknowledged" {
                bail!("expected the subscription's acknowledgement, got {ack}");
            }
            let (_, list) = proc.ask(&modern(3, "tools/list", json!({})))?;
            if opening == Opening::ModernThenCall {
                let call = json!({"name": "channel_list", "arguments": {}});
                let (reply, _) = proc.ask(&modern(4, "tools/call", call))?;
                if reply.get("content").is_none() || reply["isError"] == true {
                    bail!("the tools/call failed: {reply}");
                }
            }
            (first, list)
        }
    };
    std::thread::sleep(idle);
    let sample = proc.sample()?;
    let program = proc.program()?;
    let before = context_switches(proc.pid())?;
    std::thread::sleep(idle);
    let after = context_switches(proc.pid())?;
    Ok(Run {
        first,
        list,
        sample,
        program,
        wakeups: after.saturating_sub(before) as f64 / idle.as_secs_f64().max(1e-3),
    })
}

fn summary(runs: &[Run], f: impl Fn(&Run) -> f64) -> Option<Summary> {
    Summary::of(&runs.iter().map(f).collect::<Vec<_>>())
}

/// The programs the sessions ran, with counts (`hooks-mcp ×20`).
fn programs(runs: &[Run]) -> String {
    super::client::program_counts(runs.iter().map(|r| r.program.as_str()))
}

/// The series as markdown, with the 2026 opening's targets.
fn report(legacy: &[Run], modern: &[Run], called: &[Run], idle: Duration, smoke: bool) -> String {
    let dirty = |r: &Run| r.sample.private_dirty_mib();
    let threads = |r: &Run| r.sample.threads as f64;
    let first = |r: &Run| millis(r.first);
    let list = |r: &Run| millis(r.list);
    let wakeups = |r: &Run| r.wakeups;
    let row = |label: &str, f: &dyn Fn(&Run) -> f64, digits: usize| {
        vec![
            label.to_string(),
            median_p90(summary(legacy, f), digits),
            median_p90(summary(modern, f), digits),
            median_p90(summary(called, f), digits),
        ]
    };
    let rows = vec![
        vec![
            "process after the opening".to_string(),
            programs(legacy),
            programs(modern),
            programs(called),
        ],
        row("threads", &threads, 0),
        row("private dirty, MiB", &dirty, 3),
        row("wake-ups per second, second idle time", &wakeups, 1),
        row(
            "first request (initialize / server/discover), send → reply, ms",
            &first,
            2,
        ),
        row("tools/list, send → reply, ms", &list, 2),
    ];
    let mut out = format!(
        "\n## Stdio: the legacy opening and the 2026-07-28 opening\n\n\
         {} rounds of three sessions of `hooks-mcp`, interleaved, each on a fresh \
         HOOKS_MCP_HOME with a store: the legacy opening (`initialize`, `notifications/initialized`, `tools/list`) \
         against Claude Code's (`server/discover`, `subscriptions/listen` for tool and resource \
         list changes, `tools/list`), beside the latter followed by one `tools/call` (handed \
         over to the full server with its subscription); then {} ms idle and a reading, and the \
         wake-ups (context switches of all threads) over a second idle time as long. Cells are \
         median / p90.{}\n\n",
        legacy.len(),
        idle.as_millis(),
        if idle < Duration::from_secs(5) {
            " The full server's checks for listeners come every 5 s: an idle time under that \
             may count none of them (`--idle-ms 6000` or more sees them)."
        } else {
            ""
        }
    );
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("legacy opening", Align::Right),
            ("2026-07-28 opening", Align::Right),
            ("2026-07-28 opening + tools/call", Align::Right),
        ],
        &rows,
    ));
    if smoke {
        return out;
    }
    let (Some(l_dirty), Some(m_dirty), Some(l_first), Some(m_first), Some(m_threads)) = (
        summary(legacy, dirty),
        summary(modern, dirty),
        summary(legacy, first),
        summary(modern, first),
        summary(modern, threads),
    ) else {
        return out;
    };
    let all_front = modern.iter().all(|r| r.program == "hooks-mcp");
    let verdict = |met: bool| if met { "met" } else { "**not met**" };
    let rows = vec![
        vec![
            "still the front end after the opening".to_string(),
            programs(modern),
            verdict(all_front).to_string(),
        ],
        vec![
            "one thread".to_string(),
            num(m_threads.median, 0),
            verdict(m_threads.median <= 1.0).to_string(),
        ],
        vec![
            "private dirty within 10% of the legacy opening's".to_string(),
            format!("{:.2}× legacy", m_dirty.median / l_dirty.median),
            verdict(m_dirty.median <= l_dirty.median * 1.1).to_string(),
        ],
        vec![
            "discover within the legacy initialize's spread (≤ its p90)".to_string(),
            format!(
                "{} ms against ≤ {} ms",
                num(m_first.median, 2),
                num(l_first.p90, 2)
            ),
            verdict(m_first.median <= l_first.p90).to_string(),
        ],
    ];
    out.push_str("\n### The 2026-07-28 opening's targets (medians)\n\n");
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
