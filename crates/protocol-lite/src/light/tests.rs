//! Tests of the light session state machine.

use serde_json::{Value, json};

use super::*;

fn session() -> LightSession {
    let tools = json!({"tools": [{"name": "t"}]}).to_string();
    LightSession::new(ServerIdentity::default(), tools)
}

fn reply(step: Step) -> Value {
    match step {
        Step::Reply(bytes) => {
            assert_eq!(bytes.last(), Some(&b'\n'));
            serde_json::from_slice(&bytes).unwrap()
        }
        other => panic!("expected a reply, got {other:?}"),
    }
}

/// The `tools/list` answer `session` writes for `step`.
fn tools_reply(session: &LightSession, step: Step) -> Value {
    let Step::ListTools(id) = step else {
        panic!("expected a tools/list answer, got {step:?}");
    };
    let mut bytes = Vec::new();
    session.write_tools_list(&id, &mut bytes).unwrap();
    assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(bytes.last(), Some(&b'\n'));
    serde_json::from_slice(&bytes).unwrap()
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":"i-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;

#[test]
fn handshake_and_discovery_are_answered_and_replay_kept() {
    let mut s = session();
    let r = reply(s.handle(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#));
    assert_eq!(r, json!({"jsonrpc":"2.0","id":0,"result":{}}));
    let r = reply(s.handle(INIT.as_bytes()));
    assert_eq!(r["id"], "i-1");
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        s.handle(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        Step::Nothing
    );
    let step = s.handle(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert_eq!(
        tools_reply(&s, step),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "t"}]}})
    );
    let step = s.handle(br#"{"jsonrpc":"2.0","id":"x\"y","method":"tools/list"}"#);
    assert_eq!(tools_reply(&s, step)["id"], "x\"y");
    assert_eq!(
        reply(s.handle(br#"{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}"#))["result"]
            ["resourceTemplates"][0]["uriTemplate"],
        "hooks://channels/{channel}"
    );
    assert_eq!(
        reply(s.handle(br#"{"jsonrpc":"2.0","id":5,"method":"prompts/list"}"#))["result"],
        json!({"prompts": []})
    );
    assert_eq!(s.initialize_id(), Some(&json!("i-1")));
    let replay = String::from_utf8(s.replay().to_vec()).unwrap();
    assert_eq!(
        replay,
        format!(
            "{INIT}\n{}\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        )
    );
}

#[test]
fn unknown_versions_get_the_latest_with_initialize() {
    let mut s = session();
    let line = INIT.replace("2025-06-18", "2099-01-01");
    assert_eq!(
        reply(s.handle(line.as_bytes()))["result"]["protocolVersion"],
        "2025-11-25"
    );
}

#[test]
fn other_requests_hand_off() {
    let mut s = session();
    reply(s.handle(INIT.as_bytes()));
    assert!(matches!(
        s.handle(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#),
        Step::Handoff(_)
    ));
    assert!(matches!(s.handle(INIT.as_bytes()), Step::Handoff(_)));
}

#[test]
fn an_incomplete_initialize_is_refused_naming_what_it_lacks() {
    let mut s = session();
    let r = reply(s.handle(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#));
    assert_eq!(r["id"], 1, "{r}");
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let text = r["error"]["message"].as_str().unwrap();
    assert!(
        text.contains("protocolVersion, capabilities, clientInfo"),
        "{text}"
    );
    // Nothing was answered: a complete one opens the session.
    assert!(s.initialize_id().is_none());
    assert_eq!(
        reply(s.handle(INIT.as_bytes()))["result"]["protocolVersion"],
        "2025-06-18"
    );
}

#[test]
fn bad_lines_are_answered_without_handoff() {
    let mut s = session();
    assert_eq!(reply(s.handle(b"{oops"))["error"]["code"], -32700);
    assert_eq!(s.handle(b"   "), Step::Nothing);
    // Notifications before initialize are not replayed.
    assert_eq!(
        s.handle(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
        Step::Nothing
    );
    assert!(s.replay().is_empty());
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28 sessions (no initialize).

/// A 2026-07-28 request line: `params` with the `_meta` every request carries.
fn modern(id: Value, method: &str, params: Value) -> String {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

const LISTEN: &str = r#"{"toolsListChanged": true, "resourcesListChanged": true}"#;

fn listen(id: Value) -> String {
    modern(
        id,
        "subscriptions/listen",
        json!({"notifications": serde_json::from_str::<Value>(LISTEN).unwrap()}),
    )
}

fn watching() -> LightSession {
    session().with_resource_watch(true)
}

#[test]
fn claude_codes_opening_is_answered_and_held() {
    let mut s = watching();
    let discover = reply(s.handle(modern(json!(0), "server/discover", json!({})).as_bytes()));
    assert_eq!(discover["id"], 0);
    assert_eq!(
        discover["result"],
        ServerIdentity::default().discover_result()
    );

    let line = listen(json!(1));
    let Step::Listen(l) = s.handle(line.as_bytes()) else {
        panic!("the listen is held");
    };
    assert!(l.tools_list_changed && l.resources_list_changed);
    let ack: Value = serde_json::from_slice(&s.hold(line.as_bytes(), l)).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "resourcesListChanged": true})
    );
    assert_eq!(s.held().collect::<Vec<_>>(), [&json!(1)]);
    assert_eq!(s.resource_listeners().collect::<Vec<_>>(), [&json!(1)]);

    let step = s.handle(modern(json!(2), "tools/list", json!({})).as_bytes());
    assert_eq!(step, Step::ListModernTools(json!(2)));
    let mut out = Vec::new();
    s.write_modern_tools_list(&json!(2), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"resultType\":\"complete\",\"_meta\":\
             {{\"io.modelcontextprotocol/serverInfo\":{{\"name\":\"hooks-mcp\",\"version\":\"{}\"}}}},\
             \"ttlMs\":3600000,\"cacheScope\":\"public\",\"tools\":[{{\"name\":\"t\"}}]}}}}\n",
            crate::handshake::SERVER_VERSION
        )
    );
    assert!(s.initialize_id().is_none());
    assert_eq!(s.replay(), format!("{line}\n").as_bytes());
}

#[test]
fn a_discovery_start_mode_lists_tools_as_volatile() {
    let s = session().with_tools_hints(crate::modern::CacheHints::tools_list(true));
    let mut out = Vec::new();
    s.write_modern_tools_list(&json!("t"), &mut out).unwrap();
    let value: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(value["result"]["ttlMs"], 0);
    assert_eq!(value["result"]["cacheScope"], "private");
    assert_eq!(value["result"]["resultType"], "complete");
    assert_eq!(value["result"]["tools"], json!([{"name": "t"}]));
}

#[test]
fn requests_without_the_2026_meta_get_32602_before_initialize() {
    let mut s = session();
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":[]}}"#
            .to_owned(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": 2026,
            "io.modelcontextprotocol/clientCapabilities": {}}, "notifications": {}}})
        .to_string(),
    ] {
        let r = reply(s.handle(line.as_bytes()));
        assert_eq!(r["id"], 1, "{line}");
        assert_eq!(r["error"]["code"], -32602, "{line}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("request _meta is missing or has malformed required fields: io."),
            "{r}"
        );
    }
    let r = reply(
        s.handle(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
            .to_string()
            .as_bytes(),
        ),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fields: io.modelcontextprotocol/clientCapabilities;"),
        "{r}"
    );
    // Nothing was kept, and the session can still initialize.
    assert!(s.replay().is_empty() && s.held().next().is_none());
    assert_eq!(reply(s.handle(INIT.as_bytes()))["id"], "i-1");
}

#[test]
fn unsupported_versions_get_32022_and_legacy_versions_hand_off() {
    let mut s = session();
    for method in ["server/discover", "tools/list", "tools/call", "ping"] {
        let line = modern(json!(5), method, json!({"name": "x"}))
            .replace("\"2026-07-28\"", "\"1900-01-01\"");
        let r = reply(s.handle(line.as_bytes()));
        assert_eq!(r["error"]["code"], -32022, "{method}");
        assert_eq!(r["error"]["message"], "Unsupported protocol version");
        assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
        assert_eq!(
            r["error"]["data"]["supported"],
            json!(crate::handshake::SUPPORTED_VERSIONS)
        );
    }
    for version in ["2024-11-05", "2025-11-25"] {
        let line = modern(json!(6), "tools/list", json!({}))
            .replace("\"2026-07-28\"", &format!("\"{version}\""));
        assert!(
            matches!(s.handle(line.as_bytes()), Step::Handoff(_)),
            "{version}"
        );
    }
}

#[test]
fn ping_is_answered_in_every_era_but_2026() {
    let mut s = session();
    let r = reply(s.handle(modern(json!(1), "ping", json!({})).as_bytes()));
    assert_eq!(r["error"]["code"], -32601);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Method not found")
    );
    let legacy = modern(json!(2), "ping", json!({})).replace("2026-07-28", "2025-06-18");
    assert_eq!(reply(s.handle(legacy.as_bytes()))["result"], json!({}));
    assert_eq!(
        reply(s.handle(br#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#))["result"],
        json!({})
    );
}

#[test]
fn static_lists_are_complete_and_cacheable() {
    let mut s = session();
    let r = reply(s.handle(modern(json!(1), "resources/templates/list", json!({})).as_bytes()));
    let server = json!({"io.modelcontextprotocol/serverInfo": {
        "name": "hooks-mcp", "version": crate::handshake::SERVER_VERSION,
    }});
    let mut expected = json!({"resultType": "complete", "_meta": server, "ttlMs": 3600000,
        "cacheScope": "public"});
    expected["resourceTemplates"] = resource_templates()["resourceTemplates"].clone();
    assert_eq!(r["result"], expected);
    let r = reply(s.handle(modern(json!(2), "prompts/list", json!({})).as_bytes()));
    assert_eq!(
        r["result"],
        json!({"resultType": "complete", "_meta": server, "ttlMs": 3600000,
            "cacheScope": "public", "prompts": []})
    );
    assert_eq!(
        s.handle(modern(json!(3), "resources/list", json!({})).as_bytes()),
        Step::ListResources(json!(3))
    );
}

#[test]
fn other_2026_requests_hand_off() {
    let mut s = watching();
    for (method, params) in [
        (
            "tools/call",
            json!({"name": "channel_list", "arguments": {}}),
        ),
        ("resources/read", json!({"uri": "hooks://channels/a"})),
        ("completion/complete", json!({})),
        ("no/such/method", json!({})),
        (
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["hooks://channels/a"]}}),
        ),
        ("subscriptions/listen", json!({})),
    ] {
        let step = s.handle(modern(json!(1), method, params).as_bytes());
        assert!(matches!(step, Step::Handoff(_)), "{method}: {step:?}");
    }
    // Without a watch on the store, a resource-list subscription is the full server's.
    let mut s = session();
    assert!(matches!(
        s.handle(listen(json!(1)).as_bytes()),
        Step::Handoff(_)
    ));
    let tools_only = modern(
        json!(2),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
    );
    let Step::Listen(l) = s.handle(tools_only.as_bytes()) else {
        panic!("a tools-only listen is held without a watch");
    };
    let ack: Value = serde_json::from_slice(&s.hold(tools_only.as_bytes(), l)).unwrap();
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert!(s.resource_listeners().next().is_none());
    // A second listen reusing a held id is not held twice.
    assert!(matches!(s.handle(tools_only.as_bytes()), Step::Handoff(_)));
}

#[test]
fn a_handoff_replays_the_held_listens_then_the_trigger_and_suppresses_their_acks() {
    let mut s = watching();
    let first = listen(json!("a"));
    let second = listen(json!(7));
    for line in [&first, &second] {
        let Step::Listen(l) = s.handle(line.as_bytes()) else {
            panic!("held");
        };
        s.hold(line.as_bytes(), l);
    }
    let call = modern(json!(3), "tools/call", json!({"name": "load_modules"}));
    assert!(matches!(s.handle(call.as_bytes()), Step::Handoff(_)));
    let handoff = s.handoff(format!("{call}\r\n").as_bytes(), b"{\"more\":1}\n");
    assert_eq!(
        String::from_utf8(handoff.replay).unwrap(),
        format!("{first}\n{second}\n{call}\r\n{{\"more\":1}}\n")
    );
    assert_eq!(
        handoff.env,
        [(crate::setting::SUPPRESS_ACKS_ENV, "[\"a\",7]".to_owned())]
    );
    // A trigger read at EOF without its newline gets one.
    let handoff = s.handoff(call.as_bytes(), b"");
    assert!(handoff.replay.ends_with(format!("{call}\n").as_bytes()));
}

#[test]
fn a_cancelled_listen_is_forgotten_and_not_replayed() {
    let mut s = watching();
    let first = listen(json!(1));
    let second = listen(json!(2));
    for line in [&first, &second] {
        let Step::Listen(l) = s.handle(line.as_bytes()) else {
            panic!("held");
        };
        s.hold(line.as_bytes(), l);
    }
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
    assert_eq!(s.handle(cancel.as_bytes()), Step::Nothing);
    // Cancelling what is not held (or another id type) changes nothing.
    let other =
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"2"}}"#;
    assert_eq!(s.handle(other.as_bytes()), Step::Nothing);
    assert_eq!(s.held().collect::<Vec<_>>(), [&json!(2)]);
    assert_eq!(s.replay(), format!("{second}\n").as_bytes());
    let handoff = s.handoff(b"x\n", b"");
    assert_eq!(handoff.replay, format!("{second}\nx\n").into_bytes());
    assert_eq!(
        handoff.env,
        [(crate::setting::SUPPRESS_ACKS_ENV, "[2]".to_owned())]
    );
    let last = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#;
    s.handle(last.as_bytes());
    assert!(s.held().next().is_none() && s.replay().is_empty());
    assert!(s.handoff(b"x\n", b"").env.is_empty());
}

