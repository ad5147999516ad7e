//! `cargo xtask bench hook`: wall time and peak memory of the hook command, which the agent
//! client runs twice around every tool call.
//!
//! On a realistic store (100 broadcasts of mixed severity on five channels, 20 enforcement
//! reminders, no conditions), it runs `hook PreToolUse` and `hook UserPromptSubmit` through the
//! three binaries (`hooks-mcp-hook`, `hooks-mcp-full`, and `hooks-mcp`, which `exec`s the full
//! binary) beside two floors, all in one run: `floor-hook`, a std-only program that only parses
//! the payload, and `floor-hook-store`, which then also opens the same SQLite store and runs
//! one indexed read and one small write in one transaction. Each command is measured by worker
//! processes of its own (this program, re-run with `--measure`), in rounds that take turns
//! among the commands (so a change of the machine's load falls on all of them alike); the
//! workers' `getrusage(RUSAGE_CHILDREN)` maximum resident size is the command's peak. Nothing
//! here asserts a timing: it prints a markdown table and the ratios to both floors (targets:
//! ≤ 2× the std-only floor, ≤ 1.5× the store floor). The hook measured is the one a plain
//! `cargo build --release` or `cargo install` links; `--static-hook` adds a row for the same
//! binary relinked statically (docs/hooks.md).
//!
//! The same run measures Claude Code's HTTP hooks: a daemon (`hooks-mcp-full serve`, streamable
//! HTTP on 127.0.0.1) on the same store, and one keep-alive connection posting each payload to
//! `/hooks/<Event>` as the client does (bearer token, JSON body), timed from the first byte
//! written to the last byte of the answer read (median, p90, p99).
//!
//! `--postgres` seeds the same store in a fresh schema of the database `HOOKS_MCP_DATABASE_URL`
//! names and measures `hooks-mcp-hook` opening it itself (`HOOKS_MCP_HOOK_FORWARD=off`) beside
//! the same command forwarding each event to a local daemon it starts (`hooks-mcp-full serve`
//! on 127.0.0.1), and checks through the daemon's hook counter that every forwarded run was
//! answered by the daemon.
//!
//! The lifecycle events beyond the four follow as extra series of `hooks-mcp-hook` (see
//! [`lifecycle`]), compared with its `UserPromptSubmit` median.
//!
//! `--store-sizes 100,1000,10000,100000` measures instead how the hook's cost grows with the
//! store: a known and a new session's events on stores of each size, side by side (see
//! [`growth`]).

mod growth;
mod lifecycle;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::store_bench::PgSchema;
use crate::util::cargo::{self, Profile};
use crate::util::daemon::Daemon;
use crate::util::http::Conn;
use crate::util::procfs;

/// Options of `cargo xtask bench hook`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Timed runs of each command (in all rounds together).
    #[arg(long, default_value_t = 300)]
    runs: usize,
    /// Untimed runs of each command first (shared among the rounds).
    #[arg(long, default_value_t = 20)]
    warmup: usize,
    /// Rounds the runs are split into: each round runs its share of every command in turn.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Use the release binaries already built instead of building them.
    #[arg(long)]
    skip_build: bool,
    /// Also measure the hook relinked statically (docs/hooks.md, "The fast hook binary"), kept
    /// beside the others as `hooks-mcp-hook-static` (Linux with glibc only).
    #[arg(long)]
    static_hook: bool,
    /// Measure on PostgreSQL instead (a fresh schema of the database HOOKS_MCP_DATABASE_URL
    /// names): `hooks-mcp-hook` opening the store itself beside the same command answered by
    /// a local daemon (`hooks-mcp-full serve`) it forwards the event to.
    #[arg(long)]
    postgres: bool,
    /// Measure how the cost grows with the store instead: stores of these many unexpired
    /// broadcasts (comma separated; without a value 100,1000,10000,100000), a known and a new
    /// session's events on each (with --postgres, on PostgreSQL through local daemons).
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 0..,
        default_missing_values = ["100", "1000", "10000", "100000"]
    )]
    store_sizes: Option<Vec<usize>>,
    /// Smoke run: two timed runs per command in one round, dev binaries; every path runs,
    /// the figures mean nothing and no target is judged.
    #[arg(long)]
    pub(super) smoke: bool,
    /// Internal: measure one command with this payload on stdin and print JSON.
    #[arg(long, hide = true, requires = "command")]
    measure: Option<PathBuf>,
    /// Internal: the command `--measure` runs (after `--`).
    #[arg(last = true, hide = true)]
    command: Vec<OsString>,
}

