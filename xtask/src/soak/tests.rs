//! Tests of the soak's arithmetic and answer checks; nothing here starts a daemon.

use std::time::{Duration, Instant};

use serde_json::json;

use super::clients::hook_events;
use super::exchange::{check, response_in};
use super::samples::{Sample, expected_firings, growth};
use crate::util::paths;

fn sample(calls: u64, kib: u64) -> Sample {
    Sample {
        at: Duration::ZERO,
        calls,
        requests: calls,
        private_dirty_kib: kib,
        fds: 10,
        threads: 5,
        http_sessions: 0,
        sse_sessions: 0,
        fired: 0,
        errors: 0,
    }
}

#[test]
fn growth_is_the_slope_per_hundred_thousand_calls() {
    let samples = [
        sample(0, 1000),
        sample(100_000, 1500),
        sample(200_000, 2000),
    ];
    let refs: Vec<&Sample> = samples.iter().collect();
    let g = growth(&refs).unwrap();
    assert!((g.slope_kib - 500.0).abs() < 1e-6, "{g:?}");
    assert!((g.endpoints_kib - 500.0).abs() < 1e-6, "{g:?}");
    let flat = [sample(0, 1000), sample(50_000, 1200), sample(100_000, 1000)];
    let refs: Vec<&Sample> = flat.iter().collect();
    assert!(growth(&refs).unwrap().slope_kib.abs() < 1e-6);
    assert!(growth(&refs[..1]).is_none());
}

#[test]
fn responses_are_found_in_json_and_sse_bodies() {
    let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n";
    assert!(response_in(sse, 7).is_some());
    assert!(response_in(sse, 8).is_none());
    assert!(response_in("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}", 3).is_some());
}

#[test]
fn errors_and_tool_errors_are_failures() {
    let ok = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
    assert!(check(&ok, "x").is_ok());
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "m"}});
    assert_eq!(
        check(&rpc, "x").unwrap_err().kind,
        "JSON-RPC error -32602 (x)"
    );
    let tool = json!({"jsonrpc": "2.0", "id": 1, "result": {"isError": true, "content": []}});
    assert_eq!(check(&tool, "x").unwrap_err().kind, "tool error (x)");
}

#[test]
fn firings_expected_count_whole_minutes() {
    let started = Instant::now();
    let created = [started, started + Duration::from_secs(30)];
    assert_eq!(
        expected_firings(&created, started, Duration::from_secs(150)),
        2 + 2
    );
    assert_eq!(
        expected_firings(&created, started, Duration::from_secs(59)),
        0
    );
}

#[test]
fn every_fixture_goes_to_the_http_hook_route_and_forwarded_events_also_to_the_forwarding_one() {
    let events = hook_events(&paths::in_workspace("tests/fixtures/hooks")).unwrap();
    let routes = |event: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e.event == event)
            .map(|e| e.path.as_str())
            .collect()
    };
    // Stop is one of the lifecycle events a command hook answers, and so forwards.
    assert_eq!(routes("Stop"), ["/hook/Stop", "/hooks/Stop"]);
    assert_eq!(
        routes("PreToolUse"),
        ["/hook/PreToolUse", "/hooks/PreToolUse"]
    );
    assert_eq!(
        routes("SessionStart"),
        ["/hook/SessionStart", "/hooks/SessionStart"]
    );
}

#[test]
fn an_event_the_hook_only_counts_goes_to_the_http_hook_route_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notification.json"),
        r#"{"session_id":"s1","hook_event_name":"Notification","message":"idle"}"#,
    )
    .unwrap();
    let events = hook_events(dir.path()).unwrap();
    let routes: Vec<&str> = events.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(routes, ["/hooks/Notification"]);
}
