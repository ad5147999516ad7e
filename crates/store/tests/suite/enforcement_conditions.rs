//! Enforcement (reminders, tool-call counters) and conditions (scripts, the gate).

use store::{
    Condition, NewReminder, PutMode, PutOutcome, ReminderScope, ScriptLanguage, Step, StoreError,
};

use super::{Backend, fresh};

fn reminder(message: &str, cadence: u32, tag: Option<&str>) -> NewReminder {
    NewReminder {
        message: message.into(),
        cadence,
        tag: tag.map(Into::into),
        created_at: 1_000,
    }
}

fn condition(name: &str, script: &str, at: i64) -> Condition {
    Condition {
        name: name.into(),
        step: Step::Pre,
        matcher: "bash.git".into(),
        script: script.into(),
        language: ScriptLanguage::Bash,
        run_async: false,
        session_id: "s1".into(),
        created_at: at,
        updated_at: at,
    }
}

pub(crate) fn reminders_round_trip_and_clear_by_id_and_tag(b: &dyn Backend) {
    let store = fresh(b);
    let a = store
        .add_reminder(
            &reminder("run the tests", 3, Some("qa")),
            &store::Actor::Daemon,
        )
        .unwrap();
    let b = store
        .add_reminder(&reminder("update the log", 5, None), &store::Actor::Daemon)
        .unwrap();
    let c = store
        .add_reminder(&reminder("lint", 2, Some("qa")), &store::Actor::Daemon)
        .unwrap();
    assert!(a.id < b.id && b.id < c.id);
    assert_eq!(
        store.reminders().unwrap(),
        vec![a.clone(), b.clone(), c.clone()]
    );
    assert_eq!(store.counts(0).unwrap().reminders, 3);

    assert_eq!(
        store
            .clear_reminders(&ReminderScope::Tag("qa".into()), &store::Actor::Daemon, 0)
            .unwrap(),
        2
    );
    assert_eq!(store.reminders().unwrap(), vec![b.clone()]);
    assert_eq!(
        store
            .clear_reminders(&ReminderScope::Id(b.id), &store::Actor::Daemon, 0)
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .clear_reminders(&ReminderScope::Id(b.id), &store::Actor::Daemon, 0)
            .unwrap(),
        0
    );
    assert!(store.reminders().unwrap().is_empty());
}

pub(crate) fn zero_cadence_is_rejected_by_the_schema(b: &dyn Backend) {
    let store = fresh(b);
    assert!(
        store
            .add_reminder(&reminder("never", 0, None), &store::Actor::Daemon)
            .is_err()
    );
    assert!(store.reminders().unwrap().is_empty());
}

pub(crate) fn tool_call_counters_are_per_session(b: &dyn Backend) {
    let store = fresh(b);
    assert_eq!(store.tool_calls("s1").unwrap(), 0);
    assert_eq!(store.count_tool_call("s1", 10).unwrap(), 1);
    assert_eq!(store.count_tool_call("s1", 11).unwrap(), 2);
    assert_eq!(store.count_tool_call("s2", 12).unwrap(), 1);
    assert_eq!(store.count_tool_call("s1", 13).unwrap(), 3);
    assert_eq!(store.tool_calls("s1").unwrap(), 3);
    assert_eq!(store.tool_calls("s2").unwrap(), 1);
}

pub(crate) fn concurrent_tool_calls_get_distinct_numbers(b: &dyn Backend) {
    let fixture = fresh(b);
    // Separate connections, as separate hook processes (or daemons) would have.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let store = fixture.open_another();
            std::thread::spawn(move || {
                (0..10)
                    .map(|i| store.count_tool_call("s1", i).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (1..=40).collect::<Vec<u64>>());
    assert_eq!(fixture.tool_calls("s1").unwrap(), 40);
}

pub(crate) fn put_condition_creates_refuses_duplicates_and_replaces_keeping_created_at(
    b: &dyn Backend,
) {
    let store = fresh(b);
    let first = condition("no_force_push", "exit 0", 100);
    assert_eq!(
        store
            .put_condition(&first, PutMode::CreateOnly, &store::Actor::Daemon)
            .unwrap(),
        PutOutcome::Created
    );
    assert_eq!(
        store.condition("no_force_push").unwrap(),
        Some(first.clone())
    );

    let mut second = condition("no_force_push", "exit 2", 200);
    second.step = Step::Post;
    second.language = ScriptLanguage::Python;
    second.run_async = true;
    second.session_id = "s2".into();
    match store.put_condition(&second, PutMode::CreateOnly, &store::Actor::Daemon) {
        Err(StoreError::Conflict(msg)) => assert!(msg.contains("replace=true"), "{msg}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        store.condition("no_force_push").unwrap(),
        Some(first.clone())
    );

    assert_eq!(
        store
            .put_condition(&second, PutMode::Replace, &store::Actor::Daemon)
            .unwrap(),
        PutOutcome::Replaced
    );
    let stored = store.condition("no_force_push").unwrap().unwrap();
    assert_eq!(
        stored,
        Condition {
            created_at: 100,
            ..second.clone()
        }
    );

    // Replace mode on a new name creates it.
    let other = condition("audit", "true", 300);
    assert_eq!(
        store
            .put_condition(&other, PutMode::Replace, &store::Actor::Daemon)
            .unwrap(),
        PutOutcome::Created
    );
    let names: Vec<String> = store
        .conditions()
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["audit", "no_force_push"]);
    assert_eq!(store.counts(0).unwrap().conditions, 2);
}

pub(crate) fn delete_condition_reports_whether_it_existed(b: &dyn Backend) {
    let store = fresh(b);
    store
        .put_condition(
            &condition("a", "true", 1),
            PutMode::CreateOnly,
            &store::Actor::Daemon,
        )
        .unwrap();
    assert!(
        store
            .delete_condition("a", &store::Actor::Daemon, 0)
            .unwrap()
    );
    assert!(
        !store
            .delete_condition("a", &store::Actor::Daemon, 0)
            .unwrap()
    );
    assert_eq!(store.condition("a").unwrap(), None);
}

pub(crate) fn gate_opens_until_expiry_per_session_and_disarms(b: &dyn Backend) {
    let store = fresh(b);
    assert_eq!(store.gate_open_until("s1", 0).unwrap(), None);
    store
        .arm_gate("s1", 1_000, &store::Actor::Daemon, 0)
        .unwrap();
    assert_eq!(store.gate_open_until("s1", 999).unwrap(), Some(1_000));
    assert_eq!(
        store.gate_open_until("s1", 1_000).unwrap(),
        None,
        "closed at the instant"
    );
    assert_eq!(
        store.gate_open_until("s2", 500).unwrap(),
        None,
        "other sessions stay closed"
    );
    store
        .arm_gate("s1", 5_000, &store::Actor::Daemon, 0)
        .unwrap();
    assert_eq!(store.gate_open_until("s1", 2_000).unwrap(), Some(5_000));
    store.disarm_gate("s1").unwrap();
    assert_eq!(store.gate_open_until("s1", 2_000).unwrap(), None);
    store.disarm_gate("s1").unwrap();
}
