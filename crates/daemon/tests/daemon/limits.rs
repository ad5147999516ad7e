//! The session cap, request body limits and idle expiry.

use serde_json::json;

use crate::support::{Daemon, MCP_POST, SseSession, call, http, initialize, mcp_session};

#[test]
fn sessions_are_capped_bodies_limited_and_idle_sessions_expire() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "limits::sessions_are_capped_bodies_limited_and_idle_sessions_expire",
        home.path(),
        &[
            ("HOOKS_MCP_MAX_SESSIONS", "2"),
            ("HOOKS_MCP_MAX_BODY_BYTES", "4096"),
            ("HOOKS_MCP_SESSION_IDLE_SECS", "2"),
            // One tick at start, then none for an hour: the lag soon passes 1 ms.
            ("HOOKS_MCP_SCHEDULER_TICK_MS", "3600000"),
            ("HOOKS_MCP_SCHEDULER_MAX_LAG_MS", "1"),
        ],
    );
    daemon.wait_ready();
    let addr = daemon.addr;

    // Oversized bodies: 413 on both transports.
    let big = call(
        1,
        "channel_publish",
        json!({ "channel": "x", "message": "y".repeat(8000) }),
    );
    assert_eq!(http(addr, "POST", "/mcp", &MCP_POST, &big).status, 413);
    let mut sse = SseSession::connect(addr, &[]);
    assert_eq!(sse.post(addr, &[], &big), 413);
    sse.handshake(addr, &[]);
    // The console's forms too, its login included (no session needed to send one).
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let login = format!("token={}", "x".repeat(8000));
    let r = http(addr, "POST", "/console/login", &form, &login);
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("HOOKS_MCP_MAX_BODY_BYTES"), "{}", r.body);
    let r = http(addr, "POST", "/console/login", &form, "token=short");
    assert_ne!(r.status, 413, "{}", r.body);

    // The cap counts both transports: one SSE and one Streamable HTTP session fill it.
    let first = mcp_session(addr, &[]);
    let over = http(addr, "POST", "/mcp", &MCP_POST, &initialize(1));
    assert_eq!(over.status, 503, "{}", over.body);
    assert!(
        over.body.contains("HOOKS_MCP_MAX_SESSIONS"),
        "{}",
        over.body
    );
    assert_eq!(http(addr, "GET", "/sse", &[], "").status, 503);
    // 2026-07-28 requests hold no session: a full cap does not refuse them, and a header
    // naming another method cannot carry an `initialize` past it.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let modern = |method: &'static str, body: serde_json::Value| {
        let mut headers = MCP_POST.to_vec();
        headers.extend([
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
        ]);
        if method == "tools/call" {
            headers.push(("Mcp-Name", "channel_list"));
        }
        http(addr, "POST", "/mcp", &headers, &body.to_string())
    };
    for (method, params) in [
        ("server/discover", json!({ "_meta": meta })),
        ("tools/list", json!({ "_meta": meta })),
        (
            "tools/call",
            json!({ "name": "channel_list", "arguments": {}, "_meta": meta }),
        ),
    ] {
        let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
        let reply = modern(method, body);
        assert_eq!(
            reply.status, 200,
            "{method} past a full cap: {}",
            reply.body
        );
        assert!(
            reply.body.contains("\"result\""),
            "{method}: {}",
            reply.body
        );
    }
    let smuggled = modern("tools/list", serde_json::from_str(&initialize(1)).unwrap());
    assert_ne!(smuggled.status, 200, "{}", smuggled.body);
    assert!(
        smuggled.header("mcp-session-id").is_none(),
        "{}",
        smuggled.body
    );
    let deleted = http(
        addr,
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", first.as_str())],
        "",
    );
    assert!(deleted.status < 300, "{}", deleted.status);
    let second = mcp_session(addr, &[]);

    // Sessions idle past HOOKS_MCP_SESSION_IDLE_SECS are closed, which frees their places: a
    // legacy SSE session is gone (the client connects again), a Streamable HTTP one is kept
    // in the store and resumed by its next request, without a new initialize.
    std::thread::sleep(std::time::Duration::from_millis(4500));
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    assert_eq!(sse.post(addr, &[], &list), 404);
    let idle = http(addr, "GET", "/health?level=full", &[], "").json();
    assert_eq!(idle["sessions"]["streamable_http"], 0, "{idle}");
    assert_eq!(idle["sessions"]["sse"], 0, "{idle}");
    // A scheduler lagging past HOOKS_MCP_SCHEDULER_MAX_LAG_MS makes full health degraded,
    // while the plain level still reports the daemon alive and ready.
    let full = http(addr, "GET", "/health?level=full", &[], "");
    assert_eq!(full.status, 503, "{}", full.body);
    let health = full.json();
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(
        health["scheduler"]["lag_ms"].as_i64().unwrap() > 1,
        "{health}"
    );
    assert!(health["scheduler"]["last_tick"].is_string(), "{health}");
    assert_eq!(http(addr, "GET", "/health", &[], "").status, 200);
    // The read API's overview says the same.
    let overview = http(addr, "GET", "/api/v1/overview", &[], "");
    assert_eq!(overview.status, 200, "{}", overview.body);
    assert_eq!(overview.json()["status"], "degraded", "{}", overview.body);
    let headers = [MCP_POST[0], ("Mcp-Session-Id", second.as_str())];
    // Resuming takes a place: past a full cap it gets the cap's answer, not a failed restore.
    let fillers = [mcp_session(addr, &[]), mcp_session(addr, &[])];
    let over = http(addr, "POST", "/mcp", &headers, &list);
    assert_eq!(over.status, 503, "{}", over.body);
    assert!(over.header("retry-after").is_some(), "{}", over.body);
    for filler in &fillers {
        let with_id = [("Mcp-Session-Id", filler.as_str())];
        assert_eq!(http(addr, "DELETE", "/mcp", &with_id, "").status, 200);
    }
    let resumed = http(addr, "POST", "/mcp", &headers, &list);
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    assert!(resumed.body.contains("channel_publish"), "{}", resumed.body);
    let after = http(addr, "GET", "/health?level=full", &[], "").json();
    assert_eq!(after["sessions"]["streamable_http"], 1, "{after}");
    mcp_session(addr, &[]);
}
