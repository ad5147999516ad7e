//! Tests of the enforcement tools, through the catalogue, and of [`crate::due_reminders`].

use std::sync::Arc;

use catalogue::{CallContext, Extensions, SessionPolicy, ToolError};
use serde_json::{Value, json};
use store::{SqliteStore, StoreHandle};

const NOW: i64 = 1_764_000_000_000;

struct Env {
    _dir: tempfile::TempDir,
    ext: Extensions,
    store: StoreHandle,
    policy: SessionPolicy,
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
        policy: SessionPolicy::Fallback(Some("s1".into())),
    }
}

impl Env {
    fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        catalogue::call(tool, &CallContext::new(NOW, &self.policy, &self.ext), args)
    }
}

fn invalid(result: Result<Value, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments(msg)) => msg,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[test]
fn set_list_clear_round_trip() {
    let env = env();
    let a = env
        .call(
            "enforcement_set",
            json!({"message": "run tests", "cadence": 3}),
        )
        .unwrap();
    assert_eq!(a, json!({"id": a["id"], "cadence": 3, "tag": null}));
    assert!(a["id"].is_i64());
    let b = env
        .call(
            "enforcement_set",
            json!({"message": "lint", "cadence": 10000, "tag": "qa.v-1_x"}),
        )
        .unwrap();
    assert_eq!(b["tag"], "qa.v-1_x");

    let list = env.call("enforcement_list", json!({})).unwrap();
    assert_eq!(
        list,
        json!({"reminders": [
            {"id": a["id"], "message": "run tests", "cadence": 3, "tag": null,
             "created_at": store::to_rfc3339(NOW)},
            {"id": b["id"], "message": "lint", "cadence": 10000, "tag": "qa.v-1_x",
             "created_at": store::to_rfc3339(NOW)},
        ]})
    );

    assert_eq!(
        env.call("enforcement_clear", json!({"tag": "qa.v-1_x"}))
            .unwrap()["removed"],
        1
    );
    assert_eq!(
        env.call("enforcement_clear", json!({"tag": "qa.v-1_x"}))
            .unwrap()["removed"],
        0
    );
    let cleared = env
        .call("enforcement_clear", json!({"enforcement_id": a["id"]}))
        .unwrap();
    assert_eq!(cleared, json!({"removed": 1}));
    assert_eq!(
        env.call("enforcement_list", Value::Null).unwrap(),
        json!({"reminders": []})
    );
}

#[test]
fn set_rejects_bad_arguments() {
    let env = env();
    let cases = [
        (json!({"cadence": 3}), "message"),
        (json!({"message": "x"}), "cadence"),
        (
            json!({"message": "   ", "cadence": 3}),
            "message: must not be empty",
        ),
        (
            json!({"message": "x".repeat(4097), "cadence": 3}),
            "message: is 4097 bytes",
        ),
        (
            json!({"message": "x", "cadence": 0}),
            "cadence: must be between 1 and 10000",
        ),
        (
            json!({"message": "x", "cadence": -5}),
            "cadence: must be between 1 and 10000",
        ),
        (
            json!({"message": "x", "cadence": 10001}),
            "cadence: must be between 1 and 10000",
        ),
        (json!({"message": "x", "cadence": "3"}), "invalid type"),
        (json!({"message": 7, "cadence": 3}), "invalid type"),
        (
            json!({"message": "x", "cadence": 3, "tag": ""}),
            "tag: must be 1 to 64",
        ),
        (
            json!({"message": "x", "cadence": 3, "tag": "a".repeat(65)}),
            "tag: must be 1 to 64",
        ),
        (
            json!({"message": "x", "cadence": 3, "tag": "a b"}),
            "tag: may contain only",
        ),
        (
            json!({"message": "x", "cadence": 3, "every": 2}),
            "unknown field `every`",
        ),
        (json!(["x"]), "must be a JSON object"),
    ];
    for (args, expected) in cases {
        let msg = invalid(env.call("enforcement_set", args.clone()));
        assert!(msg.contains(expected), "{args}: {msg}");
    }
    assert!(
        env.store.reminders().unwrap().is_empty(),
        "nothing half-written"
    );
}

#[test]
fn list_rejects_extra_fields() {
    let env = env();
    let msg = invalid(env.call("enforcement_list", json!({"tag": "qa"})));
    assert!(msg.contains("unknown field `tag`"), "{msg}");
}

