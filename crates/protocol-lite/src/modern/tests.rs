//! Tests of the 2026-07-28 framing helpers and the `server/discover` result.

use serde_json::{Value, json};

use super::*;
use crate::handshake::{Features, ServerIdentity};

fn params(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

const PV: &str = PROTOCOL_VERSION_KEY;
const CC: &str = CLIENT_CAPABILITIES_KEY;

#[test]
fn required_meta_keys_are_checked_for_presence_and_type() {
    let cases = [
        (json!({}), vec![PV, CC]),
        (json!({"_meta": 5}), vec![PV, CC]),
        (json!({"_meta": {}}), vec![PV, CC]),
        (json!({"_meta": {PV: "2026-07-28"}}), vec![CC]),
        (json!({"_meta": {CC: {}}}), vec![PV]),
        (json!({"_meta": {PV: 20260728, CC: {}}}), vec![PV]),
        (json!({"_meta": {PV: "2026-07-28", CC: []}}), vec![CC]),
        (json!({"_meta": {PV: "2026-07-28", CC: null}}), vec![CC]),
        (json!({"_meta": {PV: "2026-07-28", CC: {}}}), vec![]),
    ];
    for (value, expected) in cases {
        let p = params(value.clone());
        assert_eq!(missing_meta(Some(&p)), expected, "{value}");
    }
    assert_eq!(missing_meta(None), [PV, CC]);
    assert!(is_modern(Some(&params(json!({"_meta": {PV: 5}})))));
    assert!(!is_modern(Some(&params(json!({"_meta": {CC: {}}})))));
    assert_eq!(
        requested_version(Some(&params(json!({"_meta": {PV: 5}})))),
        None
    );
}

#[test]
fn the_missing_meta_reply_names_the_keys_and_the_fix() {
    let reply = missing_meta_reply(&json!(3), &[PV]);
    assert_eq!(reply.code, -32602);
    assert_eq!(reply.id, json!(3));
    assert!(reply.message.starts_with(
        "request _meta is missing or has malformed required fields: \
         io.modelcontextprotocol/protocolVersion;"
    ));
    assert!(reply.message.contains("initialize"), "{}", reply.message);
    assert!(reply.message.contains(CC), "{}", reply.message);
}

#[test]
fn an_unsupported_version_gets_rmcps_error_shape() {
    let line = unsupported_version_line(&json!("a"), "1900-01-01");
    assert_eq!(line.last(), Some(&b'\n'));
    let value: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(
        value,
        json!({"jsonrpc": "2.0", "id": "a", "error": {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {
                "requested": "1900-01-01",
                "supported": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
            },
        }})
    );
    // `requested` first, as rmcp writes it.
    let text = String::from_utf8(line).unwrap();
    assert!(
        text.find("\"requested\"") < text.find("\"supported\""),
        "{text}"
    );
}

#[test]
fn complete_results_lead_with_the_result_type_the_server_and_hints() {
    let info = format!(
        r#""_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"hooks-mcp","version":"{}"}}}}"#,
        crate::handshake::SERVER_VERSION
    );
    let mut out = Vec::new();
    write_complete(&mut out, CacheHints::STABLE, br#"{"tools":[{"name":"t"}]}"#).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            r#"{{"resultType":"complete",{info},"ttlMs":3600000,"cacheScope":"public","tools":[{{"name":"t"}}]}}"#
        )
    );
    let mut out = Vec::new();
    write_complete(&mut out, CacheHints::VOLATILE, b" { } ").unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(r#"{{"resultType":"complete",{info},"ttlMs":0,"cacheScope":"private"}}"#)
    );
    let err = write_complete(&mut Vec::new(), CacheHints::STABLE, b"[1]").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);

    let line = complete_result_line(&json!(7), CacheHints::STABLE, &json!({"prompts": []}));
    assert_eq!(
        String::from_utf8(line).unwrap(),
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"resultType\":\"complete\",{info},\
             \"ttlMs\":3600000,\"cacheScope\":\"public\",\"prompts\":[]}}}}\n"
        )
    );
    let line = raw_result_line(&json!("r"), b"{\"resources\":[]}\n");
    assert_eq!(
        line,
        b"{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"result\":{\"resources\":[]}}\n"
    );
    assert_eq!(CacheHints::tools_list(false), CacheHints::STABLE);
    assert_eq!(
        CacheHints::tools_list(true),
        CacheHints {
            ttl_ms: 0,
            scope: CacheScope::Private
        }
    );
}