impl Args {
    /// These options, or the smallest sizes for a smoke run.
    fn sized(&self) -> Args {
        if !self.smoke {
            return self.clone();
        }
        Args {
            runs: 2,
            warmup: 1,
            rounds: 1,
            ..self.clone()
        }
    }

    /// Whether this is a measuring worker (`--measure`), spawned by the benchmark.
    pub(super) fn is_worker(&self) -> bool {
        self.measure.is_some()
    }
}

/// A realistic `PreToolUse` payload, as Claude Code sends it.
const PRE_TOOL_USE: &str = r#"{"session_id":"9f3c2a71-5d0e-4b8a-a6f2-3c1d7e0b4a95","transcript_path":"/home/dev/.claude/projects/-home-dev-src-app/9f3c2a71-5d0e-4b8a-a6f2-3c1d7e0b4a95.jsonl","cwd":"/home/dev/src/app","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"cargo test -p store --lib","description":"Run the store's unit tests"},"tool_use_id":"toolu_01HkY3Jq8cV2mX5nT7pR9wZa"}"#;

/// The session of the payloads.
const KNOWN_SESSION: &str = "9f3c2a71-5d0e-4b8a-a6f2-3c1d7e0b4a95";

/// The tool call of [`PRE_TOOL_USE`]: each run replaces it with one of its own, as each of a
/// client's tool calls has its own (the store counts a call reported twice once, and a bench
/// repeating one id would time that path instead).
const KNOWN_CALL: &str = "toolu_01HkY3Jq8cV2mX5nT7pR9wZa";

/// `payload` with its tool call's id made the `n`th of this process.
fn new_call(payload: &str, n: usize) -> String {
    payload.replace(
        KNOWN_CALL,
        &format!("toolu_bench_{}_{n}", std::process::id()),
    )
}

/// Set (to anything) for a measuring worker: each run gets a session id of its own instead of
/// the payload's [`KNOWN_SESSION`], so each is a new session's first event.
const NEW_SESSION_ENV: &str = "HOOKS_MCP_BENCH_NEW_SESSION";

/// A realistic `UserPromptSubmit` payload.
const USER_PROMPT_SUBMIT: &str = r#"{"session_id":"9f3c2a71-5d0e-4b8a-a6f2-3c1d7e0b4a95","transcript_path":"/home/dev/.claude/projects/-home-dev-src-app/9f3c2a71-5d0e-4b8a-a6f2-3c1d7e0b4a95.jsonl","cwd":"/home/dev/src/app","permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"The store tests fail after the last change to the migrations; find out why and fix it, then run the whole suite again."}"#;

/// One command's measurement.
#[derive(Debug)]
struct Measured {
    label: String,
    median_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    peak_rss_mib: f64,
    /// The peak is not above the measuring worker's own: only an upper bound.
    masked: bool,
    /// The largest answer printed, in bytes (NaN when not recorded).
    output_max_bytes: f64,
    /// The largest `additionalContext` printed, in estimated tokens (NaN when not recorded).
    context_max_tokens: f64,
}

