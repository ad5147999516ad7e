//! The 2026-07-28 revision over real HTTP: raw JSON-RPC POSTs to `/mcp` without a session,
//! each carrying its revision in `_meta` and the standard request headers (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`). Header checks (-32020) and the notification exemption, missing
//! `_meta` fields (-32602), an unsupported revision (-32022), `server/discover`, `resultType`
//! on every resource route, `subscriptions/listen` fed by another process's writes and ended
//! with its final result on SIGTERM, sessionless lazy mode through `call_tool`, the session
//! named in `_meta`, and legacy sessions beside it all on the same endpoint.

use std::io::Read;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use store::{ChannelStore, NewMessage, Severity, SqliteStore};

use crate::support::{
    Daemon, MCP_POST, Open, Response, http, mcp_request, mcp_session, open, sse_messages,
};

/// The revision these requests speak.
const VERSION: &str = "2026-07-28";
/// How long a notification is waited for after the store changed (the feed polls SQLite every
/// 200 ms, the watcher re-reads at least once a second).
const NOTIFY_WAIT: Duration = Duration::from_secs(5);

/// A daemon per start mode, shared by the tests here, with its store's directory.
fn shared(test: &str, lazy: bool) -> &'static (Daemon, tempfile::TempDir) {
    static EAGER: OnceLock<(Daemon, tempfile::TempDir)> = OnceLock::new();
    static LAZY: OnceLock<(Daemon, tempfile::TempDir)> = OnceLock::new();
    let cell = if lazy { &LAZY } else { &EAGER };
    cell.get_or_init(|| {
        let home = tempfile::tempdir().unwrap();
        let mode = if lazy { "lazy" } else { "eager" };
        let daemon = Daemon::start(test, home.path(), &[("HOOKS_MCP_MODE", mode)]);
        daemon.wait_ready();
        (daemon, home)
    })
}

/// The `_meta` every 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "daemon-tests", "version": "1"},
    })
}

/// A request body: `params` with `meta` as its `_meta`.
fn request_with(id: impl Into<Value>, method: &str, mut params: Value, meta: Value) -> String {
    params["_meta"] = meta;
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

/// A 2026-07-28 request body.
fn request(id: impl Into<Value>, method: &str, params: Value) -> String {
    request_with(id, method, params, meta())
}

/// The headers of a 2026-07-28 POST for `method` (and `name`, when the method has one).
fn headers<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = MCP_POST.to_vec();
    headers.push(("MCP-Protocol-Version", VERSION));
    headers.push(("Mcp-Method", method));
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers
}

/// The JSON-RPC message of a reply, whether sent as JSON or as an SSE stream.
fn message(reply: &Response) -> Value {
    if reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json"))
    {
        return reply.json();
    }
    reply
        .messages()
        .into_iter()
        .find(|m| m.get("id").is_some())
        .unwrap_or_else(|| panic!("no response in {}: {}", reply.status, reply.body))
}

/// POSTs a well-formed 2026-07-28 request; returns the HTTP status and the response message.
fn ask(daemon: &Daemon, method: &str, name: Option<&str>, params: Value) -> (u16, Value) {
    let reply = http(
        daemon.addr,
        "POST",
        "/mcp",
        &headers(method, name),
        &request("q", method, params),
    );
    let answer = message(&reply);
    (reply.status, answer)
}

