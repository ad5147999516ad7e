//! The agent client's configuration (Claude Code): where it lives, what hooks-mcp registers in
//! it, and how to recognise hooks-mcp's own entries. `init` writes it; `status` reads it.
//!
//! - `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`): the `mcpServers.hooks` entry;
//!   stdio `{"type":"stdio","command":…,"args":[],"env":{}}`, streamable HTTP
//!   `{"type":"http","url":"http://localhost:8642/mcp"}`, SSE `{"type":"sse","url":…/sse}`.
//! - `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`): the `hooks` block, one
//!   matcher group per event whose command is `<hooks-mcp-full> hook <Event>`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use hook_dispatch::Event;

/// The name the server is registered under (its tools appear as `mcp__hooks__<tool>`).
pub const SERVER_NAME: &str = "hooks";
/// The daemon's bearer token; when set, `init` adds a header that the client expands from its
/// own environment (the secret is never written to the file).
pub use protocol_lite::local_daemon::TOKEN_ENV;
pub use protocol_lite::local_daemon::{DEFAULT_PORT, HOST_ENV, PORT_ENV};
/// The transport the server is configured for (the daemon reads the same variable).
pub const TRANSPORT_ENV: &str = "MCP_TRANSPORT";

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The client starts `hooks-mcp` per session.
    Stdio,
    /// Streamable HTTP at `/mcp` of a running daemon.
    StreamableHttp,
    /// Legacy SSE at `/sse` of a running daemon.
    Sse,
}

impl Transport {
    /// The `MCP_TRANSPORT` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::StreamableHttp => "streamable-http",
            Transport::Sse => "sse",
        }
    }

    /// The `type` of the client's server entry.
    fn entry_type(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::StreamableHttp => "http",
            Transport::Sse => "sse",
        }
    }

    /// The transport of a server entry's `type` (an entry without one is stdio).
    pub fn of_entry(entry: &Value) -> Option<Transport> {
        match entry.get("type").and_then(Value::as_str) {
            None | Some("stdio") => Some(Transport::Stdio),
            Some("http" | "streamable-http" | "streamableHttp") => Some(Transport::StreamableHttp),
            Some("sse") => Some(Transport::Sse),
            Some(_) => None,
        }
    }

    /// `MCP_TRANSPORT` (unset or blank: stdio).
    ///
    /// # Errors
    /// A message naming the variable and the valid values.
    pub fn from_env() -> Result<Transport, String> {
        let value = std::env::var(TRANSPORT_ENV).unwrap_or_default();
        match value.trim() {
            "" => Ok(Transport::Stdio),
            other => other
                .parse()
                .map_err(|e| format!("{TRANSPORT_ENV}=`{other}` {e}")),
        }
    }
}

impl std::str::FromStr for Transport {
    type Err = String;

