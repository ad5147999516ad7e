//! The audit trail, the sessions and the delivery reports: each change writes its audit entry
//! in its own transaction (also when writers are killed mid-way), sightings build session
//! records, and a report counts deliveries against the live subscribed sessions.

use std::process::{Command, Stdio};
use std::sync::Arc;

use store::{
    Actor, AuditAction, AuditEntry, AuditQuery, CallCount, Condition, DeliveryPoint, MessageScope,
    NewMessage, NewReminder, NewSchedule, NextFire, PutMode, ReminderScope, ReportQuery,
    ScriptLanguage, SessionQuery, Severity, Sighting, Step, Store, Subscribed, Transport, Trigger,
};

use super::{Backend, Fixture, fresh};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn everything(store: &Fixture) -> Vec<AuditEntry> {
    store
        .audit(&AuditQuery {
            since: None,
            after_id: None,
            limit: u32::MAX,
        })
        .unwrap()
}

fn message(channel: &str, at: i64) -> NewMessage {
    NewMessage {
        channel: channel.into(),
        body: format!("on {channel}"),
        severity: Severity::Alert,
        created_at: at,
        expires_at: at + HOUR,
        target: None,
    }
}

fn condition(script: &str, at: i64) -> Condition {
    Condition {
        name: "lint".into(),
        step: Step::Pre,
        matcher: "Bash".into(),
        script: script.into(),
        language: ScriptLanguage::Bash,
        run_async: false,
        session_id: "s1".into(),
        created_at: at,
        updated_at: at,
    }
}

