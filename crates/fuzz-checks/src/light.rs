//! Target `light_session`: `protocol_lite::light::LightSession` fed arbitrary line sequences.
//!
//! Invariants, line by line until a handoff: never a panic; a blank line, a notification or
//! a response gets nothing; a line `parse_line` refuses gets exactly that error reply; a
//! request with an id gets exactly one reply carrying its id (a result or error line, the
//! `tools/list` answer, the `resources/list` the front end fetches), is held (a
//! `subscriptions/listen`, acknowledged at once with its id), or hands off, after which the
//! light session answers nothing more (the full server answers the trigger line: see
//! `Step::Handoff`). `ping` is always answered.
//!
//! A session that opened with `initialize` is served as before the 2026-07-28 revision:
//! `initialize`, `tools/list` and the other discovery lists answered with results; a request
//! there whose `_meta` names 2026-07-28 is handed off (the full server serves it by that
//! version's rules) unless its `_meta` is refused, and one naming a version not served gets
//! `-32022`. Before any `initialize`, a request other than `ping` is refused for its `_meta` in
//! one order: a method 2026-07-28 removed `-32601`, an unsupported version `-32022`, a missing
//! or malformed protocol version or client capabilities, or a log level not recognized,
//! `-32602`; and only 2026-07-28 requests are answered or held here; their results are complete
//! (`resultType`) and carry caching hints. A list request with a cursor gets `-32602` in
//! either era (every list is one page). A request before `initialize` with complete `_meta`
//! naming a served version, other than `server/discover`, `ping` and the removed methods,
//! chooses the stateless era: an `initialize` after it gets `-32600`.
//!
//! The replay holds exactly the answered `initialize` line and the notifications after it, or
//! the held (and not cancelled) `subscriptions/listen` lines; a handoff replays it, then the
//! trigger, and names what the full server must not answer again.

use protocol_lite::handshake::{STATELESS_VERSION, SUPPORTED_VERSIONS, ServerIdentity};
use protocol_lite::jsonrpc::{self, Incoming};
use protocol_lite::light::{LightSession, Step};
use protocol_lite::modern;
use protocol_lite::setting::{SUPPRESS_ACKS_ENV, SUPPRESS_ID_ENV};
use serde_json::{Map, Value, json};

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

/// The model of what the session keeps.
#[derive(Default)]
struct Model {
    initialized: bool,
    /// A request chose the stateless era: `initialize` is refused.
    stateless: bool,
    /// The replay of a session that opened with `initialize`.
    replay: Vec<u8>,
    /// The held subscriptions: id and line.
    held: Vec<(Value, Vec<u8>)>,
    /// The ids of the held subscriptions that asked for resource list changes.
    resources: Vec<Value>,
}

impl Model {
    fn replay(&self) -> Vec<u8> {
        if self.initialized {
            return self.replay.clone();
        }
        let mut replay = Vec::new();
        for (_, line) in &self.held {
            replay.extend_from_slice(line);
            replay.push(b'\n');
        }
        replay
    }
}

/// What the 2026-07-28 rules say of a request before `initialize` (other than `ping`): the
/// error code it gets, or `None` when it names 2026-07-28 with complete `_meta`, or the legacy
/// version it names (handed off).
enum Stateless {
    Refused(i64),
    Modern,
    Legacy,
}

/// Whether 2026-07-28 removed `method` (answered `-32601` by the light path).
fn removed(method: &str) -> bool {
    modern::REMOVED_METHODS.iter().any(|(m, _)| *m == method)
}

/// Whether a request is a list request with a cursor (none is valid: every list is one page).
fn with_cursor(method: &str, params: Option<&Map<String, Value>>) -> bool {
    matches!(
        method,
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list"
    ) && params
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_null())
}

/// Whether a request's `_meta` names a log level that is not one of the eight.
fn bad_log_level(params: Option<&Map<String, Value>>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(modern::LOG_LEVEL_KEY))
        .is_some_and(|l| !l.as_str().is_some_and(|l| modern::LOG_LEVELS.contains(&l)))
}