#[test]
fn clear_needs_exactly_one_selector() {
    let env = env();
    env.call(
        "enforcement_set",
        json!({"message": "x", "cadence": 1, "tag": "qa"}),
    )
    .unwrap();
    let msg = invalid(env.call("enforcement_clear", json!({})));
    assert!(msg.starts_with("enforcement_id, tag: pass one"), "{msg}");
    assert!(msg.contains("not offered"), "{msg}");
    let msg = invalid(env.call(
        "enforcement_clear",
        json!({"enforcement_id": 1, "tag": "qa"}),
    ));
    assert!(msg.contains("only one"), "{msg}");
    let msg = invalid(env.call("enforcement_clear", json!({"tag": "q a"})));
    assert!(msg.starts_with("tag:"), "{msg}");
    let msg = invalid(env.call("enforcement_clear", json!({"enforcement_id": "1"})));
    assert!(msg.contains("invalid type"), "{msg}");
    let msg = invalid(env.call("enforcement_clear", json!({"id": 1})));
    assert!(msg.contains("unknown field `id`"), "{msg}");
    assert_eq!(env.store.reminders().unwrap().len(), 1, "nothing removed");
}

#[test]
fn clear_unknown_id_is_not_found() {
    let env = env();
    match env.call("enforcement_clear", json!({"enforcement_id": 999})) {
        Err(ToolError::NotFound(msg)) => assert!(msg.contains("999"), "{msg}"),
        other => panic!("expected not found, got {other:?}"),
    }
}

#[test]
fn due_reminders_follow_cadence_per_session() {
    let env = env();
    let every2 = env
        .call("enforcement_set", json!({"message": "two", "cadence": 2}))
        .unwrap();
    let every3 = env
        .call("enforcement_set", json!({"message": "three", "cadence": 3}))
        .unwrap();
    let (id2, id3) = (
        every2["id"].as_i64().unwrap(),
        every3["id"].as_i64().unwrap(),
    );
    let store: &dyn store::Store = &*env.store.0;
    let sighting = |session: &str| store::Sighting {
        session_id: session.into(),
        at: NOW,
        event: "PreToolUse".into(),
        transport: store::Transport::Hook,
        cwd: None,
        subscriptions: None,
    };

    let mut seen = Vec::new();
    for _ in 0..6 {
        let (count, due) = crate::due_reminders(store, &sighting("s1"), None).unwrap();
        seen.push((count.calls, due.iter().map(|r| r.id).collect::<Vec<_>>()));
    }
    assert_eq!(
        seen,
        vec![
            (1, vec![]),
            (2, vec![id2]),
            (3, vec![id3]),
            (4, vec![id2]),
            (5, vec![]),
            (6, vec![id2, id3]),
        ]
    );

    // Another session counts from 1 on its own.
    let (count, due) = crate::due_reminders(store, &sighting("s2"), Some("t1")).unwrap();
    assert_eq!((count.calls, count.first_report, due.len()), (1, true, 0));
    let (count, due) = crate::due_reminders(store, &sighting("s2"), Some("t2")).unwrap();
    assert_eq!(
        (count.calls, due.iter().map(|r| r.id).collect::<Vec<_>>()),
        (2, vec![id2])
    );
    // The same call reported again (a client running two hook registrations): not counted,
    // nothing due; the next call counts on.
    let (count, due) = crate::due_reminders(store, &sighting("s2"), Some("t2")).unwrap();
    assert_eq!((count.calls, count.first_report, due.len()), (2, false, 0));
    let (count, due) = crate::due_reminders(store, &sighting("s2"), Some("t3")).unwrap();
    assert_eq!(
        (count.calls, due.iter().map(|r| r.id).collect::<Vec<_>>()),
        (3, vec![id3])
    );
    assert_eq!(env.store.tool_calls("s1").unwrap(), 6);
}

#[test]
fn a_nul_in_a_reminder_is_refused_naming_the_field() {
    let env = env();
    let msg = invalid(env.call(
        "enforcement_set",
        json!({"message": "x\u{0}y", "cadence": 1}),
    ));
    assert!(
        msg.starts_with("message: holds a NUL character (at byte 1)"),
        "{msg}"
    );
    assert!(env.store.reminders().unwrap().is_empty());
}

#[test]
fn cadences_beyond_64_bits_get_the_range() {
    let env = env();
    for (cadence, got) in [
        (
            json!(18_446_744_073_709_551_615_u64),
            "18446744073709551615",
        ),
        (json!(1e308), "1e308"),
        (json!(-1e308), "-1e308"),
    ] {
        let msg = invalid(env.call(
            "enforcement_set",
            json!({"message": "x", "cadence": cadence}),
        ));
        assert_eq!(
            msg,
            format!("cadence: must be between 1 and 10000 tool calls, got {got}")
        );
    }
    assert!(env.store.reminders().unwrap().is_empty());
}