pub(crate) fn every_change_writes_its_audit_entry(b: &dyn Backend) {
    let store = fresh(b);
    let alice = Actor::Operator("alice".into());
    let s1 = Actor::Session("s1".into());

    let m = store.publish(&message("deploys", T0), &alice).unwrap();
    store.acknowledge(m.id, "s1", T0 + 1, &s1).unwrap();
    store.acknowledge(m.id, "s1", T0 + 2, &s1).unwrap(); // a repeat changes nothing
    let r = store
        .add_reminder(
            &NewReminder {
                message: "run the tests".into(),
                cadence: 5,
                tag: Some("qa".into()),
                created_at: T0 + 3,
            },
            &alice,
        )
        .unwrap();
    store
        .clear_reminders(&ReminderScope::Tag("qa".into()), &alice, T0 + 4)
        .unwrap();
    store
        .clear_reminders(&ReminderScope::Tag("qa".into()), &alice, T0 + 4)
        .unwrap(); // nothing left to clear
    store.arm_gate("s1", T0 + HOUR, &s1, T0 + 5).unwrap();
    store
        .put_condition(&condition("echo one", T0 + 6), PutMode::CreateOnly, &s1)
        .unwrap();
    store
        .put_condition(&condition("echo two", T0 + 7), PutMode::Replace, &s1)
        .unwrap();
    // A refused change writes nothing.
    assert!(
        store
            .put_condition(&condition("echo three", T0 + 8), PutMode::CreateOnly, &s1)
            .is_err()
    );
    assert!(store.delete_condition("lint", &alice, T0 + 9).unwrap());
    assert!(!store.delete_condition("lint", &alice, T0 + 9).unwrap());
    let schedule = store
        .create_schedule(
            &NewSchedule {
                name: Some("nightly".into()),
                channel: "deploys".into(),
                message: "deploy".into(),
                severity: Severity::Info,
                ttl_seconds: 60,
                trigger: Trigger::At(T0 + 10),
                next_fire_at: T0 + 10,
                created_at: T0 + 10,
            },
            &alice,
        )
        .unwrap();
    let once = |_: &store::Schedule, _: i64| NextFire {
        next_fire_at: None,
        skipped: 0,
    };
    let fired = store.fire_due(T0 + 11, &once, &Actor::Daemon).unwrap();
    assert_eq!(fired.len(), 1);
    assert!(store.cancel_schedule(schedule.id, T0 + 12, &alice).is_err()); // completed
    let other = store
        .create_schedule(
            &NewSchedule {
                trigger: Trigger::Every(60),
                next_fire_at: T0 + HOUR,
                created_at: T0 + 13,
                name: None,
                channel: "deploys".into(),
                message: "tick".into(),
                severity: Severity::Info,
                ttl_seconds: 60,
            },
            &Actor::Unknown,
        )
        .unwrap();
    store.cancel_schedule(other.id, T0 + 14, &alice).unwrap();
    assert_eq!(
        store
            .clear_messages(&MessageScope::Channel("deploys".into()), &alice, T0 + 15)
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .clear_messages(&MessageScope::All, &alice, T0 + 16)
            .unwrap(),
        0
    );

    let entries = everything(&store);
    let summary: Vec<(AuditAction, String, String, i64)> = entries
        .iter()
        .map(|e| (e.action, e.actor.to_string(), e.subject.clone(), e.at))
        .collect();
    let sid = schedule.id.to_string();
    let oid = other.id.to_string();
    let fired_id = fired[0].message.id;
    assert_eq!(
        summary,
        vec![
            (
                AuditAction::Publish,
                "operator:alice".into(),
                m.id.to_string(),
                T0
            ),
            (
                AuditAction::Acknowledge,
                "session:s1".into(),
                m.id.to_string(),
                T0 + 1
            ),
            (
                AuditAction::ReminderSet,
                "operator:alice".into(),
                r.id.to_string(),
                T0 + 3
            ),
            (
                AuditAction::ReminderClear,
                "operator:alice".into(),
                "tag:qa".into(),
                T0 + 4
            ),
            (
                AuditAction::GateOpen,
                "session:s1".into(),
                "s1".into(),
                T0 + 5
            ),
            (
                AuditAction::ConditionSet,
                "session:s1".into(),
                "lint".into(),
                T0 + 6
            ),
            (
                AuditAction::ConditionSet,
                "session:s1".into(),
                "lint".into(),
                T0 + 7
            ),
            (
                AuditAction::ConditionClear,
                "operator:alice".into(),
                "lint".into(),
                T0 + 9
            ),
            (
                AuditAction::ScheduleCreate,
                "operator:alice".into(),
                sid.clone(),
                T0 + 10
            ),
            (AuditAction::ScheduleFire, "daemon".into(), sid, T0 + 11),
            (
                AuditAction::ScheduleCreate,
                "unknown".into(),
                oid.clone(),
                T0 + 13
            ),
            (
                AuditAction::ScheduleCancel,
                "operator:alice".into(),
                oid,
                T0 + 14
            ),
            (
                AuditAction::Clear,
                "operator:alice".into(),
                "channel:deploys".into(),
                T0 + 15
            ),
        ]
    );
    let hash_one = store::script_hash("echo one");
    let hash_two = store::script_hash("echo two");
    assert_eq!(hash_one.len(), 64);
    assert_ne!(hash_one, hash_two);
    assert_eq!(entries[5].detail["hash"], hash_one.as_str());
    assert!(entries[5].detail.get("old_hash").is_none());
    assert_eq!(entries[6].detail["hash"], hash_two.as_str());
    assert_eq!(entries[6].detail["old_hash"], hash_one.as_str());
    assert_eq!(entries[7].detail["hash"], hash_two.as_str());
    assert_eq!(entries[0].detail["channel"], "deploys");
    assert_eq!(entries[1].detail["session_id"], "s1");
    assert_eq!(entries[3].detail["removed"], 1);
    assert_eq!(entries[9].detail["message_id"], fired_id);
    assert_eq!(entries[12].detail["removed"], 2);
}

