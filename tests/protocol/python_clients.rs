//! The official Python MCP SDK (`mcp` 2.3, a client of the `initialize` era) against the real
//! binaries: `tests/python-clients/run.py` drives `ClientSession` over stdio (`stdio_client`
//! spawns `hooks-mcp`) or Streamable HTTP (`streamable_http_client` against `hooks-mcp-full`
//! daemons on ephemeral loopback ports, with a bearer token), and prints what it observed as
//! one JSON object, which these tests assert on.
//!
//! Over HTTP the session meets what a fleet does to it: its daemon restarts (on the same port),
//! then a second daemon of the same PostgreSQL store answers its requests, then the session is
//! ended elsewhere. docs/deployment.md (legacy sessions) reports what the SDK does.
//!
//! The SDK is pinned with everything it pulls in in `tests/python-clients/requirements.txt`;
//! install it into `target/py-mcp` (`python3 -m venv target/py-mcp && target/py-mcp/bin/pip
//! install --no-deps -r tests/python-clients/requirements.txt`). Without it the tests fail and
//! say so.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use test_support::daemon::Daemon;
use test_support::pg;

use crate::support::{front_bin, full_bin};

/// How long one driver run may take (it gives up by itself after 90 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// The daemons' bearer token.
const TOKEN: &str = "python-client-tests-token-0123456789";
/// The channel the driver publishes to, and its resource.
const CHANNEL: &str = "python-client-tests";
const CHANNEL_URI: &str = "hooks://channels/python-client-tests";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The virtual environment's interpreter.
fn python() -> PathBuf {
    workspace().join("target/py-mcp/bin/python")
}

/// Checks once that the virtual environment holds every package at its pinned version; panics
/// saying how to install them otherwise.
fn require_sdk() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        let requirements = workspace().join("tests/python-clients/requirements.txt");
        let install = "python3 -m venv target/py-mcp && target/py-mcp/bin/pip install --no-deps \
                       -r tests/python-clients/requirements.txt";
        let check = "import sys\nfrom importlib import metadata\nfor line in open(sys.argv[1]):\n    \
                     line = line.split('#')[0].strip()\n    if not line: continue\n    \
                     name, pinned = line.split('==')\n    try: found = metadata.version(name)\n    \
                     except metadata.PackageNotFoundError: found = 'none'\n    \
                     if found != pinned: print(f'{name} {pinned} (found {found})')\n";
        let output = Command::new(python())
            .args(["-c", check])
            .arg(&requirements)
            .output()
            .map_err(|e| {
                format!(
                    "cannot run {} ({e}): install the pinned Python SDK: `{install}`",
                    python().display()
                )
            })?;
        let missing = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || !missing.trim().is_empty() {
            return Err(format!(
                "the pinned Python packages are not installed in target/py-mcp:\n{missing}{}\n\
                 run `{install}`",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(())
    });
    if let Err(message) = checked {
        panic!("{message}");
    }
}

/// What one driver run printed.
struct Observed {
    report: Value,
    status: ExitStatus,
    stderr: String,
}

impl Observed {
    /// A step's record (`ok`, then `value`, or `error` and perhaps `code`).
    fn record(&self, name: &str) -> &Value {
        &self.report["steps"][name]
    }

    /// A step's value; panics with the step's error (and the run's stderr) when it failed.
    fn step(&self, name: &str) -> &Value {
        let step = self.record(name);
        assert!(
            step["ok"] == Value::Bool(true),
            "{}: step `{name}` {}\nfailed steps: {}\nstderr:\n{}",
            self.report["transport"],
            match step["error"].as_str() {
                Some(error) => format!("failed: {error}"),
                None => "did not run".to_owned(),
            },
            self.report["failed"],
            self.stderr
        );
        &step["value"]
    }

    /// Asserts that no step failed but those observed as allowed to, and that the driver exited
    /// with success.
    fn all_passed(&self) {
        assert_eq!(
            self.report["failed"],
            Value::Array(Vec::new()),
            "failed steps: {}\nstderr:\n{}",
            self.report["steps"],
            self.stderr
        );
        assert!(
            self.status.success(),
            "the driver exited with {}:\n{}",
            self.status,
            self.stderr
        );
        assert_eq!(self.report["client"]["package"], "mcp");
        assert_eq!(self.report["client"]["version"], "2.3.0");
    }

    /// The recorded HTTP exchanges.
    fn wire(&self) -> &[Value] {
        self.report["wire"].as_array().unwrap()
    }
}

