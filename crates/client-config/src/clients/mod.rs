//! The clients beside Claude Code: where each keeps its files, whether it is on this machine,
//! and the changes that register hooks-mcp's server and hooks in them (or take them out).
//! Claude Code's own registration lives in [`crate::init`]; every client's plan is a list of
//! [`FileChange`]s that `init` writes and `status` compares (a registration that matches this
//! installation plans no change).
//!
//! | client | server | hooks |
//! |---|---|---|
//! | Codex | `config.toml` `[mcp_servers.hooks]` | `hooks.json`, trusted in `config.toml` `[hooks.state]` |
//! | Gemini CLI | `settings.json` `mcpServers.hooks` | `settings.json` `hooks` |
//! | Copilot CLI | `mcp-config.json` `mcpServers.hooks` | `hooks/hooks-mcp.json` (hooks-mcp's own file) |
//! | Cursor | `mcp.json` `mcpServers.hooks` | `hooks.json` |
//! | VS Code | `mcp.json` `servers.hooks` | Claude Code's `settings.json`, which VS Code's agent reads |

pub(crate) mod claude;
mod codex;
mod copilot;
mod cursor;
mod gemini;
mod vscode;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

pub use hook_dispatch::clients::Client;

use crate::client::{self, Binaries, Endpoint, SERVER_NAME, TOKEN_ENV, Transport};
use crate::doc::FileChange;
use protocol_lite::setting::Setting;

/// Overrides Codex's directory (default `~/.codex`), as Codex reads it.
pub const CODEX_HOME_ENV: &str = "CODEX_HOME";
/// Overrides the directory holding Gemini CLI's `.gemini` (default the home directory), as
/// Gemini CLI reads it.
pub const GEMINI_HOME_ENV: &str = "GEMINI_CLI_HOME";
/// Overrides Copilot CLI's directory (default `~/.copilot`), as Copilot CLI reads it.
pub const COPILOT_HOME_ENV: &str = "COPILOT_HOME";
/// Overrides VS Code's user settings directory, where its `mcp.json` is.
pub const VSCODE_USER_DIR_ENV: &str = "HOOKS_MCP_VSCODE_USER_DIR";

/// Where `init` and `status` find each client's files (docs/configuration.md).
pub const SETTINGS: &[Setting] = &[
    Setting {
        env: "CLAUDE_CONFIG_DIR",
        flag: "",
        default: "`~/.claude` and `~/.claude.json`",
        effect: "Claude Code's directory (`.claude.json` and `settings.json` in it), as Claude \
                 Code reads it.",
    },
    Setting {
        env: CODEX_HOME_ENV,
        flag: "",
        default: "`~/.codex`",
        effect: "Codex's directory (`config.toml`, `hooks.json`), as Codex reads it.",
    },
    Setting {
        env: GEMINI_HOME_ENV,
        flag: "",
        default: "the home directory",
        effect: "The directory holding Gemini CLI's `.gemini/settings.json`, as Gemini CLI reads \
                 it.",
    },
    Setting {
        env: COPILOT_HOME_ENV,
        flag: "",
        default: "`~/.copilot`",
        effect: "Copilot CLI's directory (`mcp-config.json`, `hooks/`), as Copilot CLI reads it.",
    },
    Setting {
        env: VSCODE_USER_DIR_ENV,
        flag: "",
        default: "`~/.config/Code/User` (`~/Library/Application Support/Code/User` on macOS)",
        effect: "VS Code's user settings directory, where `init` registers the server in \
                 `mcp.json`.",
    },
];

/// What `init` registers: the server's transport and where the daemon listens, the binaries,
/// and whether the daemon's token is set (it is then referenced, never written).
#[derive(Debug, Clone)]
pub struct Install<'a> {
    /// The transport the client reaches the server over.
    pub transport: Transport,
    /// Where the daemon listens (network transports).
    pub endpoint: &'a Endpoint,
    /// The binaries registered.
    pub bins: &'a Binaries,
    /// Whether `HOOKS_MCP_TOKEN` is set: network entries then send it, by reference.
    pub token: bool,
}

impl Install<'_> {
    /// The URL a network transport registers, `None` for stdio.
    pub fn url(&self) -> Option<String> {
        self.endpoint.url(self.transport)
    }

    /// The front end's path, as registered.
    pub fn front(&self) -> String {
        self.bins.front.to_string_lossy().into_owned()
    }

    /// The hook command for the client's `event`.
    pub fn hook_command(&self, client: Client, event: &str) -> String {
        client::client_hook_command(&self.bins.hook, client.name(), event)
    }
}