    /// `stdio`, `streamable-http` (or `http`) or `sse`.
    fn from_str(text: &str) -> Result<Transport, String> {
        match text.trim() {
            "stdio" => Ok(Transport::Stdio),
            "streamable-http" | "http" => Ok(Transport::StreamableHttp),
            "sse" => Ok(Transport::Sse),
            _ => Err("is not a transport; use stdio, streamable-http or sse".into()),
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the daemon listens, from `MCP_HOST` and `MCP_PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The address it binds.
    pub host: String,
    /// Its port.
    pub port: u16,
}

impl Endpoint {
    /// Reads `MCP_HOST` (default `localhost`) and `MCP_PORT` (default 8642), as the daemon does.
    ///
    /// # Errors
    /// A message naming `MCP_PORT` when it is not a port number.
    pub fn from_env() -> Result<Endpoint, String> {
        let host = std::env::var(HOST_ENV)
            .ok()
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        let port = match std::env::var(PORT_ENV) {
            Err(_) => DEFAULT_PORT,
            Ok(text) if text.trim().is_empty() => DEFAULT_PORT,
            Ok(text) => text
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("{PORT_ENV}=`{text}` is not a port number (1-65535)"))?,
        };
        Ok(Endpoint { host, port })
    }

    /// The host a client on this machine uses: `localhost` for loopback and wildcard addresses.
    fn client_host(&self) -> String {
        if is_local(&self.host) {
            "localhost".into()
        } else if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }

    /// The daemon's base URL as a client on this machine reaches it (`http://host:port`).
    pub fn base_url(&self) -> String {
        format!("http://{}:{}", self.client_host(), self.port)
    }

    /// The URL of `transport`'s endpoint (`/mcp` or `/sse`); `None` for stdio.
    pub fn url(&self, transport: Transport) -> Option<String> {
        let path = match transport {
            Transport::Stdio => return None,
            Transport::StreamableHttp => "/mcp",
            Transport::Sse => "/sse",
        };
        Some(format!("http://{}:{}{path}", self.client_host(), self.port))
    }
}

/// Whether `host` names this machine (loopback or a wildcard address).
pub fn is_local(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    matches!(
        host.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1" | "0.0.0.0" | "::"
    ) || host.starts_with("127.")
}

/// The two configuration files.
#[derive(Debug, Clone)]
pub struct ClientFiles {
    /// Holds `mcpServers`.
    pub servers: PathBuf,
    /// Holds `hooks`.
    pub settings: PathBuf,
}

impl ClientFiles {
    /// `$CLAUDE_CONFIG_DIR/{.claude.json,settings.json}` when that is set, else
    /// `~/.claude.json` and `~/.claude/settings.json`.
    ///
    /// # Errors
    /// A message when neither `CLAUDE_CONFIG_DIR` nor `HOME` is set.
    pub fn from_env() -> Result<ClientFiles, String> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(dir) = var("CLAUDE_CONFIG_DIR") {
            return Ok(ClientFiles {
                servers: dir.join(".claude.json"),
                settings: dir.join("settings.json"),
            });
        }
        let home = var("HOME").ok_or("HOME is not set: cannot find the client's configuration")?;
        Ok(ClientFiles {
            servers: home.join(".claude.json"),
            settings: home.join(".claude").join("settings.json"),
        })
    }
}

/// The binaries to register: `hooks-mcp` (the MCP server) and `hooks-mcp-hook` (the hook
/// command: it links only the store and the tools, so it starts fastest), both beside the
/// running executable.
#[derive(Debug, Clone)]
pub struct Binaries {
    /// The stdio front end.
    pub front: PathBuf,
    /// The lean hook binary.
    pub hook: PathBuf,
}

impl Binaries {
    /// The binaries beside this executable.
    ///
    /// # Errors
    /// A message when the executable's path is unknown.
    pub fn beside_current_exe() -> Result<Binaries, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot tell where this executable is ({e})"))?;
        let exe = exe.canonicalize().unwrap_or(exe);
        Ok(Binaries {
            front: exe.with_file_name("hooks-mcp"),
            hook: exe.with_file_name("hooks-mcp-hook"),
        })
    }
}

/// The server entry `init` writes for `transport`.
pub fn server_entry(transport: Transport, bins: &Binaries, endpoint: &Endpoint) -> Value {
    match endpoint.url(transport) {
        None => json!({
            "type": transport.entry_type(),
            "command": bins.front.to_string_lossy(),
            "args": [],
            "env": {},
        }),
        Some(url) => {
            let mut entry = json!({ "type": transport.entry_type(), "url": url });
            if std::env::var_os(TOKEN_ENV).is_some_and(|v| !v.is_empty()) {
                entry["headers"] = json!({ "Authorization": format!("Bearer ${{{TOKEN_ENV}}}") });
            }
            entry
        }
    }
}

/// The hook command line for `event`.
pub fn hook_command(full: &Path, event: Event) -> String {
    format!(
        "{} hook {}",
        shell_quote(&full.to_string_lossy()),
        event.name()
    )
}

/// How the client runs hooks-mcp's hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookKind {
    /// `"type": "command"`: the client starts `hooks-mcp-hook hook <Event>` (no daemon needed).
    Command,
    /// `"type": "http"`: the client POSTs the event to the daemon at this base URL
    /// (`<base>/hooks/<Event>`).
    Http {
        /// The daemon's base URL, e.g. `http://localhost:8642`, without a trailing slash.
        base: String,
    },
}

/// The header that carries the session's subscriptions to an HTTP hook (the client expands
/// `$HOOKS_MCP_CHANNELS` from its own environment).
pub const CHANNELS_HEADER: &str = "X-Hooks-Mcp-Channels";
/// The variable holding the subscriptions (read by the command hook, sent by HTTP hooks).
pub const CHANNELS_ENV: &str = hook_dispatch::CHANNELS_ENV;
/// How long the client waits for an HTTP hook, in seconds: condition scripts run inside it
/// (10 s each by default).
pub const HTTP_HOOK_TIMEOUT_S: u64 = 60;

/// The URL of `event`'s HTTP hook on the daemon at `base`.
pub fn http_hook_url(base: &str, event: Event) -> String {
    format!("{}/hooks/{}", base.trim_end_matches('/'), event.name())
}

