//! `cargo xtask bench stdio`: what an idle stdio session costs and how fast it answers, for the
//! front end, a std-only floor program and the full server served directly, over real pipes.
//!
//! Four series, each on fresh `HOOKS_MCP_HOME` directories:
//! - memory: sessions read from `/proc` after initialize + tools/list and an idle time, then
//!   again after one `tools/call` and the same idle time;
//! - latency: sessions timed back to back with no idle time (their stores created up front, so
//!   that no file-system flush from the set-up lands inside a timing);
//! - empty home: the same timings when the store does not exist yet;
//! - side by side: several idle sessions of one program at once, sharing its code pages;
//! - openings: the front end after the legacy opening and after the 2026-07-28 one
//!   (`super::openings`);
//! - push: idle sessions of the front end with push on beside push off, and a push's delay
//!   (`super::push`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use super::ServerBins;
use super::client::{INITIALIZE, INITIALIZED, Proc, request, tool_call};
use super::stats::{Summary, median_p90, millis, num, ratio};
use crate::markdown::{Align, table};
use crate::util::cargo::Profile;
use crate::util::procfs::ProcSample;

/// Options of `cargo xtask bench stdio`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Sessions per program in the latency and empty-home series.
    #[arg(long, default_value_t = 50)]
    runs: usize,
    /// Sessions per program in the memory series (each idles twice).
    #[arg(long, default_value_t = 30)]
    memory_runs: usize,
    /// Idle time before each memory reading, in milliseconds.
    #[arg(long, default_value_t = 1500)]
    idle_ms: u64,
    /// Sessions of each program run at once in the side-by-side series (0: skip it).
    #[arg(long, default_value_t = 4)]
    side_by_side: usize,
    /// Rounds of the side-by-side series.
    #[arg(long, default_value_t = 10)]
    side_rounds: usize,
    /// Rounds of the openings series, each three sessions (the legacy opening, the 2026-07-28
    /// one, and the 2026-07-28 one with a `tools/call`; 0: skip it).
    #[arg(long, default_value_t = 20)]
    opening_pairs: usize,
    /// Run only the openings series.
    #[arg(long)]
    only_openings: bool,
    /// Pairs of idle sessions in the push series (push on against off; 0: skip it).
    #[arg(long, default_value_t = 20)]
    push_pairs: usize,
    /// Run only the push series.
    #[arg(long)]
    only_push: bool,
    /// Use the binaries already built.
    #[arg(long)]
    skip_build: bool,
    /// Smoke run: one session per series, short idle times, dev binaries; every path runs,
    /// the figures mean nothing and no target is judged.
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
            runs: 1,
            memory_runs: 1,
            idle_ms: 50,
            side_by_side: 2,
            side_rounds: 1,
            opening_pairs: 1,
            push_pairs: 1,
            ..self.clone()
        }
    }
}

/// Targets of the light path.
const TARGET_PRIVATE_DIRTY_MIB: f64 = 0.15;
const TARGET_PRIVATE_MIB: f64 = 0.8;
const TARGET_INIT_OVER_FLOOR_MS: f64 = 2.0;
const TARGET_FIRST_CALL_MS: f64 = 5.0;

/// The programs measured; `as usize` indexes [`PerProgram`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// `hooks-mcp`: the front end, handing off on the first call.
    Front = 0,
    /// `floor-stdio`: std only, canned answers.
    Floor = 1,
    /// `hooks-mcp-full serve`: the full server from the start.
    Full = 2,
}

const PROGRAMS: [Program; 3] = [Program::Front, Program::Floor, Program::Full];

/// One series' sessions, by program.
type PerProgram = [Vec<Run>; 3];

/// One session's figures.
#[derive(Debug, Clone, Copy)]
struct Run {
    /// Spawn to the `initialize` response.
    init: Duration,
    /// Spawn to the `tools/list` response.
    list: Duration,
    /// After the handshake, discovery and the idle time (memory series only).
    idle: Option<ProcSample>,
    /// The first `tools/call`, send to response (not for the floor).
    call: Option<Duration>,
    /// After that call and the idle time (memory series only).
    after: Option<ProcSample>,
    /// A `ping` right after the last reading, send to response (memory series only): what
    /// waking an idle process costs on this machine, for every program alike.
    ping: Option<Duration>,
}

