//! Claude Code's lifecycle events beyond the four (code.claude.com/docs/en/hooks): a compacted
//! session gets its unacknowledged alerts and the reminders again, an ended session is no longer
//! counted, a subagent receives the critical messages as its own recipient, a `Stop` is blocked
//! once for a message published during the turn, every other event is answered with nothing and
//! counted; a message to one session reaches that session alone. Over the real hook binary, the
//! operator commands and (for the HTTP hooks) the daemon.

use serde_json::{Value, json};

use crate::forward::{Daemon, TOKEN};
use crate::support::{Env, HookRun, fixture_for};

/// A recorded Claude Code payload from `tests/fixtures/hooks/claude/<name>.json`, for
/// `session` (each file names its source).
fn claude(name: &str, session: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/hooks/claude")
        .join(format!("{name}.json"));
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        file["source"]
            .as_str()
            .is_some_and(|s| s.contains("code.claude.com/docs/en/hooks")),
        "{name}: every Claude Code fixture names its source"
    );
    let mut payload = file["payload"].clone();
    payload["session_id"] = session.into();
    payload
}

/// Every recorded Claude Code payload: (file name, event, payload).
fn every_claude_fixture() -> Vec<(String, String, Value)> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hooks/claude");
    let mut found: Vec<(String, String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let payload = claude(&name, "s-fixture");
            let event = payload["hook_event_name"].as_str().unwrap().to_owned();
            (name, event, payload)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

fn publish(env: &Env, channel: &str, text: &str, severity: &str, to: Option<&str>) -> i64 {
    let mut args = vec!["channel", "publish", channel, text, "--severity", severity];
    if let Some(to) = to {
        args.extend(["--to", to]);
    }
    env.cli_json(&args)["id"].as_i64().unwrap()
}

fn prompt(env: &Env, session: &str) -> HookRun {
    env.hook(
        "UserPromptSubmit",
        &fixture_for("user_prompt_submit", session),
    )
}

fn sessions(env: &Env, all: bool) -> Vec<Value> {
    let mut args = vec!["sessions"];
    if all {
        args.push("--all");
    }
    env.cli_json(&args)["sessions"].as_array().unwrap().clone()
}

fn ids(rows: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = rows
        .iter()
        .map(|r| r["session_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_compacted_session_gets_its_unacknowledged_alerts_and_the_reminders_again() {
    let env = Env::new();
    let alert = publish(&env, "deploys", "freeze until noon", "alert", None);
    let critical = publish(&env, "ops", "db is down", "critical", None);
    publish(&env, "global", "standup at ten", "info", None);
    env.cli(&["enforcement", "set", "run the tests", "--cadence", "5"]);
    let first = prompt(&env, "s1").context();
    assert!(first.contains("freeze until noon") && first.contains("standup at ten"));
    env.cli(&[
        "channel",
        "ack",
        &critical.to_string(),
        "--session-id",
        "s1",
    ]);
    for source in ["compact", "resume", "clear"] {
        let run = env.hook(
            "SessionStart",
            &claude(&format!("session_start_{source}"), "s1"),
        );
        let context = run.context();
        assert!(
            context.contains("this session's id is `s1`"),
            "{source}: {context}"
        );
        assert!(
            context.contains(&format!("[ALERT #{alert} deploys] freeze until noon")),
            "{source}: {context}"
        );
        assert!(
            context.contains("[REMINDER #1] run the tests (every 5 tool calls)"),
            "{source}: {context}"
        );
        assert!(!context.contains("db is down"), "acknowledged: {context}");
        assert!(
            !context.contains("standup"),
            "info is shown once: {context}"
        );
        assert_eq!(run.stderr, "", "{source}");
    }
    // A new session's start keeps today's answer: the banner only.
    let startup = env.hook("SessionStart", &claude("session_start_startup", "s1"));
    assert!(
        !startup.context().contains("freeze"),
        "{}",
        startup.context()
    );
    assert!(
        !startup.context().contains("REMINDER"),
        "{}",
        startup.context()
    );
}

#[test]
fn a_compaction_resume_or_clear_leaves_due_schedules_to_the_next_prompt() {
    let env = Env::new();
    prompt(&env, "s1");
    env.schedule_due_now("ops", "scheduled hello");
    for source in ["compact", "resume", "clear"] {
        let run = env.hook(
            "SessionStart",
            &claude(&format!("session_start_{source}"), "s1"),
        );
        assert!(
            !run.context().contains("scheduled hello"),
            "{source}: {}",
            run.context()
        );
    }
    let schedules = env.cli_json(&["schedule", "list"]);
    assert_eq!(
        schedules["schedules"][0]["status"],
        json!("active"),
        "not fired yet: {schedules}"
    );
    // The session's next prompt fires it, and shows it.
    let next = prompt(&env, "s1").context();
    assert!(next.contains("scheduled hello"), "{next}");
    let schedules = env.cli_json(&["schedule", "list"]);
    assert_eq!(
        schedules["schedules"][0]["status"],
        json!("completed"),
        "{schedules}"
    );
}

#[test]
fn an_ended_session_is_no_longer_counted_and_listed_with_all() {
    let env = Env::new();
    let id = publish(&env, "global", "rotate the keys", "alert", None);
    for s in ["s1", "s2"] {
        prompt(&env, s);
    }
    assert_eq!(ids(&sessions(&env, false)), ["s1", "s2"]);
    let end = env.hook("SessionEnd", &claude("session_end", "s1"));
    assert!(end.answer.is_none(), "{:?}", end.answer);
    assert_eq!(end.stderr, "");
    assert_eq!(ids(&sessions(&env, false)), ["s2"]);
    let all = sessions(&env, true);
    assert_eq!(ids(&all), ["s1", "s2"]);
    let s1 = all.iter().find(|r| r["session_id"] == "s1").unwrap();
    assert!(s1["ended_at"].is_i64(), "{s1}");
    assert_eq!(s1["live"], json!(false), "{s1}");
    let text = env.cli(&["sessions", "--all"]);
    assert!(text.contains("s1 ended"), "{text}");
    // The delivery report expects the live session only.
    let report = env.cli_json(&["channel", "status", &id.to_string()]);
    assert_eq!(report["live_subscribed"], json!(1), "{report}");
    // A compaction only reads (it happens mid-work in a live session): it records nothing.
    env.hook("SessionStart", &claude("session_start_compact", "s1"));
    assert_eq!(ids(&sessions(&env, false)), ["s2"]);
    // A resumed session is live again.
    env.hook("SessionStart", &claude("session_start_resume", "s1"));
    assert_eq!(ids(&sessions(&env, false)), ["s1", "s2"]);
}

#[test]
fn a_subagent_receives_the_critical_messages_as_its_own_recipient() {
    let env = Env::new();
    publish(&env, "ops", "lunch is served", "info", None);
    prompt(&env, "parent");
    let critical = publish(&env, "ops", "stop all deploys", "critical", None);
    let run = env.hook("SubagentStart", &claude("subagent_start", "parent"));
    assert_eq!(run.specific("hookEventName"), Some(&json!("SubagentStart")));
    let context = run.context();
    assert!(
        context.contains(&format!("[CRITICAL #{critical} ops] stop all deploys")),
        "{context}"
    );
    assert!(
        !context.contains("lunch"),
        "no info into a subagent: {context}"
    );
    let all = sessions(&env, true);
    let child = all
        .iter()
        .find(|r| r["session_id"] == "parent/agent-abc123")
        .unwrap_or_else(|| panic!("{all:?}"));
    assert_eq!(child["parent_id"], json!("parent"), "{child}");
    // Recorded as delivered to the subagent, which then ends with its stop.
    let report = env.cli_json(&["channel", "status", &critical.to_string()]);
    let delivered: Vec<&str> = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["delivered_at"].is_null())
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert!(delivered.contains(&"parent/agent-abc123"), "{report}");
    let stop = env.hook("SubagentStop", &claude("subagent_stop", "parent"));
    assert!(stop.answer.is_none() && stop.stderr.is_empty(), "{stop:?}");
    assert_eq!(ids(&sessions(&env, false)), ["parent"]);
}

#[test]
fn a_stop_is_blocked_once_for_a_message_published_during_the_turn() {
    let env = Env::new();
    publish(&env, "global", "published before the turn", "alert", None);
    prompt(&env, "s1");
    let stop =
        |payload: &Value, vars: &[(&str, &str)]| env.hook_with("Stop", &payload.to_string(), vars);
    let quiet = stop(&claude("stop", "s1"), &[]);
    assert!(quiet.answer.is_none(), "nothing new: {:?}", quiet.answer);
    let id = publish(&env, "ops", "the release is cancelled", "critical", None);
    let blocked = stop(&claude("stop", "s1"), &[]);
    assert_eq!(
        blocked.answer,
        Some(json!({
            "decision": "block",
            "reason": format!(
                "{}\n[CRITICAL #{id} ops] the release is cancelled \
                 (ack: channel_acknowledge message_id={id})",
                hook_dispatch::clients::PUSH_HEADER
            ),
        }))
    );
    assert_eq!(blocked.stderr, "");
    // Never twice for the same message, whether or not the client says a stop hook ran.
    for name in ["stop", "stop_active"] {
        let again = stop(&claude(name, "s1"), &[]);
        assert!(again.answer.is_none(), "{name}: {:?}", again.answer);
    }
    // A stop the client says was already continued never blocks, nor does the setting's off.
    publish(&env, "ops", "another one", "alert", None);
    assert!(stop(&claude("stop_active", "s1"), &[]).answer.is_none());
    assert!(
        stop(&claude("stop", "s1"), &[("HOOKS_MCP_STOP_BLOCK", "off")])
            .answer
            .is_none()
    );
    // The setting holds on every path to the store, `hook --client claude` among them.
    let off = env.hook_args(
        &["hook", "--client", "claude", "Stop"],
        &claude("stop", "s1").to_string(),
        &[("HOOKS_MCP_STOP_BLOCK", "off")],
    );
    assert!(off.answer.is_none(), "{off:?}");
    // A value that is neither on nor off is named, and blocking stays on.
    let last = stop(&claude("stop", "s1"), &[("HOOKS_MCP_STOP_BLOCK", "of")]);
    assert!(
        last.answer.as_ref().unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("another one"),
        "{last:?}"
    );
    assert_eq!(
        last.stderr
            .matches("HOOKS_MCP_STOP_BLOCK: `of` is neither on nor off")
            .count(),
        1,
        "named once: {last:?}"
    );
}

#[test]
fn a_message_to_one_session_reaches_it_and_no_other() {
    let env = Env::new();
    for s in ["s1", "s2"] {
        prompt(&env, s);
    }
    let id = publish(&env, "ops", "please rebase on main", "alert", Some("s1"));
    let s1 = env.hook_with(
        "UserPromptSubmit",
        &fixture_for("user_prompt_submit", "s1").to_string(),
        &[("HOOKS_MCP_CHANNELS", "deploys")],
    );
    assert!(
        s1.context()
            .contains(&format!("[ALERT #{id} ops, to you] please rebase on main")),
        "whatever its subscriptions: {}",
        s1.context()
    );
    let s2 = prompt(&env, "s2");
    assert!(!s2.context().contains("rebase"), "{}", s2.context());
    let read = env.cli_json(&["channel", "read", "--session-id", "s2"]);
    assert!(!read.to_string().contains("rebase"), "{read}");
    let report = env.cli_json(&["channel", "status", &id.to_string()]);
    assert_eq!(report["live_subscribed"], json!(1), "{report}");
    assert_eq!(report["delivered"], json!(1), "{report}");
    assert_eq!(report["message"]["target"], json!("s1"), "{report}");
}

#[test]
fn every_claude_code_event_is_answered_and_the_quiet_ones_are_counted() {
    let env = Env::new();
    publish(&env, "global", "hello", "info", None);
    let handled = [
        "SessionStart",
        "SessionEnd",
        "SubagentStart",
        "SubagentStop",
        "Stop",
    ];
    let mut quiet = 0;
    for (name, event, payload) in every_claude_fixture() {
        let run = env.hook(&event, &payload);
        assert_eq!(run.stderr, "", "{name}");
        if !handled.contains(&event.as_str()) {
            assert!(run.answer.is_none(), "{name}: {:?}", run.answer);
            quiet += 1;
        }
    }
    // One recorded payload for each event the hook answers with nothing, each counted once.
    assert_eq!(quiet, hook_dispatch::QUIET_EVENTS.len());
    let status = env.run(&["status", "--json"], "", &[]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["quiet"]["count"], json!(quiet), "{status}");
    for event in hook_dispatch::QUIET_EVENTS {
        assert_eq!(
            status["quiet"]["events"][event],
            json!(1),
            "{event}: {status}"
        );
    }
    // Garbage still says what is wrong.
    let garbage = env.hook_with("NotAnEvent", "{}", &[]);
    assert!(
        garbage.stderr.contains("unknown event `NotAnEvent`"),
        "{}",
        garbage.stderr
    );
}

/// The new events for one session, one step at a time: what each step does first.
enum Step {
    Hook(&'static str, &'static str),
    Publish(&'static str, &'static str),
}

#[test]
fn http_and_command_hooks_answer_the_lifecycle_events_alike() {
    let env = Env::new();
    env.cli(&["enforcement", "set", "run the tests", "--cadence", "5"]);
    let daemon = Daemon::start(&env, None);
    let steps = [
        Step::Hook("SessionStart", "session_start_startup"),
        Step::Publish("ops", "critical"),
        Step::Hook("SubagentStart", "subagent_start"),
        Step::Publish("deploys", "alert"),
        Step::Hook("Stop", "stop"),
        Step::Hook("Stop", "stop"),
        Step::Hook("SessionStart", "session_start_compact"),
        Step::Hook("PreCompact", "pre_compact"),
        Step::Hook("Notification", "notification"),
        Step::Hook("SubagentStop", "subagent_stop"),
        Step::Hook("SessionEnd", "session_end"),
    ];
    let mut answers = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Publish(channel, severity) => {
                publish(&env, channel, &format!("news {i}"), severity, None);
            }
            Step::Hook(event, fixture) => {
                let with = |session: &str| claude(fixture, session).to_string();
                let command = env.run(
                    &["hook", event],
                    &with("session-command"),
                    &[("HOOKS_MCP_HOOK_FORWARD", "off")],
                );
                assert_eq!(command.status.code(), Some(0));
                let printed = String::from_utf8(command.stdout).unwrap();
                let (status, _, body) = crate::support::http(
                    daemon.port,
                    "POST",
                    &format!("/hooks/{event}"),
                    &[
                        ("Content-Type", "application/json"),
                        ("Authorization", &format!("Bearer {TOKEN}")),
                    ],
                    &with("session-http"),
                );
                assert_eq!(
                    status,
                    if printed.is_empty() { 204 } else { 200 },
                    "{event}: {body}\n{}",
                    daemon.text()
                );
                assert_eq!(
                    body.replace("session-http", "<session>"),
                    printed.replace("session-command", "<session>"),
                    "step {i}, {event}: the HTTP hook's body differs from the command hook's"
                );
                answers.push((*event, printed));
            }
        }
    }
    let said = |event: &str, text: &str| {
        answers
            .iter()
            .filter(|(e, printed)| *e == event && printed.contains(text))
            .count()
    };
    assert_eq!(said("SubagentStart", "news 1"), 1, "{answers:?}");
    assert_eq!(said("Stop", "\"decision\":\"block\""), 1, "{answers:?}");
    assert_eq!(said("SessionStart", "[REMINDER #1]"), 1, "{answers:?}");
    let health = daemon.health().unwrap();
    assert_eq!(health["hooks"]["http"]["quiet"], json!(2), "{health}");
}
