//! VS Code's agent (from VS Code's documentation, code.visualstudio.com/docs/copilot): the
//! server in the user's `mcp.json` (`servers.hooks`: `"type": "stdio"` with `command` and
//! `args`, or `"type": "http"`/`"sse"` with `url` and `headers`, whose `${env:NAME}` VS Code
//! expands). Its agent hooks read Claude Code's `~/.claude/settings.json`: the hooks VS Code
//! runs are Claude Code's (`hook <Event>`), and the hook answers VS Code's payloads in the
//! format both read.

use std::path::PathBuf;

use serde_json::json;

use super::{Install, TOKEN, set_server, token_headers};
use crate::client::{Binaries, HookKind, Transport};
use crate::doc::{FileChange, JsonDoc};

/// `$HOOKS_MCP_VSCODE_USER_DIR`, else VS Code's user directory: `~/Library/Application
/// Support/Code/User` on macOS, `$XDG_CONFIG_HOME/Code/User` or `~/.config/Code/User`
/// elsewhere.
pub(super) fn dir() -> Result<PathBuf, String> {
    if let Some(dir) = super::var(super::VSCODE_USER_DIR_ENV) {
        return Ok(dir);
    }
    if cfg!(target_os = "macos") {
        return Ok(super::home()?.join("Library/Application Support/Code/User"));
    }
    let config = match super::var("XDG_CONFIG_HOME") {
        Some(dir) => dir,
        None => super::home()?.join(".config"),
    };
    Ok(config.join("Code").join("User"))
}

/// The change to `mcp.json`, and (`with_claude_hooks`) to Claude Code's `settings.json`.
pub(super) fn plan(
    install: Option<&Install<'_>>,
    with_claude_hooks: bool,
) -> Result<Vec<FileChange>, String> {
    let path = dir()?.join("mcp.json");
    let doc = JsonDoc::load(&path)?;
    let mut after = doc.value.clone();
    let mut changes = Vec::new();
    let entry = install.map(|install| match install.url() {
        None => json!({ "type": "stdio", "command": install.front(), "args": [] }),
        Some(url) => {
            let kind = if install.transport == Transport::Sse {
                "sse"
            } else {
                "http"
            };
            let mut entry = json!({ "type": kind, "url": url });
            if let Some(headers) = token_headers(install, &format!("${{env:{TOKEN}}}")) {
                entry["headers"] = headers;
            }
            entry
        }
    });
    set_server(
        &mut after,
        "servers",
        entry,
        &["env", "headers"],
        &mut changes,
        &path,
    )?;
    let mut plan = vec![doc.change(after, changes)];
    if with_claude_hooks {
        let bins = match install {
            Some(install) => install.bins.clone(),
            None => Binaries::beside_current_exe()?,
        };
        let kind = install.map(|_| HookKind::Command);
        plan.push(super::claude::settings_plan(kind.as_ref(), &bins)?);
    }
    Ok(plan)
}
