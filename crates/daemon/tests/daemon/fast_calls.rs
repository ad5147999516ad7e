//! The fast path for stateless 2026-07-28 `tools/call` requests against rmcp's own answers:
//! the same calls POSTed to a daemon with the fast path (the default) and to one with
//! `HOOKS_MCP_FAST_CALLS=off`, whose stateless requests rmcp serves, give the same JSON-RPC
//! message (results, tool errors and protocol errors, eager and lazy), the same status and
//! content type; the fast path answers only what it should (its trace line counts them),
//! leaves every unusual request to rmcp, and keeps the token, the `Host` check, metrics, the
//! session named in `_meta` and the drain on SIGTERM.

use serde_json::{Value, json};

use crate::support::{Daemon, MCP_POST, Response, TOKEN, WriteLock, http, mcp_session};

/// The revision these requests speak.
const VERSION: &str = "2026-07-28";
/// What the fast path logs (at trace level) for each call it answers.
const ANSWERED: &str = "tools/call answered on the fast path";
/// The log filter that shows it.
const TRACE_FAST_PATH: (&str, &str) = ("HOOKS_MCP_LOG", "info,rmcp=warn,daemon::fast_call=trace");

/// A daemon with the fast path and one without, each on a store of its own (kept with it).
struct Pair {
    fast: (Daemon, tempfile::TempDir),
    rmcp: (Daemon, tempfile::TempDir),
}

impl Pair {
    fn start(test: &str, env: &[(&str, &str)]) -> Pair {
        let start = |extra: (&str, &str)| {
            let home = tempfile::tempdir().unwrap();
            let mut env = env.to_vec();
            env.push(TRACE_FAST_PATH);
            env.push(extra);
            let daemon = Daemon::start(test, home.path(), &env);
            daemon.wait_ready();
            (daemon, home)
        };
        Pair {
            fast: start(("HOOKS_MCP_FAST_CALLS", "on")),
            rmcp: start(("HOOKS_MCP_FAST_CALLS", "off")),
        }
    }

    /// The same POST to both daemons: (fast path's reply, rmcp's reply).
    fn both(&self, headers: &[(&str, &str)], body: &str) -> (Response, Response) {
        let ask = |daemon: &Daemon| http(daemon.addr, "POST", "/mcp", headers, body);
        (ask(&self.fast.0), ask(&self.rmcp.0))
    }

    /// Posts to both and checks that they answered alike; returns the fast path's message.
    fn same(&self, what: &str, headers: &[(&str, &str)], body: &str) -> Value {
        let (fast, rmcp) = self.both(headers, body);
        assert_eq!(
            fast.status, rmcp.status,
            "{what}: {} / {}",
            fast.body, rmcp.body
        );
        assert_eq!(
            fast.header("content-type"),
            rmcp.header("content-type"),
            "{what}"
        );
        if !is_mcp(&fast) {
            // A plain-text refusal (406, 415, ...), from rmcp on both.
            assert_eq!(fast.body, rmcp.body, "{what}");
            return Value::Null;
        }
        let (ours, theirs) = (message(&fast), message(&rmcp));
        assert_eq!(normalized(&ours), normalized(&theirs), "{what}");
        ours
    }
}

/// How many calls `daemon` answered on its fast path so far.
fn answered(daemon: &Daemon) -> usize {
    daemon.log.text().matches(ANSWERED).count()
}

/// Waits until `daemon` has logged `count` fast-path answers (log lines arrive on a thread of
/// their own), then checks that there are no more.
fn expect_answered(daemon: &Daemon, count: usize) {
    let deadline = std::time::Instant::now() + test_support::PATIENCE;
    while answered(daemon) < count && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(answered(daemon), count, "{}", daemon.log.text());
}

/// The `_meta` a 2026-07-28 request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fast-call-tests", "version": "1"},
    })
}

/// A `tools/call` body with id `id`.
fn call_body(id: Value, tool: &str, arguments: Value, meta: Value) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    })
    .to_string()
}

/// The headers of a 2026-07-28 `tools/call` POST naming `tool`.
fn headers(tool: &str) -> Vec<(&str, &str)> {
    let mut headers = MCP_POST.to_vec();
    headers.extend([
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ]);
    headers
}

/// Whether a reply carries a JSON-RPC message (JSON or SSE).
fn is_mcp(reply: &Response) -> bool {
    reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json") || t.starts_with("text/event-stream"))
}

