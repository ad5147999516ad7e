//! `hooks-mcp status`: the configured transport and endpoint, what the client's configuration
//! declares, whether the daemon is up, and every divergence between them.
//!
//! Exit status: 0 when everything matches (and, for a network transport, the daemon answers),
//! 1 when the configuration matches but the daemon is stopped, 2 when anything diverges.
//! Claude Code is checked as `init` registers it: when it is on this machine, holds a
//! registration, or no other client is on this machine or registered (its hooks also when VS
//! Code, whose agent runs them, is registered).

use std::path::Path;

use hook_dispatch::Event;
use serde_json::{Value, json};

use crate::client::{self, Binaries, ClientFiles, Endpoint, OurHook, SERVER_NAME, Transport};
use crate::clients::{self, Client, Install};

/// The report `status` prints, and its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusReport {
    /// The report, for people or (with `json`) as JSON.
    pub text: String,
    /// 0 matching (and the daemon up where the registration needs it), 1 a needed daemon
    /// stopped, 2 diverged.
    pub code: u8,
}

/// What a probe of the daemon's `/health` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Daemon {
    /// It answered with this HTTP status.
    Answered(u16),
    /// Nothing answered (the reason).
    Down(String),
}

/// Compares the configuration, the client's files and the daemon (asked through `probe`, which
/// asks the daemon's `/health`), and reports, as JSON when `json`.
pub fn run(json: bool, probe: impl FnOnce() -> Daemon) -> StatusReport {
    let mut divergences = Vec::new();
    let transport = Transport::from_env().unwrap_or_else(|e| {
        divergences.push(e);
        Transport::Stdio
    });
    let endpoint = Endpoint::from_env().unwrap_or_else(|e| {
        divergences.push(e);
        Endpoint {
            host: "localhost".into(),
            port: client::DEFAULT_PORT,
        }
    });
    let (bins, files) = match Binaries::beside_current_exe()
        .and_then(|b| ClientFiles::from_env().map(|f| (b, f)))
    {
        Ok(found) => found,
        Err(e) => {
            return StatusReport {
                text: format!("hooks-mcp status: {e}"),
                code: 2,
            };
        }
    };

    let expected_url = endpoint.url(transport);
    let configured = match &expected_url {
        Some(url) => format!("{transport} at {url}"),
        None => format!("{transport} (the client starts {})", bins.front.display()),
    };

    // What Claude Code declares; its divergences count below only where it is checked.
    let mut claude_server = Vec::new();
    let mut claude_hooks = Vec::new();
    let servers = read(&files.servers, &mut claude_server);
    let declared = servers.as_ref().and_then(|doc| client::our_server(doc));
    let declared_text = match declared {
        None => {
            claude_server.push(format!(
                "{} declares no `mcpServers.{SERVER_NAME}` server; run `hooks-mcp init`",
                files.servers.display()
            ));
            "nothing".to_owned()
        }
        Some(entry) => {
            check_server(
                entry,
                transport,
                expected_url.as_deref(),
                &bins,
                &mut claude_server,
            );
            entry.to_string()
        }
    };
    let settings = read(&files.settings, &mut claude_hooks);
    let mut hooks_text = Vec::new();
    let mut http_hooks = false;
    let mut any_hook = false;
    for event in Event::ALL {
        let found = settings
            .as_ref()
            .map(|doc| client::our_hooks(doc, event))
            .unwrap_or_default();
        check_hooks(event, &found, &files.settings, &endpoint, &mut claude_hooks);
        http_hooks |= found.iter().any(|h| matches!(h, OurHook::Http { .. }));
        any_hook |= !found.is_empty();
        hooks_text.push(format!("{event}: {}", describe(found.first())));
    }

    // The other clients: those on this machine, or registered.
    let others = other_clients(transport, &endpoint, &bins);
    // Claude Code is checked as `init` registers it: when it is on this machine, holds a
    // registration, or no other client is on this machine or registered. Its hooks are also
    // checked when VS Code is registered, whose agent runs them.
    let claude_checked =
        clients::found(Client::Claude) || declared.is_some() || any_hook || others.is_empty();
    let hooks_checked = claude_checked
        || others
            .iter()
            .any(|r| r.client == Client::VsCode && r.registered);
    if claude_checked {
        divergences.append(&mut claude_server);
    }
    if hooks_checked {
        divergences.append(&mut claude_hooks);
    }
    for report in &others {
        divergences.extend(report.divergences.iter().cloned());
    }
    let unplaced = hook_dispatch::clients::unplaced::read();
    let quiet = hook_dispatch::clients::quiet::read();

    // The daemon.
    let daemon = probe();
    // The operator console, served by a daemon that answers.
    let console = matches!(daemon, Daemon::Answered(code) if (200..300).contains(&code))
        .then(|| format!("{}/console/", endpoint.base_url()));
    let mut stopped = false;
    // HTTP hooks need the daemon as much as a network transport does.
    let needs_daemon = transport != Transport::Stdio || http_hooks;
    let daemon_text = match (&daemon, needs_daemon) {
        (Daemon::Answered(code), _) => {
            if needs_daemon && !(200..300).contains(code) {
                divergences.push(format!(
                    "the daemon at {}:{} answers /health with HTTP {code} (starting, stopping \
                     or unhealthy): see GET /health?level=full",
                    endpoint.host, endpoint.port
                ));
            }
            format!("up: /health answered HTTP {code}")
        }
        (Daemon::Down(why), false) => {
            format!("not running ({why}); stdio and command hooks need none")
        }
        (Daemon::Down(why), true) => {
            stopped = true;
            format!("stopped ({why})")
        }
    };

    let code: u8 = if !divergences.is_empty() {
        2
    } else if stopped {
        1
    } else {
        0
    };
    let text = if json {
        let report = json!({
            "transport": transport.as_str(),
            "endpoint": expected_url,
            "client": {
                "checked": claude_checked,
                "hooks_checked": hooks_checked,
                "servers_file": files.servers.to_string_lossy(),
                "settings_file": files.settings.to_string_lossy(),
                "server": declared,
                "hooks": Event::ALL.iter().map(|e| {
                    let found = settings.as_ref().map(|d| client::our_hooks(d, *e)).unwrap_or_default();
                    (e.name().to_owned(), Value::from(found.iter().map(|h| describe(Some(h))).collect::<Vec<_>>()))
                }).collect::<serde_json::Map<String, Value>>(),
            },
            "daemon": match &daemon {
                Daemon::Answered(code) => {
                    json!({ "up": true, "health_status": code, "console": console })
                }
                Daemon::Down(why) => json!({ "up": false, "error": why }),
            },
            "clients": others.iter().map(ClientReport::to_json).collect::<Vec<_>>(),
            "unplaced": unplaced.as_ref().map(|u| json!({
                "count": u.count, "client": u.client, "event": u.event, "reason": u.reason,
                "at": u.at,
            })),
            "quiet": quiet.as_ref().map(|q| json!({
                "count": q.total(), "events": q.counts, "last": q.last, "at": q.at,
            })),
            "divergences": divergences,
            "exit": code,
        });
        serde_json::to_string_pretty(&report).unwrap_or_else(|_| report.to_string())
    } else {
        let mut lines = vec![format!("configured:  {configured}")];
        if claude_checked {
            lines.push(format!(
                "client:      {} declares `{SERVER_NAME}`: {declared_text}",
                files.servers.display()
            ));
        } else {
            lines.push(format!(
                "client:      Claude Code is not on this machine ({} absent, `claude` not on \
                 PATH) and holds no registration: not checked",
                files.servers.display()
            ));
        }
        if hooks_checked {
            lines.push(format!(
                "hooks:       {}: {}",
                files.settings.display(),
                hooks_text.join(", ")
            ));
        }
        lines.push(format!("daemon:      {daemon_text}"));
        if let Some(url) = &console {
            lines.push(format!("console:     {url}"));
        }
        for report in &others {
            lines.push(format!(
                "{:<12} {}",
                format!("{}:", report.client.name()),
                report.summary()
            ));
        }
        if let Some(u) = &unplaced {
            lines.push(format!(
                "unplaced:    {} hook payload(s) no client could place; the last: {} {}: {}",
                u.count, u.client, u.event, u.reason
            ));
        }
        if let Some(q) = &quiet {
            let each: Vec<String> = q.counts.iter().map(|(e, n)| format!("{e} {n}")).collect();
            lines.push(format!(
                "quiet:       {} Claude Code event(s) answered with nothing ({})",
                q.total(),
                each.join(", ")
            ));
        }
        if divergences.is_empty() {
            lines.push("divergences: none".into());
        } else {
            lines.push("divergences:".into());
            lines.extend(divergences.iter().map(|d| format!("  - {d}")));
        }
        lines.join("\n")
    };
    StatusReport { text, code }
}

