//! Other clients' hook events over the real hook binary (`hook --client <name> <event>`), fed
//! with their recorded or derived payloads (`tests/fixtures/hooks/clients/`, each naming its
//! source): what each event delivers and the exact shape of each answer, the turn's end and
//! the session's end among them; a Claude Code hook fed VS Code's payloads; and payloads no
//! client can place, counted.

use std::collections::BTreeSet;

use hook_dispatch::clients::PUSH_HEADER;
use serde_json::{Value, json};

use crate::support::{Env, client_fixture, full_bin};

/// A store with one `info` and one `critical` broadcast on `ops`, and a reminder due on every
/// tool call (reminder #1).
fn seeded() -> Env {
    let env = Env::new();
    env.cli(&["channel", "publish", "ops", "deploy at noon"]);
    env.cli(&[
        "channel",
        "publish",
        "ops",
        "freeze the main branch",
        "--severity",
        "critical",
    ]);
    env.cli(&[
        "enforcement",
        "set",
        "run the tests before pushing",
        "--cadence",
        "1",
    ]);
    env
}

fn condition(name: &str, step: &str, matcher: &str, script: &str) -> Value {
    json!({ "name": name, "step": step, "matcher": matcher, "script": script })
}

/// An object's keys.
fn keys(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn set(names: &[&'static str]) -> BTreeSet<&'static str> {
    names.iter().copied().collect()
}

fn text(value: &Value) -> &str {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
}

#[test]
fn codex_gets_every_answer_within_its_output_schemas() {
    let env = seeded();
    env.set_condition(condition(
        "ask_before_push",
        "pre",
        "bash.git",
        r#"echo '{"decision": "ask", "reason": "a push needs a look"}'"#,
    ));
    env.set_condition(condition(
        "redact_tracker",
        "post",
        "mcp__tracker",
        r#"echo '{"replaceOutput": "[redacted]"}'"#,
    ));
    // The fields each of Codex's output schemas allows (codex 0.171.0, the
    // *.command.output.schema.json it embeds, all with additionalProperties: false).
    let top = set(&[
        "continue",
        "decision",
        "hookSpecificOutput",
        "reason",
        "stopReason",
        "suppressOutput",
        "systemMessage",
    ]);

    let start = env.client_hook(
        "codex",
        "SessionStart",
        &client_fixture("codex_session_start"),
    );
    let answer = start.answer.unwrap();
    assert_eq!(keys(&answer), set(&["hookSpecificOutput"]));
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(keys(specific), set(&["hookEventName", "additionalContext"]));
    assert_eq!(specific["hookEventName"], "SessionStart");
    assert!(
        text(&specific["additionalContext"]).contains("`01a23cb0-7bb3-7cd3-a0e8-f527780e1a31`"),
        "the banner names Codex's session: {specific}"
    );

    let prompt = env.client_hook(
        "codex",
        "UserPromptSubmit",
        &client_fixture("codex_user_prompt_submit"),
    );
    let answer = prompt.answer.unwrap();
    let context = text(&answer["hookSpecificOutput"]["additionalContext"]);
    assert!(
        context.contains("deploy at noon") && context.contains("freeze the main branch"),
        "{context}"
    );
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );

    let pre = env.client_hook("codex", "PreToolUse", &client_fixture("codex_pre_tool_use"));
    let answer = pre.answer.unwrap();
    assert!(keys(&answer).is_subset(&top), "{answer}");
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(
        keys(specific),
        set(&[
            "hookEventName",
            "additionalContext",
            "permissionDecision",
            "permissionDecisionReason"
        ])
    );
    // Codex refuses `ask`: the call is denied with a reason that says what was asked.
    assert_eq!(specific["permissionDecision"], "deny");
    let reason = text(&specific["permissionDecisionReason"]);
    assert!(
        reason.starts_with("a hooks-mcp condition asks for the operator's approval")
            && reason.contains("a push needs a look"),
        "{reason}"
    );
    let context = text(&specific["additionalContext"]);
    assert!(
        context.contains("freeze the main branch")
            && context.contains("[REMINDER #1] run the tests before pushing")
            && !context.contains("deploy at noon"),
        "critical broadcasts and the due reminder before a tool call: {context}"
    );
    assert!(
        pre.stderr.contains("Codex hooks cannot ask"),
        "{}",
        pre.stderr
    );

    let post = env.client_hook(
        "codex",
        "PostToolUse",
        &client_fixture("codex_post_tool_use"),
    );
    let answer = post.answer.unwrap();
    assert!(keys(&answer).is_subset(&top), "{answer}");
    assert_eq!(
        answer,
        json!({"hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext":
                "[hooks-mcp] a condition replaced this tool's output with: [redacted]"
        }}),
        "Codex cannot replace an output: the replacement is context"
    );

    // A condition that allows without rewriting: Codex refuses a bare `allow` (and with it
    // the whole answer, context included), so the answer says nothing of a decision.
    let mut allowing = condition(
        "ask_before_push",
        "pre",
        "bash.git",
        r#"echo '{"decision": "allow", "reason": "pushes are fine today"}'"#,
    );
    allowing["replace"] = json!(true);
    env.set_condition(allowing);
    // Another call (a call reported twice is counted, and delivered to, once).
    let mut call = client_fixture("codex_pre_tool_use");
    call["tool_use_id"] = "call_second".into();
    let pre = env.client_hook("codex", "PreToolUse", &call);
    let answer = pre.answer.unwrap();
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(
        keys(specific),
        set(&["hookEventName", "additionalContext"]),
        "{answer}"
    );
    assert!(
        text(&specific["additionalContext"]).contains("[REMINDER #1]"),
        "{answer}"
    );
}

#[test]
fn gemini_gets_tool_time_deliveries_after_the_call() {
    let env = seeded();
    env.set_condition(condition(
        "no_force_push",
        "pre",
        "bash.git",
        r#"if grep -q -- '--force'; then echo "force pushes are off limits" >&2; exit 2; fi"#,
    ));
    env.set_condition(condition(
        "tracker_note",
        "post",
        "mcp__tracker__get_issue",
        "echo 'issue read'",
    ));

    let start = env.client_hook(
        "gemini",
        "SessionStart",
        &client_fixture("gemini_session_start"),
    );
    let answer = start.answer.unwrap();
    assert_eq!(keys(&answer), set(&["hookSpecificOutput"]));
    assert_eq!(
        keys(&answer["hookSpecificOutput"]),
        set(&["hookEventName", "additionalContext"])
    );
    assert!(
        text(&answer["hookSpecificOutput"]["additionalContext"])
            .contains("`2d0dbb4d-9a16-4b87-9f8b-de3dc5c53082`")
    );

    let prompt = env.client_hook(
        "gemini",
        "BeforeAgent",
        &client_fixture("gemini_before_agent"),
    );
    let answer = prompt.answer.unwrap();
    assert_eq!(keys(&answer), set(&["hookSpecificOutput"]));
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
    let context = text(&answer["hookSpecificOutput"]["additionalContext"]);
    assert!(
        context.contains("opened the conditions gate") && context.contains("deploy at noon"),
        "{context}"
    );

    // BeforeTool shows the model nothing: it only runs the `pre` conditions, and counts no
    // tool call.
    let before = env.client_hook(
        "gemini",
        "BeforeTool",
        &client_fixture("gemini_before_tool"),
    );
    assert_eq!(
        before.answer,
        Some(json!({
            "decision": "deny",
            "reason": "condition `no_force_push`: force pushes are off limits"
        }))
    );

    let after = env.client_hook("gemini", "AfterTool", &client_fixture("gemini_after_tool"));
    let answer = after.answer.unwrap();
    assert_eq!(keys(&answer), set(&["hookSpecificOutput"]));
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "AfterTool");
    let context = text(&answer["hookSpecificOutput"]["additionalContext"]);
    assert!(
        context.contains("freeze the main branch")
            && context.contains("[REMINDER #1]")
            && context.contains("[condition tracker_note] issue read"),
        "AfterTool carries the tool call's deliveries and the post condition (matched as \
         mcp__tracker__get_issue from mcp_context): {context}"
    );
    let sessions = env.cli_json(&["sessions"]);
    let gemini = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "2d0dbb4d-9a16-4b87-9f8b-de3dc5c53082")
        .unwrap_or_else(|| panic!("the Gemini session is recorded: {sessions}"));
    assert_eq!(
        gemini["tool_calls"], 1,
        "one call counted, at AfterTool: {gemini}"
    );
}

