//! Start modes, discovery tools and `tools/list_changed` over stdio.

use serde_json::{Value, json};

use crate::support::*;

fn initial_list(env: &[(&str, &str)], args: &'static [&'static str]) -> (Value, Vec<String>) {
    let mut s = Server::with(Options {
        args,
        env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        ..Options::default()
    });
    let init = s.handshake();
    let names = tool_names(&s.ask(&request(2, "tools/list", json!({}))));
    (init, names)
}

#[test]
fn each_mode_advertises_its_initial_list() {
    let (init, eager) = initial_list(&[], &[]);
    assert!(
        eager.len() >= 15 && !eager.contains(&"load_modules".to_owned()),
        "{eager:?}"
    );
    assert!(
        init["result"].get("instructions").is_none(),
        "eager needs no instructions"
    );

    for (env, args) in [
        (vec![("HOOKS_MCP_MODE", "lazy")], &[][..]),
        (vec![], &["--lazy"][..]),
    ] {
        let (init, lazy) = initial_list(&env, args);
        assert_eq!(lazy, ["find_tools", "load_modules"]);
        let text = init["result"]["instructions"]
            .as_str()
            .expect("lazy mode explains itself");
        for category in ["channels", "conditions", "enforcement", "scheduler"] {
            assert!(text.contains(&format!("- {category}: ")), "{text}");
        }
        // A few hundred tokens at most (o200k averages about four bytes per token here).
        assert!(
            text.len() < 1600,
            "instructions too long: {} bytes",
            text.len()
        );
    }

    for (env, args) in [
        (vec![("HOOKS_MCP_MODULES", "channels")], &[][..]),
        (vec![], &["--modules", "channels"][..]),
        (
            vec![("HOOKS_MCP_MODE", "lazy")],
            &["--modules=channels"][..],
        ),
    ] {
        let (init, list) = initial_list(&env, args);
        assert_eq!(&list[..2], ["find_tools", "load_modules"]);
        assert!(
            list[2..].iter().all(|n| n.starts_with("channel_")) && list.len() > 2,
            "{list:?}"
        );
        let text = init["result"]["instructions"].as_str().unwrap();
        assert!(
            !text.contains("- channels:") && text.contains("- scheduler:"),
            "{text}"
        );
    }
}

#[test]
fn a_bad_mode_stops_startup_with_a_clear_message() {
    let (status, stdout, stderr) = run_to_end(
        front_bin(),
        &[("HOOKS_MCP_MODE", "sleepy")],
        INIT.as_bytes(),
    );
    assert!(!status.success());
    assert!(stdout.is_empty());
    assert!(stderr.contains("unknown mode `sleepy`"), "{stderr}");
    // The full stdio server run by itself says the same, and does not call it a store's fault.
    let stdio = env!("CARGO_BIN_EXE_hooks-mcp-stdio");
    let (status, _, stderr) = run_to_end(stdio, &[("HOOKS_MCP_MODE", "sleepy")], INIT.as_bytes());
    assert!(!status.success());
    assert!(
        stderr.contains("HOOKS_MCP_MODE: unknown mode `sleepy`"),
        "{stderr}"
    );
    assert!(!stderr.contains("opening the store"), "{stderr}");
}

/// Reads lines until the response to `id`; returns (notifications seen before it, response).
fn until_response(s: &mut Server, id: &Value) -> (Vec<String>, Value) {
    let mut notes = Vec::new();
    loop {
        let line = s.recv();
        if line.get("id") == Some(id) && line.get("method").is_none() {
            return (notes, line);
        }
        if let Some(m) = line["method"].as_str() {
            notes.push(m.to_owned());
        }
    }
}

