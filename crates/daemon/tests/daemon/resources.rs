//! Channel resources over Streamable HTTP with rmcp's client: listing, reading, completion,
//! and subscriptions notified when another process publishes.
// `resources/subscribe` is legacy-only in rmcp (2026-07-28 replaces it); the revisions this
// server negotiates define it.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, ReadResourceRequestParams, Reference,
    ResourceUpdatedNotificationParam, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::NotificationContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use store::{ChannelStore, NewMessage, Severity, SqliteStore};

use crate::support::Daemon;

/// Records the resource notifications the client receives, with when they arrived.
#[derive(Debug, Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl ClientHandler for Recorder {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push((params.uri, Instant::now()));
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.seen
            .lock()
            .unwrap()
            .push(("list_changed".into(), Instant::now()));
    }
}

impl Recorder {
    /// Waits up to 5 s for `what`; returns when it arrived.
    async fn wait_for(&self, what: &str) -> Option<Instant> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Some((_, at)) = self.seen.lock().unwrap().iter().find(|(w, _)| w == what) {
                return Some(*at);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }
}

fn publish(home: &std::path::Path, channel: &str) -> Instant {
    let store = SqliteStore::create(home.join("state.db")).unwrap();
    let now = server_full::now_ms();
    store
        .publish(
            &NewMessage {
                channel: channel.into(),
                body: format!("news on {channel}"),
                severity: Severity::Info,
                created_at: now,
                expires_at: now + 3_600_000,
                target: None,
            },
            &store::Actor::Daemon,
        )
        .unwrap();
    Instant::now()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_hears_of_another_process_publishing_within_a_second() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "resources::a_subscriber_hears_of_another_process_publishing_within_a_second",
        home.path(),
        &[],
    );
    daemon.wait_ready();
    let recorder = Recorder::default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(daemon.url("/mcp")),
    );
    let client = recorder.clone().serve(transport).await.unwrap();
    let info = client.peer_info().unwrap();
    assert!(info.capabilities.completions.is_some());
    assert_eq!(
        info.capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe),
        Some(true)
    );

    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "hooks://channels/{channel}");
    assert!(client.list_all_resources().await.unwrap().is_empty());

    let uri = "hooks://channels/proof";
    client
        .subscribe(SubscribeRequestParams::new(uri))
        .await
        .unwrap();
    // Give the watcher a moment to take its first look, then publish from this process.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let published = publish(home.path(), "proof");
    let updated = recorder.wait_for(uri).await.expect("no resources/updated");
    let latency = updated.duration_since(published);
    assert!(latency < Duration::from_secs(1), "took {latency:?}");
    recorder
        .wait_for("list_changed")
        .await
        .expect("no resources/list_changed for the new channel");

    let listed = client.list_all_resources().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].uri, uri);
    let value = read_json(&client, uri).await;
    assert_eq!(value["messages"][0]["message"], "news on proof");

    let completed = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("hooks://channels/{channel}"),
            ArgumentInfo::new("channel", "pr"),
        ))
        .await
        .unwrap();
    assert_eq!(completed.completion.values, ["proof"]);

    let bad = client
        .read_resource(ReadResourceRequestParams::new("hooks://channels/"))
        .await
        .unwrap_err();
    assert!(
        bad.to_string().contains("hooks://channels/{channel}"),
        "{bad}"
    );

    // After unsubscribing, a publication is not reported.
    client
        .unsubscribe(UnsubscribeRequestParams::new(uri))
        .await
        .unwrap();
    let before = recorder.seen.lock().unwrap().len();
    publish(home.path(), "proof");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after: Vec<String> = recorder.seen.lock().unwrap()[before..]
        .iter()
        .map(|(w, _)| w.clone())
        .collect();
    assert!(!after.iter().any(|w| w == uri), "{after:?}");
    client.cancel().await.unwrap();
}

