//! The stdio front end agent sessions start (`hooks-mcp`), all but its `main`.
//!
//! Most sessions never call a tool, so this process answers the opening and discovery itself
//! (`protocol_lite::light::LightSession`): the `initialize` handshake, or the 2026-07-28
//! `server/discover` and list requests, and it holds `subscriptions/listen` requests. The
//! first request it cannot answer `exec`s the full server (`hooks-mcp-stdio`) in this same
//! process, same pid and pipes, with the bytes to replay in an inherited anonymous file.
//!
//! # What this crate owns
//!
//! - The start-up: the start mode and filters, and the catalogue child
//!   (`hooks-mcp-catalogue`), whose listing becomes the one `tools/list` text the session keeps.
//! - The loop: a single thread `poll`ing stdin and, while a held subscription asks for resource
//!   list changes, an inotify descriptor on the SQLite store's directory (woken only by writes
//!   to the database or its WAL). No other thread, no timer, no async runtime: an idle session
//!   waits in one `poll`.
//! - The store's resource list, fetched from a short-lived child
//!   (`hooks-mcp-stdio --list-resources`) to answer `resources/list` and to tell a watched
//!   list's changes, at a bounded rate.
//! - Pushing into an idle session (`HOOKS_MCP_CHANNEL_PUSH`): a second inotify descriptor on
//!   the store's directory, and after a write a short-lived child
//!   (`hooks-mcp-stdio --pending-pushes`) that prints the urgent messages to push; the front
//!   end writes them as `notifications/claude/channel` and hands its cursor to the full server.
//!   Push on a store it cannot watch (PostgreSQL) starts the full server at once.
//! - The handoff: the replay file and the environment that tells the full server what was
//!   already answered, and the `exec`.
//!
//! # What it must not depend on
//!
//! std, rustix, libc (one `mallopt`), protocol-lite, store-files (where the store lives and
//! the watch on its files, which the store uses too), the catalogue and serde_json only: no
//! tokio, rmcp, store, SQLite or tools crate, nor the full server. The front end's dependency
//! tree is checked in CI (`cargo tree -p hooks-mcp --no-default-features -e normal`); what
//! needs the store runs in a child or after the handoff.

mod child;
mod error;
mod launch;
mod push;
mod resources;
mod serve;
mod watch;

use std::ffi::OsString;
use std::process::{Command, ExitCode};
use std::time::Duration;

use catalogue::{
    ALLOWED_TOOLS_ENV, CATEGORIES_ENV, Filter, Listing, MODE_ENV, MODULES_ENV, StartMode,
};
use protocol_lite::handshake::ServerIdentity;
use protocol_lite::light::LightSession;
use protocol_lite::modern::CacheHints;
use protocol_lite::push::Decision;
use protocol_lite::setting::{CATALOGUE_BIN_ENV, CATALOGUE_TIMEOUT_ENV};

pub use watch::{DATABASE_URL_ENV, HOME_ENV, sqlite_store_file};

use crate::child::Named;
use crate::error::{FrontError, debug};

