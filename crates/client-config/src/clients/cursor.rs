//! Cursor (from its documentation, cursor.com/docs; Cursor is not installable to check here):
//! the server in `~/.cursor/mcp.json` (`mcpServers.hooks`: `command` and `args`, or `url` and
//! `headers`, whose `${env:NAME}` Cursor expands), the hooks in `~/.cursor/hooks.json`
//! (`"version": 1`, `hooks.<event>`: a list of `{"command": …}`) for `sessionStart`,
//! `beforeSubmitPrompt`, `beforeShellExecution`, `beforeMCPExecution`, `postToolUse`, `stop`
//! (the turn-end push, as a follow-up message) and `sessionEnd`.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Client, Install, TOKEN, set_flat_hooks, set_server, token_headers};
use crate::doc::{FileChange, JsonDoc};

/// `~/.cursor`.
pub(super) fn dir() -> Result<PathBuf, String> {
    Ok(super::home()?.join(".cursor"))
}

/// The changes to `mcp.json` and `hooks.json`.
pub(super) fn plan(install: Option<&Install<'_>>) -> Result<Vec<FileChange>, String> {
    let dir = dir()?;
    let path = dir.join("mcp.json");
    let doc = JsonDoc::load(&path)?;
    let mut after = doc.value.clone();
    let mut changes = Vec::new();
    let entry = install.map(|install| match install.url() {
        None => json!({ "command": install.front(), "args": [] }),
        Some(url) => {
            let mut entry = json!({ "url": url });
            if let Some(headers) = token_headers(install, &format!("${{env:{TOKEN}}}")) {
                entry["headers"] = headers;
            }
            entry
        }
    });
    set_server(
        &mut after,
        "mcpServers",
        entry,
        &["env", "headers"],
        &mut changes,
        &path,
    )?;
    let server = doc.change(after, changes);

    let hooks_path = dir.join("hooks.json");
    let hooks = JsonDoc::load(&hooks_path)?;
    let mut after = hooks.value.clone();
    let mut changes = Vec::new();
    let hook = |event: &str| -> Value {
        match install {
            Some(install) => json!({ "command": install.hook_command(Client::Cursor, event) }),
            None => Value::Null,
        }
    };
    if install.is_some() && !after.contains_key("version") {
        after.insert("version".into(), 1.into());
        changes.push("add version = 1".into());
    }
    set_flat_hooks(
        &mut after,
        &hooks_path,
        Client::Cursor.hook_events(),
        install.map(|_| &hook as &dyn Fn(&str) -> Value),
        &mut changes,
    )?;
    // What is left of a file `init` created: nothing of the user's.
    if install.is_none()
        && !changes.is_empty()
        && after.len() == 1
        && after.get("version") == Some(&json!(1))
    {
        after.clear();
    }
    Ok(vec![server, hooks.change(after, changes)])
}
