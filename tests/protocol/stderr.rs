//! Diagnostics never take a process down: every binary keeps serving with its stderr closed
//! (a launcher that discards it), at every log level.

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::http::try_http;
use test_support::mcp::MCP_POST;

use crate::support::{INIT, INITIALIZED, LINE_TIMEOUT, call, front_bin, full_bin, pump, request};

const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

/// Spawns `command` with stdin and stdout piped and the read end of its stderr pipe closed at
/// once: every write the process makes to stderr fails with a broken pipe.
fn spawn_with_stderr_closed(command: &mut Command) -> Child {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    child
}

#[test]
fn the_stdio_server_answers_and_hands_off_with_stderr_closed_at_every_log_level() {
    for level in LEVELS {
        let home = tempfile::tempdir().unwrap();
        let mut child = spawn_with_stderr_closed(
            Command::new(front_bin())
                .env("HOOKS_MCP_HOME", home.path())
                .env("HOOKS_MCP_LOG", level),
        );
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let rx = pump(stdout);
        let lines = [
            INIT.to_owned(),
            INITIALIZED.to_owned(),
            request(2, "tools/list", json!({})),
            // Not JSON: answered with a parse error (and logged on the closed stderr).
            "{not json".to_owned(),
            call(
                3,
                "channel_publish",
                json!({"channel": "ops", "message": "hi"}),
            ),
        ];
        let mut replies: Vec<Value> = Vec::new();
        let mut exchange = |lines: &[String], expect: usize, replies: &mut Vec<Value>| {
            for line in lines {
                writeln!(stdin, "{line}").unwrap();
            }
            stdin.flush().unwrap();
            while replies.len() < expect {
                let line = rx
                    .recv_timeout(LINE_TIMEOUT)
                    .unwrap_or_else(|_| panic!("HOOKS_MCP_LOG={level}: only {replies:?}"));
                replies.push(serde_json::from_str(&line).unwrap());
            }
        };
        exchange(&lines, 4, &mut replies);
        // After the publish has answered (the full server runs requests concurrently).
        exchange(&[call(4, "channel_list", json!({}))], 5, &mut replies);
        let by_id = |id: Value| {
            replies
                .iter()
                .find(|r| r["id"] == id)
                .unwrap_or_else(|| panic!("HOOKS_MCP_LOG={level}: no reply {id} in {replies:?}"))
        };
        assert!(by_id(json!(1))["result"]["serverInfo"].is_object());
        assert!(by_id(json!(2))["result"]["tools"].is_array());
        assert_eq!(by_id(Value::Null)["error"]["code"], json!(-32700));
        assert_eq!(
            by_id(json!(3))["result"]["isError"],
            json!(false),
            "{replies:?}"
        );
        let listing = by_id(json!(4))["result"].to_string();
        assert!(listing.contains("ops"), "HOOKS_MCP_LOG={level}: {listing}");
        drop(stdin);
        let status = wait(&mut child);
        assert!(status.success(), "HOOKS_MCP_LOG={level}: exit {status}");
    }
}

#[test]
fn the_hook_exits_cleanly_with_stderr_closed() {
    let hook = env!("CARGO_BIN_EXE_hooks-mcp-hook");
    for level in LEVELS {
        let home = tempfile::tempdir().unwrap();
        // A malformed payload and an unknown event: both are reported on stderr only.
        for (event, payload) in [("PreToolUse", "{not json"), ("NoSuchEvent", "{}")] {
            let mut child = spawn_with_stderr_closed(
                Command::new(hook)
                    .args(["hook", event])
                    .env("HOOKS_MCP_HOME", home.path())
                    .env("HOOKS_MCP_LOG", level),
            );
            let mut stdin = child.stdin.take().unwrap();
            // The hook may exit before reading an unknown event's payload.
            let _ = stdin.write_all(payload.as_bytes());
            drop(stdin);
            let status = wait(&mut child);
            assert!(status.success(), "{event} at {level}: exit {status}");
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One Streamable HTTP POST to `/mcp` (in `session` when given): the status and the whole
/// response (head and body) as text.
fn post(addr: SocketAddr, session: Option<&str>, body: &str) -> Option<(u16, String)> {
    let mut headers = MCP_POST.to_vec();
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    let reply = try_http(addr, "POST", "/mcp", &headers, body)?;
    Some((
        reply.status,
        format!("{}\r\n\r\n{}", reply.head, reply.body),
    ))
}

/// The status of `GET /health`, or `None` when the daemon does not answer.
fn health(addr: SocketAddr) -> Option<u16> {
    try_http(addr, "GET", "/health", &[], "").map(|reply| reply.status)
}

#[test]
fn the_daemon_serves_tool_calls_with_stderr_closed_at_every_log_level() {
    for level in ["info", "debug", "trace"] {
        let home = tempfile::tempdir().unwrap();
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut child = spawn_with_stderr_closed(
            Command::new(full_bin())
                .arg("serve")
                .env("HOOKS_MCP_HOME", home.path())
                .env("HOOKS_MCP_LOG", level)
                .env("MCP_TRANSPORT", "streamable-http")
                .env("MCP_HOST", "127.0.0.1")
                .env("MCP_PORT", port.to_string()),
        );
        let deadline = Instant::now() + LINE_TIMEOUT;
        while health(addr) != Some(200) {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("HOOKS_MCP_LOG={level}: the daemon exited before it was ready: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "HOOKS_MCP_LOG={level}: never ready"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
        let (status, raw) = post(addr, None, INIT).unwrap();
        assert_eq!(status, 200, "{raw}");
        let session = raw
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_owned())
            })
            .unwrap();
        let (status, _) = post(addr, Some(&session), INITIALIZED).unwrap();
        assert_eq!(status, 202);
        let publish = call(
            2,
            "channel_publish",
            json!({"channel": "ops", "message": "hi"}),
        );
        let (status, raw) = post(addr, Some(&session), &publish).unwrap();
        assert_eq!(status, 200, "{raw}");
        assert!(
            raw.contains(r#""isError":false"#),
            "HOOKS_MCP_LOG={level}: {raw}"
        );
        assert_eq!(
            child.try_wait().unwrap(),
            None,
            "HOOKS_MCP_LOG={level}: the daemon died"
        );
        // A clean shutdown logs too.
        let killed = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = wait(&mut child);
        assert!(status.success(), "HOOKS_MCP_LOG={level}: exit {status}");
    }
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + LINE_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
