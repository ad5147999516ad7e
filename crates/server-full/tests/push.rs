//! Pushing into a session from the full server, over an in-memory pipe: the capability it
//! declares is the light front end's, byte for byte (initialize and `server/discover`); an
//! alert another store handle publishes arrives as `notifications/claude/channel` within a
//! second; `info` never does, nor a message to another session; the cursor handed over is
//! respected (nothing before it again).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use catalogue::{Filter, SessionPolicy, StartMode};
use protocol_lite::handshake::{Features, ServerIdentity};
use protocol_lite::push::Cursor;
use serde_json::{Value, json};
use server_full::stdio::Suppress;
use server_full::{ChannelPush, HooksServer, Settings};
use store::ChannelStore;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"push","version":"1"}}}"#;
const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

const MODERN_LIST: &str = r#"{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"push","version":"1"}}}}"#;

struct Session {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    path: std::path::PathBuf,
    _home: tempfile::TempDir,
}

/// A session whose server pushes (from `cursor`) when `push` says so.
fn start(push: Option<Cursor>) -> Session {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("state.db");
    let store = store::SqliteStore::create(&path).unwrap();
    let mut extensions = Settings::extensions(store::StoreHandle(Arc::new(store)));
    extensions.insert(store::Transport::Stdio);
    if let Some(cursor) = push {
        extensions.insert(ChannelPush {
            session: "s1".into(),
            channels: None,
            cursor,
        });
    }
    let settings = Settings {
        filter: Filter::default(),
        session: SessionPolicy::Fallback(Some("s1".into())),
        mode: StartMode::Eager,
        extensions: Arc::new(extensions),
    };
    let server = HooksServer::new(settings).unwrap().0;
    let (input, server_in) = tokio::io::duplex(256 * 1024);
    let (server_out, output) = tokio::io::duplex(256 * 1024);
    tokio::spawn(server_full::stdio::serve(
        server,
        server_in,
        server_out,
        Suppress::default(),
    ));
    Session {
        input,
        output: BufReader::new(output).lines(),
        path,
        _home: home,
    }
}

impl Session {
    async fn send(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.output.next_line()).await {
            Ok(Ok(Some(line))) => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        }
    }

    async fn handshake(&mut self) -> Value {
        self.send(INIT).await;
        let init = self.next_within(Duration::from_secs(10)).await.unwrap();
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        init
    }

    /// Publishes through a store handle of its own (as another process would); returns the id.
    fn publish(&self, severity: store::Severity, body: &str) -> i64 {
        self.publish_to(severity, body, None)
    }

    /// Publishes to one session (`target`) or, with `None`, to the channel.
    fn publish_to(&self, severity: store::Severity, body: &str, target: Option<&str>) -> i64 {
        let writer = store::SqliteStore::create(&self.path).unwrap();
        let now = server_full::now_ms();
        writer
            .publish(
                &store::NewMessage {
                    channel: "ops".into(),
                    body: body.into(),
                    severity,
                    created_at: now,
                    expires_at: now + 3_600_000,
                    target: target.map(str::to_owned),
                },
                &store::Actor::Operator("tests".into()),
            )
            .unwrap()
            .id
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capability_is_the_light_paths_and_alerts_arrive_within_a_second() {
    let mut s = start(Some(Cursor::starting(server_full::now_ms())));
    let init = s.handshake().await;
    let light = ServerIdentity {
        instructions: None,
        channel: true,
    };
    assert_eq!(
        init["result"],
        light.initialize_result_with("2025-11-25", Features::HOOKS_MCP)
    );
    assert_eq!(
        init["result"]["capabilities"]["experimental"]["claude/channel"],
        json!({})
    );
    s.publish(store::Severity::Info, "not pushed");
    let id = s.publish(store::Severity::Alert, "db down");
    let note = s
        .next_within(Duration::from_secs(1))
        .await
        .expect("no push");
    assert_eq!(note["method"], "notifications/claude/channel", "{note}");
    assert_eq!(
        note["params"]["meta"],
        json!({"channel": "ops", "severity": "alert", "message_id": id.to_string()})
    );
    assert_eq!(
        note["params"]["content"],
        format!("[ALERT #{id} ops] db down (ack: channel_acknowledge message_id={id})")
    );
    assert!(s.next_within(Duration::from_millis(800)).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_discover_result_is_the_light_paths_a_2026_session_and_push_off_get_nothing() {
    let mut on = start(Some(Cursor::starting(0)));
    on.send(DISCOVER).await;
    let discover = on.next_within(Duration::from_secs(10)).await.unwrap();
    let light = ServerIdentity {
        instructions: None,
        channel: true,
    };
    assert_eq!(
        discover["result"],
        light.discover_result_with(Features::HOOKS_MCP)
    );
    // A 2026-07-28 request opens rmcp's inline session: it is never pushed into.
    on.send(MODERN_LIST).await;
    let listed = on.next_within(Duration::from_secs(10)).await.unwrap();
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    on.publish(store::Severity::Critical, "not pushed to a 2026 session");
    assert!(on.next_within(Duration::from_millis(800)).await.is_none());
    let mut off = start(None);
    let init = off.handshake().await;
    assert!(
        init["result"]["capabilities"].get("experimental").is_none(),
        "{init}"
    );
    off.publish(store::Severity::Critical, "not pushed");
    assert!(off.next_within(Duration::from_millis(800)).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_cursor_is_respected() {
    // The front end pushed the first two (a fresh store numbers them 1 and 2).
    let cursor = Cursor {
        since_ms: server_full::now_ms(),
        after_id: 2,
    };
    let mut s = start(Some(cursor));
    let ids = [
        s.publish(store::Severity::Alert, "one"),
        s.publish(store::Severity::Critical, "two"),
        s.publish(store::Severity::Alert, "three"),
    ];
    assert_eq!(&ids[..2], &[1, 2]);
    s.handshake().await;
    let note = s
        .next_within(Duration::from_secs(1))
        .await
        .expect("no push");
    assert_eq!(
        note["params"]["meta"]["message_id"],
        ids[2].to_string(),
        "{note}"
    );
    assert!(s.next_within(Duration::from_millis(800)).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_another_session_is_not_pushed() {
    let mut s = start(Some(Cursor::starting(server_full::now_ms())));
    s.handshake().await;
    s.publish_to(store::Severity::Critical, "for s2", Some("s2"));
    let mine = s.publish_to(store::Severity::Alert, "for s1", Some("s1"));
    let note = s
        .next_within(Duration::from_secs(1))
        .await
        .expect("no push");
    assert_eq!(
        note["params"]["meta"]["message_id"],
        mine.to_string(),
        "{note}"
    );
    assert!(s.next_within(Duration::from_millis(800)).await.is_none());
}