/// Runs the benchmark (or, with `--measure`, one worker).
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(payload) = &args.measure {
        return measure_worker(payload, &args.command, args.runs, args.warmup);
    }
    let args = &args.sized();
    let profile = Profile::for_smoke(args.smoke);
    if !args.skip_build {
        build(profile, args.static_hook)?;
    }
    let front = profile.bin("hooks-mcp");
    let full = profile.bin("hooks-mcp-full");
    let lean = profile.bin("hooks-mcp-hook");
    let lean_static = profile.bin(STATIC_COPY);
    let floor = profile.bin("floor-hook");
    let floor_store = profile.bin("floor-hook-store");
    for bin in [&front, &full, &lean, &floor, &floor_store] {
        if !bin.exists() {
            bail!(
                "{} is missing; build with `cargo build{} -p hooks-mcp -p bench-floor --bins`, \
                 or drop --skip-build",
                bin.display(),
                if profile == Profile::Release {
                    " --release"
                } else {
                    ""
                }
            );
        }
    }
    if args.static_hook && !lean_static.exists() {
        bail!(
            "{} is missing: run once without --skip-build (with --static-hook it relinks the \
             hook statically and keeps that copy)",
            lean_static.display()
        );
    }

    if let Some(sizes) = &args.store_sizes {
        let sizes = if sizes.is_empty() {
            growth::DEFAULT_SIZES.to_vec()
        } else {
            sizes.clone()
        };
        return growth::run(args, &sizes, &lean, &full, &floor);
    }
    let home = tempfile::tempdir().context("creating a temporary store directory")?;
    if args.postgres {
        return run_postgres(args, &full, &lean, &floor, home.path());
    }
    seed(&full, home.path(), &[], Seed::of(args))?;
    let pre = home.path().join("pre.json");
    let ups = home.path().join("ups.json");
    std::fs::write(&pre, PRE_TOOL_USE)?;
    std::fs::write(&ups, USER_PROMPT_SUBMIT)?;

    let exe = std::env::current_exe().context("locating this program")?;
    let mut cases: Vec<(String, &Path, Vec<OsString>)> = Vec::new();
    for (event, payload) in [("PreToolUse", &pre), ("UserPromptSubmit", &ups)] {
        let hook = |bin: &Path| -> Vec<OsString> { vec![bin.into(), "hook".into(), event.into()] };
        cases.extend([
            (
                format!("floor-hook (std only, {event} payload)"),
                payload.as_path(),
                vec![floor.clone().into()],
            ),
            (
                format!("floor-hook-store (std + one SQLite read and write, {event} payload)"),
                payload.as_path(),
                vec![floor_store.clone().into()],
            ),
            (
                format!("hooks-mcp-hook hook {event} (as built and installed; registered by init)"),
                payload.as_path(),
                hook(&lean),
            ),
        ]);
        if args.static_hook {
            cases.push((
                format!("hooks-mcp-hook hook {event}, relinked statically (docs/hooks.md)"),
                payload.as_path(),
                hook(&lean_static),
            ));
        }
        cases.extend([
            (
                format!("hooks-mcp-full hook {event}"),
                payload.as_path(),
                hook(&full),
            ),
            (
                format!("hooks-mcp hook {event} (exec)"),
                payload.as_path(),
                hook(&front),
            ),
        ]);
    }
    // Each event has the same rows; its HTTP row goes after them.
    let per_event = cases.len() / 2;
    let main_rows = cases.len();
    let lifecycle_cases = lifecycle::cases(home.path(), &lean)?;
    let cases = cases
        .into_iter()
        .chain(
            lifecycle_cases
                .iter()
                .map(|(label, file, command)| (label.clone(), file.as_path(), command.clone())),
        )
        .map(|(label, payload, command)| (label, payload, command, Vec::new()))
        .collect();
    let mut results = measure_cases(args, &exe, home.path(), cases)?;
    let lifecycle = results.split_off(main_rows);
    let http = measure_http_hooks(args, &full, home.path())?;
    for (i, m) in http.into_iter().enumerate() {
        results.insert(per_event * (i + 1) + i, m);
    }
    print_report(&results, args.runs, args.smoke, Seed::of(args));
    let prompt_median = results
        .iter()
        .find(|m| m.label.starts_with("hooks-mcp-hook hook UserPromptSubmit"))
        .map_or(f64::NAN, |m| m.median_ms);
    lifecycle::print(&lifecycle, prompt_median, args.smoke);
    Ok(())
}

/// The optional static relink of the hook binary (docs/hooks.md, "The fast hook binary"): a
/// flag of the final link only, so it is passed to that one crate (`cargo rustc`), never to
/// the other binaries or the build scripts.
const STATIC_HOOK: &[&str] = &[
    "-p",
    "hooks-mcp",
    "--bin",
    "hooks-mcp-hook",
    "--",
    "-C",
    "target-feature=+crt-static",
];

/// Where `--static-hook` keeps the statically relinked hook, beside the other binaries.
const STATIC_COPY: &str = "hooks-mcp-hook-static";

