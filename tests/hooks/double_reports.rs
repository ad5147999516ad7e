//! One client running two of hooks-mcp's hook registrations for the same tool call: VS Code
//! runs Claude Code's `~/.claude/settings.json` and Copilot CLI's `~/.copilot/hooks` alike, and
//! Cursor runs Claude Code's hooks beside its own. The call, known by its `tool_use_id`, is
//! counted, and its broadcasts and reminders delivered, once.

use serde_json::{Value, json};

use crate::support::{Env, client_fixture};

/// The session's recorded tool calls, from `hooks-mcp sessions --json`.
fn tool_calls(env: &Env, session: &str) -> Value {
    let sessions = env.cli_json(&["sessions"]);
    let row = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["session_id"] == session)
        .unwrap_or_else(|| panic!("no session {session}: {sessions}"))
        .clone();
    row["tool_calls"].clone()
}

fn seeded() -> Env {
    let env = Env::new();
    env.cli(&[
        "channel",
        "publish",
        "ops",
        "freeze the main branch",
        "--severity",
        "critical",
    ]);
    env.cli(&["enforcement", "set", "run the tests", "--cadence", "2"]);
    env
}

#[test]
fn vs_code_running_both_hook_files_counts_and_delivers_a_call_once() {
    let env = seeded();
    let payload = client_fixture("vscode_pre_tool_use");
    let session = payload["sessionId"].as_str().unwrap().to_owned();
    // Claude Code's hook file, then Copilot CLI's, for the same call.
    let claude = env.hook("PreToolUse", &payload);
    assert!(
        claude.context().contains("freeze the main branch"),
        "{:?}",
        claude.answer
    );
    let copilot = env.client_hook("copilot", "PreToolUse", &payload);
    let again = copilot.answer.map(|a| a.to_string()).unwrap_or_default();
    assert!(!again.contains("freeze the main branch"), "{again}");
    assert_eq!(tool_calls(&env, &session), json!(1));

    // The next call (a new id) is the session's second: the cadence-2 reminder is due, once.
    let mut next = payload.clone();
    next["tool_use_id"] = json!("tool-125");
    let copilot = env.client_hook("copilot", "PreToolUse", &next);
    let first = copilot.answer.map(|a| a.to_string()).unwrap_or_default();
    assert!(first.contains("[REMINDER #1] run the tests"), "{first}");
    let claude = env.hook("PreToolUse", &next);
    assert!(
        !claude.context().contains("[REMINDER"),
        "{:?}",
        claude.answer
    );
    assert_eq!(tool_calls(&env, &session), json!(2));
}

#[test]
fn cursor_running_claude_codes_hooks_beside_its_own_counts_a_call_once() {
    let env = seeded();
    let mut payload = client_fixture("cursor_post_tool_use");
    let session = payload["session_id"].as_str().unwrap().to_owned();
    // Through Claude Code's hooks (Cursor's name for the event), then its own `postToolUse`.
    payload["hook_event_name"] = json!("preToolUse");
    let claude = env.hook("PreToolUse", &payload);
    assert!(
        claude.context().contains("freeze the main branch"),
        "{:?}",
        claude.answer
    );
    payload["hook_event_name"] = json!("postToolUse");
    let cursor = env.client_hook("cursor", "postToolUse", &payload);
    let after = cursor.answer.map(|a| a.to_string()).unwrap_or_default();
    assert!(!after.contains("freeze the main branch"), "{after}");
    assert_eq!(tool_calls(&env, &session), json!(1));
}