/// `resources/read` of `uri`: its JSON text, parsed.
async fn read_json(
    client: &rmcp::service::RunningService<RoleClient, Recorder>,
    uri: &str,
) -> serde_json::Value {
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let text = serde_json::to_value(&read).unwrap()["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    serde_json::from_str(&text).unwrap()
}

/// Opens an rmcp client session on `daemon` that records resource notifications.
async fn subscriber(
    daemon: &Daemon,
) -> (
    Recorder,
    rmcp::service::RunningService<RoleClient, Recorder>,
) {
    let recorder = Recorder::default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(daemon.url("/mcp")),
    );
    let client = recorder.clone().serve(transport).await.unwrap();
    (recorder, client)
}

// A plain test with its runtime inside: the database is set up and dropped with the blocking
// PostgreSQL client, which must not run on a runtime's thread.
#[test]
fn on_postgres_a_subscriber_hears_of_another_daemon_publishing_and_clearing_within_a_second() {
    let test = "resources::on_postgres_a_subscriber_hears_of_another_daemon_publishing_and_clearing_within_a_second";
    // In a daemon child this runs the daemon; nothing below may run there.
    crate::support::child_entry();
    let Some(db) = test_support::pg::Database::new("resources") else {
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"note: no PostgreSQL server (programs or HOOKS_MCP_TEST_DATABASE_URL): the \
              PostgreSQL resources test was skipped\n",
        );
        return;
    };
    let url = db.url();
    // A ten-minute scheduler tick: nothing here relies on it.
    let env = [
        ("HOOKS_MCP_DATABASE_URL", url.as_str()),
        ("HOOKS_MCP_SCHEDULER_TICK_MS", "600000"),
        ("HOOKS_MCP_DB_POOL_SIZE", "4"),
    ];
    let homes = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let watching = Daemon::start(test, homes[0].path(), &env);
    let publishing = Daemon::start(test, homes[1].path(), &env);
    watching.wait_ready();
    publishing.wait_ready();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(hears_of_another_daemon(&watching, &publishing));
    drop(db);
}

/// Subscribes through `watching`; publishes and clears through `publishing`.
async fn hears_of_another_daemon(watching: &Daemon, publishing: &Daemon) {
    let (recorder, client) = subscriber(watching).await;
    let uri = "hooks://channels/fleet-news";
    client
        .subscribe(SubscribeRequestParams::new(uri))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The other daemon publishes and then clears, through its own MCP session.
    let addr = publishing.addr;
    let session = tokio::task::spawn_blocking(move || crate::support::mcp_session(addr, &[]))
        .await
        .unwrap();
    let tool = move |id: u64, name: &'static str, args: serde_json::Value| {
        let session = session.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let body = crate::support::call(id, name, args);
                crate::support::mcp_request(addr, &session, &[], &body)["result"].clone()
            })
            .await
            .unwrap()
        }
    };
    let published_at = Instant::now();
    let result = tool(
        2,
        "channel_publish",
        serde_json::json!({ "channel": "fleet-news", "message": "from the other daemon" }),
    )
    .await;
    assert_eq!(result["isError"], false, "{result}");
    let id = result["structuredContent"]["id"].as_i64().unwrap();
    let updated = recorder.wait_for(uri).await.expect("no resources/updated");
    let latency = updated.duration_since(published_at);
    assert!(
        latency < Duration::from_secs(1),
        "publication took {latency:?}"
    );
    let publish_latency = latency;

    let before = recorder.seen.lock().unwrap().len();
    let cleared_at = Instant::now();
    let result = tool(3, "channel_clear", serde_json::json!({ "message_id": id })).await;
    assert_eq!(result["isError"], false, "{result}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let cleared = loop {
        let found = recorder.seen.lock().unwrap()[before..]
            .iter()
            .find(|(w, _)| w == uri)
            .map(|(_, at)| *at);
        if let Some(at) = found {
            break at;
        }
        assert!(
            Instant::now() < deadline,
            "no resources/updated for the clear"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let latency = cleared.duration_since(cleared_at);
    assert!(latency < Duration::from_secs(1), "clear took {latency:?}");
    {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "note: PostgreSQL resources: resources/updated {publish_latency:?} after the other \
             daemon's publication, {latency:?} after its clear"
        );
    }
    assert_eq!(
        read_json(&client, uri).await["messages"],
        serde_json::json!([])
    );
    client.cancel().await.unwrap();
}
