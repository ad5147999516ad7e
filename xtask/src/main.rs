//! Project automation for hooks-mcp, run as `cargo xtask <command>`.
//!
//! It owns developer commands only (catalogue dumps, token counts, generated docs, benchmarks);
//! nothing in the shipped binaries may depend on it.
// A developer command's output is its stdout; there is no MCP stream to corrupt here.
#![allow(clippy::print_stdout, clippy::disallowed_macros)]

mod bench;
mod catalogue_cmd;
mod conformance;
mod docs_cmd;
mod fleet;
mod fuzz;
mod markdown;
mod soak;
mod tokens;
mod util;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tidy;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Project automation for hooks-mcp.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the tool catalogue (MCP tools/list JSON or markdown), count its tokens, or
    /// write and check docs/catalogue.md.
    Catalogue(catalogue_cmd::Args),
    /// Benchmarks (stdio front end, store, tools, hook, read API, console, network daemon),
    /// printed as markdown tables; `--smoke` runs any of them in seconds.
    Bench(bench::Args),
    /// Write docs/configuration.md from the settings each crate declares (--check: verify).
    Docs(docs_cmd::Args),
    /// Run the official MCP conformance suite against the daemon's /mcp, with the
    /// expected-failures baseline.
    Conformance(conformance::Args),
    /// One daemon under mixed load for N minutes (sessions, legacy SSE, hook events,
    /// schedules): memory, fds, threads and errors sampled; fails on errors or growth.
    Soak(soak::Args),
    /// N daemons on a throwaway PostgreSQL behind HAProxy under mixed load, with a rolling
    /// restart in the middle: latency before, during and after it; fails on any failed
    /// request, lost or duplicated publish or firing.
    Fleet(fleet::Args),
    /// Build and run the coverage-guided fuzz targets (nightly, cargo-fuzz) from their seeds.
    Fuzz(fuzz::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Catalogue(args) => catalogue_cmd::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Docs(args) => docs_cmd::run(&args),
        Command::Conformance(args) => conformance::run(&args),
        Command::Soak(args) => soak::run(&args),
        Command::Fleet(args) => fleet::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