/// The binaries the benchmark runs.
const BINS: &[&str] = &[
    "-p",
    "hooks-mcp",
    "-p",
    "bench-floor",
    "--bin",
    "hooks-mcp",
    "--bin",
    "hooks-mcp-hook",
    "--bin",
    "hooks-mcp-full",
    "--bin",
    "hooks-mcp-catalogue",
    "--bin",
    "floor-hook",
    "--bin",
    "floor-hook-store",
];

/// Builds what the benchmark runs in `profile`: the binaries as `cargo build` (and so
/// `cargo install`) links them, the hook among them. With `static_hook`, first the hook
/// relinked statically ([`STATIC_HOOK`]), copied aside as [`STATIC_COPY`]; the plain build
/// after it links the plain hook again.
fn build(profile: Profile, static_hook: bool) -> anyhow::Result<()> {
    let release = (profile == Profile::Release).then_some("--release");
    if static_hook {
        if !cfg!(all(target_os = "linux", target_env = "gnu")) {
            bail!("--static-hook links glibc statically: Linux with glibc only");
        }
        let step: Vec<&str> = ["rustc"]
            .into_iter()
            .chain(release)
            .chain(STATIC_HOOK.iter().copied())
            .collect();
        eprintln!("bench hook: cargo {}", step.join(" "));
        cargo::run(&step)?;
        std::fs::copy(profile.bin("hooks-mcp-hook"), profile.bin(STATIC_COPY))
            .context("keeping the statically linked hook")?;
    }
    eprintln!(
        "bench hook: cargo build ({}) {}",
        profile.name(),
        BINS.join(" ")
    );
    cargo::build(profile, BINS)
}

/// The bearer token of the HTTP-hook daemon.
const BENCH_TOKEN: &str = "bench-hook-token-0123456789abcdef";

/// Starts a daemon on the store in `home` and times HTTP hooks over one keep-alive connection:
/// `POST /hooks/PreToolUse`, then `POST /hooks/UserPromptSubmit`.
fn measure_http_hooks(args: &Args, full: &Path, home: &Path) -> anyhow::Result<Vec<Measured>> {
    let mut daemon = Daemon::start_configured(full, home, &home.join("daemon.log"), None, |cmd| {
        cmd.env("HOME", home)
            .env_remove(store::DATABASE_URL_ENV)
            .env_remove("HOOKS_MCP_CHANNELS")
            .env("HOOKS_MCP_TOKEN", BENCH_TOKEN)
            .env("HOOKS_MCP_LOG", "warn");
    })?;
    let mut results = Vec::new();
    for (event, payload) in [
        ("PreToolUse", PRE_TOOL_USE),
        ("UserPromptSubmit", USER_PROMPT_SUBMIT),
    ] {
        let label = format!("HTTP hook POST /hooks/{event} (daemon, keep-alive)");
        eprintln!("bench hook: {label}");
        let mut client = Conn::connect(daemon.addr())?.with_token(BENCH_TOKEN);
        let mut samples = Vec::with_capacity(args.runs);
        for i in 0..args.warmup + args.runs {
            let payload = new_call(payload, i);
            let started = Instant::now();
            let reply = client.request_at("POST", &format!("/hooks/{event}"), &payload)?;
            let elapsed = started.elapsed();
            if reply.status != 200 && reply.status != 204 {
                bail!("{label}: HTTP {}: {}", reply.status, reply.body);
            }
            if i >= args.warmup {
                samples.push(elapsed.as_secs_f64() * 1000.0);
            }
        }
        let (median, p90, p99) = percentiles(samples);
        results.push(Measured {
            label,
            median_ms: median,
            p90_ms: p90,
            p99_ms: p99,
            peak_rss_mib: f64::NAN,
            masked: false,
            output_max_bytes: f64::NAN,
            context_max_tokens: f64::NAN,
        });
    }
    daemon.stop()?;
    Ok(results)
}

/// The median, p90 and p99 of `samples`.
fn percentiles(mut samples: Vec<f64>) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let rank = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
        samples[rank - 1]
    };
    (at(0.5), at(0.9), at(0.99))
}