#[test]
fn copilot_gets_its_own_fields_and_claude_codes() {
    let env = seeded();
    env.set_condition(condition(
        "no_force_push",
        "pre",
        "bash.git",
        r#"if grep -q -- '--force'; then echo "force pushes are off limits" >&2; exit 2; fi"#,
    ));
    env.set_condition(condition(
        "redact_tracker",
        "post",
        "mcp__tracker",
        r#"echo '{"replaceOutput": "[redacted]"}'"#,
    ));
    let start = env.client_hook(
        "copilot",
        "SessionStart",
        &client_fixture("copilot_session_start"),
    );
    let answer = start.answer.unwrap();
    assert_eq!(
        keys(&answer),
        set(&["additionalContext", "hookSpecificOutput"])
    );
    assert!(text(&answer["additionalContext"]).contains("`d4e1a7c2-63b0-4f18-8a5d-92c7e0b13f46`"));
    let post = env.client_hook(
        "copilot",
        "PostToolUse",
        &client_fixture("copilot_post_tool_use"),
    );
    assert_eq!(
        post.answer,
        Some(
            json!({"modifiedResult": {"textResultForLlm": "[redacted]", "resultType": "success"}})
        )
    );

    let prompt = env.client_hook(
        "copilot",
        "UserPromptSubmit",
        &client_fixture("copilot_user_prompt_submit"),
    );
    let answer = prompt.answer.unwrap();
    assert_eq!(
        keys(&answer),
        set(&["additionalContext", "hookSpecificOutput"])
    );
    assert_eq!(
        answer["additionalContext"],
        answer["hookSpecificOutput"]["additionalContext"]
    );
    assert!(text(&answer["additionalContext"]).contains("deploy at noon"));

    for (fixture, event) in [
        ("copilot_pre_tool_use", "PreToolUse"),
        ("copilot_native_pre_tool_use", "preToolUse"),
    ] {
        let pre = env.client_hook("copilot", event, &client_fixture(fixture));
        let answer = pre.answer.unwrap();
        assert_eq!(
            keys(&answer),
            set(&[
                "additionalContext",
                "hookSpecificOutput",
                "permissionDecision",
                "permissionDecisionReason"
            ]),
            "{fixture}"
        );
        assert_eq!(answer["permissionDecision"], "deny", "{fixture}");
        assert_eq!(
            answer["permissionDecisionReason"],
            "condition `no_force_push`: force pushes are off limits"
        );
        assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(text(&answer["additionalContext"]).contains("freeze the main branch"));
    }
}

