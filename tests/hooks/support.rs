//! Running the real binary in a private environment, and reading its hook answers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

pub fn full_bin() -> &'static str {
    env!("CARGO_BIN_EXE_hooks-mcp-full")
}

/// The lean hook binary `init` registers; hook tests run it.
pub fn hook_bin() -> &'static str {
    env!("CARGO_BIN_EXE_hooks-mcp-hook")
}

/// A recorded payload from `tests/fixtures/hooks/<name>.json`.
pub fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/hooks")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A recorded or derived payload of another client, from
/// `tests/fixtures/hooks/clients/<name>.json` (`{"source": "where it comes from", "payload": …}`).
pub fn client_fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/hooks/clients")
        .join(format!("{name}.json"));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        file["source"].as_str().is_some_and(|s| !s.is_empty()),
        "{name}: every client fixture names its source"
    );
    file["payload"].clone()
}

/// A recorded payload for another session.
pub fn fixture_for(name: &str, session: &str) -> Value {
    let mut v = fixture(name);
    v["session_id"] = session.into();
    fresh_call_id(&mut v);
    v
}

/// A tool call's `tool_use_id` made new, as a client's is for each call: the store counts a
/// call reported twice (the same id) once.
pub fn fresh_call_id(payload: &mut Value) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    if payload.get("tool_use_id").is_some() {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        payload["tool_use_id"] = format!("toolu_test_{n}").into();
    }
}

/// A `PreToolUse` payload for a Bash command.
pub fn bash_call(session: &str, command: &str) -> Value {
    let mut v = fixture_for("pre_tool_use_bash", session);
    v["tool_input"]["command"] = command.into();
    v
}

/// Variables that would leak the developer's setup into a test.
const CLEARED: &[&str] = &[
    "HOOKS_MCP_CHANNELS",
    "HOOKS_MCP_SESSION_ID",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CONFIG_DIR",
    "HOOKS_MCP_CONDITIONS_GATE",
    "HOOKS_MCP_CONDITION_TIMEOUT_MS",
    "HOOKS_MCP_DATABASE_URL",
    "HOOKS_MCP_TOKEN",
    "HOOKS_MCP_TOKEN_FILE",
    "HOOKS_MCP_HOOK_FORWARD",
    "HOOKS_MCP_HOOK_HANDED_OVER",
    "HOOKS_MCP_FULL_BIN",
    "MCP_TRANSPORT",
    "MCP_HOST",
    "MCP_PORT",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "COPILOT_HOME",
    "HOOKS_MCP_VSCODE_USER_DIR",
];

/// `PATH` without the directories holding an agent client's command, so that `init` finds
/// only the clients a test sets up.
fn path_without_clients() -> std::ffi::OsString {
    const CLIENTS: &[&str] = &[
        "claude",
        "codex",
        "gemini",
        "copilot",
        "cursor",
        "cursor-agent",
        "code",
        "code-insiders",
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !CLIENTS.iter().any(|c| dir.join(c).exists()))
        .collect();
    std::env::join_paths(kept).unwrap_or(path)
}

/// One test's private world: a store directory and a home directory.
pub struct Env {
    pub dir: tempfile::TempDir,
    /// Variables every command of this environment gets (after the cleared ones).
    pub vars: Vec<(String, String)>,
}

/// What one hook run produced.
#[derive(Debug)]
pub struct HookRun {
    pub answer: Option<Value>,
    pub stderr: String,
}

impl HookRun {
    /// `hookSpecificOutput.additionalContext`, or "".
    pub fn context(&self) -> String {
        self.specific("additionalContext")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    }