/// One case: its label, its payload file, the command, and variables for the command.
type Case<'a> = (String, &'a Path, Vec<OsString>, Vec<(&'static str, String)>);

/// Measures each case in worker processes of its own, in `--rounds` rounds: every round runs
/// a share of each case's runs, case after case, so a change in the machine's load during the
/// series falls on every case alike and the ratios measured in one run stay comparable.
fn measure_cases(
    args: &Args,
    exe: &Path,
    home: &Path,
    cases: Vec<Case<'_>>,
) -> anyhow::Result<Vec<Measured>> {
    let rounds = args.rounds.clamp(1, args.runs.max(1));
    let share = |total: usize, round: usize| total / rounds + usize::from(round < total % rounds);
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(args.runs); cases.len()];
    let mut peaks: Vec<(f64, bool)> = vec![(f64::NAN, true); cases.len()];
    let mut outputs: Vec<(f64, f64)> = vec![(f64::NAN, f64::NAN); cases.len()];
    for (label, ..) in &cases {
        eprintln!("bench hook: {label}");
    }
    for round in 0..rounds {
        for (i, (label, payload, command, vars)) in cases.iter().enumerate() {
            let output = Command::new(exe)
                .args([
                    "bench",
                    "hook",
                    "--runs",
                    &share(args.runs, round).to_string(),
                ])
                .args([
                    "--warmup",
                    &share(args.warmup, round).to_string(),
                    "--measure",
                ])
                .arg(payload)
                .arg("--")
                .args(command)
                .env("HOOKS_MCP_HOME", home)
                .env("HOME", home)
                .env_remove("HOOKS_MCP_CHANNELS")
                .env_remove("HOOKS_MCP_FULL_BIN")
                .env_remove("MCP_TRANSPORT")
                .env_remove("HOOKS_MCP_TOKEN")
                .env_remove("HOOKS_MCP_TOKEN_FILE")
                .env_remove(store::DATABASE_URL_ENV)
                .envs(vars.iter().cloned())
                .stderr(Stdio::inherit())
                .output()
                .context("running a measuring worker")?;
            if !output.status.success() {
                bail!("the worker measuring `{label}` failed ({})", output.status);
            }
            let v: Value = serde_json::from_slice(&output.stdout)
                .context("reading a measuring worker's answer")?;
            let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
            samples[i].extend(
                v.get("samples_ms")
                    .and_then(Value::as_array)
                    .context("a measuring worker's answer lacks its samples")?
                    .iter()
                    .filter_map(Value::as_f64),
            );
            let (bytes, tokens) = (num("output_max_bytes"), num("context_max_tokens"));
            let (b, t) = outputs[i];
            outputs[i] = (b.max(bytes), t.max(tokens));
            let peak = num("peak_rss_kib");
            if peaks[i].0.is_nan() || peak > peaks[i].0 {
                peaks[i] = (peak, peak <= num("own_peak_kib"));
            }
        }
    }
    Ok(cases
        .into_iter()
        .zip(samples.into_iter().zip(peaks).zip(outputs))
        .map(
            |((label, ..), ((samples, (peak, masked)), (output_max_bytes, context_max_tokens)))| {
                let (median, p90, p99) = percentiles(samples);
                Measured {
                    label,
                    median_ms: median,
                    p90_ms: p90,
                    p99_ms: p99,
                    peak_rss_mib: peak / 1024.0,
                    masked,
                    output_max_bytes,
                    context_max_tokens,
                }
            },
        )
        .collect())
}

