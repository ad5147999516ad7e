//! Copilot CLI (checked against @github/copilot 1.0.102: `copilot mcp add` writes the same
//! entry, and its changelog and runtime name the hook formats): the server in
//! `~/.copilot/mcp-config.json` (`mcpServers.hooks`: `"type": "local"` with `command` and
//! `args`, or `"type": "http"`/`"sse"` with `url` and `headers`, and `"tools": ["*"]`), the hooks
//! in hooks-mcp's own file `~/.copilot/hooks/hooks-mcp.json` (`"version": 1`). The hooks use
//! Claude Code's event names (its `Stop` and `SessionEnd` are Copilot CLI's `agentStop` and
//! `sessionEnd`): Copilot CLI then sends Claude Code compatible payloads, with the session's id
//! (its own camelCase events document none).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::{Client, Install, TOKEN, set_server, token_headers};
use crate::client::Transport;
use crate::doc::{FileChange, JsonDoc};

/// How long Copilot CLI waits for a hook, in seconds (condition scripts run inside it).
const TIMEOUT_S: u64 = 60;

/// `$COPILOT_HOME`, else `~/.copilot`.
pub(super) fn dir() -> Result<PathBuf, String> {
    match super::var(super::COPILOT_HOME_ENV) {
        Some(dir) => Ok(dir),
        None => Ok(super::home()?.join(".copilot")),
    }
}

/// The hooks file's path.
pub(crate) fn hooks_file() -> Result<PathBuf, String> {
    Ok(dir()?.join("hooks").join("hooks-mcp.json"))
}

/// The changes to `mcp-config.json` and the hooks file.
pub(super) fn plan(install: Option<&Install<'_>>) -> Result<Vec<FileChange>, String> {
    let path = dir()?.join("mcp-config.json");
    let doc = JsonDoc::load(&path)?;
    let mut after = doc.value.clone();
    let mut changes = Vec::new();
    let entry = install.map(|install| match install.url() {
        None => json!({ "type": "local", "command": install.front(), "args": [], "tools": ["*"] }),
        Some(url) => {
            let kind = if install.transport == Transport::Sse {
                "sse"
            } else {
                "http"
            };
            let mut entry = json!({ "type": kind, "url": url, "tools": ["*"] });
            if let Some(headers) = token_headers(install, &format!("${{{TOKEN}}}")) {
                entry["headers"] = headers;
            }
            entry
        }
    });
    set_server(
        &mut after,
        "mcpServers",
        entry,
        &["env", "headers", "tools"],
        &mut changes,
        &path,
    )?;
    let server = doc.change(after, changes);

    // The hooks file is hooks-mcp's: written whole, deleted on removal.
    let hooks_path = hooks_file()?;
    let hooks = JsonDoc::load(&hooks_path)?;
    let wanted = install.map(|install| {
        let mut events = Map::new();
        // Claude Code's names, which Copilot CLI accepts.
        for event in Client::Copilot.hook_events().iter().copied() {
            events.insert(
                event.into(),
                json!([{
                    "type": "command",
                    "bash": install.hook_command(Client::Copilot, event),
                    "timeoutSec": TIMEOUT_S,
                }]),
            );
        }
        json!({ "version": 1, "hooks": events })
    });
    let current = Value::Object(hooks.value.clone());
    let hooks_change = match wanted {
        Some(wanted) if hooks.text.is_some() && current == wanted => {
            hooks.change(hooks.value.clone(), Vec::new())
        }
        Some(wanted) => {
            let text = serde_json::to_string_pretty(&wanted).unwrap_or_default() + "\n";
            FileChange {
                path: hooks_path,
                before: hooks.text.clone(),
                after: Some(text),
                changes: vec![format!("write hooks-mcp's hooks: {wanted}")],
            }
        }
        None if hooks.text.is_some() => FileChange {
            path: hooks_path,
            before: hooks.text.clone(),
            after: None,
            changes: vec!["remove hooks-mcp's hooks file".into()],
        },
        None => hooks.change(hooks.value.clone(), Vec::new()),
    };
    Ok(vec![server, hooks_change])
}