#[test]
fn cursor_gets_broadcasts_at_session_start_and_after_tool_calls() {
    let env = seeded();
    env.set_condition(condition(
        "no_force_push",
        "pre",
        "bash.git",
        r#"if grep -q -- '--force'; then echo "force pushes are off limits" >&2; exit 2; fi"#,
    ));
    let start = env.client_hook(
        "cursor",
        "sessionStart",
        &client_fixture("cursor_session_start"),
    );
    let answer = start.answer.unwrap();
    assert_eq!(keys(&answer), set(&["additional_context", "continue"]));
    assert_eq!(answer["continue"], true);
    let context = text(&answer["additional_context"]);
    assert!(
        context.contains("`5a1e9c40-3f27-4b8d-a6e2-0d94c8b17f35`")
            && context.contains("deploy at noon")
            && context.contains("freeze the main branch"),
        "Cursor shows no context at prompts: the broadcasts come with the session start: \
         {context}"
    );

    // The prompt only arms the conditions gate, for the conversation.
    let prompt = env.client_hook(
        "cursor",
        "beforeSubmitPrompt",
        &client_fixture("cursor_before_submit_prompt"),
    );
    assert_eq!(prompt.answer, Some(json!({"continue": true})));
    let allowed = env.mcp_call(
        "condition_set",
        condition("lint_after_edit", "post", "edit", "exit 0"),
        &[(
            "HOOKS_MCP_SESSION_ID",
            "5a1e9c40-3f27-4b8d-a6e2-0d94c8b17f35",
        )],
    );
    assert_eq!(allowed["isError"], false, "the gate is open: {allowed}");

    let shell = env.client_hook(
        "cursor",
        "beforeShellExecution",
        &client_fixture("cursor_before_shell_execution"),
    );
    let reason = "condition `no_force_push`: force pushes are off limits";
    assert_eq!(
        shell.answer,
        Some(json!({"permission": "deny", "user_message": reason, "agent_message": reason}))
    );

    env.set_condition(condition(
        "no_mcp_deletes",
        "pre",
        "mcp",
        r#"if grep -q issue; then echo "no deletes through MCP" >&2; exit 2; fi"#,
    ));
    let mcp = env.client_hook(
        "cursor",
        "beforeMCPExecution",
        &client_fixture("cursor_before_mcp_execution"),
    );
    let reason = "condition `no_mcp_deletes`: no deletes through MCP";
    assert_eq!(
        mcp.answer,
        Some(json!({"permission": "deny", "user_message": reason, "agent_message": reason})),
        "an MCP call is matched as mcp__<tool>, its JSON-string input parsed"
    );

    let post = env.client_hook(
        "cursor",
        "postToolUse",
        &client_fixture("cursor_post_tool_use"),
    );
    let answer = post.answer.unwrap();
    assert_eq!(keys(&answer), set(&["additional_context"]));
    let context = text(&answer["additional_context"]);
    assert!(
        context.contains("freeze the main branch") && context.contains("[REMINDER #1]"),
        "{context}"
    );
}