/// A client that sends `load_modules` and closes its input at once still gets the answer
/// (and the session ends): the notification before it is not waited for past the input's end.
#[test]
fn load_modules_is_answered_when_the_input_ends_after_it() {
    let load = call(6, "load_modules", json!({"modules": ["channels"]}));
    let list = call(7, "channel_list", json!({}));
    for input in [
        format!("{INIT}\n{INITIALIZED}\n{load}\n"),
        format!("{INIT}\n{INITIALIZED}\n{load}\n{list}\n"),
    ] {
        let (status, stdout, stderr) =
            run_to_end(front_bin(), &[("HOOKS_MCP_MODE", "lazy")], input.as_bytes());
        assert!(status.success(), "{status:?}: {stderr}");
        let answered = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["id"] == 6)
            .unwrap_or_else(|| panic!("no answer to load_modules: {stdout}\n{stderr}"));
        assert_eq!(answered["result"]["isError"], false, "{answered}");
    }
}

#[test]
fn load_modules_as_the_very_first_call_always_notifies() {
    for run in 0..100 {
        let mut s = Server::with_env(&[("HOOKS_MCP_MODE", "lazy")]);
        let load = call(2, "load_modules", json!({"modules": ["channels"]}));
        // Initialize, initialized and the call in one write: zero delay.
        s.send_raw(format!("{INIT}\n{INITIALIZED}\n{load}\n").as_bytes());
        let init = s.recv();
        assert_eq!(init["id"], 1);
        let (notes, response) = until_response(&mut s, &json!(2));
        assert_eq!(
            response["result"]["isError"], false,
            "run {run}: {response}"
        );
        assert!(
            notes
                .iter()
                .any(|m| m == "notifications/tools/list_changed"),
            "run {run}: no list_changed before the response ({notes:?})"
        );
        let added = &response["result"]["structuredContent"]["added"];
        assert!(
            added
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n == "channel_publish"),
            "{response}"
        );
        let list = tool_names(&s.ask(&request(3, "tools/list", json!({}))));
        assert!(
            list.contains(&"channel_list".to_owned()),
            "run {run}: {list:?}"
        );
        let r = s.ask(&call(4, "channel_list", json!({})));
        assert_eq!(r["result"]["isError"], false, "run {run}: {r}");
    }
}

#[test]
fn loading_drops_duplicates_and_reports_only_what_was_added() {
    let mut s = Server::with_env(&[("HOOKS_MCP_MODE", "lazy")]);
    s.handshake();
    let r = s.ask(&call(
        2,
        "load_modules",
        json!({"modules": ["channel_list", "channels", "CHANNELS"]}),
    ));
    let added = r["result"]["structuredContent"]["added"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        added.len() >= 5
            && added
                .iter()
                .all(|n| n.as_str().unwrap().starts_with("channel_"))
    );
    // A second load of the same names adds nothing and sends no notification.
    let (notes, r) = {
        s.send(&call(3, "load_modules", json!({"modules": ["channels"]})));
        until_response(&mut s, &json!(3))
    };
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(r["result"]["structuredContent"]["added"], json!([]));
    let r = s.ask(&call(4, "load_modules", json!({"modules": ["all"]})));
    let added = r["result"]["structuredContent"]["added"]
        .as_array()
        .unwrap();
    assert!(added.iter().any(|n| n == "schedule_create"));
    assert!(
        !added.iter().any(|n| n == "channel_list"),
        "already loaded: {added:?}"
    );
}

#[test]
fn unknown_names_get_suggestions_or_the_valid_list() {
    let mut s = Server::with_env(&[("HOOKS_MCP_MODE", "lazy")]);
    s.handshake();
    for (typo, suggestion) in [
        ("chanels", "channels"),
        ("shceduler", "scheduler"),
        ("enforcment", "enforcement"),
        ("condtions", "conditions"),
        ("channel_lst", "channel_list"),
    ] {
        let r = s.ask(&call(typo, "load_modules", json!({"modules": [typo]})));
        assert_eq!(r["result"]["isError"], true, "{r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("did you mean `{suggestion}`")),
            "{typo}: {text}"
        );
    }
    let r = s.ask(&call(
        9,
        "load_modules",
        json!({"modules": ["weather_forecast"]}),
    ));
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("channels, conditions, enforcement, scheduler"),
        "{text}"
    );
    // Nothing was loaded by the failed calls.
    assert_eq!(
        tool_names(&s.ask(&request(10, "tools/list", json!({})))),
        ["find_tools", "load_modules"]
    );
}

