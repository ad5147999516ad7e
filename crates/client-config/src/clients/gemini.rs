//! Gemini CLI (verified against @google/gemini-cli 0.61.0, its bundled docs and source): one
//! file, `~/.gemini/settings.json` (JSON with comments). The server is `mcpServers.hooks`:
//! `command` and `args`, or `httpUrl` (streamable HTTP), or `url` (SSE). A header's
//! `$HOOKS_MCP_TOKEN` is expanded from an environment Gemini CLI redacts of every variable named
//! like a secret, unless `security.environmentVariableRedaction.allowed` lists it: `init` lists
//! it there when it writes the header. The hooks are `hooks.<Event>` matcher groups for
//! `SessionStart`, `BeforeAgent`, `BeforeTool`, `AfterTool`, `AfterAgent` (the turn-end push)
//! and `SessionEnd`.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Client, Install, TOKEN, set_grouped_hooks, set_server, token_headers};
use crate::client::Transport;
use crate::doc::{FileChange, JsonDoc};

/// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
pub(super) fn dir() -> Result<PathBuf, String> {
    let root = match super::var(super::GEMINI_HOME_ENV) {
        Some(root) => root,
        None => super::home()?,
    };
    Ok(root.join(".gemini"))
}

/// The change to `settings.json`.
pub(super) fn plan(install: Option<&Install<'_>>) -> Result<Vec<FileChange>, String> {
    plan_in(&dir()?, install)
}

/// The change to `settings.json` in `dir` (Gemini CLI's `.gemini`).
fn plan_in(
    dir: &std::path::Path,
    install: Option<&Install<'_>>,
) -> Result<Vec<FileChange>, String> {
    let path = dir.join("settings.json");
    let doc = JsonDoc::load(&path)?;
    let mut after = doc.value.clone();
    let mut changes = Vec::new();
    let entry = install.map(|install| match install.url() {
        None => json!({ "command": install.front(), "args": [] }),
        Some(url) => {
            let key = if install.transport == Transport::Sse {
                "url"
            } else {
                "httpUrl"
            };
            let mut entry = json!({ key: url });
            if let Some(headers) = token_headers(install, &format!("${TOKEN}")) {
                entry["headers"] = headers;
            }
            entry
        }
    });
    let sends_token = |entry: Option<&Value>| {
        entry
            .and_then(|e| e.get("headers"))
            .and_then(|h| h.get("Authorization"))
            .and_then(Value::as_str)
            .is_some_and(|a| a.contains(TOKEN))
    };
    let had_token = sends_token(after.get("mcpServers").and_then(|s| s.get("hooks")));
    set_server(
        &mut after,
        "mcpServers",
        entry,
        &["env", "headers"],
        &mut changes,
        &path,
    )?;
    let has_token = sends_token(after.get("mcpServers").and_then(|s| s.get("hooks")));
    // `init` added the name unless the file listed it before `init` (its clean backup); with
    // no such backup, `init` created the file.
    let added = doc.prior.as_ref().is_none_or(|prior| !lists_token(prior));
    allow_token_variable(&mut after, has_token, had_token && added, &mut changes);
    let group = |event: &str| -> Value {
        let Some(install) = install else {
            return Value::Null;
        };
        let hook = json!({
            "type": "command",
            "command": install.hook_command(Client::Gemini, event),
            "name": "hooks-mcp",
        });
        if event.ends_with("Tool") {
            json!({ "matcher": "*", "hooks": [hook] })
        } else {
            json!({ "hooks": [hook] })
        }
    };
    set_grouped_hooks(
        &mut after,
        &path,
        Client::Gemini.hook_events(),
        install.map(|_| &group as &dyn Fn(&str) -> Value),
        &mut changes,
    )?;
    Ok(vec![doc.change(after, changes)])
}

/// Whether a settings document lists `HOOKS_MCP_TOKEN` in
/// `security.environmentVariableRedaction.allowed`.
fn lists_token(doc: &serde_json::Map<String, Value>) -> bool {
    doc.get("security")
        .and_then(|s| s.get("environmentVariableRedaction"))
        .and_then(|r| r.get("allowed"))
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == TOKEN))
}

