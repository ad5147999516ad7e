//! The 2026-07-28 (stateless) opening on the light path: Claude Code's three requests answered
//! by the front end itself, `_meta` errors without a handoff, `resources/list` through the
//! listing child, a held `resourcesListChanged` subscription told of another process's new
//! channel (and of nothing else), and the handoff of a held subscription.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// A 2026-07-28 request: `params` plus the `_meta` every such request carries.
fn modern(id: impl Into<Value>, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    });
    request(id, method, params)
}

/// Claude Code's `subscriptions/listen`: both list changes.
fn listen(id: impl Into<Value>) -> String {
    modern(
        id,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true}}),
    )
}

fn exe(s: &Server) -> PathBuf {
    std::fs::read_link(format!("/proc/{}/exe", s.pid())).unwrap()
}

/// From the front end, one real call (`channel_list`, id 3): the full server answers it.
fn hand_off_with_a_call(s: &mut Server) {
    assert_light(s);
    let r = s.ask(&modern(
        3,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(exe(s).ends_with("hooks-mcp-stdio"), "{:?}", exe(s));
}

/// Checks the process is still the front end: its binary, one thread, the store not open.
fn assert_light(s: &Server) {
    assert!(exe(s).ends_with("hooks-mcp"), "{:?}", exe(s));
    assert_eq!(s.threads(), 1, "the light path runs on one thread");
    assert!(
        !s.open_files().iter().any(|p| is_store(p)),
        "the light path opened the store: {:?}",
        s.open_files()
    );
}

/// Whether the process holds an inotify descriptor (the watch on the store).
fn watches(s: &Server) -> bool {
    s.open_files()
        .iter()
        .any(|p| p.to_string_lossy().contains("inotify"))
}

/// Publishes `message` on `channel` with the full binary's CLI, in `s`'s store.
fn publish(s: &Server, channel: &str, message: &str) {
    let out = Command::new(full_bin())
        .args(["channel", "publish", channel, message])
        .env("HOOKS_MCP_HOME", s.home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Opens the session the way Claude Code 2.1.332 does, checking each answer; returns the
/// `tools/list` result.
fn claude_code_opening(s: &mut Server) -> Value {
    let discover = s.ask(&modern(0, "server/discover", json!({})));
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete", "{discover}");
    assert_eq!(
        result["supportedVersions"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ])
    );
    assert_eq!(result["ttlMs"], 3_600_000);
    assert_eq!(result["cacheScope"], "public");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "hooks-mcp"
    );
    assert_eq!(result["capabilities"]["tools"]["listChanged"], true);

    s.send(&listen(1));
    let ack = s.recv();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], 1);
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourcesListChanged": true})
    );
    let list = s.ask(&modern(2, "tools/list", json!({})));
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    list
}

#[test]
fn claude_codes_opening_is_answered_by_the_front_end_on_one_thread() {
    let mut s = Server::start();
    let list = claude_code_opening(&mut s);
    assert_eq!(list["result"]["ttlMs"], 3_600_000);
    assert_eq!(list["result"]["cacheScope"], "public");
    let names = tool_names(&list);
    assert!(
        names.len() >= 15 && names.contains(&"channel_publish".to_owned()),
        "{names:?}"
    );
    // The same tools as a legacy session lists.
    let mut legacy = Server::start();
    legacy.handshake();
    assert_eq!(
        tool_names(&legacy.ask(&request(2, "tools/list", json!({})))),
        names
    );
    assert_light(&s);
    assert!(
        watches(&s),
        "the held resourcesListChanged watches the store"
    );
    let (status, rest) = s.finish();
    assert!(status.success());
    assert!(
        rest.is_empty(),
        "the held listen gets no response: {rest:?}"
    );
}

#[test]
fn lazy_and_filtered_lists_carry_their_cache_hints() {
    let mut lazy = Server::with(Options {
        args: &["--lazy"],
        ..Options::default()
    });
    let list = lazy.ask(&modern(1, "tools/list", json!({})));
    assert_eq!(tool_names(&list), ["find_tools", "load_modules"]);
    assert_eq!(list["result"]["ttlMs"], 0, "load_modules changes the list");
    assert_eq!(list["result"]["cacheScope"], "private");
    let mut filtered = Server::with_env(&[("MCP_CATEGORIES", "channels")]);
    let list = filtered.ask(&modern(1, "tools/list", json!({})));
    assert!(tool_names(&list).iter().all(|n| n.starts_with("channel_")));
    assert_eq!(list["result"]["ttlMs"], 3_600_000);
    assert_eq!(list["result"]["cacheScope"], "public");
    for (id, method, key) in [
        (2, "resources/templates/list", "resourceTemplates"),
        (3, "prompts/list", "prompts"),
    ] {
        let r = filtered.ask(&modern(id, method, json!({})));
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        assert_eq!(r["result"]["ttlMs"], 3_600_000);
        assert_eq!(r["result"]["cacheScope"], "public");
        assert!(r["result"][key].is_array(), "{r}");
    }
    assert_light(&filtered);
}