/// The hook object `init` registers for `event`.
pub fn hook_object(kind: &HookKind, hook_bin: &Path, event: Event) -> Value {
    match kind {
        HookKind::Command => json!({ "type": "command", "command": hook_command(hook_bin, event) }),
        HookKind::Http { base } => json!({
            "type": "http",
            "url": http_hook_url(base, event),
            "headers": {
                "Authorization": format!("Bearer ${TOKEN_ENV}"),
                CHANNELS_HEADER: format!("${CHANNELS_ENV}"),
            },
            "allowedEnvVars": [TOKEN_ENV, CHANNELS_ENV],
            "timeout": HTTP_HOOK_TIMEOUT_S,
        }),
    }
}

/// The matcher group `init` adds for `event`.
pub fn hook_group(kind: &HookKind, hook_bin: &Path, event: Event) -> Value {
    let hook = hook_object(kind, hook_bin, event);
    if event.is_tool_event() {
        json!({ "matcher": "*", "hooks": [hook] })
    } else {
        json!({ "hooks": [hook] })
    }
}

/// Quotes `text` for a POSIX shell when it needs it.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,".contains(&b))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Splits the first five words of a command line, undoing single and double quotes and
/// backslash escapes (enough for the commands `init` writes and their hand-edited variants).
fn first_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                word.extend(chars.next());
                in_word = true;
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                    if words.len() == 5 {
                        return words;
                    }
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// If `command` is a hooks-mcp hook command, the program it runs and the event it names
/// (`<program> hook <Event>`, or `<program> hook --client <name> <Event>`).
pub fn parse_hook_command(command: &str) -> Option<(PathBuf, String)> {
    parse_any_hook_command(command).map(|c| (c.program, c.event))
}

/// A hooks-mcp hook command line, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The program it runs.
    pub program: PathBuf,
    /// The client it names (`--client`), `None` for Claude Code's hooks.
    pub client: Option<String>,
    /// The event it names.
    pub event: String,
}

/// Reads a hooks-mcp hook command (for any client), or `None` for another command.
pub fn parse_any_hook_command(command: &str) -> Option<HookCommand> {
    let words = first_words(command);
    let program = PathBuf::from(words.first()?);
    let name = program.file_name()?.to_str()?;
    if !matches!(name, "hooks-mcp" | "hooks-mcp-full" | "hooks-mcp-hook") || words.get(1)? != "hook"
    {
        return None;
    }
    let rest = &words[2..];
    let (client, event) = match rest {
        [flag, client, event, ..] if flag == "--client" => (Some(client.clone()), event.clone()),
        [flag, event, ..] if flag.starts_with("--client=") => {
            (Some(flag["--client=".len()..].to_owned()), event.clone())
        }
        [event, ..] => (None, event.clone()),
        [] => (None, String::new()),
    };
    Some(HookCommand {
        program,
        client,
        event,
    })
}

/// The hook command line for another client's event: `<hook> hook --client <name> <event>`.
pub fn client_hook_command(hook_bin: &Path, client: &str, event: &str) -> String {
    format!(
        "{} hook --client {client} {event}",
        shell_quote(&hook_bin.to_string_lossy())
    )
}

/// One of hooks-mcp's hooks found in a settings document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OurHook {
    /// A command hook: the program it runs and the event named on its command line.
    Command {
        /// The program.
        program: PathBuf,
        /// The event it names.
        event: String,
    },
    /// An HTTP hook: the whole hook object (`url`, `headers`, `allowedEnvVars`).
    Http {
        /// Its `url`.
        url: String,
        /// The event its URL names (`…/hooks/<Event>`).
        event: String,
        /// The hook object as written.
        hook: Value,
    },
}

/// If `url` is a hooks-mcp HTTP hook URL (`http(s)://…/hooks/<Event>` for an event the
/// dispatcher handles), the event it names.
pub fn parse_hook_url(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let (_, path) = rest.split_once('/')?;
    let name = path.strip_prefix("hooks/")?;
    Event::ALL
        .iter()
        .find(|e| e.name() == name)
        .map(|e| e.name().to_owned())
}

/// Reads one hook object: hooks-mcp's, or `None`.
pub fn our_hook(hook: &Value) -> Option<OurHook> {
    match hook.get("type").and_then(Value::as_str) {
        Some("http") => {
            let url = hook.get("url").and_then(Value::as_str)?;
            Some(OurHook::Http {
                url: url.to_owned(),
                event: parse_hook_url(url)?,
                hook: hook.clone(),
            })
        }
        None | Some("command") => {
            let (program, event) = parse_hook_command(hook.get("command")?.as_str()?)?;
            Some(OurHook::Command { program, event })
        }
        Some(_) => None,
    }
}

/// Whether one hook object (a command running `hooks-mcp… hook <Event>`, or an HTTP hook
/// posting to `…/hooks/<Event>`) is hooks-mcp's.
pub fn is_our_hook(hook: &Value) -> bool {
    our_hook(hook).is_some()
}

