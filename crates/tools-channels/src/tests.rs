//! Tests of the channels tools, through the catalogue, and of [`crate::render_delivery`].

use std::sync::Arc;

use catalogue::{CallContext, Extensions, SessionPolicy, ToolError};
use serde_json::{Value, json};
use store::{DeliveryPoint, Message, MessageQuery, Severity, SqliteStore, StoreHandle};

use crate::render_delivery;

const NOW: i64 = 1_764_000_000_000;

struct Env {
    _dir: tempfile::TempDir,
    ext: Extensions,
    store: StoreHandle,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let store = StoreHandle(Arc::new(
        SqliteStore::create(dir.path().join("state.db")).unwrap(),
    ));
    let mut ext = Extensions::new();
    ext.insert(store.clone());
    Env {
        _dir: dir,
        ext,
        store,
    }
}

impl Env {
    /// Calls `tool` at `now` as session `s1` (the stdio fallback).
    fn call_at(&self, now: i64, tool: &str, args: Value) -> Result<Value, ToolError> {
        let policy = SessionPolicy::Fallback(Some("s1".into()));
        catalogue::call(tool, &CallContext::new(now, &policy, &self.ext), args)
    }

    fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        self.call_at(NOW, tool, args)
    }

    fn call_with(
        &self,
        policy: SessionPolicy,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        catalogue::call(tool, &CallContext::new(NOW, &policy, &self.ext), args)
    }

    fn publish(&self, channel: &str, severity: &str) -> i64 {
        let out = self
            .call(
                "channel_publish",
                json!({
                    "channel": channel,
                    "message": format!("{severity} news"),
                    "severity": severity,
                }),
            )
            .unwrap();
        out["id"].as_i64().unwrap()
    }

    /// Every stored message, expired or not, as ids.
    fn stored_ids(&self) -> Vec<i64> {
        let query = MessageQuery {
            channel: None,
            session_id: None,
            include_acknowledged: true,
            limit: 1000,
            now: 0,
            before: None,
        };
        let mut ids: Vec<i64> = self
            .store
            .read_messages(&query)
            .unwrap()
            .iter()
            .map(|v| v.message.id)
            .collect();
        ids.sort_unstable();
        ids
    }
}

fn invalid(result: Result<Value, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments(msg)) => msg,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

fn ids(out: &Value) -> Vec<i64> {
    out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn the_five_tools_are_registered_with_their_hints() {
    let tools: Vec<_> = catalogue::registrations()
        .into_iter()
        .filter(|r| r.category == catalogue::Category::Channels)
        .map(|r| (r.name, r.annotations.read_only, r.annotations.destructive))
        .collect();
    assert_eq!(
        tools,
        [
            ("channel_acknowledge", false, false),
            ("channel_clear", false, true),
            ("channel_list", true, false),
            ("channel_publish", false, false),
            ("channel_read", true, false),
        ]
    );
}

#[test]
fn publish_returns_the_message_with_defaults() {
    let env = env();
    let out = env.call(
        "channel_publish",
        json!({"channel": "deploys", "message": "v2 is out"}),
    );
    let out = out.unwrap();
    assert_eq!(
        out,
        json!({
            "id": out["id"],
            "channel": "deploys",
            "severity": "info",
            "expires_at": store::to_rfc3339(NOW + 3_600_000),
        })
    );
    assert!(out["id"].is_i64());
    let out = env
        .call(
            "channel_publish",
            json!({
                "channel": "a.b_c-1",
                "message": "x",
                "severity": "critical",
                "ttl_seconds": 2_592_000,
            }),
        )
        .unwrap();
    assert_eq!(out["severity"], "critical");
    assert_eq!(out["expires_at"], store::to_rfc3339(NOW + 2_592_000_000));
    let long_ok = "é".repeat(2048); // exactly 4096 bytes
    env.call(
        "channel_publish",
        json!({"channel": "a", "message": long_ok, "ttl_seconds": 1}),
    )
    .unwrap();
    assert_eq!(env.stored_ids().len(), 3);
}

#[test]
fn publish_rejects_bad_arguments_and_stores_nothing() {
    let env = env();
    let ok = || json!({"channel": "deploys", "message": "hello"});
    let with = |key: &str, value: Value| {
        let mut args = ok();
        args[key] = value;
        args
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!({"message": "hello"}), "missing field `channel`"),
        (json!({"channel": "deploys"}), "missing field `message`"),
        (with("colour", json!("red")), "unknown field `colour`"),
        (with("channel", json!(5)), "invalid type"),
        (with("ttl_seconds", json!("60")), "invalid type"),
        (
            with("severity", json!("urgent")),
            "unknown variant `urgent`",
        ),
        (
            with("channel", json!("")),
            "channel: must be 1 to 64 characters long (got 0)",
        ),
        (
            with("channel", json!("x".repeat(65))),
            "channel: must be 1 to 64",
        ),
        (
            with("channel", json!("two words")),
            "channel: may contain only letters",
        ),
        (with("message", json!("  ")), "message: must not be empty"),
        (
            with("message", json!("x".repeat(4097))),
            "message: is 4097 bytes; the limit is 4096",
        ),
        (
            with("ttl_seconds", json!(0)),
            "ttl_seconds: must be between 1 and 2592000",
        ),
        (
            with("ttl_seconds", json!(2_592_001)),
            "ttl_seconds: must be between 1 and 2592000",
        ),
        (
            with("ttl_seconds", json!(-5)),
            "ttl_seconds: must be at least 1 second, got -5",
        ),
        (
            json!(["deploys", "hello"]),
            "arguments must be a JSON object",
        ),
    ];
    for (args, expected) in cases {
        let msg = invalid(env.call("channel_publish", args.clone()));
        assert!(msg.contains(expected), "{args}: `{msg}` lacks `{expected}`");
    }
    assert!(env.stored_ids().is_empty());
}

