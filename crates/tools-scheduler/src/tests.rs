//! Tests of the scheduler tools, the plan and firing.

use std::sync::Arc;

use catalogue::{CallContext, Extensions, SessionPolicy, ToolError};
use serde_json::{Value, json};
use store::{
    MessageQuery, NextFire, Schedule, ScheduleStatus, Severity, SqliteStore, StoreHandle, Trigger,
    from_rfc3339,
};

use crate::{fire_due, plan_next};

const MINUTE: i64 = 60_000;

/// 2026-12-01T12:02:30Z.
fn t0() -> i64 {
    from_rfc3339("2026-12-01T12:02:30Z").unwrap()
}

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
    fn call(&self, now: i64, tool: &str, args: Value) -> Result<Value, ToolError> {
        let policy = SessionPolicy::Fallback(Some("s1".into()));
        let ctx = CallContext::new(now, &policy, &self.ext);
        catalogue::call(tool, &ctx, args)
    }

    fn list(&self) -> Vec<Value> {
        let out = self.call(t0(), "schedule_list", json!({})).unwrap();
        out["schedules"].as_array().unwrap().clone()
    }
}

fn invalid_message(result: Result<Value, ToolError>) -> String {
    match result {
        Err(ToolError::InvalidArguments(msg)) => msg,
        other => panic!("expected invalid arguments, got {other:?}"),
    }
}

#[test]
fn create_each_trigger_and_list() {
    let env = env();
    let now = t0();
    let every = env
        .call(
            now,
            "schedule_create",
            json!({"channel": "ops", "message": "stand up", "every_seconds": 300, "name": "break-1"}),
        )
        .unwrap();
    assert_eq!(
        every,
        json!({"id": 1, "next_fire_at": "2026-12-01T12:07:30Z", "trigger": {"every_seconds": 300}})
    );
    let at = env
        .call(
            now,
            "schedule_create",
            json!({"channel": "ops", "message": "deploy", "at": "2026-12-01T14:00:00+01:00",
                   "severity": "critical", "ttl_seconds": 60}),
        )
        .unwrap();
    assert_eq!(at["next_fire_at"], "2026-12-01T13:00:00Z");
    assert_eq!(at["trigger"], json!({"at": "2026-12-01T13:00:00Z"}));
    let cron = env
        .call(
            now,
            "schedule_create",
            json!({"channel": "ops", "message": "m", "cron": " */5  * * * * "}),
        )
        .unwrap();
    assert_eq!(cron["next_fire_at"], "2026-12-01T12:05:00Z");
    assert_eq!(
        cron["trigger"],
        json!({"cron": "*/5 * * * *"}),
        "stored with single spaces"
    );

    let list = env.list();
    assert_eq!(list.len(), 3);
    assert_eq!(
        list[0],
        json!({"id": 1, "name": "break-1", "channel": "ops", "trigger": {"every_seconds": 300},
               "next_fire_at": "2026-12-01T12:07:30Z", "last_fired_at": null, "fire_count": 0,
               "skipped_count": 0, "status": "active"})
    );
    let stored = env.store.schedules().unwrap();
    assert_eq!(
        (stored[1].severity, stored[1].ttl_seconds),
        (Severity::Critical, 60)
    );
    assert_eq!(
        (stored[0].severity, stored[0].ttl_seconds),
        (Severity::Info, 3600),
        "defaults"
    );
}