/// Runs the front end with this process's arguments and environment: subcommands and network
/// transports `exec` the full binary at once; otherwise the light session serves stdin until it
/// ends (exit 0) or hands off.
pub fn run() -> ExitCode {
    child::map_outputs_apart();
    let args: Vec<String> = match std::env::args_os()
        .skip(1)
        .map(OsString::into_string)
        .collect()
    {
        Ok(args) => args,
        Err(bad) => {
            protocol_lite::diag!(
                "hooks-mcp: cannot start: the argument {bad:?} is not valid UTF-8; every \
                 argument of hooks-mcp (flags, names, ids, texts) is UTF-8 text"
            );
            return ExitCode::from(2);
        }
    };
    let (mode, rest) = match StartMode::parse(
        &args,
        std::env::var(MODE_ENV).ok().as_deref(),
        std::env::var(MODULES_ENV).ok().as_deref(),
    ) {
        Ok(parsed) => parsed,
        Err(e) => {
            protocol_lite::diag!("hooks-mcp: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let transport = std::env::var("MCP_TRANSPORT").unwrap_or_default();
    if !rest.is_empty() || !matches!(transport.trim(), "" | "stdio") {
        // Subcommands and network transports are the full server's: no front end to keep light.
        let args = rest.into_iter().map(OsString::from);
        return launch::exec(&launch::full_binary(), args, None, &mode);
    }
    // The server a session is handed over to: missing, it would fail the first tool call.
    if let Err(message) = launch::check_runnable(&launch::stdio_binary(), "stdio server") {
        protocol_lite::diag!("hooks-mcp: cannot start: {message}");
        return ExitCode::FAILURE;
    }
    let store = sqlite_store_file(|name| std::env::var_os(name)).filter(|_| watch::CAN_WATCH);
    let pushing = match Decision::from_vars(|name| std::env::var(name).ok()) {
        Decision::Off => None,
        Decision::Refused(why) => {
            protocol_lite::diag!("hooks-mcp: warning: {why}");
            None
        }
        Decision::On { .. } => {
            // Before the catalogue child: nothing published from now on is missed.
            let since = now_ms();
            match store.as_deref().map(|db| push::Pushing::start(db, since)) {
                Some(Ok(pushing)) => Some(pushing),
                failed => {
                    // PostgreSQL, or no watch: the full server hears the store's changes.
                    let why = match failed {
                        Some(Err(e)) => e.to_string(),
                        _ => "the store is not a local SQLite file".into(),
                    };
                    debug(|| format!("push on, served by the full server from the start: {why}"));
                    let args = std::iter::once(OsString::from("serve-stdio"));
                    return launch::exec(&launch::stdio_binary(), args, None, &mode);
                }
            }
        }
    };
    // After the exec above: the full server prints these itself.
    let (filter, mut warnings) = Filter::from_env();
    warnings.extend(mode.excluded_by(&filter));
    for w in &warnings {
        protocol_lite::diag!("hooks-mcp: warning: {w}");
    }
    let session = match light_session(&filter, &mode, pushing.is_some()) {
        Ok(session) => session,
        Err(message) => {
            protocol_lite::diag!("hooks-mcp: cannot start: {message}");
            return ExitCode::FAILURE;
        }
    };
    let session = session.with_resource_watch(store.is_some());
    serve::serve(session, &mode, store, pushing)
}

/// The current time in Unix milliseconds (the clock publications are stamped with).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The session for `mode` and `filter`: the listing (every tool as MCP JSON text) is filtered
/// and serialized into the one `tools/list` answer, then freed, so the session keeps that text
/// and no JSON tree.
/// `channel`: the session pushes urgent messages (it declares `claude/channel`).
fn light_session(filter: &Filter, mode: &StartMode, channel: bool) -> Result<LightSession, String> {
    let dump = generate_listing().map_err(|e| e.to_string())?;
    let listing = Listing::from_json(&dump)
        .map_err(|e| format!("the catalogue child's output is unusable: {e}"))?;
    let (visible, warnings) = listing.filtered(filter);
    for w in &warnings {
        protocol_lite::diag!("hooks-mcp: warning: {w}");
    }
    let identity = ServerIdentity {
        instructions: visible.instructions(mode),
        channel,
    };
    let tools = visible.tools_list_json(mode);
    debug(|| format!("light path ready ({mode}): {} tools visible", visible.len()));
    Ok(LightSession::new(identity, tools)
        .with_tools_hints(CacheHints::tools_list(mode.has_discovery())))
}

/// The catalogue child's time limit in milliseconds from `raw` (the setting's value), and a
/// warning when the value cannot be used (the default, 30 s, is used then).
fn catalogue_timeout(raw: Option<&str>) -> (u64, Option<String>) {
    const DEFAULT_MS: u64 = 30_000;
    let Some(text) = raw.map(str::trim).filter(|t| !t.is_empty()) else {
        return (DEFAULT_MS, None);
    };
    match text.parse::<u64>() {
        Ok(ms) if ms > 0 => (ms, None),
        _ => (
            DEFAULT_MS,
            Some(format!(
                "{CATALOGUE_TIMEOUT_ENV}=`{text}` is not a whole number of milliseconds (1 or \
                 more); using {DEFAULT_MS}"
            )),
        ),
    }
}

/// Runs `hooks-mcp-catalogue` with the filters cleared and returns its listing dump.
fn generate_listing() -> Result<String, FrontError> {
    let mut command = Command::new(launch::catalogue_binary());
    command
        .env_remove(CATEGORIES_ENV)
        .env_remove(ALLOWED_TOOLS_ENV);
    let (limit, warning) = catalogue_timeout(std::env::var(CATALOGUE_TIMEOUT_ENV).ok().as_deref());
    if let Some(warning) = warning {
        protocol_lite::diag!("hooks-mcp: warning: {warning}");
    }
    let hint = format!(
        "it is built and installed beside hooks-mcp-full, or set {CATALOGUE_BIN_ENV} to its path"
    );
    let named = Named {
        what: "catalogue child",
        hint: &hint,
        limit_setting: Some(CATALOGUE_TIMEOUT_ENV),
    };
    let text = child::output_of(command, Duration::from_millis(limit), named)?;
    String::from_utf8(text).map_err(|e| FrontError::Unusable {
        what: "catalogue child",
        problem: format!("not UTF-8: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::catalogue_timeout;

    #[test]
    fn a_catalogue_time_limit_it_cannot_use_is_said_and_replaced_by_the_default() {
        assert_eq!(catalogue_timeout(None), (30_000, None));
        assert_eq!(catalogue_timeout(Some(" ")), (30_000, None));
        assert_eq!(catalogue_timeout(Some("5000")), (5_000, None));
        for bad in ["abc", "-5", "0", "1.5"] {
            let (ms, warning) = catalogue_timeout(Some(bad));
            assert_eq!(ms, 30_000, "{bad}");
            let warning = warning.unwrap_or_default();
            assert!(
                warning.starts_with(&format!("HOOKS_MCP_CATALOGUE_TIMEOUT_MS=`{bad}`")),
                "{warning}"
            );
        }
    }
}
