//! `cargo xtask bench stdio`: what an idle stdio session costs and how fast it answers, for the
//! front end, a std-only floor program and the full server served directly, over real pipes.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use super::ServerBins;
use super::client::{INITIALIZE, INITIALIZED, Proc, ProcSample, request, tool_call};
use super::stats::{Summary, median_p90, millis, num, ratio};
use crate::markdown::{Align, table};

/// Options of `cargo xtask bench stdio`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Sessions per program.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Idle time before each memory reading, in milliseconds.
    #[arg(long, default_value_t = 1500)]
    idle_ms: u64,
    /// Sessions of each program run side by side for the shared-pages series (0: skip it).
    #[arg(long, default_value_t = 4)]
    side_by_side: usize,
    /// Rounds of the side-by-side series.
    #[arg(long, default_value_t = 10)]
    side_rounds: usize,
    /// Use the release binaries already built.
    #[arg(long)]
    skip_build: bool,
}

/// Targets of the light path.
const TARGET_PRIVATE_DIRTY_MIB: f64 = 0.15;
const TARGET_PRIVATE_MIB: f64 = 0.8;
const TARGET_INIT_OVER_FLOOR_MS: f64 = 2.0;
const TARGET_FIRST_CALL_MS: f64 = 5.0;

/// The programs measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// `hooks-mcp`: the front end, handing off on the first call.
    Front,
    /// `floor-stdio`: std only, canned answers.
    Floor,
    /// `hooks-mcp-full serve`: the full server from the start.
    Full,
}

/// One session's figures.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Spawn to the `initialize` response.
    init: Duration,
    /// Spawn to the `tools/list` response.
    list: Duration,
    /// After the handshake, discovery and the idle time (not in the empty-home series).
    idle: Option<ProcSample>,
    /// The first `tools/call`, send to response (not for the floor).
    call: Option<Duration>,
    /// After that call and the idle time (not in the empty-home series).
    after: Option<ProcSample>,
}

/// Whether the session's `HOOKS_MCP_HOME` already holds a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    /// A store created beforehand, as every session but a machine's first finds it.
    WithStore,
    /// Empty: the full server creates the store.
    Empty,
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let bins = ServerBins::build(args.skip_build, true)?;
    let floor = bins
        .floor
        .clone()
        .context("the floor program was not prepared")?;
    let idle = Duration::from_millis(args.idle_ms);
    let runs = args.runs.max(1);

    // The floor answers with the real server's own results, captured once.
    let canned_dir = tempfile::tempdir().context("creating a temporary directory")?;
    let canned = canned_dir.path().join("canned.jsonl");
    let (init_result, list_result) = capture(&bins)?;
    let tools = list_result["tools"].as_array().map_or(0, Vec::len);
    std::fs::write(&canned, format!("{init_result}\n{list_result}\n"))
        .with_context(|| format!("writing {}", canned.display()))?;

    let mut front = Vec::with_capacity(runs);
    let mut floor_runs = Vec::with_capacity(runs);
    let mut full = Vec::with_capacity(runs);
    let order = [Program::Front, Program::Floor, Program::Full];
    for r in 0..runs {
        eprintln!("bench: stdio run {}/{runs}", r + 1);
        // Rotate the order so that no program always runs first (or after the same one).
        for k in 0..order.len() {
            let program = order[(r + k) % order.len()];
            let run = session(program, &bins, &floor, &canned, Home::WithStore, Some(idle))?;
            match program {
                Program::Front => front.push(run),
                Program::Floor => floor_runs.push(run),
                Program::Full => full.push(run),
            }
        }
    }
    eprintln!("bench: {runs} sessions per server on an empty HOOKS_MCP_HOME");
    let mut front_empty = Vec::with_capacity(runs);
    let mut full_empty = Vec::with_capacity(runs);
    for r in 0..runs {
        for k in 0..2 {
            if (r + k) % 2 == 0 {
                front_empty.push(session(
                    Program::Front,
                    &bins,
                    &floor,
                    &canned,
                    Home::Empty,
                    None,
                )?);
            } else {
                full_empty.push(session(
                    Program::Full,
                    &bins,
                    &floor,
                    &canned,
                    Home::Empty,
                    None,
                )?);
            }
        }
    }
    let side = if args.side_by_side > 0 {
        Some(side_by_side(&bins, &floor, &canned, args, idle)?)
    } else {
        None
    };
    print!(
        "{}",
        report(&front, &floor_runs, &full, runs, args.idle_ms, tools)
    );
    print!("{}", report_empty(&front_empty, &full_empty));
    if let Some(side) = side {
        print!("{side}");
    }
    Ok(())
}