#[test]
fn create_rejects_bad_input() {
    let env = env();
    let base = json!({"channel": "ops", "message": "m"});
    let with = |extra: Value| {
        let mut args = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    let cases = [
        (
            with(json!({})),
            "at, every_seconds, cron: pass exactly one trigger (got none)",
        ),
        (
            with(json!({"every_seconds": 60, "cron": "* * * * *"})),
            "(got every_seconds and cron)",
        ),
        (
            with(json!({"at": "2026-12-01T12:00:00Z"})),
            "at: 2026-12-01T12:00:00Z is not in the future",
        ),
        (
            with(json!({"at": "2026-12-01T12:02:30Z"})),
            "at: 2026-12-01T12:02:30Z is not in the future",
        ),
        (
            with(json!({"at": "tomorrow 9am"})),
            "at: `tomorrow 9am` is not an RFC 3339 time",
        ),
        (with(json!({"at": ""})), "at: `` is not an RFC 3339 time"),
        (
            with(json!({"every_seconds": 59})),
            "every_seconds: must be between 60 and 2592000",
        ),
        (
            with(json!({"every_seconds": 2_592_001})),
            "every_seconds: must be between 60",
        ),
        (
            with(json!({"every_seconds": -1})),
            "every_seconds: must be between 60 and 2592000 (30 days), got -1",
        ),
        (
            with(json!({"every_seconds": 60, "ttl_seconds": -5})),
            "ttl_seconds: must be at least 1 second, got -5",
        ),
        (
            with(json!({"cron": "61 * * * *"})),
            "cron: `61 * * * *` is not a valid cron expression",
        ),
        (
            with(json!({"cron": "0 */5 * * * *"})),
            "cron: must have 5 fields (minute hour day-of-month month day-of-week, UTC), got 6 (seconds and years are not supported)",
        ),
        (
            with(json!({"cron": "@hourly"})),
            "got 1 (`@` nicknames are not supported)",
        ),
        (with(json!({"cron": ""})), "cron: must have 5 fields"),
        (
            with(json!({"cron": "0,,5 * * * *"})),
            "cron: the minute field `0,,5` has an empty list element",
        ),
        (
            with(json!({"cron": "0 9 * * 1,"})),
            "cron: the day-of-week field `1,` has an empty list element",
        ),
        (
            with(json!({"cron": "0 0 30 2 *"})),
            "cron: `0 0 30 2 *` never matches",
        ),
        (
            with(json!({"every_seconds": 60, "channel": ""})),
            "channel: must be 1 to 64",
        ),
        (
            with(json!({"every_seconds": 60, "channel": "a b"})),
            "channel: may contain only",
        ),
        (
            with(json!({"every_seconds": 60, "message": " "})),
            "message: must not be empty",
        ),
        (
            with(json!({"every_seconds": 60, "message": "x".repeat(4097)})),
            "message: is 4097 bytes",
        ),
        (
            with(json!({"every_seconds": 60, "ttl_seconds": 0})),
            "ttl_seconds: must be between 1",
        ),
        (
            with(json!({"every_seconds": 60, "name": ""})),
            "name: must be 1 to 64",
        ),
        (
            with(json!({"every_seconds": 60, "name": "n".repeat(65)})),
            "name: must be 1 to 64",
        ),
        (
            with(json!({"every_seconds": 60, "name": "a/b"})),
            "name: may contain only",
        ),
        (
            with(json!({"every_seconds": 60, "severity": "loud"})),
            "unknown variant `loud`",
        ),
        (
            with(json!({"every_seconds": 60, "when": "now"})),
            "unknown field `when`",
        ),
        (
            with(json!({"every_seconds": "60"})),
            "invalid type: string \"60\"",
        ),
        (
            with(json!({"every_seconds": 60, "channel": 5})),
            "invalid type: integer `5`",
        ),
        (
            json!({"message": "m", "every_seconds": 60}),
            "missing field `channel`",
        ),
        (json!([1]), "arguments must be a JSON object"),
    ];
    for (args, expected) in cases {
        let msg = invalid_message(env.call(t0(), "schedule_create", args.clone()));
        assert!(msg.contains(expected), "{args}: {msg}");
    }
    assert!(env.list().is_empty(), "nothing was created");
}

#[test]
fn cancel_and_its_refusals() {
    let env = env();
    env.call(
        t0(),
        "schedule_create",
        json!({"channel": "ops", "message": "m", "every_seconds": 60}),
    )
    .unwrap();
    let cancelled = env
        .call(t0(), "schedule_cancel", json!({"schedule_id": 1}))
        .unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["next_fire_at"], Value::Null);
    assert_eq!(env.list()[0]["status"], "cancelled");
    match env.call(t0(), "schedule_cancel", json!({"schedule_id": 1})) {
        Err(ToolError::Refused(msg)) => assert!(msg.contains("already cancelled"), "{msg}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(matches!(
        env.call(t0(), "schedule_cancel", json!({"schedule_id": 42})),
        Err(ToolError::NotFound(msg)) if msg.contains("schedule 42")
    ));
    for (args, expected) in [
        (json!({}), "missing field `schedule_id`"),
        (json!({"schedule_id": "1"}), "invalid type: string"),
        (
            json!({"schedule_id": 1, "force": true}),
            "unknown field `force`",
        ),
    ] {
        let msg = invalid_message(env.call(t0(), "schedule_cancel", args.clone()));
        assert!(msg.contains(expected), "{args}: {msg}");
    }
    let msg = invalid_message(env.call(t0(), "schedule_list", json!({"all": true})));
    assert!(msg.contains("unknown field `all`"), "{msg}");
}