/// Runs `python run.py <args...>` with `env` (and PATH); whenever the driver pauses
/// (`{"pause": what}`), `on_pause(what)` runs and the driver is told to go on.
fn run(args: &[&str], env: &[(&str, &str)], on_pause: &mut dyn FnMut(&str)) -> Observed {
    require_sdk();
    let mut child = Command::new(python())
        .arg(workspace().join("tests/python-clients/run.py"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run the Python driver: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut printed = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(line) => {
                let pause = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v["pause"].as_str().map(str::to_owned));
                if let Some(what) = pause {
                    on_pause(&what);
                    stdin.write_all(b"go\n").unwrap();
                    stdin.flush().unwrap();
                }
                printed.push(line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() >= deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "run.py {args:?} did not finish within {RUN_TIMEOUT:?}; stderr:\n{}",
                        stderr.join().unwrap()
                    );
                }
            }
        }
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    let report = printed
        .iter()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("steps").is_some())
        .unwrap_or_else(|| {
            panic!(
                "run.py {args:?} printed no report ({status}); stdout:\n{}\nstderr:\n{stderr}",
                printed.join("\n")
            )
        });
    Observed {
        report,
        status,
        stderr,
    }
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text);
        text
    })
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// The messages of a `channel_read` answer, newest first.
fn messages(answer: &Value) -> Vec<&str> {
    answer["structuredContent"]["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages: {answer}"))
        .iter()
        .filter_map(|m| m["message"].as_str())
        .collect()
}

/// Asserts what `initialize` answered: the server, a 2025 revision, the resources capability.
fn initialized(observed: &Observed) {
    let init = observed.step("initialize");
    assert_eq!(init["serverInfo"]["name"], "hooks-mcp", "{init}");
    let version = init["protocolVersion"].as_str().unwrap_or_default();
    assert!(version.starts_with("2025-"), "negotiated {version:?}");
    assert!(init["capabilities"]["resources"].is_object(), "{init}");
}

#[test]
fn python_sdk_over_stdio_lists_calls_and_reads() {
    let home = tempfile::tempdir().unwrap();
    let observed = run(
        &["stdio", front_bin()],
        &[
            ("HOOKS_MCP_HOME", home.path().to_str().unwrap()),
            ("HOOKS_MCP_FULL_BIN", full_bin()),
            ("HOOKS_MCP_SESSION_ID", "python-client-tests"),
        ],
        &mut |what| panic!("the stdio run paused for {what}"),
    );
    observed.all_passed();
    assert_eq!(observed.report["transport"], "stdio");
    initialized(&observed);
    let tools = strings(observed.step("tools/list"));
    for tool in ["channel_publish", "channel_read", "schedule_create"] {
        assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
    }
    let published = &observed.step("channel_publish")["structuredContent"];
    assert_eq!(published["channel"], CHANNEL, "{published}");
    assert!(published["id"].is_u64(), "{published}");
    assert_eq!(
        messages(observed.step("channel_read")),
        ["published by the Python SDK over stdio"]
    );
    let resources = observed.step("resources/list");
    assert!(
        resources
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == CHANNEL_URI),
        "{resources}"
    );
    let read = observed.step("resources/read");
    assert_eq!(read["contents"][0]["uri"], CHANNEL_URI, "{read}");
    assert_eq!(
        read["value"]["messages"][0]["message"], "published by the Python SDK over stdio",
        "{read}"
    );
}

