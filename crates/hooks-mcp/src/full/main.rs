//! `hooks-mcp-full`: the full server and every subcommand that needs the store.
//!
//! Agents start `hooks-mcp`, which `exec`s this binary on the first request it cannot answer
//! itself; it can also be run directly.

mod client;
mod hook;
mod init;
mod open;
mod ops;
mod status;

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
    /// Ask the running daemon (MCP_HOST, MCP_PORT) for /health; exit 0 when it answers 200.
    Health {
        /// `db` (store round trip) or `full` (counts and scheduler lag); default: alive and
        /// ready.
        #[arg(long)]
        level: Option<String>,
    },
    /// The agent client's hook command: reads one lifecycle event's payload on stdin
    /// (SessionStart, UserPromptSubmit, PreToolUse, PostToolUse) and answers on stdout.
    Hook {
        /// The event this command is registered for.
        event: String,
    },
    /// Register the MCP server and the hooks in the client's configuration (or --remove them).
    Init(init::InitArgs),
    /// Compare the configuration, the client's registration and the daemon (exit 0 running and
    /// matching, 1 stopped, 2 diverged).
    Status(status::StatusArgs),
    /// Publish, list, read, acknowledge and clear broadcasts.
    Channel(ops::ChannelArgs),
    /// Add, list and clear recurring reminders.
    Enforcement(ops::EnforcementArgs),
    /// List, show and clear conditions.
    Condition(ops::ConditionArgs),
    /// Create, list and cancel schedules.
    Schedule(ops::ScheduleArgs),
}

fn main() -> ExitCode {
    // The hook runs around every tool call: it skips the logger and the argument parser.
    if let Some(code) = hook::run_from_args() {
        return code;
    }
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Cmd::Serve) {
        Cmd::CatalogueDump => catalogue_dump(),
        Cmd::Serve | Cmd::ServeStdio => serve(),
        Cmd::Health { level } => health(level.as_deref()),
        Cmd::Hook { event } => return hook::run(&event),
        Cmd::Init(args) => return init::run(args),
        Cmd::Status(args) => return status::run(args),
        Cmd::Channel(args) => return ops::channel(args),
        Cmd::Enforcement(args) => return ops::enforcement(args),
        Cmd::Condition(args) => return ops::condition(args),
        Cmd::Schedule(args) => return ops::schedule(args),
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
    // The daemon reports its start-up phases and shutdown at `info`; a stdio server stays quiet.
    let daemon = std::env::var(server_full::daemon::TRANSPORT_ENV)
        .is_ok_and(|t| server_full::daemon::is_network_transport(&t));
    let default = if daemon {
        "info,rmcp=warn"
    } else {
        "warn,rmcp=error"
    };
    let filter = std::env::var("HOOKS_MCP_LOG").unwrap_or_else(|_| default.into());
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
    let transport = std::env::var(server_full::daemon::TRANSPORT_ENV).unwrap_or_default();
    match transport.trim() {
        "" | "stdio" => serve_stdio(),
        network if server_full::daemon::is_network_transport(network) => {
            Ok(server_full::daemon::serve_from_env()?)
        }
        other => anyhow::bail!(
            "MCP_TRANSPORT: unknown transport `{other}`; use stdio (default), streamable-http or \
             sse"
        ),
    }
}

/// `hooks-mcp-full health`: a probe for supervisors (Docker HEALTHCHECK) that needs no curl.
fn health(level: Option<&str>) -> anyhow::Result<()> {
    use std::io::Write;
    let addrs = server_full::daemon::probe_addresses()?;
    let timeout = std::time::Duration::from_secs(5);
    let mut last_error = None;
    for addr in addrs {
        match server_full::probe_health(addr, level, timeout) {
            Ok((status, body)) => {
                let mut out = std::io::stdout().lock();
                out.write_all(body.as_bytes())?;
                out.write_all(b"\n")?;
                out.flush()?;
                anyhow::ensure!(status == 200, "the daemon at {addr} answered {status}");
                return Ok(());
            }
            Err(e) => last_error = Some(anyhow::anyhow!("cannot reach the daemon at {addr}: {e}")),
        }
    }
    Err(last_error.unwrap_or_else(|| anyhow::anyhow!("MCP_HOST resolves to no address")))
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