fn schedule(trigger: Trigger, next_fire_at: i64) -> Schedule {
    Schedule {
        id: 1,
        name: None,
        channel: "ops".into(),
        message: "m".into(),
        severity: Severity::Info,
        ttl_seconds: 60,
        trigger,
        next_fire_at: Some(next_fire_at),
        last_fired_at: None,
        fire_count: 0,
        skipped_count: 0,
        status: ScheduleStatus::Active,
        created_at: 0,
    }
}

#[test]
fn plan_next_table() {
    let t = from_rfc3339("2026-12-01T12:05:00Z").unwrap();
    let p = 5 * MINUTE;
    let every = || Trigger::Every(300);
    let cron = || Trigger::Cron("*/5 * * * *".into());
    let next = |at: i64, skipped: u64| NextFire {
        next_fire_at: Some(at),
        skipped,
    };
    let cases = [
        (
            "at completes",
            Trigger::At(t),
            t + 10,
            NextFire {
                next_fire_at: None,
                skipped: 0,
            },
        ),
        ("every on time", every(), t, next(t + p, 0)),
        ("every a little late", every(), t + 1000, next(t + p, 0)),
        (
            "every late 3.5 periods",
            every(),
            t + 7 * p / 2,
            next(t + 4 * p, 3),
        ),
        (
            "every late exactly 2 periods",
            every(),
            t + 2 * p,
            next(t + 3 * p, 2),
        ),
        ("cron on time", cron(), t, next(t + p, 0)),
        (
            "cron late 16 minutes",
            cron(),
            t + 16 * MINUTE,
            next(t + 20 * MINUTE, 3),
        ),
        (
            "cron late to an occurrence",
            cron(),
            t + 10 * MINUTE,
            next(t + 15 * MINUTE, 2),
        ),
        (
            "a stored cron a new one may not be keeps firing",
            Trigger::Cron("0,,5 * * * *".into()),
            t,
            next(t + 55 * MINUTE, 0),
        ),
        (
            "unparsable stored cron completes",
            Trigger::Cron("not a cron".into()),
            t,
            NextFire {
                next_fire_at: None,
                skipped: 0,
            },
        ),
    ];
    for (what, trigger, now, expected) in cases {
        assert_eq!(plan_next(&schedule(trigger, t), now), expected, "{what}");
    }
    // Counting what a long downtime skipped stops at the cap.
    let minutely = schedule(Trigger::Cron("* * * * *".into()), t);
    let planned = plan_next(&minutely, t + 200_000 * MINUTE);
    assert_eq!(planned, next(t + 200_001 * MINUTE, crate::SKIP_COUNT_CAP));
}

