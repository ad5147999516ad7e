//! Initialize, ping, notifications and discovery on the light path.

use serde_json::{Value, json};

use crate::support::*;

#[test]
fn initialize_with_numeric_and_string_ids() {
    for id in [json!(0), json!(12345), json!("init-α"), json!("1")] {
        let mut s = Server::start();
        let r = s.ask(&init_with_id(&id));
        assert_eq!(r["id"], id);
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(r["result"]["serverInfo"]["name"], "hooks-mcp");
        assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
    }
}

#[test]
fn protocol_versions_are_negotiated_like_the_full_server() {
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let line = INIT.replace("2025-11-25", asked);
        let mut light = Server::start();
        let mut full = Server::with(Options {
            bin: full_bin(),
            ..Options::default()
        });
        let a = light.ask(&line);
        let b = full.ask(&line);
        assert_eq!(a["result"]["protocolVersion"], answered, "{asked}");
        assert_eq!(a, b, "light and full initialize differ for {asked}");
    }
}

#[test]
fn notification_gets_no_response_and_ping_works_before_and_after_initialize() {
    let mut s = Server::start();
    assert_eq!(s.ask(&request(7, "ping", json!({})))["result"], json!({}));
    s.handshake();
    // The notification sent by handshake() must not have produced a line: the next line
    // answers the next request.
    assert_eq!(s.ask(&request("p", "ping", json!({})))["result"], json!({}));
}

#[test]
fn channel_template_empty_resource_and_prompt_lists() {
    let mut s = Server::start();
    s.handshake();
    assert_eq!(
        s.ask(&request(3, "resources/templates/list", json!({})))["result"]["resourceTemplates"][0]
            ["uriTemplate"],
        "hooks://channels/{channel}"
    );
    // Listing needs the store: the full server answers it (no channel has messages yet).
    assert_eq!(
        s.ask(&request(2, "resources/list", json!({})))["result"],
        json!({"resources": []})
    );
    assert_eq!(
        s.ask(&request(4, "prompts/list", json!({})))["result"],
        json!({"prompts": []})
    );
}

fn list_and_stderr(env: &[(&str, &str)]) -> (Vec<String>, String) {
    let mut s = Server::with_env(env);
    s.handshake();
    let names = tool_names(&s.ask(&request(2, "tools/list", json!({}))));
    let stderr = s.stderr_text();
    (names, stderr)
}

#[test]
fn tools_list_follows_the_filters() {
    let (all, _) = list_and_stderr(&[]);
    assert!(
        all.len() >= 15,
        "expected every category's tools, got {all:?}"
    );
    for prefix in ["channel_", "condition_", "enforcement_", "schedule_"] {
        assert!(
            all.iter().any(|n| n.starts_with(prefix)),
            "no {prefix}* tool in {all:?}"
        );
    }

    let (channels, _) = list_and_stderr(&[("MCP_CATEGORIES", "channels")]);
    assert!(!channels.is_empty() && channels.iter().all(|n| n.starts_with("channel_")));

    let (two, _) = list_and_stderr(&[("MCP_CATEGORIES", " Scheduler , ENFORCEMENT ")]);
    assert!(
        two.iter()
            .all(|n| n.starts_with("schedule_") || n.starts_with("enforcement_"))
    );
    assert!(two.iter().any(|n| n.starts_with("schedule_")));

    let (one, _) = list_and_stderr(&[
        ("MCP_CATEGORIES", "channels"),
        ("ALLOWED_TOOLS", "CHANNEL_LIST, channel_read"),
    ]);
    assert_eq!(one, ["channel_list", "channel_read"]);

    let (blank, _) = list_and_stderr(&[("ALLOWED_TOOLS", "  ")]);
    assert_eq!(blank, all, "a blank allowlist permits every tool");
}

#[test]
fn filter_problems_warn_on_stderr() {
    let (names, stderr) = list_and_stderr(&[("MCP_CATEGORIES", "channels,nope")]);
    assert!(names.iter().all(|n| n.starts_with("channel_")));
    assert!(
        stderr.contains("unknown category `nope`"),
        "stderr: {stderr}"
    );

    let (names, stderr) = list_and_stderr(&[
        ("MCP_CATEGORIES", "channels"),
        ("ALLOWED_TOOLS", "schedule_list"),
    ]);
    assert!(
        names.is_empty(),
        "an allowlist must not add an excluded category's tool"
    );
    assert!(stderr.contains("zero tools"), "stderr: {stderr}");
    assert!(stderr.contains("schedule_list"), "stderr: {stderr}");
}

#[test]
fn tools_list_is_byte_identical_on_both_paths() {
    for env in [vec![], vec![("MCP_CATEGORIES", "channels,scheduler")]] {
        let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut lines = Vec::new();
        for bin in [front_bin(), full_bin()] {
            let mut s = Server::with(Options {
                bin,
                env: env.clone(),
                ..Options::default()
            });
            s.send(INIT);
            let init = s.recv_line();
            s.send(INITIALIZED);
            s.send(&request(2, "tools/list", json!({})));
            let list = s.recv_line();
            lines.push((init, list));
        }
        assert_eq!(lines[0].0, lines[1].0, "initialize responses differ");
        assert_eq!(lines[0].1, lines[1].1, "tools/list responses differ");
        let list: Value = serde_json::from_str(&lines[0].1).unwrap();
        for tool in list["result"]["tools"].as_array().unwrap() {
            assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        }
    }
}