/// One client's turn end and session end, as it sends them: the hook that records the
/// session and the start of its turn, the turn's end (and the same after a stop hook made the
/// agent go on), the session's end, each `(event, fixture)`; the session's id; the answer
/// that pushes a reason.
struct TurnEnd {
    client: &'static str,
    start: (&'static str, &'static str),
    stop: (&'static str, &'static str),
    again: (&'static str, &'static str),
    end: (&'static str, &'static str),
    session: &'static str,
    answer: fn(&str) -> Value,
}

/// What every client's turn end must do: nothing when nothing was published during the turn;
/// the exact push of a message published during it, once; nothing when the client says a
/// stop hook already made the agent go on, nor with the setting off; then its session's end
/// recorded (`hooks-mcp sessions` no longer lists it, `--all` shows it ended).
fn a_turn_end_pushes_once_and_the_session_end_is_recorded(case: TurnEnd) {
    let TurnEnd {
        client, session, ..
    } = case;
    let env = Env::new();
    let publish = |text: &str, severity: &str| -> i64 {
        env.cli_json(&["channel", "publish", "ops", text, "--severity", severity])["id"]
            .as_i64()
            .unwrap()
    };
    let line = |id: i64, severity: &str, text: &str| {
        format!("[{severity} #{id} ops] {text} (ack: channel_acknowledge message_id={id})")
    };
    let run = |(event, fixture): (&str, &str), vars: &[(&str, &str)]| {
        env.hook_args(
            &["hook", "--client", client, event],
            &client_fixture(fixture).to_string(),
            vars,
        )
    };
    publish("published before the turn", "alert");
    run(case.start, &[]);

    let quiet = run(case.stop, &[]);
    assert_eq!(quiet.answer, None, "{client}: nothing new to push");
    assert_eq!(quiet.stderr, "", "{client}");

    let id = publish("the release is cancelled", "critical");
    let pushed = run(case.stop, &[]);
    let reason = format!(
        "{PUSH_HEADER}\n{}",
        line(id, "CRITICAL", "the release is cancelled")
    );
    assert_eq!(pushed.answer, Some((case.answer)(&reason)), "{client}");
    assert_eq!(pushed.stderr, "", "{client}");
    let again = run(case.stop, &[]);
    assert_eq!(again.answer, None, "{client}: never twice for one message");

    // The client's word that a stop hook already made the agent go on, and the setting, hold
    // back what was published since; the next ordinary turn end pushes it.
    let next = publish("another one", "alert");
    let reentry = run(case.again, &[]);
    assert_eq!(reentry.answer, None, "{client}: no loop on the re-entry");
    assert_eq!(reentry.stderr, "", "{client}");
    let off = run(case.stop, &[("HOOKS_MCP_STOP_BLOCK", "off")]);
    assert_eq!(off.answer, None, "{client}: HOOKS_MCP_STOP_BLOCK=off");
    let later = run(case.stop, &[]);
    let reason = format!("{PUSH_HEADER}\n{}", line(next, "ALERT", "another one"));
    assert_eq!(later.answer, Some((case.answer)(&reason)), "{client}");

    // The session's end: no answer, and the session is shown ended.
    let listed = |all: bool| -> Vec<Value> {
        let args: &[&str] = if all {
            &["sessions", "--all"]
        } else {
            &["sessions"]
        };
        env.cli_json(args)["sessions"].as_array().unwrap().clone()
    };
    assert!(
        listed(false).iter().any(|s| s["session_id"] == session),
        "{client}: live before its end"
    );
    let end = run(case.end, &[]);
    assert_eq!(end.answer, None, "{client}");
    assert_eq!(end.stderr, "", "{client}");
    assert!(
        !listed(false).iter().any(|s| s["session_id"] == session),
        "{client}: no longer live"
    );
    let all = listed(true);
    let row = all
        .iter()
        .find(|s| s["session_id"] == session)
        .unwrap_or_else(|| panic!("{client}: `sessions --all` lists it: {all:?}"));
    assert_eq!(row["live"], false, "{row}");
    assert!(row["ended_at"].is_i64(), "{row}");
    let text = env.cli(&["sessions", "--all"]);
    assert!(text.contains(&format!("{session} ended")), "{text}");
    assert!(
        !env.store_dir().join("unplaced-hooks.json").exists(),
        "{client}: every payload was placed"
    );
}

