//! `cargo xtask bench tools`: every registered tool's call latency through `catalogue::call`
//! on a real SQLite store, and `tools/call` round trips through the real stdio server.

use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use super::client::{INITIALIZE, INITIALIZED, Proc, request, tool_call};
use super::fixtures::ToolBench;
use super::stats::{Summary, micros, num};
use super::{ServerBins, now_ms};
use crate::markdown::{Align, table};
use crate::util::cargo::Profile;

/// Options of `cargo xtask bench tools`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Timed calls per tool, in process.
    #[arg(long, default_value_t = 300)]
    iterations: usize,
    /// Timed `tools/call` round trips per tool through the stdio server.
    #[arg(long, default_value_t = 200)]
    calls: usize,
    /// Use the binaries already built.
    #[arg(long)]
    skip_build: bool,
    /// Smoke run: a few calls per tool, dev binaries; every path runs, the figures mean
    /// nothing.
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
            iterations: 2,
            calls: 2,
            ..self.clone()
        }
    }
}

/// Untimed calls before each timed series.
const WARM_UP: usize = 20;

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized();
    let bins = ServerBins::build(Profile::for_smoke(args.smoke), args.skip_build, false)?;
    let iterations = args.iterations.max(1);
    println!("## Tools: in process (catalogue::call, SQLite store)\n");
    println!(
        "{iterations} timed calls per tool after {WARM_UP} untimed, each on its own fresh store \
         seeded with 20 broadcasts, 5 conditions, 10 reminders and 10 schedules; what a call \
         consumes (a message to acknowledge, a schedule to cancel...) is created outside the \
         timed call.\n"
    );
    let mut rows = Vec::new();
    for registration in catalogue::registrations() {
        let name = registration.name;
        eprintln!("bench: tool {name}");
        let s = in_process(name, iterations)?;
        rows.push(vec![
            registration.category.to_string(),
            format!("`{name}`"),
            num(s.median, 1),
            num(s.p90, 1),
            num(s.p99, 1),
            num(1e6 / s.median, 0),
        ]);
    }
    println!(
        "{}",
        table(
            &[
                ("Category", Align::Left),
                ("Tool", Align::Left),
                ("median µs", Align::Right),
                ("p90 µs", Align::Right),
                ("p99 µs", Align::Right),
                ("calls/s at median", Align::Right),
            ],
            &rows,
        )
    );

    let calls = args.calls.max(1);
    println!("## Tools: through the stdio server (tools/call round trips)\n");
    println!(
        "One `hooks-mcp` session (a fresh, empty store) after initialize, tools/list and 10 \
         `channel_publish` calls (the first hands off to the full server); then {calls} timed \
         round trips of each call below, send to response, over real pipes.\n"
    );
    println!("{}", over_stdio(&bins, calls)?);
    Ok(())
}

/// Latency of `iterations` calls of `tool` (µs), on a fresh seeded store.
pub(crate) fn in_process(tool: &str, iterations: usize) -> anyhow::Result<Summary> {
    let bench = ToolBench::new(now_ms())?;
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..WARM_UP + iterations {
        let now = now_ms();
        let args = bench.args(tool, i, now)?;
        let ctx = bench.context(now);
        let started = Instant::now();
        let result = catalogue::call(tool, &ctx, args);
        let elapsed = started.elapsed();
        result.with_context(|| format!("`{tool}` failed on iteration {i}"))?;
        if i >= WARM_UP {
            samples.push(micros(elapsed));
        }
    }
    Summary::of(&samples).context("no samples")
}

/// `tools/call` round trips through a handed-off stdio session, as a markdown table.
fn over_stdio(bins: &ServerBins, calls: usize) -> anyhow::Result<String> {
    let home = tempfile::tempdir().context("creating a temporary directory")?;
    store::SqliteStore::create(home.path().join("state.db"))?;
    let mut proc = Proc::spawn(&bins.front, &[], home.path(), &bins.full)?;
    proc.ask(INITIALIZE)?;
    proc.send(INITIALIZED)?;
    proc.ask(&request(2, "tools/list", json!({})))?;
    let mut id = 3;
    let publish = json!({
        "channel": "deploys",
        "message": "Deploy freeze starts at 17:00 UTC; hold merges to main until then.",
        "severity": "alert",
    });
    let (_, handoff) = proc.ask(&tool_call(id, "channel_publish", publish.clone()))?;
    for _ in 1..10 {
        id += 1;
        proc.ask(&tool_call(id, "channel_publish", publish.clone()))?;
    }
    let cases = [
        ("channel_list", json!({})),
        ("channel_read", json!({ "limit": 20 })),
        ("channel_publish", publish),
    ];
    let mut rows = vec![vec![
        "`channel_publish` (first call: handoff)".to_string(),
        "1".into(),
        num(micros(handoff), 0),
        "-".into(),
        "-".into(),
    ]];
    for (tool, args) in cases {
        eprintln!("bench: {calls} × {tool} over stdio");
        let mut samples = Vec::with_capacity(calls);
        for i in 0..WARM_UP + calls {
            id += 1;
            let (_, elapsed) = proc.ask(&tool_call(id, tool, args.clone()))?;
            if i >= WARM_UP {
                samples.push(micros(elapsed));
            }
        }
        let s = Summary::of(&samples).context("no samples")?;
        rows.push(vec![
            format!("`{tool}`"),
            s.n.to_string(),
            num(s.median, 0),
            num(s.p90, 0),
            num(s.p99, 0),
        ]);
    }
    Ok(table(
        &[
            ("Call", Align::Left),
            ("n", Align::Right),
            ("median µs", Align::Right),
            ("p90 µs", Align::Right),
            ("p99 µs", Align::Right),
        ],
        &rows,
    ))
}
