//! `POST /hook/{event}`: behind the token, the `Host` check, the readiness gate and the body
//! limit like `/mcp`; answered by the service the binary supplies, 404 without one; counted in
//! `/health?level=full`.

use crate::support::{Daemon, ECHO_HOOKS_ENV, TOKEN, http, wait_health};

const BEARER: &str = "Bearer test-token-0123456789abcdef";

#[test]
fn hook_events_are_gated_like_mcp_and_answered_by_the_service() {
    let test = "hook_route::hook_events_are_gated_like_mcp_and_answered_by_the_service";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        test,
        home.path(),
        &[
            ("HOOKS_MCP_TOKEN", TOKEN),
            (ECHO_HOOKS_ENV, "1"),
            ("HOOKS_MCP_MAX_BODY_BYTES", "1024"),
            ("HOOKS_MCP_TEST_PHASE_DELAY_MS", "1500"),
        ],
    );
    let addr = daemon.addr;
    let auth = [("Authorization", BEARER)];
    let post =
        |headers: &[(&str, &str)], path: &str, body: &str| http(addr, "POST", path, headers, body);

    // Start-up: 503, like the MCP endpoints (the delay holds the last phase).
    let early = post(&auth, "/hook/PreToolUse", "{}");
    assert_eq!(early.status, 503, "{}", early.body);
    daemon.wait_ready();

    assert_eq!(post(&[], "/hook/PreToolUse", "{}").status, 401);
    let wrong = [("Authorization", "Bearer test-token-0123456789abcdeX")];
    assert_eq!(post(&wrong, "/hook/PreToolUse", "{}").status, 401);
    let evil = [auth[0], ("Host", "evil.example.com")];
    assert_eq!(post(&evil, "/hook/PreToolUse", "{}").status, 403);
    assert_eq!(http(addr, "GET", "/hook/PreToolUse", &auth, "").status, 405);
    let large = format!("{{\"x\":\"{}\"}}", "a".repeat(2000));
    assert_eq!(post(&auth, "/hook/PreToolUse", &large).status, 413);

    let answered = post(&auth, "/hook/PreToolUse", "{\"a\":1}");
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(answered.header("content-type"), Some("application/json"));
    let body = answered.json();
    assert_eq!(body["event"], "PreToolUse", "{body}");
    assert_eq!(body["bytes"], 7, "{body}");
    assert!(
        body["store"].as_str().unwrap().contains("state.db"),
        "{body}"
    );
    assert!(body["now"].as_i64().unwrap() > 0, "{body}");
    let refused = post(&auth, "/hook/Refuse", "{}");
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("refused on purpose"),
        "{}",
        refused.body
    );

    let health = wait_health(addr, "hook counters", |h| h["hooks"].is_object());
    assert_eq!(health["hooks"]["enabled"], true, "{health}");
    assert_eq!(health["hooks"]["answered"], 1, "{health}");
    assert_eq!(health["hooks"]["refused"], 1, "{health}");
    assert!(
        !daemon.log.text().contains(TOKEN),
        "the token leaked into the log"
    );
    drop(daemon);

    // A daemon started without a service answers 404 (hooks then open the store themselves).
    let home = tempfile::tempdir().unwrap();
    let plain = Daemon::start(test, home.path(), &[]);
    plain.wait_ready();
    let missing = http(plain.addr, "POST", "/hook/PreToolUse", &[], "{}");
    assert_eq!(missing.status, 404, "{}", missing.body);
    let health = wait_health(plain.addr, "hook counters", |h| h["hooks"].is_object());
    assert_eq!(health["hooks"]["enabled"], false, "{health}");
}