/// The JSON-RPC message of a reply, whether sent as JSON or as an SSE stream.
fn message(reply: &Response) -> Value {
    if reply
        .header("content-type")
        .is_some_and(|t| t.starts_with("application/json"))
    {
        return reply.json();
    }
    let messages = reply.messages();
    assert_eq!(messages.len(), 1, "one message: {}", reply.body);
    messages[0].clone()
}

/// `value` with what differs between two stores (times, which each call reads from the
/// clock) replaced by a marker, inside the text content too.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let timely = k.ends_with("_at") || k.ends_with("_ms") || k == "now";
                    let v = if timely && (v.is_number() || v.is_string()) {
                        json!("<time>")
                    } else {
                        normalized(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::String(text) if text.starts_with('{') => match serde_json::from_str(text) {
            Ok(inner) => json!({"<text>": normalized(&inner)}),
            Err(_) => value.clone(),
        },
        other => other.clone(),
    }
}

#[test]
fn results_tool_errors_and_protocol_errors_are_rmcps() {
    let pair = Pair::start(
        "fast_calls::results_tool_errors_and_protocol_errors_are_rmcps",
        &[],
    );
    let mut with_session = meta();
    with_session["dev.hooks-mcp/session"] = json!("fast-s1");
    let calls = [
        (
            "an empty listing",
            json!(1),
            "channel_list",
            json!({}),
            meta(),
        ),
        (
            "a publication",
            json!("p-1"),
            "channel_publish",
            json!({"channel": "fast", "message": "hello", "severity": "alert"}),
            meta(),
        ),
        ("a listing", json!(2), "channel_list", json!({}), meta()),
        (
            "a read for the session named in _meta",
            json!(3),
            "channel_read",
            json!({"channel": "fast"}),
            with_session.clone(),
        ),
        (
            "an acknowledgement for it",
            json!(4),
            "channel_acknowledge",
            json!({"message_id": 1}),
            with_session.clone(),
        ),
        (
            "a tool error (a required argument missing)",
            json!(5),
            "channel_publish",
            json!({"channel": "fast"}),
            meta(),
        ),
        (
            "a tool error (an argument of the wrong type)",
            json!(6),
            "channel_list",
            json!({"limit": "many"}),
            meta(),
        ),
        (
            "an unknown tool (a protocol error)",
            json!(7),
            "no_such_tool",
            json!({}),
            meta(),
        ),
        (
            "load_modules without discovery (unknown here)",
            json!(8),
            "load_modules",
            json!({"modules": ["channels"]}),
            meta(),
        ),
        (
            "a tool that needs a session, without one",
            json!(i64::MAX),
            "channel_acknowledge",
            json!({"message_id": 1}),
            meta(),
        ),
        (
            "a publication by the session named in _meta",
            json!("p-2"),
            "channel_publish",
            json!({"channel": "fast", "message": "from fast-s1"}),
            with_session.clone(),
        ),
    ];
    for (what, id, tool, arguments, meta) in &calls {
        let body = call_body(id.clone(), tool, arguments.clone(), meta.clone());
        let answer = pair.same(what, &headers(tool), &body);
        assert_eq!(&answer["id"], id, "{what}: {answer}");
    }
    expect_answered(&pair.fast.0, calls.len());
    expect_answered(&pair.rmcp.0, 0);

    // The shapes compared above, spelled out once.
    let (fast, _) = pair.both(
        &headers("channel_list"),
        &call_body(json!(9), "channel_list", json!({}), meta()),
    );
    assert_eq!(fast.status, 200);
    assert_eq!(fast.header("content-type"), Some("text/event-stream"));
    assert_eq!(fast.header("cache-control"), Some("no-cache"));
    let listing = message(&fast);
    assert_eq!(listing["result"]["resultType"], "complete", "{listing}");
    assert!(
        listing["result"]["structuredContent"]["channels"].is_array(),
        "{listing}"
    );
    let (fast, _) = pair.both(
        &headers("no_such_tool"),
        &call_body(json!(10), "no_such_tool", json!({}), meta()),
    );
    let refused = message(&fast);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // Metrics count the fast path's calls as rmcp's path counts them.
    let metrics = http(pair.fast.0.addr, "GET", "/metrics", &[], "").body;
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("hooks_mcp_tool_calls_total{")
                && l.contains("tool=\"channel_list\"")
                && l.contains("outcome=\"ok\"")
        })
        .unwrap_or_else(|| panic!("no channel_list series:\n{metrics}"));
    assert!(line.ends_with(" 3"), "{line}");

    // The session named in _meta was recorded as a Streamable HTTP session on both.
    for (daemon, _) in [&pair.fast, &pair.rmcp] {
        let deadline = std::time::Instant::now() + test_support::PATIENCE;
        let seen = loop {
            let page = http(daemon.addr, "GET", "/api/v1/sessions", &[], "").json();
            let found = page["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["session_id"] == "fast-s1")
                .cloned();
            if let Some(seen) = found {
                break seen;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "fast-s1 never listed: {page}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(seen["transport"], "streamable-http", "{seen}");
        // What it changed is audited as its own (a tool without a session_id argument).
        let audit = http(daemon.addr, "GET", "/api/v1/audit", &[], "").json();
        let published = audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == "publish")
            .map(|e| (e["actor_kind"].clone(), e["actor"].clone()))
            .collect::<Vec<_>>();
        assert_eq!(
            published,
            [
                (json!("unknown"), json!("")),
                (json!("session"), json!("fast-s1"))
            ],
            "{audit}"
        );
    }
}

/// A request to send to both daemons: what it is, its headers and its body.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, String);

#[test]
fn what_the_fast_path_does_not_serve_reaches_rmcp_unchanged() {
    let pair = Pair::start(
        "fast_calls::what_the_fast_path_does_not_serve_reaches_rmcp_unchanged",
        &[],
    );
    let plain = call_body(json!(1), "channel_list", json!({}), meta());
    let with = |key: &str, value: Value| {
        let mut meta = meta();
        meta[key] = value;
        call_body(json!(2), "channel_list", json!({}), meta)
    };
    let without = |key: &str| {
        let mut meta = meta();
        meta.as_object_mut().unwrap().remove(key);
        call_body(json!(3), "channel_list", json!({}), meta)
    };
    let header_set = |replace: &[(&'static str, &'static str)]| {
        let mut headers = headers("channel_list");
        for (name, value) in replace {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            if !value.is_empty() {
                headers.push((name, value));
            }
        }
        headers
    };
    let extra_member = json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "channel_list", "arguments": {}, "_meta": meta(),
                   "requestState": "opaque"},
    })
    .to_string();
    let cases: Vec<Case<'_>> = vec![
        (
            "a progress token",
            headers("channel_list"),
            with("progressToken", json!("t-1")),
        ),
        (
            "a log level",
            headers("channel_list"),
            with("io.modelcontextprotocol/logLevel", json!("debug")),
        ),
        (
            "no clientCapabilities",
            headers("channel_list"),
            without("io.modelcontextprotocol/clientCapabilities"),
        ),
        (
            "no protocolVersion in _meta",
            headers("channel_list"),
            without("io.modelcontextprotocol/protocolVersion"),
        ),
        (
            "a Base64 Mcp-Name",
            header_set(&[("Mcp-Name", "=?base64?Y2hhbm5lbF9saXN0?=")]),
            plain.clone(),
        ),
        (
            "an Mcp-Name for another tool",
            header_set(&[("Mcp-Name", "channel_read")]),
            plain.clone(),
        ),
        (
            "no Mcp-Name",
            header_set(&[("Mcp-Name", "")]),
            plain.clone(),
        ),
        (
            "an Mcp-Method for another method",
            header_set(&[("Mcp-Method", "tools/list")]),
            plain.clone(),
        ),
        (
            "an older MCP-Protocol-Version",
            header_set(&[("MCP-Protocol-Version", "2025-11-25")]),
            plain.clone(),
        ),
        (
            "an Accept without SSE",
            header_set(&[("Accept", "application/json")]),
            plain.clone(),
        ),
        (
            "a weighted Accept",
            header_set(&[("Accept", "application/json, text/event-stream;q=0.5")]),
            plain.clone(),
        ),
        (
            "an Mcp-Param header",
            header_set(&[("Mcp-Param-Channel", "x")]),
            plain.clone(),
        ),
        (
            "a member this path does not know",
            headers("channel_list"),
            extra_member,
        ),
        (
            "a body that is not JSON",
            headers("channel_list"),
            "{".into(),
        ),
    ];
    for (what, headers, body) in &cases {
        pair.same(what, headers, body);
    }
    expect_answered(&pair.fast.0, 0);

    // A legacy session's call on the same endpoint never takes the fast path.
    let session = mcp_session(pair.fast.0.addr, &[]);
    let mut legacy = MCP_POST.to_vec();
    legacy.push(("Mcp-Session-Id", session.as_str()));
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "channel_list", "arguments": {}}})
    .to_string();
    let reply = http(pair.fast.0.addr, "POST", "/mcp", &legacy, &body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.messages()[0]["result"].is_object(), "{}", reply.body);
    // And the plain call does.
    pair.same("the plain call", &headers("channel_list"), &plain);
    expect_answered(&pair.fast.0, 1);
}