    /// A field of `hookSpecificOutput`.
    pub fn specific(&self, key: &str) -> Option<&Value> {
        self.answer.as_ref()?.get("hookSpecificOutput")?.get(key)
    }
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Env {
            dir,
            vars: Vec::new(),
        }
    }

    /// Creates a one-shot schedule of `message` on `channel` and waits until it is due (it is
    /// set far enough ahead for a slow machine to create it in time).
    pub fn schedule_due_now(&self, channel: &str, message: &str) {
        let due_at = now_ms() + 1500;
        self.cli(&[
            "schedule",
            "create",
            channel,
            message,
            "--at",
            &store::to_rfc3339(due_at),
        ]);
        while now_ms() <= due_at {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The store directory.
    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// The test's `HOME`.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A command of the full binary in this environment.
    pub fn command(&self, args: &[&str]) -> Command {
        // Hook events run through the binary `init` registers; everything else through the
        // full binary.
        let bin = if args.first() == Some(&"hook") {
            hook_bin()
        } else {
            full_bin()
        };
        let mut c = self.command_of(bin);
        c.args(args);
        c
    }

    /// `bin` (no arguments yet) with this environment's store, home and cleared variables.
    pub fn command_of(&self, bin: &str) -> Command {
        let mut c = Command::new(bin);
        c.env("HOOKS_MCP_HOME", self.store_dir())
            .env("HOME", self.home())
            .env("PATH", path_without_clients());
        for k in CLEARED {
            c.env_remove(k);
        }
        c.envs(self.vars.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Runs the full binary with `stdin` and extra variables.
    pub fn run(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        let mut c = self.command(args);
        c.envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        // A hook for an event it does not handle may exit without reading its payload.
        if let Err(e) = written {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
        child.wait_with_output().unwrap()
    }

    /// Runs an operator subcommand; panics unless it succeeds; returns stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.run(args, "", &[]);
        assert!(
            out.status.success(),
            "hooks-mcp-full {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs an operator subcommand with `--json` and parses its answer.
    pub fn cli_json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_str(&self.cli(&args)).unwrap()
    }

    /// Runs `hook <event>` with `payload`; checks it exits 0 (a hook never fails the agent).
    pub fn hook(&self, event: &str, payload: &Value) -> HookRun {
        self.hook_with(event, &payload.to_string(), &[])
    }

    /// Runs `hook <event>` with raw stdin and extra variables.
    pub fn hook_with(&self, event: &str, stdin: &str, env: &[(&str, &str)]) -> HookRun {
        let out = self.run(&["hook", event], stdin, env);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "hook {event} must exit 0; stderr: {stderr}"
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let answer = if stdout.trim().is_empty() {
            None
        } else {
            Some(
                serde_json::from_str(&stdout)
                    .unwrap_or_else(|e| panic!("hook {event} printed non-JSON ({e}): {stdout}")),
            )
        };
        HookRun { answer, stderr }
    }

    /// Runs the hook binary with `args` (e.g. `hook --client codex PreToolUse`) and raw stdin;
    /// checks it exits 0.
    pub fn hook_args(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> HookRun {
        let out = self.run(args, stdin, env);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} must exit 0; stderr: {stderr}"
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let answer = (!stdout.trim().is_empty()).then(|| {
            serde_json::from_str(&stdout)
                .unwrap_or_else(|e| panic!("{args:?} printed non-JSON ({e}): {stdout}"))
        });
        HookRun { answer, stderr }
    }

    /// Runs `hook --client <client> <event>` with `payload`.
    pub fn client_hook(&self, client: &str, event: &str, payload: &Value) -> HookRun {
        self.hook_args(
            &["hook", "--client", client, event],
            &payload.to_string(),
            &[],
        )
    }

    /// Installs a condition through the `condition_set` tool of a real stdio server, with the
    /// gate switched off for that server.
    pub fn set_condition(&self, args: Value) {
        let answer = self.mcp_call(
            "condition_set",
            args,
            &[
                ("HOOKS_MCP_CONDITIONS_GATE", "off"),
                ("HOOKS_MCP_SESSION_ID", "operator"),
            ],
        );
        assert_eq!(
            answer["isError"],
            json!(false),
            "condition_set failed: {answer}"
        );
    }

    /// One `tools/call` through `hooks-mcp-full serve` on stdio; returns the call's result.
    pub fn mcp_call(&self, tool: &str, args: Value, env: &[(&str, &str)]) -> Value {
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "hooks-tests", "version": "1.0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}),
        ];
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let out = self.run(&["serve"], &input, env);
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["id"] == json!(2))
            .unwrap_or_else(|| {
                panic!(
                    "no answer to the tools/call: {stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })["result"]
            .clone()
    }
}

/// One HTTP/1.1 request on its own connection to 127.0.0.1:`port`, with exactly the headers
/// given (see `test_support::http::plain`): the status, the head (status line and headers) and
/// the body.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let reply = test_support::http::plain(
        test_support::http::loopback(port),
        method,
        path,
        headers,
        body,
    );
    (reply.status, reply.head, reply.body)
}

/// The wall clock in milliseconds, as the store counts time.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