#[test]
fn discover_lists_every_version_the_initialize_capabilities_and_the_identity() {
    let identity = ServerIdentity {
        instructions: Some("use find_tools".into()),
        channel: false,
    };
    let discover = identity.discover_result();
    let initialize = identity.initialize_result("2025-11-25");
    assert_eq!(discover["capabilities"], initialize["capabilities"]);
    assert_eq!(
        discover,
        json!({
            "resultType": "complete",
            "supportedVersions": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
            "capabilities": initialize["capabilities"],
            "instructions": "use find_tools",
            "ttlMs": 3600000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {
                "name": "hooks-mcp",
                "version": crate::handshake::SERVER_VERSION,
            }},
        })
    );
    // rmcp's field order, so both paths write the same bytes.
    let keys: Vec<&String> = discover.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "resultType",
            "supportedVersions",
            "capabilities",
            "instructions",
            "ttlMs",
            "cacheScope",
            "_meta"
        ]
    );
    let bare = ServerIdentity::default().discover_result_with(Features {
        resources: false,
        prompts: true,
        completions: false,
    });
    assert!(bare.get("instructions").is_none());
    assert_eq!(
        bare["capabilities"],
        json!({"logging": {}, "prompts": {"listChanged": false}, "tools": {"listChanged": true}})
    );
}

fn filter(notifications: Value) -> Result<Listen, String> {
    listen_filter(
        &json!(9),
        Some(&params(
            json!({"_meta": {}, "notifications": notifications}),
        )),
    )
}

#[test]
fn listen_filters_keep_the_list_changes_and_refuse_the_rest() {
    let both = filter(json!({"toolsListChanged": true, "resourcesListChanged": true})).unwrap();
    assert_eq!(
        both,
        Listen {
            id: json!(9),
            tools_list_changed: true,
            resources_list_changed: true
        }
    );
    let some = filter(
        json!({"toolsListChanged": false, "promptsListChanged": true,
        "resourcesListChanged": null, "resourceSubscriptions": []}),
    )
    .unwrap();
    assert!(!some.tools_list_changed && !some.resources_list_changed);
    assert!(filter(json!({})).is_ok());
    for refused in [
        json!({"resourceSubscriptions": ["hooks://channels/a"]}),
        json!({"resourceSubscriptions": "hooks://channels/a"}),
        json!({"toolsListChanged": "yes"}),
        json!({"taskIds": ["t"]}),
    ] {
        assert!(filter(refused.clone()).is_err(), "{refused}");
    }
    assert!(listen_filter(&json!(1), None).is_err());
    assert!(listen_filter(&json!(1), Some(&params(json!({"notifications": []})))).is_err());
}

#[test]
fn acknowledgements_carry_the_subscription_id_and_only_what_was_accepted() {
    let listen = Listen {
        id: json!("l-1"),
        tools_list_changed: true,
        resources_list_changed: true,
    };
    assert_eq!(
        String::from_utf8(listen.acknowledgement_line()).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":\
         {\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"l-1\"},\"notifications\":\
         {\"toolsListChanged\":true,\"resourcesListChanged\":true}}}\n"
    );
    let none = Listen {
        id: json!(2),
        tools_list_changed: false,
        resources_list_changed: false,
    };
    let value: Value = serde_json::from_slice(&none.acknowledgement_line()).unwrap();
    assert_eq!(value["params"]["notifications"], json!({}));
    assert_eq!(value["params"]["_meta"][SUBSCRIPTION_ID_KEY], 2);
    assert_eq!(
        String::from_utf8(resources_list_changed_line(&json!(2))).unwrap(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\",\"params\":\
         {\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":2}}}\n"
    );
}

#[test]
fn cancellations_name_their_request() {
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "l-1", "reason": "done"}});
    assert_eq!(cancelled_request(&cancel), Some(&json!("l-1")));
    let other = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"requestId": "l-1"}});
    assert_eq!(cancelled_request(&other), None);
    assert_eq!(
        cancelled_request(&json!({"method": "notifications/cancelled"})),
        None
    );
}

#[test]
fn the_errors_say_what_failed() {
    let ping = removed_method(&json!(1), "ping").unwrap();
    assert_eq!(ping.code, -32601);
    assert_eq!(
        ping.message,
        "Method not found: `ping` is not part of protocol version 2026-07-28"
    );
    let subscribe = removed_method(&json!(2), "resources/subscribe").unwrap();
    assert!(
        subscribe.message.ends_with("in `resourceSubscriptions`"),
        "{}",
        subscribe.message
    );
    assert!(removed_method(&json!(3), "tools/list").is_none());
    let failed = internal_error(&json!(1), "cannot list the resources: boom");
    assert_eq!(failed.code, -32603);
    assert_eq!(failed.message, "cannot list the resources: boom");
}