#[test]
fn nothing_loads_outside_the_filters() {
    let mut s = Server::with_env(&[
        ("HOOKS_MCP_MODE", "lazy"),
        ("MCP_CATEGORIES", "channels,scheduler"),
        ("ALLOWED_TOOLS", "channel_list,channel_read,schedule_list"),
    ]);
    s.handshake();
    for name in ["enforcement", "channel_publish", "enforcement_set"] {
        let r = s.ask(&call(name, "load_modules", json!({"modules": [name]})));
        assert_eq!(r["result"]["isError"], true, "{name}: {r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("exclude"), "{name}: {text}");
    }
    let r = s.ask(&call(2, "load_modules", json!({"modules": ["all"]})));
    let mut added: Vec<String> = r["result"]["structuredContent"]["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    added.sort();
    assert_eq!(added, ["channel_list", "channel_read", "schedule_list"]);
}

#[test]
fn unloaded_tools_are_not_callable_and_find_tools_flags_them() {
    let mut s = Server::with_env(&[("HOOKS_MCP_MODULES", "enforcement")]);
    s.handshake();
    let r = s.ask(&call(2, "channel_list", json!({})));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("load_modules"),
        "{r}"
    );

    let r = s.ask(&call(
        3,
        "find_tools",
        json!({"query": "broadcast channel"}),
    ));
    let found = r["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!found.is_empty() && found.len() <= 10);
    assert!(
        found[0]["name"].as_str().unwrap().starts_with("channel_"),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .all(|t| t["loaded"] == false || t["category"] == "enforcement")
    );
    assert!(
        r["result"]["structuredContent"]["hint"]
            .as_str()
            .unwrap()
            .contains("load_modules")
    );
    let r = s.ask(&call(4, "find_tools", json!({"query": "reminder"})));
    let found = r["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        found
            .iter()
            .any(|t| t["name"] == "enforcement_set" && t["loaded"] == true),
        "{found:?}"
    );
    let r = s.ask(&call(5, "find_tools", json!({"query": "  "})));
    assert_eq!(r["result"]["isError"], true);
    // Plurals, titles and words that are not ASCII: "schedules" finds the scheduler's tools,
    // "broadcasts" the tools titled so, and a word no tool has is answered with advice.
    let names = |r: &Value| -> Vec<String> {
        r["result"]["structuredContent"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = s.ask(&call(6, "find_tools", json!({"query": "schedules"})));
    assert!(names(&r).iter().any(|n| n == "schedule_create"), "{r}");
    let r = s.ask(&call(7, "find_tools", json!({"query": "broadcasts"})));
    assert!(names(&r).iter().any(|n| n == "channel_read"), "{r}");
    let r = s.ask(&call(8, "find_tools", json!({"query": "通知"})));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(names(&r).is_empty(), "{r}");
    let hint = r["result"]["structuredContent"]["hint"].as_str().unwrap();
    assert!(hint.contains("No tool matches"), "{r}");
    // More matches than one answer shows: the answer says how many it left out.
    let r = s.ask(&call(
        9,
        "find_tools",
        json!({"query": "channels conditions enforcement scheduler"}),
    ));
    assert_eq!(names(&r).len(), 10, "{r}");
    let more = r["result"]["structuredContent"]["more"].as_u64().unwrap();
    assert!(more >= 3, "{r}");
    assert!(
        r["result"]["structuredContent"]["hint"]
            .as_str()
            .unwrap()
            .contains(&format!("{more} more match")),
        "{r}"
    );
    // call_tool is listed only where there is no session: here it is no tool at all, and
    // cannot run a tool this session has not loaded.
    let r = s.ask(&call(
        10,
        "call_tool",
        json!({"name": "channel_list", "arguments": {}}),
    ));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool `call_tool`; call find_tools"),
        "{r}"
    );
}