#[test]
fn a_probe_only_session_exits_zero() {
    let input = format!("{}\n", modern("probe", "server/discover", json!({})));
    let (status, stdout, stderr) = run_to_end(front_bin(), &[], input.as_bytes());
    assert!(status.success(), "{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    assert_eq!(lines[0]["id"], "probe");
    assert_eq!(lines[0]["result"]["resultType"], "complete");
}

#[test]
fn bad_meta_and_unsupported_versions_are_answered_without_handoff() {
    let mut s = Server::start();
    let r = s.ask(&request(1, "server/discover", json!({})));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "request _meta is missing or has malformed required fields: \
             io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities"
        ),
        "{message}"
    );
    let r = s.ask(&request(
        2,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    ));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fields: io.modelcontextprotocol/clientCapabilities;"),
        "{r}"
    );
    // A tool call without the metadata is refused here too: nothing to hand over.
    let r = s.ask(&call(3, "channel_list", json!({})));
    assert_eq!(r["error"]["code"], -32602, "{r}");

    let old = modern(4, "tools/list", json!({})).replace("2026-07-28", "1900-01-01");
    let r = s.ask(&old);
    assert_eq!(
        r["error"],
        json!({
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {
                "requested": "1900-01-01",
                "supported": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
            },
        })
    );
    let r = s.ask(&modern(5, "ping", json!({})));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert_eq!(s.ask(&request(6, "ping", json!({})))["result"], json!({}));
    assert_light(&s);
    assert!(!s.store_path().exists(), "nothing here needed the store");
    // The session can still open the legacy way.
    assert_eq!(s.handshake()["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn resources_list_is_answered_through_the_listing_child() {
    let mut s = Server::start();
    publish(&s, "deploys", "freeze at five");
    let r = s.ask(&modern(1, "resources/list", json!({})));
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete", "{r}");
    let uris: Vec<&str> = result["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"hooks://channels/deploys"), "{uris:?}");
    assert_light(&s);
}

/// A directory with the companions linked in and `hooks-mcp-stdio` replaced by `script`.
fn companions_with_stdio(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let real = PathBuf::from(full_bin());
    for name in ["hooks-mcp-full", "hooks-mcp-catalogue"] {
        std::os::unix::fs::symlink(real.with_file_name(name), dir.path().join(name)).unwrap();
    }
    let stdio = dir.path().join("hooks-mcp-stdio");
    std::fs::write(&stdio, format!("#!/bin/sh\n{script}\n")).unwrap();
    let mut perms = std::fs::metadata(&stdio).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&stdio, perms).unwrap();
    dir
}

#[test]
fn a_failing_listing_child_is_an_internal_error_and_the_session_goes_on() {
    for (script, says) in [
        // The client cannot see stderr: the child's reason is in the answer.
        (
            "echo 'cannot open the store: locked' >&2; exit 3",
            "(exit status: 3): cannot open the store: locked",
        ),
        ("echo not-json", "output is unusable"),
    ] {
        let dir = companions_with_stdio(script);
        let full = dir.path().join("hooks-mcp-full");
        let mut s = Server::with(Options {
            env: vec![("HOOKS_MCP_FULL_BIN", full.to_string_lossy().into_owned())],
            ..Options::default()
        });
        let r = s.ask(&modern(1, "resources/list", json!({})));
        assert_eq!(r["error"]["code"], -32603, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot list the resources") && message.contains(says),
            "{r}"
        );
        // Still serving, still light.
        let r = s.ask(&modern(2, "prompts/list", json!({})));
        assert_eq!(r["result"]["prompts"], json!([]));
        assert_light(&s);
    }
}

/// The next line, which must be the answer to a `prompts/list` sent now: proof that no
/// notification came before it.
fn nothing_pending(s: &mut Server, id: i64) {
    s.send(&modern(id, "prompts/list", json!({})));
    let next = s.recv();
    assert_eq!(next["id"], id, "unexpected line: {next}");
}

#[test]
fn a_held_subscription_hears_of_a_new_channel_and_of_nothing_else() {
    let mut s = Server::start();
    claude_code_opening(&mut s);
    publish(&s, "first", "a new channel");
    let published = Instant::now();
    let changed = s.recv();
    let waited = published.elapsed();
    assert_eq!(
        changed,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 1}}})
    );
    assert!(waited < Duration::from_secs(5), "took {waited:?}");
    assert_light(&s);

    // Another message on the same channel leaves the list as it was: no notification.
    publish(&s, "first", "same channel");
    std::thread::sleep(Duration::from_millis(1500));
    nothing_pending(&mut s, 10);
    // And nothing while nothing happens.
    std::thread::sleep(Duration::from_millis(600));
    nothing_pending(&mut s, 11);

    // A second new channel is told again.
    publish(&s, "second", "another channel");
    let again = s.recv();
    assert_eq!(again["method"], "notifications/resources/list_changed");
    assert_light(&s);
}