/// The result of a well-formed request that must succeed.
fn result(daemon: &Daemon, method: &str, name: Option<&str>, params: Value) -> Value {
    let (status, answer) = ask(daemon, method, name, params);
    assert_eq!(status, 200, "{method}: {answer}");
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

/// A `tools/call` of `tool` (with `meta` as its `_meta`); returns its result.
fn call_with(daemon: &Daemon, tool: &str, arguments: Value, meta: Value) -> Value {
    let body = request_with(
        "call",
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        meta,
    );
    let reply = http(
        daemon.addr,
        "POST",
        "/mcp",
        &headers("tools/call", Some(tool)),
        &body,
    );
    assert_eq!(reply.status, 200, "{tool}: {}", reply.body);
    message(&reply)["result"].clone()
}

fn call(daemon: &Daemon, tool: &str, arguments: Value) -> Value {
    call_with(daemon, tool, arguments, meta())
}

/// The error of a refused reply: its HTTP status, JSON-RPC code and message.
fn refusal(reply: &Response) -> (u16, i64, String) {
    let error = &message(reply)["error"];
    (
        reply.status,
        error["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("{}", reply.body)),
        error["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Standard Base64 (with padding), for the `=?base64?...?=` header form.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Publishes on `channel` through a store connection of this test process (not the daemon).
fn publish(home: &std::path::Path, channel: &str, severity: Severity) -> i64 {
    let store = SqliteStore::create(home.join("state.db")).unwrap();
    let now = server_full::now_ms();
    store
        .publish(
            &NewMessage {
                channel: channel.into(),
                body: format!("news on {channel}"),
                severity,
                created_at: now,
                expires_at: now + 3_600_000,
                target: None,
            },
            &store::Actor::Operator("stateless-tests".into()),
        )
        .unwrap()
        .id
}

/// Opens a `subscriptions/listen` with `filter` and id `id`; returns the stream once its
/// acknowledgement arrived.
fn listen(daemon: &Daemon, id: &str, filter: Value) -> Open {
    let body = request(id, "subscriptions/listen", json!({"notifications": filter}));
    let mut stream = open(
        daemon.addr,
        "POST",
        "/mcp",
        &headers("subscriptions/listen", None),
        &body,
    );
    assert_eq!(stream.status, 200, "{}", stream.seen);
    assert!(
        read_within(
            &mut stream,
            "notifications/subscriptions/acknowledged",
            NOTIFY_WAIT
        ),
        "no acknowledgement: {}",
        stream.seen
    );
    stream
}

/// Reads `stream` until its text contains `needle` `times` times, for at most `within`;
/// `false` when the time passes or the stream ends first.
fn read_count_within(stream: &mut Open, needle: &str, times: usize, within: Duration) -> bool {
    stream
        .stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    while stream.seen.matches(needle).count() < times {
        if Instant::now() >= deadline {
            return false;
        }
        match stream.stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => stream.seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return false,
        }
    }
    true
}

fn read_within(stream: &mut Open, needle: &str, within: Duration) -> bool {
    read_count_within(stream, needle, 1, within)
}

/// The notifications a listen stream carried so far (its acknowledgement included).
fn notifications(stream: &Open) -> Vec<Value> {
    sse_messages(&stream.seen)
        .into_iter()
        .filter(|m| m.get("method").is_some())
        .collect()
}

/// Publishes from this process (on `channel`, or on a new channel each time when it is
/// `None`) until `stream` carries `method` once more than before, a few attempts at most:
/// the watcher's first look after a listen is its baseline, so a change made before it is
/// not reported.
fn publish_until(
    stream: &mut Open,
    home: &std::path::Path,
    channel: Option<&str>,
    method: &str,
) -> usize {
    let needle = format!("\"method\":\"{method}\"");
    let before = stream.seen.matches(&needle).count();
    for attempt in 0..5 {
        let name = channel.map_or_else(|| format!("new-{attempt}-{method}"), str::to_owned);
        publish(home, &name.replace('/', "-"), Severity::Info);
        if read_count_within(stream, &needle, before + 1, NOTIFY_WAIT) {
            return attempt;
        }
    }
    panic!("no {method} after five publishes: {}", stream.seen);
}

#[test]
fn standard_headers_are_checked_and_a_notification_needs_no_mcp_method() {
    let (daemon, _) = shared(
        "stateless::standard_headers_are_checked_and_a_notification_needs_no_mcp_method",
        false,
    );
    let addr = daemon.addr;
    // The header names another method than the body.
    let body = request(1, "tools/list", json!({}));
    let reply = http(addr, "POST", "/mcp", &headers("prompts/list", None), &body);
    let (status, code, text) = refusal(&reply);
    assert_eq!((status, code), (400, -32020), "{text}");
    assert!(text.contains("Mcp-Method"), "{text}");
    // A request without Mcp-Method stays refused.
    let mut bare = MCP_POST.to_vec();
    bare.push(("MCP-Protocol-Version", VERSION));
    let reply = http(addr, "POST", "/mcp", &bare, &body);
    let (status, code, text) = refusal(&reply);
    assert_eq!((status, code), (400, -32020), "{text}");
    assert!(text.contains("missing required Mcp-Method"), "{text}");
    // MCP-Protocol-Version disagreeing with the body's `_meta`.
    let mut other = headers("tools/list", None);
    other[1] = ("MCP-Protocol-Version", "2025-11-25");
    let reply = http(addr, "POST", "/mcp", &other, &body);
    let (status, code, text) = refusal(&reply);
    assert_eq!((status, code), (400, -32020), "{text}");
    // Mcp-Name disagreeing with the tool named in the body.
    let body = request(
        2,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    );
    let wrong = headers("tools/call", Some("channel_read"));
    let (status, code, text) = refusal(&http(addr, "POST", "/mcp", &wrong, &body));
    assert_eq!((status, code), (400, -32020), "{text}");
    assert!(text.contains("Mcp-Name"), "{text}");
    // A notification without Mcp-Method (what the TypeScript client 2.x sends to cancel) is
    // accepted; the specification defines no header requirements for notification POSTs.
    let cancelled = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user pressed stop"},
    })
    .to_string();
    let reply = http(addr, "POST", "/mcp", &bare, &cancelled);
    assert_eq!(reply.status, 202, "{}", reply.body);
    assert!(reply.body.is_empty(), "{}", reply.body);
    // One that names a method its body does not is still refused.
    let lying = headers("notifications/progress", None);
    let (status, code, _) = refusal(&http(addr, "POST", "/mcp", &lying, &cancelled));
    assert_eq!((status, code), (400, -32020));
    // And with the right header it was accepted before as well.
    let right = headers("notifications/cancelled", None);
    assert_eq!(http(addr, "POST", "/mcp", &right, &cancelled).status, 202);
}

/// `MCP-Protocol-Version` sent twice, or naming a revision the server does not serve, is refused
/// with a JSON-RPC error a client can read (rmcp reads the first of two, and answers an unserved
/// one in plain text when `_meta` does not name it too), with the request's id.
#[test]
fn a_repeated_or_unserved_version_header_gets_a_json_rpc_error() {
    let (daemon, _) = shared(
        "stateless::a_repeated_or_unserved_version_header_gets_a_json_rpc_error",
        false,
    );
    let addr = daemon.addr;
    let json_error = |reply: &Response| -> (u16, Value) {
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "{}",
            reply.body
        );
        (reply.status, reply.json())
    };
    // MCP-Protocol-Version twice, in either order: a header mismatch, whatever the first says.
    let body = request(10, "tools/list", json!({}));
    for versions in [[VERSION, "2025-11-25"], ["2025-11-25", VERSION]] {
        let mut twice = headers("tools/list", None);
        twice[1] = ("MCP-Protocol-Version", versions[0]);
        twice.push(("MCP-Protocol-Version", versions[1]));
        let (status, error) = json_error(&http(addr, "POST", "/mcp", &twice, &body));
        assert_eq!(
            (status, &error["error"]["code"]),
            (400, &json!(-32020)),
            "{error}"
        );
        assert_eq!(error["id"], 10, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("more than once"),
            "{error}"
        );
    }
    // A revision the server does not serve, named by the header alone: -32022 with the served
    // ones, as when `_meta` names it too.
    let mut future = headers("tools/list", None);
    future[1] = ("MCP-Protocol-Version", "2099-01-01");
    let plain = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/list"}).to_string();
    let (status, error) = json_error(&http(addr, "POST", "/mcp", &future, &plain));
    assert_eq!(
        (status, &error["error"]["code"]),
        (400, &json!(-32022)),
        "{error}"
    );
    assert_eq!(error["id"], 11, "{error}");
    assert_eq!(error["error"]["data"]["requested"], "2099-01-01", "{error}");
    let supported = error["error"]["data"]["supported"].as_array().unwrap();
    assert!(supported.contains(&json!(VERSION)), "{error}");
    // A well-formed request's answer names no methods in `Allow` (that header belongs to 405s).
    let reply = http(addr, "POST", "/mcp", &headers("tools/list", None), &body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("allow"), None, "{}", reply.head);
}

/// An unknown resource URI is "not found" in each era's words: `-32002` in a 2025 session,
/// `-32602` for a 2026-07-28 request (the code that revision gives it).
#[test]
fn an_unknown_resource_is_not_found_in_each_eras_code() {
    let (daemon, _) = shared(
        "stateless::an_unknown_resource_is_not_found_in_each_eras_code",
        false,
    );
    let uri = json!({"uri": "file:///nowhere"});
    let session = mcp_session(daemon.addr, &[]);
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": uri});
    let legacy = mcp_request(daemon.addr, &session, &[], &body.to_string());
    assert_eq!(legacy["error"]["code"], -32002, "{legacy}");
    let (_, modern) = ask(daemon, "resources/read", Some("file:///nowhere"), uri);
    assert_eq!(modern["error"]["code"], -32602, "{modern}");
    for answer in [&legacy, &modern] {
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.contains("hooks://channels/{channel}"), "{answer}");
    }
}