#[test]
fn lazy_mode_answers_through_call_tool_as_rmcp_does() {
    let pair = Pair::start(
        "fast_calls::lazy_mode_answers_through_call_tool_as_rmcp_does",
        &[("HOOKS_MCP_MODE", "lazy")],
    );
    let calls = [
        ("find_tools", json!({"query": "publish"})),
        (
            "call_tool",
            json!({"name": "channel_publish",
                   "arguments": {"channel": "lazy-fast", "message": "via call_tool"}}),
        ),
        (
            "call_tool",
            json!({"name": "channel_list", "arguments": {}}),
        ),
        ("call_tool", json!({"name": "no_such_tool"})),
        ("load_modules", json!({"modules": ["channels"]})),
        ("channel_list", json!({})),
    ];
    for (i, (tool, arguments)) in calls.iter().enumerate() {
        let body = call_body(json!(i), tool, arguments.clone(), meta());
        pair.same(&format!("{tool} {arguments}"), &headers(tool), &body);
    }
    expect_answered(&pair.fast.0, calls.len());
}

#[test]
fn the_gate_applies_and_a_held_call_is_drained() {
    let test = "fast_calls::the_gate_applies_and_a_held_call_is_drained";
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        test,
        home.path(),
        &[
            ("HOOKS_MCP_TOKEN", TOKEN),
            ("HOOKS_MCP_BUSY_TIMEOUT_MS", "30000"),
            TRACE_FAST_PATH,
        ],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let bearer = format!("Bearer {TOKEN}");
    let mut authorized = headers("channel_list");
    authorized.push(("Authorization", bearer.as_str()));
    let body = call_body(json!(1), "channel_list", json!({}), meta());

    let refused = http(addr, "POST", "/mcp", &headers("channel_list"), &body);
    assert_eq!(refused.status, 401, "{}", refused.body);
    let mut elsewhere = authorized.clone();
    elsewhere.push(("Host", "evil.example.com"));
    let refused = http(addr, "POST", "/mcp", &elsewhere, &body);
    assert_eq!(refused.status, 403, "{}", refused.body);
    let mut browser = authorized.clone();
    browser.push(("Origin", "https://evil.example.com"));
    let refused = http(addr, "POST", "/mcp", &browser, &body);
    assert_eq!(refused.status, 403, "{}", refused.body);
    let answered_ok = http(addr, "POST", "/mcp", &authorized, &body);
    assert_eq!(answered_ok.status, 200, "{}", answered_ok.body);
    expect_answered(&daemon, 1);

    // A write held by the store's lock counts in flight, and SIGTERM waits for it.
    let lock = WriteLock::take(home.path());
    let mut publish = headers("channel_publish");
    publish.push(("Authorization", bearer.as_str()));
    let publish: Vec<(String, String)> = publish
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let held = call_body(
        json!(2),
        "channel_publish",
        json!({"channel": "drained", "message": "held"}),
        meta(),
    );
    let pending = std::thread::spawn(move || {
        let publish: Vec<(&str, &str)> = publish
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        http(addr, "POST", "/mcp", &publish, &held)
    });
    // The plain level: the full one reads the store, whose one thread the held call occupies.
    let deadline = std::time::Instant::now() + test_support::PATIENCE;
    loop {
        let health = http(addr, "GET", "/health", &[], "").json();
        if health["in_flight"] == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never in flight: {health}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    daemon.signal("TERM");
    assert!(daemon.log.wait_for("SIGTERM received").is_some());
    drop(lock);
    let reply = pending.join().unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let done = message(&reply);
    assert_eq!(
        done["result"]["structuredContent"]["channel"], "drained",
        "{done}"
    );
    let status = daemon.wait_exit();
    assert!(status.success(), "{status:?}\n{}", daemon.log.text());
    let log = daemon.log.text();
    assert!(log.contains("in-flight calls finished"), "{log}");
    assert_eq!(answered(&daemon), 2, "{log}");
}
