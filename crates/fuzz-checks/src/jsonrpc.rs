//! Target `jsonrpc_line`: `protocol_lite::jsonrpc` against an independent reading of
//! JSON-RPC 2.0.
//!
//! Invariants: `parse_line` never panics; text that is not JSON gets `-32700` with id `null`;
//! an accepted message is exactly what the specification calls a request, a notification or
//! a response (checked field by field here); a rejected one gets one reply line that is valid
//! JSON-RPC, carries the request's id when it has a valid one and uses only the documented
//! codes; `-32602` only for `tools/call`.

use protocol_lite::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, Incoming, PARSE_ERROR};
use serde_json::{Value, json};

/// What an independent reading of the specification expects of one line.
#[derive(Debug, PartialEq)]
enum Expected {
    NotJson,
    Invalid,
    BadToolsCall,
    Request,
    Notification,
    Response,
}

fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    }
}

fn expected(parsed: Option<&Value>) -> Expected {
    let Some(value) = parsed else {
        return Expected::NotJson;
    };
    let Some(obj) = value.as_object() else {
        return Expected::Invalid;
    };
    if obj.get("id").is_some_and(|id| !valid_id(id)) || obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Expected::Invalid;
    }
    match obj.get("method") {
        None if obj.contains_key("id")
            && (obj.contains_key("result") || obj.contains_key("error")) =>
        {
            Expected::Response
        }
        Some(Value::String(method)) => {
            if obj.get("params").is_some_and(|p| !p.is_object()) {
                return Expected::Invalid;
            }
            if !obj.contains_key("id") {
                return Expected::Notification;
            }
            let params = obj.get("params");
            let good_call = params
                .and_then(|p| p.get("name"))
                .is_some_and(Value::is_string)
                && params
                    .and_then(|p| p.get("arguments"))
                    .is_none_or(|a| a.is_object() || a.is_null());
            if method == "tools/call" && !good_call {
                Expected::BadToolsCall
            } else {
                Expected::Request
            }
        }
        _ => Expected::Invalid,
    }
}

/// Checks one line.
pub fn check(data: &[u8]) {
    let blank = jsonrpc::is_blank(data);
    assert_eq!(
        blank,
        data.iter().all(|b| b" \t\n\r\x0c".contains(b)),
        "is_blank disagrees with ASCII white space"
    );
    let oracle: Option<Value> = serde_json::from_slice(data).ok();
    let expect = expected(oracle.as_ref());
    match jsonrpc::parse_line(data) {
        Ok((value, incoming)) => {
            assert_eq!(Some(&value), oracle.as_ref(), "the parsed value differs");
            let obj = value.as_object().expect("an accepted message is an object");
            match incoming {
                Incoming::Request { id, method, params } => {
                    assert_eq!(expect, Expected::Request, "accepted as a request");
                    assert_eq!(Some(&id), obj.get("id"));
                    assert_eq!(Some(&json!(method)), obj.get("method"));
                    assert_eq!(params.map(Value::Object).as_ref(), obj.get("params"));
                }
                Incoming::Notification { method } => {
                    assert_eq!(expect, Expected::Notification, "accepted as a notification");
                    assert_eq!(Some(&json!(method)), obj.get("method"));
                }
                Incoming::Response => assert_eq!(expect, Expected::Response),
            }
        }
        Err(reply) => {
            let want = match expect {
                Expected::NotJson => PARSE_ERROR,
                Expected::Invalid => INVALID_REQUEST,
                Expected::BadToolsCall => INVALID_PARAMS,
                other => panic!("a valid message ({other:?}) was refused: {}", reply.message),
            };
            assert_eq!(reply.code, want, "wrong code: {}", reply.message);
            assert!(!reply.message.is_empty());
            // The request's id when the message is an object with a valid one, else null.
            let want_id = oracle
                .as_ref()
                .and_then(Value::as_object)
                .and_then(|o| o.get("id"))
                .filter(|id| valid_id(id))
                .cloned()
                .unwrap_or(Value::Null);
            assert_eq!(reply.id, want_id, "the reply must carry the request's id");
            check_reply_line(&reply.to_line(), &reply.id, reply.code);
        }
    }
    // A result line for any id the line carries is one valid JSON line too.
    if let Some(id) = oracle
        .as_ref()
        .and_then(|v| v.get("id"))
        .filter(|id| valid_id(id))
    {
        let line = jsonrpc::result_line(id, &oracle);
        let back: Value = serde_json::from_slice(&line).expect("result_line writes JSON");
        assert_eq!(back["id"], *id);
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
    }
}

/// Checks an error reply line: one line, JSON-RPC 2.0, the id and code given.
pub fn check_reply_line(line: &[u8], id: &Value, code: i64) {
    assert_eq!(line.last(), Some(&b'\n'), "a reply ends with a newline");
    assert_eq!(
        line.iter().filter(|b| **b == b'\n').count(),
        1,
        "a reply is one line"
    );
    let value: Value = serde_json::from_slice(line).expect("a reply is JSON");
    assert_eq!(value["jsonrpc"], "2.0");
    assert_eq!(value["id"], *id);
    assert_eq!(value["error"]["code"], code);
    assert!(value["error"]["message"].is_string());
}
