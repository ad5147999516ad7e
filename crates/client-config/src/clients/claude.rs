//! Claude Code (the hook dispatcher's native client): `mcpServers.hooks` in `~/.claude.json`
//! and the hooks in `~/.claude/settings.json` (docs/hooks.md, "Registration"), command hooks
//! or HTTP hooks posting to the daemon. VS Code's agent reads the same settings.

use std::path::Path;

use hook_dispatch::Event;
use serde_json::{Map, Value, json};

use crate::client::{self, Binaries, ClientFiles, Endpoint, HookKind, SERVER_NAME, Transport};
use crate::doc::{FileChange, JsonDoc};

/// Claude Code's two files: `mcpServers.hooks` in `~/.claude.json` and the hooks in
/// `~/.claude/settings.json`.
pub(crate) fn plan(
    install: Option<&(Transport, Endpoint)>,
    hooks: Option<&HookKind>,
    bins: &Binaries,
) -> Result<Vec<FileChange>, String> {
    let files = ClientFiles::from_env()?;
    Ok(vec![
        plan_servers(&files.servers, install, bins)?,
        plan_settings(&files.settings, hooks, bins)?,
    ])
}

/// The change to Claude Code's `settings.json` alone (the hooks VS Code's agent runs too).
///
/// # Errors
/// A message when the file cannot be read or changed.
pub(crate) fn settings_plan(
    hooks: Option<&HookKind>,
    bins: &Binaries,
) -> Result<FileChange, String> {
    plan_settings(&ClientFiles::from_env()?.settings, hooks, bins)
}

/// The change to the file holding `mcpServers`.
fn plan_servers(
    path: &Path,
    install: Option<&(Transport, Endpoint)>,
    bins: &Binaries,
) -> Result<FileChange, String> {
    let doc = JsonDoc::load(path)?;
    let mut after = doc.value.clone();
    let mut changes = Vec::new();
    let key = format!("mcpServers.{SERVER_NAME}");
    match install {
        Some((transport, endpoint)) => {
            let servers = after
                .entry("mcpServers")
                .or_insert_with(|| Value::Object(Map::new()));
            let servers = servers.as_object_mut().ok_or_else(|| {
                format!(
                    "{}: `mcpServers` is not an object; fix it, then run again (nothing was \
                     changed)",
                    path.display()
                )
            })?;
            let mut entry = client::server_entry(*transport, bins, endpoint);
            if let Some(old) = servers.get(SERVER_NAME) {
                keep_customisations(old, &mut entry, *transport);
            }
            match servers.get(SERVER_NAME) {
                Some(old) if *old == entry => {}
                Some(old) => {
                    changes.push(format!("replace {key}: {old} -> {entry}"));
                    servers.insert(SERVER_NAME.into(), entry);
                }
                None => {
                    changes.push(format!("add {key} = {entry}"));
                    servers.insert(SERVER_NAME.into(), entry);
                }
            }
        }
        None => {
            let emptied = match after.get_mut("mcpServers").and_then(Value::as_object_mut) {
                Some(servers) => match servers.shift_remove(SERVER_NAME) {
                    Some(old) => {
                        changes.push(format!("remove {key} (was {old})"));
                        servers.is_empty()
                    }
                    None => false,
                },
                None => false,
            };
            if emptied {
                after.shift_remove("mcpServers");
            }
        }
    }
    Ok(doc.change(after, changes))
}

/// Keeps what an operator added to an existing entry of the same transport: the server's
/// environment (stdio: filters such as `MCP_CATEGORIES`) or request headers (network), and
/// every key `init` does not write.
fn keep_customisations(old: &Value, entry: &mut Value, transport: Transport) {
    if Transport::of_entry(old) != Some(transport) {
        return;
    }
    *entry = super::with_user_keys(old, entry, &["type", "command", "args", "url"]);
    let key = if transport == Transport::Stdio {
        "env"
    } else {
        "headers"
    };
    if let Some(kept) = old
        .get(key)
        .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
    {
        entry[key] = kept.clone();
    }
}

