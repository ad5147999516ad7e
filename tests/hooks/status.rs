//! `status`: exit 0 running and matching, 1 stopped, 2 diverged, with the divergences named.

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::Value;

use crate::support::Env;

fn status(env: &Env, vars: &[(&str, &str)]) -> (i32, Value) {
    let out = env.run(&["status", "--json"], "", vars);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().unwrap(), report)
}

fn divergences(report: &Value) -> String {
    report["divergences"].to_string()
}

/// A port nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A stand-in daemon answering every request with `/health`'s 200.
fn fake_daemon() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // Read the whole request head (it may arrive in several writes), then answer.
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"ok\"}",
            );
        }
    });
    port
}

#[test]
fn status_reports_each_state_and_every_divergence() {
    let env = Env::new();
    let port = free_port().to_string();
    let stdio = [("MCP_HOST", "127.0.0.1"), ("MCP_PORT", port.as_str())];

    // Nothing registered: diverged, naming the server and each hook.
    let (code, report) = status(&env, &stdio);
    assert_eq!(code, 2, "{report}");
    let text = divergences(&report);
    assert!(text.contains("declares no `mcpServers.hooks`"), "{text}");
    assert!(text.contains("no hooks-mcp hook for PreToolUse"), "{text}");

    // Registered for stdio: matching, no daemon needed.
    env.cli(&["init"]);
    let (code, report) = status(&env, &stdio);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["daemon"]["up"], Value::Bool(false));

    // Configured for streamable HTTP while the client still uses stdio: diverged.
    let http = [
        ("MCP_TRANSPORT", "streamable-http"),
        ("MCP_HOST", "127.0.0.1"),
        ("MCP_PORT", port.as_str()),
    ];
    let (code, report) = status(&env, &http);
    assert_eq!(code, 2, "{report}");
    assert!(
        divergences(&report).contains("the client uses stdio but MCP_TRANSPORT is streamable-http")
    );

    // Registered for it, daemon not running: stopped.
    let out = env.run(&["init", "--transport", "streamable-http"], "", &http);
    assert!(out.status.success());
    let (code, report) = status(&env, &http);
    assert_eq!(code, 1, "{report}");
    assert_eq!(divergences(&report), "[]");

    // A daemon answering on that port: running and matching.
    let daemon_port = fake_daemon().to_string();
    let running = [
        ("MCP_TRANSPORT", "streamable-http"),
        ("MCP_HOST", "127.0.0.1"),
        ("MCP_PORT", daemon_port.as_str()),
    ];
    let out = env.run(&["init", "--transport", "streamable-http"], "", &running);
    assert!(out.status.success());
    let (code, report) = status(&env, &running);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["daemon"]["health_status"], Value::from(200));
    assert_eq!(
        report["daemon"]["console"],
        Value::from(format!("http://localhost:{daemon_port}/console/")),
        "the console's address is shown while a daemon runs"
    );

    // The client points at another port than the daemon's: diverged.
    let (code, report) = status(&env, &http);
    assert_eq!(code, 2, "{report}");
    assert!(
        divergences(&report).contains(&format!("connects to `http://localhost:{daemon_port}/mcp`")),
        "{report}"
    );

    // A hook removed by hand: diverged, naming the event.
    let settings_path = env.home().join(".claude/settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    settings["hooks"]
        .as_object_mut()
        .unwrap()
        .remove("PostToolUse");
    std::fs::write(&settings_path, settings.to_string()).unwrap();
    let (code, report) = status(&env, &running);
    assert_eq!(code, 2, "{report}");
    assert!(
        divergences(&report).contains("no hooks-mcp hook for PostToolUse"),
        "{report}"
    );

    // The text report names the same things.
    let out = env.run(&["status"], "", &running);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("configured:  streamable-http at http://localhost:"),
        "{text}"
    );
    assert!(text.contains("divergences:\n  - "), "{text}");
}

#[test]
fn status_checks_http_hooks_against_the_daemon() {
    let env = Env::new();
    let port = fake_daemon().to_string();
    let here = [("MCP_HOST", "127.0.0.1"), ("MCP_PORT", port.as_str())];
    let out = env.run(&["init", "--hooks", "http"], "", &here);
    assert!(out.status.success());
    let (code, report) = status(&env, &here);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["client"]["hooks"]["PreToolUse"][0],
        format!("POST http://localhost:{port}/hooks/PreToolUse")
    );

    // The daemon stopped: HTTP hooks need it even with a stdio server.
    let stopped = free_port().to_string();
    let (code, report) = status(&env, &[("MCP_HOST", "127.0.0.1"), ("MCP_PORT", &stopped)]);
    assert_eq!(code, 2, "{report}");
    let text = divergences(&report);
    assert!(text.contains("the daemon is configured at"), "{text}");

    // Registered for this port, daemon gone: stopped.
    let settings = env.home().join(".claude/settings.json");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ] {
        let hook = &mut doc["hooks"][event][0]["hooks"][0];
        hook["url"] = format!("http://localhost:{stopped}/hooks/{event}").into();
    }
    doc["hooks"]["PostToolUse"][0]["hooks"][0]["headers"] = serde_json::json!({});
    std::fs::write(&settings, doc.to_string()).unwrap();
    let (code, report) = status(&env, &[("MCP_HOST", "127.0.0.1"), ("MCP_PORT", &stopped)]);
    assert_eq!(code, 2, "{report}");
    let text = divergences(&report);
    assert!(
        text.contains("PostToolUse hook does not send the daemon's token"),
        "{text}"
    );
    assert!(!text.contains("configured at"), "{text}");
    assert_eq!(report["daemon"]["up"], false, "{report}");
}
