//! Channel resources over stdio: a session subscribes (which hands off to the full server),
//! another process publishes with the CLI, and the update arrives within a second.

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
    let Some(db) = pg::Database::shared("stdio_resources") else {
        pg::note(&pg::no_server_note(
            "the PostgreSQL stdio resources test \
             (resources::on_postgres_a_stdio_subscriber_hears_of_a_cli_publication_within_a_second) was",
        ));
        return;
    };
    hears_of_a_cli_publication(&[("HOOKS_MCP_DATABASE_URL", &db.url())]);
}

/// A stdio session (with `env`) subscribes; the CLI (with the same `env`) publishes.
fn hears_of_a_cli_publication(env: &[(&str, &str)]) {
    let mut s = Server::with_env(env);
    s.handshake();
    let uri = "hooks://channels/stdio-proof";
    let subscribed = s.ask(&request(2, "resources/subscribe", json!({ "uri": uri })));
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    // Let the watcher take its first look before the publication.
    std::thread::sleep(Duration::from_millis(300));

    let published = Instant::now();
    let status = Command::new(full_bin())
        .args(["channel", "publish", "stdio-proof", "over the CLI"])
        .env("HOOKS_MCP_HOME", s.home.path())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let mut kinds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    let updated_at = loop {
        assert!(Instant::now() < deadline, "no update; saw {kinds:?}");
        let message = s.recv();
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        if method == "notifications/resources/updated" {
            assert_eq!(message["params"]["uri"], uri);
            break Instant::now();
        }
        kinds.push(method);
    };
    let latency = updated_at.duration_since(published);
    assert!(latency < Duration::from_secs(1), "took {latency:?}");

    let read = s.ask(&request(3, "resources/read", json!({ "uri": uri })));
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let value: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["messages"][0]["message"], "over the CLI");
}
