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
    let read = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    let text = serde_json::to_value(&read).unwrap()["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
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