#[test]
fn publish_prunes_expired_messages() {
    let env = env();
    let short = env
        .call(
            "channel_publish",
            json!({"channel": "a", "message": "soon gone", "ttl_seconds": 1}),
        )
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let long = env.publish("a", "info");
    assert_eq!(env.stored_ids(), [short, long]);
    let later = env
        .call_at(
            NOW + 1_000,
            "channel_publish",
            json!({"channel": "b", "message": "next"}),
        )
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(env.stored_ids(), [long, later]);
}

#[test]
fn list_counts_active_messages_per_channel() {
    let env = env();
    assert_eq!(
        env.call("channel_list", json!({})).unwrap(),
        json!({"channels": [], "total_active": 0})
    );
    env.publish("ops", "alert");
    env.publish("deploys", "info");
    env.call_at(
        NOW + 5,
        "channel_publish",
        json!({"channel": "ops", "message": "again"}),
    )
    .unwrap();
    env.call_at(
        NOW - 10_000,
        "channel_publish",
        json!({"channel": "old", "message": "x", "ttl_seconds": 1}),
    )
    .unwrap();
    let out = env.call_at(NOW + 10, "channel_list", Value::Null).unwrap();
    assert_eq!(
        out,
        json!({
            "channels": [
                {"channel": "deploys", "active": 1, "latest_at": store::to_rfc3339(NOW)},
                {"channel": "ops", "active": 2, "latest_at": store::to_rfc3339(NOW + 5)},
            ],
            "total_active": 3,
        })
    );
    assert!(invalid(env.call("channel_list", json!({"channel": "ops"}))).contains("unknown field"));
}

#[test]
fn read_returns_newest_first_with_filters_and_limit() {
    let env = env();
    let first = env.publish("ops", "alert");
    let second = env.call_at(
        NOW + 1,
        "channel_publish",
        json!({"channel": "dev", "message": "hi"}),
    );
    let second = second.unwrap()["id"].as_i64().unwrap();
    let third = env.call_at(
        NOW + 2,
        "channel_publish",
        json!({"channel": "ops", "message": "m3"}),
    );
    let third = third.unwrap()["id"].as_i64().unwrap();

    let out = env.call("channel_read", json!({})).unwrap();
    assert_eq!(ids(&out), [third, second, first]);
    assert_eq!(
        out["messages"][2],
        json!({
            "id": first,
            "channel": "ops",
            "severity": "alert",
            "message": "alert news",
            "created_at": store::to_rfc3339(NOW),
            "expires_at": store::to_rfc3339(NOW + 3_600_000),
            "acknowledged": false,
        })
    );
    assert_eq!(
        ids(&env.call("channel_read", json!({"channel": "ops"})).unwrap()),
        [third, first]
    );
    assert_eq!(
        ids(&env.call("channel_read", json!({"limit": 1})).unwrap()),
        [third]
    );
    assert_eq!(
        ids(&env.call("channel_read", json!({"limit": 200})).unwrap()).len(),
        3
    );
    let expired = env
        .call_at(NOW + 3_600_000, "channel_read", json!({}))
        .unwrap();
    assert_eq!(ids(&expired), [third, second]);
}

