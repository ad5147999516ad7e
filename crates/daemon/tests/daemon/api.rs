//! The read API over real HTTP: every route the OpenAPI document lists answers, and its body
//! validates against the document's schema for it; the routes are behind the token and the
//! `Host` check; paging, filters and errors behave as documented.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::support::{Daemon, SseSession, TOKEN, call, http, mcp_request, mcp_session};

const BEARER: &str = "Bearer test-token-0123456789abcdef";

/// `GET path` with the token; the status and the JSON body.
fn get(daemon: &Daemon, path: &str) -> (u16, Value) {
    let reply = http(daemon.addr, "GET", path, &[("Authorization", BEARER)], "");
    let body = serde_json::from_str(&reply.body)
        .unwrap_or_else(|e| panic!("GET {path}: not JSON ({e}): {}", reply.body));
    (reply.status, body)
}

/// Validates `value` against the document's schema for `path`'s 200 answer.
fn check_against_document(doc: &Value, path: &str, value: &Value) {
    let schema =
        &doc["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "no 200 schema for {path}");
    // The schema's references point into the document's components.
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": doc["components"],
    });
    let validator = jsonschema::validator_for(&root)
        .unwrap_or_else(|e| panic!("the schema of {path} does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{path}: {errors:?}\n{value:#}");
}

