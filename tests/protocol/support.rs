//! A client that drives the real `hooks-mcp` binary over real pipes.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any single expected line may take (generous: CI machines are slow and shared).
pub const LINE_TIMEOUT: Duration = Duration::from_secs(20);

pub fn front_bin() -> &'static str {
    env!("CARGO_BIN_EXE_hooks-mcp")
}

pub fn full_bin() -> &'static str {
    env!("CARGO_BIN_EXE_hooks-mcp-full")
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"protocol-tests","version":"1.0"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

pub fn init_with_id(id: &Value) -> String {
    let mut v: Value = serde_json::from_str(INIT).unwrap();
    v["id"] = id.clone();
    v.to_string()
}

pub fn request(id: impl Into<Value>, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

pub fn call(id: impl Into<Value>, tool: &str, args: Value) -> String {
    request(id, "tools/call", json!({"name": tool, "arguments": args}))
}

/// One server process with its own store directory.
pub struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Receiver<String>,
    pub home: tempfile::TempDir,
}

pub struct Options<'a> {
    pub bin: &'a str,
    pub args: &'a [&'a str],
    pub env: Vec<(&'a str, String)>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            bin: front_bin(),
            args: &[],
            env: Vec::new(),
        }
    }
}

impl Server {
    pub fn start() -> Server {
        Server::with(Options::default())
    }

    pub fn with_env(env: &[(&str, &str)]) -> Server {
        Server::with(Options {
            env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            ..Options::default()
        })
    }

    pub fn with(options: Options<'_>) -> Server {
        let home = tempfile::tempdir().unwrap();
        let mut command = Command::new(options.bin);
        command
            .args(options.args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOOKS_MCP_HOME", home.path())
            .env("HOOKS_MCP_FULL_BIN", full_bin())
            .env("HOOKS_MCP_SESSION_ID", "test-session")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &options.env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = pump(child.stdout.take().unwrap());
        let stderr = pump(child.stderr.take().unwrap());
        Server {
            child,
            stdin,
            lines,
            stderr,
            home,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next response line, parsed.
    pub fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(LINE_TIMEOUT)
            .unwrap_or_else(|_| panic!("no response line; stderr: {}", self.stderr_text()));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
    }

    /// The next line within `limit`, parsed; `None` when none came.
    pub fn recv_within(&mut self, limit: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(limit).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}")))
    }

    /// The next raw response line.
    pub fn recv_line(&mut self) -> String {
        self.lines
            .recv_timeout(LINE_TIMEOUT)
            .expect("no response line")
    }

    /// Sends a request and returns its response (skipping server notifications), checking the id.
    pub fn ask(&mut self, line: &str) -> Value {
        let id = serde_json::from_str::<Value>(line).unwrap()["id"].clone();
        self.send(line);
        // Server notifications (tools/list_changed...) may come first: skip them.
        let mut response = self.recv();
        while response.get("id").is_none() && response.get("method").is_some() {
            response = self.recv();
        }
        assert_eq!(
            response["id"], id,
            "response to the wrong request: {response}"
        );
        response
    }

    pub fn handshake(&mut self) -> Value {
        let response = self.ask(INIT);
        self.send(INITIALIZED);
        response
    }

    /// Closes stdin and returns the exit status and every remaining stdout line.
    pub fn finish(mut self) -> (ExitStatus, Vec<Value>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(LINE_TIMEOUT) {
            rest.push(serde_json::from_str(&line).unwrap());
        }
        let status = wait(&mut self.child);
        (status, rest)
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr_text(&self) -> String {
        let mut text = String::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_millis(200)) {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    pub fn threads(&self) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .map(|n| n.trim().parse().unwrap())
            .unwrap()
    }

    /// The process's CPU time so far (user and system), in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        // Fields after the command's closing parenthesis; utime and stime are the 14th and 15th.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// Paths of the process's open files.
    pub fn open_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .collect()
    }

    pub fn store_path(&self) -> PathBuf {
        self.home.path().join("state.db")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait(child: &mut Child) -> ExitStatus {
    exits_within(child, LINE_TIMEOUT)
}

/// Waits for `child` to exit within `limit`, else kills it and fails.
pub fn exits_within(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the server did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `hooks-mcp` with nothing of this environment but `PATH`, its store in `home`, the full
/// binary beside the test's, a session id, and stdin, stdout and stderr as given.
pub fn front_command(home: &Path, stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Command {
    let mut command = Command::new(front_bin());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOOKS_MCP_HOME", home)
        .env("HOOKS_MCP_FULL_BIN", full_bin())
        .env("HOOKS_MCP_SESSION_ID", "test-session")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr);
    command
}

/// The lines `stream` gives, read on a thread of their own, as they come.
pub fn pump(stream: impl Read + Send + 'static) -> Receiver<String> {
    let (sender, receiver) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// Runs a command to completion with stdin closed, returning status, stdout and stderr.
pub fn run_to_end(bin: &str, env: &[(&str, &str)], input: &[u8]) -> (ExitStatus, String, String) {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOOKS_MCP_HOME", home.path())
        .env("HOOKS_MCP_FULL_BIN", full_bin())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The process may exit before reading everything (that is what some tests check).
    let _ = child.stdin.take().unwrap().write_all(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn is_store(path: &Path) -> bool {
    path.to_string_lossy().contains("state.db")
}

pub fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}
