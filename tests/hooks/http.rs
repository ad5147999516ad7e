//! Claude Code's HTTP hooks: for every recorded payload (`tests/fixtures/hooks/`), the daemon's
//! answer to `POST /hooks/<Event>` is the JSON `hooks-mcp-hook hook <Event>` prints for the same
//! payload and store state (nothing where it prints nothing), on SQLite and on PostgreSQL, with
//! broadcasts, reminders, the conditions gate and a denying condition in the store.

use std::path::Path;

use serde_json::{Value, json};

use crate::forward::{Daemon, Database, TOKEN};
use crate::support::Env;

/// Every recorded payload, by file name, with its event (`hook_event_name`).
fn recorded() -> Vec<(String, String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hooks");
    let mut found: Vec<(String, String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let payload: Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            let event = payload["hook_event_name"].as_str().unwrap().to_owned();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, event, payload)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// One HTTP/1.1 POST of JSON on its own connection: the status and the body.
fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let (status, _, body) = crate::support::http(port, "POST", path, &all, body);
    (status, body)
}

/// Publishes broadcasts of each severity, a reminder every second call, and conditions: a
/// `pre` one that denies `git push --force`, one that adds context from its working directory,
/// and a `post` one that flags every call.
fn fill_store(env: &Env) {
    for (channel, text, severity) in [
        ("global", "all hands at noon", "info"),
        ("deploys", "db is down", "alert"),
        ("ci", "main is red", "critical"),
        ("ops", "not subscribed", "critical"),
    ] {
        env.cli(&["channel", "publish", channel, text, "--severity", severity]);
    }
    env.cli(&["enforcement", "set", "every second call", "--cadence", "2"]);
    env.set_condition(json!({
        "name": "a_where",
        "step": "pre",
        "matcher": "Bash",
        "script": "printf '{\"additionalContext\":\"in %s\"}' \"$PWD\"",
    }));
    env.set_condition(json!({
        "name": "no_force_push",
        "step": "pre",
        "matcher": "Bash",
        "script": "case \"$(cat)\" in *--force*) echo 'force pushes are not allowed' >&2; exit 2;; esac",
    }));
    env.set_condition(json!({
        "name": "flag_after",
        "step": "post",
        "matcher": "any",
        "script": "echo flagged >&2; exit 2",
    }));
}

/// Runs every recorded payload (and a denied call, and a prompt that opens the gate) for two
/// sessions in step, one through the command hook and one through the daemon's HTTP hooks, and
/// compares each answer.
fn command_and_http_answers_agree(env: &Env, daemon: &Daemon) {
    let cwd = env.home();
    let port = daemon.port;
    let mut sequence: Vec<(String, Value)> = recorded()
        .into_iter()
        .map(|(_, event, payload)| (event, payload))
        .collect();
    let mut gate = sequence
        .iter()
        .find(|(e, _)| e == "UserPromptSubmit")
        .unwrap()
        .1
        .clone();
    gate["prompt"] = "please set a condition that blocks force pushes".into();
    sequence.push(("UserPromptSubmit".into(), gate));
    let mut denied = sequence
        .iter()
        .find(|(e, _)| e == "PreToolUse")
        .unwrap()
        .1
        .clone();
    denied["tool_input"]["command"] = "git push --force origin main".into();
    sequence.push(("PreToolUse".into(), denied));
    // Twice, so that the reminder's cadence and the once-only `info` broadcast show.
    let sequence: Vec<(String, Value)> = sequence.iter().chain(&sequence).cloned().collect();
    assert!(
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop"
        ]
        .iter()
        .all(|e| sequence.iter().any(|(s, _)| s == e)),
        "a handled event has no recorded payload"
    );

    let (mut answered, mut denials, mut reminders) = (0, 0, 0);
    for (event, payload) in &sequence {
        let with = |session: &str| {
            let mut p = payload.clone();
            p["session_id"] = session.into();
            p["cwd"] = cwd.display().to_string().into();
            // Each pass is a new tool call (a call reported twice counts once).
            crate::support::fresh_call_id(&mut p);
            p.to_string()
        };
        let command = env.run(
            &["hook", event],
            &with("session-command"),
            &[
                ("HOOKS_MCP_CHANNELS", "deploys,ci"),
                ("HOOKS_MCP_HOOK_FORWARD", "off"),
            ],
        );
        assert_eq!(command.status.code(), Some(0));
        let printed = String::from_utf8(command.stdout).unwrap();
        let (status, body) = post(
            port,
            &format!("/hooks/{event}"),
            &[
                ("Authorization", &format!("Bearer {TOKEN}")),
                ("X-Hooks-Mcp-Channels", "deploys,ci"),
            ],
            &with("session-http"),
        );
        let expected_status = if printed.is_empty() { 204 } else { 200 };
        assert_eq!(
            status,
            expected_status,
            "{event}: {body}\n{}",
            daemon.text()
        );
        assert_eq!(
            body.replace("session-http", "<session>"),
            printed.replace("session-command", "<session>"),
            "{event}: the HTTP hook's body differs from the command hook's stdout"
        );
        if !printed.is_empty() {
            answered += 1;
            let answer: Value = serde_json::from_str(&printed).unwrap();
            let specific = &answer["hookSpecificOutput"];
            denials += usize::from(specific["permissionDecision"] == "deny");
            reminders += usize::from(
                specific["additionalContext"]
                    .as_str()
                    .is_some_and(|c| c.contains("[REMINDER")),
            );
            if event == "PreToolUse" {
                let context = specific["additionalContext"].as_str().unwrap_or("");
                assert!(context.contains("main is red"), "{context}");
                assert!(!context.contains("not subscribed"), "{context}");
                assert!(
                    context.contains(&format!("in {}", cwd.display())),
                    "the condition ran in the payload's cwd: {context}"
                );
            }
        }
    }
    // The comparisons were not of empty answers.
    assert!(answered >= 8, "only {answered} answers");
    assert_eq!(denials, 2, "the denying condition denied both force pushes");
    assert!(reminders >= 1, "no reminder was due");
}

#[test]
fn http_hooks_answer_as_command_hooks_on_sqlite() {
    let env = Env::new();
    fill_store(&env);
    let daemon = Daemon::start(&env, None);
    command_and_http_answers_agree(&env, &daemon);
    let health = daemon.health().unwrap();
    assert!(
        health["hooks"]["http"]["answered"].as_u64().unwrap() >= 8,
        "{health}"
    );
}

#[test]
fn http_hooks_answer_as_command_hooks_on_postgres() {
    let Some(db) = Database::new("http::http_hooks_answer_as_command_hooks_on_postgres") else {
        return;
    };
    let mut env = Env::new();
    env.vars
        .push(("HOOKS_MCP_DATABASE_URL".into(), db.url.clone()));
    fill_store(&env);
    let daemon = Daemon::start(&env, Some(&db.url));
    command_and_http_answers_agree(&env, &daemon);
}
