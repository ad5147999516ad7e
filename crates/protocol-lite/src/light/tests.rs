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
    assert!(matches!(
        s.handle(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        Step::Handoff(_)
    ));
    reply(s.handle(INIT.as_bytes()));
    assert!(matches!(
        s.handle(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#),
        Step::Handoff(_)
    ));
    assert!(matches!(s.handle(INIT.as_bytes()), Step::Handoff(_)));
    let mut s = session();
    assert!(matches!(
        s.handle(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
        Step::Handoff(_)
    ));
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