#[test]
fn every_documented_route_answers_with_its_documented_shape() {
    let home = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(
        "api::every_documented_route_answers_with_its_documented_shape",
        home.path(),
        &[("HOOKS_MCP_TOKEN", TOKEN)],
    );
    daemon.wait_ready();
    let addr = daemon.addr;
    let auth = [("Authorization", BEARER)];

    // Something of every kind, made through the tools.
    let session = mcp_session(addr, &auth);
    let tool = |id: u64, name: &str, args: Value| -> Value {
        let reply = mcp_request(addr, &session, &auth, &call(id, name, args));
        let result = reply["result"].clone();
        assert_eq!(result["isError"], false, "{name}: {reply}");
        result["structuredContent"].clone()
    };
    let mut ids = Vec::new();
    for i in 0..5 {
        let published = tool(
            10 + i,
            "channel_publish",
            json!({ "channel": "deploys", "message": format!("deploy {i}"), "severity": "alert" }),
        );
        ids.push(published["id"].as_i64().unwrap());
    }
    tool(
        20,
        "channel_acknowledge",
        json!({ "message_id": ids[4], "session_id": "api-session" }),
    );
    tool(
        21,
        "enforcement_set",
        json!({ "message": "run the tests", "cadence": 5 }),
    );
    tool(
        22,
        "schedule_create",
        json!({ "channel": "ops", "message": "tick", "every_seconds": 3600 }),
    );

    // A session acting over the legacy SSE transport of the same daemon.
    let mut sse = SseSession::connect(addr, &auth);
    sse.handshake(addr, &auth);
    let ack = call(
        30,
        "channel_acknowledge",
        json!({ "message_id": ids[3], "session_id": "sse-session" }),
    );
    assert_eq!(sse.post(addr, &auth, &ack), 202);
    let reply = sse.next_message();
    assert_eq!(reply["result"]["isError"], false, "{reply}");

    // The document is behind the token too.
    let bare = http(addr, "GET", "/api/v1/openapi.json", &[], "");
    assert_eq!(bare.status, 401, "{}", bare.body);
    let (status, doc) = get(&daemon, "/api/v1/openapi.json");
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."), "{doc}");

    // Every documented path answers 200 with a body of its documented shape.
    let paths: BTreeSet<String> = doc["paths"].as_object().unwrap().keys().cloned().collect();
    let expected: BTreeSet<String> = [
        "/api/v1/overview",
        "/api/v1/sessions",
        "/api/v1/channels",
        "/api/v1/channels/{channel}/messages",
        "/api/v1/messages/{id}",
        "/api/v1/messages/{id}/delivery",
        "/api/v1/schedules",
        "/api/v1/reminders",
        "/api/v1/conditions",
        "/api/v1/audit",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(paths, expected);
    let mut bodies = std::collections::BTreeMap::new();
    for path in &paths {
        let concrete = path
            .replace("{channel}", "deploys")
            .replace("{id}", &ids[4].to_string());
        let (status, body) = get(&daemon, &concrete);
        assert_eq!(status, 200, "GET {concrete}: {body}");
        check_against_document(&doc, path, &body);
        // Nothing else than GET is served.
        let post = http(addr, "POST", &concrete, &auth, "{}");
        assert_eq!(post.status, 405, "POST {concrete}: {}", post.body);
        let refused: Value = serde_json::from_str(&post.body).unwrap();
        assert!(
            refused["error"].as_str().unwrap().contains("GET only"),
            "POST {concrete}: {refused}"
        );
        assert_eq!(post.header("allow"), Some("GET, HEAD"), "{}", post.head);
        bodies.insert(path.clone(), body);
    }

    // What they say.
    let overview = &bodies["/api/v1/overview"];
    assert_eq!(overview["status"], "ok");
    assert_eq!(overview["counts"]["active_messages"], 5);
    assert_eq!(overview["counts"]["channels"], 1);
    assert_eq!(overview["counts"]["reminders"], 1);
    assert_eq!(overview["counts"]["active_schedules"], 1);
    assert!(overview["scheduler"]["next_due"].is_string(), "{overview}");
    assert_eq!(overview["sessions"]["streamable_http"], 1);
    assert_eq!(bodies["/api/v1/channels"][0]["name"], "deploys");
    assert_eq!(bodies["/api/v1/channels"][0]["active"], 5);
    let page = &bodies["/api/v1/channels/{channel}/messages"];
    assert_eq!(page["items"][0]["body"], "deploy 4", "newest first");
    assert_eq!(page["next"], Value::Null);
    assert_eq!(bodies["/api/v1/messages/{id}"]["id"], ids[4]);
    let delivery = &bodies["/api/v1/messages/{id}/delivery"];
    assert_eq!(delivery["acknowledged"], 1, "{delivery}");
    assert!(
        delivery["summary"]
            .as_str()
            .unwrap()
            .starts_with(&format!("alert #{} deploys: delivered ", ids[4])),
        "{delivery}"
    );
    assert_eq!(bodies["/api/v1/reminders"][0]["message"], "run the tests");
    assert_eq!(
        bodies["/api/v1/schedules"][0]["trigger"],
        "every 3600 seconds"
    );
    let audit = &bodies["/api/v1/audit"]["items"];
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "publish",
            "publish",
            "publish",
            "publish",
            "publish",
            "acknowledge",
            "reminder_set",
            "schedule_create",
            "acknowledge"
        ]
    );
    // Each session as it was last reached.
    let sessions = bodies["/api/v1/sessions"]["items"].as_array().unwrap();
    let transport_of = |id: &str| {
        sessions
            .iter()
            .find(|s| s["session_id"] == id)
            .map(|s| (s["transport"].clone(), s["live"].clone()))
    };
    assert_eq!(
        transport_of("api-session"),
        Some((json!("streamable-http"), json!(true))),
        "{sessions:?}"
    );
    assert_eq!(
        transport_of("sse-session"),
        Some((json!("sse"), json!(true))),
        "{sessions:?}"
    );
    assert_eq!(audit[5]["actor_kind"], "session");
    assert_eq!(audit[5]["actor"], "api-session");

    // Paging: two at a time, newest first, without gaps or repeats.
    let mut seen = Vec::new();
    let mut next = String::new();
    for _ in 0..5 {
        let query = if next.is_empty() {
            "limit=2".to_owned()
        } else {
            format!("limit=2&before={next}")
        };
        let (status, page) = get(
            &daemon,
            &format!("/api/v1/channels/deploys/messages?{query}"),
        );
        assert_eq!(status, 200, "{page}");
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["id"].as_i64().unwrap()),
        );
        match page["next"].as_str() {
            Some(cursor) => next = cursor.to_owned(),
            None => break,
        }
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    let (_, publishes) = get(&daemon, "/api/v1/audit?action=publish&limit=3");
    assert_eq!(publishes["items"].as_array().unwrap().len(), 3);
    let after = publishes["next"].as_i64().unwrap();
    let (_, rest) = get(
        &daemon,
        &format!("/api/v1/audit?action=publish&after={after}"),
    );
    assert_eq!(rest["items"].as_array().unwrap().len(), 2, "{rest}");
    assert_eq!(rest["next"], Value::Null);

    // Bad input is a 400 that says what was wrong.
    for (query, needle) in [
        ("/api/v1/channels/deploys/messages?limit=0", "limit"),
        (
            "/api/v1/channels/deploys/messages?before=yesterday",
            "before",
        ),
        ("/api/v1/audit?since=noon", "RFC 3339"),
        ("/api/v1/audit?action=explode", "action"),
        ("/api/v1/sessions?limit=501", "limit"),
        // Values that do not parse are answered in the same shape (not axum's plain text).
        ("/api/v1/sessions?limit=-1", "out of range"),
        ("/api/v1/sessions?limit=99999999999", "out of range"),
        ("/api/v1/sessions?limit=abc", "limit"),
        ("/api/v1/sessions?live=yes", "live"),
        ("/api/v1/messages/abc", "abc"),
    ] {
        let (status, body) = get(&daemon, query);
        assert_eq!(status, 400, "{query}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(needle),
            "{query}: {body}"
        );
    }
    let (status, body) = get(&daemon, "/api/v1/messages/999999");
    assert_eq!(status, 404, "{body}");
    for path in ["/api/v1/nothing-here", "/api/v1", "/api/v1/"] {
        let unknown = http(addr, "GET", path, &auth, "");
        assert_eq!(unknown.status, 404, "{path}");
        let error: Value = serde_json::from_str(&unknown.body).unwrap();
        assert!(
            error["error"]
                .as_str()
                .unwrap()
                .contains("/api/v1/openapi.json"),
            "{path}: {error}"
        );
    }
    // The document names the token as every route's security.
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer",
        "{doc}"
    );
    assert_eq!(
        doc["security"],
        serde_json::json!([{"bearer": []}]),
        "{doc}"
    );

    // The same checks as /mcp: no token, 401; a foreign Host, 403.
    let bare = http(addr, "GET", "/api/v1/overview", &[], "");
    assert_eq!(bare.status, 401);
    let evil = http(
        addr,
        "GET",
        "/api/v1/overview",
        &[auth[0], ("Host", "evil.example.com")],
        "",
    );
    assert_eq!(evil.status, 403, "{}", evil.body);
    let cross_site = http(
        addr,
        "GET",
        "/api/v1/overview",
        &[auth[0], ("Origin", "https://evil.example.com")],
        "",
    );
    assert_eq!(cross_site.status, 403, "{}", cross_site.body);
}
