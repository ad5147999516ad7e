//! Both transports end to end, dropped streams and calls, and many short connections.
// `logging/setLevel` is deprecated for future protocol revisions but still served.
#![allow(deprecated)]

use std::sync::OnceLock;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, LoggingLevel, SetLevelRequestParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::{
    Daemon, MCP_POST, SseSession, WriteLock, call, http, initialize, mcp_request, mcp_session,
    open, try_http, wait_health,
};

/// One daemon for the end-to-end tests of this file (its store lives as long as the process).
fn shared(test: &str) -> &'static Daemon {
    static DAEMON: OnceLock<(Daemon, tempfile::TempDir)> = OnceLock::new();
    let (daemon, _) = DAEMON.get_or_init(|| {
        let home = tempfile::tempdir().unwrap();
        let daemon = Daemon::start(test, home.path(), &[]);
        daemon.wait_ready();
        (daemon, home)
    });
    daemon
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_with_the_rmcp_client() {
    let daemon = shared("transports::streamable_http_with_the_rmcp_client");
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(daemon.url("/mcp")),
    );
    let client = ().serve(transport).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "hooks-mcp");
    assert!(
        info.capabilities.logging.is_some(),
        "the logging capability is declared"
    );

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in [
        "channel_publish",
        "enforcement_set",
        "condition_list",
        "schedule_create",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }

    let published = client
        .call_tool(CallToolRequestParams::new("channel_publish").with_arguments(arguments(
            json!({ "channel": "http", "message": "over streamable HTTP", "severity": "alert" }),
        )))
        .await
        .unwrap();
    assert_ne!(published.is_error, Some(true), "{published:?}");
    let id = published.structured_content.as_ref().unwrap()["id"].clone();

    // One process serves many sessions: acting for a session needs its id.
    let anonymous = client
        .call_tool(
            CallToolRequestParams::new("channel_acknowledge")
                .with_arguments(arguments(json!({ "message_id": id }))),
        )
        .await
        .unwrap();
    assert_eq!(anonymous.is_error, Some(true));
    let text = serde_json::to_string(&anonymous.content).unwrap();
    assert!(text.contains("session_id: required"), "{text}");
    let acknowledged = client
        .call_tool(
            CallToolRequestParams::new("channel_acknowledge").with_arguments(arguments(
                json!({ "message_id": id, "session_id": "agent-1" }),
            )),
        )
        .await
        .unwrap();
    assert_ne!(acknowledged.is_error, Some(true), "{acknowledged:?}");
    assert_eq!(
        acknowledged.structured_content.unwrap()["session_id"],
        "agent-1"
    );

    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    client.cancel().await.unwrap();
}

