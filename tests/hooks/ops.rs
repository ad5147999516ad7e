//! The operator subcommands: the tools' handlers behind a command line, with the tools'
//! validation, text for people and `--json`.

use serde_json::{Value, json};

use crate::support::{Env, bash_call, fixture_for};

fn fails(env: &Env, args: &[&str], says: &str) {
    fails_with(env, args, says, 1);
}

/// A usage error: the command line names its flags, refused before any store is opened.
fn misused(env: &Env, args: &[&str], says: &str) {
    fails_with(env, args, says, 2);
}

fn fails_with(env: &Env, args: &[&str], says: &str, code: i32) {
    let out = env.run(args, "", &[]);
    assert_eq!(out.status.code(), Some(code), "{args:?} should fail");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(says), "{args:?}: {stderr}");
}

#[test]
fn channel_commands_round_trip() {
    let env = Env::new();
    let text = env.cli(&[
        "channel",
        "publish",
        "deploys",
        "db is down",
        "--severity",
        "alert",
    ]);
    assert!(
        text.starts_with("published #1 on deploys (alert), expires "),
        "{text}"
    );
    let list = env.cli_json(&["channel", "list"]);
    assert_eq!(list["channels"][0]["channel"], json!("deploys"));
    assert_eq!(list["total_active"], json!(1));

    let read = env.cli_json(&["channel", "read", "--session-id", "s1"]);
    assert_eq!(read["messages"][0]["message"], json!("db is down"));
    assert_eq!(read["messages"][0]["acknowledged"], json!(false));
    let text = env.cli(&["channel", "ack", "1", "--session-id", "s1"]);
    assert_eq!(text.trim(), "acknowledged #1 for session s1");
    let text = env.cli(&[
        "channel",
        "read",
        "--session-id",
        "s1",
        "--include-acknowledged",
    ]);
    assert!(
        text.contains("#1 [alert] deploys") && text.contains("(acknowledged)"),
        "{text}"
    );

    let text = env.cli(&["channel", "clear", "--channel", "deploys"]);
    assert_eq!(text.trim(), "removed 1 message(s)");
    assert_eq!(
        env.cli(&["channel", "list"]).trim(),
        "no channel has unexpired messages"
    );
}

/// Operators type `hooks-mcp channel …`: the front end hands subcommands to the full binary,
/// whose usage lines then name the command typed; an argument that is not UTF-8 is refused in
/// words (it was a panic).
#[test]
fn the_front_end_names_itself_in_usage_and_refuses_arguments_that_are_not_text() {
    use std::os::unix::ffi::OsStrExt;

    let env = Env::new();
    let out = env
        .command_of(env!("CARGO_BIN_EXE_hooks-mcp"))
        .args(["channel", "clear"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Usage: hooks-mcp channel clear"),
        "{stderr}"
    );
    let out = env
        .command_of(env!("CARGO_BIN_EXE_hooks-mcp"))
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        version.trim(),
        format!("hooks-mcp {}", env!("CARGO_PKG_VERSION"))
    );

    let out = env
        .command_of(env!("CARGO_BIN_EXE_hooks-mcp"))
        .args(["channel".as_ref(), std::ffi::OsStr::from_bytes(b"list\xff")])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not valid UTF-8") && !stderr.contains("panicked"),
        "{stderr}"
    );
    assert!(
        !env.store_dir().join("state.db").exists(),
        "no store for a usage error"
    );
}