/// The real server's `initialize` and `tools/list` results.
fn capture(bins: &ServerBins) -> anyhow::Result<(Value, Value)> {
    let home = tempfile::tempdir().context("creating a temporary directory")?;
    let mut proc = Proc::spawn(&bins.front, &[], home.path(), &bins.full)?;
    let (init, _) = proc.ask(INITIALIZE)?;
    proc.send(INITIALIZED)?;
    let (list, _) = proc.ask(&request(2, "tools/list", json!({})))?;
    Ok((init, list))
}

/// One session of `program` on a fresh `HOOKS_MCP_HOME`: handshake, discovery, and (except for
/// the floor) one `channel_list` call; with `idle`, a reading after each of the two, that long
/// after it.
fn session(
    program: Program,
    bins: &ServerBins,
    floor: &Path,
    canned: &Path,
    home_kind: Home,
    idle: Option<Duration>,
) -> anyhow::Result<Run> {
    let home = tempfile::tempdir().context("creating a temporary directory")?;
    if home_kind == Home::WithStore && program != Program::Floor {
        store::SqliteStore::create(home.path().join("state.db"))?;
    }
    let canned = canned.to_string_lossy();
    let (bin, args): (&Path, Vec<&str>) = match program {
        Program::Front => (&bins.front, vec![]),
        Program::Floor => (floor, vec![&canned]),
        Program::Full => (&bins.full, vec!["serve"]),
    };
    let mut proc = Proc::spawn(bin, &args, home.path(), &bins.full)?;
    proc.ask(INITIALIZE)?;
    let init = proc.started.elapsed();
    proc.send(INITIALIZED)?;
    proc.ask(&request(2, "tools/list", json!({})))?;
    let list = proc.started.elapsed();
    let reading = |proc: &Proc| -> anyhow::Result<Option<ProcSample>> {
        match idle {
            Some(idle) => {
                std::thread::sleep(idle);
                proc.sample().map(Some)
            }
            None => Ok(None),
        }
    };
    let idle_sample = reading(&proc)?;
    if program == Program::Floor {
        return Ok(Run {
            init,
            list,
            idle: idle_sample,
            call: None,
            after: None,
        });
    }
    let (_, call) = proc.ask(&tool_call(3, "channel_list", json!({})))?;
    let after = reading(&proc)?;
    Ok(Run {
        init,
        list,
        idle: idle_sample,
        call: Some(call),
        after,
    })
}

/// Statistics of one figure over runs.
fn stat(runs: &[Run], f: impl Fn(&Run) -> Option<f64>) -> Option<Summary> {
    let values: Vec<f64> = runs.iter().filter_map(f).collect();
    Summary::of(&values)
}

/// Whether `value` meets `target` (at most).
fn verdict(value: Option<f64>, target: f64) -> &'static str {
    match value {
        Some(v) if v <= target => "met",
        Some(_) => "**not met**",
        None => "-",
    }
}

