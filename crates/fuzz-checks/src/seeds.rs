//! Starting corpora, generated from the repository's `examples/` and `tests/fixtures/` (and,
//! for the tool arguments, from each tool's input schema), so no corpus is committed.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// The repository root (the directory holding `examples/` and `tests/`).
pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example session's lines (`examples/session.jsonl`).
fn session_lines(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("examples/session.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// A 2026-07-28 session as Claude Code opens it: `server/discover`, `subscriptions/listen` for
/// both list changes, `tools/list`; then a request for an unsupported version, a cancelled
/// second subscription and a tool call.
fn stateless_lines() -> Vec<String> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    });
    let request = |id: Value, method: &str, mut params: Value| {
        params["_meta"] = meta.clone();
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    let both = json!({"notifications": {"toolsListChanged": true, "resourcesListChanged": true}});
    let mut old = request(json!(4), "tools/list", json!({}));
    old = old.replace("2026-07-28", "1900-01-01");
    vec![
        request(json!(0), "server/discover", json!({})),
        request(json!(1), "subscriptions/listen", both.clone()),
        request(json!(2), "tools/list", json!({})),
        request(json!(3), "resources/list", json!({})),
        old,
        request(json!("l"), "subscriptions/listen", both),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": "l"}})
        .to_string(),
        request(
            json!(5),
            "tools/call",
            json!({"name": "channel_list", "arguments": {}}),
        ),
    ]
}

/// The recorded hook payloads (`tests/fixtures/hooks/*.json`), parsed.
fn hook_payloads(root: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(root.join("tests/fixtures/hooks")) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect()
}

/// Lines made invalid in the ways the line checks distinguish, from a valid `line`.
fn broken_variants(line: &str) -> Vec<String> {
    let mut out = vec![
        line[..line.len() / 2].to_owned(),
        format!("[{line}]"),
        line.replace("\"2.0\"", "\"1.0\""),
        line.replace("\"params\":{", "\"params\":[{")
            .replace("}}", "}]}"),
    ];
    if let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(line) {
        obj.insert("id".into(), json!(1.5));
        out.push(Value::Object(obj.clone()).to_string());
        obj.remove("id");
        out.push(Value::Object(obj).to_string());
    }
    out
}

/// A value of the schema's type, for a seed.
fn example_of(schema: &Value) -> Value {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.first().cloned().unwrap_or(Value::Null);
    }
    if let Some(first) = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| schema.get(*k).and_then(Value::as_array)?.first())
    {
        return example_of(first);
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("null"),
        Some(Value::String(kind)) => kind.as_str(),
        _ => "null",
    };
    match kind {
        "string" => json!("deploys"),
        "integer" | "number" => json!(60),
        "boolean" => json!(true),
        "array" => json!([example_of(schema.get("items").unwrap_or(&Value::Null))]),
        "object" => {
            let mut obj = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    obj.insert(name.clone(), example_of(prop));
                }
            }
            Value::Object(obj)
        }
        _ => Value::Null,
    }
}

/// An HTTP request in the `http_sessions` input format.
fn http_call(method: &str, headers: &[&str], body: &str) -> String {
    let mut text = format!("{method} /mcp\nhost: 127.0.0.1:8080\n");
    for h in headers {
        text.push_str(h);
        text.push('\n');
    }
    text.push('\n');
    text.push_str(body);
    text
}