/// The PostgreSQL series: the same store seeded in a fresh schema, `hooks-mcp-hook` opening it
/// itself (`HOOKS_MCP_HOOK_FORWARD=off`) and forwarding to a local daemon, beside the floor.
fn run_postgres(
    args: &Args,
    full: &Path,
    lean: &Path,
    floor: &Path,
    home: &Path,
) -> anyhow::Result<()> {
    let version = PgSchema::server_version()?;
    let schema = PgSchema::create()?;
    let url = schema.url.clone();
    seed(
        full,
        home,
        &[(store::DATABASE_URL_ENV, &url)],
        Seed::of(args),
    )?;
    let pre = home.join("pre.json");
    let ups = home.join("ups.json");
    std::fs::write(&pre, PRE_TOOL_USE)?;
    std::fs::write(&ups, USER_PROMPT_SUBMIT)?;
    let daemon_home = tempfile::tempdir().context("creating the daemon's directory")?;
    let log = daemon_home.path().join("daemon.log");
    let mut daemon = Daemon::start_configured(full, daemon_home.path(), &log, None, |cmd| {
        cmd.env(store::DATABASE_URL_ENV, &url)
            .env("HOOKS_MCP_LOG", "warn");
    })?;
    let port = daemon.port;
    let outcome = (|| {
        let addr = daemon.addr();
        let health = |level| daemon::probe_health(addr, level, Duration::from_secs(2));
        let answered = || -> anyhow::Result<u64> {
            let (_, body) = health(Some("full"))?;
            let v: Value = serde_json::from_str(&body)?;
            v["hooks"]["answered"]
                .as_u64()
                .context("the daemon's /health?level=full reports no hook counter")
        };
        let vars = |forward: &str| {
            vec![
                (store::DATABASE_URL_ENV, url.clone()),
                ("MCP_HOST", "127.0.0.1".to_owned()),
                ("MCP_PORT", port.to_string()),
                ("HOOKS_MCP_HOOK_FORWARD", forward.to_owned()),
            ]
        };
        let hook =
            |event: &str| -> Vec<OsString> { vec![lean.into(), "hook".into(), event.into()] };
        let mut results = Vec::new();
        for (event, payload) in [("PreToolUse", &pre), ("UserPromptSubmit", &ups)] {
            let cases: Vec<Case<'_>> = vec![
                (
                    format!("floor-hook (std only, {event} payload)"),
                    payload,
                    vec![floor.into()],
                    Vec::new(),
                ),
                (
                    format!("hooks-mcp-hook hook {event}, opening PostgreSQL itself"),
                    payload,
                    hook(event),
                    vars("off"),
                ),
                (
                    format!("hooks-mcp-hook hook {event}, via the local daemon"),
                    payload,
                    hook(event),
                    vars("auto"),
                ),
            ];
            let before = answered()?;
            let mut measured = measure_cases(args, &std::env::current_exe()?, home, cases)?;
            let forwarded = answered()? - before;
            let expected = (args.runs + args.warmup) as u64;
            if forwarded != expected {
                bail!(
                    "the daemon answered {forwarded} forwarded {event} hooks, not the {expected}                      the via-daemon series ran: the series did not measure forwarding"
                );
            }
            results.append(&mut measured);
        }
        Ok(results)
    })();
    let stopped = daemon.stop();
    let results = outcome?;
    stopped?;
    print_report_postgres(&results, args.runs, &version, Seed::of(args));
    Ok(())
}

fn print_report_postgres(results: &[Measured], runs: usize, version: &str, seed: Seed) {
    println!(
        "## hook command on PostgreSQL {version} ({runs} runs each; store: {} broadcasts, {} \
         reminders, no conditions)\n",
        seed.broadcasts, seed.reminders
    );
    println!("| command | median ms | p90 ms | median / floor | median / direct | peak RSS MiB |");
    println!("|---|---:|---:|---:|---:|---:|");
    let (mut floor, mut direct) = (f64::NAN, f64::NAN);
    for m in results {
        if m.label.starts_with("floor-hook") {
            floor = m.median_ms;
        } else if m.label.ends_with("itself") {
            direct = m.median_ms;
        }
        let rss = if m.masked {
            format!("≤ {:.1}", m.peak_rss_mib)
        } else {
            format!("{:.1}", m.peak_rss_mib)
        };
        let vs_direct = if m.label.starts_with("floor-hook") {
            "-".to_owned()
        } else {
            format!("{:.2}×", m.median_ms / direct)
        };
        println!(
            "| {} | {:.2} | {:.2} | {:.2}× | {vs_direct} | {rss} |",
            m.label,
            m.median_ms,
            m.p90_ms,
            m.median_ms / floor,
        );
    }
    println!(
        "\nThe daemon (`hooks-mcp-full serve`, streamable HTTP on 127.0.0.1, no token) and the \
         hook share one fresh schema; the daemon's `/health?level=full` hook counter confirms \
         that every run of the via-daemon series was answered by it."
    );
}