#[test]
fn a_held_subscription_hears_of_a_channel_that_expires_with_nothing_written() {
    let mut s = Server::start();
    claude_code_opening(&mut s);
    let out = Command::new(full_bin())
        .args([
            "channel",
            "publish",
            "brief",
            "gone soon",
            "--ttl-seconds",
            "2",
        ])
        .env("HOOKS_MCP_HOME", s.home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let published = Instant::now();
    let appeared = s.recv();
    assert_eq!(
        appeared["method"], "notifications/resources/list_changed",
        "{appeared}"
    );
    // Nothing is written when the message expires: the front end wakes at its expiry, which
    // the listing said, and tells the subscription that the channel left the list.
    let gone = s.recv();
    let waited = published.elapsed();
    assert_eq!(
        gone,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 1}}})
    );
    assert!(
        waited >= Duration::from_secs(2),
        "before the expiry: {waited:?}"
    );
    assert_light(&s);
    let listed = s.ask(&modern(5, "resources/list", json!({})));
    assert_eq!(listed["result"]["resources"], json!([]), "{listed}");
}

#[test]
fn a_cancelled_subscription_is_told_nothing_and_the_watch_closes() {
    let mut s = Server::start();
    claude_code_opening(&mut s);
    assert!(watches(&s));
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    // The cancellation is read before the next request is answered.
    nothing_pending(&mut s, 3);
    assert!(
        !watches(&s),
        "no subscription asks for resource changes any more"
    );
    publish(&s, "after", "cancelled");
    std::thread::sleep(Duration::from_millis(1000));
    nothing_pending(&mut s, 4);
    assert_light(&s);
    let (status, rest) = s.finish();
    assert!(status.success() && rest.is_empty(), "{rest:?}");
}

