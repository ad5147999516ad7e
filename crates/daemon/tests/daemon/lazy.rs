//! Lazy loading over Streamable HTTP: per-session tool sets, and where
//! `notifications/tools/list_changed` goes.

use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::support::{Daemon, MCP_POST, Open, call, http, mcp_request, mcp_session, open};

fn lazy_daemon(test: &str) -> &'static Daemon {
    static DAEMON: OnceLock<(Daemon, tempfile::TempDir)> = OnceLock::new();
    let (daemon, _) = DAEMON.get_or_init(|| {
        let home = tempfile::tempdir().unwrap();
        let daemon = Daemon::start(test, home.path(), &[("HOOKS_MCP_MODE", "lazy")]);
        daemon.wait_ready();
        (daemon, home)
    });
    daemon
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn list(daemon: &Daemon, session: &str) -> Vec<String> {
    let body = json!({"jsonrpc": "2.0", "id": 50, "method": "tools/list"}).to_string();
    names(&mcp_request(daemon.addr, session, &[], &body))
}

/// Opens the session's standalone GET stream, where list_changed is routed.
fn get_stream(daemon: &Daemon, session: &str) -> Open {
    let headers = [("Accept", "text/event-stream"), ("Mcp-Session-Id", session)];
    let stream = open(daemon.addr, "GET", "/mcp", &headers, "");
    assert_eq!(stream.status, 200, "{}", stream.seen);
    stream
}

fn close(daemon: &Daemon, session: &str) {
    let headers = [("Mcp-Session-Id", session)];
    let reply = http(daemon.addr, "DELETE", "/mcp", &headers, "");
    assert!(reply.status < 300, "DELETE: {}", reply.status);
}

#[test]
fn loading_is_per_session() {
    let daemon = lazy_daemon("lazy::loading_is_per_session");
    let a = mcp_session(daemon.addr, &[]);
    let b = mcp_session(daemon.addr, &[]);
    assert_eq!(list(daemon, &a), ["find_tools", "load_modules"]);
    let r = mcp_request(
        daemon.addr,
        &a,
        &[],
        &call(2, "load_modules", json!({"modules": ["scheduler"]})),
    );
    assert_eq!(r["result"]["isError"], false, "{r}");
    let in_a = list(daemon, &a);
    assert!(in_a.contains(&"schedule_list".to_owned()), "{in_a:?}");
    assert_eq!(
        list(daemon, &b),
        ["find_tools", "load_modules"],
        "B must not see A's load"
    );
    let r = mcp_request(daemon.addr, &b, &[], &call(3, "schedule_list", json!({})));
    assert_eq!(r["error"]["code"], -32602, "not loaded in B: {r}");
    let r = mcp_request(daemon.addr, &a, &[], &call(4, "schedule_list", json!({})));
    assert_eq!(r["result"]["isError"], false, "{r}");
    close(daemon, &a);
    close(daemon, &b);
}

#[test]
fn a_first_call_load_notifies_the_get_stream_every_time() {
    let daemon = lazy_daemon("lazy::a_first_call_load_notifies_the_get_stream_every_time");
    for run in 0..100 {
        let session = mcp_session(daemon.addr, &[]);
        let mut stream = get_stream(daemon, &session);
        let mut headers = MCP_POST.to_vec();
        headers.push(("Mcp-Session-Id", &session));
        let reply = http(
            daemon.addr,
            "POST",
            "/mcp",
            &headers,
            &call(2, "load_modules", json!({"modules": ["channels"]})),
        );
        assert_eq!(reply.status, 200, "run {run}: {}", reply.body);
        let response = reply.messages().into_iter().find(|m| m["id"] == 2).unwrap();
        assert_eq!(
            response["result"]["isError"], false,
            "run {run}: {response}"
        );
        // The notification was written to the GET stream before the response was sent.
        assert!(
            stream.read_until("notifications/tools/list_changed"),
            "run {run}: no list_changed on the GET stream: {}",
            stream.seen
        );
        assert!(
            list(daemon, &session).contains(&"channel_publish".to_owned()),
            "run {run}"
        );
        let r = mcp_request(
            daemon.addr,
            &session,
            &[],
            &call(3, "channel_list", json!({})),
        );
        assert_eq!(r["result"]["isError"], false, "run {run}: {r}");
        drop(stream);
        close(daemon, &session);
    }
}

#[test]
fn a_client_without_a_get_stream_gets_the_notification_when_it_opens_one() {
    let daemon =
        lazy_daemon("lazy::a_client_without_a_get_stream_gets_the_notification_when_it_opens_one");
    let session = mcp_session(daemon.addr, &[]);
    let mut headers = MCP_POST.to_vec();
    headers.push(("Mcp-Session-Id", &session));
    let reply = http(
        daemon.addr,
        "POST",
        "/mcp",
        &headers,
        &call(2, "load_modules", json!({"modules": ["enforcement"]})),
    );
    // The POST reply carries only the response: the notification is not on it.
    let messages = reply.messages();
    assert!(
        messages.iter().all(|m| m.get("method").is_none()),
        "{messages:?}"
    );
    // It waits for the session's GET stream and arrives as soon as one opens.
    let mut stream = get_stream(daemon, &session);
    assert!(
        stream.read_until("notifications/tools/list_changed"),
        "{}",
        stream.seen
    );
    drop(stream);
    close(daemon, &session);
}

/// A start mode that cannot be used stops the daemon in its configuration phase, before it
/// creates or opens the store, with the setting's own words.
#[test]
fn an_invalid_start_mode_stops_start_up_before_the_store() {
    let test = "lazy::an_invalid_start_mode_stops_start_up_before_the_store";
    for (env, says) in [
        (
            [("HOOKS_MCP_MODE", "bogus"), ("HOOKS_MCP_MODULES", "")],
            "HOOKS_MCP_MODE: unknown mode `bogus`",
        ),
        (
            [
                ("HOOKS_MCP_MODE", "modules"),
                ("HOOKS_MCP_MODULES", "bogus"),
            ],
            "unknown module `bogus`",
        ),
        (
            [
                ("HOOKS_MCP_MODE", "lazy"),
                ("HOOKS_MCP_MODULES", "channels"),
            ],
            "HOOKS_MCP_MODE=lazy cannot use HOOKS_MCP_MODULES=channels",
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let (status, log, _) = crate::support::run_to_exit(test, home.path(), &env);
        assert!(!status.success(), "{log}");
        assert!(log.contains(says), "{log}");
        assert!(!log.contains("configuration validated"), "{log}");
        assert!(!home.path().join("state.db").exists(), "{log}");
    }
}