/// What the store is seeded with.
#[derive(Debug, Clone, Copy)]
struct Seed {
    broadcasts: usize,
    reminders: usize,
}

impl Seed {
    /// 100 broadcasts and 20 reminders; a smoke run seeds a few of each (every one is a run of
    /// the operator CLI).
    fn of(args: &Args) -> Seed {
        if args.smoke {
            Seed {
                broadcasts: 5,
                reminders: 2,
            }
        } else {
            Seed {
                broadcasts: 100,
                reminders: 20,
            }
        }
    }
}

/// Fills the store through the operator CLI: broadcasts and reminders as `sizes` says.
fn seed(full: &Path, home: &Path, vars: &[(&str, &str)], sizes: Seed) -> anyhow::Result<()> {
    let channels = ["global", "deploys", "ci", "reviews", "ops"];
    let mut calls: Vec<Vec<String>> = Vec::new();
    for i in 0..sizes.broadcasts {
        let severity = match i % 20 {
            0 => "critical",
            1..=5 => "alert",
            _ => "info",
        };
        calls.push(
            [
                "channel",
                "publish",
                channels[i % channels.len()],
                &format!(
                    "Broadcast {i}: the nightly build on main is green again; rebase before \
                     pushing and re-run the integration suite."
                ),
                "--severity",
                severity,
                "--ttl-seconds",
                "86400",
            ]
            .map(String::from)
            .to_vec(),
        );
    }
    for i in 1..=sizes.reminders {
        calls.push(
            [
                "enforcement",
                "set",
                &format!("Reminder {i}: keep commits small and run the tests before each push."),
                "--cadence",
                &(i * 5).to_string(),
            ]
            .map(String::from)
            .to_vec(),
        );
    }
    for call in calls {
        let status = Command::new(full)
            .args(&call)
            .env("HOOKS_MCP_HOME", home)
            .envs(vars.iter().copied())
            .stdout(Stdio::null())
            .status()
            .context("seeding the store")?;
        if !status.success() {
            bail!(
                "seeding the store failed: hooks-mcp-full {}",
                call.join(" ")
            );
        }
    }
    Ok(())
}

/// The worker: runs `command` with `payload` on stdin `warmup + runs` times and prints the
/// timed runs' wall times and the peak resident size of its children.
fn measure_worker(
    payload: &Path,
    command: &[OsString],
    runs: usize,
    warmup: usize,
) -> anyhow::Result<()> {
    let (program, args) = command.split_first().context("--measure needs a command")?;
    let input = std::fs::read_to_string(payload)
        .with_context(|| format!("reading {}", payload.display()))?;
    let new_session = std::env::var_os(NEW_SESSION_ENV).is_some();
    let mut samples = Vec::with_capacity(runs);
    let (mut output_max, mut context_max) = (0_usize, 0_usize);
    for i in 0..warmup + runs {
        let input = if new_session {
            new_call(&input, i).replace(
                KNOWN_SESSION,
                &format!("new-{}-{i}-{}", std::process::id(), super::now_ms()),
            )
        } else {
            new_call(&input, i)
        };
        let started = Instant::now();
        let mut child = Command::new(program)
            .args(args)
            .env_remove(NEW_SESSION_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", program.to_string_lossy()))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input.as_bytes())?;
        }
        let output = child.wait_with_output()?;
        let elapsed = started.elapsed();
        if !output.status.success() || !output.stderr.is_empty() {
            bail!(
                "{} failed ({}): {}",
                program.to_string_lossy(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        if i >= warmup {
            samples.push(elapsed.as_secs_f64() * 1000.0);
            output_max = output_max.max(output.stdout.len());
            let context = serde_json::from_slice::<Value>(&output.stdout)
                .ok()
                .and_then(|v| {
                    v["hookSpecificOutput"]["additionalContext"]
                        .as_str()
                        .map(tools_channels::estimate_tokens)
                })
                .unwrap_or(0);
            context_max = context_max.max(context);
        }
    }
    let answer = json!({
        "samples_ms": samples,
        "output_max_bytes": output_max,
        "context_max_tokens": context_max,
        "peak_rss_kib": children_peak_rss_kib(),
        "own_peak_kib": procfs::own_peak_rss_kib(),
    });
    println!("{answer}");
    Ok(())
}

/// The largest resident set of any child this process waited for, in KiB. A child's count
/// starts from the pages it shares with this process until it `exec`s, so a value not above
/// [`procfs::own_peak_rss_kib`] only bounds the child's own peak from above.
fn children_peak_rss_kib() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // The standard library exposes no rusage; this is the only unsafe call in the benchmark.
    // SAFETY: getrusage writes a complete `rusage` into the pointer it is given, which points
    // to a properly sized and aligned value; the value is read only when the call succeeds.
    #[allow(unsafe_code)]
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) != 0 {
            return -1;
        }
        usage.assume_init()
    };
    // Linux reports kilobytes; macOS reports bytes.
    // `c_long` is 32 bits wide on some targets.
    #[allow(clippy::useless_conversion)]
    let max = i64::from(usage.ru_maxrss);
    if cfg!(target_os = "macos") {
        max / 1024
    } else {
        max
    }
}