#[test]
fn the_cli_validates_exactly_like_the_tools() {
    let env = Env::new();
    // Which arguments go together is the command line's to say, in its flags' names.
    misused(
        &env,
        &["channel", "clear"],
        "<--channel <CHANNEL>|--id <MESSAGE_ID>>",
    );
    misused(
        &env,
        &["channel", "clear", "--channel", "a", "--id", "3"],
        "cannot be used with",
    );
    misused(
        &env,
        &["enforcement", "clear"],
        "<--id <ENFORCEMENT_ID>|--tag <TAG>>",
    );
    misused(&env, &["schedule", "create", "ops", "x"], "--every-seconds");
    misused(
        &env,
        &[
            "schedule",
            "create",
            "ops",
            "x",
            "--at",
            "2030-01-01T00:00:00Z",
            "--cron",
            "* * * * *",
        ],
        "cannot be used with",
    );
    assert!(
        !env.store_dir().join("state.db").exists(),
        "no store for a usage error"
    );
    fails(
        &env,
        &["channel", "publish", "bad name", "x"],
        "channel: may contain only",
    );
    fails(
        &env,
        &["channel", "publish", "ops", "x", "--severity", "loud"],
        "severity",
    );
    fails(
        &env,
        &["channel", "publish", "ops", "x", "--ttl-seconds", "0"],
        "ttl_seconds:",
    );
    fails(&env, &["channel", "ack", "99"], "pass --session-id ID");
    fails(
        &env,
        &["enforcement", "set", "x", "--cadence", "0"],
        "cadence: must be between 1",
    );
    fails(
        &env,
        &["enforcement", "clear", "--id", "7"],
        "enforcement_id: no reminder has id 7",
    );
    fails(&env, &["schedule", "cancel", "5"], "5");
    fails(
        &env,
        &["condition", "show", "nope"],
        "no condition is named `nope`",
    );
}