#[test]
fn codex_stop_blocks_with_the_reason_and_session_end_ends_the_session() {
    a_turn_end_pushes_once_and_the_session_end_is_recorded(TurnEnd {
        client: "codex",
        start: ("UserPromptSubmit", "codex_user_prompt_submit"),
        stop: ("Stop", "codex_stop"),
        again: ("Stop", "codex_stop_active"),
        end: ("SessionEnd", "codex_session_end"),
        session: "01a23cb0-7bb3-7cd3-a0e8-f527780e1a31",
        // stop.command.output: nothing but these two (additionalProperties: false).
        answer: |reason| json!({"decision": "block", "reason": reason}),
    });
}

#[test]
fn gemini_after_agent_denies_with_the_reason_and_session_end_ends_the_session() {
    a_turn_end_pushes_once_and_the_session_end_is_recorded(TurnEnd {
        client: "gemini",
        start: ("BeforeAgent", "gemini_before_agent"),
        stop: ("AfterAgent", "gemini_after_agent"),
        again: ("AfterAgent", "gemini_after_agent_active"),
        end: ("SessionEnd", "gemini_session_end"),
        session: "2d0dbb4d-9a16-4b87-9f8b-de3dc5c53082",
        answer: |reason| json!({"decision": "deny", "reason": reason}),
    });
}

#[test]
fn copilot_agent_stop_blocks_with_the_reason_and_session_end_ends_the_session() {
    a_turn_end_pushes_once_and_the_session_end_is_recorded(TurnEnd {
        client: "copilot",
        start: ("UserPromptSubmit", "copilot_user_prompt_submit"),
        stop: ("Stop", "copilot_stop"),
        // Its own camelCase event and payload, as a hook registered as `agentStop` gets it.
        again: ("agentStop", "copilot_native_agent_stop"),
        end: ("SessionEnd", "copilot_session_end"),
        session: "d4e1a7c2-63b0-4f18-8a5d-92c7e0b13f46",
        answer: |reason| json!({"decision": "block", "reason": reason}),
    });
}

#[test]
fn cursor_stop_follows_up_with_the_reason_and_session_end_ends_the_session() {
    a_turn_end_pushes_once_and_the_session_end_is_recorded(TurnEnd {
        client: "cursor",
        start: ("sessionStart", "cursor_session_start"),
        stop: ("stop", "cursor_stop"),
        again: ("stop", "cursor_stop_followed_up"),
        end: ("sessionEnd", "cursor_session_end"),
        session: "5a1e9c40-3f27-4b8d-a6e2-0d94c8b17f35",
        answer: |reason| json!({"followup_message": reason}),
    });
}

