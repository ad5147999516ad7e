//! `cargo xtask bench`: measurements of the stdio front end, the store, the tools, the hook
//! command, the read API, the operator console and the network daemon, printed as
//! markdown tables (medians, percentiles and ratios; nothing here asserts a timing).
//!
//! Benchmarks run optimised: a debug `cargo xtask` builds the release xtask and runs the same
//! command through it, and the benchmarks build and run the release binaries. Every benchmark
//! takes `--smoke`: the smallest sizes, one round, dev binaries and the unoptimised xtask, so
//! that every code path runs in seconds and fails on errors; its figures mean nothing and no
//! target is judged.

mod api;
mod client;
mod console;
mod fixtures;
mod hook;
mod http;
mod openings;
mod push;
pub(crate) mod stats;
mod stdio;
mod store_bench;
mod tools;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::util::cargo::{self, Profile};

/// Options of `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    which: Which,
}

/// Which benchmark to run.
#[derive(Debug, clap::Subcommand)]
enum Which {
    /// Memory, threads, descriptors and latency of the stdio front end over real pipes, against a
    /// std-only floor program and the full server served directly.
    Stdio(stdio::Args),
    /// Store throughput and latency (SQLite, or PostgreSQL with `--backend postgres`):
    /// sequential operations, concurrent publishers and the scheduler's claim rate.
    Store(store_bench::Args),
    /// Per-call latency of every registered tool, in process and through the real server.
    Tools(tools::Args),
    /// Wall time and peak memory of the hook command (`hook PreToolUse`, `hook
    /// UserPromptSubmit`) through both binaries, against a std-only floor program.
    Hook(hook::Args),
    /// Latency of every read API route on a release daemon over a filled SQLite store.
    Api(api::Args),
    /// The operator console's pages on a release daemon over a filled SQLite store: server
    /// time, page weight, and how soon a change reaches an open page's event stream.
    Console(console::Args),
    /// Streamable HTTP on the network daemon: `tools/call` throughput and p50/p99 at several
    /// session counts, and memory per idle session (or, with `--compare-metrics`, metrics on
    /// against off).
    Http(http::Args),
    /// One concurrent publisher of `bench store` (spawned by it).
    #[command(hide = true)]
    StoreWorker(store_bench::WorkerArgs),
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    if cfg!(debug_assertions) && !args.which.runs_unoptimised() {
        return cargo::rerun_optimised();
    }
    match &args.which {
        Which::Stdio(a) => stdio::run(a),
        Which::Store(a) => store_bench::run(a),
        Which::Tools(a) => tools::run(a),
        Which::Hook(a) => hook::run(a),
        Which::Api(a) => api::run(a),
        Which::Console(a) => console::run(a),
        Which::Http(a) => http::run(a),
        Which::StoreWorker(worker) => store_bench::worker(worker),
    }
}

impl Which {
    /// Whether this run goes on in an unoptimised xtask: smoke runs (which measure nothing),
    /// `bench http --debug`, and the workers a benchmark spawns (with the benchmark's own
    /// executable, already the right one).
    fn runs_unoptimised(&self) -> bool {
        match self {
            Which::Stdio(a) => a.smoke,
            Which::Store(a) => a.smoke,
            Which::Tools(a) => a.smoke,
            Which::Hook(a) => a.smoke || a.is_worker(),
            Which::Api(a) => a.smoke,
            Which::Console(a) => a.smoke,
            Which::Http(a) => a.smoke || a.debug,
            Which::StoreWorker(_) => true,
        }
    }
}

/// The server binaries a benchmark runs.
///
/// Release binaries are private copies, because the workspace's `target/release` may be
/// rebuilt while a benchmark runs, and written back to disk: until the kernel writes a new
/// file's pages (up to half a minute after the link), the pages a process maps from it count
/// as private *dirty* in `smaps`, which would charge the binary's code to the dirty-memory
/// figures. Dev binaries (smoke runs, no figures) are run where cargo put them.
#[derive(Debug)]
struct ServerBins {
    _dir: Option<tempfile::TempDir>,
    /// The stdio front end (`hooks-mcp`).
    front: PathBuf,
    /// The full server (`hooks-mcp-full`), beside the front end.
    full: PathBuf,
    /// The std-only floor program (`floor-stdio`), when asked for.
    floor: Option<PathBuf>,
}

impl ServerBins {
    /// Builds in `profile` (unless `skip_build`) `hooks-mcp`, `hooks-mcp-full`, the catalogue
    /// child `hooks-mcp-catalogue` (found beside the full server) and, with `with_floor`,
    /// `floor-stdio`; copies release binaries aside.
    fn build(profile: Profile, skip_build: bool, with_floor: bool) -> anyhow::Result<ServerBins> {
        if !skip_build {
            eprintln!(
                "bench: cargo build ({}) -p hooks-mcp --bins",
                profile.name()
            );
            cargo::build(profile, &["-p", "hooks-mcp", "--bins"])?;
            if with_floor {
                eprintln!("bench: cargo build ({}) -p bench-floor", profile.name());
                cargo::build(profile, &["-p", "bench-floor"])?;
            }
        }
        let dir = match profile {
            Profile::Dev => None,
            Profile::Release => {
                let target = crate::util::paths::target_dir();
                std::fs::create_dir_all(&target)
                    .with_context(|| format!("creating {}", target.display()))?;
                let dir = tempfile::Builder::new()
                    .prefix("bench-bins-")
                    .tempdir_in(&target)
                    .context("creating a directory for the benchmarked binaries")?;
                Some(dir)
            }
        };
        let copy = |name: &str, package: &str| -> anyhow::Result<PathBuf> {
            let built = profile.bin(name);
            if !built.exists() {
                bail!(
                    "{} is missing; build it with `cargo build{} -p {package}` (or drop \
                     --skip-build)",
                    built.display(),
                    if profile == Profile::Release {
                        " --release"
                    } else {
                        ""
                    }
                );
            }
            let Some(dir) = &dir else {
                return Ok(built);
            };
            let copied = dir.path().join(name);
            std::fs::copy(&built, &copied)
                .and_then(|_| std::fs::File::open(&copied)?.sync_all())
                .with_context(|| format!("copying {}", built.display()))?;
            Ok(copied)
        };
        let front = copy("hooks-mcp", "hooks-mcp --bins")?;
        let full = copy("hooks-mcp-full", "hooks-mcp --bins")?;
        copy("hooks-mcp-catalogue", "hooks-mcp --bins")?;
        // What the front end hands a session over to, found beside the full server.
        copy("hooks-mcp-stdio", "hooks-mcp --bins")?;
        let floor = if with_floor {
            Some(copy("floor-stdio", "bench-floor")?)
        } else {
            None
        };
        Ok(ServerBins {
            _dir: dir,
            front,
            full,
            floor,
        })
    }
}

/// Unix time now, in milliseconds.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