#[test]
fn the_front_end_finds_the_store_where_the_store_does() {
    let tables: [&[(&str, &str)]; 7] = [
        &[
            ("HOOKS_MCP_HOME", "/h"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/u"),
        ],
        &[
            ("HOOKS_MCP_HOME", ""),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/u"),
        ],
        &[("XDG_STATE_HOME", ""), ("HOME", "/u")],
        &[("HOME", "/u")],
        &[("HOOKS_MCP_HOME", " ")],
        &[("HOOKS_MCP_DATABASE_URL", "  "), ("HOME", "/u")],
        &[],
    ];
    assert_eq!(stdio_front::HOME_ENV, store::HOME_ENV);
    assert_eq!(stdio_front::DATABASE_URL_ENV, store::DATABASE_URL_ENV);
    for vars in tables {
        let vars: HashMap<&str, OsString> = vars.iter().map(|(k, v)| (*k, (*v).into())).collect();
        let front = stdio_front::sqlite_store_file(|k| vars.get(k).cloned());
        // The store's own reading of the environment: blank variables count as unset.
        let url_blank = vars
            .get(store::DATABASE_URL_ENV)
            .is_none_or(|u| u.to_string_lossy().trim().is_empty());
        let store = store::StoreLocation::resolve(|k| {
            vars.get(k).filter(|v| !v.is_empty()).map(PathBuf::from)
        })
        .filter(|_| url_blank)
        .map(|l| l.path);
        assert_eq!(front, store, "{vars:?}");
    }
    let pg: HashMap<&str, OsString> =
        HashMap::from([("HOOKS_MCP_DATABASE_URL", "postgres://h/db".into())]);
    assert_eq!(stdio_front::sqlite_store_file(|k| pg.get(k).cloned()), None);
}

#[test]
fn on_postgres_a_resource_list_subscription_hands_off() {
    // The full server follows PostgreSQL's change feed itself; the front end does not try.
    let input = [
        modern(0, "server/discover", json!({})),
        modern(
            1,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
        listen(2),
    ]
    .join("\n");
    let env = [
        ("HOOKS_MCP_DATABASE_URL", "postgres://127.0.0.1:1/none"),
        ("HOOKS_MCP_LOG", "debug"),
    ];
    let (_, stdout, stderr) = run_to_end(front_bin(), &env, format!("{input}\n").as_bytes());
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["id"], 0, "{stdout}");
    assert_eq!(
        lines[1]["method"], "notifications/subscriptions/acknowledged",
        "a tools-only listen is held: {stdout}"
    );
    assert!(
        stderr.contains("handing the session to the full server: `resourcesListChanged`"),
        "{stderr}"
    );
}

#[test]
fn a_handoff_keeps_the_held_subscription_and_load_modules_notifies_it_once() {
    let mut s = Server::with(Options {
        args: &["--lazy"],
        ..Options::default()
    });
    let list = claude_code_opening(&mut s);
    assert_eq!(tool_names(&list), ["find_tools", "load_modules"]);
    assert_light(&s);
    let pid = s.pid();
    s.send(&modern(
        3,
        "tools/call",
        json!({"name": "load_modules", "arguments": {"modules": ["channels"]}}),
    ));
    let mut changed = Vec::new();
    let response = loop {
        let line = s.recv();
        if line.get("id").is_some() {
            break line;
        }
        assert_ne!(
            line["method"], "notifications/subscriptions/acknowledged",
            "a second acknowledgement: {line}"
        );
        changed.push(line);
    };
    assert_eq!(response["id"], 3);
    assert_eq!(response["result"]["isError"], false, "{response}");
    assert_eq!(
        changed,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUBSCRIPTION_ID: 1}}})
        ],
        "exactly one list change, on the held subscription"
    );
    assert_eq!(s.pid(), pid);
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    let list = s.ask(&modern(4, "tools/list", json!({})));
    assert!(
        tool_names(&list).contains(&"channel_publish".to_owned()),
        "{list}"
    );
    // The held subscription lives on in the full server: a new channel reaches it (once the
    // server's watcher has taken its first look).
    std::thread::sleep(Duration::from_millis(500));
    publish(&s, "after-handoff", "hello");
    let next = s.recv();
    assert_eq!(
        next["method"], "notifications/resources/list_changed",
        "{next}"
    );
    assert_eq!(next["params"]["_meta"][SUBSCRIPTION_ID], 1);
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
    assert!(
        rest.iter()
            .all(|l| l["method"] != "notifications/subscriptions/acknowledged"),
        "{rest:?}"
    );
}

/// The pings a client may send without a lifecycle, and the 2026-07-28 requests for methods
/// that revision removed, each as (request, expected answer).
fn pings() -> Vec<(String, Value)> {
    let unsupported = modern("u", "ping", json!({})).replace("2026-07-28", "1900-01-01");
    vec![
        (modern("m", "ping", json!({})), json!(-32601)),
        (
            modern(
                "s",
                "resources/subscribe",
                json!({"uri": "hooks://channels/x"}),
            ),
            json!(-32601),
        ),
        (
            modern("l", "logging/setLevel", json!({"level": "info"})),
            json!(-32601),
        ),
        (request("b", "ping", json!({})), json!({})),
        (
            r#"{"jsonrpc":"2.0","id":"n","method":"ping"}"#.to_owned(),
            json!({}),
        ),
        (unsupported, json!(-32022)),
    ]
}

#[test]
fn pings_and_removed_methods_get_the_same_answer_on_both_sides_of_the_handoff() {
    let mut s = Server::start();
    claude_code_opening(&mut s);
    let mut before = Vec::new();
    for (line, expected) in pings() {
        let r = s.ask(&line);
        let got = r
            .get("result")
            .cloned()
            .unwrap_or(r["error"]["code"].clone());
        assert_eq!(got, expected, "{line}: {r}");
        before.push(r);
    }
    hand_off_with_a_call(&mut s);
    // The full server, now in the stateless era, answers each exactly as the light path did
    // (rmcp alone refuses a bare ping there with -32602, and words a removed method's refusal
    // with its bare name).
    for ((line, _), earlier) in pings().into_iter().zip(before) {
        assert_eq!(s.ask(&line), earlier, "{line}");
    }
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
}

