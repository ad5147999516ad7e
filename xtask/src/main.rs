//! Project automation for hooks-mcp, run as `cargo xtask <command>`.
//!
//! It owns developer commands only (catalogue dumps, token counts, generated docs); nothing in
//! the shipped binaries may depend on it.
// A developer command's output is its stdout; there is no MCP stream to corrupt here.
#![allow(clippy::print_stdout)]

mod catalogue_cmd;
mod markdown;
mod tokens;

#[cfg(test)]
mod tests;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Catalogue(args) => catalogue_cmd::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