/// A variable from the environment, blank counted as unset.
pub(crate) fn var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$HOME`.
pub(crate) fn home() -> Result<PathBuf, String> {
    var("HOME").ok_or_else(|| "HOME is not set: cannot find the clients' configuration".into())
}

/// The client's directory (where its configuration lives).
///
/// # Errors
/// A message when the home directory is unknown.
pub fn directory(client: Client) -> Result<PathBuf, String> {
    Ok(match client {
        Client::Claude => match var("CLAUDE_CONFIG_DIR") {
            Some(dir) => dir,
            None => home()?.join(".claude"),
        },
        Client::Codex => codex::dir()?,
        Client::Gemini => gemini::dir()?,
        Client::Copilot => copilot::dir()?,
        Client::Cursor => cursor::dir()?,
        Client::VsCode => vscode::dir()?,
    })
}

/// The commands a client is started with, looked for on `PATH`.
fn commands(client: Client) -> &'static [&'static str] {
    match client {
        Client::Claude => &["claude"],
        Client::Codex => &["codex"],
        Client::Gemini => &["gemini"],
        Client::Copilot => &["copilot"],
        Client::Cursor => &["cursor-agent", "cursor"],
        Client::VsCode => &["code", "code-insiders"],
    }
}

/// The client's command on `PATH`, if there is one.
pub fn binary(client: Client) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| commands(client).iter().map(move |c| dir.join(c)))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether the client is on this machine: its directory exists or its command is on `PATH`.
/// Claude Code counts by its `.claude.json`, which it writes at its first start: its
/// `~/.claude` directory may hold only the settings VS Code's hooks were registered in.
pub fn found(client: Client) -> bool {
    let on_disk = match client {
        // Not `~/.claude`: VS Code's agent hooks are written there.
        Client::Claude => crate::client::ClientFiles::from_env().is_ok_and(|f| f.servers.is_file()),
        other => directory(other).is_ok_and(|d| holds_files(&d, 3)),
    };
    on_disk || binary(client).is_some()
}

/// Whether `dir` holds a file (within `depth` levels) other than `init`'s own backups: a
/// directory left by `init --remove` with nothing but those is no sign of the client.
fn holds_files(dir: &std::path::Path, depth: usize) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        match entry.file_type() {
            Ok(t) if t.is_dir() => depth > 1 && holds_files(&entry.path(), depth - 1),
            Ok(_) => !crate::doc::is_backup_name(&name),
            Err(_) => true,
        }
    })
}

/// The changes that register hooks-mcp with `client` (`install`), or take it out (`None`).
/// Claude Code's are [`crate::init`]'s; VS Code's hooks are Claude Code's
/// (`with_claude_hooks`: plan them here too, when Claude Code is not planned beside it).
///
/// # Errors
/// A message saying what is wrong (a file that cannot be read or edited, a transport the
/// client lacks); nothing is written then.
pub fn plan(
    client: Client,
    install: Option<&Install<'_>>,
    with_claude_hooks: bool,
) -> Result<Vec<FileChange>, String> {
    match client {
        Client::Claude => Ok(Vec::new()),
        Client::Codex => codex::plan(install),
        Client::Gemini => gemini::plan(install),
        Client::Copilot => copilot::plan(install),
        Client::Cursor => cursor::plan(install),
        Client::VsCode => vscode::plan(install, with_claude_hooks),
    }
}

/// Whether a hook object runs hooks-mcp's hook (`command`, or Copilot CLI's `bash`).
pub(crate) fn is_ours(hook: &Value) -> bool {
    ["command", "bash"]
        .iter()
        .filter_map(|k| hook.get(*k).and_then(Value::as_str))
        .any(|c| client::parse_any_hook_command(c).is_some())
}

/// The keys of a server entry that `init` writes (for one transport or another): any other key
/// on hooks-mcp's entry is the user's (Gemini CLI's `trust` or `timeout`, say) and stays.
const SERVER_KEYS: &[&str] = &["type", "command", "args", "url", "httpUrl", "serverUrl"];

/// The keys of a matcher group that `init` writes.
const GROUP_KEYS: &[&str] = &["matcher", "hooks"];

/// The keys of a hook object that `init` writes (any client's; `timeout` only on an HTTP
/// hook, where `new` has it): any other key on hooks-mcp's hook is the user's and stays.
const HOOK_KEYS: &[&str] = &[
    "type",
    "command",
    "bash",
    "url",
    "headers",
    "allowedEnvVars",
    "name",
];

/// `new` with the keys of `old` that `init` does not write (not in `owned`) kept, in `old`'s
/// order: what the user added to hooks-mcp's own entry stays. `new` as it is when either is
/// not an object.
pub(crate) fn with_user_keys(old: &Value, new: &Value, owned: &[&str]) -> Value {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        return new.clone();
    };
    let mut merged = old.clone();
    for (key, value) in new {
        merged.insert(key.clone(), value.clone());
    }
    for key in owned.iter().filter(|k| !new.contains_key(**k)) {
        merged.shift_remove(*key);
    }
    Value::Object(merged)
}

/// The hook object `new` with what the user added to `old` (hooks-mcp's hook, of the same
/// type) kept.
pub(crate) fn hook_with_user_keys(old: &Value, new: &Value) -> Value {
    let kind = |hook: &Value| {
        hook.get("type")
            .and_then(Value::as_str)
            .unwrap_or("command")
            .to_owned()
    };
    if kind(old) == kind(new) {
        with_user_keys(old, new, HOOK_KEYS)
    } else {
        new.clone()
    }
}

/// The matcher group `want` (one hook) with what the user added to `old`, the group holding
/// hooks-mcp's hook (`ours`) now, kept: keys on the hook, and on the group when it holds
/// nothing else.
pub(crate) fn group_with_user_keys(
    old: &Value,
    want: Value,
    ours: impl Fn(&Value) -> bool,
) -> Value {
    let hooks = old.get("hooks").and_then(Value::as_array);
    let Some(old_hook) = hooks.into_iter().flatten().find(|h| ours(h)) else {
        return want;
    };
    let mut want = want;
    if let Some(hook) = want
        .get_mut("hooks")
        .and_then(Value::as_array_mut)
        .and_then(|hooks| hooks.first_mut())
    {
        *hook = hook_with_user_keys(old_hook, hook);
    }
    if hooks.is_some_and(|h| h.len() == 1) {
        want = with_user_keys(old, &want, GROUP_KEYS);
    }
    want
}

/// Sets or removes the `hooks` server entry of `doc[container]`, keeping what an operator
/// added to an entry of the same kind: the `keep` keys (e.g. `env` or `headers`) when they
/// hold something, and every key `init` does not write.
pub(crate) fn set_server(
    doc: &mut Map<String, Value>,
    container: &str,
    desired: Option<Value>,
    keep: &[&str],
    changes: &mut Vec<String>,
    file: &Path,
) -> Result<(), String> {
    let key = format!("{container}.{SERVER_NAME}");
    match desired {
        Some(mut entry) => {
            let servers = doc
                .entry(container)
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .ok_or_else(|| not_object(file, container))?;
            if let Some(old) = servers.get(SERVER_NAME) {
                let same_kind = old.get("command").is_some() == entry.get("command").is_some();
                if same_kind {
                    for k in keep {
                        if let Some(kept) = old
                            .get(*k)
                            .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            entry[*k] = kept.clone();
                        }
                    }
                    entry = with_user_keys(old, &entry, SERVER_KEYS);
                }
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
            let emptied = match doc.get_mut(container).and_then(Value::as_object_mut) {
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
                doc.shift_remove(container);
            }
        }
    }
    Ok(())
}

/// A network entry's `headers` sending the daemon's token by reference (`reference`, e.g.
/// `$HOOKS_MCP_TOKEN`), or `None` without a token.
pub(crate) fn token_headers(install: &Install<'_>, reference: &str) -> Option<Value> {
    install
        .token
        .then(|| json!({ "Authorization": format!("Bearer {reference}") }))
}

/// The variable holding the daemon's token.
pub(crate) const TOKEN: &str = TOKEN_ENV;

fn not_object(file: &Path, key: &str) -> String {
    format!(
        "{}: `{key}` is not an object; fix it, then run again (nothing was changed)",
        file.display()
    )
}

fn not_array(file: &Path, key: &str) -> String {
    format!(
        "{}: `{key}` is not an array; fix it, then run again (nothing was changed)",
        file.display()
    )
}

/// Makes hooks-mcp's hooks in `doc["hooks"]` (event name → matcher groups
/// `{"matcher"?, "hooks": [...]}`, Claude Code's shape, which Codex and Gemini CLI share) one
/// group per event, `desired(event)`; `None` removes hooks-mcp's hooks (and the containers
/// they leave empty). Other hooks keep their place.
pub(crate) fn set_grouped_hooks(
    doc: &mut Map<String, Value>,
    file: &Path,
    events: &[&str],
    desired: Option<&dyn Fn(&str) -> Value>,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let group_hooks = |group: &Value| -> bool {
        group
            .get("hooks")
            .and_then(Value::as_array)
            .is_some_and(|hooks| hooks.iter().any(is_ours))
    };
    if let Some(desired) = desired {
        let hooks = doc
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(|| not_object(file, "hooks"))?;
        for event in events {
            let groups = hooks
                .entry(*event)
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .ok_or_else(|| not_array(file, &format!("hooks.{event}")))?;
            let holding: Vec<usize> = (0..groups.len())
                .filter(|i| group_hooks(&groups[*i]))
                .collect();
            let want = match holding.as_slice() {
                [one] => group_with_user_keys(&groups[*one], desired(event), is_ours),
                _ => desired(event),
            };
            if holding.len() == 1 && groups[holding[0]] == want {
                continue;
            }
            remove_grouped(groups, event, changes);
            changes.push(format!("add hooks.{event}: {want}"));
            groups.push(want);
        }
    } else if let Some(hooks) = doc.get_mut("hooks") {
        let hooks = hooks
            .as_object_mut()
            .ok_or_else(|| not_object(file, "hooks"))?;
        let mut emptied_any = false;
        for event in events {
            let Some(groups) = hooks.get_mut(*event) else {
                continue;
            };
            let groups = groups
                .as_array_mut()
                .ok_or_else(|| not_array(file, &format!("hooks.{event}")))?;
            if remove_grouped(groups, event, changes) && groups.is_empty() {
                hooks.shift_remove(*event);
                emptied_any = true;
            }
        }
        if emptied_any && hooks.is_empty() {
            doc.shift_remove("hooks");
        }
    }
    Ok(())
}

/// Removes hooks-mcp's hook objects from an event's groups, and the groups they leave empty.
fn remove_grouped(groups: &mut Vec<Value>, event: &str, changes: &mut Vec<String>) -> bool {
    let mut removed = false;
    groups.retain_mut(|group| {
        let Some(hooks) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = hooks.len();
        hooks.retain(|h| {
            let ours = is_ours(h);
            if ours {
                changes.push(format!("remove hooks.{event}: {}", describe_hook(h)));
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

/// A hook object for people: its command.
fn describe_hook(hook: &Value) -> String {
    ["command", "bash", "url"]
        .iter()
        .find_map(|k| hook.get(*k).and_then(Value::as_str))
        .unwrap_or("")
        .to_owned()
}

/// Makes hooks-mcp's hooks in `doc["hooks"]` (event name → hook objects, Cursor's flat
/// shape) one per event, `desired(event)`; `None` removes them.
pub(crate) fn set_flat_hooks(
    doc: &mut Map<String, Value>,
    file: &Path,
    events: &[&str],
    desired: Option<&dyn Fn(&str) -> Value>,
    changes: &mut Vec<String>,
) -> Result<(), String> {
    let present = doc.contains_key("hooks");
    if desired.is_none() && !present {
        return Ok(());
    }
    let hooks = doc
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| not_object(file, "hooks"))?;
    let mut emptied_any = false;
    for event in events {
        let entries = hooks
            .entry(*event)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| not_array(file, &format!("hooks.{event}")))?;
        let ours: Vec<usize> = (0..entries.len())
            .filter(|i| is_ours(&entries[*i]))
            .collect();
        let want = desired.map(|d| match ours.as_slice() {
            [one] => hook_with_user_keys(&entries[*one], &d(event)),
            _ => d(event),
        });
        if let Some(want) = &want
            && ours.len() == 1
            && entries[ours[0]] == *want
        {
            continue;
        }
        let had = entries.len();
        entries.retain(|h| {
            let ours = is_ours(h);
            if ours {
                changes.push(format!("remove hooks.{event}: {}", describe_hook(h)));
            }
            !ours
        });
        match want {
            Some(want) => {
                changes.push(format!("add hooks.{event}: {want}"));
                entries.push(want);
            }
            None if entries.is_empty() => {
                if had > 0 {
                    emptied_any = true;
                }
                hooks.shift_remove(*event);
            }
            None => {}
        }
    }
    if desired.is_none() && hooks.is_empty() && (emptied_any || !present) {
        doc.shift_remove("hooks");
    }
    Ok(())
}