/// A request with `meta` as its `_meta`, whatever it holds.
fn with_meta(id: &str, method: &str, mut params: Value, meta: Value) -> String {
    params["_meta"] = meta;
    request(id, method, params)
}

/// Requests whose `_meta` (or cursor) one side of the hand-off could refuse and the other not,
/// each with the answer both must give (an error code, or `result` for a result).
fn meta_edges() -> Vec<(String, Value)> {
    let meta = |caps: Value| {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        })
    };
    let mut with_level = meta(json!({}));
    with_level["io.modelcontextprotocol/logLevel"] = json!("verbose");
    let mut known_level = meta(json!({}));
    known_level["io.modelcontextprotocol/logLevel"] = json!("debug");
    let list = |id: &str, meta: Value| with_meta(id, "tools/list", json!({}), meta);
    vec![
        // A known capability of the wrong shape, at the top and deeper down.
        (list("c1", meta(json!({"roots": 5}))), json!(-32602)),
        (
            list("c2", meta(json!({"extensions": {"x": 1}}))),
            json!(-32602),
        ),
        (
            list(
                "c3",
                meta(json!({"elicitation": {"form": {"schemaValidation": "yes"}}})),
            ),
            json!(-32602),
        ),
        // Well-formed ones, unknown members and nulls included.
        (
            list(
                "c4",
                meta(json!({
                    "roots": {"listChanged": true},
                    "extensions": {"io.example/x": {}},
                    "sampling": null,
                    "somethingNew": 5,
                })),
            ),
            json!("result"),
        ),
        // A version not served outranks the missing capabilities.
        (
            list(
                "v1",
                json!({"io.modelcontextprotocol/protocolVersion": "1900-01-01"}),
            ),
            json!(-32022),
        ),
        // A removed method outranks them too.
        (
            with_meta(
                "v2",
                "logging/setLevel",
                json!({"level": "info"}),
                json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
            ),
            json!(-32601),
        ),
        (list("l1", with_level), json!(-32602)),
        (list("l2", known_level), json!("result")),
        (list("m1", json!({})), json!(-32602)),
        (
            with_meta("k1", "tools/list", json!({"cursor": 5}), meta(json!({}))),
            json!(-32602),
        ),
        (
            with_meta(
                "k2",
                "prompts/list",
                json!({"cursor": {"a": 1}}),
                meta(json!({})),
            ),
            json!(-32602),
        ),
    ]
}

#[test]
fn bad_meta_and_cursors_get_the_same_answer_on_both_sides_of_the_handoff() {
    let mut s = Server::start();
    claude_code_opening(&mut s);
    // A subscription whose capabilities the full server would refuse is refused here too,
    // rather than acknowledged and then failed by the replay at the hand-off.
    let bad_listen = with_meta(
        "bad-listen",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": 5},
        }),
    );
    let r = s.ask(&bad_listen);
    assert_eq!(r["id"], "bad-listen", "{r}");
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let mut before = Vec::new();
    for (line, expected) in meta_edges() {
        let r = s.ask(&line);
        let got = match r.get("result") {
            Some(_) => json!("result"),
            None => r["error"]["code"].clone(),
        };
        assert_eq!(got, expected, "{line}: {r}");
        before.push(r);
    }
    assert_light(&s);
    hand_off_with_a_call(&mut s);
    for ((line, _), earlier) in meta_edges().into_iter().zip(before) {
        assert_eq!(s.ask(&line), earlier, "{line}");
    }
    assert_eq!(s.ask(&bad_listen), r, "the listen, after the hand-off");
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
}