/// Starts `hooks-mcp-full serve` over Streamable HTTP on `port` (0: any) with the store at
/// `database_url`, its own home, and waits until it is ready.
fn daemon(home: &Path, database_url: &str, port: u16) -> Daemon {
    let mut command = Command::new(full_bin());
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("HOOKS_MCP_HOME", home)
        .env("HOOKS_MCP_DATABASE_URL", database_url)
        .env("HOOKS_MCP_DB_POOL_SIZE", "2")
        .env("MCP_TRANSPORT", "streamable-http")
        .env("MCP_HOST", "127.0.0.1")
        .env("MCP_PORT", port.to_string())
        .env("HOOKS_MCP_TOKEN", TOKEN)
        .env("HOOKS_MCP_LOG", "info,rmcp=warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let daemon = Daemon::spawn(command);
    daemon.wait_ready();
    daemon
}

#[test]
fn python_sdk_session_survives_a_restart_and_a_second_daemon_of_the_store() {
    let Some(db) = pg::Database::shared("python_clients") else {
        pg::note(&pg::no_server_note(
            "the Python SDK's legacy session across daemons was",
        ));
        return;
    };
    let url = db.url();
    let homes: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut first = Some(daemon(homes[0].path(), &url, 0));
    let second = daemon(homes[1].path(), &url, 0);
    let port = first.as_ref().unwrap().port();
    let mut logs = String::new();
    let mut observed = run(
        &[
            "http",
            &first.as_ref().unwrap().url("/mcp"),
            &second.url("/mcp"),
        ],
        &[("HOOKS_MCP_TOKEN", TOKEN)],
        &mut |what| {
            assert_eq!(what, "restart");
            // A graceful restart on the same port, as a supervisor does it.
            let old = first.take().unwrap();
            old.signal("TERM");
            assert!(old.wait_exit().success(), "{}", old.text());
            logs.push_str(&old.text());
            drop(old);
            first = Some(daemon(homes[0].path(), &url, port));
        },
    );
    for (name, daemon) in [("first", first.as_ref().unwrap()), ("second", &second)] {
        observed.stderr.push_str(&format!(
            "\n--- the {name} daemon's log:\n{}",
            daemon.text()
        ));
    }
    observed.stderr.push_str("\n--- before its restart:\n");
    observed.stderr.push_str(&logs);
    observed.all_passed();
    initialized(&observed);

    // One session throughout: the id the first daemon gave at `initialize` is the one every
    // later POST carries, on the restarted daemon and on the second, and no answer names
    // another; the SDK never initialized again.
    let wire = observed.wire();
    let init = wire
        .iter()
        .position(|e| e["rpc"] == "initialize")
        .unwrap_or_else(|| panic!("no initialize on the wire: {wire:?}"));
    let session = wire[init]["sessionReceived"]
        .as_str()
        .unwrap_or_else(|| panic!("initialize answered no session id: {:?}", wire[init]));
    assert_eq!(
        wire.iter().filter(|e| e["rpc"] == "initialize").count(),
        1,
        "the SDK initialized again: {wire:?}"
    );
    for exchange in &wire[init + 1..] {
        if exchange["http"] == "POST" {
            assert_eq!(exchange["sessionSent"], session, "{exchange}");
        }
        if let Some(other) = exchange["sessionReceived"].as_str() {
            assert_eq!(other, session, "{exchange}");
        }
    }

    for step in ["call before the restart", "call after the restart"] {
        let published = &observed.step(step)["structuredContent"];
        assert_eq!(published["channel"], CHANNEL, "{step}: {published}");
    }
    let calls: Vec<&Value> = wire.iter().filter(|e| e["rpc"] == "tools/call").collect();
    assert_eq!(calls[0]["daemon"], "first");
    assert_eq!(calls[1]["daemon"], "first");
    assert_eq!(calls[2]["daemon"], "second", "{wire:?}");
    for call in &calls[..3] {
        assert_eq!(call["status"], 200, "{call}");
    }
    // The SDK reopened its GET stream on the restarted daemon by itself, in the same session.
    let gets = observed.step("GET stream reopened").as_array().unwrap();
    let reopened = gets.last().unwrap();
    assert_eq!(reopened["daemon"], "first", "{gets:?}");
    assert_eq!(reopened["status"], 200, "{gets:?}");
    // The second daemon read both publications in the session the first one opened.
    assert_eq!(
        messages(observed.step("call on the second daemon")),
        ["after the restart", "before the restart"]
    );
    let tools = strings(observed.step("tools/list on the second daemon"));
    assert!(tools.contains(&"channel_publish"), "{tools:?}");

    // Ended elsewhere: the SDK reports each later call as failed and does not initialize again
    // (asserted above), keeping the dead session id (asserted above too).
    let deleted = observed.step("DELETE from elsewhere");
    assert!(
        deleted == 200 || deleted == 204,
        "DELETE answered {deleted}"
    );
    for step in [
        "call after the session ended",
        "second call after the session ended",
    ] {
        let record = observed.record(step);
        assert_eq!(record["ok"], false, "{step} succeeded: {record}");
        assert_eq!(record["code"], -32600, "{step}: {record}");
    }
    let after: Vec<&Value> = calls[3..].to_vec();
    assert_eq!(after.len(), 2, "{wire:?}");
    for call in after {
        assert_eq!(call["status"], 404, "{call}");
    }
}