/// What `status` found of one client beside Claude Code.
#[derive(Debug)]
struct ClientReport {
    client: Client,
    found: bool,
    binary: Option<std::path::PathBuf>,
    registered: bool,
    hooks: bool,
    divergences: Vec<String>,
}

impl ClientReport {
    fn summary(&self) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        format!(
            "server registered: {}, hooks: {}, command: {}",
            yes(self.registered),
            yes(self.hooks),
            self.binary
                .as_ref()
                .map(|b| b.display().to_string())
                .unwrap_or_else(|| "not on PATH".into())
        )
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.client.name(),
            "found": self.found,
            "binary": self.binary.as_ref().map(|b| b.to_string_lossy()),
            "registered": self.registered,
            "hooks": self.hooks,
            "divergences": self.divergences,
        })
    }
}

/// Every client beside Claude Code that is on this machine or registered: whether its server
/// and hooks are there, and how its files differ from what `init` would write for this
/// configuration and installation.
fn other_clients(transport: Transport, endpoint: &Endpoint, bins: &Binaries) -> Vec<ClientReport> {
    let expected = Install {
        transport,
        endpoint,
        bins,
        token: std::env::var_os(client::TOKEN_ENV).is_some_and(|v| !v.is_empty()),
    };
    let mut reports = Vec::new();
    for client in Client::ALL.into_iter().filter(|c| *c != Client::Claude) {
        let found = clients::found(client);
        // What a removal would take out is what is registered.
        let present: Vec<String> = clients::plan(client, None, false)
            .map(|plan| plan.into_iter().flat_map(|c| c.changes).collect())
            .unwrap_or_default();
        let registered = present.iter().any(|c| c.contains(".hooks (was "));
        // VS Code's agent runs Claude Code's hooks, which Claude Code's report checks.
        let hooks = if client == Client::VsCode {
            registered && claude_hooks_present()
        } else {
            present.iter().any(|c| c.starts_with("remove hooks"))
        };
        if !found && !registered && !hooks {
            continue;
        }
        let rerun = format!("run `hooks-mcp init --client {}`", client.name());
        let divergences = match clients::plan(client, Some(&expected), false) {
            Ok(plan) => plan
                .iter()
                .filter(|c| !c.is_unchanged())
                .map(|c| {
                    format!(
                        "{}: {} differs from this installation ({}); {rerun}",
                        client.title(),
                        c.path.display(),
                        c.changes.join("; ")
                    )
                })
                .collect(),
            Err(why) => vec![format!("{}: {why}", client.title())],
        };
        reports.push(ClientReport {
            client,
            found,
            binary: clients::binary(client),
            registered,
            hooks,
            divergences,
        });
    }
    reports
}

