//! Target `light_session`: `protocol_lite::light::LightSession` fed arbitrary line sequences.
//!
//! Invariants, line by line until a handoff: never a panic; a blank line, a notification or
//! a response gets nothing; a line `parse_line` refuses gets exactly that error reply; a
//! request with an id gets exactly one reply carrying its id (a result line or the
//! `tools/list` answer), or a handoff, after which the light session answers nothing more (the
//! full server answers the trigger line: see `Step::Handoff`). `ping` is always answered;
//! `initialize`, `tools/list` and the other discovery lists are answered as documented. The
//! replay holds exactly the answered `initialize` line and the notifications after it.

use protocol_lite::handshake::ServerIdentity;
use protocol_lite::jsonrpc::{self, Incoming};
use protocol_lite::light::{LightSession, Step};
use serde_json::{Value, json};

use crate::runtime::lines;

/// The `tools/list` result the session answers with.
fn tools_list() -> String {
    json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}).to_string()
}

/// Parses a reply line: one line of JSON-RPC 2.0.
fn reply_value(bytes: &[u8]) -> Value {
    assert_eq!(bytes.last(), Some(&b'\n'), "a reply ends with a newline");
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1, "one line");
    let value: Value = serde_json::from_slice(bytes).expect("a reply is JSON");
    assert_eq!(value["jsonrpc"], "2.0");
    value
}

/// Whether an `initialize` request's params are complete (what the light path answers).
fn complete_initialize(params: Option<&serde_json::Map<String, Value>>) -> bool {
    params.is_some_and(|p| {
        p.get("protocolVersion").is_some_and(Value::is_string)
            && p.get("capabilities").is_some_and(Value::is_object)
            && p.get("clientInfo").is_some_and(|c| {
                c.get("name").is_some_and(Value::is_string)
                    && c.get("version").is_some_and(Value::is_string)
            })
    })
}

/// Feeds the lines of `data` to a new session.
pub fn check(data: &[u8]) {
    let mut session = LightSession::new(ServerIdentity::default(), tools_list());
    let mut replay: Vec<u8> = Vec::new();
    let mut initialized = false;
    for line in lines(data) {
        let step = session.handle(line);
        if jsonrpc::is_blank(line) {
            assert_eq!(step, Step::Nothing, "a blank line is skipped");
            continue;
        }
        let incoming = match jsonrpc::parse_line(line) {
            Err(reply) => {
                assert_eq!(
                    step,
                    Step::Reply(reply.to_line()),
                    "a bad line gets its reply"
                );
                continue;
            }
            Ok((_, incoming)) => incoming,
        };
        let (id, method, params) = match incoming {
            Incoming::Response => {
                assert_eq!(step, Step::Nothing, "a response is not answered");
                continue;
            }
            Incoming::Notification { .. } => {
                assert_eq!(step, Step::Nothing, "a notification is never answered");
                if initialized {
                    replay.extend_from_slice(line);
                    replay.push(b'\n');
                }
                assert_eq!(session.replay(), &replay[..], "replay after a notification");
                continue;
            }
            Incoming::Request { id, method, params } => (id, method, params),
        };
        match step {
            Step::Reply(bytes) => {
                let value = reply_value(&bytes);
                assert_eq!(value["id"], id, "the reply carries the request's id");
                assert!(
                    value.get("result").is_some(),
                    "the light path answers with results"
                );
                match method.as_str() {
                    "ping" => assert_eq!(value["result"], json!({})),
                    "initialize" => {
                        assert!(!initialized, "a second initialize is handed off");
                        assert!(complete_initialize(params.as_ref()));
                        assert!(value["result"]["protocolVersion"].is_string());
                        initialized = true;
                        replay.extend_from_slice(line);
                        replay.push(b'\n');
                        assert_eq!(session.initialize_id(), Some(&id));
                    }
                    "resources/list" | "resources/templates/list" | "prompts/list" => {
                        assert!(initialized, "discovery before initialize is handed off");
                    }
                    other => panic!("the light path answered `{other}` itself"),
                }
            }
            Step::ListTools(list_id) => {
                assert_eq!(list_id, id, "tools/list answers its own request");
                assert!(initialized && method == "tools/list");
                let mut out = Vec::new();
                session
                    .write_tools_list(&list_id, &mut out)
                    .expect("writing to memory");
                let value = reply_value(&out);
                assert_eq!(value["id"], id);
                assert_eq!(
                    value["result"],
                    serde_json::from_str::<Value>(&tools_list()).unwrap()
                );
            }
            Step::Handoff(reason) => {
                assert!(!reason.is_empty());
                assert_ne!(method, "ping", "ping is always answered");
                let answerable = match method.as_str() {
                    "initialize" => !initialized && complete_initialize(params.as_ref()),
                    "tools/list"
                    | "resources/list"
                    | "resources/templates/list"
                    | "prompts/list" => initialized,
                    _ => false,
                };
                assert!(
                    !answerable,
                    "`{method}` was handed off but the light path answers it"
                );
                assert_eq!(session.replay(), &replay[..], "replay at the handoff");
                // The full server takes the connection from here.
                return;
            }
            Step::Nothing => panic!("the request `{method}` (id {id}) got no reply"),
        }
        assert_eq!(session.replay(), &replay[..], "replay after a request");
    }
}
