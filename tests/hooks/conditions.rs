//! Condition scripts run by the tool-call hooks: the contract, denial, timeout, rewriting,
//! post-call answers, failures and detached runs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Env, bash_call, fixture};

fn pre(name: &str, matcher: &str, script: &str) -> Value {
    json!({ "name": name, "step": "pre", "matcher": matcher, "script": script })
}

#[test]
fn a_denying_condition_blocks_the_call_with_its_reason() {
    let env = Env::new();
    env.set_condition(pre(
        "no_force_push",
        "bash.git",
        r#"if grep -q -- '--force' ; then echo "force pushes are off limits" >&2; exit 2; fi
echo '{"additionalContext": "git call checked"}'"#,
    ));
    let denied = env.hook(
        "PreToolUse",
        &bash_call("s1", "git push --force origin main"),
    );
    assert_eq!(denied.specific("permissionDecision"), Some(&json!("deny")));
    assert_eq!(
        denied.specific("permissionDecisionReason"),
        Some(&json!(
            "condition `no_force_push`: force pushes are off limits"
        ))
    );
    let allowed = env.hook("PreToolUse", &bash_call("s1", "git status"));
    assert_eq!(allowed.specific("permissionDecision"), None);
    assert_eq!(
        allowed.context(),
        "[condition no_force_push] git call checked"
    );
    // A call the matcher does not select runs no script.
    let other = env.hook("PreToolUse", &bash_call("s1", "cargo build"));
    assert!(other.answer.is_none(), "{:?}", other.answer);
}

/// Node writes a string cut inside an emoji as a lone surrogate escape: valid JSON, no
/// Unicode text. The event was dropped whole (its deny condition skipped); it is read with
/// U+FFFD in place of the half.
#[test]
fn a_payload_with_a_lone_surrogate_escape_is_still_judged() {
    let env = Env::new();
    env.set_condition(pre(
        "no_force_push",
        "bash.git",
        r#"grep -q -- '--force' && { echo "force pushes are off limits" >&2; exit 2; }; exit 0"#,
    ));
    let payload = bash_call("s1", "git push --force origin main # PLACEHOLDER")
        .to_string()
        .replace("PLACEHOLDER", r"\ud83d");
    assert!(payload.contains(r"# \ud83d"), "{payload}");
    let denied = env.hook_with("PreToolUse", &payload, &[]);
    assert_eq!(
        denied.specific("permissionDecision"),
        Some(&json!("deny")),
        "{}",
        denied.stderr
    );
}

#[test]
fn a_timing_out_condition_is_killed_and_does_not_block() {
    let env = Env::new();
    let pid_file = env.dir.path().join("background.pid");
    env.set_condition(pre(
        "slow",
        "any",
        &format!("sleep 60 & echo $! > '{}'; sleep 60", pid_file.display()),
    ));
    let run = env.hook_with(
        "PreToolUse",
        &bash_call("s1", "ls").to_string(),
        &[("HOOKS_MCP_CONDITION_TIMEOUT_MS", "1000")],
    );
    assert_eq!(
        run.specific("permissionDecision"),
        None,
        "a timeout never denies"
    );
    assert!(
        run.context()
            .contains("[condition slow] did not finish within 1000 ms"),
        "{}",
        run.context()
    );
    // The whole process group was killed, the script's background child included.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive = std::fs::read_to_string(&stat)
            .map(|s| s.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
            .unwrap_or(false);
        if !alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the background sleep {pid} still runs"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn conditions_see_the_contract_rewrite_the_input_and_ask() {
    let env = Env::new();
    env.set_condition(pre(
        "a_env",
        "bash",
        r#"payload=$(cat)
case "$payload" in *toolu_01HkY3Jq8cV2mX5nT7pR9wZa*) seen=payload;; *) seen=nothing;; esac
echo "$HOOKS_MCP_EVENT $HOOKS_MCP_TOOL_NAME $HOOKS_MCP_SESSION_ID $HOOKS_MCP_CONDITION $seen""#,
    ));
    env.set_condition(pre(
        "b_rewrite",
        "bash",
        r#"echo '{"updatedInput": {"command": "cargo test -p store --lib -- --test-threads 1"}, "decision": "ask", "reason": "tests run single-threaded here"}'"#,
    ));
    env.set_condition(pre(
        "c_sees_rewrite",
        "bash",
        r#"grep -q 'test-threads 1' && echo "saw the rewritten input""#,
    ));
    let run = env.hook("PreToolUse", &fixture("pre_tool_use_bash"));
    assert_eq!(
        run.context(),
        "[condition a_env] PreToolUse Bash 3b7e1c52-9a4f-4d2e-8c61-0f5a2d9e7b13 a_env payload\n\
         [condition c_sees_rewrite] saw the rewritten input"
    );
    assert_eq!(run.specific("permissionDecision"), Some(&json!("ask")));
    assert_eq!(
        run.specific("permissionDecisionReason"),
        Some(&json!(
            "condition `b_rewrite`: tests run single-threaded here"
        ))
    );
    // The whole input, with the untouched fields kept.
    assert_eq!(
        run.specific("updatedInput"),
        Some(
            &json!({"command": "cargo test -p store --lib -- --test-threads 1",
                     "description": "Run the store's unit tests"})
        )
    );
}

