//! The 2026-07-28 revision on the stdio transport, as raw JSON-RPC lines over an in-memory
//! pipe: `resultType` and caching hints on every result (and the legacy shape kept), the
//! `subscriptions/listen` stream (acknowledged first, only what was asked for, tagged with its
//! id, fed by changes another store connection makes, ended by the server with its final
//! result), the acknowledgement a handed-over subscription must not get twice, and a session
//! that only probes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use catalogue::{Filter, SessionPolicy, StartMode};
use serde_json::{Value, json};
use server_full::stdio::Suppress;
use server_full::{HooksServer, Settings};
use store::ChannelStore;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"stateless-tests","version":"1"}}"#;

fn meta() -> Value {
    serde_json::from_str(META).unwrap()
}

/// A 2026-07-28 request: `params` with the required `_meta`.
fn modern(id: impl Into<Value>, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

struct Session {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    server: HooksServer,
    done: tokio::task::JoinHandle<Result<(), server_full::stdio::StdioError>>,
    path: std::path::PathBuf,
    _home: tempfile::TempDir,
}

fn server(home: &std::path::Path, mode: StartMode) -> HooksServer {
    let store = store::SqliteStore::create(home.join("state.db")).unwrap();
    let settings = Settings {
        filter: Filter::default(),
        session: SessionPolicy::ExplicitOnly,
        mode,
        extensions: Arc::new(Settings::extensions(store::StoreHandle(Arc::new(store)))),
    };
    HooksServer::new(settings).unwrap().0
}

fn start(mode: StartMode, suppress: Suppress) -> Session {
    let home = tempfile::tempdir().unwrap();
    let server = server(home.path(), mode);
    let (input, server_in) = tokio::io::duplex(256 * 1024);
    let (server_out, output) = tokio::io::duplex(256 * 1024);
    let done = tokio::spawn(server_full::stdio::serve(
        server.clone(),
        server_in,
        server_out,
        suppress,
    ));
    Session {
        input,
        output: BufReader::new(output).lines(),
        server,
        done,
        path: home.path().join("state.db"),
        _home: home,
    }
}

impl Session {
    async fn send(&mut self, line: &str) {
        self.input.write_all(line.as_bytes()).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    /// The next line the server writes, within `wait`.
    async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        match tokio::time::timeout(wait, self.output.next_line()).await {
            Ok(Ok(Some(line))) => Some(serde_json::from_str(&line).unwrap()),
            _ => None,
        }
    }

    async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(10))
            .await
            .expect("the server wrote nothing within 10 s")
    }

    /// The response to `id`, with every notification written before it.
    async fn response(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let line = self.next().await;
            if &line["id"] == id && line.get("method").is_none() {
                return (line, notes);
            }
            notes.push(line);
        }
    }

    async fn ask(&mut self, id: &str, method: &str, params: Value) -> Value {
        self.send(&modern(id, method, params)).await;
        self.response(&json!(id)).await.0["result"].clone()
    }
}