#[test]
fn read_rejects_bad_arguments() {
    let env = env();
    for (args, expected) in [
        (json!({"limit": 0}), "limit: must be 1 to 200, got 0"),
        (json!({"limit": 201}), "limit: must be 1 to 200, got 201"),
        (json!({"limit": -1}), "limit: must be 1 to 200, got -1"),
        (json!({"limit": "5"}), "invalid type"),
        (json!({"channel": ""}), "channel: must be 1 to 64"),
        (json!({"channel": "a/b"}), "channel: may contain only"),
        (json!({"include_acknowledged": "yes"}), "invalid type"),
        (json!({"since": 3}), "unknown field `since`"),
    ] {
        let msg = invalid(env.call("channel_read", args.clone()));
        assert!(msg.contains(expected), "{args}: `{msg}` lacks `{expected}`");
    }
}

#[test]
fn read_hides_or_marks_acknowledged_messages_per_session() {
    let env = env();
    let acked = env.publish("ops", "alert");
    let open = env.publish("ops", "alert");
    env.call("channel_acknowledge", json!({"message_id": acked}))
        .unwrap();

    assert_eq!(ids(&env.call("channel_read", json!({})).unwrap()), [open]);
    let all = env
        .call("channel_read", json!({"include_acknowledged": true}))
        .unwrap();
    assert_eq!(ids(&all), [open, acked]);
    assert_eq!(all["messages"][1]["acknowledged"], true);
    assert_eq!(all["messages"][0]["acknowledged"], false);

    // Another session, named explicitly, acknowledged nothing.
    let other = env
        .call("channel_read", json!({"session_id": "s2"}))
        .unwrap();
    assert_eq!(ids(&other), [open, acked]);
    // Without any session id nothing is hidden or marked, and reading still works.
    for policy in [SessionPolicy::Fallback(None), SessionPolicy::ExplicitOnly] {
        let out = env.call_with(policy, "channel_read", json!({})).unwrap();
        assert_eq!(ids(&out), [open, acked]);
        assert!(
            out["messages"]
                .as_array()
                .unwrap()
                .iter()
                .all(|m| m["acknowledged"] == false)
        );
    }
}