/// The refusal of a request for its `_meta`, in the one order both sides of the hand-off keep:
/// a removed method (2026-07-28), a version not served, missing or malformed fields, a log
/// level not recognized.
fn meta_refusal(method: &str, params: Option<&Map<String, Value>>) -> Option<Stateless> {
    let version = modern::requested_version(params);
    if version == Some(STATELESS_VERSION) && removed(method) {
        return Some(Stateless::Refused(jsonrpc::METHOD_NOT_FOUND));
    }
    if version.is_some_and(|v| !SUPPORTED_VERSIONS.contains(&v)) {
        return Some(Stateless::Refused(modern::UNSUPPORTED_PROTOCOL_VERSION));
    }
    if !modern::missing_meta(params).is_empty() || bad_log_level(params) {
        return Some(Stateless::Refused(jsonrpc::INVALID_PARAMS));
    }
    None
}

/// The rule for a request before any `initialize`.
fn stateless(method: &str, params: Option<&Map<String, Value>>) -> Stateless {
    if let Some(refused) = meta_refusal(method, params) {
        return refused;
    }
    match modern::requested_version(params) {
        Some(STATELESS_VERSION) => Stateless::Modern,
        _ => Stateless::Legacy,
    }
}

/// The refusal of a request in a session `initialize` opened: only one whose `_meta` names
/// 2026-07-28 or a version not served is checked.
fn initialized_refusal(method: &str, params: Option<&Map<String, Value>>) -> Option<Stateless> {
    let checked = modern::requested_version(params)
        .is_some_and(|v| v == STATELESS_VERSION || !SUPPORTED_VERSIONS.contains(&v));
    checked.then(|| meta_refusal(method, params)).flatten()
}