pub(crate) fn the_audit_trail_pages_filters_and_prunes(b: &dyn Backend) {
    let store = fresh(b);
    for i in 0..5 {
        store
            .publish(&message("a", T0 + i * 1000), &Actor::Token("ci".into()))
            .unwrap();
    }
    let page = |since, after_id, limit| {
        store
            .audit(&AuditQuery {
                since,
                after_id,
                limit,
            })
            .unwrap()
    };
    let first = page(None, None, 2);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].actor, Actor::Token("ci".into()));
    let second = page(None, first.last().map(|e| e.id), 2);
    let third = page(None, second.last().map(|e| e.id), 2);
    assert_eq!((second.len(), third.len()), (2, 1));
    let times: Vec<i64> = first
        .iter()
        .chain(&second)
        .chain(&third)
        .map(|e| e.at)
        .collect();
    assert_eq!(times, (0..5).map(|i| T0 + i * 1000).collect::<Vec<_>>());
    assert_eq!(page(Some(T0 + 3000), None, 10).len(), 2);
    assert_eq!(store.prune_audit(T0 + 2000).unwrap(), 2);
    assert_eq!(everything(&store).len(), 3);
    assert_eq!(
        store.count("messages"),
        5,
        "pruning the trail keeps the messages"
    );
}

pub(crate) fn the_recent_audit_trail_is_newest_first_and_pages_backwards(b: &dyn Backend) {
    let store = fresh(b);
    for i in 0..5 {
        store
            .publish(&message("a", T0 + i * 1000), &Actor::Token("ci".into()))
            .unwrap();
    }
    let first = store.recent_audit(None, 2).unwrap();
    let times = |page: &[AuditEntry]| page.iter().map(|e| e.at).collect::<Vec<_>>();
    assert_eq!(times(&first), vec![T0 + 4000, T0 + 3000]);
    let second = store.recent_audit(first.last().map(|e| e.id), 2).unwrap();
    assert_eq!(times(&second), vec![T0 + 2000, T0 + 1000]);
    let third = store.recent_audit(second.last().map(|e| e.id), 2).unwrap();
    assert_eq!(times(&third), vec![T0]);
    assert!(
        store
            .recent_audit(third.last().map(|e| e.id), 2)
            .unwrap()
            .is_empty()
    );
}

pub(crate) fn unacknowledged_alerts_count_what_was_delivered_and_not_acknowledged(b: &dyn Backend) {
    let store = fresh(b);
    let op = Actor::Operator("alice".into());
    let alert = store.publish(&message("deploys", T0), &op).unwrap();
    let critical = store
        .publish(
            &NewMessage {
                severity: Severity::Critical,
                ..message("deploys", T0 + 1)
            },
            &op,
        )
        .unwrap();
    store
        .publish(
            &NewMessage {
                severity: Severity::Info,
                ..message("deploys", T0 + 2)
            },
            &op,
        )
        .unwrap();
    let short = store
        .publish(
            &NewMessage {
                expires_at: T0 + 1000,
                ..message("deploys", T0 + 3)
            },
            &op,
        )
        .unwrap();
    for session in ["s1", "s2", "s3"] {
        let got = store
            .deliver(session, None, DeliveryPoint::Prompt, T0 + 10)
            .unwrap();
        assert_eq!(got.len(), 4, "{session} receives all four");
    }
    store
        .acknowledge(alert.id, "s1", T0 + 20, &Actor::Session("s1".into()))
        .unwrap();
    store
        .acknowledge(alert.id, "s2", T0 + 20, &Actor::Session("s2".into()))
        .unwrap();
    store
        .acknowledge(critical.id, "s2", T0 + 20, &Actor::Session("s2".into()))
        .unwrap();
    let ids = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // At T0 + 2000 the short-lived alert has expired: only the alert and the critical count.
    let counts = store
        .unacknowledged_alerts(&ids(&["s1", "s2", "s3", "s4"]), T0 + 2000)
        .unwrap();
    assert_eq!(counts, vec![("s1".to_owned(), 1), ("s3".to_owned(), 2)]);
    // Before it expires it counts too; the list limits the sessions answered.
    let counts = store
        .unacknowledged_alerts(&ids(&["s3"]), T0 + 500)
        .unwrap();
    assert_eq!(counts, vec![("s3".to_owned(), 3)]);
    assert_eq!(short.severity, Severity::Alert);
    assert!(store.unacknowledged_alerts(&[], T0).unwrap().is_empty());
}

fn sighting(session: &str, at: i64, event: &str) -> Sighting {
    Sighting {
        session_id: session.into(),
        at,
        event: event.into(),
        transport: Transport::Hook,
        cwd: None,
        subscriptions: None,
    }
}