/// The programs and their inputs.
struct Setup {
    bins: ServerBins,
    floor: PathBuf,
    canned: PathBuf,
    _canned_dir: tempfile::TempDir,
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let args = &args.sized();
    let bins = ServerBins::build(Profile::for_smoke(args.smoke), args.skip_build, true)?;
    let idle = Duration::from_millis(args.idle_ms);
    let openings = |pairs: usize| -> anyhow::Result<String> {
        if pairs == 0 {
            return Ok(String::new());
        }
        super::openings::series(&bins.front, &bins.full, pairs, idle, args.smoke)
    };
    let push = |pairs: usize| -> anyhow::Result<String> {
        if pairs == 0 {
            return Ok(String::new());
        }
        super::push::series(&bins.front, &bins.full, pairs, idle, args.smoke)
    };
    if args.only_openings {
        print!("{}", openings(args.opening_pairs.max(1))?);
        return Ok(());
    }
    if args.only_push {
        print!("{}", push(args.push_pairs.max(1))?);
        return Ok(());
    }
    let openings = openings(args.opening_pairs)?;
    let push = push(args.push_pairs)?;
    let floor = bins
        .floor
        .clone()
        .context("the floor program was not prepared")?;
    // The floor answers with the real server's own results, captured once.
    let canned_dir = tempfile::tempdir().context("creating a temporary directory")?;
    let canned = canned_dir.path().join("canned.jsonl");
    let (init_result, list_result) = capture(&bins)?;
    let tools = list_result["tools"].as_array().map_or(0, Vec::len);
    std::fs::write(&canned, format!("{init_result}\n{list_result}\n"))
        .with_context(|| format!("writing {}", canned.display()))?;
    let setup = Setup {
        bins,
        floor,
        canned,
        _canned_dir: canned_dir,
    };
    let runs = args.runs.max(1);
    let memory_runs = args.memory_runs.max(1);

    let mut memory: PerProgram = Default::default();
    for r in 0..memory_runs {
        eprintln!("bench: memory series, round {}/{memory_runs}", r + 1);
        for program in rotated(r) {
            let home = Home::new(program, true)?;
            memory[program as usize].push(session(&setup, program, home.dir.path(), Some(idle))?);
        }
    }

    eprintln!("bench: latency series, {runs} rounds");
    let mut homes = Vec::with_capacity(runs * PROGRAMS.len());
    for r in 0..runs {
        for program in rotated(r) {
            homes.push((program, Home::new(program, true)?));
        }
    }
    let mut latency: PerProgram = Default::default();
    for (program, home) in &homes {
        latency[*program as usize].push(session(&setup, *program, home.dir.path(), None)?);
    }
    drop(homes);

    eprintln!("bench: empty-home series, {runs} rounds");
    let mut empty: PerProgram = Default::default();
    for r in 0..runs {
        for program in rotated(r).into_iter().filter(|p| *p != Program::Floor) {
            let home = Home::new(program, false)?;
            empty[program as usize].push(session(&setup, program, home.dir.path(), None)?);
        }
    }

    let side = if args.side_by_side > 0 {
        Some(side_by_side(
            &setup,
            args.side_by_side,
            args.side_rounds.max(1),
            idle,
        )?)
    } else {
        None
    };

    print!("{}", report_memory(&memory, args.idle_ms, tools));
    print!("{}", report_latency(&latency));
    print!("{}", report_empty(&empty));
    if let Some(side) = side {
        print!("{side}");
    }
    print!("{openings}");
    print!("{push}");
    if args.smoke {
        println!("Smoke run (dev binaries, one session per series): no target judged.");
    } else {
        print!("{}", report_targets(&memory, &latency));
    }
    Ok(())
}

/// The three programs, in an order rotated by `round`, so that none always runs first (or
/// after the same one).
fn rotated(round: usize) -> [Program; 3] {
    std::array::from_fn(|k| PROGRAMS[(round + k) % PROGRAMS.len()])
}

