//! `hooks-mcp init`: registers the MCP server and the hook commands in the client's
//! configuration, or removes them (`--remove`).
//!
//! Idempotent (a second run changes nothing and writes nothing), it backs up each file it
//! changes (`<file>.hooks-mcp-<unix ms>.bak`), writes through a temporary file and a rename, and
//! touches only hooks-mcp's own entries: `mcpServers.hooks` and the hook commands that run
//! `hooks-mcp`/`hooks-mcp-full hook …`. Everything else keeps its value and its place.

use std::path::{Path, PathBuf};

use hook_dispatch::Event;
use hook_dispatch::open;
use serde_json::{Map, Value, json};

use crate::ConfigError;
use crate::client::{self, Binaries, ClientFiles, Endpoint, HookKind, SERVER_NAME, Transport};

/// What `hooks-mcp init` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// The transport to register (default: `MCP_TRANSPORT`, else stdio). Network transports
    /// register the daemon's URL from `MCP_HOST` and `MCP_PORT`.
    pub transport: Option<Transport>,
    /// Register HTTP hooks posting to the daemon instead of command hooks.
    pub http_hooks: bool,
    /// The daemon's base URL for HTTP hooks (default: from `MCP_HOST` and `MCP_PORT`).
    pub url: Option<String>,
    /// Remove hooks-mcp's server entry and hooks instead.
    pub remove: bool,
    /// Report the changes without writing anything.
    pub dry_run: bool,
}

/// What to do to one file.
#[derive(Debug)]
struct Plan {
    /// The file.
    path: PathBuf,
    /// Whether it exists now.
    existed: bool,
    /// Its content after the change.
    after: Map<String, Value>,
    /// One line per change, for people.
    changes: Vec<String>,
}

/// Runs `init` in the client's files (found from the environment) for the binaries beside the
/// running executable, and returns the report for people.
///
/// # Errors
/// [`ConfigError`] saying what is wrong; nothing was written then.
pub fn run(args: &InitOptions) -> Result<String, ConfigError> {
    plan_and_apply(args).map_err(ConfigError)
}

fn plan_and_apply(args: &InitOptions) -> Result<String, String> {
    let files = ClientFiles::from_env()?;
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
    let servers = plan_servers(&files.servers, install.as_ref(), &bins)?;
    let settings = plan_settings(&files.settings, hooks.as_ref(), &bins)?;
    let mut report = Vec::new();
    for plan in [&servers, &settings] {
        report.push(format!("{}:", plan.path.display()));
        if plan.changes.is_empty() {
            report.push("  unchanged".into());
        }
        report.extend(plan.changes.iter().map(|c| format!("  {c}")));
    }
    if args.dry_run {
        report.push("dry run: nothing was written".into());
        return Ok(report.join("\n"));
    }
    for plan in [&servers, &settings] {
        if plan.changes.is_empty() {
            continue;
        }
        if let Some(backup) = write(plan)? {
            report.push(format!("backup of the previous file: {}", backup.display()));
        }
    }
    if let Some(HookKind::Http { base }) = &hooks {
        report.push(format!(
            "the hooks now POST to the daemon at {base}: start `hooks-mcp-full serve` with \
             MCP_TRANSPORT=streamable-http or sse there, and give the client the daemon's token \
             in {} (`hooks-mcp status` checks it)",
            client::TOKEN_ENV
        ));
    }
    if let Some((transport, _)) = &install
        && *transport != Transport::Stdio
    {
        report.push(format!(
            "the client now expects a running daemon: start `hooks-mcp-full serve` with \
             MCP_TRANSPORT={transport} (and the same MCP_HOST/MCP_PORT); `hooks-mcp status` \
             checks it"
        ));
    }
    Ok(report.join("\n"))
}

/// The change to the file holding `mcpServers`.
fn plan_servers(
    path: &Path,
    install: Option<&(Transport, Endpoint)>,
    bins: &Binaries,
) -> Result<Plan, String> {
    let before = client::read_document(path)?;
    let existed = before.is_some();
    let mut doc = before.unwrap_or_default();
    let mut changes = Vec::new();
    let key = format!("mcpServers.{SERVER_NAME}");
    match install {
        Some((transport, endpoint)) => {
            let servers = doc
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
            let emptied = match doc.get_mut("mcpServers").and_then(Value::as_object_mut) {
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
                doc.shift_remove("mcpServers");
            }
        }
    }
    Ok(Plan {
        path: path.to_owned(),
        existed,
        after: doc,
        changes,
    })
}

/// Keeps what an operator added to an existing entry of the same transport: the server's
/// environment (stdio: filters such as `MCP_CATEGORIES`) or request headers (network).
fn keep_customisations(old: &Value, entry: &mut Value, transport: Transport) {
    if Transport::of_entry(old) != Some(transport) {
        return;
    }
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

/// The change to the file holding `hooks` (`install`: the kind of hooks to register; `None`
/// removes hooks-mcp's hooks of either kind).
fn plan_settings(path: &Path, install: Option<&HookKind>, bins: &Binaries) -> Result<Plan, String> {
    let before = client::read_document(path)?;
    let existed = before.is_some();
    let mut doc = before.unwrap_or_default();
    let mut changes = Vec::new();
    let not_object = || {
        format!(
            "{}: `hooks` is not an object; fix it, then run again (nothing was changed)",
            path.display()
        )
    };
    if let Some(kind) = install {
        let hooks = doc
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
            let desired = client::hook_group(kind, &bins.hook, event);
            let holding: Vec<usize> = (0..groups.len())
                .filter(|i| group_hooks(&groups[*i]).iter().any(client::is_our_hook))
                .collect();
            if holding.len() == 1 && groups[holding[0]] == desired {
                continue;
            }
            remove_ours(groups, event, &mut changes);
            changes.push(format!("add hooks.{event}: {desired}"));
            groups.push(desired);
        }
    } else if let Some(hooks) = doc.get_mut("hooks") {
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
            doc.shift_remove("hooks");
        }
    }
    Ok(Plan {
        path: path.to_owned(),
        existed,
        after: doc,
        changes,
    })
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

/// Writes a planned file: backup first (when it existed), then a temporary file renamed over
/// it. Returns the backup's path.
fn write(plan: &Plan) -> Result<Option<PathBuf>, String> {
    // A configuration file kept as a symbolic link (dotfile managers) stays one: write its
    // target.
    let path = if plan.existed {
        std::fs::canonicalize(&plan.path).unwrap_or_else(|_| plan.path.clone())
    } else {
        plan.path.clone()
    };
    let failed = |what: &str, p: &Path, e: std::io::Error| {
        format!(
            "cannot {what} {}: {e} (nothing more was changed)",
            p.display()
        )
    };
    let backup = if plan.existed {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".hooks-mcp-{}.bak", open::now_ms()));
        let backup = path.with_file_name(name);
        std::fs::copy(&path, &backup).map_err(|e| failed("back up", &path, e))?;
        Some(backup)
    } else {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| failed("create", dir, e))?;
        }
        None
    };
    let mut text = serde_json::to_string_pretty(&Value::Object(plan.after.clone()))
        .map_err(|e| format!("cannot serialise {}: {e}", path.display()))?;
    text.push('\n');
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(path.file_name().unwrap_or_default());
    tmp_name.push(".hooks-mcp-tmp");
    let tmp = path.with_file_name(tmp_name);
    std::fs::write(&tmp, text).map_err(|e| failed("write", &tmp, e))?;
    if let Ok(meta) = std::fs::metadata(&path) {
        // The client's files may be private (0600): the new one keeps the old permissions.
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(failed("replace", &path, e));
    }
    Ok(backup)
}