#[test]
fn post_conditions_add_context_replace_output_and_flag() {
    let env = Env::new();
    env.set_condition(json!({
        "name": "redact", "step": "post", "matcher": "mcp__tracker",
        "script": r#"grep -q 'internal' && echo '{"additionalContext": "redacted a host name", "replaceOutput": "[redacted]"}'"#
    }));
    env.set_condition(json!({
        "name": "flag", "step": "post", "matcher": "mcp",
        "script": "echo 'this issue is tracked elsewhere' >&2; exit 2"
    }));
    let run = env.hook("PostToolUse", &fixture("post_tool_use_mcp"));
    let answer = run.answer.clone().unwrap();
    assert_eq!(
        answer,
        json!({
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": "[condition redact] redacted a host name",
                "updatedToolOutput": "[redacted]",
                "updatedMCPToolOutput": "[redacted]",
            },
            "decision": "block",
            "reason": "condition `flag`: this issue is tracked elsewhere",
        })
    );
}

#[test]
fn failing_scripts_and_bad_answers_are_reported_without_blocking() {
    let env = Env::new();
    env.set_condition(pre("broken", "any", "echo boom >&2; exit 1"));
    env.set_condition(pre(
        "confused",
        "any",
        r#"echo '{"decision": "maybe", "colour": 1}'"#,
    ));
    let run = env.hook("PreToolUse", &bash_call("s1", "ls"));
    assert_eq!(run.specific("permissionDecision"), None);
    let context = run.context();
    assert!(
        context.contains("[condition broken] exited with status 1: boom; the call was not blocked"),
        "{context}"
    );
    assert!(
        context.contains("`decision` must be allow, ask or deny (got `maybe`)")
            && context.contains("unknown field `colour`"),
        "{context}"
    );
    assert!(run.stderr.contains("[condition broken]"), "{}", run.stderr);
}

#[test]
fn async_conditions_run_detached() {
    let env = Env::new();
    let go = env.dir.path().join("go");
    let marker = env.dir.path().join("async.out");
    // The script waits for the test's go-ahead (at most 30 s): the hook can only have returned
    // before it if nobody waited for the script.
    env.set_condition(json!({
        "name": "audit", "step": "pre", "matcher": "bash", "run_async": true,
        "script": format!(
            "for i in $(seq 600); do [ -e '{go}' ] && break; sleep 0.05; done; \
             cat > '{out}.tmp'; mv '{out}.tmp' '{out}'",
            go = go.display(),
            out = marker.display()
        ),
    }));
    let run = env.hook("PreToolUse", &bash_call("s1", "make release"));
    assert!(
        run.answer.is_none(),
        "an async condition answers nothing: {:?}",
        run.answer
    );
    assert!(
        !marker.exists(),
        "the script cannot have finished before the go-ahead"
    );
    std::fs::write(&go, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the async condition never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&marker).unwrap()).unwrap();
    assert_eq!(seen["tool_input"]["command"], json!("make release"));
}
