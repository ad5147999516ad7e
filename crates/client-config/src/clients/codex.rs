//! Codex (verified against codex-cli 0.171.0, the npm package's binary): the server as
//! `[mcp_servers.hooks]` in `config.toml` (`command` and `args`, or `url` with
//! `bearer_token_env_var`; Codex has no SSE transport), the hooks in `hooks.json` (Claude Code's
//! matcher groups, `SessionStart` to `SessionEnd`), and each of them trusted in `config.toml`:
//! Codex runs a user hook only once
//! `[hooks.state."<hooks.json>:<event>:<group>:<handler>"]` holds its `trusted_hash`, which
//! `init` writes as Codex computes it (running `init` is the operator's consent, as choosing
//! "trust" in Codex's `/hooks` would be).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toml_edit::{Array, DocumentMut, Item, Table};

use super::{Client, Install, TOKEN, set_grouped_hooks};
use crate::client::{SERVER_NAME, Transport};
use crate::doc::{FileChange, JsonDoc, TomlDoc};

/// The events registered, as Codex names them (Claude Code's): the four of a turn, then `Stop`
/// (the turn-end push) and `SessionEnd` (the session recorded as ended).
fn events() -> &'static [&'static str] {
    Client::Codex.hook_events()
}
/// The time limit Codex gives a hook without one, in seconds (part of its trust hash).
const DEFAULT_TIMEOUT_S: u64 = 600;
/// The time limit Codex gives a `SessionEnd` hook without one (its
/// `SESSION_END_DEFAULT_TIMEOUT_SEC`, which `codex app-server`'s `hooks/list` reports).
const SESSION_END_DEFAULT_TIMEOUT_S: u64 = 1;

/// `$CODEX_HOME` as Codex resolves it (its canonical path), else `~/.codex` (as it is).
pub(super) fn dir() -> Result<PathBuf, String> {
    match super::var(super::CODEX_HOME_ENV) {
        Some(dir) => Ok(canonical_home(dir)),
        None => Ok(super::home()?.join(".codex")),
    }
}

/// `CODEX_HOME` as Codex reads it: through its symbolic links, made absolute. Codex keys each
/// hook's trust by this path (`<canonical>/hooks.json:…`): a trust entry written under the
/// path as given would not be Codex's, and Codex would not run the hook.
fn canonical_home(dir: PathBuf) -> PathBuf {
    std::fs::canonicalize(&dir)
        .or_else(|_| std::path::absolute(&dir))
        .unwrap_or(dir)
}

/// The changes to `config.toml` and `hooks.json`.
///
/// Codex has no SSE transport: under `sse` it is registered with the same daemon's
/// streamable-HTTP URL (`/mcp`), which every daemon serves beside `/sse`.
pub(super) fn plan(install: Option<&Install<'_>>) -> Result<Vec<FileChange>, String> {
    let streamable;
    let install = match install {
        Some(sse) if sse.transport == Transport::Sse => {
            streamable = Install {
                transport: Transport::StreamableHttp,
                ..sse.clone()
            };
            Some(&streamable)
        }
        other => other,
    };
    plan_in(&dir()?, install)
}

