//! Channel resources over stdio: a session subscribes (which hands off to the full server),
//! another process publishes with the CLI, and the update arrives within a second; when the
//! message expires, with nothing written since, a second update says so.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use test_support::pg;

use crate::support::{Server, full_bin, request};

#[test]
fn a_stdio_subscriber_hears_of_a_cli_publication_within_a_second() {
    hears_of_a_cli_publication(&[]);
}

#[test]
fn on_postgres_a_stdio_subscriber_hears_of_a_cli_publication_within_a_second() {
    on_postgres(
        "resources::on_postgres_a_stdio_subscriber_hears_of_a_cli_publication_within_a_second",
        hears_of_a_cli_publication,
    );
}

#[test]
fn a_stdio_subscriber_hears_of_an_expiry_with_nothing_written() {
    hears_of_an_expiry(&[]);
}

#[test]
fn on_postgres_a_stdio_subscriber_hears_of_an_expiry_with_nothing_written() {
    on_postgres(
        "resources::on_postgres_a_stdio_subscriber_hears_of_an_expiry_with_nothing_written",
        hears_of_an_expiry,
    );
}

/// A stdio session on PostgreSQL that called a tool ends with exit 0 when its client leaves
/// (the store's connections closed inside the server's runtime: a panic, exit 101).
#[test]
fn on_postgres_a_stdio_session_exits_cleanly_after_a_tool_call() {
    on_postgres(
        "resources::on_postgres_a_stdio_session_exits_cleanly_after_a_tool_call",
        |env| {
            let mut s = Server::with_env(env);
            s.handshake();
            let listed = s.ask(&request(
                2,
                "tools/call",
                json!({"name": "channel_list", "arguments": {}}),
            ));
            assert_eq!(listed["result"]["isError"], false, "{listed}");
            let (status, rest) = s.finish();
            assert!(status.success(), "{status:?} {rest:?}");
        },
    );
}

/// Runs `check` with the environment of a shared throwaway PostgreSQL database, or notes that
/// `test` was skipped where no server can be started.
fn on_postgres(test: &str, check: fn(&[(&str, &str)])) {
    let Some(db) = pg::Database::shared("stdio_resources") else {
        pg::note(&pg::no_server_note(&format!(
            "the PostgreSQL stdio resources test ({test}) was"
        )));
        return;
    };
    check(&[("HOOKS_MCP_DATABASE_URL", &db.url())]);
}

/// A stdio session (with `env`) subscribes; the CLI (with the same `env`) publishes.
fn hears_of_a_cli_publication(env: &[(&str, &str)]) {
    let uri = "hooks://channels/stdio-proof";
    let mut s = subscribed(env, uri);
    let published = Instant::now();
    publish(&s, env, &["stdio-proof", "over the CLI"]);
    let updated_at = next_update(&mut s, uri);
    let latency = updated_at.duration_since(published);
    assert!(latency < Duration::from_secs(1), "took {latency:?}");

    let value = read_channel(&mut s, uri, 3);
    assert_eq!(value["messages"][0]["message"], "over the CLI");
    // The session ends cleanly when its client leaves (on PostgreSQL the store's connections
    // closed inside the server's runtime: a panic, exit 101).
    let (status, rest) = s.finish();
    assert!(status.success(), "{status:?} {rest:?}");
}

/// A stdio session (with `env`) subscribes; the CLI publishes a message that lives one second.
/// Its expiry changes what the resource shows without a write to hear of: the session is told
/// all the same, and the resource then shows no message.
fn hears_of_an_expiry(env: &[(&str, &str)]) {
    let uri = "hooks://channels/expiry-proof";
    let mut s = subscribed(env, uri);
    publish(
        &s,
        env,
        &["expiry-proof", "short-lived", "--ttl-seconds", "1"],
    );
    next_update(&mut s, uri);
    let shown = read_channel(&mut s, uri, 3);
    assert_eq!(shown["messages"][0]["message"], "short-lived", "{shown}");

    // Nothing is written from here on: only the expiry can change the resource.
    next_update(&mut s, uri);
    let shown = read_channel(&mut s, uri, 4);
    let messages = shown["messages"].as_array().unwrap();
    assert!(messages.is_empty(), "still shown after the update: {shown}");
    let (status, rest) = s.finish();
    assert!(status.success(), "{status:?} {rest:?}");
}

/// A stdio session (with `env`) subscribed to `uri` (request 2), once its watcher has had time
/// for its first look.
fn subscribed(env: &[(&str, &str)], uri: &str) -> Server {
    let mut s = Server::with_env(env);
    s.handshake();
    let subscribed = s.ask(&request(2, "resources/subscribe", json!({ "uri": uri })));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    std::thread::sleep(Duration::from_millis(300));
    s
}

/// `hooks-mcp-full channel publish ARGS` on the store of `s` (with `env`); fails the test if
/// the CLI does.
fn publish(s: &Server, env: &[(&str, &str)], args: &[&str]) {
    let status = Command::new(full_bin())
        .args(["channel", "publish"])
        .args(args)
        .env("HOOKS_MCP_HOME", s.home.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
}

/// Waits (5 s at most) for `notifications/resources/updated` about `uri`; when it came.
fn next_update(s: &mut Server, uri: &str) -> Instant {
    let mut kinds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(message) = s.recv_within(left) else {
            panic!("no update within 5 s; saw {kinds:?}");
        };
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        if method == "notifications/resources/updated" {
            assert_eq!(message["params"]["uri"], uri);
            return Instant::now();
        }
        kinds.push(method);
    }
}

/// The channel resource at `uri`, read with request `id`, as JSON.
fn read_channel(s: &mut Server, uri: &str, id: u64) -> serde_json::Value {
    let read = s.ask(&request(id, "resources/read", json!({ "uri": uri })));
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}