#[test]
fn legacy_sse_end_to_end() {
    let daemon = shared("transports::legacy_sse_end_to_end");
    let addr = daemon.addr;
    let mut sse = SseSession::connect(addr, &[]);
    assert!(
        sse.endpoint.starts_with("/messages?sessionId="),
        "{}",
        sse.endpoint
    );
    sse.handshake(addr, &[]);

    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    assert_eq!(sse.post(addr, &[], &list), 202);
    let tools = sse.next_message();
    assert_eq!(tools["id"], 2);
    assert!(
        tools["result"]["tools"].as_array().unwrap().len() >= 10,
        "{tools}"
    );

    let publish = call(
        3,
        "channel_publish",
        json!({ "channel": "sse", "message": "hello" }),
    );
    assert_eq!(sse.post(addr, &[], &publish), 202);
    let published = sse.next_message();
    assert_eq!(published["id"], 3);
    assert_eq!(
        published["result"]["structuredContent"]["channel"], "sse",
        "{published}"
    );

    // The three health levels see the store and its contents.
    let db = http(addr, "GET", "/health?level=db", &[], "");
    assert_eq!(db.status, 200, "{}", db.body);
    assert_eq!(db.json()["db"]["reachable"], true);
    let full = http(addr, "GET", "/health?level=full", &[], "").json();
    assert_eq!(full["status"], "ok", "{full}");
    assert!(
        full["counts"]["active_broadcasts"].as_u64().unwrap() >= 1,
        "{full}"
    );
    for key in ["enforcements", "conditions", "active_schedules"] {
        assert!(full["counts"][key].is_u64(), "{full}");
    }
    assert!(full["sessions"]["sse"].as_u64().unwrap() >= 1, "{full}");
    let bad = http(addr, "GET", "/health?level=deep", &[], "");
    assert_eq!(bad.status, 400);
    assert!(bad.body.starts_with("level:"), "{}", bad.body);

    // Bad input gets JSON-RPC errors; unknown sessions get 404.
    let garbled = http(addr, "POST", &sse.endpoint, &[], "{not json");
    assert_eq!(garbled.status, 400);
    assert_eq!(garbled.json()["error"]["code"], -32700, "{}", garbled.body);
    let unknown = http(addr, "POST", "/messages?sessionId=nope", &[], &publish);
    assert_eq!(unknown.status, 404);
    let missing = http(addr, "POST", "/messages", &[], &publish);
    assert_eq!(missing.status, 400);

    // The stream is the session: once the client drops it, the session is gone.
    let endpoint = sse.endpoint.clone();
    drop(sse);
    let deadline = std::time::Instant::now() + crate::support::PATIENCE;
    while http(addr, "POST", &endpoint, &[], &list).status != 404 {
        assert!(
            std::time::Instant::now() < deadline,
            "the session outlived its stream"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn dropped_streams_and_calls_leave_the_daemon_healthy() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "transports::dropped_streams_and_calls_leave_the_daemon_healthy",
        home.path(),
        &[("HOOKS_MCP_BUSY_TIMEOUT_MS", "30000")],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let session = mcp_session(addr, &[]);
    let in_session = [MCP_POST[0], ("Mcp-Session-Id", session.as_str())];

    // The standalone GET stream, dropped and opened again.
    let get = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    let stream = open(addr, "GET", "/mcp", &get, "");
    assert_eq!(stream.status, 200, "{}", stream.seen);
    drop(stream);

    // A Streamable HTTP call whose client disconnects while the call waits for the store.
    let lock = WriteLock::take(home.path());
    let body = call(
        5,
        "channel_publish",
        json!({ "channel": "gone", "message": "dropped" }),
    );
    let pending = open(addr, "POST", "/mcp", &in_session, &body);
    assert_eq!(pending.status, 200);
    drop(pending);

    // The same over legacy SSE: the stream goes away mid-call.
    let mut sse = SseSession::connect(addr, &[]);
    sse.handshake(addr, &[]);
    let sse_call = call(
        6,
        "channel_publish",
        json!({ "channel": "gone", "message": "sse" }),
    );
    assert_eq!(sse.post(addr, &[], &sse_call), 202);
    drop(sse);
    drop(lock);

    let health = wait_health(addr, "calls finish and sessions settle", |h| {
        h["in_flight"] == 0 && h["sessions"]["sse"] == 0 && h["sessions"]["streamable_http"] == 1
    });
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(http(addr, "GET", "/health", &[], "").json()["in_flight"], 0);
    // The abandoned Streamable HTTP call still ran: its session outlives the connection, and
    // state lives in the store. (The SSE call may or may not have started before its session
    // closed with the stream.)
    let read = call(8, "channel_read", json!({ "channel": "gone" }));
    let reply = mcp_request(addr, &session, &[], &read);
    let messages = reply["result"]["structuredContent"]["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        messages.iter().any(|m| m["message"] == "dropped"),
        "{reply}"
    );
    assert!(messages.len() <= 2, "{reply}");
    // The GET stream opens again in the same session.
    let again = open(addr, "GET", "/mcp", &get, "");
    assert_eq!(again.status, 200, "{}", again.seen);
}

#[test]
fn a_thousand_connect_disconnect_cycles() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "transports::a_thousand_connect_disconnect_cycles",
        home.path(),
        &[("HOOKS_MCP_MAX_SESSIONS", "8"), ("MCP_TRANSPORT", "sse")],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let session = mcp_session(addr, &[]);
    let get = [
        ("Accept", "text/event-stream"),
        ("Mcp-Session-Id", session.as_str()),
    ];
    for cycle in 0..1000 {
        match cycle % 4 {
            // Connect and hang up without a word.
            0 => drop(std::net::TcpStream::connect(addr).unwrap()),
            // A Streamable HTTP session, opened and deleted.
            1 => {
                let reply = http(addr, "POST", "/mcp", &MCP_POST, &initialize(1));
                assert_eq!(reply.status, 200, "cycle {cycle}: {}", reply.body);
                let id = reply.header("mcp-session-id").unwrap().to_owned();
                let headers = [("Mcp-Session-Id", id.as_str())];
                let deleted = http(addr, "DELETE", "/mcp", &headers, "");
                assert!(deleted.status < 300, "cycle {cycle}: {}", deleted.status);
            }
            // A legacy SSE stream, opened and dropped.
            2 => drop(SseSession::connect(addr, &[])),
            // A session's standalone stream, opened and dropped.
            _ => {
                let stream = open(addr, "GET", "/mcp", &get, "");
                assert_eq!(stream.status, 200, "cycle {cycle}: {}", stream.seen);
            }
        }
        // The cap is 8: sessions must be released as clients go, or cycles start failing.
        if cycle % 4 == 3 {
            let health = try_http(addr, "GET", "/health", &[], "").unwrap();
            assert_eq!(health.status, 200, "cycle {cycle}");
        }
    }
    let health = wait_health(addr, "sessions released", |h| {
        h["sessions"]["sse"] == 0 && h["sessions"]["streamable_http"] == 1
    });
    assert_eq!(health["status"], "ok", "{health}");
    let list = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/list" }).to_string();
    assert!(mcp_request(addr, &session, &[], &list)["result"]["tools"].is_array());
}
