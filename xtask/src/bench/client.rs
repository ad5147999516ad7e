//! A JSON-RPC client driving one server process over real pipes.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::util::procfs::ProcSample;

/// How long one response may take before the benchmark gives up.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// The `initialize` request every benchmark sends (id 1).
pub(crate) const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"hooks-mcp-bench","version":"1.0"}}}"#;
/// The notification that completes the handshake.
pub(crate) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// A request line.
pub(crate) fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A `tools/call` request line.
pub(crate) fn tool_call(id: u64, tool: &str, arguments: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// One server process over pipes. Killed when dropped.
#[derive(Debug)]
pub(crate) struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// Just before the spawn.
    pub(crate) started: Instant,
}

impl Proc {
    /// Starts `program args` with a clean environment: `PATH`, `HOOKS_MCP_HOME=home`,
    /// `HOOKS_MCP_FULL_BIN=full_bin` and a session id.
    pub(crate) fn spawn(
        program: &Path,
        args: &[&str],
        home: &Path,
        full_bin: &Path,
    ) -> anyhow::Result<Proc> {
        Proc::spawn_with(program, args, home, full_bin, &[])
    }

    /// [`Proc::spawn`] with `env` added to that environment.
    pub(crate) fn spawn_with(
        program: &Path,
        args: &[&str],
        home: &Path,
        full_bin: &Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Proc> {
        let mut command = Command::new(program);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOOKS_MCP_HOME", home)
            .env("HOOKS_MCP_FULL_BIN", full_bin)
            .env("HOOKS_MCP_SESSION_ID", "bench-session")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let stderr_pipe = child.stderr.take().context("no stderr pipe")?;
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut text = String::new();
            let mut pipe = stderr_pipe;
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
                if let Ok(mut shared) = sink.lock() {
                    shared.clone_from(&text);
                }
            }
        });
        Ok(Proc {
            child,
            stdin,
            lines,
            stderr,
            started,
        })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The program the process runs now (`/proc/PID/comm`): the front end, or the full server
    /// it handed the session to.
    pub(crate) fn program(&self) -> anyhow::Result<String> {
        std::fs::read_to_string(format!("/proc/{}/comm", self.pid()))
            .map(|s| s.trim().to_owned())
            .with_context(|| format!("reading /proc/{}/comm", self.pid()))
    }

    /// Writes one line (a newline is added).
    pub(crate) fn send(&mut self, line: &str) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("stdin is closed")?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .with_context(|| format!("writing to the server: {}", self.stderr_text()))
    }

    /// The next response line, parsed.
    pub(crate) fn recv(&mut self) -> anyhow::Result<Value> {
        let line = match self.lines.recv_timeout(RESPONSE_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                bail!(
                    "no response within {RESPONSE_TIMEOUT:?}; stderr: {}",
                    self.stderr_text()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                bail!("the server closed stdout; stderr: {}", self.stderr_text())
            }
        };
        serde_json::from_str(&line).with_context(|| format!("the server sent bad JSON: {line}"))
    }

    /// Sends a request and waits for its response: the result (an error response, or a tool
    /// result with `isError: true`, is a failure) and the time from send to response.
    pub(crate) fn ask(&mut self, line: &str) -> anyhow::Result<(Value, Duration)> {
        let id = serde_json::from_str::<Value>(line)
            .context("a benchmark request is not JSON")?
            .get("id")
            .cloned()
            .unwrap_or(Value::Null);
        let sent = Instant::now();
        self.send(line)?;
        let response = self.recv()?;
        let elapsed = sent.elapsed();
        if response.get("id") != Some(&id) {
            bail!("expected the response to request {id}, got {response}");
        }
        let Some(result) = response.get("result") else {
            bail!("request {id} failed: {response}");
        };
        if result.get("isError") == Some(&Value::Bool(true)) {
            bail!("tool call {id} returned an error: {result}");
        }
        Ok((result.clone(), elapsed))
    }

    /// Memory, threads and descriptors of the process now.
    pub(crate) fn sample(&self) -> anyhow::Result<ProcSample> {
        ProcSample::take(self.pid())
    }

    /// What the process wrote to stderr so far.
    pub(crate) fn stderr_text(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Programs with how many sessions ran each, in first-seen order (`hooks-mcp ×20`).
pub(crate) fn program_counts<'a>(programs: impl IntoIterator<Item = &'a str>) -> String {
    let mut names: Vec<(&str, usize)> = Vec::new();
    for program in programs {
        match names.iter_mut().find(|(n, _)| *n == program) {
            Some((_, count)) => *count += 1,
            None => names.push((program, 1)),
        }
    }
    names
        .iter()
        .map(|(n, c)| format!("{n} ×{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}