/// A fresh `HOOKS_MCP_HOME`, holding a store for the servers when `with_store`.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(program: Program, with_store: bool) -> anyhow::Result<Home> {
        let dir = tempfile::tempdir().context("creating a temporary directory")?;
        if with_store && program != Program::Floor {
            store::SqliteStore::create(dir.path().join("state.db"))?;
        }
        Ok(Home { dir })
    }
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

/// Starts `program` on `home` and completes initialize + tools/list.
fn start(setup: &Setup, program: Program, home: &Path) -> anyhow::Result<Proc> {
    let canned = setup.canned.to_string_lossy();
    let (bin, args): (&Path, Vec<&str>) = match program {
        Program::Front => (&setup.bins.front, vec![]),
        Program::Floor => (&setup.floor, vec![&canned]),
        Program::Full => (&setup.bins.full, vec!["serve"]),
    };
    Proc::spawn(bin, &args, home, &setup.bins.full)
}

/// One session: handshake, discovery, and (except for the floor) one `channel_list` call; with
/// `idle`, a reading that long after the discovery and again after the call.
fn session(
    setup: &Setup,
    program: Program,
    home: &Path,
    idle: Option<Duration>,
) -> anyhow::Result<Run> {
    let mut proc = start(setup, program, home)?;
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
    let (call, after) = if program == Program::Floor {
        (None, None)
    } else {
        let (_, call) = proc.ask(&tool_call(3, "channel_list", json!({})))?;
        (Some(call), reading(&proc)?)
    };
    let ping = match idle {
        Some(_) => Some(proc.ask(&request(4, "ping", json!({})))?.1),
        None => None,
    };
    Ok(Run {
        init,
        list,
        idle: idle_sample,
        call,
        after,
        ping,
    })
}

/// Statistics of one figure over sessions.
fn stat(runs: &[Run], f: impl Fn(&Run) -> Option<f64>) -> Option<Summary> {
    let values: Vec<f64> = runs.iter().filter_map(f).collect();
    Summary::of(&values)
}

/// A figure of a session.
type Figure = fn(&Run) -> Option<f64>;

/// A reading's figure.
type Reading = fn(&ProcSample) -> f64;

/// The memory figures: name, decimals, reading.
const READINGS: [(&str, usize, Reading); 6] = [
    ("private dirty, MiB", 3, ProcSample::private_dirty_mib),
    ("private (clean + dirty), MiB", 3, ProcSample::private_mib),
    ("proportional (PSS), MiB", 2, ProcSample::pss_mib),
    ("resident (RSS), MiB", 2, ProcSample::rss_mib),
    ("threads", 0, |s| s.threads as f64),
    ("open fds", 0, |s| s.fds as f64),
];

/// The target of an idle reading, by its name.
fn idle_target(name: &str) -> &'static str {
    match name {
        "private dirty, MiB" => "≤ 0.15",
        "private (clean + dirty), MiB" => "≤ 0.8",
        "threads" => "1",
        _ => "",
    }
}