/// The markdown report.
fn report(
    front: &[Run],
    floor: &[Run],
    full: &[Run],
    runs: usize,
    idle_ms: u64,
    tools: usize,
) -> String {
    type Figure = fn(&Run) -> Option<f64>;
    let idle_rows: [(&str, usize, Figure, &str); 8] = [
        (
            "private dirty, MiB",
            3,
            |r| r.idle.map(|s| s.private_dirty_mib()),
            "≤ 0.15",
        ),
        (
            "private (clean + dirty), MiB",
            3,
            |r| r.idle.map(|s| s.private_mib()),
            "≤ 0.8",
        ),
        (
            "resident (RSS), MiB",
            2,
            |r| r.idle.map(|s| s.rss_mib()),
            "",
        ),
        (
            "proportional (PSS), MiB",
            2,
            |r| r.idle.map(|s| s.pss_mib()),
            "",
        ),
        ("threads", 0, |r| r.idle.map(|s| s.threads as f64), "1"),
        ("open fds", 0, |r| r.idle.map(|s| s.fds as f64), ""),
        (
            "spawn → initialize response, ms",
            2,
            |r| Some(millis(r.init)),
            "≤ floor + 2 ms",
        ),
        (
            "spawn → tools/list response, ms",
            2,
            |r| Some(millis(r.list)),
            "",
        ),
    ];
    let mut out = format!(
        "## Stdio: idle session after initialize + tools/list\n\n\
         {runs} sessions per program, interleaved, each on a fresh HOOKS_MCP_HOME holding a \
         store created beforehand (as every session but a machine's first finds it); readings \
         from /proc/PID/smaps_rollup, /proc/PID/status and /proc/PID/fd after {idle_ms} ms idle. \
         Cells are median / p90. The floor is `floor-stdio` (std only) answering with the real \
         server's captured results ({tools} tools); `hooks-mcp-full serve` is the full server \
         without the front end.\n\n"
    );
    let rows: Vec<Vec<String>> = idle_rows
        .iter()
        .map(|(name, decimals, f, target)| {
            let (a, b, c) = (stat(front, f), stat(floor, f), stat(full, f));
            vec![
                (*name).to_string(),
                median_p90(a, *decimals),
                median_p90(b, *decimals),
                ratio(a, b),
                (*target).to_string(),
                median_p90(c, *decimals),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("hooks-mcp", Align::Right),
            ("floor-stdio", Align::Right),
            ("hooks-mcp / floor", Align::Right),
            ("Target", Align::Left),
            ("hooks-mcp-full serve", Align::Right),
        ],
        &rows,
    ));

    let after_rows: [(&str, usize, Figure, &str); 7] = [
        (
            "first tools/call, send → response, ms",
            2,
            |r| r.call.map(millis),
            "≤ 5 (handoff included)",
        ),
        (
            "private dirty, MiB",
            3,
            |r| r.after.map(|s| s.private_dirty_mib()),
            "",
        ),
        (
            "private (clean + dirty), MiB",
            3,
            |r| r.after.map(|s| s.private_mib()),
            "",
        ),
        (
            "resident (RSS), MiB",
            2,
            |r| r.after.map(|s| s.rss_mib()),
            "",
        ),
        (
            "proportional (PSS), MiB",
            2,
            |r| r.after.map(|s| s.pss_mib()),
            "",
        ),
        ("threads", 0, |r| r.after.map(|s| s.threads as f64), ""),
        ("open fds", 0, |r| r.after.map(|s| s.fds as f64), ""),
    ];
    out.push_str(&format!(
        "\n## Stdio: after the first tools/call\n\n\
         The same sessions after one `channel_list` call (for `hooks-mcp` it hands off: `exec` \
         of the full server, replay, store opened) and {idle_ms} ms idle. Cells are median / \
         p90.\n\n"
    ));
    let rows: Vec<Vec<String>> = after_rows
        .iter()
        .map(|(name, decimals, f, target)| {
            vec![
                (*name).to_string(),
                median_p90(stat(front, f), *decimals),
                (*target).to_string(),
                median_p90(stat(full, f), *decimals),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("hooks-mcp (handed off)", Align::Right),
            ("Target", Align::Left),
            ("hooks-mcp-full serve", Align::Right),
        ],
        &rows,
    ));

    // Paired within each run index: the front end against the floor of the same round.
    let init_gap: Vec<f64> = front
        .iter()
        .zip(floor)
        .map(|(a, b)| millis(a.init) - millis(b.init))
        .collect();
    let gap = Summary::of(&init_gap);
    let median = |runs: &[Run], f: Figure| stat(runs, f).map(|s| s.median);
    let targets = [
        (
            "idle private dirty ≤ 0.15 MiB",
            median(front, |r| r.idle.map(|s| s.private_dirty_mib())).map(|v| num(v, 3) + " MiB"),
            verdict(
                median(front, |r| r.idle.map(|s| s.private_dirty_mib())),
                TARGET_PRIVATE_DIRTY_MIB,
            ),
        ),
        (
            "idle private ≤ 0.8 MiB",
            median(front, |r| r.idle.map(|s| s.private_mib())).map(|v| num(v, 3) + " MiB"),
            verdict(
                median(front, |r| r.idle.map(|s| s.private_mib())),
                TARGET_PRIVATE_MIB,
            ),
        ),
        (
            "one thread when idle",
            median(front, |r| r.idle.map(|s| s.threads as f64)).map(|v| num(v, 0)),
            verdict(median(front, |r| r.idle.map(|s| s.threads as f64)), 1.0),
        ),
        (
            "initialize within 2 ms of the floor (paired difference)",
            gap.map(|g| format!("{} ms (p90 {})", num(g.median, 2), num(g.p90, 2))),
            verdict(gap.map(|g| g.median), TARGET_INIT_OVER_FLOOR_MS),
        ),
        (
            "first tools/call ≤ 5 ms, handoff included",
            median(front, |r| r.call.map(millis)).map(|v| num(v, 2) + " ms"),
            verdict(median(front, |r| r.call.map(millis)), TARGET_FIRST_CALL_MS),
        ),
    ];
    let rows: Vec<Vec<String>> = targets
        .into_iter()
        .map(|(name, value, verdict)| {
            vec![
                name.into(),
                value.unwrap_or_else(|| "-".into()),
                verdict.into(),
            ]
        })
        .collect();
    out.push_str("\n## Stdio: targets (medians)\n\n");
    out.push_str(&table(
        &[
            ("Target", Align::Left),
            ("hooks-mcp", Align::Right),
            ("Verdict", Align::Left),
        ],
        &rows,
    ));
    out
}