#[test]
fn a_base64_mcp_name_is_compared_decoded() {
    let (daemon, home) = shared("stateless::a_base64_mcp_name_is_compared_decoded", false);
    let encoded = |value: &str| format!("=?base64?{}?=", base64(value.as_bytes()));
    assert_eq!(base64(b"channel_list"), "Y2hhbm5lbF9saXN0");
    let body = request(
        3,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    );
    let name = encoded("channel_list");
    let reply = http(
        daemon.addr,
        "POST",
        "/mcp",
        &headers("tools/call", Some(&name)),
        &body,
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = message(&reply);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    // The encoding of another name is a mismatch, and text that is not Base64 is refused.
    for bad in [encoded("channel_read"), "=?base64?not base64!?=".to_owned()] {
        let reply = http(
            daemon.addr,
            "POST",
            "/mcp",
            &headers("tools/call", Some(&bad)),
            &body,
        );
        let (status, code, text) = refusal(&reply);
        assert_eq!((status, code), (400, -32020), "{bad}: {text}");
    }
    // A URI travels the same way for resources/read.
    publish(home.path(), "stateless-b64", Severity::Info);
    let uri = "hooks://channels/stateless-b64";
    let name = encoded(uri);
    let read = result(daemon, "resources/read", Some(&name), json!({"uri": uri}));
    assert_eq!(read["contents"][0]["uri"], uri, "{read}");
}

#[test]
fn missing_meta_fields_and_an_unknown_revision_are_refused() {
    let (daemon, _) = shared(
        "stateless::missing_meta_fields_and_an_unknown_revision_are_refused",
        false,
    );
    let addr = daemon.addr;
    // A required `_meta` field missing, while the header names 2026-07-28: the field is named,
    // and before anything of a cursor, whatever the cursor is (as stdio orders them).
    let without_version = json!({"io.modelcontextprotocol/clientCapabilities": {}});
    let without_capabilities = json!({"io.modelcontextprotocol/protocolVersion": VERSION});
    for (meta, missing) in [
        (without_version, "io.modelcontextprotocol/protocolVersion"),
        (
            without_capabilities,
            "io.modelcontextprotocol/clientCapabilities",
        ),
    ] {
        for params in [json!({}), json!({"cursor": "x"}), json!({"cursor": 5})] {
            let body = request_with(5, "tools/list", params.clone(), meta.clone());
            let (status, code, text) = refusal(&http(
                addr,
                "POST",
                "/mcp",
                &headers("tools/list", None),
                &body,
            ));
            assert_eq!((status, code), (400, -32602), "{params}: {text}");
            assert!(
                text.contains(missing),
                "the missing field is named: {params}: {text}"
            );
        }
    }
    // A revision this server does not implement: 400, -32022, and the ones it does.
    let future = "2099-01-01";
    let mut meta = meta();
    meta["io.modelcontextprotocol/protocolVersion"] = json!(future);
    let body = request_with(6, "tools/list", json!({}), meta);
    let mut future_headers = headers("tools/list", None);
    future_headers[1] = ("MCP-Protocol-Version", future);
    let reply = http(addr, "POST", "/mcp", &future_headers, &body);
    let (status, code, text) = refusal(&reply);
    assert_eq!((status, code), (400, -32022), "{text}");
    let supported = &message(&reply)["error"]["data"]["supported"];
    let supported: Vec<&str> = supported
        .as_array()
        .unwrap_or_else(|| panic!("no data.supported: {}", reply.body))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(supported.contains(&VERSION), "{supported:?}");
    assert!(!supported.contains(&future), "{supported:?}");

    // A method served, with params that are not its own: invalid params naming the method,
    // not "method not found".
    for (method, name, params) in [
        (
            "tools/call",
            Some("channel_list"),
            json!({"name": "channel_list", "arguments": []}),
        ),
        ("resources/read", None, json!({"uri": 7})),
        ("subscriptions/listen", None, json!({})),
    ] {
        let body = request(8, method, params);
        let reply = http(addr, "POST", "/mcp", &headers(method, name), &body);
        let (status, code, text) = refusal(&reply);
        assert_ne!(status, 404, "{method}: {text}");
        assert_eq!(code, -32602, "{method}: {text}");
        assert!(
            text.contains(&format!("invalid params for `{method}`")),
            "{text}"
        );
    }
    // A method this revision removed: not found, and what replaces it.
    let body = request(9, "logging/setLevel", json!({"level": "debug"}));
    let reply = http(
        addr,
        "POST",
        "/mcp",
        &headers("logging/setLevel", None),
        &body,
    );
    let (_, code, text) = refusal(&reply);
    assert_eq!(code, -32601, "{text}");
    assert!(text.contains("io.modelcontextprotocol/logLevel"), "{text}");
    // The methods this revision removed: not found and what replaces them, with or without
    // the `Mcp-Name` header rmcp would otherwise demand first.
    for (method, name, instead) in [
        ("resources/subscribe", None, "subscriptions/listen"),
        (
            "resources/unsubscribe",
            Some("hooks://channels/x"),
            "subscriptions/listen",
        ),
        ("ping", None, "is not part of protocol version 2026-07-28"),
    ] {
        let body = request(11, method, json!({"uri": "hooks://channels/x"}));
        let reply = http(addr, "POST", "/mcp", &headers(method, name), &body);
        assert_eq!(reply.status, 404, "{method}: {}", reply.body);
        let (_, code, text) = refusal(&reply);
        assert_eq!(code, -32601, "{text}");
        assert!(text.contains(instead), "{text}");
    }
    // A body that is not one JSON-RPC message: 400 with a JSON-RPC error (the transport page),
    // not a plain-text 415: -32700 for what is not JSON, -32600 for JSON that is no message,
    // with the id it names when that can be read, and what to send instead.
    for (body, code, id, says) in [
        ("{not json", -32700, Value::Null, "per POST"),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            -32600,
            Value::Null,
            "batch",
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#,
            -32600,
            Value::Null,
            "`id`",
        ),
        (
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/list"}"#,
            -32600,
            json!(7),
            "`jsonrpc`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"eight","method":"tools/list","params":[1]}"#,
            -32600,
            json!("eight"),
            "`params`",
        ),
    ] {
        let reply = http(addr, "POST", "/mcp", &headers("tools/list", None), body);
        assert_eq!(reply.status, 400, "{body}: {}", reply.body);
        assert_eq!(
            reply.header("content-type"),
            Some("application/json"),
            "{body}"
        );
        let error = message(&reply);
        assert_eq!(error["id"], id, "{body}: {error}");
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        let text = error["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(says), "{body}: {text}");
    }
    // A log level that is not one of the eight (the logging page: SHOULD be rejected), on a
    // list and on a call; a known one is served.
    for (method, name, params) in [
        ("tools/list", None, json!({})),
        (
            "tools/call",
            Some("channel_list"),
            json!({"name": "channel_list", "arguments": {}}),
        ),
    ] {
        let mut loud = self::meta();
        loud["io.modelcontextprotocol/logLevel"] = json!("loud");
        let body = request_with(12, method, params.clone(), loud);
        let (status, code, text) =
            refusal(&http(addr, "POST", "/mcp", &headers(method, name), &body));
        assert_eq!((status, code), (400, -32602), "{method}: {text}");
        assert!(text.contains("\"loud\""), "{text}");
        let mut known = self::meta();
        known["io.modelcontextprotocol/logLevel"] = json!("warning");
        let body = request_with(13, method, params, known);
        let reply = http(addr, "POST", "/mcp", &headers(method, name), &body);
        assert_eq!(reply.status, 200, "{method}: {}", reply.body);
        assert!(message(&reply).get("result").is_some(), "{}", reply.body);
    }
    // A list's cursor: every list is one page, so none is valid (the spec's -32602).
    for method in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ] {
        // A cursor that is not a string too: rmcp would drop the params it cannot read and
        // serve the page, where stdio refuses it.
        for (cursor, says) in [
            (json!("garbage"), "invalid cursor \"garbage\""),
            (json!(5), "invalid cursor 5:"),
            (json!({"page": 2}), "invalid cursor {\"page\":2}"),
        ] {
            let (status, answer) = ask(daemon, method, None, json!({ "cursor": cursor }));
            assert_eq!(status, 200, "{method} {cursor}: {answer}");
            assert_eq!(answer["id"], "q", "{method} {cursor}: {answer}");
            assert_eq!(
                answer["error"]["code"], -32602,
                "{method} {cursor}: {status} {answer}"
            );
            let text = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(text.contains(says), "{method} {cursor}: {text}");
        }
        // Answered as rmcp answers a string cursor: a one-event stream, its headers included.
        let body = request("odd", method, json!({"cursor": 5}));
        let reply = http(daemon.addr, "POST", "/mcp", &headers(method, None), &body);
        assert_eq!(
            reply.header("content-type"),
            Some("text/event-stream"),
            "{method}"
        );
        assert_eq!(reply.header("x-accel-buffering"), Some("no"), "{method}");
        // A null cursor is no cursor.
        let page = result(daemon, method, None, json!({ "cursor": null }));
        assert_eq!(page["resultType"], "complete", "{method}: {page}");
    }
}