/// Whether Claude Code's settings hold hooks-mcp's hooks of the events VS Code's agent runs
/// (the four every client has).
fn claude_hooks_present() -> bool {
    ClientFiles::from_env()
        .ok()
        .and_then(|files| client::read_document(&files.settings).ok().flatten())
        .is_some_and(|doc| {
            let doc = Value::Object(doc);
            Event::CORE
                .iter()
                .all(|e| !client::our_hooks(&doc, *e).is_empty())
        })
}

/// Reads a client file, recording a problem as a divergence.
fn read(path: &Path, divergences: &mut Vec<String>) -> Option<Value> {
    match client::read_document(path) {
        Ok(Some(doc)) => Some(Value::Object(doc)),
        Ok(None) => None,
        Err(e) => {
            divergences.push(e);
            None
        }
    }
}

/// Compares the declared server entry with the configuration.
fn check_server(
    entry: &Value,
    transport: Transport,
    expected_url: Option<&str>,
    bins: &Binaries,
    divergences: &mut Vec<String>,
) {
    let Some(declared) = Transport::of_entry(entry) else {
        divergences.push(format!(
            "the `{SERVER_NAME}` entry has an unknown type {}",
            entry.get("type").unwrap_or(&Value::Null)
        ));
        return;
    };
    if declared != transport {
        divergences.push(format!(
            "the client uses {declared} but {} is {transport}; run `hooks-mcp init \
             --transport {transport}` or change {}",
            client::TRANSPORT_ENV,
            client::TRANSPORT_ENV
        ));
        return;
    }
    match expected_url {
        Some(expected) => {
            let url = entry.get("url").and_then(Value::as_str).unwrap_or("");
            if !same_url(url, expected) {
                divergences.push(format!(
                    "the client connects to `{url}` but the daemon is configured at {expected} \
                     ({}, {}); run `hooks-mcp init --transport {transport}`",
                    client::HOST_ENV,
                    client::PORT_ENV
                ));
            }
        }
        None => {
            let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
            let path = Path::new(command);
            if !path.is_file() {
                divergences.push(format!(
                    "the client starts `{command}`, which does not exist; run `hooks-mcp init`"
                ));
            } else if !same_file(path, &bins.front) {
                divergences.push(format!(
                    "the client starts `{command}`, not this installation's {}; run \
                     `hooks-mcp init` to register this one",
                    bins.front.display()
                ));
            }
        }
    }
}