/// hooks-mcp's hooks registered for `event` in a settings document.
pub fn our_hooks(settings: &Value, event: Event) -> Vec<OurHook> {
    settings
        .get("hooks")
        .and_then(|h| h.get(event.name()))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(our_hook)
        .collect()
}

/// The `mcpServers.hooks` entry of a servers document.
pub fn our_server(servers: &Value) -> Option<&Value> {
    servers.get("mcpServers").and_then(|m| m.get(SERVER_NAME))
}

/// Reads a JSON configuration file (comments and trailing commas allowed): `Ok(None)` when it
/// does not exist.
///
/// # Errors
/// A message naming the file when it cannot be read or is not a JSON object.
pub fn read_document(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    // JSON with comments and trailing commas, as `init` reads and writes these files.
    match crate::doc::parse_json(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(format!(
            "{} is not a JSON object; fix or move it aside, then run again",
            path.display()
        )),
        Err(e) => Err(format!(
            "{} {e}, then run again (nothing was changed)",
            path.display()
        )),
    }
}

/// The endpoint and binaries the unit tests of every client install: `localhost:8642` and
/// `/opt/bin/hooks-mcp{,-hook}`.
#[cfg(test)]
pub(crate) fn test_install_parts() -> (Endpoint, Binaries) {
    (
        Endpoint {
            host: "localhost".into(),
            port: 8642,
        },
        Binaries {
            front: "/opt/bin/hooks-mcp".into(),
            hook: "/opt/bin/hooks-mcp-hook".into(),
        },
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn hook_commands_round_trip_through_quoting() {
        for dir in ["/opt/bin", "/home/a b/it's here"] {
            let full = Path::new(dir).join("hooks-mcp-full");
            let command = hook_command(&full, Event::PreToolUse);
            let (program, event) = parse_hook_command(&command).unwrap();
            assert_eq!(program, full, "{command}");
            assert_eq!(event, "PreToolUse");
        }
    }

    #[test]
    fn client_hook_commands_round_trip() {
        let bin = Path::new("/home/a b/bin/hooks-mcp-hook");
        let command = client_hook_command(bin, "gemini", "BeforeTool");
        assert_eq!(
            parse_any_hook_command(&command),
            Some(HookCommand {
                program: bin.to_owned(),
                client: Some("gemini".into()),
                event: "BeforeTool".into(),
            })
        );
        assert_eq!(
            parse_hook_command("hooks-mcp-hook hook --client=codex PreToolUse"),
            Some((PathBuf::from("hooks-mcp-hook"), "PreToolUse".into()))
        );
    }

    #[test]
    fn foreign_commands_are_not_ours() {
        for command in [
            "python3 ~/hooks/check.py",
            "/usr/bin/hooks-mcp-fullish hook PreToolUse",
            "hooks-mcp status",
            "",
        ] {
            assert_eq!(parse_hook_command(command), None, "{command}");
        }
        assert!(parse_hook_command("hooks-mcp hook Stop").is_some());
    }

    #[test]
    fn http_hooks_are_ours_by_their_url() {
        let kind = HookKind::Http {
            base: "http://localhost:8642/".into(),
        };
        let hook = hook_object(&kind, Path::new("/x"), Event::PostToolUse);
        assert_eq!(hook["url"], "http://localhost:8642/hooks/PostToolUse");
        assert_eq!(hook["headers"]["Authorization"], "Bearer $HOOKS_MCP_TOKEN");
        assert_eq!(
            hook["allowedEnvVars"],
            json!(["HOOKS_MCP_TOKEN", "HOOKS_MCP_CHANNELS"])
        );
        assert!(
            matches!(our_hook(&hook), Some(OurHook::Http { event, .. }) if event == "PostToolUse")
        );
        for foreign in [
            json!({"type": "http", "url": "http://localhost:8080/hooks/tool-executed"}),
            json!({"type": "http", "url": "http://localhost:8080/audit/PreToolUse"}),
            json!({"type": "prompt", "prompt": "hooks-mcp hook PreToolUse"}),
        ] {
            assert!(!is_our_hook(&foreign), "{foreign}");
        }
    }

    #[test]
    fn urls_use_localhost_for_local_binds() {
        let local = Endpoint {
            host: "0.0.0.0".into(),
            port: 9000,
        };
        assert_eq!(
            local.url(Transport::StreamableHttp).as_deref(),
            Some("http://localhost:9000/mcp")
        );
        let remote = Endpoint {
            host: "10.1.2.3".into(),
            port: 8642,
        };
        assert_eq!(
            remote.url(Transport::Sse).as_deref(),
            Some("http://10.1.2.3:8642/sse")
        );
        assert_eq!(remote.url(Transport::Stdio), None);
    }
}