pub(crate) fn sightings_build_session_records(b: &dyn Backend) {
    let store = fresh(b);
    store
        .record_sighting(&Sighting {
            cwd: Some("/src/app".into()),
            subscriptions: Some(Subscribed::Channels(vec![
                "global".into(),
                "deploys".into(),
            ])),
            ..sighting("s1", T0, "SessionStart")
        })
        .unwrap();
    let counted = |at, call_id| {
        store
            .count_sighted_call(&sighting("s1", at, "PreToolUse"), call_id)
            .unwrap()
    };
    let count = |calls, first_report| CallCount {
        calls,
        first_report,
    };
    assert_eq!(counted(T0 + 10, None), count(1, true));
    assert_eq!(counted(T0 + 20, Some("toolu_1")), count(2, true));
    // The same call again (two hook registrations of one client): not counted again.
    assert_eq!(counted(T0 + 20, Some("toolu_1")), count(2, false));
    // Reports of parallel calls interleave: an earlier call reported again is still known.
    assert_eq!(counted(T0 + 20, Some("toolu_2")), count(3, true));
    assert_eq!(counted(T0 + 20, Some("toolu_1")), count(3, false));
    // An id the counters cannot keep (white space in it) counts as a call without one.
    assert_eq!(counted(T0 + 20, Some("a b")), count(4, true));
    assert_eq!(counted(T0 + 20, Some("a b")), count(5, true));
    assert_eq!(
        store.tool_calls("s1").unwrap(),
        5,
        "the same counter the reminders use"
    );
    store
        .record_sighting(&Sighting {
            transport: Transport::StreamableHttp,
            ..sighting("s2", T0 + 30, "tools/call")
        })
        .unwrap();
    // A late sighting (a slow hook) never moves last_seen back.
    store
        .record_sighting(&sighting("s2", T0 + 5, "UserPromptSubmit"))
        .unwrap();

    let all = store
        .sessions(&SessionQuery {
            seen_since: None,
            include_ended: false,
            offset: 0,
            limit: 10,
        })
        .unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.session_id.as_str()).collect();
    assert_eq!(ids, ["s2", "s1"], "most recently seen first");
    let s1 = &all[1];
    assert_eq!((s1.first_seen, s1.last_seen), (T0, T0 + 20));
    assert_eq!(s1.last_event, "PreToolUse");
    assert_eq!(
        s1.cwd.as_deref(),
        Some("/src/app"),
        "kept when a sighting has none"
    );
    assert_eq!(
        s1.subscriptions,
        Some(Subscribed::Channels(vec![
            "global".into(),
            "deploys".into()
        ]))
    );
    assert_eq!(s1.tool_calls, 5);
    let s2 = &all[0];
    assert_eq!((s2.first_seen, s2.last_seen), (T0 + 5, T0 + 30));
    assert_eq!(s2.tool_calls, 0);
    assert_eq!(s2.subscriptions, None);

    let recent = |since| {
        store
            .sessions(&SessionQuery {
                seen_since: Some(since),
                include_ended: false,
                offset: 0,
                limit: 10,
            })
            .unwrap()
            .len()
    };
    assert_eq!(recent(T0 + 25), 1);
    assert_eq!(store.count_sessions(T0 + 25).unwrap(), 1);
    assert_eq!(store.count_sessions(T0).unwrap(), 2);
    assert_eq!(store.count_sessions(T0 + 31).unwrap(), 0);
    let second_page = store
        .sessions(&SessionQuery {
            seen_since: None,
            include_ended: false,
            offset: 1,
            limit: 10,
        })
        .unwrap();
    assert_eq!(second_page.len(), 1);
    assert_eq!(second_page[0].session_id, "s1");
    assert_eq!(store.prune_sessions(T0 + 25).unwrap(), 1);
    assert_eq!(recent(0), 1);
}