#[test]
fn acknowledge_stops_delivery_to_that_session_only() {
    let env = env();
    let id = env.publish("ops", "critical");
    let out = env
        .call("channel_acknowledge", json!({"message_id": id}))
        .unwrap();
    assert_eq!(out, json!({"acknowledged": id, "session_id": "s1"}));
    // Twice is fine.
    env.call("channel_acknowledge", json!({"message_id": id}))
        .unwrap();
    let s1 = env
        .store
        .deliver("s1", None, DeliveryPoint::ToolCall, NOW + 1)
        .unwrap();
    assert!(s1.is_empty());
    let s2 = env
        .store
        .deliver("s2", None, DeliveryPoint::ToolCall, NOW + 1)
        .unwrap();
    assert_eq!(s2.iter().map(|m| m.id).collect::<Vec<_>>(), [id]);

    let out = env
        .call_with(
            SessionPolicy::ExplicitOnly,
            "channel_acknowledge",
            json!({"message_id": id, "session_id": "s2"}),
        )
        .unwrap();
    assert_eq!(out, json!({"acknowledged": id, "session_id": "s2"}));
    assert!(
        env.store
            .deliver("s2", None, DeliveryPoint::ToolCall, NOW + 1)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn acknowledge_refuses_unknown_expired_and_malformed_ids() {
    let env = env();
    let id = env
        .call(
            "channel_publish",
            json!({"channel": "a", "message": "x", "severity": "alert", "ttl_seconds": 1}),
        )
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    for (now, unknown) in [(NOW, id + 1), (NOW + 1_000, id)] {
        match env.call_at(now, "channel_acknowledge", json!({"message_id": unknown})) {
            Err(ToolError::NotFound(msg)) => {
                assert!(msg.starts_with("message_id: "), "{msg}");
                assert!(msg.contains(&unknown.to_string()), "{msg}");
            }
            other => panic!("expected NotFound for {unknown} at {now}, got {other:?}"),
        }
    }
    for (args, expected) in [
        (json!({}), "missing field `message_id`"),
        (json!({"message_id": "7"}), "invalid type"),
        (json!({"message_id": 1.5}), "invalid type"),
        (
            json!({"message_id": id, "channel": "a"}),
            "unknown field `channel`",
        ),
    ] {
        let msg = invalid(env.call("channel_acknowledge", args.clone()));
        assert!(msg.contains(expected), "{args}: `{msg}` lacks `{expected}`");
    }
    let msg = invalid(env.call_with(
        SessionPolicy::Fallback(None),
        "channel_acknowledge",
        json!({"message_id": id}),
    ));
    assert!(msg.starts_with("session_id: required"), "{msg}");
}

#[test]
fn clear_deletes_one_message_or_one_channel() {
    let env = env();
    let a1 = env.publish("a", "info");
    let a2 = env.publish("a", "alert");
    let b = env.publish("b", "info");
    assert_eq!(
        env.call("channel_clear", json!({"message_id": a1}))
            .unwrap(),
        json!({"removed": 1})
    );
    assert_eq!(
        env.call("channel_clear", json!({"message_id": a1}))
            .unwrap(),
        json!({"removed": 0})
    );
    assert_eq!(env.stored_ids(), [a2, b]);
    assert_eq!(
        env.call("channel_clear", json!({"channel": "a"})).unwrap(),
        json!({"removed": 1})
    );
    assert_eq!(
        env.call("channel_clear", json!({"channel": "nobody"}))
            .unwrap(),
        json!({"removed": 0})
    );
    assert_eq!(env.stored_ids(), [b]);
}

#[test]
fn clear_requires_exactly_one_valid_selector() {
    let env = env();
    let b = env.publish("b", "info");
    for (args, expected) in [
        (
            json!({}),
            "channel: pass `channel` to clear a channel or `message_id`",
        ),
        (
            json!({"channel": "b", "message_id": b}),
            "channel: cannot be combined with message_id",
        ),
        (json!({"channel": ""}), "channel: must be 1 to 64"),
        (json!({"channel": "*"}), "channel: may contain only"),
        (json!({"message_id": "all"}), "invalid type"),
        (json!({"all": true}), "unknown field `all`"),
    ] {
        let msg = invalid(env.call("channel_clear", args.clone()));
        assert!(msg.contains(expected), "{args}: `{msg}` lacks `{expected}`");
    }
    assert_eq!(env.stored_ids(), [b]);
}

#[test]
fn the_store_is_required() {
    let ext = Extensions::new();
    let policy = SessionPolicy::Fallback(Some("s1".into()));
    let ctx = CallContext::new(NOW, &policy, &ext);
    let out = catalogue::call("channel_list", &ctx, json!({}));
    assert!(matches!(out, Err(ToolError::Internal(_))), "{out:?}");
}

#[test]
fn render_delivery_writes_one_short_line_per_message() {
    let message = |id, channel: &str, severity, body: &str| Message {
        id,
        channel: channel.into(),
        body: body.into(),
        severity,
        created_at: NOW,
        expires_at: NOW + 1,
        target: None,
    };
    let text = render_delivery(&[
        message(3, "global", Severity::Info, "standup at 10"),
        message(12, "deploys", Severity::Alert, "freeze until noon"),
        message(13, "ops", Severity::Critical, "db is down"),
    ]);
    assert_eq!(
        text,
        "[INFO #3 global] standup at 10\n\
         [ALERT #12 deploys] freeze until noon (ack: channel_acknowledge message_id=12)\n\
         [CRITICAL #13 ops] db is down (ack: channel_acknowledge message_id=13)"
    );
    assert_eq!(render_delivery(&[]), "");
}

fn channel_resource() -> &'static catalogue::ResourceRegistration {
    catalogue::resources()
        .into_iter()
        .find(|r| r.uri == crate::CHANNEL_URI_TEMPLATE)
        .unwrap()
}

#[test]
fn channel_resources_list_read_and_complete() {
    let env = env();
    let policy = SessionPolicy::Fallback(Some("s1".into()));
    let ctx = CallContext::new(NOW, &policy, &env.ext);
    let resource = channel_resource();
    assert!((resource.list.unwrap())(&ctx).unwrap().is_empty());

    let first = env.publish("deploys", "alert");
    env.call_at(
        NOW + 5,
        "channel_publish",
        json!({"channel": "dev", "message": "m"}),
    )
    .unwrap();
    let ctx = CallContext::new(NOW + 10, &policy, &env.ext);
    let listed: Vec<String> = (resource.list.unwrap())(&ctx)
        .unwrap()
        .into_iter()
        .map(|e| e.uri)
        .collect();
    assert_eq!(listed, ["hooks://channels/deploys", "hooks://channels/dev"]);

    // A read is what channel_read answers for that channel, acknowledgements applied.
    let uri = "hooks://channels/deploys";
    let vars = resource.matches(uri).unwrap();
    let read = |ctx: &CallContext<'_>| {
        let contents = (resource.read)(ctx, uri, &vars).unwrap();
        let catalogue::ResourceBody::Text(text) = &contents[0].body else {
            panic!("a channel reads as text");
        };
        assert_eq!(contents[0].mime_type.as_deref(), Some("application/json"));
        serde_json::from_str::<Value>(text).unwrap()
    };
    assert_eq!(ids(&read(&ctx)), [first]);
    env.call("channel_acknowledge", json!({"message_id": first}))
        .unwrap();
    assert!(ids(&read(&ctx)).is_empty(), "s1 acknowledged it");
    let anonymous = SessionPolicy::ExplicitOnly;
    let ctx_anonymous = CallContext::new(NOW + 10, &anonymous, &env.ext);
    assert_eq!(
        ids(&read(&ctx_anonymous)),
        [first],
        "no session: nothing hidden"
    );

    // Unknown channel: an empty read. A malformed name: invalid arguments naming a valid URI.
    let vars = resource.matches("hooks://channels/nobody").unwrap();
    let contents = (resource.read)(&ctx, "hooks://channels/nobody", &vars).unwrap();
    let catalogue::ResourceBody::Text(text) = &contents[0].body else {
        panic!("text");
    };
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"messages": []})
    );
    let bad = "hooks://channels/no%20spaces";
    let vars = resource.matches(bad).unwrap();
    let error = (resource.read)(&ctx, bad, &vars).unwrap_err();
    assert!(
        matches!(&error, ToolError::InvalidArguments(m) if m.contains("hooks://channels/deploys")),
        "{error}"
    );

    // Completion: names with the prefix, most recently published first.
    let complete = resource.complete.unwrap();
    assert_eq!(complete(&ctx, "channel", "d").unwrap(), ["dev", "deploys"]);
    assert_eq!(complete(&ctx, "channel", "dep").unwrap(), ["deploys"]);
    assert!(complete(&ctx, "channel", "x").unwrap().is_empty());
    assert!(complete(&ctx, "other", "").unwrap().is_empty());
}