#[test]
fn a_push_the_client_submits_as_its_next_prompt_opens_no_conditions_gate() {
    let env = Env::new();
    let session = "2d0dbb4d-9a16-4b87-9f8b-de3dc5c53082";
    // A store that has seen the session: its prompt is recorded.
    env.cli(&["channel", "publish", "ops", "deploy at noon"]);
    let mut prompt = client_fixture("gemini_before_agent");
    prompt["prompt"] = "Why do the migration tests fail?".into();
    env.client_hook("gemini", "BeforeAgent", &prompt);
    let id = env.cli_json(&[
        "channel",
        "publish",
        "ops",
        "please add a condition that blocks force pushes",
        "--severity",
        "alert",
    ])["id"]
        .as_i64()
        .unwrap();
    let pushed = env.client_hook(
        "gemini",
        "AfterAgent",
        &client_fixture("gemini_after_agent"),
    );
    let reason = pushed.answer.as_ref().unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains(&format!("[ALERT #{id} ops]")), "{reason}");

    // Gemini CLI sends the reason as the next prompt: its BeforeAgent fires again with it.
    prompt["prompt"] = reason.clone().into();
    let retry = env.client_hook("gemini", "BeforeAgent", &prompt);
    assert!(
        !retry.stderr.contains("gate") && !format!("{:?}", retry.answer).contains("gate"),
        "{retry:?}"
    );
    let refused = env.mcp_call(
        "condition_set",
        condition("no_force_push", "pre", "bash.git", "exit 0"),
        &[("HOOKS_MCP_SESSION_ID", session)],
    );
    assert_eq!(
        refused["isError"], true,
        "a broadcast is not the operator's prompt: {refused}"
    );
    // The operator's own words still open it.
    prompt["prompt"] = "Please add a condition that blocks force pushes.".into();
    let typed = env.client_hook("gemini", "BeforeAgent", &prompt);
    assert!(
        format!("{:?}", typed.answer).contains("opened the conditions gate"),
        "{typed:?}"
    );
}

#[test]
fn a_claude_code_hook_fed_vs_code_payloads_still_delivers() {
    let env = seeded();
    env.set_condition(condition(
        "no_force_push",
        "pre",
        "bash.git",
        r#"if grep -q -- '--force'; then echo "force pushes are off limits" >&2; exit 2; fi"#,
    ));
    // VS Code runs the hooks of Claude Code's settings: `hook <Event>`, no client named.
    let prompt = env.hook(
        "UserPromptSubmit",
        &client_fixture("vscode_user_prompt_submit"),
    );
    assert_eq!(prompt.stderr, "");
    let answer = prompt.answer.clone().unwrap();
    assert_eq!(keys(&answer), set(&["hookSpecificOutput"]));
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    assert!(prompt.context().contains("deploy at noon"), "{answer}");

    // Its terminal tool is matched as Bash.
    let pre = env.hook("PreToolUse", &client_fixture("vscode_pre_tool_use"));
    assert_eq!(pre.specific("permissionDecision"), Some(&json!("deny")));
    assert!(pre.context().contains("freeze the main branch"));

    // Its edit tool is matched as Edit; a post condition's exit 2 blocks as in Claude Code.
    env.set_condition(condition(
        "lint_after_edit",
        "post",
        "edit",
        r#"echo "src/main.rs fails the linter" >&2; exit 2"#,
    ));
    let post = env.hook("PostToolUse", &client_fixture("vscode_post_tool_use"));
    assert_eq!(
        post.answer,
        Some(json!({
            "decision": "block",
            "reason": "condition `lint_after_edit`: src/main.rs fails the linter"
        }))
    );

    // Newer builds send snake_case fields, which Claude Code's checks take as they are.
    let start = env.hook("SessionStart", &client_fixture("vscode_session_start"));
    assert!(start.context().contains("`vscode-chat-session-8c2f41d7`"));
}

