//! Pushing into an idle session (`HOOKS_MCP_CHANNEL_PUSH`): a session that only opened with the
//! legacy handshake is sent `notifications/claude/channel` within a second of another process
//! publishing an alert or a critical message, never for `info`, while it stays the one-threaded
//! front end; with push off nothing is declared or pushed; a 2026-07-28 session is never
//! pushed into; after a handoff the full server goes on from where the front end stopped; on
//! PostgreSQL the full server serves (and pushes) from the start.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::pg;

use crate::support::*;

const PUSH: (&str, &str) = ("HOOKS_MCP_CHANNEL_PUSH", "on");
const METHOD: &str = "notifications/claude/channel";
/// How soon a push must follow its publication.
const WITHIN: Duration = Duration::from_secs(1);
/// How long to wait for a push that must not come.
const QUIET: Duration = Duration::from_millis(1500);

fn modern(id: impl Into<Value>, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    });
    request(id, method, params)
}

fn exe(s: &Server) -> PathBuf {
    std::fs::read_link(format!("/proc/{}/exe", s.pid())).unwrap()
}

/// Still the front end: its binary, one thread, the store not open.
fn assert_light(s: &Server) {
    assert!(exe(s).ends_with("hooks-mcp"), "{:?}", exe(s));
    assert_eq!(s.threads(), 1, "the light path runs on one thread");
    assert!(
        !s.open_files().iter().any(|p| is_store(p)),
        "the light path opened the store: {:?}",
        s.open_files()
    );
}