#[test]
fn enforcement_schedule_and_condition_commands_round_trip() {
    let env = Env::new();
    let text = env.cli(&[
        "enforcement",
        "set",
        "run the tests",
        "--cadence",
        "5",
        "--tag",
        "qa",
    ]);
    assert_eq!(
        text.trim(),
        "added reminder #1 (every 5 tool calls, tag qa)"
    );
    let list = env.cli(&["enforcement", "list"]);
    assert_eq!(list.trim(), "#1 every 5 calls [qa]: run the tests");
    assert_eq!(
        env.cli_json(&["enforcement", "clear", "--tag", "qa"])["removed"],
        json!(1)
    );

    let created = env.cli_json(&[
        "schedule",
        "create",
        "ops",
        "standup",
        "--cron",
        "0 9 * * 1-5",
        "--name",
        "standup",
    ]);
    let id = created["id"].as_i64().unwrap().to_string();
    let list = env.cli(&["schedule", "list"]);
    assert!(
        list.contains(&format!("#{id} (standup) active -> ops [cron 0 9 * * 1-5]")),
        "{list}"
    );
    let cancelled = env.cli(&["schedule", "cancel", &id]);
    assert!(
        cancelled.starts_with(&format!("cancelled #{id} (standup) cancelled")),
        "{cancelled}"
    );

    env.set_condition(
        json!({"name": "guard", "step": "pre", "matcher": "edit+write",
                             "script": "exit 0"}),
    );
    let list = env.cli(&["condition", "list"]);
    assert!(
        list.starts_with("guard") && list.contains("edit+write"),
        "{list}"
    );
    let shown = env.cli_json(&["condition", "show", "guard"]);
    assert_eq!(shown["script"], json!("exit 0"));
    // Removing is gated like the tool: the operator switches the gate off for the command.
    fails(
        &env,
        &["condition", "clear", "guard", "--session-id", "ops"],
        "HOOKS_MCP_CONDITIONS_GATE",
    );
    let out = env.run(
        &[
            "condition",
            "clear",
            "guard",
            "--session-id",
            "ops",
            "--json",
        ],
        "",
        &[("HOOKS_MCP_CONDITIONS_GATE", "off")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer, json!({"removed": "guard"}));
}

#[test]
fn audit_sessions_and_channel_status_show_the_fleet() {
    let env = Env::new();
    let as_alice = |args: &[&str]| {
        let out = env.run(args, "", &[("USER", "alice"), ("LOGNAME", "")]);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let published = as_alice(&[
        "channel",
        "publish",
        "deploys",
        "db is down",
        "--severity",
        "critical",
    ]);
    assert!(
        published.starts_with("published #1 on deploys"),
        "{published}"
    );

    // s1 and s2 subscribe to deploys; only s1 prompts (and receives it); s3 listens elsewhere.
    let deploys = [("HOOKS_MCP_CHANNELS", "deploys")];
    for session in ["s1", "s2"] {
        let start = fixture_for("session_start", session).to_string();
        env.hook_with("SessionStart", &start, &deploys);
    }
    let prompt = fixture_for("user_prompt_submit", "s1").to_string();
    let run = env.hook_with("UserPromptSubmit", &prompt, &deploys);
    assert!(run.context().contains("db is down"), "{}", run.context());
    let call = bash_call("s1", "ls").to_string();
    env.hook_with("PreToolUse", &call, &deploys);
    let start = fixture_for("session_start", "s3").to_string();
    env.hook_with("SessionStart", &start, &[("HOOKS_MCP_CHANNELS", "builds")]);
    as_alice(&["channel", "ack", "1", "--session-id", "s1"]);

    let status = env.cli(&["channel", "status", "1"]);
    let first = status.lines().next().unwrap_or_default();
    assert_eq!(
        first, "critical #1 deploys: delivered 1 of 2 live sessions, acknowledged 1",
        "{status}"
    );
    assert!(status.contains("  s2 not delivered"), "{status}");
    let report = env.cli_json(&["channel", "status", "1"]);
    assert_eq!(report["live_subscribed"], json!(2));
    assert_eq!(report["delivered_live"], json!(1));
    assert_eq!(report["sessions"][0]["session_id"], json!("s1"));
    assert!(report["sessions"][0]["acknowledged_at_time"].is_string());
    let missing = env.run(&["channel", "status", "99"], "", &[]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no message has id 99"));

    let sessions = env.cli_json(&["sessions"]);
    let rows = sessions["sessions"].as_array().unwrap();
    let s1 = rows.iter().find(|r| r["session_id"] == "s1").unwrap();
    assert_eq!(s1["tool_calls"], json!(1));
    assert_eq!(s1["last_event"], json!("PreToolUse"));
    assert_eq!(s1["transport"], json!("hook"));
    assert_eq!(s1["cwd"], json!("/home/dev/src/app"));
    assert_eq!(s1["live"], json!(true));
    assert_eq!(rows.len(), 3);
    let text = env.cli(&["sessions"]);
    assert!(
        text.lines()
            .any(|l| l.starts_with("s1 live seen ") && l.contains("1 tool calls")),
        "{text}"
    );

    let audit = env.cli_json(&["audit"]);
    let actions: Vec<(String, String)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default().to_owned(),
                format!(
                    "{}:{}",
                    e["actor"]["kind"].as_str().unwrap_or_default(),
                    e["actor"]["name"].as_str().unwrap_or_default()
                ),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("publish".to_owned(), "operator:alice".to_owned()),
            ("acknowledge".to_owned(), "operator:alice".to_owned()),
        ]
    );
    let text = env.cli(&["audit", "--since", "1h"]);
    assert!(text.contains(" operator:alice publish 1 "), "{text}");
    assert_eq!(
        env.cli(&["audit", "--since", "2999-01-01T00:00:00Z"])
            .trim(),
        "no changes recorded"
    );
    let refused = env.run(&["audit", "--since", "yesterday"], "", &[]);
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn a_tool_call_records_its_session_and_acts_as_it() {
    let env = Env::new();
    env.mcp_call(
        "channel_publish",
        json!({"channel": "ops", "message": "from a tool"}),
        &[("HOOKS_MCP_SESSION_ID", "s9")],
    );
    let sessions = env.cli_json(&["sessions"]);
    let row = &sessions["sessions"][0];
    assert_eq!(row["session_id"], json!("s9"));
    assert_eq!(row["transport"], json!("stdio"));
    assert_eq!(row["last_event"], json!("tools/call"));
    let audit = env.cli_json(&["audit"]);
    assert_eq!(audit[0]["action"], json!("publish"));
    assert_eq!(audit[0]["actor"], json!({"kind": "session", "name": "s9"}));
    assert_eq!(audit[0]["detail"]["body"], json!("from a tool"));
}