#[test]
fn discover_and_every_resource_route_say_what_they_are() {
    let (daemon, home) = shared(
        "stateless::discover_and_every_resource_route_say_what_they_are",
        false,
    );
    let discover = result(daemon, "server/discover", None, json!({}));
    assert_eq!(discover["resultType"], "complete", "{discover}");
    assert_eq!(discover["cacheScope"], "public", "{discover}");
    assert_eq!(discover["ttlMs"], 3_600_000, "{discover}");
    let versions = discover["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!(VERSION)), "{discover}");
    assert!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "hooks-mcp",
        "the server names itself: {discover}"
    );
    let tools = result(daemon, "tools/list", None, json!({}));
    assert_eq!(
        (&tools["resultType"], &tools["cacheScope"], &tools["ttlMs"]),
        (&json!("complete"), &json!("public"), &json!(3_600_000)),
        "{tools}"
    );

    let channel = "stateless-routes";
    publish(home.path(), channel, Severity::Info);
    let uri = format!("hooks://channels/{channel}");
    let listed = result(daemon, "resources/list", None, json!({}));
    assert_eq!(
        (
            &listed["resultType"],
            &listed["cacheScope"],
            &listed["ttlMs"]
        ),
        (&json!("complete"), &json!("private"), &json!(0)),
        "{listed}"
    );
    assert!(
        listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["uri"] == uri),
        "{listed}"
    );
    let templates = result(daemon, "resources/templates/list", None, json!({}));
    assert_eq!(templates["resultType"], "complete", "{templates}");
    assert_eq!(templates["cacheScope"], "public", "{templates}");
    let read = result(daemon, "resources/read", Some(&uri), json!({"uri": uri}));
    assert_eq!(read["resultType"], "complete", "{read}");
    assert_eq!(read["cacheScope"], "private", "{read}");
    let text = read["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("news on stateless-routes"), "{read}");
    let completed = result(
        daemon,
        "completion/complete",
        None,
        json!({"ref": {"type": "ref/resource", "uri": "hooks://channels/{channel}"},
               "argument": {"name": "channel", "value": "stateless-r"}}),
    );
    assert_eq!(completed["resultType"], "complete", "{completed}");
    assert_eq!(completed["completion"]["values"], json!([channel]));
    let prompts = result(daemon, "prompts/list", None, json!({}));
    assert_eq!(prompts["resultType"], "complete", "{prompts}");
    // Every result names the server in its `_meta` (basic/index: SHOULD), a call's on the fast
    // path and on rmcp's (a call with a log level goes there) alike.
    let fast = call(daemon, "channel_list", json!({}));
    let mut with_level = self::meta();
    with_level["io.modelcontextprotocol/logLevel"] = json!("info");
    let through_rmcp = call_with(daemon, "channel_list", json!({}), with_level);
    for result in [
        &discover,
        &tools,
        &listed,
        &templates,
        &read,
        &completed,
        &prompts,
        &fast,
        &through_rmcp,
    ] {
        let info = &result["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(info["name"], "hooks-mcp", "{result}");
        assert!(info["version"].is_string(), "{result}");
    }
    assert_eq!(fast, through_rmcp, "both paths answer alike");
    // An unknown method: 404 and -32601.
    let (status, answer) = ask(daemon, "no/such-method", None, json!({}));
    assert_eq!(status, 404, "{answer}");
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // The revision has no GET stream: change notifications come on listen streams.
    let get = [
        ("Accept", "text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
    ];
    let reply = http(daemon.addr, "GET", "/mcp", &get, "");
    assert_eq!(reply.status, 405, "{}", reply.body);
}

#[test]
fn a_listen_stream_hears_another_process_and_only_what_it_asked_for() {
    let (daemon, home) = shared(
        "stateless::a_listen_stream_hears_another_process_and_only_what_it_asked_for",
        false,
    );
    let existing = "stateless-watched";
    publish(home.path(), existing, Severity::Info);
    let watched = format!("hooks://channels/{existing}");
    let mut lists = listen(daemon, "lists", json!({"resourcesListChanged": true}));
    let ack = &notifications(&lists)[0];
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true}),
        "only what was asked for is accepted: {ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "lists"
    );
    // Only URIs that can change are honoured: a channel name a read refuses is dropped.
    let mut updates = listen(
        daemon,
        "updates",
        json!({"resourceSubscriptions": [watched, "hooks://channels/bad chan",
                                         "hooks://channels/", "file:///x"]}),
    );
    let ack = &notifications(&updates)[0];
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourceSubscriptions": [watched]}),
        "{ack}"
    );

    // A message on a channel that exists updates its resource: only `updates` hears of it.
    publish_until(
        &mut updates,
        home.path(),
        Some(existing),
        "notifications/resources/updated",
    );
    // A new channel changes the list: only `lists` hears of it. Notifications travel in order
    // on a stream, so an update `lists` was sent earlier would be on it by now.
    publish_until(
        &mut lists,
        home.path(),
        None,
        "notifications/resources/list_changed",
    );
    for (stream, id, only) in [
        (&lists, "lists", "notifications/resources/list_changed"),
        (&updates, "updates", "notifications/resources/updated"),
    ] {
        let seen = notifications(stream);
        assert_eq!(
            seen[0]["method"], "notifications/subscriptions/acknowledged",
            "{seen:?}"
        );
        for note in &seen[1..] {
            assert_eq!(
                note["method"], only,
                "{id} heard what it did not ask for: {seen:?}"
            );
            assert_eq!(
                note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], id,
                "{note}"
            );
        }
        assert!(seen.len() >= 2, "{seen:?}");
    }
    let updated = notifications(&updates)
        .into_iter()
        .find(|n| n["method"] == "notifications/resources/updated")
        .unwrap();
    assert_eq!(updated["params"]["uri"], watched, "{updated}");
    // No response yet: the streams stay open.
    for stream in [&lists, &updates] {
        assert!(
            sse_messages(&stream.seen)
                .iter()
                .all(|m| m.get("id").is_none()),
            "{}",
            stream.seen
        );
    }
}