fn publish(path: &std::path::Path, channel: &str) {
    let writer = store::SqliteStore::create(path).unwrap();
    let now = server_full::now_ms();
    writer
        .publish(
            &store::NewMessage {
                channel: channel.into(),
                body: format!("news on {channel}"),
                severity: store::Severity::Info,
                created_at: now,
                expires_at: now + 3_600_000,
                target: None,
            },
            &store::Actor::Operator("tests".into()),
        )
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_result_says_it_is_complete_and_how_long_it_may_be_cached() {
    let mut s = start(StartMode::Eager, Suppress::default());
    let discover = s.ask("d", "server/discover", json!({})).await;
    assert_eq!(discover["resultType"], "complete", "{discover}");
    assert_eq!(discover["cacheScope"], "public", "{discover}");
    assert_eq!(discover["ttlMs"], 3_600_000, "{discover}");
    assert!(
        discover["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{discover}"
    );
    // The light front end answers the same discover bytes.
    let light = protocol_lite::handshake::ServerIdentity::default()
        .discover_result_with(protocol_lite::handshake::Features::HOOKS_MCP);
    assert_eq!(discover, light);
    let tools = s.ask("t", "tools/list", json!({})).await;
    assert_eq!(
        (&tools["resultType"], &tools["cacheScope"], &tools["ttlMs"]),
        (&json!("complete"), &json!("public"), &json!(3_600_000)),
        "an eager list is the same for every client: {tools}"
    );
    let templates = s.ask("rt", "resources/templates/list", json!({})).await;
    assert_eq!(templates["cacheScope"], "public", "{templates}");
    assert_eq!(templates["resultType"], "complete", "{templates}");
    let prompts = s.ask("p", "prompts/list", json!({})).await;
    assert_eq!(prompts["resultType"], "complete", "{prompts}");
    publish(&s.path, "deploys");
    let listed = s.ask("r", "resources/list", json!({})).await;
    assert_eq!(
        (
            &listed["resultType"],
            &listed["cacheScope"],
            &listed["ttlMs"]
        ),
        (&json!("complete"), &json!("private"), &json!(0)),
        "the list is the store's: {listed}"
    );
    assert_eq!(listed["resources"][0]["uri"], "hooks://channels/deploys");
    let read = s
        .ask(
            "rr",
            "resources/read",
            json!({"uri": "hooks://channels/deploys"}),
        )
        .await;
    assert_eq!(read["resultType"], "complete", "{read}");
    assert_eq!(read["cacheScope"], "private", "{read}");
    let completed = s
        .ask(
            "c",
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "hooks://channels/{channel}"},
                   "argument": {"name": "channel", "value": "de"}}),
        )
        .await;
    assert_eq!(completed["resultType"], "complete", "{completed}");
    assert_eq!(
        completed["completion"]["values"][0], "deploys",
        "{completed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_keeps_the_historical_shape() {
    let mut s = start(StartMode::Lazy, Suppress::default());
    s.send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}"#).await;
    let init = s.response(&json!(1)).await.0;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    for (id, method) in [
        (2, "resources/list"),
        (3, "tools/list"),
        (4, "prompts/list"),
    ] {
        s.send(&json!({"jsonrpc":"2.0","id":id,"method":method}).to_string())
            .await;
        let (reply, _) = s.response(&json!(id)).await;
        let result = &reply["result"];
        assert!(result.get("resultType").is_none(), "{method}: {result}");
        assert!(result.get("ttlMs").is_none(), "{method}: {result}");
        assert!(result.get("cacheScope").is_none(), "{method}: {result}");
    }
    // load_modules notifies a legacy session through its peer, as before.
    s.send(
        &json!({"jsonrpc":"2.0","id":5,"method":"tools/call",
                "params":{"name":"load_modules","arguments":{"modules":["channels"]}}})
        .to_string(),
    )
    .await;
    let (_, notes) = s.response(&json!(5)).await;
    let changed: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/tools/list_changed")
        .collect();
    assert_eq!(changed.len(), 1, "{notes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_modules_reaches_only_a_subscription_that_asked_for_tool_changes() {
    let mut s = start(StartMode::Lazy, Suppress::default());
    let lazy = s.ask("l", "tools/list", json!({})).await;
    assert_eq!(lazy["cacheScope"], "private", "a lazy list changes: {lazy}");
    // No subscription: loading changes the list, and nothing is sent that was not asked for.
    s.send(&modern(
        "m1",
        "tools/call",
        json!({"name": "load_modules", "arguments": {"modules": ["enforcement"]}}),
    ))
    .await;
    let (reply, notes) = s.response(&json!("m1")).await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(notes.is_empty(), "unrequested notifications: {notes:?}");
    // A subscription to resource list changes only hears nothing of tools either.
    s.send(&modern(
        "resources-only",
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true}}),
    ))
    .await;
    let ack = s.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "resources-only"
    );
    s.send(&modern(
        "tools",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
    ))
    .await;
    let ack = s.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "prompts are not offered, so not accepted: {ack}"
    );
    s.send(&modern(
        "m2",
        "tools/call",
        json!({"name": "load_modules", "arguments": {"modules": ["channels"]}}),
    ))
    .await;
    let (_, notes) = s.response(&json!("m2")).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["method"], "notifications/tools/list_changed");
    assert_eq!(
        notes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );
    let listed = s.ask("l2", "tools/list", json!({})).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"channel_publish"), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_over_subscription_is_not_acknowledged_twice_and_hears_the_trigger() {
    // The front end acknowledged "sub" and replays it, then the call that triggered the
    // hand-off: the server must establish it before the call runs, and stay silent about it.
    let suppress = Suppress {
        initialize: None,
        acknowledgements: vec![json!("sub")],
    };
    let mut s = start(StartMode::Lazy, suppress);
    s.send(&modern(
        "sub",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true}}),
    ))
    .await;
    s.send(&modern(
        7,
        "tools/call",
        json!({"name": "load_modules", "arguments": {"modules": ["all"]}}),
    ))
    .await;
    let (reply, notes) = s.response(&json!(7)).await;
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(
        notes.len(),
        1,
        "exactly the list change, no acknowledgement: {notes:?}"
    );
    assert_eq!(notes[0]["method"], "notifications/tools/list_changed");
    assert_eq!(
        notes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_writer_changes_the_resource_list_and_the_subscription_hears_of_it() {
    let mut s = start(StartMode::Eager, Suppress::default());
    publish(&s.path, "first");
    s.send(&modern(
        "watch",
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true,
                                 "resourceSubscriptions": ["hooks://channels/first",
                                                           "https://example.invalid/x"]}}),
    ))
    .await;
    let ack = s.next().await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true, "resourceSubscriptions": ["hooks://channels/first"]}),
        "only URIs this server serves are accepted: {ack}"
    );
    // Let the watcher take its baseline, then a write by another connection.
    tokio::time::sleep(Duration::from_millis(400)).await;
    publish(&s.path, "second");
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline && seen.is_empty() {
        if let Some(line) = s.next_within(Duration::from_millis(500)).await {
            seen.push(line);
        }
    }
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["method"], "notifications/resources/list_changed");
    assert_eq!(
        seen[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "watch"
    );
    // A new message on the subscribed channel updates it.
    publish(&s.path, "first");
    let updated = s.next().await;
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "{updated}"
    );
    assert_eq!(updated["params"]["uri"], "hooks://channels/first");
    assert_eq!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "watch"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_ends_a_subscription_with_its_final_result() {
    let mut s = start(StartMode::Eager, Suppress::default());
    s.send(&modern(
        42,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    ))
    .await;
    let ack = s.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    s.server.end_subscriptions();
    let (end, _) = s.response(&json!(42)).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 42,
        "{end}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_only_probes_ends_cleanly() {
    let mut s = start(StartMode::Eager, Suppress::default());
    let discover = s.ask("probe", "server/discover", json!({})).await;
    assert_eq!(discover["resultType"], "complete");
    drop(s.input);
    let ended = tokio::time::timeout(Duration::from_secs(10), s.done)
        .await
        .expect("the session did not end at EOF")
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
}
