//! `hooks-mcp-full`: the full server and every subcommand that needs the store.
//!
//! Agents start `hooks-mcp`, which `exec`s this binary on the first request it cannot answer
//! itself; it can also be run directly.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use server_full::HooksServer;

/// The hooks-mcp full server.
#[derive(Debug, Parser)]
#[command(name = "hooks-mcp-full", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Serve MCP on the transport MCP_TRANSPORT selects (default: stdio).
    Serve,
    /// Print every registered tool as catalogue JSON (the front end's child process).
    #[command(hide = true)]
    CatalogueDump,
    /// Serve one stdio session handed over by the front end.
    #[command(hide = true)]
    ServeStdio,
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Cmd::Serve) {
        Cmd::CatalogueDump => catalogue_dump(),
        Cmd::Serve | Cmd::ServeStdio => serve(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hooks-mcp: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = std::env::var("HOOKS_MCP_LOG").unwrap_or_else(|_| "warn,rmcp=error".into());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // stdout carries the protocol: logs go to stderr only.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

fn catalogue_dump() -> anyhow::Result<()> {
    use std::io::Write;
    server_full::link_tools();
    let catalogue = catalogue::Catalogue::from_registry().context("building the catalogue")?;
    let mut out = std::io::stdout().lock();
    out.write_all(catalogue.to_json().as_bytes())?;
    out.flush()?;
    Ok(())
}

fn serve() -> anyhow::Result<()> {
    let transport = std::env::var("MCP_TRANSPORT").unwrap_or_default();
    match transport.trim() {
        "" | "stdio" => serve_stdio(),
        other => {
            anyhow::bail!("MCP_TRANSPORT={other} is not a transport this build serves; use stdio")
        }
    }
}

fn serve_stdio() -> anyhow::Result<()> {
    let handed_over = std::env::var("HOOKS_MCP_REPLAY_FD").ok();
    let replay = match &handed_over {
        Some(fd) => std::fs::read(format!("/dev/fd/{}", fd.trim()))
            .with_context(|| format!("reading the handed-over session from descriptor {fd}"))?,
        None => Vec::new(),
    };
    let suppress = std::env::var("HOOKS_MCP_SUPPRESS_ID")
        .ok()
        .and_then(|id| serde_json::from_str::<serde_json::Value>(&id).ok());
    let (settings, warnings, opened) =
        server_full::Settings::stdio_from_env().context("opening the store")?;
    if opened == store::Opened::Created {
        tracing::info!("created a new store");
    }
    let (server, more) = HooksServer::new(settings).context("building the tool registry")?;
    if handed_over.is_none() {
        // The front end already printed these before handing over.
        for w in warnings.iter().chain(&more) {
            eprintln!("hooks-mcp: warning: {w}");
        }
    }
    tracing::debug!(
        replay_bytes = replay.len(),
        tools = server.tools().len(),
        "full server starting on stdio"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(server_full::stdio::serve_stdio(server, replay, suppress))?;
    Ok(())
}