// --- The delivery budget --------------------------------------------------------------------

fn message(id: i64, channel: &str, severity: Severity, body: &str) -> Message {
    Message {
        id,
        channel: channel.into(),
        body: body.into(),
        severity,
        created_at: NOW + id,
        expires_at: NOW + 3_600_000,
        target: None,
    }
}

#[test]
fn a_line_says_severity_id_channel_and_how_to_acknowledge_and_its_length_is_counted_exactly() {
    let info = message(3, "ci", Severity::Info, "build green");
    let alert = message(12, "deploys", Severity::Alert, "db is down");
    let mut critical = message(40, "ops", Severity::Critical, "disk full: café ☕");
    critical.target = Some("s1".into());
    let lines = [
        (&info, "[INFO #3 ci] build green".to_owned()),
        (
            &alert,
            "[ALERT #12 deploys] db is down (ack: channel_acknowledge message_id=12)".to_owned(),
        ),
        (
            &critical,
            "[CRITICAL #40 ops, to you] disk full: café ☕ (ack: channel_acknowledge \
             message_id=40)"
                .to_owned(),
        ),
    ];
    for (m, expected) in &lines {
        assert_eq!(crate::render_line(m), *expected);
        assert_eq!(crate::budget::line_len(m), expected.len(), "{expected}");
    }
    let delivery = store::Delivery {
        shown: vec![info.clone(), alert.clone()],
        ..store::Delivery::default()
    };
    assert_eq!(
        crate::render_bounded(&delivery),
        format!("{}\n{}", lines[0].1, lines[1].1)
    );
}