pub(crate) fn a_delivery_report_counts_live_subscribed_sessions(b: &dyn Backend) {
    let store = fresh(b);
    let live_at = T0 + HOUR / 2;
    let subscribe = |session: &str, at: i64, subscriptions: Option<Subscribed>| {
        store
            .record_sighting(&Sighting {
                subscriptions,
                ..sighting(session, at, "UserPromptSubmit")
            })
            .unwrap();
    };
    let deploys = || {
        Some(Subscribed::Channels(vec![
            "global".into(),
            "deploys".into(),
        ]))
    };
    subscribe("a", live_at, deploys());
    subscribe("b", live_at, Some(Subscribed::All));
    subscribe("c", live_at, deploys());
    subscribe(
        "other",
        live_at,
        Some(Subscribed::Channels(vec!["global".into()])),
    );
    subscribe("gone", T0 - HOUR, deploys());
    subscribe("unknown", live_at, None);
    let m = store
        .publish(&message("deploys", T0), &Actor::Daemon)
        .unwrap();
    for session in ["a", "b", "gone"] {
        let got = store
            .deliver(session, None, DeliveryPoint::Prompt, T0 + 1)
            .unwrap();
        assert_eq!(got.len(), 1);
    }
    store
        .acknowledge(m.id, "a", T0 + 2, &Actor::Session("a".into()))
        .unwrap();

    let query = ReportQuery {
        message_id: m.id,
        live_since: T0,
        after_session: None,
        limit: 100,
    };
    let report = store.delivery_report(&query).unwrap().unwrap();
    assert_eq!(report.message.id, m.id);
    assert_eq!(report.live_subscribed, 3, "a, b and c");
    assert_eq!(report.delivered_live, 2, "a and b");
    assert_eq!(report.delivered, 3, "gone too");
    assert_eq!(report.acknowledged, 1);
    assert_eq!(report.acknowledged_live, 1, "a");
    let rows: Vec<(&str, bool, bool, bool, bool)> = report
        .sessions
        .iter()
        .map(|s| {
            (
                s.session_id.as_str(),
                s.delivered_at.is_some(),
                s.acknowledged_at.is_some(),
                s.live,
                s.subscribed,
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("a", true, true, true, true),
            ("b", true, false, true, true),
            ("c", false, false, true, true),
            ("gone", true, false, false, false),
        ]
    );
    assert_eq!(report.sessions[0].delivered_at, Some(T0 + 1));
    assert_eq!(report.sessions[0].acknowledged_at, Some(T0 + 2));
    let page = store
        .delivery_report(&ReportQuery {
            after_session: Some("b".into()),
            limit: 1,
            ..query.clone()
        })
        .unwrap()
        .unwrap();
    let paged: Vec<&str> = page
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(paged, ["c"]);
    assert_eq!(page.live_subscribed, 3, "counts cover every page");
    assert!(
        store
            .delivery_report(&ReportQuery {
                message_id: m.id + 100,
                ..query
            })
            .unwrap()
            .is_none()
    );
}

/// The store the killed writers write (a [`super::Location::spec`]).
pub(crate) const STORE_ENV: &str = "HOOKS_MCP_TEST_AUDIT_STORE";
/// The killed writer's number.
pub(crate) const WORKER_ENV: &str = "HOOKS_MCP_TEST_AUDIT_WORKER";
const WRITERS: usize = 3;
/// Changes each writer makes before the parent kills it: far more than it can make first.
const MAX_ROUNDS: i64 = 100_000;
/// Rounds every writer must have made before the parent kills them.
const ROUNDS_BEFORE_KILL: i64 = 40;

/// Writer `w`, until killed: publishes a message, acknowledges it as session `k<w>`, sets a
/// reminder, and clears every other reminder again.
pub(crate) fn child_audit_writer(store: Arc<dyn Store>, worker: &str) {
    let actor = Actor::Session(format!("k{worker}"));
    for i in 0..MAX_ROUNDS {
        let at = T0 + i;
        let m = store
            .publish(&message(&format!("k{worker}"), at), &actor)
            .unwrap();
        store
            .acknowledge(m.id, &format!("k{worker}"), at, &actor)
            .unwrap();
        let r = store
            .add_reminder(
                &NewReminder {
                    message: format!("k{worker}-{i}"),
                    cadence: 3,
                    tag: None,
                    created_at: at,
                },
                &actor,
            )
            .unwrap();
        if i % 2 == 0 {
            store
                .clear_reminders(&ReminderScope::Id(r.id), &actor, at)
                .unwrap();
        }
    }
}

pub(crate) fn killed_writers_leave_every_change_with_its_entry(b: &dyn Backend) {
    let fixture = fresh(b);
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..WRITERS)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "child_audit_writer",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(STORE_ENV, fixture.location.spec())
                .env(WORKER_ENV, w.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // Wait (without a deadline on the outcome) until every writer is well under way.
    loop {
        let slowest = (0..WRITERS)
            .map(|w| {
                fixture.location.scalar(&format!(
                    "SELECT count(*) FROM messages WHERE channel = 'k{w}'"
                ))
            })
            .min()
            .unwrap_or(0);
        if slowest >= ROUNDS_BEFORE_KILL {
            break;
        }
        for child in &mut children {
            assert!(
                child.try_wait().unwrap().is_none(),
                "a writer stopped before it was killed"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for child in &mut children {
        child.kill().unwrap(); // SIGKILL, mid-transaction or not
        child.wait().unwrap();
    }

    fixture.verify().unwrap();
    let count = |sql: &str| fixture.location.scalar(sql);
    assert!(count("SELECT count(*) FROM messages") >= ROUNDS_BEFORE_KILL * WRITERS as i64);
    assert!(count("SELECT count(*) FROM reminders") > 0);
    let checks = [
        (
            "a message without exactly one publish entry",
            "SELECT count(*) FROM messages m WHERE (SELECT count(*) FROM audit_log a \
             WHERE a.action = 'publish' AND a.subject = CAST(m.id AS TEXT)) <> 1",
        ),
        (
            "a publish entry without its message",
            "SELECT count(*) FROM audit_log a WHERE a.action = 'publish' AND NOT EXISTS \
             (SELECT 1 FROM messages m WHERE CAST(m.id AS TEXT) = a.subject)",
        ),
        (
            "an acknowledgement without exactly one entry",
            "SELECT count(*) FROM message_acks k WHERE (SELECT count(*) FROM audit_log a \
             WHERE a.action = 'acknowledge' AND a.subject = CAST(k.message_id AS TEXT)) <> 1",
        ),
        (
            "an acknowledge entry without its acknowledgement",
            "SELECT count(*) FROM audit_log a WHERE a.action = 'acknowledge' AND NOT EXISTS \
             (SELECT 1 FROM message_acks k WHERE CAST(k.message_id AS TEXT) = a.subject)",
        ),
        (
            "a reminder without exactly one set entry, or with a clear entry",
            "SELECT count(*) FROM reminders r WHERE (SELECT count(*) FROM audit_log a \
             WHERE a.action = 'reminder_set' AND a.subject = CAST(r.id AS TEXT)) <> 1 \
             OR EXISTS (SELECT 1 FROM audit_log a WHERE a.action = 'reminder_clear' \
             AND a.subject = 'id:' || CAST(r.id AS TEXT))",
        ),
        (
            "a removed reminder without exactly one clear entry",
            "SELECT count(*) FROM audit_log s WHERE s.action = 'reminder_set' AND NOT EXISTS \
             (SELECT 1 FROM reminders r WHERE CAST(r.id AS TEXT) = s.subject) AND \
             (SELECT count(*) FROM audit_log c WHERE c.action = 'reminder_clear' \
             AND c.subject = 'id:' || s.subject) <> 1",
        ),
        (
            "a clear entry for a reminder never set",
            "SELECT count(*) FROM audit_log c WHERE c.action = 'reminder_clear' AND NOT EXISTS \
             (SELECT 1 FROM audit_log s WHERE s.action = 'reminder_set' \
             AND 'id:' || s.subject = c.subject)",
        ),
    ];
    for (what, sql) in checks {
        assert_eq!(count(sql), 0, "{what}");
    }
}