/// The markdown report of the empty-home series.
fn report_empty(front: &[Run], full: &[Run]) -> String {
    type Figure = fn(&Run) -> Option<f64>;
    let rows: [(&str, Figure); 3] = [
        ("spawn → initialize response, ms", |r| {
            Some(millis(r.init))
        }),
        ("spawn → tools/list response, ms", |r| {
            Some(millis(r.list))
        }),
        ("first tools/call, send → response, ms", |r| {
            r.call.map(millis)
        }),
    ];
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, f)| {
            vec![
                (*name).to_string(),
                median_p90(stat(front, f), 2),
                median_p90(stat(full, f), 2),
            ]
        })
        .collect();
    let mut out = format!(
        "\n## Stdio: empty HOOKS_MCP_HOME (the store does not exist yet)\n\n\
         {} sessions per server, alternating, no idle time: the full server creates the store \
         (file, WAL, schema) on the first call after the handoff (`hooks-mcp`) or at start-up \
         (`hooks-mcp-full serve`). Cells are median / p90.\n\n",
        front.len().max(full.len())
    );
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("hooks-mcp", Align::Right),
            ("hooks-mcp-full serve", Align::Right),
        ],
        &rows,
    ));
    out
}

/// Idle readings of `args.side_by_side` sessions of each program running at once, where the
/// binary's code pages are shared between them (as on a machine running a fleet): the markdown
/// report.
fn side_by_side(
    bins: &ServerBins,
    floor: &Path,
    canned: &Path,
    args: &Args,
    idle: Duration,
) -> anyhow::Result<String> {
    let k = args.side_by_side;
    let rounds = args.side_rounds.max(1);
    let programs = [Program::Front, Program::Floor, Program::Full];
    let mut readings: [Vec<ProcSample>; 3] = Default::default();
    let canned_arg = canned.to_string_lossy();
    for round in 0..rounds {
        eprintln!(
            "bench: {k} sessions side by side, round {}/{rounds}",
            round + 1
        );
        for (p, program) in programs.iter().enumerate() {
            let mut homes = Vec::with_capacity(k);
            let mut procs = Vec::with_capacity(k);
            for _ in 0..k {
                let home = tempfile::tempdir().context("creating a temporary directory")?;
                let (bin, argv): (&Path, Vec<&str>) = match program {
                    Program::Front => (&bins.front, vec![]),
                    Program::Floor => (floor, vec![&canned_arg]),
                    Program::Full => {
                        store::SqliteStore::create(home.path().join("state.db"))?;
                        (&bins.full, vec!["serve"])
                    }
                };
                let mut proc = Proc::spawn(bin, &argv, home.path(), &bins.full)?;
                proc.ask(INITIALIZE)?;
                proc.send(INITIALIZED)?;
                proc.ask(&request(2, "tools/list", json!({})))?;
                procs.push(proc);
                homes.push(home);
            }
            std::thread::sleep(idle);
            for proc in &procs {
                readings[p].push(proc.sample()?);
            }
        }
    }
    type Reading = fn(&ProcSample) -> f64;
    let rows: [(&str, usize, Reading); 4] = [
        ("private dirty per session, MiB", 3, |s| {
            s.private_dirty_mib()
        }),
        ("private (clean + dirty) per session, MiB", 3, |s| {
            s.private_mib()
        }),
        ("proportional (PSS) per session, MiB", 3, |s| s.pss_mib()),
        ("resident (RSS) per session, MiB", 2, |s| s.rss_mib()),
    ];
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, decimals, f)| {
            let cell = |p: usize| {
                let values: Vec<f64> = readings[p].iter().map(f).collect();
                median_p90(Summary::of(&values), *decimals)
            };
            vec![(*name).to_string(), cell(0), cell(1), cell(2)]
        })
        .collect();
    let mut out = format!(
        "\n## Stdio: {k} idle sessions side by side\n\n\
         {rounds} rounds of {k} sessions of each program running at once (a fleet on one \
         machine shares each binary's code pages), read after initialize + tools/list and {} ms \
         idle; {} readings per program. Cells are median / p90.\n\n",
        idle.as_millis(),
        rounds * k
    );
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("hooks-mcp", Align::Right),
            ("floor-stdio", Align::Right),
            ("hooks-mcp-full serve", Align::Right),
        ],
        &rows,
    ));
    Ok(out)
}