#[test]
fn fire_due_one_shot_interval_and_catch_up() {
    let env = env();
    let t = t0();
    env.call(
        t,
        "schedule_create",
        json!({"channel": "ops", "message": "once", "at": "2026-12-01T12:03:30Z", "ttl_seconds": 90}),
    )
    .unwrap();
    env.call(
        t,
        "schedule_create",
        json!({"channel": "ops", "message": "tick", "every_seconds": 60}),
    )
    .unwrap();
    let store = &*env.store;
    assert!(
        fire_due(store, t, &store::Actor::Daemon)
            .unwrap()
            .is_empty(),
        "nothing due at creation"
    );

    // t + 1 min: both are due and fire once each.
    let firings = fire_due(store, t + MINUTE, &store::Actor::Daemon).unwrap();
    assert_eq!(
        firings.iter().map(|f| f.schedule_id).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(firings[0].message.body, "once");
    assert_eq!(firings[0].message.expires_at, t + MINUTE + 90_000);
    assert!(
        fire_due(store, t + MINUTE, &store::Actor::Daemon)
            .unwrap()
            .is_empty(),
        "the same instant fires nothing"
    );
    let list = env.list();
    assert_eq!(
        (&list[0]["status"], &list[0]["fire_count"]),
        (&json!("completed"), &json!(1))
    );
    assert_eq!(list[1]["next_fire_at"], "2026-12-01T12:04:30Z");

    // The next period fires the interval only.
    let firings = fire_due(store, t + 2 * MINUTE, &store::Actor::Daemon).unwrap();
    assert_eq!(
        firings.iter().map(|f| f.schedule_id).collect::<Vec<_>>(),
        vec![2]
    );

    // Back 3.5 periods after the occurrence due at t + 3 min: one firing, three skipped
    // (t + 4, 5 and 6 min), and the next on the grid at t + 7 min.
    let back = t + 3 * MINUTE + 7 * MINUTE / 2;
    let firings = fire_due(store, back, &store::Actor::Daemon).unwrap();
    assert_eq!(firings.len(), 1);
    assert_eq!(
        (firings[0].scheduled_for, firings[0].skipped),
        (t + 3 * MINUTE, 3)
    );
    let list = env.list();
    assert_eq!(
        (
            &list[1]["fire_count"],
            &list[1]["skipped_count"],
            &list[1]["next_fire_at"]
        ),
        (&json!(3), &json!(3), &json!("2026-12-01T12:09:30Z"))
    );

    let published = store
        .read_messages(&MessageQuery {
            channel: Some("ops".into()),
            session_id: None,
            include_acknowledged: true,
            limit: 100,
            now: back,
            before: None,
        })
        .unwrap();
    assert_eq!(
        published
            .iter()
            .filter(|m| m.message.body == "tick")
            .count(),
        3
    );
}

#[test]
fn registrations_are_in_the_scheduler_category() {
    for name in ["schedule_create", "schedule_list", "schedule_cancel"] {
        let r = catalogue::find(name).unwrap();
        assert_eq!(r.category, catalogue::Category::Scheduler, "{name}");
        let schema = (r.input_schema)();
        assert_eq!(schema["type"], "object", "{name}");
    }
    let create = (catalogue::find("schedule_create").unwrap().input_schema)();
    assert_eq!(create["required"], json!(["channel", "message"]));
    let cancel = (catalogue::find("schedule_cancel").unwrap().input_schema)();
    assert_eq!(cancel["required"], json!(["schedule_id"]));
}

#[test]
fn a_nul_in_a_scheduled_message_or_name_is_refused_naming_the_field() {
    let env = env();
    for (field, expected) in [
        ("message", "message: holds a NUL character (at byte 1)"),
        ("name", "name: may contain only"),
    ] {
        let mut args = json!({"channel": "ops", "message": "m", "every_seconds": 60});
        args[field] = json!("x\u{0}y");
        let msg = invalid_message(env.call(t0(), "schedule_create", args));
        assert!(msg.starts_with(expected), "{msg}");
    }
    assert!(env.list().is_empty());
}

#[test]
fn integers_beyond_64_bits_get_the_fields_range() {
    let env = env();
    for (field, value, expected) in [
        (
            "every_seconds",
            json!(18_446_744_073_709_551_615_u64),
            "every_seconds: must be between 60 and 2592000 (30 days), got 18446744073709551615",
        ),
        (
            "every_seconds",
            json!(-1e300),
            "every_seconds: must be between 60 and 2592000 (30 days), got -1e300",
        ),
        (
            "ttl_seconds",
            json!(1e308),
            "ttl_seconds: must be between 1 and 2592000 seconds (30 days), got 1e308",
        ),
    ] {
        let mut args = json!({"channel": "ops", "message": "m", "every_seconds": 60});
        args[field] = value;
        let msg = invalid_message(env.call(t0(), "schedule_create", args));
        assert_eq!(msg, expected);
    }
    assert!(env.list().is_empty());
}