/// The seeds of the target named `target`, generated from the files under `root`.
pub fn seeds(target: &str, root: &Path) -> Vec<Vec<u8>> {
    let lines = session_lines(root);
    let payloads = hook_payloads(root);
    let whole = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let text: Vec<String> = match target {
        "jsonrpc_line" => lines
            .iter()
            .flat_map(|l| std::iter::once(l.clone()).chain(broken_variants(l)))
            .chain(payloads.iter().map(Value::to_string))
            .collect(),
        "light_session" | "stdio_transport" => {
            let mut out = vec![whole.clone()];
            if target == "light_session" {
                // A 2026-07-28 client's opening (with and without a watch on the store: the
                // first byte's parity), a cancelled subscription and a call that hands off.
                let modern = stateless_lines().join("\n");
                out.push(format!("{modern}\n"));
                out.push(format!(" {modern}\n"));
            }
            // The session with each line broken in turn, and with lines repeated.
            for (i, line) in lines.iter().enumerate() {
                for broken in broken_variants(line) {
                    let mut copy = lines.clone();
                    copy[i] = broken;
                    out.push(copy.iter().map(|l| format!("{l}\n")).collect());
                }
            }
            out.push(format!("{whole}{whole}"));
            out.push(lines.iter().rev().map(|l| format!("{l}\r\n")).collect());
            out
        }
        "tool_args" => {
            server_full::link_tools();
            let mut out: Vec<Vec<u8>> = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["method"] == "tools/call")
                .filter_map(|v| {
                    let name = v["params"]["name"].as_str()?.to_owned();
                    crate::tools::encode(&name, 0, &v["params"]["arguments"])
                })
                .collect();
            for r in catalogue::registrations() {
                let args = example_of(&(r.input_schema)());
                out.extend(crate::tools::encode(r.name, 0, &args));
                out.extend(crate::tools::encode(r.name, 1, &json!({})));
            }
            return out;
        }
        "matcher" => {
            let mut out = Vec::new();
            for p in &payloads {
                let Some(tool) = p["tool_name"].as_str() else {
                    continue;
                };
                let command = p["tool_input"]["command"].as_str().unwrap_or_default();
                let program = command.split_whitespace().next().unwrap_or("git");
                let lower = tool.to_ascii_lowercase();
                for matcher in [
                    lower.clone(),
                    format!("bash.{program}+edit+write"),
                    "any".to_owned(),
                    "mcp".to_owned(),
                    lower.split("__").take(2).collect::<Vec<_>>().join("__"),
                ] {
                    out.push(format!("{matcher}\n{tool}\n{command}"));
                }
            }
            out.push("bash.git\nBash\nFOO=1 sudo -u root env A=b nice -n 5 /usr/bin/git push && (echo 'x|y' | \"gh\" pr)".to_owned());
            out
        }
        "channel_rules" => {
            let mut out: Vec<String> = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|v| {
                    let args = &v["params"]["arguments"];
                    Some(format!("global,{}", args.get("channel")?.as_str()?))
                })
                .collect();
            out.push("2026-12-01T09:00:00Z".to_owned());
            out.push("2026-12-01T09:00:00.123+02:00".to_owned());
            out.push("all".to_owned());
            out.extend(
                payloads
                    .iter()
                    .filter_map(|p| p["prompt"].as_str().map(str::to_owned)),
            );
            out
        }
        "hook_payload" => {
            let mut out = Vec::new();
            for p in &payloads {
                let event = p["hook_event_name"].as_str().unwrap_or("PreToolUse");
                let body = p.to_string();
                out.push(crate::hook::encode(event, None, &body));
                out.push(crate::hook::encode(event, Some("ops,deploys"), &body));
                out.push(crate::hook::encode(event, None, &body[..body.len() / 2]));
            }
            return out;
        }
        "http_sessions" => {
            let accept = "accept: application/json, text/event-stream";
            let json_type = "content-type: application/json";
            let session = "mcp-session-id: {session}";
            let version = "mcp-protocol-version: 2025-11-25";
            let mut calls = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                if i == 0 {
                    calls.push(http_call("POST", &[accept, json_type], line));
                } else {
                    calls.push(http_call(
                        "POST",
                        &[accept, json_type, session, version],
                        line,
                    ));
                }
            }
            let mut out = vec![calls.join("\n~~~\n")];
            let mut with_get = calls.clone();
            with_get.insert(
                2,
                http_call("GET", &["accept: text/event-stream", session], ""),
            );
            with_get.push(http_call("DELETE", &[session], ""));
            with_get.push(calls.last().cloned().unwrap_or_default());
            out.push(with_get.join("\n~~~\n"));
            out.push(calls.first().cloned().unwrap_or_default());
            out
        }
        _ => Vec::new(),
    };
    text.into_iter().map(String::into_bytes).collect()
}