/// Checks that `s` refuses an `initialize` as one after the stateless era was chosen, and
/// then still serves 2026-07-28 requests.
fn refuses_initialize(s: &mut LightSession) {
    let refusal = modern::initialize_after_stateless(&json!("i-1"));
    assert_eq!(refusal.code, -32600);
    assert_eq!(s.handle(INIT.as_bytes()), Step::Reply(refusal.to_line()));
    assert!(matches!(
        s.handle(modern(json!(9), "tools/list", json!({})).as_bytes()),
        Step::ListModernTools(_)
    ));
}

#[test]
fn initialize_after_a_2026_request_is_refused_and_a_legacy_handoff_is_unchanged() {
    // A held listen chose the stateless era: the process serves it, as rmcp would after the
    // handoff, rather than answer an `initialize` whose session it could not keep.
    let mut s = watching();
    let line = listen(json!(1));
    let Step::Listen(l) = s.handle(line.as_bytes()) else {
        panic!("held");
    };
    s.hold(line.as_bytes(), l);
    refuses_initialize(&mut s);
    // So does a list answered here.
    let mut s = watching();
    let step = s.handle(modern(json!(1), "tools/list", json!({})).as_bytes());
    assert!(matches!(step, Step::ListModernTools(_)), "{step:?}");
    refuses_initialize(&mut s);

    let mut s = watching();
    // A probe, a refused request (no `_meta`, a version not served) and a removed method
    // choose nothing: the session is still free to initialize.
    reply(s.handle(modern(json!(0), "server/discover", json!({})).as_bytes()));
    reply(s.handle(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#));
    let unsupported = modern(json!(2), "tools/list", json!({})).replace("2026-07-28", "1999-01-01");
    assert_eq!(
        reply(s.handle(unsupported.as_bytes()))["error"]["code"],
        -32022
    );
    let removed = reply(s.handle(modern(json!(3), "logging/setLevel", json!({})).as_bytes()));
    assert_eq!(removed["error"]["code"], -32601);
    assert_eq!(
        reply(s.handle(INIT.as_bytes()))["result"]["protocolVersion"],
        "2025-06-18"
    );
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    s.handle(initialized.as_bytes());
    let handoff = s.handoff(b"trigger\n", b"");
    assert_eq!(
        String::from_utf8(handoff.replay).unwrap(),
        format!("{INIT}\n{initialized}\ntrigger\n")
    );
    assert_eq!(
        handoff.env,
        [(crate::setting::SUPPRESS_ID_ENV, "\"i-1\"".to_owned())]
    );
}

#[test]
fn a_legacy_session_serves_a_request_by_the_version_its_meta_names() {
    let mut s = watching();
    reply(s.handle(INIT.as_bytes()));
    // Without `_meta`, or naming the negotiated version: served as before (no resultType).
    let step = s.handle(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert_eq!(step, Step::ListTools(json!(2)));
    let named = modern(json!(4), "prompts/list", json!({})).replace("2026-07-28", "2025-11-25");
    assert_eq!(
        reply(s.handle(named.as_bytes()))["result"],
        json!({"prompts": []})
    );
    // Naming 2026-07-28: its rules, whatever came before (the full server's list answers).
    assert_eq!(
        reply(s.handle(modern(json!(3), "ping", json!({})).as_bytes()))["error"]["code"],
        json!(-32601)
    );
    let mut stateless = watching();
    reply(stateless.handle(INIT.as_bytes()));
    assert!(matches!(
        stateless.handle(modern(json!(2), "tools/list", json!({})).as_bytes()),
        Step::Handoff(_)
    ));
    assert!(matches!(
        s.handle(listen(json!(5)).as_bytes()),
        Step::Handoff(_)
    ));
    assert!(matches!(
        s.handle(modern(json!(6), "server/discover", json!({})).as_bytes()),
        Step::Handoff(_)
    ));
    assert!(matches!(
        s.handle(br#"{"jsonrpc":"2.0","id":7,"method":"resources/list"}"#),
        Step::Handoff(_)
    ));
}

#[test]
fn a_pushing_session_declares_the_channel_and_only_initialize_opens_it() {
    let tools = json!({"tools": []}).to_string();
    let identity = ServerIdentity {
        instructions: None,
        channel: true,
    };
    let mut legacy = LightSession::new(identity.clone(), tools.clone());
    assert!(!legacy.is_open());
    let r = reply(legacy.handle(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#));
    assert_eq!(r["result"], json!({}));
    assert!(!legacy.is_open(), "a ping opens nothing");
    let r = reply(legacy.handle(INIT.as_bytes()));
    assert!(legacy.is_open());
    // rmcp's order: `experimental` first, so both paths write the same bytes.
    let text = serde_json::to_string(&r["result"]["capabilities"]).unwrap();
    assert!(
        text.starts_with(r#"{"experimental":{"claude/channel":{}},"logging":{}"#),
        "{text}"
    );
    let mut modern = LightSession::new(identity, tools);
    let bad = reply(modern.handle(br#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#));
    assert_eq!(bad["error"]["code"], -32602);
    assert!(!modern.is_open(), "a refused request opens nothing");
    let discover = br#"{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let r = reply(modern.handle(discover));
    assert_eq!(
        r["result"]["capabilities"]["experimental"]["claude/channel"],
        json!({})
    );
    assert!(
        !modern.is_open(),
        "a 2026-07-28 session is never pushed into"
    );
    let plain = reply(session().handle(INIT.as_bytes()));
    assert!(
        plain["result"]["capabilities"]
            .get("experimental")
            .is_none()
    );
}
