//! Tests of line checking and error replies.

use serde_json::{Value, json};

use super::*;

fn reply(line: &str) -> Value {
    let err = parse_line(line.as_bytes()).expect_err("line should be rejected");
    serde_json::from_slice(&err.to_line()).unwrap()
}

#[test]
fn parse_error_has_null_id() {
    let r = reply("{not json");
    assert_eq!(r["id"], Value::Null);
    assert_eq!(r["error"]["code"], PARSE_ERROR);
    assert!(
        r.as_object().unwrap().contains_key("id"),
        "id member must be present"
    );
}

#[test]
fn invalid_requests() {
    for (line, id) in [
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, Value::Null),
        (r#""text""#, Value::Null),
        (r#"{"id":1,"method":"ping"}"#, json!(1)),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":"x","method":"ping","params":5}"#,
            json!("x"),
        ),
        (r#"{"jsonrpc":"2.0","id":"x","method":7}"#, json!("x")),
        (r#"{"jsonrpc":"2.0","id":3}"#, json!(3)),
        // Past a 64-bit signed integer: the full server could not take it either.
        (
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"ping"}"#,
            Value::Null,
        ),
    ] {
        let r = reply(line);
        assert_eq!(r["error"]["code"], INVALID_REQUEST, "{line}");
        assert_eq!(r["id"], id, "{line}");
    }
}

#[test]
fn the_largest_and_smallest_integer_ids_are_taken() {
    for id in [i64::MAX, i64::MIN] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        assert!(parse_line(line.as_bytes()).is_ok(), "{line}");
    }
}

#[test]
fn malformed_tools_call_is_invalid_params() {
    for line in [
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
    ] {
        let r = reply(line);
        assert_eq!(r["error"]["code"], INVALID_PARAMS, "{line}");
        assert_eq!(r["id"], 4);
    }
}

#[test]
fn valid_messages_classify() {
    let (_, m) =
        parse_line(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#)
            .unwrap();
    assert!(matches!(m, Incoming::Request { ref method, .. } if method == "tools/call"));
    let (_, m) = parse_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    assert_eq!(
        m,
        Incoming::Notification {
            method: "notifications/initialized".into()
        }
    );
    let (_, m) = parse_line(br#"{"jsonrpc":"2.0","id":9,"result":{}}"#).unwrap();
    assert_eq!(m, Incoming::Response);
}

#[test]
fn internal_errors_answer_each_request_but_the_answered_one() {
    let lines = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n\n",
        r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t"}}"#,
        "\nnot json\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    );
    let out = internal_errors_for(lines.as_bytes(), Some(&json!(1)), "no store");
    let replies: Vec<Value> = out
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(
        replies,
        [
            json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32603, "message": "no store"}}),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "no store"}}),
        ]
    );
}