/// One registered hook, for people: the program a command hook runs, or the URL an HTTP hook
/// posts to.
fn describe(hook: Option<&OurHook>) -> String {
    match hook {
        None => "none".into(),
        Some(OurHook::Command { program, .. }) => program.display().to_string(),
        Some(OurHook::Http { url, .. }) => format!("POST {url}"),
    }
}

/// Compares the hooks registered for `event` with this installation (command hooks) or with
/// the daemon's configured endpoint (HTTP hooks).
fn check_hooks(
    event: Event,
    found: &[OurHook],
    settings: &Path,
    endpoint: &Endpoint,
    divergences: &mut Vec<String>,
) {
    match found {
        [] => divergences.push(format!(
            "{} registers no hooks-mcp hook for {event}; run `hooks-mcp init`",
            settings.display()
        )),
        [
            OurHook::Command {
                program,
                event: named,
            },
        ] => {
            if !named.eq_ignore_ascii_case(event.name()) {
                divergences.push(format!(
                    "the {event} hook runs `hook {named}`, the wrong event; run `hooks-mcp init`"
                ));
            } else if !program.is_file() {
                divergences.push(format!(
                    "the {event} hook runs {}, which does not exist; run `hooks-mcp init`",
                    program.display()
                ));
            }
        }
        [
            OurHook::Http {
                url,
                event: named,
                hook,
            },
        ] => {
            let expected = client::http_hook_url(&endpoint.base_url(), event);
            if named != event.name() {
                divergences.push(format!(
                    "the {event} hook posts to `{url}`, the wrong event; run `hooks-mcp init \
                     --hooks http`"
                ));
            } else if !same_url(url, &expected) {
                divergences.push(format!(
                    "the {event} hook posts to `{url}` but the daemon is configured at \
                     {expected} ({}, {}); run `hooks-mcp init --hooks http`",
                    client::HOST_ENV,
                    client::PORT_ENV
                ));
            }
            let token_header = hook
                .get("headers")
                .and_then(|h| h.get("Authorization"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let allowed = hook
                .get("allowedEnvVars")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v == client::TOKEN_ENV));
            if !token_header.contains(client::TOKEN_ENV) || !allowed {
                divergences.push(format!(
                    "the {event} hook does not send the daemon's token (an `Authorization: \
                     Bearer ${}` header with {} in allowedEnvVars): the daemon refuses it; run \
                     `hooks-mcp init --hooks http`",
                    client::TOKEN_ENV,
                    client::TOKEN_ENV
                ));
            }
        }
        _ => divergences.push(format!(
            "{event} has {} hooks-mcp hooks (each runs on every event); run `hooks-mcp init` to \
             keep one",
            found.len()
        )),
    }
}

/// Whether two files are the same (after resolving links), or equal paths.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Whether two URLs name the same endpoint, counting every loopback host as the same.
fn same_url(a: &str, b: &str) -> bool {
    fn parts(url: &str) -> Option<(String, String)> {
        let rest = url.trim().strip_prefix("http://")?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (host, port) = authority.rsplit_once(':')?;
        let host = if client::is_local(host) {
            "localhost".to_owned()
        } else {
            host.to_ascii_lowercase()
        };
        Some((
            format!("{host}:{port}"),
            path.trim_end_matches('/').to_owned(),
        ))
    }
    match (parts(a), parts(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.trim() == b.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::same_url;

    #[test]
    fn loopback_urls_compare_equal() {
        assert!(same_url(
            "http://127.0.0.1:8642/mcp",
            "http://localhost:8642/mcp/"
        ));
        assert!(!same_url(
            "http://localhost:8643/mcp",
            "http://localhost:8642/mcp"
        ));
        assert!(!same_url(
            "http://localhost:8642/sse",
            "http://localhost:8642/mcp"
        ));
    }
}
