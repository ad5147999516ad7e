//! `hooks-mcp init`: registers the MCP server and the hook commands in each client's
//! configuration (Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor, VS Code), or removes
//! them (`--remove`).
//!
//! Idempotent (a second run changes nothing and writes nothing), it plans every file first
//! (nothing is written when any of them cannot be read or changed), backs up each file it
//! changes (`<file>.hooks-mcp-<unix ms>.bak`), writes through a temporary file and a rename,
//! and touches only hooks-mcp's own entries, editing the files in place: everything else keeps
//! its value, its place, its formatting and its comments (see [`crate::doc`]). `--remove`
//! deletes what it added and restores the files as they were.

use hook_dispatch::open;
use serde_json::Value;

use crate::ConfigError;
use crate::client::{self, Binaries, ClientFiles, Endpoint, HookKind, Transport};
use crate::clients::{self, Client, Install};
use crate::doc::{FileChange, JsonDoc};

/// What `hooks-mcp init` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// The transport to register (default: `MCP_TRANSPORT`, else stdio). Network transports
    /// register the daemon's URL from `MCP_HOST` and `MCP_PORT`.
    pub transport: Option<Transport>,
    /// Register HTTP hooks posting to the daemon instead of command hooks (Claude Code).
    pub http_hooks: bool,
    /// The daemon's base URL for HTTP hooks (default: from `MCP_HOST` and `MCP_PORT`).
    pub url: Option<String>,
    /// Remove hooks-mcp's server entry and hooks instead.
    pub remove: bool,
    /// Report the changes without writing anything.
    pub dry_run: bool,
    /// The clients to register with; empty: every client found on this machine (Claude Code
    /// when none is).
    pub clients: Vec<Client>,
}

/// Runs `init` in the clients' files (found from the environment) for the binaries beside the
/// running executable, and returns the report for people.
///
/// # Errors
/// [`ConfigError`] saying what is wrong; nothing was written then.
pub fn run(args: &InitOptions) -> Result<String, ConfigError> {
    plan_and_apply(args).map_err(ConfigError)
}

/// The clients `init` works on: those asked for, else those found (Claude Code when none is).
pub fn chosen(asked: &[Client]) -> Vec<Client> {
    if !asked.is_empty() {
        let mut list = asked.to_vec();
        list.sort();
        list.dedup();
        return list;
    }
    let found: Vec<Client> = Client::ALL
        .into_iter()
        .filter(|c| clients::found(*c))
        .collect();
    if found.is_empty() {
        vec![Client::Claude]
    } else {
        found
    }
}

fn plan_and_apply(args: &InitOptions) -> Result<String, String> {
    let bins = Binaries::beside_current_exe()?;
    let install = if args.remove {
        None
    } else {
        let transport = match args.transport {
            Some(t) => t,
            None => Transport::from_env()?,
        };
        Some((transport, Endpoint::from_env()?))
    };
    let hooks = match (&install, args.http_hooks) {
        (None, _) => None,
        (Some(_), false) => Some(HookKind::Command),
        (Some((_, endpoint)), true) => Some(HookKind::Http {
            base: match &args.url {
                Some(url) => check_base_url(url)?,
                None => endpoint.base_url(),
            },
        }),
    };
    let chosen = chosen(&args.clients);
    let mut report = Vec::new();
    let mut plans: Vec<(Client, Vec<FileChange>)> = Vec::new();
    for client in &chosen {
        let plan = match client {
            Client::Claude => clients::claude::plan(install.as_ref(), hooks.as_ref(), &bins),
            other => {
                let spec = install.as_ref().map(|(transport, endpoint)| Install {
                    transport: *transport,
                    endpoint,
                    bins: &bins,
                    token: token_set(),
                });
                let with_claude_hooks = !chosen.contains(&Client::Claude)
                    && (install.is_some() || !claude_server_registered());
                clients::plan(*other, spec.as_ref(), with_claude_hooks)
            }
        };
        match plan {
            Ok(plan) => plans.push((*client, plan)),
            Err(why) => return Err(format!("{}: {why}", client.title())),
        }
    }
    for (client, plan) in &plans {
        report.push(format!("{}:", client.title()));
        for change in plan {
            report.push(format!("  {}:", change.path.display()));
            if change.is_unchanged() {
                report.push("    unchanged".into());
            }
            report.extend(change.changes.iter().map(|c| format!("    {c}")));
        }
    }
    if args.dry_run {
        report.push("dry run: nothing was written".into());
        return Ok(report.join("\n"));
    }
    let now = open::now_ms();
    let changed: Vec<&FileChange> = plans
        .iter()
        .flat_map(|(_, plan)| plan)
        .filter(|change| !change.is_unchanged())
        .collect();
    for backup in crate::doc::write_all(&changed, now)? {
        report.push(format!("backup of the previous file: {}", backup.display()));
    }
    if let Some(HookKind::Http { base }) = &hooks {
        report.push(format!(
            "the hooks now POST to the daemon at {base}: start `hooks-mcp-full serve` with \
             MCP_TRANSPORT=streamable-http or sse there, and give the client the daemon's token \
             in {} (`hooks-mcp status` checks it); clients other than Claude Code run command \
             hooks",
            client::TOKEN_ENV
        ));
    }
    if let Some((transport, _)) = &install
        && *transport != Transport::Stdio
    {
        report.push(format!(
            "the clients now expect a running daemon: start `hooks-mcp-full serve` with \
             MCP_TRANSPORT={transport} (and the same MCP_HOST/MCP_PORT); `hooks-mcp status` \
             checks it"
        ));
    }
    if plans.iter().any(|(c, _)| *c == Client::Codex) && install.is_some() {
        report.push(
            "Codex: the hooks are marked trusted in config.toml (as Codex's /hooks would), \
             so that Codex runs them"
                .into(),
        );
    }
    Ok(report.join("\n"))
}

/// Whether `HOOKS_MCP_TOKEN` is set (network entries then reference it).
fn token_set() -> bool {
    std::env::var_os(client::TOKEN_ENV).is_some_and(|v| !v.is_empty())
}

/// Whether Claude Code's `mcpServers.hooks` is registered (VS Code's removal then leaves
/// Claude Code's hooks, which Claude Code uses too).
fn claude_server_registered() -> bool {
    ClientFiles::from_env()
        .ok()
        .and_then(|files| JsonDoc::load(&files.servers).ok())
        .is_some_and(|doc| client::our_server(&Value::Object(doc.value)).is_some())
}

/// The daemon's base URL from `--url`: `http(s)://host[:port]`, a trailing slash (or a
/// trailing `/hooks`) dropped.
fn check_base_url(url: &str) -> Result<String, String> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix("/hooks").unwrap_or(url);
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(authority) if !authority.is_empty() && !authority.contains('/') => Ok(url.to_owned()),
        _ => Err(format!(
            "--url `{url}` is not the daemon's base URL; give http://HOST:PORT (the hooks post \
             to <URL>/hooks/<Event>)"
        )),
    }
}