#[test]
fn the_budget_setting_parses_tokens_and_reports_bad_values() {
    use crate::{DEFAULT_BUDGET_TOKENS, DeliveryBudget, MIN_BUDGET_TOKENS};
    assert_eq!(DeliveryBudget::parse("").unwrap(), DeliveryBudget::DEFAULT);
    assert_eq!(DeliveryBudget::DEFAULT.tokens(), DEFAULT_BUDGET_TOKENS);
    let b = DeliveryBudget::parse(" 500 ").unwrap();
    assert_eq!((b.tokens(), b.bytes()), (500, 2_000));
    assert!(DeliveryBudget::parse("lots").is_err());
    assert!(DeliveryBudget::parse("-3").is_err());
    assert!(DeliveryBudget::of_tokens(MIN_BUDGET_TOKENS - 1).is_err());

    let (b, warning) = DeliveryBudget::from_setting("12");
    assert_eq!(
        b.tokens(),
        MIN_BUDGET_TOKENS,
        "too small: the smallest budget"
    );
    let warning = warning.unwrap();
    assert!(
        warning.contains("HOOKS_MCP_DELIVERY_BUDGET") && warning.contains("12"),
        "{warning}"
    );
    let (b, warning) = DeliveryBudget::from_setting("big");
    assert_eq!(b, DeliveryBudget::DEFAULT, "not a number: the default");
    assert!(warning.unwrap().contains("`big`"));
    assert_eq!(
        DeliveryBudget::from_setting("300"),
        (DeliveryBudget::of_tokens(300).unwrap(), None)
    );
}

#[test]
fn tokens_are_estimated_as_bytes_over_four_rounded_up() {
    assert_eq!(crate::estimate_tokens(""), 0);
    assert_eq!(crate::estimate_tokens("abcd"), 1);
    assert_eq!(crate::estimate_tokens("abcde"), 2);
    // Bytes, not characters.
    assert_eq!(crate::estimate_tokens("ünï"), 2);
}

#[test]
fn one_event_fills_its_budget_by_severity_newest_first_and_summarises_the_rest() {
    use crate::{DeliveryBudget, estimate_tokens, render_bounded};
    use store::{Delivery, Severity::*};
    let body = "x".repeat(150);
    let mut due = Vec::new();
    for id in 1..=40 {
        let channel = ["deploys", "ci", "global"][usize::try_from(id % 3).unwrap()];
        let severity = match id {
            7 | 30 => Critical,
            8..=10 => Alert,
            _ => Info,
        };
        due.push(message(id, channel, severity, &body));
    }
    let budget = DeliveryBudget::of_tokens(500).unwrap();
    let delivery = Delivery::select(due.clone(), &mut budget.for_event());
    let text = render_bounded(&delivery);
    assert!(
        estimate_tokens(&text) <= 500 && text.len() <= budget.bytes(),
        "{} bytes: {text}",
        text.len()
    );
    let shown: Vec<i64> = delivery.shown.iter().map(|m| m.id).collect();
    // Critical first (newest first), then the alerts, then the newest info.
    assert_eq!(&shown[..5], [30, 7, 10, 9, 8]);
    assert!(shown.len() < due.len());
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("[MORE] {} more on ", delivery.unshown_total())),
        "{text}"
    );
    assert_eq!(delivery.unshown.len(), 3, "{:?}", delivery.unshown);
    for backlog in &delivery.unshown {
        assert!(
            last.contains(&format!("{} ({})", backlog.channel, backlog.total())),
            "{last}"
        );
    }
    assert!(last.ends_with(": see channel_read"), "{last}");
    assert_eq!(
        delivery.shown.len() as u64 + delivery.unshown_total(),
        due.len() as u64,
        "every due message is shown or counted"
    );

    // Everything fits: no summary.
    let few = Delivery::select(due[..3].to_vec(), &mut budget.for_event());
    assert_eq!(few.shown.len(), 3);
    assert!(!render_bounded(&few).contains("[MORE]"));
    assert_eq!(render_bounded(&Delivery::default()), "");
}

#[test]
fn critical_messages_that_do_not_fit_are_named_in_the_summary() {
    use crate::{DeliveryBudget, render_bounded};
    use store::Delivery;
    // Each critical line alone is larger than the smallest budget.
    let huge = "!".repeat(4_000);
    let due = vec![
        message(1, "ops", Severity::Critical, &huge),
        message(2, "ops", Severity::Info, "small"),
    ];
    let budget = DeliveryBudget::of_tokens(crate::MIN_BUDGET_TOKENS).unwrap();
    let delivery = Delivery::select(due, &mut budget.for_event());
    assert!(delivery.shown.is_empty());
    assert_eq!(
        render_bounded(&delivery),
        "[MORE] 2 more on ops (2: 1 critical): see channel_read"
    );
}