fn print_report(results: &[Measured], runs: usize, smoke: bool, seed: Seed) {
    println!(
        "## hook command ({runs} runs each; store: {} broadcasts, {} reminders, no conditions)\n",
        seed.broadcasts, seed.reminders
    );
    println!(
        "| command | median ms | p90 ms | p99 ms | median / floor | median / store floor | median \
         / command hook | peak RSS MiB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    // Each payload's rows follow its two floor rows: compare with the latest floors, and with
    // the latest `hooks-mcp-hook` row (the command hook init registers).
    let (mut floor, mut store_floor, mut command) = (f64::NAN, f64::NAN, f64::NAN);
    let mut verdicts = Vec::new();
    for m in results {
        let is_floor = m.label.starts_with("floor-hook");
        if m.label.starts_with("floor-hook-store") {
            store_floor = m.median_ms;
        } else if is_floor {
            floor = m.median_ms;
            // A new payload: its store floor and command hook rows come after its floor.
            store_floor = f64::NAN;
            command = f64::NAN;
        }
        if m.label.starts_with("hooks-mcp-hook ") {
            // The first is the hook as built and installed: the others compare with it.
            if command.is_nan() {
                command = m.median_ms;
            }
            verdicts.push((m.label.clone(), m.median_ms, floor, store_floor));
        }
        let rss = if m.peak_rss_mib.is_nan() {
            "(daemon)".to_owned()
        } else if m.masked {
            format!("≤ {:.1}", m.peak_rss_mib)
        } else {
            format!("{:.1}", m.peak_rss_mib)
        };
        let ratio = |to: f64| {
            if to.is_nan() {
                "–".to_owned()
            } else {
                format!("{:.2}×", m.median_ms / to)
            }
        };
        let versus = |to: f64| {
            if is_floor {
                "–".to_owned()
            } else {
                ratio(to)
            }
        };
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {rss} |",
            m.label,
            m.median_ms,
            m.p90_ms,
            m.p99_ms,
            ratio(floor),
            if m.label.starts_with("floor-hook-store") {
                "1.00×".to_owned()
            } else {
                versus(store_floor)
            },
            versus(command),
        );
    }
    println!(
        "\nThe floors: `floor-hook` reads and scans the payload with the standard library alone; \
         `floor-hook-store` does the same, then opens the same SQLite store and runs one indexed \
         read and one small write in one transaction. Peak RSS is the largest resident set of \
         the command's process (`getrusage` of the measuring worker's children); `≤` marks a \
         peak below the worker's own size, which then bounds it from above. HTTP hooks: \
         expected median < 0.25× the command hook's.\n"
    );
    if smoke {
        println!("Smoke run (dev binaries, two runs per command): no target judged.");
        return;
    }
    println!("| target (medians, same run) | measured | verdict |");
    println!("|---|---:|---|");
    for (label, median, floor, store_floor) in verdicts {
        for (what, to, limit) in [("floor", floor, 2.0), ("store floor", store_floor, 1.5)] {
            let ratio = median / to;
            println!(
                "| {label} ≤ {limit:.1}× the {what} | {ratio:.2}× | {} |",
                if ratio <= limit { "met" } else { "not met" }
            );
        }
    }
}