/// Publishes with the full binary's CLI (another process) into `s`'s store; returns when the
/// publication is committed (the CLI exited).
fn publish(s: &Server, env: &[(&str, &str)], channel: &str, severity: &str, text: &str) {
    let out = Command::new(full_bin())
        .args(["channel", "publish", channel, text, "--severity", severity])
        .env("HOOKS_MCP_HOME", s.home.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// The next push within [`WITHIN`] of now, checked: its method and the meta keys Claude Code
/// keeps. Fails on any other line.
fn pushed(s: &mut Server) -> Value {
    let started = Instant::now();
    let Some(line) = s.recv_within(WITHIN) else {
        panic!(
            "nothing pushed within {WITHIN:?} (waited {:?}); stderr: {}",
            started.elapsed(),
            s.stderr_text()
        );
    };
    assert_eq!(line["method"], METHOD, "{line}");
    let meta = line["params"]["meta"].as_object().unwrap();
    for key in meta.keys() {
        assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
    line["params"].clone()
}

fn assert_nothing_pushed(s: &mut Server) {
    if let Some(line) = s.recv_within(QUIET) {
        panic!("unexpected line: {line}");
    }
}

fn capability(result: &Value) -> &Value {
    &result["capabilities"]["experimental"]["claude/channel"]
}

/// Publishes an info message (never pushed), then an alert, which must be pushed within a second.
fn info_then_alert(s: &mut Server, env: &[(&str, &str)], tag: &str) {
    publish(s, env, "ops", "info", &format!("info {tag}"));
    assert_nothing_pushed(s);
    publish(s, env, "ops", "alert", &format!("alert {tag}"));
    let params = pushed(s);
    assert_eq!(params["meta"]["channel"], "ops");
    assert_eq!(params["meta"]["severity"], "alert");
    let content = params["content"].as_str().unwrap();
    assert!(content.contains(&format!("alert {tag}")), "{content}");
    assert!(content.contains("channel_acknowledge"), "{content}");
}

#[test]
fn an_idle_legacy_session_is_pushed_alerts_not_info_on_one_thread() {
    // Published before the session started: the hooks deliver it, no push.
    let home = tempfile::tempdir().unwrap();
    let home_env = [("HOOKS_MCP_HOME", home.path().to_str().unwrap())];
    let out = Command::new(full_bin())
        .args([
            "channel",
            "publish",
            "ops",
            "before",
            "--severity",
            "critical",
        ])
        .envs(home_env)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut s = Server::with_env(&[PUSH, home_env[0]]);
    let init = s.handshake();
    assert_eq!(capability(&init["result"]), &json!({}), "{init}");
    info_then_alert(&mut s, &home_env, "legacy");
    publish(&s, &home_env, "global", "critical", "everyone");
    let params = pushed(&mut s);
    assert_eq!(params["meta"]["severity"], "critical");
    assert_eq!(params["meta"]["channel"], "global");
    assert_nothing_pushed(&mut s);
    assert_light(&s);
}

#[test]
fn a_2026_session_is_never_pushed_into() {
    // The 2026-07-28 revision sends notifications only on a subscription the client holds:
    // the capability is declared (a legacy session would be pushed), nothing is sent, on the
    // light path and after the hand-off alike.
    let mut s = Server::with_env(&[PUSH]);
    let discover = s.ask(&modern(0, "server/discover", json!({})));
    assert_eq!(capability(&discover["result"]), &json!({}), "{discover}");
    let listed = s.ask(&modern(1, "tools/list", json!({})));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    publish(&s, &[], "ops", "alert", "light path");
    assert_nothing_pushed(&mut s);
    assert_light(&s);
    let called = s.ask(&modern(
        2,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    assert!(called["result"].is_object(), "{called}");
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    publish(&s, &[], "ops", "critical", "full server");
    assert_nothing_pushed(&mut s);
}

#[test]
fn nothing_is_pushed_before_the_session_opens() {
    let mut s = Server::with_env(&[PUSH]);
    std::thread::sleep(Duration::from_millis(300));
    publish(&s, &[], "ops", "alert", "early");
    assert_nothing_pushed(&mut s);
    s.handshake();
    let params = pushed(&mut s);
    assert!(params["content"].as_str().unwrap().contains("early"));
}

#[test]
fn with_push_off_nothing_is_declared_or_pushed() {
    let mut s = Server::start();
    let init = s.handshake();
    assert!(
        init["result"]["capabilities"].get("experimental").is_none(),
        "{init}"
    );
    publish(&s, &[], "ops", "critical", "not pushed");
    assert_nothing_pushed(&mut s);
    let mut modern_session = Server::start();
    let discover = modern_session.ask(&modern(0, "server/discover", json!({})));
    assert!(
        discover["result"]["capabilities"]
            .get("experimental")
            .is_none()
    );
}

#[test]
fn only_the_channels_allowed_and_received_push() {
    let mut s = Server::with_env(&[
        PUSH,
        ("HOOKS_MCP_CHANNELS", "ops,ci"),
        ("HOOKS_MCP_PUSH_CHANNELS", "ci,deploys"),
    ]);
    s.handshake();
    publish(&s, &[], "ops", "critical", "received, not allowed");
    publish(&s, &[], "deploys", "critical", "allowed, not received");
    publish(&s, &[], "ci", "alert", "allowed and received");
    let params = pushed(&mut s);
    assert_eq!(params["meta"]["channel"], "ci", "{params}");
    assert_nothing_pushed(&mut s);
}

#[test]
fn after_a_handoff_the_full_server_goes_on_without_repeats() {
    let mut s = Server::with_env(&[PUSH]);
    s.handshake();
    publish(&s, &[], "ops", "alert", "first");
    let first = pushed(&mut s);
    // A tool call hands the session over.
    let listed = s.ask(&call(2, "channel_list", json!({})));
    assert!(listed["result"].is_object(), "{listed}");
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    publish(&s, &[], "ops", "alert", "second");
    let second = pushed(&mut s);
    assert!(second["content"].as_str().unwrap().contains("second"));
    assert_ne!(first["meta"]["message_id"], second["meta"]["message_id"]);
    // The first was not pushed again, and info is not pushed by the full server either.
    publish(&s, &[], "ops", "info", "quiet");
    assert_nothing_pushed(&mut s);
}

#[test]
fn on_postgres_the_full_server_serves_and_pushes_from_the_start() {
    let Some(db) = pg::Database::shared("stdio_push") else {
        pg::note(&pg::no_server_note(
            "the PostgreSQL push test \
             (push::on_postgres_the_full_server_serves_and_pushes_from_the_start) was",
        ));
        return;
    };
    let url = db.url();
    let env = [("HOOKS_MCP_DATABASE_URL", url.as_str())];
    // The channel is this test's own: the shared database may hold others' messages.
    let channel = format!("push-{}", std::process::id());
    let mut s = Server::with_env(&[PUSH, env[0], ("HOOKS_MCP_PUSH_CHANNELS", &channel)]);
    let init = s.handshake();
    assert_eq!(capability(&init["result"]), &json!({}), "{init}");
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    publish(&s, &env, &channel, "alert", "over PostgreSQL");
    let params = pushed(&mut s);
    assert_eq!(params["meta"]["channel"], channel.as_str());
}

#[test]
fn a_bad_push_channel_is_named_once_not_at_every_run() {
    let mut s = Server::with_env(&[PUSH, ("HOOKS_MCP_PUSH_CHANNELS", "ops,no good")]);
    s.handshake();
    for n in 0..3 {
        publish(&s, &[], "ops", "alert", &format!("alert {n}"));
        pushed(&mut s);
    }
    // Three children ran at least; the first said what is wrong with the setting.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut stderr = String::new();
    while !stderr.contains("no good") && Instant::now() < deadline {
        stderr += &s.stderr_text();
    }
    stderr += &s.stderr_text();
    assert_eq!(stderr.matches("`no good`").count(), 1, "{stderr}");
}