/// The changes to `config.toml` and `hooks.json` in `dir` (Codex's home).
fn plan_in(dir: &Path, install: Option<&Install<'_>>) -> Result<Vec<FileChange>, String> {
    let hooks_path = dir.join("hooks.json");
    let hooks = JsonDoc::load(&hooks_path)?;
    let mut hooks_after = hooks.value.clone();
    let mut hook_changes = Vec::new();
    let group = |event: &str| -> Value {
        let Some(install) = install else {
            return Value::Null;
        };
        let hook =
            json!({ "type": "command", "command": install.hook_command(Client::Codex, event) });
        if event.ends_with("ToolUse") {
            json!({ "matcher": "*", "hooks": [hook] })
        } else {
            json!({ "hooks": [hook] })
        }
    };
    set_grouped_hooks(
        &mut hooks_after,
        &hooks_path,
        events(),
        install.map(|_| &group as &dyn Fn(&str) -> Value),
        &mut hook_changes,
    )?;

    let mut config = TomlDoc::load(&dir.join("config.toml"))?;
    let mut config_changes = Vec::new();
    set_server(&mut config.doc, install, &mut config_changes, &config.path)?;
    let source = hooks_path.to_string_lossy().into_owned();
    let wanted = if install.is_some() {
        trust_entries(&source, &hooks_after)
    } else {
        Vec::new()
    };
    let ours: BTreeSet<String> = trust_entries(&source, &hooks.value)
        .into_iter()
        .chain(trust_entries(&source, &hooks_after))
        .map(|(_, hash)| hash)
        .collect();
    set_trust(
        &mut config.doc,
        &source,
        &wanted,
        &ours,
        &mut config_changes,
        &config.path,
    )?;
    Ok(vec![
        config.change(config_changes),
        hooks.change(hooks_after, hook_changes),
    ])
}

/// Codex's snake_case name of an event (its trust keys and hashes use it).
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The trust hash Codex computes for one command hook: sha256 of its normalized identity
/// (event, matcher, the one handler with its time limit), serialized through TOML (absent
/// fields dropped) as JSON with sorted keys and no spaces.
pub(crate) fn trust_hash(
    event: &str,
    matcher: Option<&str>,
    command: &str,
    timeout: u64,
) -> String {
    // Keys in sorted order (serde_json keeps insertion order here).
    let mut hook = Map::new();
    hook.insert("async".into(), false.into());
    hook.insert("command".into(), command.into());
    hook.insert("timeout".into(), timeout.into());
    hook.insert("type".into(), "command".into());
    let mut identity = Map::new();
    identity.insert("event_name".into(), snake(event).into());
    identity.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
    if let Some(matcher) = matcher {
        identity.insert("matcher".into(), matcher.into());
    }
    let digest = Sha256::digest(Value::Object(identity).to_string().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The trust entries (key, hash) of hooks-mcp's hooks in a `hooks.json` document whose path
/// is `source`.
pub(crate) fn trust_entries(source: &str, doc: &Map<String, Value>) -> Vec<(String, String)> {
    let mut entries = Vec::new();
    for event in events().iter().copied() {
        let groups = doc
            .get("hooks")
            .and_then(|h| h.get(event))
            .and_then(Value::as_array);
        for (g, group) in groups.into_iter().flatten().enumerate() {
            // Codex reads no matcher for UserPromptSubmit and Stop (nor hashes one).
            let matcher = !matches!(event, "UserPromptSubmit" | "Stop");
            let matcher = matcher
                .then(|| group.get("matcher").and_then(Value::as_str))
                .flatten();
            let default_timeout = if event == "SessionEnd" {
                SESSION_END_DEFAULT_TIMEOUT_S
            } else {
                DEFAULT_TIMEOUT_S
            };
            let hooks = group.get("hooks").and_then(Value::as_array);
            for (h, hook) in hooks.into_iter().flatten().enumerate() {
                let Some(command) = hook.get("command").and_then(Value::as_str) else {
                    continue;
                };
                if !super::is_ours(hook) {
                    continue;
                }
                let timeout = hook
                    .get("timeout")
                    .and_then(Value::as_u64)
                    .unwrap_or(default_timeout)
                    .max(1);
                entries.push((
                    format!("{source}:{}:{g}:{h}", snake(event)),
                    trust_hash(event, matcher, command, timeout),
                ));
            }
        }
    }
    entries
}

/// A TOML item as JSON, for comparing tables with the entry `init` writes.
fn item_json(item: &Item) -> Value {
    match item {
        Item::Value(value) => value_json(value),
        Item::Table(table) => Value::Object(
            table
                .iter()
                .map(|(k, v)| (k.to_owned(), item_json(v)))
                .collect(),
        ),
        Item::ArrayOfTables(tables) => Value::Array(
            tables
                .iter()
                .map(|t| item_json(&Item::Table(t.clone())))
                .collect(),
        ),
        Item::None => Value::Null,
    }
}

fn value_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(s) => s.value().as_str().into(),
        toml_edit::Value::Integer(i) => (*i.value()).into(),
        toml_edit::Value::Float(f) => json!(*f.value()),
        toml_edit::Value::Boolean(b) => (*b.value()).into(),
        toml_edit::Value::Datetime(d) => d.value().to_string().into(),
        toml_edit::Value::Array(a) => Value::Array(a.iter().map(value_json).collect()),
        toml_edit::Value::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_owned(), value_json(v)))
                .collect(),
        ),
    }
}

