//! Start-up phases and health gating, the instance lock, the port check, SIGTERM draining.

use serde_json::json;

use crate::support::{
    self, Daemon, MCP_POST, SseSession, WriteLock, call, http, initialize, mcp_request, mcp_session,
};

#[test]
fn a_store_that_fails_verification_is_never_served() {
    let home = tempfile::tempdir().unwrap();
    {
        // A database that opens at the current schema version but lacks every table.
        let conn = rusqlite::Connection::open(home.path().join("state.db")).unwrap();
        conn.execute_batch("PRAGMA user_version = 1;").unwrap();
    }
    let (status, log, seen) = support::run_to_exit(
        "lifecycle::a_store_that_fails_verification_is_never_served",
        home.path(),
        &[],
    );
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("did not pass verification") && log.contains("lacks table"),
        "{log}"
    );
    assert!(log.contains("move it aside"), "the fix is named: {log}");
    assert!(!log.contains("ready: MCP"), "{log}");
    assert!(
        seen.iter().all(|&s| s == 503),
        "health answers while failing: {seen:?}"
    );
}

#[test]
fn gated_start_single_instance_and_sigterm_drain() {
    let test = "lifecycle::gated_start_single_instance_and_sigterm_drain";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        test,
        home.path(),
        &[
            ("HOOKS_MCP_TEST_PHASE_DELAY_MS", "2000"),
            ("HOOKS_MCP_BUSY_TIMEOUT_MS", "30000"),
        ],
    );
    let addr = daemon.addr;

    // Start-up: /health and MCP answer 503 with the phase until the last phase completes.
    let mut saw_listener_phase = false;
    loop {
        // MCP first, then health: phases only move forward, so while health still reports a
        // start-up phase, the MCP request before it was answered during start-up too.
        let mcp = http(addr, "POST", "/mcp", &MCP_POST, &initialize(1));
        let api = http(addr, "GET", "/api/v1/channels", &[], "");
        let db = http(addr, "GET", "/health?level=db", &[], "");
        let health = http(addr, "GET", "/health", &[], "");
        if health.status == 200 {
            break;
        }
        assert_eq!(health.status, 503, "{}", health.body);
        assert_eq!(mcp.status, 503, "MCP before ready: {}", mcp.body);
        assert_eq!(db.status, 503, "db health before ready: {}", db.body);
        // The read API's error shape: one `error` line saying what to do.
        assert_eq!(api.status, 503, "read API before ready: {}", api.body);
        let refused = api.json();
        let error = refused["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("the daemon is starting (phase ") && error.contains("retry"),
            "{refused}"
        );
        let body = health.json();
        assert_eq!(body["status"], "starting", "{body}");
        let phase = body["phase"].as_str().unwrap();
        assert!(
            [
                "config",
                "store-open",
                "store-verify",
                "registry",
                "scheduler",
                "listener"
            ]
            .contains(&phase),
            "{body}"
        );
        saw_listener_phase |= phase == "listener";
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        saw_listener_phase,
        "the delayed last phase was never visible"
    );
    let log = daemon.log.text();
    let order = [
        "configuration validated",
        "store opened",
        "store verified",
        "tool registry built",
        "scheduler started",
        "listener serving MCP",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|p| {
            log.find(p)
                .unwrap_or_else(|| panic!("phase `{p}` not logged:\n{log}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{log}");
    assert!(
        log.contains("phase=\"store-verify\" ms="),
        "durations are logged: {log}"
    );

    // A second daemon on the same store stops at once, naming the first one's pid.
    let other_port = tempfile::tempdir().unwrap();
    let (status, log, _) = support::run_to_exit(test, home.path(), &[]);
    assert!(!status.success());
    assert!(
        log.contains(&format!("another hooks-mcp daemon (pid {})", daemon.pid())),
        "{log}"
    );
    // A daemon with its own store but the same port gets a clear error.
    let port = addr.port().to_string();
    let (status, log, _) = support::run_to_exit(test, other_port.path(), &[("MCP_PORT", &port)]);
    assert!(!status.success());
    assert!(log.contains("already in use"), "{log}");

    // SIGTERM while a call waits for the store and streams are open: the call completes, the
    // streams end, and the daemon exits 0.
    let session = mcp_session(addr, &[]);
    let mut sse = SseSession::connect(addr, &[]);
    sse.handshake(addr, &[]);
    let get = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let mut standalone = support::open(addr, "GET", "/mcp", &get, "");
    assert_eq!(standalone.status, 200);
    let lock = WriteLock::take(home.path());
    let body = call(
        7,
        "channel_publish",
        json!({ "channel": "ops", "message": "drain" }),
    );
    let headers = [MCP_POST[0], ("Mcp-Session-Id", session.as_str())];
    let mut pending = support::open(addr, "POST", "/mcp", &headers, &body);
    assert_eq!(pending.status, 200);
    daemon.signal("TERM");
    assert!(daemon.log.wait_for("SIGTERM received").is_some());
    let refused = support::try_http(addr, "GET", "/health", &[], "");
    assert!(
        refused.as_ref().is_none_or(|r| r.status == 503),
        "a stopping daemon takes no new work: {refused:?}"
    );
    drop(lock);
    assert!(pending.read_until("\"id\":7"), "{}", pending.seen);
    assert!(pending.read_until("\n\n"), "{}", pending.seen);
    let reply = support::sse_messages(&pending.seen)
        .into_iter()
        .find(|m| m["id"] == 7)
        .unwrap();
    assert_eq!(
        reply["result"]["structuredContent"]["channel"], "ops",
        "{reply}"
    );
    let status = daemon.wait_exit();
    assert!(status.success(), "{status:?}\n{}", daemon.log.text());
    assert!(!sse.stream.read_until("never sent"), "the SSE stream ended");
    assert!(!standalone.read_until("never sent"), "the GET stream ended");
    let log = daemon.log.text();
    assert!(log.contains("in-flight calls finished"), "{log}");
    assert!(!log.contains("did not close in time"), "{log}");
    assert!(log.contains("the store is closed"), "{log}");
    // The store was left consistent, with the drained call's write in it.
    let conn = rusqlite::Connection::open(home.path().join("state.db")).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let ops: i64 = conn
        .query_row(
            "SELECT count(*) FROM messages WHERE channel = 'ops'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ops, 1);
}

#[test]
fn a_network_address_without_a_token_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let (status, log, seen) = support::run_to_exit(
        "lifecycle::a_network_address_without_a_token_is_refused",
        home.path(),
        &[("MCP_HOST", "0.0.0.0")],
    );
    assert!(!status.success());
    assert!(
        log.contains("MCP_HOST:") && log.contains("HOOKS_MCP_TOKEN"),
        "{log}"
    );
    assert!(
        seen.is_empty() && !log.contains("listening on http://"),
        "{log}"
    );
}

/// A stopping daemon whose scheduler is inside a look at the store that cannot end (another
/// process holds the write lock as a schedule comes due) stops without waiting for it.
#[test]
fn a_stop_does_not_wait_for_a_scheduler_held_by_the_store() {
    let test = "lifecycle::a_stop_does_not_wait_for_a_scheduler_held_by_the_store";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(test, home.path(), &[("HOOKS_MCP_DRAIN_SECS", "0")]);
    daemon.wait_ready();
    let addr = daemon.addr;
    let session = mcp_session(addr, &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let due = now + 1_500;
    let created = mcp_request(
        addr,
        &session,
        &[],
        &call(
            2,
            "schedule_create",
            json!({"channel": "ops", "message": "due", "at": store::to_rfc3339(due)}),
        ),
    );
    assert_eq!(created["result"]["isError"], false, "{created}");
    let lock = WriteLock::take(home.path());
    // Past the due time, the scheduler's look waits on the lock (for up to the store's busy
    // timeout of 5 s); the stop comes while it waits.
    let past_due = std::time::Duration::from_millis(u64::try_from(due - now).unwrap() + 1_000);
    std::thread::sleep(past_due);
    daemon.signal("TERM");
    let status = daemon.wait_exit();
    drop(lock);
    assert!(status.success(), "{status:?}\n{}", daemon.log.text());
    let log = daemon.log.text();
    assert!(log.contains("stopping without it"), "{log}");
}