/// Lists `HOOKS_MCP_TOKEN` in `security.environmentVariableRedaction.allowed` while the entry
/// sends it (`needed`), and takes it out again when an entry that sent it no longer does and
/// `init` added it (`was_needed`): a name the user listed stays.
fn allow_token_variable(
    doc: &mut serde_json::Map<String, Value>,
    needed: bool,
    was_needed: bool,
    changes: &mut Vec<String>,
) {
    const PATH: &str = "security.environmentVariableRedaction.allowed";
    let listed = lists_token(doc);
    if needed && !listed {
        let security = doc.entry("security").or_insert_with(|| json!({}));
        let Some(security) = security.as_object_mut() else {
            return;
        };
        let redaction = security
            .entry("environmentVariableRedaction")
            .or_insert_with(|| json!({}));
        let Some(redaction) = redaction.as_object_mut() else {
            return;
        };
        let allowed = redaction.entry("allowed").or_insert_with(|| json!([]));
        if let Some(allowed) = allowed.as_array_mut() {
            allowed.push(TOKEN.into());
            changes.push(format!("add {TOKEN} to {PATH}"));
        }
    } else if !needed && was_needed && listed {
        let Some(security) = doc.get_mut("security").and_then(Value::as_object_mut) else {
            return;
        };
        let Some(redaction) = security
            .get_mut("environmentVariableRedaction")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        if let Some(allowed) = redaction.get_mut("allowed").and_then(Value::as_array_mut) {
            allowed.retain(|v| v != TOKEN);
            changes.push(format!("remove {TOKEN} from {PATH}"));
            if allowed.is_empty() {
                redaction.shift_remove("allowed");
            }
        }
        if redaction.is_empty() {
            security.shift_remove("environmentVariableRedaction");
        }
        if security.is_empty() {
            doc.shift_remove("security");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;
    use crate::doc::write_all;

    fn run(dir: &Path, transport: Option<Transport>, token: bool, now: i64) {
        let (endpoint, bins) = crate::client::test_install_parts();
        let install = transport.map(|transport| Install {
            transport,
            endpoint: &endpoint,
            bins: &bins,
            token,
        });
        let plan = plan_in(dir, install.as_ref()).unwrap();
        let changed: Vec<&FileChange> = plan.iter().filter(|c| !c.is_unchanged()).collect();
        write_all(&changed, now).unwrap();
    }

    #[test]
    fn remove_keeps_the_token_allowance_the_user_listed() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".gemini");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("settings.json");
        let original = "{\n  \"theme\": \"Dracula\",\n  \"security\": {\"environmentVariableRedaction\": {\"allowed\": [\"HOOKS_MCP_TOKEN\"]}}\n}\n";
        std::fs::write(&path, original).unwrap();
        run(&dir, Some(Transport::StreamableHttp), true, 1);
        assert!(std::fs::read_to_string(&path).unwrap().contains("httpUrl"));
        // Back to stdio: the entry no longer sends the token, the user's allowance stays.
        run(&dir, Some(Transport::Stdio), true, 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\"allowed\": [\"HOOKS_MCP_TOKEN\"]"),
            "{text}"
        );
        run(&dir, Some(Transport::StreamableHttp), true, 3);
        run(&dir, None, true, 4);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);

        // The name `init` added is taken out again: a file `init` created is deleted.
        let other = tempfile::tempdir().unwrap();
        let dir = other.path().join(".gemini");
        run(&dir, Some(Transport::StreamableHttp), true, 1);
        let text = std::fs::read_to_string(dir.join("settings.json")).unwrap();
        assert!(text.contains("HOOKS_MCP_TOKEN\"]"), "{text}");
        run(&dir, None, true, 2);
        assert!(!dir.join("settings.json").exists());
    }

    #[test]
    fn init_keeps_the_users_own_keys_on_its_entry_and_hooks() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".gemini");
        run(&dir, Some(Transport::Stdio), false, 1);
        let path = dir.join("settings.json");
        let mut doc = crate::doc::parse_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        doc["mcpServers"]["hooks"]["trust"] = true.into();
        doc["mcpServers"]["hooks"]["timeout"] = 30000.into();
        doc["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] = 5000.into();
        let edited = serde_json::to_string_pretty(&doc).unwrap();
        std::fs::write(&path, &edited).unwrap();
        run(&dir, Some(Transport::Stdio), false, 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
        // A moved binary is replaced; the user's keys stay.
        std::fs::write(&path, edited.replace("/opt/bin/", "/old/bin/")).unwrap();
        run(&dir, Some(Transport::Stdio), false, 3);
        let now = crate::doc::parse_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(now["mcpServers"]["hooks"]["command"], "/opt/bin/hooks-mcp");
        assert_eq!(now["mcpServers"]["hooks"]["trust"], true);
        assert_eq!(now["mcpServers"]["hooks"]["timeout"], 30000);
        let groups = now["hooks"]["BeforeTool"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{now}");
        assert_eq!(groups[0]["hooks"][0]["timeout"], 5000);
        assert!(
            groups[0]["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .starts_with("/opt/bin/")
        );
    }
}