/// The keys of `[mcp_servers.hooks]` that `init` writes (for one transport or another).
const SERVER_KEYS: &[&str] = &["command", "args", "url", "bearer_token_env_var"];

/// Sets or removes `[mcp_servers.hooks]`, keeping every key an operator added to an entry of
/// the same kind (`env`, `env_vars`, `cwd`, `http_headers`, `tool_timeout_sec`…).
fn set_server(
    doc: &mut DocumentMut,
    install: Option<&Install<'_>>,
    changes: &mut Vec<String>,
    file: &Path,
) -> Result<(), String> {
    let key = format!("mcp_servers.{SERVER_NAME}");
    let Some(install) = install else {
        let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) else {
            return Ok(());
        };
        if let Some(old) = servers.remove(SERVER_NAME) {
            changes.push(format!("remove {key} (was {})", item_json(&old)));
        }
        if servers.is_empty() && is_implicit_table(doc, &["mcp_servers"]) {
            doc.remove("mcp_servers");
        }
        return Ok(());
    };
    let mut entry = Table::new();
    let kind_keys: &[&str] = match install.url() {
        None => {
            entry.insert("command", toml_edit::value(install.front()));
            entry.insert("args", toml_edit::value(Array::new()));
            &["command"]
        }
        Some(url) => {
            entry.insert("url", toml_edit::value(url));
            if install.token {
                entry.insert("bearer_token_env_var", toml_edit::value(TOKEN));
            }
            &["url"]
        }
    };
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        // A table written inline (`mcp_servers = { ... }`) is one too: the entry goes in it,
        // inline.
        .as_table_like_mut()
        .ok_or_else(|| {
            format!(
                "{}: `mcp_servers` is not a table; fix it, then run again (nothing was changed)",
                file.display()
            )
        })?;
    let old = servers
        .get(SERVER_NAME)
        .filter(|item| item.is_table_like())
        .cloned();
    if let Some(old_table) = old.as_ref().and_then(Item::as_table_like)
        && kind_keys.iter().all(|k| old_table.contains_key(k))
    {
        // The entry as it is (its comments and key order too), with what `init` writes set and
        // the keys `init` wrote for another transport taken out: the user's own keys
        // (`tool_timeout_sec`, `startup_timeout_sec`, `env`…) stay.
        let mut merged = match old.as_ref() {
            Some(Item::Table(table)) => table.clone(),
            _ => {
                let mut copy = Table::new();
                for (k, v) in old_table.iter() {
                    copy.insert(k, v.clone());
                }
                copy
            }
        };
        for (k, v) in entry.iter() {
            merged.insert(k, v.clone());
        }
        for k in SERVER_KEYS.iter().filter(|k| !entry.contains_key(k)) {
            merged.remove(k);
        }
        entry = merged;
    }
    let wanted = item_json(&Item::Table(entry.clone()));
    match &old {
        Some(old) if item_json(old) == wanted => {}
        Some(old) => {
            changes.push(format!("replace {key}: {} -> {wanted}", item_json(old)));
            if let Some(position) = old.as_table().and_then(Table::position) {
                entry.set_position(Some(position));
            }
            servers.insert(SERVER_NAME, Item::Table(entry));
        }
        None => {
            changes.push(format!("add {key} = {wanted}"));
            servers.insert(SERVER_NAME, Item::Table(entry));
        }
    }
    Ok(())
}