/// The change to the file holding `hooks` (`install`: the kind of hooks to register; `None`
/// removes hooks-mcp's hooks of either kind).
fn plan_settings(
    path: &Path,
    install: Option<&HookKind>,
    bins: &Binaries,
) -> Result<FileChange, String> {
    let doc = JsonDoc::load(path)?;
    let mut after = doc.value.clone();
    let mut changes = Vec::new();
    let not_object = || {
        format!(
            "{}: `hooks` is not an object; fix it, then run again (nothing was changed)",
            path.display()
        )
    };
    if let Some(kind) = install {
        let hooks = after
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(not_object)?;
        for event in Event::ALL {
            let groups = hooks
                .entry(event.name())
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .ok_or_else(|| not_array(path, event))?;
            let holding: Vec<usize> = (0..groups.len())
                .filter(|i| group_hooks(&groups[*i]).iter().any(client::is_our_hook))
                .collect();
            let desired = client::hook_group(kind, &bins.hook, event);
            let desired = match holding.as_slice() {
                [one] => super::group_with_user_keys(&groups[*one], desired, client::is_our_hook),
                _ => desired,
            };
            if holding.len() == 1 && groups[holding[0]] == desired {
                continue;
            }
            remove_ours(groups, event, &mut changes);
            changes.push(format!("add hooks.{event}: {desired}"));
            groups.push(desired);
        }
    } else if let Some(hooks) = after.get_mut("hooks") {
        let hooks = hooks.as_object_mut().ok_or_else(not_object)?;
        let mut emptied_any = false;
        for event in Event::ALL {
            let Some(groups) = hooks.get_mut(event.name()) else {
                continue;
            };
            let groups = groups
                .as_array_mut()
                .ok_or_else(|| not_array(path, event))?;
            let removed = remove_ours(groups, event, &mut changes);
            if removed && groups.is_empty() {
                hooks.shift_remove(event.name());
                emptied_any = true;
            }
        }
        if emptied_any && hooks.is_empty() {
            after.shift_remove("hooks");
        }
    }
    Ok(doc.change(after, changes))
}

fn not_array(path: &Path, event: Event) -> String {
    format!(
        "{}: `hooks.{event}` is not an array; fix it, then run again (nothing was changed)",
        path.display()
    )
}

/// The hook objects of a matcher group.
fn group_hooks(group: &Value) -> &[Value] {
    group
        .get("hooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Removes hooks-mcp's hook objects from an event's groups, and the groups they leave empty.
/// Returns whether anything was removed.
fn remove_ours(groups: &mut Vec<Value>, event: Event, changes: &mut Vec<String>) -> bool {
    let mut removed = false;
    groups.retain_mut(|group| {
        let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = hooks.len();
        hooks.retain(|h| {
            let ours = client::is_our_hook(h);
            if ours {
                let what = h
                    .get("command")
                    .or_else(|| h.get("url"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                changes.push(format!("remove hooks.{event}: {what}"));
            }
            !ours
        });
        if hooks.len() == before {
            return true;
        }
        removed = true;
        !hooks.is_empty()
    });
    removed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn init_keeps_a_timeout_the_user_put_on_its_hook_and_entry() {
        let home = tempfile::tempdir().unwrap();
        let settings = home.path().join("settings.json");
        let servers = home.path().join(".claude.json");
        let (endpoint, bins) = crate::client::test_install_parts();
        let install = (Transport::Stdio, endpoint);
        let plan = [
            plan_settings(&settings, Some(&HookKind::Command), &bins).unwrap(),
            plan_servers(&servers, Some(&install), &bins).unwrap(),
        ];
        crate::doc::write_all(&plan.iter().collect::<Vec<_>>(), 1).unwrap();
        let read =
            |path: &Path| crate::doc::parse_json(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut doc = read(&settings);
        doc["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] = 30.into();
        std::fs::write(&settings, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let mut doc = read(&servers);
        doc["mcpServers"]["hooks"]["timeout"] = 9000.into();
        std::fs::write(&servers, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
        let again = plan_settings(&settings, Some(&HookKind::Command), &bins).unwrap();
        assert!(again.is_unchanged(), "{:?}", again.changes);
        let again = plan_servers(&servers, Some(&install), &bins).unwrap();
        assert!(again.is_unchanged(), "{:?}", again.changes);
    }
}