#[test]
fn a_subscription_cancelled_after_the_handoff_leaves_the_server_idle() {
    let mut s = Server::start();
    claude_code_opening(&mut s);
    // The first real call hands over; its message expires in a second, which sets the full
    // server's watcher to read again just after that.
    let published = s.ask(&modern(
        3,
        "tools/call",
        json!({"name": "channel_publish",
               "arguments": {"channel": "soon", "message": "gone soon", "ttl_seconds": 1}}),
    ));
    assert_eq!(published["result"]["isError"], false, "{published}");
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    let notified = s.recv();
    assert_eq!(notified["method"], "notifications/resources/list_changed");
    s.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    let pong = s.ask(&modern(4, "ping", json!({})));
    assert_eq!(pong["id"], 4, "{pong}");
    // Past the expiry the session still lives but asks for nothing: the watcher must wait, not
    // spin (a spinning task takes a whole CPU: about 100 ticks a second).
    std::thread::sleep(Duration::from_millis(1500));
    let before = s.cpu_ticks();
    std::thread::sleep(Duration::from_millis(1000));
    let used = s.cpu_ticks() - before;
    assert!(
        used < 20,
        "{used} ticks of CPU in a second with nothing to do"
    );
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
}

#[test]
fn the_end_of_input_ends_a_held_subscription_with_its_result() {
    // Claude Code holds a subscription all session long; when it closes the server's input,
    // the subscription ends with its final result, and the process with it (rmcp waits for
    // every running request before it returns, so a subscription left open would hold the
    // process for its grace period, then be dropped without an answer).
    let mut s = Server::start();
    claude_code_opening(&mut s);
    let listed = s.ask(&modern(
        3,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
    let ended = rest
        .iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("no final result for the subscription: {rest:?}"));
    assert_eq!(ended["result"]["resultType"], "complete", "{ended}");
}

#[test]
fn the_2026_answers_are_byte_identical_on_both_paths() {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_string_lossy().into_owned();
    let out = Command::new(full_bin())
        .args(["channel", "publish", "deploys", "freeze"])
        .env("HOOKS_MCP_HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines = [
        modern(0, "server/discover", json!({})),
        modern(1, "tools/list", json!({})),
        modern(2, "resources/templates/list", json!({})),
        modern(3, "prompts/list", json!({})),
        modern(4, "resources/list", json!({})),
    ];
    for mode in ["eager", "lazy"] {
        let mut answers = Vec::new();
        for bin in [front_bin(), full_bin()] {
            let mut s = Server::with(Options {
                bin,
                env: vec![
                    ("HOOKS_MCP_HOME", home_path.clone()),
                    ("HOOKS_MCP_MODE", mode.to_owned()),
                ],
                ..Options::default()
            });
            let mut got = Vec::new();
            for line in &lines {
                s.send(line);
                got.push(s.recv_line());
            }
            answers.push(got);
        }
        for (light, full) in answers[0].iter().zip(&answers[1]).take(4) {
            assert_eq!(light, full, "{mode}: the light and full answers differ");
        }
        // The listing child prints each resource's members in the catalogue's order, rmcp in
        // its own: the same JSON.
        let listed: Vec<Value> = answers
            .iter()
            .map(|a| serde_json::from_str(&a[4]).unwrap())
            .collect();
        assert_eq!(listed[0], listed[1], "{mode}: resources/list differs");
        // Every result names the server in its `_meta` (basic/index: SHOULD), on both paths.
        for answer in answers.iter().flatten() {
            let answer: Value = serde_json::from_str(answer).unwrap();
            let info = &answer["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
            assert_eq!(info["name"], "hooks-mcp", "{mode}: {answer}");
        }
    }
    // And so does the full server's answer to a call.
    let mut s = Server::with(Options {
        bin: full_bin(),
        env: vec![("HOOKS_MCP_HOME", home_path.clone())],
        ..Options::default()
    });
    let called = s.ask(&modern(
        5,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    let info = &called["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(info["name"], "hooks-mcp", "{called}");
}

#[test]
fn a_2026_request_after_initialize_is_answered_by_its_own_rules() {
    // The spec: a request carrying modern `_meta` is served statelessly, whatever came before
    // on the connection. The light path hands it to the full server, which does so.
    let mut s = Server::start();
    assert_eq!(s.handshake()["result"]["protocolVersion"], "2025-11-25");
    let legacy = s.ask(&request(2, "prompts/list", json!({})));
    assert!(legacy["result"].get("resultType").is_none(), "{legacy}");
    assert_light(&s);
    let pong = s.ask(&modern(3, "ping", json!({})));
    assert_eq!(pong["error"]["code"], -32601, "{pong}");
    assert_light(&s);
    for (id, method) in [
        (4, "tools/list"),
        (5, "prompts/list"),
        (6, "resources/templates/list"),
    ] {
        let r = s.ask(&modern(id, method, json!({})));
        assert_eq!(r["result"]["resultType"], "complete", "{method}: {r}");
        assert!(r["result"]["cacheScope"].is_string(), "{method}: {r}");
    }
    assert!(exe(&s).ends_with("hooks-mcp-stdio"), "{:?}", exe(&s));
    // Without params at all: said in the server's words, not the SDK's type names.
    let r = s.ask(r#"{"jsonrpc":"2.0","id":7,"method":"server/discover"}"#);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no params") && !message.contains("WithMeta"),
        "{r}"
    );
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
}

#[test]
fn a_list_cursor_is_refused_alike_on_both_sides_of_the_handoff() {
    // Every list is one page and names no nextCursor: the spec's -32602 for an invalid one.
    let lists = ["tools/list", "resources/templates/list", "prompts/list"];
    let ask_all = |s: &mut Server, first: i64| -> Vec<Value> {
        lists
            .iter()
            .enumerate()
            .map(|(i, method)| {
                s.ask(&modern(
                    first + i as i64,
                    method,
                    json!({"cursor": "garbage"}),
                ))
            })
            .collect()
    };
    let mut s = Server::start();
    claude_code_opening(&mut s);
    let before = ask_all(&mut s, 10);
    for r in &before {
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"garbage\""),
            "{r}"
        );
    }
    // A null cursor is no cursor.
    let r = s.ask(&modern(20, "tools/list", json!({"cursor": null})));
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    hand_off_with_a_call(&mut s);
    let after = ask_all(&mut s, 10);
    assert_eq!(after, before, "the full server refuses in the same words");
    let r = s.ask(&modern(21, "resources/list", json!({"cursor": "x"})));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
}

#[test]
fn an_incomplete_initialize_is_refused_alike_by_both_paths_naming_what_it_lacks() {
    let line = request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
    );
    let mut answers = Vec::new();
    for bin in [front_bin(), full_bin()] {
        let mut s = Server::with(Options {
            bin,
            ..Options::default()
        });
        let r = s.ask(&line);
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let text = r["error"]["message"].as_str().unwrap();
        assert!(
            text.contains("clientInfo") && !text.contains("_meta"),
            "{text}"
        );
        answers.push(r);
        // The session goes on: a complete one is answered.
        let r = s.ask(&legacy_initialize(2));
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    }
    assert_eq!(answers[0], answers[1], "the light path and the full server");
}

/// A legacy `initialize` (2025-11-25) with `id`.
fn legacy_initialize(id: i64) -> String {
    request(
        id,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "c", "version": "1"}}),
    )
}