#[test]
fn the_summary_names_critical_channels_first_and_counts_those_that_do_not_fit() {
    use store::Backlog;
    let backlog = |channel: String, critical, alert, info| Backlog {
        channel,
        critical,
        alert,
        info,
    };
    let mut unshown: Vec<Backlog> = (0..30)
        .map(|i| backlog(format!("channel-with-a-long-name-{i:02}"), 0, 0, 5 + i))
        .collect();
    unshown.push(backlog("zz-last".into(), 2, 1, 0));
    let line = crate::summary_line(&unshown).unwrap();
    assert!(line.len() <= crate::SUMMARY_MAX_BYTES, "{line}");
    let total: u64 = unshown.iter().map(Backlog::total).sum();
    assert!(
        line.starts_with(&format!(
            "[MORE] {total} more on zz-last (3: 2 critical, 1 alert), "
        )),
        "{line}"
    );
    // The fullest next, and the rest counted together.
    assert!(line.contains("channel-with-a-long-name-29 (34)"), "{line}");
    assert!(line.contains(" other channels ("), "{line}");
    assert!(line.ends_with(": see channel_read"), "{line}");
    assert_eq!(crate::summary_line(&[]), None);
}

#[test]
fn a_channel_resource_keeps_the_newest_messages_within_the_budget() {
    use crate::{DeliveryBudget, fit_channel_resource};
    use store::MessageView;
    let views: Vec<MessageView> = (1..=200)
        .rev()
        .map(|id| MessageView {
            message: message(id, "deploys", Severity::Info, &"y".repeat(100)),
            acknowledged: false,
        })
        .collect();
    let budget = DeliveryBudget::of_tokens(1_000).unwrap();
    let text = fit_channel_resource("deploys", &views, budget);
    assert!(text.len() <= budget.bytes(), "{}", text.len());
    let value: Value = serde_json::from_str(&text).unwrap();
    let kept = ids(&value);
    assert!(!kept.is_empty() && kept.len() < 200, "{}", kept.len());
    assert_eq!(
        kept,
        (201 - kept.len() as i64..=200).rev().collect::<Vec<_>>()
    );
    assert_eq!(value["more"], json!(200 - kept.len()));
    assert!(
        value["note"]
            .as_str()
            .unwrap()
            .contains("channel_read channel=deploys"),
        "{value}"
    );
    // All of it fits a large budget: exactly what channel_read lists.
    let all = fit_channel_resource("deploys", &views[..3], budget);
    let value: Value = serde_json::from_str(&all).unwrap();
    assert_eq!(ids(&value), [200, 199, 198]);
    assert!(value.get("more").is_none());
}

