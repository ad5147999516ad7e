//! The handoff to the full server: replay, one response per request, pipelining, EOF.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::support::*;

fn ids_of(lines: &[Value]) -> Vec<Value> {
    lines.iter().map(|l| l["id"].clone()).collect()
}

#[test]
fn a_read_only_call_returns_the_real_result_without_a_second_initialize_response() {
    let mut s = Server::start();
    s.handshake();
    s.ask(&request(2, "tools/list", json!({})));
    let r = s.ask(&call(3, "channel_list", json!({})));
    assert_eq!(r["result"]["isError"], false);
    assert_eq!(r["result"]["structuredContent"]["total_active"], 0);
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        r["result"]["structuredContent"]
    );
    let (status, rest) = s.finish();
    assert!(status.success());
    assert!(
        rest.is_empty(),
        "unexpected extra lines (a duplicate initialize reply?): {rest:?}"
    );
}

#[test]
fn requests_after_the_handoff_stay_on_the_full_server_and_state_persists() {
    let mut s = Server::start();
    s.handshake();
    let pid = s.pid();
    let r = s.ask(&call(
        "pub",
        "channel_publish",
        json!({"channel": "deploys", "message": "freeze at 5pm", "severity": "alert"}),
    ));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let id = r["result"]["structuredContent"]["id"].clone();
    assert!(id.is_i64());
    // After the handoff the light methods are the full server's: same answers.
    assert_eq!(s.ask(&request("p", "ping", json!({})))["result"], json!({}));
    let list = s.ask(&request("l", "tools/list", json!({})));
    assert!(tool_names(&list).contains(&"channel_publish".to_owned()));
    let read = s.ask(&call("r", "channel_read", json!({"channel": "deploys"})));
    let messages = &read["result"]["structuredContent"]["messages"];
    assert_eq!(messages[0]["id"], id);
    assert_eq!(messages[0]["message"], "freeze at 5pm");
    assert_eq!(s.pid(), pid, "the handoff must keep the process");
    let (status, rest) = s.finish();
    assert!(status.success() && rest.is_empty());
}

#[test]
fn a_fully_pipelined_session_in_one_write_is_answered_once_per_request() {
    for init_id in [json!(1), json!("init-α"), json!(0)] {
        let mut s = Server::start();
        let lines = [
            init_with_id(&init_id),
            INITIALIZED.to_owned(),
            request(2, "tools/list", json!({})),
            request(3, "ping", json!({})),
            call(4, "channel_list", json!({})),
            call(5, "enforcement_list", json!({})),
            request(6, "prompts/list", json!({})),
            "{broken".to_owned(),
            call(7, "schedule_list", json!({})),
        ];
        s.send_raw(format!("{}\n", lines.join("\n")).as_bytes());
        let (status, out) = s.finish();
        assert!(status.success());
        let mut counts: HashMap<String, usize> = HashMap::new();
        for id in ids_of(&out) {
            *counts.entry(id.to_string()).or_default() += 1;
        }
        let mut expected: Vec<String> = [
            init_id.clone(),
            json!(2),
            json!(3),
            json!(4),
            json!(5),
            json!(6),
            Value::Null,
            json!(7),
        ]
        .iter()
        .map(Value::to_string)
        .collect();
        expected.sort();
        let mut got: Vec<String> = counts.keys().cloned().collect();
        got.sort();
        assert_eq!(got, expected, "responses: {out:?}");
        assert!(
            counts.values().all(|&n| n == 1),
            "a request was answered twice: {out:?}"
        );
        for line in &out {
            if line["id"] == json!(4) || line["id"] == json!(5) || line["id"] == json!(7) {
                assert_eq!(line["result"]["isError"], false, "{line}");
            }
        }
    }
}

#[test]
fn stdin_eof_exits_zero_with_nothing_lost() {
    let input = [
        INIT.to_owned(),
        INITIALIZED.to_owned(),
        call(
            2,
            "channel_publish",
            json!({"channel": "a", "message": "one"}),
        ),
        call(
            3,
            "channel_publish",
            json!({"channel": "a", "message": "two"}),
        ),
        call(4, "channel_list", json!({})),
    ]
    .join("\n");
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_string_lossy().into_owned();
    let env = [("HOOKS_MCP_HOME", home_path.as_str())];
    let (status, stdout, _) = run_to_end(front_bin(), &env, input.as_bytes());
    assert!(status.success());
    let out: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        out.len(),
        4,
        "every request is answered before the exit: {stdout}"
    );
    for id in [2, 3, 4] {
        let r = out.iter().find(|l| l["id"] == id).unwrap();
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    // Pipelined requests run concurrently, so the listing in the same session may or may not
    // see the publishes; a new session must see both.
    let check = format!(
        "{INIT}\n{INITIALIZED}\n{}\n",
        call(2, "channel_list", json!({}))
    );
    let (status, stdout, _) = run_to_end(front_bin(), &env, check.as_bytes());
    assert!(status.success());
    let list: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        list["result"]["structuredContent"]["total_active"], 2,
        "{list}"
    );
}

#[test]
fn light_only_session_exits_zero_at_eof() {
    let input = format!(
        "{INIT}\n{INITIALIZED}\n{}\n",
        request(2, "tools/list", json!({}))
    );
    let (status, stdout, stderr) = run_to_end(front_bin(), &[], input.as_bytes());
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout.lines().count(), 2);
}

#[test]
fn a_request_reusing_the_initialize_id_after_handoff_is_answered() {
    let mut s = Server::start();
    s.handshake();
    let r = s.ask(&call(1, "channel_list", json!({})));
    assert_eq!(r["result"]["isError"], false, "{r}");
}

#[test]
fn clients_without_initialize_get_an_answer() {
    // 2026-07-28 clients probe with server/discover and send no initialize.
    let mut s = Server::start();
    let r = s.ask(&request(1, "server/discover", json!({})));
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
    // The session continues and can still initialize the classic way.
    let r = s.ask(&init_with_id(&json!(2)));
    assert!(r.get("result").is_some() || r.get("error").is_some(), "{r}");
}