#[test]
fn sigterm_ends_a_listen_stream_with_its_final_result() {
    let home = tempfile::tempdir().unwrap();
    // A drain deadline well beyond the test's patience: a listen still counted in flight
    // would hold the daemon for all of it.
    let daemon = Daemon::start(
        "stateless::sigterm_ends_a_listen_stream_with_its_final_result",
        home.path(),
        &[("HOOKS_MCP_DRAIN_SECS", "600")],
    );
    daemon.wait_ready();
    let mut stream = listen(&daemon, "until-shutdown", json!({"toolsListChanged": true}));
    daemon.signal("TERM");
    assert!(
        read_within(
            &mut stream,
            "\"id\":\"until-shutdown\"",
            Duration::from_secs(30)
        ),
        "no final result: {}",
        stream.seen
    );
    let end = sse_messages(&stream.seen)
        .into_iter()
        .find(|m| m["id"] == "until-shutdown")
        .unwrap();
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "until-shutdown",
        "{end}"
    );
    // The stream ends after its result, and the daemon exits without waiting out the drain.
    let mut rest = Vec::new();
    stream
        .stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let ended = stream.stream.read_to_end(&mut rest);
    assert!(ended.is_ok(), "the stream did not end: {ended:?}");
    let status = daemon.wait_exit();
    assert!(status.success(), "{status:?}\n{}", daemon.text());
    let log = daemon.text();
    assert!(log.contains("in-flight calls finished"), "{log}");
    assert!(!log.contains("drain deadline"), "{log}");
}