/// Whether the table at `path` is absent or implicit (a header only its subtables make):
/// one `init` may remove once emptied. A table the user wrote (a `[section]` of its own or an
/// inline table) stays.
fn is_implicit_table(doc: &DocumentMut, path: &[&str]) -> bool {
    let mut item = doc.as_item();
    for key in path {
        match item.get(key) {
            Some(next) => item = next,
            None => return true,
        }
    }
    item.as_table().is_some_and(Table::is_implicit)
}

/// Makes the trust entries of hooks-mcp's hooks (those under `source` whose hash is one of
/// `ours`) exactly `wanted`.
fn set_trust(
    doc: &mut DocumentMut,
    source: &str,
    wanted: &[(String, String)],
    ours: &BTreeSet<String>,
    changes: &mut Vec<String>,
    file: &Path,
) -> Result<(), String> {
    let prefix = format!("{source}:");
    let stale: Vec<String> = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(Item::as_table_like)
        .map(|state| {
            state
                .iter()
                .filter(|(key, entry)| {
                    let hash = entry.get("trusted_hash").and_then(Item::as_str);
                    key.starts_with(&prefix)
                        && hash.is_some_and(|h| ours.contains(h))
                        && !wanted
                            .iter()
                            .any(|(k, h)| k == key && Some(h.as_str()) == hash)
                })
                .map(|(key, _)| key.to_owned())
                .collect()
        })
        .unwrap_or_default();
    let missing: Vec<&(String, String)> = wanted
        .iter()
        .filter(|(key, hash)| {
            doc.get("hooks")
                .and_then(|h| h.get("state"))
                .and_then(|s| s.get(key))
                .and_then(|e| e.get("trusted_hash"))
                .and_then(Item::as_str)
                != Some(hash.as_str())
        })
        .collect();
    if stale.is_empty() && missing.is_empty() {
        return Ok(());
    }
    let implicit = || {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    };
    let not_table = |what: &str| {
        format!(
            "{}: `{what}` is not a table; fix it, then run again (nothing was changed)",
            file.display()
        )
    };
    let hooks_implicit = is_implicit_table(doc, &["hooks"]);
    let state_implicit = is_implicit_table(doc, &["hooks", "state"]);
    // Tables written inline (`state = { ... }`) are tables too: entries go in them, inline.
    let hooks = doc
        .entry("hooks")
        .or_insert_with(implicit)
        .as_table_like_mut()
        .ok_or_else(|| not_table("hooks"))?;
    if hooks.get("state").is_none() {
        hooks.insert("state", implicit());
    }
    let state = hooks
        .get_mut("state")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| not_table("hooks.state"))?;
    for key in &stale {
        state.remove(key);
        changes.push(format!("remove hooks.state.\"{key}\""));
    }
    for (key, hash) in missing {
        // An entry's own table keeps its place and comments; one written inline is copied.
        let mut entry = match state.get(key) {
            Some(Item::Table(table)) => table.clone(),
            Some(item) => {
                let mut copy = Table::new();
                for (k, v) in item.as_table_like().into_iter().flat_map(|t| t.iter()) {
                    copy.insert(k, v.clone());
                }
                copy
            }
            None => Table::new(),
        };
        entry.insert("trusted_hash", toml_edit::value(hash.as_str()));
        state.insert(key, Item::Table(entry));
        changes.push(format!("trust hooks.state.\"{key}\" = {hash}"));
    }
    if state.is_empty() && state_implicit {
        hooks.remove("state");
    }
    if hooks.is_empty() && hooks_implicit {
        doc.remove("hooks");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn plan_here(dir: &Path) -> Vec<FileChange> {
        let (endpoint, bins) = crate::client::test_install_parts();
        let install = Install {
            transport: Transport::Stdio,
            endpoint: &endpoint,
            bins: &bins,
            token: false,
        };
        plan_in(dir, Some(&install)).unwrap()
    }

    #[test]
    fn codex_home_is_resolved_as_codex_resolves_it() {
        let home = tempfile::tempdir().unwrap();
        let real = home.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink("real", home.path().join("cx")).unwrap();
        let real = std::fs::canonicalize(&real).unwrap();
        assert_eq!(canonical_home(home.path().join("cx")), real);
        let relative = canonical_home(PathBuf::from("no-such-codex-home"));
        assert!(relative.is_absolute(), "{}", relative.display());
        assert!(relative.ends_with("no-such-codex-home"));
    }

    #[test]
    fn init_keeps_the_users_own_keys_on_the_server_entry() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".codex");
        let plan = plan_here(&dir);
        crate::doc::write_all(&plan.iter().collect::<Vec<_>>(), 1).unwrap();
        let path = dir.join("config.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replace(
            "args = []\n",
            "args = []\n# mine\ntool_timeout_sec = 120\nstartup_timeout_sec = 30\n",
        );
        assert_ne!(edited, text);
        std::fs::write(&path, &edited).unwrap();
        let again = plan_here(&dir);
        assert!(
            again.iter().all(FileChange::is_unchanged),
            "{:?}",
            again.iter().map(|c| &c.changes).collect::<Vec<_>>()
        );
        // A moved binary replaces the command, and keeps the user's keys and comment.
        let moved = edited.replace("/opt/bin/hooks-mcp\"", "/old/bin/hooks-mcp\"");
        std::fs::write(&path, &moved).unwrap();
        let plan = plan_here(&dir);
        let config = plan[0].after.as_deref().unwrap();
        assert!(
            config.contains("command = \"/opt/bin/hooks-mcp\""),
            "{config}"
        );
        assert!(
            config.contains("# mine\ntool_timeout_sec = 120\nstartup_timeout_sec = 30\n"),
            "{config}"
        );
    }

    #[test]
    fn trust_hashes_are_codexs() {
        // What `codex app-server`'s hooks/list answered (codex-cli 0.171.0) for these hooks.
        assert_eq!(
            trust_hash(
                "PreToolUse",
                Some("*"),
                "/usr/local/bin/hooks-mcp-hook hook PreToolUse",
                600
            ),
            "sha256:361d0228769d3ac994d628db5db82128d19a6a2e1c070915b6e32edebf81aeb7"
        );
        assert_eq!(
            trust_hash(
                "SessionStart",
                None,
                "/x/hooks-mcp-hook hook SessionStart",
                600
            ),
            "sha256:d4c75cbb6236ff82d9bd0207d3c311dfe7d5d7550663df919ab4672cbcd62576"
        );
        assert_eq!(snake("UserPromptSubmit"), "user_prompt_submit");
        // Hooks Codex ran as trusted (`Stop`), and the `currentHash` its `hooks/list`
        // reported for a `SessionEnd` hook (its default time limit is one second).
        assert_eq!(
            trust_hash("Stop", None, "/tmp/probe/log.sh codex Stop", 600),
            "sha256:e85f46d6ea71dac6c9cbf2be5b61daed4b88cefcb7056c24fe615e9d674e99f0"
        );
        assert_eq!(
            trust_hash("SessionEnd", None, "/tmp/probe/log.sh codex SessionEnd", 1),
            "sha256:fe9defafe75ff2c514cc995fb1d8b5c1a7ce9733842e169f138a2a55718f169e"
        );
        assert_eq!(snake("SessionEnd"), "session_end");
    }

    #[test]
    fn a_session_end_hook_is_hashed_with_codexs_one_second_limit() {
        let source = "/h/.codex/hooks.json";
        let command = "/x/hooks-mcp-hook hook --client codex SessionEnd";
        let doc = json!({"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": command}]}],
                                   "Stop": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "/x/hooks-mcp-hook hook --client codex Stop"}]}]}});
        let entries = trust_entries(source, doc.as_object().unwrap());
        assert_eq!(
            entries,
            vec![
                (
                    format!("{source}:stop:0:0"),
                    trust_hash(
                        "Stop",
                        None,
                        "/x/hooks-mcp-hook hook --client codex Stop",
                        600
                    )
                ),
                (
                    format!("{source}:session_end:0:0"),
                    trust_hash("SessionEnd", None, command, 1)
                ),
            ]
        );
    }
}
