//! `cargo xtask bench`: measurements of the stdio front end, the store and the tools, printed as
//! markdown tables (medians, percentiles and ratios; nothing here asserts a timing).
//!
//! Benchmarks run optimised: a debug `cargo xtask` builds the release xtask and runs the same
//! command through it, and the stdio benchmarks build and run the release server binaries.

mod client;
mod fixtures;
mod stats;
mod stdio;
mod store_bench;
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
    /// SQLite store throughput and latency: sequential operations and concurrent publishers.
    Store(store_bench::Args),
    /// Per-call latency of every registered tool, in process and through the real server.
    Tools(tools::Args),
    /// Wall time and peak memory of the hook command (`hook PreToolUse`, `hook
    /// UserPromptSubmit`) through both binaries, against a std-only floor program.
    Hook(crate::bench_hook::Args),
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

/// `target/release/<name>` (honouring `CARGO_TARGET_DIR`).
fn release_bin(name: &str) -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or(Path::new("."))
            .join("target"),
    };
    target.join("release").join(name)
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

/// The release server binaries, built first unless `skip_build`.
#[derive(Debug)]
struct ServerBins {
    /// The stdio front end (`hooks-mcp`).
    front: PathBuf,
    /// The full server (`hooks-mcp-full`).
    full: PathBuf,
}

impl ServerBins {
    fn build(skip_build: bool) -> anyhow::Result<ServerBins> {
        if !skip_build {
            eprintln!("bench: cargo build --release -p hooks-mcp --bins");
            cargo_build(&["-p", "hooks-mcp", "--bins"])?;
        }
        let bins = ServerBins {
            front: release_bin("hooks-mcp"),
            full: release_bin("hooks-mcp-full"),
        };
        for bin in [&bins.front, &bins.full] {
            if !bin.exists() {
                bail!(
                    "{} is missing; build it with `cargo build --release -p hooks-mcp --bins` \
                     (or drop --skip-build)",
                    bin.display()
                );
            }
            settle(bin)?;
        }
        Ok(bins)
    }
}

/// Writes a freshly built binary's pages back to disk. Until the kernel does so (up to half a
/// minute after the link), the pages a process maps from it count as private *dirty* in
/// `smaps`, which would charge the binary's code to the dirty-memory figures.
fn settle(bin: &Path) -> anyhow::Result<()> {
    std::fs::File::open(bin)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("writing {} back to disk", bin.display()))
}

/// Unix time now, in milliseconds.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