#[test]
fn payloads_no_client_can_place_are_answered_with_nothing_and_counted() {
    let env = seeded();
    let record = || -> Value {
        let path = env.store_dir().join("unplaced-hooks.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let mut no_session = client_fixture("gemini_before_tool");
    no_session.as_object_mut().unwrap().remove("session_id");
    let run = env.client_hook("gemini", "BeforeTool", &no_session);
    assert!(run.answer.is_none(), "{:?}", run.answer);
    assert!(run.stderr.contains("no session id"), "{}", run.stderr);
    assert_eq!(record()["count"], 1);
    assert_eq!(record()["client"], "gemini");

    let run = env.client_hook(
        "codex",
        "SubagentStop",
        &client_fixture("codex_session_start"),
    );
    assert!(run.answer.is_none());
    let reason = record()["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains("no event `SubagentStop`") && reason.contains("Stop, SessionEnd"),
        "the events Codex does have are named: {reason}"
    );

    let run = env.hook_args(&["hook", "--client", "zed", "PreToolUse"], "{}", &[]);
    assert!(run.answer.is_none() && run.stderr.contains("unknown client `zed`"));

    // A Claude Code hook fed a payload no client's fields explain.
    let run = env.hook("PreToolUse", &json!({"tool_name": "Bash"}));
    assert!(run.answer.is_none());
    let last = record();
    assert_eq!(
        (&last["count"], &last["client"], &last["event"]),
        (&json!(4), &json!("claude"), &json!("PreToolUse"))
    );
    assert!(
        last["reason"].as_str().unwrap().contains("session_id"),
        "{last}"
    );
}

#[test]
fn on_postgres_a_client_hook_hands_its_adapted_payload_over_and_the_full_binary_answers_for_the_client()
 {
    let env = seeded();
    // The hand-over to a stand-in full binary (`/bin/sh hook <Event>` runs the script `hook`):
    // what it is given.
    let dir = env.dir.path().join("stand-in");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("hook"),
        "printf '%s\\n' \"$0 $*\" > record\ncat > record.stdin\n",
    )
    .unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
        .to_string();
    let mut lean = env.command(&["hook", "--client", "gemini", "BeforeAgent"]);
    lean.current_dir(&dir)
        .env(
            "HOOKS_MCP_DATABASE_URL",
            "postgres://hooks@127.0.0.1:1/hooks",
        )
        .env("HOOKS_MCP_FULL_BIN", "/bin/sh")
        .env("MCP_HOST", "127.0.0.1")
        .env("MCP_PORT", &free)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = lean.spawn().unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        client_fixture("gemini_before_agent").to_string().as_bytes(),
    )
    .unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    let args = std::fs::read_to_string(dir.join("record")).unwrap();
    assert_eq!(
        args.trim(),
        "hook UserPromptSubmit",
        "the dispatcher's event"
    );
    let replayed: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("record.stdin")).unwrap()).unwrap();
    assert_eq!(
        replayed["hooks_mcp"],
        json!({"client": "gemini", "event": "BeforeAgent"})
    );
    assert_eq!(
        replayed["session_id"],
        "2d0dbb4d-9a16-4b87-9f8b-de3dc5c53082"
    );

    // The full binary, given that payload as `hook UserPromptSubmit`, answers as Gemini CLI's
    // BeforeAgent hook.
    let run = env.hook_args(
        &["hook", "UserPromptSubmit"],
        &replayed.to_string(),
        &[("HOOKS_MCP_HOOK_HANDED_OVER", "1")],
    );
    let answer = run.answer.unwrap();
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
    assert!(text(&answer["hookSpecificOutput"]["additionalContext"]).contains("deploy at noon"));
    // The same from the full binary itself (the process a hand-over becomes).
    let full_run = {
        let mut c = std::process::Command::new(full_bin());
        c.args(["hook", "UserPromptSubmit"])
            .env("HOOKS_MCP_HOME", env.store_dir())
            .env("HOME", env.home())
            .env("HOOKS_MCP_HOOK_HANDED_OVER", "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            replayed.to_string().as_bytes(),
        )
        .unwrap();
        child.wait_with_output().unwrap()
    };
    let answer: Value = serde_json::from_slice(&full_run.stdout).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
}
