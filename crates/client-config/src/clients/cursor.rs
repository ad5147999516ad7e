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
    plan_in(&dir()?, install)
}

/// The changes to `mcp.json` and `hooks.json` in `dir` (Cursor's `.cursor`).
fn plan_in(
    dir: &std::path::Path,
    install: Option<&Install<'_>>,
) -> Result<Vec<FileChange>, String> {
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
    // `init` added `"version": 1` when the file before `init` (its clean backup) had none, or
    // when `init` created the file (no such backup) and nothing of the user's is left.
    let added_version = match &hooks.prior {
        Some(prior) => !prior.contains_key("version"),
        None => after.len() == 1,
    };
    if install.is_none()
        && !changes.is_empty()
        && added_version
        && after.get("version") == Some(&json!(1))
    {
        after.shift_remove("version");
        changes.push("remove version = 1".into());
    }
    Ok(vec![server, hooks.change(after, changes)])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;
    use crate::client::Transport;
    use crate::doc::write_all;

    fn run(dir: &Path, install: bool, now: i64) {
        let (endpoint, bins) = crate::client::test_install_parts();
        let install = install.then_some(Install {
            transport: Transport::Stdio,
            endpoint: &endpoint,
            bins: &bins,
            token: false,
        });
        let plan = plan_in(dir, install.as_ref()).unwrap();
        let changed: Vec<&FileChange> = plan.iter().filter(|c| !c.is_unchanged()).collect();
        write_all(&changed, now).unwrap();
    }

    #[test]
    fn remove_keeps_the_users_version_and_hooks_file() {
        for original in [
            "{\n  \"version\": 1,\n  \"hooks\": {}\n}\n",
            "{\n  \"version\": 1\n}\n",
        ] {
            let home = tempfile::tempdir().unwrap();
            let dir = home.path().join(".cursor");
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("hooks.json");
            std::fs::write(&path, original).unwrap();
            run(&dir, true, 1);
            assert!(
                std::fs::read_to_string(&path)
                    .unwrap()
                    .contains("hooks-mcp-hook")
            );
            run(&dir, false, 2);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        }
        // A file of the user's without a version gets one from `init`, which takes it out again.
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".cursor");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hooks.json");
        let original = "{\n  \"hooks\": {\"stop\": [{\"command\": \"/opt/mine.sh\"}]}\n}\n";
        std::fs::write(&path, original).unwrap();
        run(&dir, true, 1);
        run(&dir, false, 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        // A file `init` created is deleted again.
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".cursor");
        run(&dir, true, 1);
        assert!(dir.join("hooks.json").exists());
        run(&dir, false, 2);
        assert!(!dir.join("hooks.json").exists());
    }
}