/// The memory series as markdown: idle, then after the first call.
fn report_memory(memory: &PerProgram, idle_ms: u64, tools: usize) -> String {
    let [front, floor, full] = memory;
    let n = front.len();
    let mut out = format!(
        "## Stdio: idle session after initialize + tools/list\n\n\
         {n} sessions per program, interleaved, each on a fresh HOOKS_MCP_HOME holding a store \
         created beforehand (as every session but a machine's first finds it); readings from \
         /proc/PID/smaps_rollup, /proc/PID/status and /proc/PID/fd after {idle_ms} ms idle. \
         Cells are median / p90. The floor is `floor-stdio` (std only) answering with the real \
         server's captured results ({tools} tools); `hooks-mcp-full serve` is the full server \
         without the front end.\n\n"
    );
    let rows: Vec<Vec<String>> = READINGS
        .iter()
        .map(|(name, decimals, f)| {
            let figure = |r: &Run| r.idle.as_ref().map(f);
            let (a, b, c) = (stat(front, figure), stat(floor, figure), stat(full, figure));
            vec![
                (*name).to_string(),
                median_p90(a, *decimals),
                median_p90(b, *decimals),
                ratio(a, b),
                idle_target(name).to_string(),
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

    out.push_str(&format!(
        "\n## Stdio: after the first tools/call\n\n\
         The same sessions after one `channel_list` call (for `hooks-mcp` it hands off: `exec` \
         of the full server, replay, store opened) and {idle_ms} ms idle, then one `ping` (the \
         floor, which has no tools, pings after its first idle time): the ping shows what \
         waking an idle process costs on this machine, apart from any handoff. Cells are \
         median / p90.\n\n"
    ));
    let first_call: Figure = |r| r.call.map(millis);
    let ping: Figure = |r| r.ping.map(millis);
    let mut rows = vec![
        vec![
            format!("first tools/call after {idle_ms} ms idle, send → response, ms"),
            median_p90(stat(front, first_call), 2),
            "-".into(),
            median_p90(stat(full, first_call), 2),
        ],
        vec![
            format!("reference: `ping` after the last {idle_ms} ms idle, ms"),
            median_p90(stat(front, ping), 2),
            median_p90(stat(floor, ping), 2),
            median_p90(stat(full, ping), 2),
        ],
    ];
    rows.extend(READINGS.iter().map(|(name, decimals, f)| {
        let figure = |r: &Run| r.after.as_ref().map(f);
        vec![
            (*name).to_string(),
            median_p90(stat(front, figure), *decimals),
            "-".into(),
            median_p90(stat(full, figure), *decimals),
        ]
    }));
    out.push_str(&table(
        &[
            ("Figure", Align::Left),
            ("hooks-mcp (handed off)", Align::Right),
            ("floor-stdio", Align::Right),
            ("hooks-mcp-full serve", Align::Right),
        ],
        &rows,
    ));
    out
}

/// The paired differences `front - floor` of the spawn → initialize times, round by round.
fn init_gap(latency: &PerProgram) -> Option<Summary> {
    let [front, floor, _] = latency;
    let gaps: Vec<f64> = front
        .iter()
        .zip(floor)
        .map(|(a, b)| millis(a.init) - millis(b.init))
        .collect();
    Summary::of(&gaps)
}

/// The latency series as markdown.
fn report_latency(latency: &PerProgram) -> String {
    let [front, floor, full] = latency;
    let rows: [(&str, Figure, &str); 3] = [
        (
            "spawn → initialize response, ms",
            |r| Some(millis(r.init)),
            "≤ floor + 2",
        ),
        (
            "spawn → tools/list response, ms",
            |r| Some(millis(r.list)),
            "",
        ),
        (
            "first tools/call, send → response, ms",
            |r| r.call.map(millis),
            "≤ 5, handoff included",
        ),
    ];
    let mut out = format!(
        "\n## Stdio: latency\n\n\
         {} sessions per program, interleaved and back to back (no idle time), each on a fresh \
         HOOKS_MCP_HOME whose store was created before the series. The client writes \
         `initialize` right after the spawn; the first tools/call is `channel_list` (for \
         `hooks-mcp` it includes the handoff). Cells are median / p90.\n\n",
        front.len()
    );
    let mut rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(name, f, target)| {
            let (a, b, c) = (stat(front, f), stat(floor, f), stat(full, f));
            vec![
                (*name).to_string(),
                median_p90(a, 2),
                median_p90(b, 2),
                ratio(a, b),
                (*target).to_string(),
                median_p90(c, 2),
            ]
        })
        .collect();
    rows.push(vec![
        "initialize: hooks-mcp − floor, paired by round, ms".into(),
        median_p90(init_gap(latency), 2),
        "-".into(),
        "-".into(),
        "≤ 2".into(),
        "-".into(),
    ]);
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
    out
}

/// The empty-home series as markdown.
fn report_empty(empty: &PerProgram) -> String {
    let [front, _, full] = empty;
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
         {} sessions per server, alternating, back to back: the full server creates the store \
         (file, WAL, schema) when it starts, which for `hooks-mcp` is at the handoff on the \
         first tools/call. Cells are median / p90.\n\n",
        front.len()
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

/// `k` idle sessions of each program at once, `rounds` times, where the binary's code pages are
/// shared between them (as on a machine running a fleet): the markdown report.
fn side_by_side(setup: &Setup, k: usize, rounds: usize, idle: Duration) -> anyhow::Result<String> {
    let mut readings: [Vec<ProcSample>; 3] = Default::default();
    for round in 0..rounds {
        eprintln!(
            "bench: {k} sessions side by side, round {}/{rounds}",
            round + 1
        );
        for program in rotated(round) {
            let mut homes = Vec::with_capacity(k);
            let mut procs = Vec::with_capacity(k);
            for _ in 0..k {
                let home = Home::new(program, true)?;
                let mut proc = start(setup, program, home.dir.path())?;
                proc.ask(INITIALIZE)?;
                proc.send(INITIALIZED)?;
                proc.ask(&request(2, "tools/list", json!({})))?;
                procs.push(proc);
                homes.push(home);
            }
            std::thread::sleep(idle);
            for proc in &procs {
                readings[program as usize].push(proc.sample()?);
            }
            drop(procs);
        }
    }
    let rows: Vec<Vec<String>> = READINGS[..4]
        .iter()
        .map(|(name, decimals, f)| {
            let cell = |p: Program| {
                let values: Vec<f64> = readings[p as usize].iter().map(f).collect();
                median_p90(Summary::of(&values), *decimals)
            };
            vec![
                format!("{name}, per session"),
                cell(Program::Front),
                cell(Program::Floor),
                cell(Program::Full),
            ]
        })
        .collect();
    let mut out = format!(
        "\n## Stdio: {k} idle sessions side by side\n\n\
         {rounds} rounds of {k} sessions of one program running at once (a fleet on one \
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

/// Whether `value` meets `target` (at most).
fn verdict(value: Option<f64>, target: f64) -> &'static str {
    match value {
        Some(v) if v <= target => "met",
        Some(_) => "**not met**",
        None => "-",
    }
}

/// The targets against the medians, as markdown.
fn report_targets(memory: &PerProgram, latency: &PerProgram) -> String {
    let front_memory = &memory[Program::Front as usize];
    let front_latency = &latency[Program::Front as usize];
    let idle = |f: Reading| stat(front_memory, |r| r.idle.as_ref().map(f)).map(|s| s.median);
    let dirty = idle(ProcSample::private_dirty_mib);
    let private = idle(ProcSample::private_mib);
    let threads = idle(|s| s.threads as f64);
    let gap = init_gap(latency).map(|s| s.median);
    let call = stat(front_latency, |r| r.call.map(millis)).map(|s| s.median);
    let show = |v: Option<f64>, decimals: usize, unit: &str| match v {
        Some(v) => format!("{}{unit}", num(v, decimals)),
        None => "-".into(),
    };
    let rows = vec![
        vec![
            "idle private dirty ≤ 0.15 MiB".to_string(),
            show(dirty, 3, " MiB"),
            verdict(dirty, TARGET_PRIVATE_DIRTY_MIB).to_string(),
        ],
        vec![
            "idle private ≤ 0.8 MiB".to_string(),
            show(private, 3, " MiB"),
            verdict(private, TARGET_PRIVATE_MIB).to_string(),
        ],
        vec![
            "one thread when idle".to_string(),
            show(threads, 0, ""),
            verdict(threads, 1.0).to_string(),
        ],
        vec![
            "initialize within 2 ms of the floor (paired)".to_string(),
            show(gap, 2, " ms"),
            verdict(gap, TARGET_INIT_OVER_FLOOR_MS).to_string(),
        ],
        vec![
            "first tools/call ≤ 5 ms, handoff included".to_string(),
            show(call, 2, " ms"),
            verdict(call, TARGET_FIRST_CALL_MS).to_string(),
        ],
    ];
    let mut out = String::from("\n## Stdio: targets (medians of hooks-mcp)\n\n");
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