#[test]
fn a_message_to_one_session_reaches_it_alone_and_says_so() {
    let env = env();
    let out = env
        .call(
            "channel_publish",
            json!({"channel": "ops", "message": "rebase on main", "severity": "alert", "to": " s2 "}),
        )
        .unwrap();
    assert_eq!(out["to"], json!("s2"), "{out}");
    let to_s2 = env
        .store
        .deliver(
            "s2",
            Some(&["global".to_owned()]),
            DeliveryPoint::Prompt,
            NOW + 1,
        )
        .unwrap();
    assert_eq!(to_s2.len(), 1, "whatever its subscriptions");
    assert_eq!(
        crate::render_line(&to_s2[0]),
        format!(
            "[ALERT #{} ops, to you] rebase on main (ack: channel_acknowledge message_id={})",
            to_s2[0].id, to_s2[0].id
        )
    );
    let others = env
        .store
        .deliver("s3", None, DeliveryPoint::Prompt, NOW + 1)
        .unwrap();
    assert!(others.is_empty(), "{others:?}");
    for bad in [
        json!(""),
        json!("   "),
        json!("a\nb"),
        json!("x".repeat(300)),
    ] {
        let refused = env.call(
            "channel_publish",
            json!({"channel": "ops", "message": "m", "to": bad}),
        );
        match refused {
            Err(ToolError::InvalidArguments(why)) => assert!(why.starts_with("to: "), "{why}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn read_refuses_an_invalid_session_id_as_acknowledge_does() {
    let env = env();
    let id = env.publish("ops", "alert");
    env.call("channel_acknowledge", json!({"message_id": id}))
        .unwrap();
    for bad in ["s1\u{7}", &"s".repeat(300), "s1\0"] {
        let refused = invalid(env.call(
            "channel_acknowledge",
            json!({"message_id": id, "session_id": bad}),
        ));
        assert!(refused.starts_with("session_id: "), "{refused}");
        for policy in [
            SessionPolicy::Fallback(Some("s1".into())),
            SessionPolicy::Fallback(None),
            SessionPolicy::ExplicitOnly,
        ] {
            let read = invalid(env.call_with(
                policy,
                "channel_read",
                json!({"session_id": bad, "include_acknowledged": true}),
            ));
            assert_eq!(read, refused, "{bad:?}");
        }
    }
    // A blank id still means "not given": this session's, or none.
    let out = env
        .call("channel_read", json!({"session_id": " "}))
        .unwrap();
    assert!(ids(&out).is_empty(), "{out}");
    let out = env
        .call_with(
            SessionPolicy::ExplicitOnly,
            "channel_read",
            json!({"session_id": ""}),
        )
        .unwrap();
    assert_eq!(ids(&out), [id]);
}

#[test]
fn a_nul_in_a_message_is_refused_naming_the_field() {
    let env = env();
    let msg = invalid(env.call(
        "channel_publish",
        json!({"channel": "ops", "message": "x\u{0}y"}),
    ));
    assert!(
        msg.starts_with("message: holds a NUL character (at byte 1)"),
        "{msg}"
    );
    assert!(env.stored_ids().is_empty());
}

#[test]
fn reading_a_message_to_one_session_says_whom_it_is_for() {
    let env = env();
    let to_s2 = env
        .call(
            "channel_publish",
            json!({"channel": "ops", "message": "only for s2", "severity": "alert", "to": "s2"}),
        )
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let broadcast = env.publish("ops", "info");
    let out = env
        .call_with(SessionPolicy::Fallback(None), "channel_read", json!({}))
        .unwrap();
    assert_eq!(ids(&out), [broadcast, to_s2]);
    assert_eq!(out["messages"][1]["to"], "s2", "{out}");
    assert!(out["messages"][0].get("to").is_none(), "{out}");
}

#[test]
fn clearing_counts_only_messages_that_have_not_expired() {
    let env = env();
    let short = |channel: &str| {
        env.call(
            "channel_publish",
            json!({"channel": channel, "message": "soon gone", "ttl_seconds": 1}),
        )
        .unwrap()["id"]
            .as_i64()
            .unwrap()
    };
    let gone = short("a");
    let live = env.publish("a", "info");
    let gone_too = short("a");
    let alone = short("b");
    let later = NOW + 1_000;
    // Expired messages are gone for every other tool: clearing them removes nothing.
    assert_eq!(
        env.call_at(later, "channel_clear", json!({"message_id": alone}))
            .unwrap(),
        json!({"removed": 0})
    );
    assert_eq!(
        env.call_at(later, "channel_clear", json!({"channel": "a"}))
            .unwrap(),
        json!({"removed": 1})
    );
    // ... and they are deleted all the same.
    let left = env.stored_ids();
    for id in [gone, live, gone_too, alone] {
        assert!(!left.contains(&id), "{id} in {left:?}");
    }
}

#[test]
fn integers_beyond_64_bits_get_the_fields_range() {
    let env = env();
    for (field, value, expected) in [
        (
            "ttl_seconds",
            json!(18_446_744_073_709_551_615_u64),
            "ttl_seconds: must be between 1 and 2592000 seconds (30 days), got \
             18446744073709551615",
        ),
        (
            "ttl_seconds",
            json!(1e308),
            "ttl_seconds: must be between 1 and 2592000 seconds (30 days), got 1e308",
        ),
        (
            "ttl_seconds",
            json!(-1e300),
            "ttl_seconds: must be at least 1 second, got -1e300",
        ),
        (
            "ttl_seconds",
            json!(1.5),
            "ttl_seconds: invalid type: floating point `1.5`, expected an integer",
        ),
    ] {
        let msg = invalid(env.call(
            "channel_publish",
            json!({"channel": "ops", "message": "m", field: value}),
        ));
        assert!(msg.starts_with(expected), "{value}: `{msg}`");
    }
    for (value, expected) in [
        (
            json!(9_223_372_036_854_775_808_u64),
            "limit: must be 1 to 200, got 9223372036854775808",
        ),
        (json!(-1e19), "limit: must be 1 to 200, got -1e19"),
    ] {
        let msg = invalid(env.call("channel_read", json!({"limit": value})));
        assert_eq!(msg, expected);
    }
    assert!(env.stored_ids().is_empty());
    // Whole numbers within range still work, however they are written.
    env.call(
        "channel_publish",
        json!({"channel": "ops", "message": "m", "ttl_seconds": 6e1}),
    )
    .unwrap();
}
