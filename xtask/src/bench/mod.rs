//! `cargo xtask bench`: measurements of the stdio front end, the store and the tools, printed as
//! markdown tables (medians, percentiles and ratios; nothing here asserts a timing).
//!
//! Benchmarks run optimised: a debug `cargo xtask` builds the release xtask and runs the same
//! command through it, and the stdio benchmarks build and run the release server binaries.

mod api;
mod client;
mod console;
mod fixtures;
mod stats;
mod stdio;
mod store_bench;
pub(crate) use store_bench::PgSchema;
mod tools;

#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

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
    Hook(crate::bench_hook::Args),
    /// Latency of every read API route on a release daemon over a filled SQLite store.
    Api(api::Args),
    /// The operator console's pages on a release daemon over a filled SQLite store: server
    /// time, page weight, and how soon a change reaches an open page's event stream.
    Console(console::Args),
    /// One concurrent publisher of `bench store` (spawned by it).
    #[command(hide = true)]
    StoreWorker(store_bench::WorkerArgs),
}

/// Runs the command.
pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    if let Which::StoreWorker(worker) = &args.which {
        return store_bench::worker(worker);
    }
    if cfg!(debug_assertions) {
        return rerun_optimised();
    }
    match &args.which {
        Which::Stdio(a) => stdio::run(a),
        Which::Store(a) => store_bench::run(a),
        Which::Tools(a) => tools::run(a),
        Which::Hook(a) => crate::bench_hook::run(a),
        Which::Api(a) => api::run(a),
        Which::Console(a) => console::run(a),
        Which::StoreWorker(_) => Ok(()),
    }
}

/// Builds the release xtask and runs this same command with it: unoptimised store and tool code
/// would measure the compiler's debug mode, not the project.
fn rerun_optimised() -> anyhow::Result<()> {
    eprintln!("bench: building the optimised xtask (cargo build --release -p xtask)...");
    cargo_build(&["-p", "xtask"])?;
    let exe = release_bin("xtask");
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let status = Command::new(&exe)
        .args(&args)
        .status()
        .with_context(|| format!("running {}", exe.display()))?;
    if !status.success() {
        bail!("the optimised benchmark run failed ({status})");
    }
    Ok(())
}

/// The workspace root (xtask lives one level below it).
fn workspace_root() -> anyhow::Result<&'static Path> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the xtask crate has no parent directory")
}

/// The cargo target directory (honouring `CARGO_TARGET_DIR`).
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or(Path::new("."))
            .join("target"),
    }
}

/// `target/release/<name>`.
fn release_bin(name: &str) -> PathBuf {
    target_dir().join("release").join(name)
}

/// Runs `cargo build --release <args>` in the workspace; its output goes to stderr.
fn cargo_build(args: &[&str]) -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .current_dir(workspace_root()?)
        .args(["build", "--release"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("cargo build --release {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Private copies of the release binaries a benchmark runs.
///
/// Copies, because the workspace's `target/release` may be rebuilt while a benchmark runs, and
/// written back to disk: until the kernel writes a new file's pages (up to half a minute after
/// the link), the pages a process maps from it count as private *dirty* in `smaps`, which would
/// charge the binary's code to the dirty-memory figures.
#[derive(Debug)]
struct ServerBins {
    _dir: tempfile::TempDir,
    /// The stdio front end (`hooks-mcp`).
    front: PathBuf,
    /// The full server (`hooks-mcp-full`), beside the front end.
    full: PathBuf,
    /// The std-only floor program (`floor-stdio`), when asked for.
    floor: Option<PathBuf>,
}

impl ServerBins {
    /// Builds (unless `skip_build`) and copies `hooks-mcp`, `hooks-mcp-full`, the catalogue
    /// child `hooks-mcp-catalogue` (found beside the full server) and, with `with_floor`,
    /// `floor-stdio`.
    fn build(skip_build: bool, with_floor: bool) -> anyhow::Result<ServerBins> {
        if !skip_build {
            eprintln!("bench: cargo build --release -p hooks-mcp --bins");
            cargo_build(&["-p", "hooks-mcp", "--bins"])?;
            if with_floor {
                eprintln!("bench: cargo build --release -p bench-floor");
                cargo_build(&["-p", "bench-floor"])?;
            }
        }
        let target = target_dir();
        std::fs::create_dir_all(&target)
            .with_context(|| format!("creating {}", target.display()))?;
        let dir = tempfile::Builder::new()
            .prefix("bench-bins-")
            .tempdir_in(&target)
            .context("creating a directory for the benchmarked binaries")?;
        let copy = |name: &str, package: &str| -> anyhow::Result<PathBuf> {
            let built = release_bin(name);
            if !built.exists() {
                bail!(
                    "{} is missing; build it with `cargo build --release -p {package}` (or \
                     drop --skip-build)",
                    built.display()
                );
            }
            let copied = dir.path().join(name);
            std::fs::copy(&built, &copied)
                .and_then(|_| std::fs::File::open(&copied)?.sync_all())
                .with_context(|| format!("copying {}", built.display()))?;
            Ok(copied)
        };
        let front = copy("hooks-mcp", "hooks-mcp --bins")?;
        let full = copy("hooks-mcp-full", "hooks-mcp --bins")?;
        copy("hooks-mcp-catalogue", "hooks-mcp --bins")?;
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