/// Feeds the lines of `data` to a new session (which can watch the store's resources when the
/// first byte is odd).
pub fn check(data: &[u8]) {
    let watches = data.first().is_some_and(|b| b % 2 == 1);
    let mut session =
        LightSession::new(ServerIdentity::default(), tools_list()).with_resource_watch(watches);
    let mut model = Model::default();
    for line in lines(data) {
        let step = session.handle(line);
        if jsonrpc::is_blank(line) {
            assert_eq!(step, Step::Nothing, "a blank line is skipped");
            continue;
        }
        let (value, incoming) = match jsonrpc::parse_line(line) {
            Err(reply) => {
                assert_eq!(
                    step,
                    Step::Reply(reply.to_line()),
                    "a bad line gets its reply"
                );
                continue;
            }
            Ok(parsed) => parsed,
        };
        let (id, method, params) = match incoming {
            Incoming::Response => {
                assert_eq!(step, Step::Nothing, "a response is not answered");
                continue;
            }
            Incoming::Notification { .. } => {
                assert_eq!(step, Step::Nothing, "a notification is never answered");
                if model.initialized {
                    model.replay.extend_from_slice(line);
                    model.replay.push(b'\n');
                } else if let Some(cancelled) = modern::cancelled_request(&value) {
                    model.held.retain(|(id, _)| id != cancelled);
                    model.resources.retain(|id| id != cancelled);
                }
                assert_eq!(
                    session.replay(),
                    model.replay(),
                    "replay after a notification"
                );
                continue;
            }
            Incoming::Request { id, method, params } => (id, method, params),
        };
        let params = params.as_ref();
        let rule = if model.initialized && method != "ping" {
            initialized_refusal(&method, params)
        } else {
            (!model.initialized && method != "initialize" && method != "ping")
                .then(|| stateless(&method, params))
        };
        // A list's cursor is refused in either era, once the 2026 rules let the request by.
        let rule = match rule {
            Some(Stateless::Modern | Stateless::Legacy) | None if with_cursor(&method, params) => {
                Some(Stateless::Refused(jsonrpc::INVALID_PARAMS))
            }
            rule => rule,
        };
        // Whether this request chooses the stateless era (once answered here; a refused one
        // chooses nothing).
        let chooses = matches!(rule, Some(Stateless::Modern | Stateless::Legacy))
            && method != "server/discover"
            && !removed(&method);
        match step {
            Step::Reply(bytes) => {
                let value = reply_value(&bytes);
                assert_eq!(value["id"], id, "the reply carries the request's id");
                check_reply(&mut model, &value, &method, params, rule, line);
            }
            Step::ListTools(list_id) => {
                assert_eq!(list_id, id, "tools/list answers its own request");
                assert!(model.initialized && method == "tools/list");
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
            Step::ListModernTools(list_id) => {
                assert_eq!(list_id, id, "tools/list answers its own request");
                assert!(matches!(rule, Some(Stateless::Modern)) && method == "tools/list");
                let mut out = Vec::new();
                session
                    .write_modern_tools_list(&list_id, &mut out)
                    .expect("writing to memory");
                let value = reply_value(&out);
                assert_eq!(value["id"], id);
                let mut expected = serde_json::from_str::<Value>(&tools_list()).unwrap();
                expected["resultType"] = json!("complete");
                expected["_meta"] = json!({modern::SERVER_INFO_KEY: {
                    "name": protocol_lite::handshake::SERVER_NAME,
                    "version": protocol_lite::handshake::SERVER_VERSION,
                }});
                expected["ttlMs"] = json!(3_600_000);
                expected["cacheScope"] = json!("public");
                assert_eq!(value["result"], expected);
            }
            Step::ListResources(list_id) => {
                assert_eq!(list_id, id, "resources/list answers its own request");
                assert!(matches!(rule, Some(Stateless::Modern)) && method == "resources/list");
            }
            Step::Listen(listen) => {
                assert_eq!(listen.id, id, "a subscription is named by its request");
                assert!(matches!(rule, Some(Stateless::Modern)));
                assert_eq!(method, "subscriptions/listen");
                assert!(watches || !listen.resources_list_changed);
                assert!(model.held.iter().all(|(held, _)| *held != id));
                let resources = listen.resources_list_changed;
                let ack = reply_value(&session.hold(line, listen));
                assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
                assert_eq!(ack["params"]["_meta"][modern::SUBSCRIPTION_ID_KEY], id);
                assert!(ack.get("id").is_none(), "a held request gets no response");
                model.held.push((id.clone(), line.to_vec()));
                if resources {
                    model.resources.push(id.clone());
                }
            }
            Step::Handoff(reason) => {
                assert!(!reason.is_empty());
                check_handoff(&session, &model, &method, params, rule, line);
                // The full server takes the connection from here.
                return;
            }
            Step::Nothing => panic!("the request `{method}` (id {id}) got no reply"),
        }
        model.stateless |= chooses;
        assert_eq!(session.replay(), model.replay(), "replay after a request");
        let held: Vec<&Value> = model.held.iter().map(|(id, _)| id).collect();
        assert_eq!(session.held().collect::<Vec<_>>(), held);
        assert_eq!(
            session.resource_listeners().collect::<Vec<_>>(),
            model.resources.iter().collect::<Vec<_>>()
        );
    }
}

/// Checks a reply the light path wrote for a request, and updates the model.
fn check_reply(
    model: &mut Model,
    value: &Value,
    method: &str,
    params: Option<&Map<String, Value>>,
    rule: Option<Stateless>,
    line: &[u8],
) {
    if let Some(rule) = rule {
        match rule {
            Stateless::Refused(code) => assert_eq!(value["error"]["code"], code, "{value}"),
            Stateless::Modern if removed(method) => {
                assert_eq!(value["error"]["code"], jsonrpc::METHOD_NOT_FOUND, "{value}");
            }
            Stateless::Modern => {
                assert!(
                    matches!(
                        method,
                        "server/discover" | "resources/templates/list" | "prompts/list"
                    ),
                    "the light path answered `{method}` itself"
                );
                assert_eq!(value["result"]["resultType"], "complete");
                let info = &value["result"]["_meta"][modern::SERVER_INFO_KEY];
                assert_eq!(info["name"], protocol_lite::handshake::SERVER_NAME);
                assert!(value["result"]["ttlMs"].is_u64());
                assert!(value["result"]["cacheScope"].is_string());
            }
            Stateless::Legacy => panic!("a request for a legacy version is the full server's"),
        }
        return;
    }
    if method == "ping" {
        // The same rule before and after `initialize` (a ping's `_meta` decides).
        let expected = match modern::requested_version(params) {
            Some(v) if !SUPPORTED_VERSIONS.contains(&v) => {
                json!(modern::UNSUPPORTED_PROTOCOL_VERSION)
            }
            Some(STATELESS_VERSION) => json!(jsonrpc::METHOD_NOT_FOUND),
            _ => Value::Null,
        };
        if expected.is_null() {
            assert_eq!(value["result"], json!({}));
        } else {
            assert_eq!(value["error"]["code"], expected);
        }
        return;
    }
    if method == "initialize" && model.stateless {
        assert!(!model.initialized);
        assert_eq!(value["error"]["code"], jsonrpc::INVALID_REQUEST, "{value}");
        return;
    }
    if method == "initialize" && !model.initialized && !modern::initialize_is_complete(params) {
        assert_eq!(value["error"]["code"], jsonrpc::INVALID_PARAMS, "{value}");
        return;
    }
    assert!(
        value.get("result").is_some(),
        "an initialized session is answered with results"
    );
    match method {
        "initialize" => {
            assert!(!model.initialized, "a second initialize is handed off");
            assert!(
                model.held.is_empty(),
                "a held listen chose the stateless era"
            );
            assert!(modern::initialize_is_complete(params));
            assert!(value["result"]["protocolVersion"].is_string());
            model.initialized = true;
            model.replay.extend_from_slice(line);
            model.replay.push(b'\n');
        }
        "resources/templates/list" | "prompts/list" => {
            assert!(value["result"].get("resultType").is_none(), "legacy shape");
        }
        other => panic!("the light path answered `{other}` itself"),
    }
}

/// Checks that a handed-off request is not one the light path answers, and what the full
/// server is given.
fn check_handoff(
    session: &LightSession,
    model: &Model,
    method: &str,
    params: Option<&Map<String, Value>>,
    rule: Option<Stateless>,
    line: &[u8],
) {
    assert_ne!(method, "ping", "ping is always answered");
    let answerable = match rule {
        Some(Stateless::Refused(_)) => true,
        Some(Stateless::Legacy) => false,
        Some(Stateless::Modern) => {
            removed(method)
                || matches!(
                    method,
                    "server/discover"
                        | "tools/list"
                        | "resources/list"
                        | "resources/templates/list"
                        | "prompts/list"
                )
        }
        None if method == "initialize" => !model.initialized,
        // A request whose `_meta` names 2026-07-28, in an initialized session, is the full
        // server's (one naming an unserved version is refused here).
        None => {
            modern::requested_version(params) != Some(STATELESS_VERSION)
                && matches!(
                    method,
                    "tools/list" | "resources/templates/list" | "prompts/list"
                )
        }
    };
    assert!(
        !answerable,
        "`{method}` was handed off but the light path answers it"
    );
    assert_eq!(session.replay(), model.replay(), "replay at the handoff");
    let handoff = session.handoff(line, b"rest");
    let mut expected = model.replay();
    expected.extend_from_slice(line);
    expected.extend_from_slice(b"\nrest");
    assert_eq!(handoff.replay, expected, "replay, trigger, read-ahead");
    let names: Vec<&str> = handoff.env.iter().map(|(name, _)| *name).collect();
    match (model.initialized, model.held.is_empty()) {
        (true, _) => assert_eq!(names, [SUPPRESS_ID_ENV]),
        (false, true) => assert!(names.is_empty()),
        (false, false) => {
            assert_eq!(names, [SUPPRESS_ACKS_ENV]);
            let ids: Vec<Value> = serde_json::from_str(&handoff.env[0].1).unwrap();
            let held: Vec<Value> = model.held.iter().map(|(id, _)| id.clone()).collect();
            assert_eq!(ids, held);
        }
    }
}