/// Checks that `r` refuses an `initialize` after the stateless era was chosen, saying so.
fn assert_initialize_refused(r: &Value) {
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("`initialize` after a 2026-07-28 request")
            && message.contains("start a new server process"),
        "{r}"
    );
}

#[test]
fn an_initialize_after_the_2026_opening_is_refused_alike_on_both_sides_of_the_handoff() {
    // Claude Code's opening chose the stateless era for this stdio process. An `initialize`
    // answered now would promise a legacy session that the requests after it, without
    // `_meta`, would not get (rmcp keeps refusing them): it is refused instead, saying why.
    let mut s = Server::start();
    claude_code_opening(&mut s);
    let light = s.ask(&legacy_initialize(7));
    assert_initialize_refused(&light);
    assert_light(&s);
    let bare = s.ask(&request(8, "tools/list", json!({})));
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
    let list = s.ask(&modern(9, "tools/list", json!({})));
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    hand_off_with_a_call(&mut s);
    assert_eq!(s.ask(&legacy_initialize(7)), light);
    let r = s.ask(&modern(10, "tools/list", json!({})));
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");

    // The full server on its own decides by the same rule: a 2026-07-28 call chooses the era,
    // a probe does not.
    let mut s = Server::with(Options {
        bin: full_bin(),
        ..Options::default()
    });
    let discover = s.ask(&modern(1, "server/discover", json!({})));
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let r = s.ask(&modern(
        2,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(s.ask(&legacy_initialize(7)), light);
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");

    let mut s = Server::with(Options {
        bin: full_bin(),
        ..Options::default()
    });
    s.ask(&modern(1, "server/discover", json!({})));
    let init = s.ask(&legacy_initialize(7));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let (status, rest) = s.finish();
    assert!(status.success(), "{rest:?}");
}
