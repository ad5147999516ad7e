//! JSON-RPC errors as the specification words them, on both sides of the handoff.

use serde_json::{Value, json};

use crate::support::*;

fn assert_error(r: &Value, id: Value, code: i64) {
    assert_eq!(r["id"], id, "{r}");
    assert_eq!(r["error"]["code"], code, "{r}");
    assert!(
        r.as_object().unwrap().contains_key("id"),
        "the id member must be present: {r}"
    );
}

/// Checks each case on a server that is still light (`handoff = false`) or already full.
fn check_cases(handoff: bool) {
    let mut s = Server::start();
    s.handshake();
    if handoff {
        s.ask(&call(100, "channel_list", json!({})));
    }
    s.send("{not json");
    assert_error(&s.recv(), Value::Null, -32700);
    // The session continues.
    assert_eq!(s.ask(&request(1, "ping", json!({})))["result"], json!({}));

    s.send(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#);
    assert_error(&s.recv(), Value::Null, -32600);
    s.send(r#"{"id":3,"method":"ping"}"#);
    assert_error(&s.recv(), json!(3), -32600);
    s.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":5}"#);
    assert_error(&s.recv(), json!(4), -32600);

    assert_error(
        &s.ask(&request(5, "no/such/method", json!({}))),
        json!(5),
        -32601,
    );
    s.send(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}"#);
    assert_error(&s.recv(), json!(6), -32602);
    s.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"channel_list","arguments":[1]}}"#);
    assert_error(&s.recv(), json!(7), -32602);

    let r = s.ask(&call(8, "no_such_tool", json!({})));
    assert_error(&r, json!(8), -32602);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );

    // Argument problems are tool errors that name the field.
    let r = s.ask(&call(
        9,
        "channel_publish",
        json!({"channel": "ok", "message": ""}),
    ));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("message"),
        "{r}"
    );
    let r = s.ask(&call(10, "channel_publish", json!({"message": "x"})));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("channel"),
        "{r}"
    );

    let (status, rest) = s.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn errors_on_the_light_path_then_full() {
    check_cases(false);
}

#[test]
fn errors_after_the_handoff() {
    check_cases(true);
}

#[test]
fn a_failing_catalogue_child_stops_startup_before_initialization() {
    let dir = tempfile::tempdir().unwrap();
    let script = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::os::unix::fs::PermissionsExt::set_mode(
            &mut std::fs::metadata(&path).unwrap().permissions(),
            0o755,
        );
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path.to_string_lossy().into_owned()
    };
    let cases = [
        (script("fails", "echo boom >&2; exit 3"), "", "failed"),
        (script("garbage", "echo not-a-catalogue"), "", "unusable"),
        (script("slow", "exec sleep 30"), "300", "did not finish"),
        (
            dir.path().join("missing").to_string_lossy().into_owned(),
            "",
            "cannot run",
        ),
    ];
    for (bin, timeout, expect) in cases {
        let mut env = vec![("HOOKS_MCP_CATALOGUE_BIN", bin.as_str())];
        if !timeout.is_empty() {
            env.push(("HOOKS_MCP_CATALOGUE_TIMEOUT_MS", timeout));
        }
        let (status, stdout, stderr) =
            run_to_end(front_bin(), &env, format!("{INIT}\n").as_bytes());
        assert!(!status.success(), "{bin}: must exit non-zero");
        assert!(
            stdout.is_empty(),
            "{bin}: answered before the catalogue was ready: {stdout}"
        );
        assert!(
            stderr.contains(expect),
            "{bin}: stderr lacks {expect:?}: {stderr}"
        );
    }
}

#[test]
fn a_store_that_cannot_be_opened_answers_the_call_with_why() {
    // The light path never opens the store; the handoff does, and when it cannot, the call
    // that triggered it is answered with the reason rather than left unanswered.
    let mut s = Server::start();
    s.handshake();
    std::fs::write(s.home.path().join("state.db"), vec![0x5a; 8192]).unwrap();
    let r = s.ask(&request(
        7,
        "tools/call",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    assert_error(&r, json!(7), -32603);
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("cannot serve this session"), "{message}");
    assert!(
        message.contains("state.db"),
        "the store is named: {message}"
    );
    let (status, rest) = s.finish();
    assert!(!status.success(), "{rest:?}");
}