/// A client that closes its listen stream is an ordinary end: the daemon says so at `debug`
/// and logs no error (rmcp logs the final result it could no longer send at `ERROR`).
#[test]
fn a_listen_stream_its_client_closes_logs_no_error() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "stateless::a_listen_stream_its_client_closes_logs_no_error",
        home.path(),
        &[("HOOKS_MCP_LOG", "info,rmcp=warn,server_full=debug")],
    );
    daemon.wait_ready();
    for id in ["closed-1", "closed-2"] {
        let stream = listen(&daemon, id, json!({"toolsListChanged": true}));
        drop(stream);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while daemon
        .text()
        .matches("a listen stream ended by its client")
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "{}", daemon.text());
        std::thread::sleep(Duration::from_millis(50));
    }
    daemon.signal("TERM");
    let status = daemon.wait_exit();
    assert!(status.success(), "{status:?}\n{}", daemon.text());
    let log = daemon.text();
    assert!(log.contains("in-flight calls finished"), "{log}");
    assert!(!log.contains(" ERROR "), "{log}");
}

#[test]
fn lazy_mode_without_a_session_runs_tools_through_call_tool() {
    let (daemon, _) = shared(
        "stateless::lazy_mode_without_a_session_runs_tools_through_call_tool",
        true,
    );
    let listed = result(daemon, "tools/list", None, json!({}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["find_tools", "call_tool"], "{listed}");

    let found = call(daemon, "find_tools", json!({"query": "publish broadcast"}));
    assert_eq!(found["isError"], false, "{found}");
    let tools = &found["structuredContent"]["tools"];
    let publish = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "channel_publish")
        .unwrap_or_else(|| panic!("{found}"));
    assert_eq!(publish["loaded"], false, "{publish}");
    let schema = &publish["inputSchema"];
    assert_eq!(schema["type"], "object", "{publish}");
    assert!(schema["properties"]["channel"].is_object(), "{publish}");
    assert!(
        found["structuredContent"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("call_tool")),
        "{found}"
    );

    let published = call(
        daemon,
        "call_tool",
        json!({"name": "channel_publish",
               "arguments": {"channel": "lazy-stateless", "message": "through call_tool"}}),
    );
    assert_eq!(published["isError"], false, "{published}");
    assert_eq!(
        published["structuredContent"]["channel"], "lazy-stateless",
        "{published}"
    );
    // A second request, served on its own: what the first one wrote is in the store.
    let listed = call(
        daemon,
        "call_tool",
        json!({"name": "channel_list", "arguments": {}}),
    );
    assert_eq!(listed["isError"], false, "{listed}");
    assert!(listed.to_string().contains("lazy-stateless"), "{listed}");

    let refused = call(daemon, "load_modules", json!({"modules": ["channels"]}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("call_tool"), "{refused}");
    // A listed tool named through call_tool is told it is called directly, not "unknown",
    // and a name no tool has is sent to find_tools (tools/list shows only these two): alike
    // on the fast path and on rmcp's (a progress token asks for a reply stream).
    let mut streamed = meta();
    streamed["progressToken"] = json!("p-1");
    for meta in [meta(), streamed] {
        for (named, says) in [
            ("call_tool", "is called directly"),
            ("find_tools", "is called directly"),
            ("channel_publsh", "find_tools searches"),
        ] {
            let nested = call_with(
                daemon,
                "call_tool",
                json!({"name": named, "arguments": {}}),
                meta.clone(),
            );
            assert_eq!(nested["isError"], true, "{nested}");
            let text = nested.to_string();
            assert!(text.contains(says), "{text}");
            assert!(!text.contains("tools/list"), "{text}");
        }
    }
    // A tool named directly that this server does not offer: advice that leads somewhere.
    let (status, answer) = ask(
        daemon,
        "tools/call",
        Some("channel_publsh"),
        json!({
        "name": "channel_publsh", "arguments": {}}),
    );
    assert_eq!(status, 200, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("call find_tools"), "{answer}");
    // The list is the same for the next request: nothing was loaded anywhere.
    let again = result(daemon, "tools/list", None, json!({}));
    assert_eq!(again["tools"].as_array().unwrap().len(), 2, "{again}");
}

#[test]
fn the_session_named_in_meta_is_seen_and_acknowledges() {
    let (daemon, home) = shared(
        "stateless::the_session_named_in_meta_is_seen_and_acknowledges",
        false,
    );
    let id = publish(home.path(), "stateless-alerts", Severity::Alert);
    let mut named = meta();
    named[server_full::SESSION_META_KEY] = json!("s-1");
    let read = call_with(
        daemon,
        "channel_read",
        json!({"channel": "stateless-alerts"}),
        named.clone(),
    );
    assert_eq!(read["isError"], false, "{read}");
    let acked = call_with(
        daemon,
        "channel_acknowledge",
        json!({"message_id": id}),
        named,
    );
    assert_eq!(acked["isError"], false, "{acked}");
    assert_eq!(
        acked["structuredContent"]["session_id"], "s-1",
        "attributed to the session in _meta: {acked}"
    );
    // Without a session in `_meta` or the arguments, acknowledging is refused as before.
    let anonymous = call(daemon, "channel_acknowledge", json!({"message_id": id}));
    assert_eq!(anonymous["isError"], true, "{anonymous}");
    assert!(anonymous.to_string().contains("session_id"), "{anonymous}");

    // The read API shows the session, reached over Streamable HTTP, and its acknowledgement.
    let deadline = Instant::now() + crate::support::PATIENCE;
    let session = loop {
        let page = http(daemon.addr, "GET", "/api/v1/sessions", &[], "").json();
        let found = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == "s-1")
            .cloned();
        if let Some(session) = found {
            break session;
        }
        assert!(Instant::now() < deadline, "s-1 never listed: {page}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(session["transport"], "streamable-http", "{session}");
    let report = http(
        daemon.addr,
        "GET",
        &format!("/api/v1/messages/{id}/delivery"),
        &[],
        "",
    )
    .json();
    assert!(report["acknowledged"].as_u64() >= Some(1), "{report}");
    let s1 = report["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "s-1")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(s1["acknowledged_at"].is_string(), "{report}");
}

#[test]
fn a_legacy_session_on_the_same_endpoint_is_unchanged() {
    let (daemon, _) = shared(
        "stateless::a_legacy_session_on_the_same_endpoint_is_unchanged",
        false,
    );
    // A 2025-11-25 session's streams carry no event ids: rmcp's priming event gave every
    // stream of a session the same one, where ids must be unique across them, and sent a client
    // that lost a stream to resume one that keeps no events.
    let opening = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "daemon-tests", "version": "1"},
        },
    });
    let opened = http(daemon.addr, "POST", "/mcp", &MCP_POST, &opening.to_string());
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert!(
        !opened.body.lines().any(|l| l.starts_with("id:")),
        "{}",
        opened.body
    );
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let mut in_session = MCP_POST.to_vec();
    in_session.push(("Mcp-Session-Id", &session));
    in_session.push(("MCP-Protocol-Version", "2025-11-25"));
    let initialized = crate::support::initialized();
    let acknowledged = http(daemon.addr, "POST", "/mcp", &in_session, &initialized);
    assert_eq!(acknowledged.status, 202, "{}", acknowledged.body);
    let reply = http(daemon.addr, "POST", "/mcp", &in_session, &body);
    assert!(
        !reply.body.lines().any(|l| l.starts_with("id:")),
        "{}",
        reply.body
    );
    let listed = mcp_request(daemon.addr, &session, &[], &body);
    let result = &listed["result"];
    assert!(result["tools"].as_array().unwrap().len() > 2, "{listed}");
    for legacy_free in ["resultType", "ttlMs", "cacheScope"] {
        assert!(result.get(legacy_free).is_none(), "{legacy_free}: {listed}");
    }
    let called = mcp_request(
        daemon.addr,
        &session,
        &[],
        &crate::support::call(3, "channel_list", json!({})),
    );
    assert_eq!(called["result"]["isError"], false, "{called}");
    assert!(called["result"].get("resultType").is_none(), "{called}");
    // A cursor that is not a string is refused in this era too, as stdio refuses it.
    let paged = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"cursor": 2}});
    let refused = mcp_request(daemon.addr, &session, &[], &paged.to_string());
    assert_eq!(refused["id"], 4, "{refused}");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let headers = [("Mcp-Session-Id", session.as_str())];
    assert_eq!(
        http(daemon.addr, "DELETE", "/mcp", &headers, "").status,
        200
    );
}