#[test]
fn only_a_complete_2026_request_but_a_probe_chooses_the_stateless_era() {
    let params = |meta: Value| json!({"_meta": meta}).as_object().cloned();
    let complete = params(json!({PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}));
    for method in [
        "tools/list",
        "tools/call",
        "subscriptions/listen",
        "resources/read",
    ] {
        assert!(chooses_stateless(method, complete.as_ref()), "{method}");
    }
    for method in ["server/discover", "ping", "initialize"] {
        assert!(!chooses_stateless(method, complete.as_ref()), "{method}");
    }
    // An inline legacy revision chooses the inline lifecycle too, as rmcp has it.
    let inline_legacy =
        params(json!({PROTOCOL_VERSION_KEY: "2025-06-18", CLIENT_CAPABILITIES_KEY: {}}));
    assert!(chooses_stateless("tools/list", inline_legacy.as_ref()));
    for refused in [
        None,
        params(json!({PROTOCOL_VERSION_KEY: "2026-07-28"})),
        params(json!({PROTOCOL_VERSION_KEY: "1999-01-01", CLIENT_CAPABILITIES_KEY: {}})),
    ] {
        assert!(
            !chooses_stateless("tools/list", refused.as_ref()),
            "{refused:?}"
        );
    }
    let refusal = initialize_after_stateless(&json!(7));
    assert_eq!((refusal.id, refusal.code), (json!(7), -32600));
    assert!(
        refusal
            .message
            .starts_with("`initialize` after a 2026-07-28 request")
            && refusal.message.contains("start a new server process"),
        "{}",
        refusal.message
    );
}

#[test]
fn capabilities_have_the_schemas_shapes() {
    for good in [
        json!({}),
        json!({"roots": {"listChanged": true}, "sampling": {"tools": {}, "context": null}}),
        json!({"elicitation": {"form": {"schemaValidation": false}, "url": {}}}),
        json!({"experimental": {"x": {}}, "extensions": {"io.example/y": {"a": 1}}}),
        json!({"roots": null, "somethingNew": [1, 2]}),
    ] {
        assert!(capabilities_are_well_formed(&good), "{good}");
    }
    for bad in [
        json!([]),
        json!({"roots": 5}),
        json!({"roots": {"listChanged": "yes"}}),
        json!({"sampling": {"tools": true}}),
        json!({"elicitation": []}),
        json!({"elicitation": {"form": {"schemaValidation": 1}}}),
        json!({"elicitation": {"url": "x"}}),
        json!({"experimental": {"x": 1}}),
        json!({"extensions": 5}),
    ] {
        assert!(!capabilities_are_well_formed(&bad), "{bad}");
    }
}

#[test]
fn meta_refusals_come_in_one_order() {
    let code = |method: &str, meta: Value, initialized: bool| -> Option<i64> {
        let params = json!({"_meta": meta});
        let line = meta_refusal(&json!(1), method, params.as_object(), initialized)?;
        let reply: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(reply["id"], 1, "{reply}");
        reply["error"]["code"].as_i64()
    };
    let version = |v: &str| json!({ PROTOCOL_VERSION_KEY: v });
    // A removed method before the missing capabilities; an unserved version before them too.
    assert_eq!(
        code("logging/setLevel", version("2026-07-28"), false),
        Some(-32601)
    );
    assert_eq!(
        code("tools/list", version("1900-01-01"), false),
        Some(-32022)
    );
    assert_eq!(
        code("tools/list", version("2026-07-28"), false),
        Some(-32602)
    );
    assert_eq!(code("tools/list", json!({}), false), Some(-32602));
    let complete = json!({ PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {} });
    assert_eq!(code("tools/list", complete.clone(), false), None);
    let mut loud = complete.clone();
    loud[LOG_LEVEL_KEY] = json!("loud");
    assert_eq!(code("tools/list", loud, false), Some(-32602));
    let mut quiet = complete;
    quiet[LOG_LEVEL_KEY] = json!("emergency");
    assert_eq!(code("tools/list", quiet, false), None);
    // In a session `initialize` opened, a request without `_meta` or naming a legacy
    // revision is the session's own; 2026-07-28 and unserved ones are checked.
    assert_eq!(code("tools/list", json!({}), true), None);
    assert_eq!(code("tools/list", version("2025-06-18"), true), None);
    assert_eq!(
        code("tools/list", version("2026-07-28"), true),
        Some(-32602)
    );
    assert_eq!(
        code("tools/list", version("1900-01-01"), true),
        Some(-32022)
    );
}
