//! Opening, migrations, verification, health and counts.

use store::{MessageQuery, NewMessage, Opened, SCHEMA_VERSION, Severity, StoreError};

use super::{Backend, Location, fresh};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

/// The tables every backend's schema has, in the order verification reports them.
const TABLES: [&str; 15] = [
    "messages",
    "message_acks",
    "message_deliveries",
    "reminders",
    "session_counters",
    "conditions",
    "condition_gates",
    "schedules",
    "schedule_firings",
    "audit_log",
    "sessions",
    "channel_stats",
    "delivery_marks",
    "signing_keys",
    "http_sessions",
];

/// Publishes the info message the migration tests keep across versions: `kept` on channel `a`
/// at `T0`, for an hour.
fn publish_kept(store: &dyn store::Store) -> store::Message {
    store
        .publish(
            &NewMessage {
                channel: "a".into(),
                body: "kept".into(),
                severity: Severity::Info,
                created_at: T0,
                expires_at: T0 + HOUR,
                target: None,
            },
            &store::Actor::Daemon,
        )
        .unwrap()
}

/// Takes a store back to schema version 6: the counters forget their recent calls' ids.
fn undo_version_7(location: &dyn Location) {
    location.execute("ALTER TABLE session_counters DROP COLUMN recent_calls;");
    location.set_schema_version(6);
}

/// Takes a store back to schema version 5, behind its back: PostgreSQL's index of the info
/// messages' expiry goes (SQLite's version 6 changes nothing).
fn undo_version_6(location: &dyn Location) {
    undo_version_7(location);
    if location.spec().starts_with("postgres") {
        location.execute("DROP INDEX messages_info_expiry;");
    }
    location.set_schema_version(5);
}

/// Whether the store has PostgreSQL's index of the info messages' expiry.
fn has_expiry_index(location: &dyn Location) -> bool {
    if location.spec().starts_with("postgres") {
        location.scalar(
            "SELECT count(*) FROM (SELECT to_regclass('messages_info_expiry') AS i) r
             WHERE r.i IS NOT NULL",
        ) == 1
    } else {
        location.scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index'
             AND name = 'messages_info_expiry'",
        ) == 1
    }
}

/// Takes a store back to schema version 4, behind its back: the sessions' lifecycle columns
/// and the messages' target go, and the counters' triggers count every info message again.
fn undo_version_5(location: &dyn Location) {
    undo_version_6(location);
    let common = "DROP INDEX messages_targeted; DROP INDEX sessions_by_parent;";
    if location.spec().starts_with("postgres") {
        // The trigger functions are replaced by the migration; PL/pgSQL reads columns late.
        location.execute(&format!(
            "{common} ALTER TABLE messages DROP COLUMN target;
             ALTER TABLE sessions DROP COLUMN ended_at, DROP COLUMN parent_id,
                 DROP COLUMN turn_started_at;"
        ));
    } else {
        location.execute(&format!(
            "DROP TRIGGER messages_counted; DROP TRIGGER messages_uncounted; {common}
             ALTER TABLE messages DROP COLUMN target;
             ALTER TABLE sessions DROP COLUMN ended_at;
             ALTER TABLE sessions DROP COLUMN parent_id;
             ALTER TABLE sessions DROP COLUMN turn_started_at;
             CREATE TRIGGER messages_counted AFTER INSERT ON messages
             BEGIN
                 INSERT INTO channel_stats (channel, messages, info, last_info_id)
                 VALUES (NEW.channel, 1, NEW.severity = 'info',
                         CASE WHEN NEW.severity = 'info' THEN NEW.id ELSE 0 END)
                 ON CONFLICT (channel) DO UPDATE SET
                     messages = messages + 1,
                     info = info + excluded.info,
                     last_info_id = max(last_info_id, excluded.last_info_id);
             END;
             CREATE TRIGGER messages_uncounted AFTER DELETE ON messages
             BEGIN
                 UPDATE channel_stats
                 SET messages = messages - 1, info = info - (OLD.severity = 'info')
                 WHERE channel = OLD.channel;
                 DELETE FROM channel_stats WHERE channel = OLD.channel AND messages <= 0;
             END;"
        ));
    }
    location.set_schema_version(4);
}

/// Takes a store back to schema version 3, behind its back: the daemons' shared state goes.
fn undo_version_4(location: &dyn Location) {
    undo_version_5(location);
    location.execute("DROP TABLE signing_keys; DROP TABLE http_sessions;");
    location.set_schema_version(3);
}

/// Takes a store back to schema version 2, behind its back: what versions 3 and 4 added goes
/// (the counters, the marks, their triggers and the new indexes; the daemons' state), the data
/// stays.
fn undo_version_3(b: &dyn Backend, location: &dyn Location) {
    undo_version_4(location);
    let common = "DROP TABLE channel_stats; DROP TABLE delivery_marks;
                  DROP INDEX messages_info; DROP INDEX messages_urgent;
                  DROP INDEX messages_by_time; DROP INDEX messages_by_created;
                  DROP INDEX message_acks_by_session;";
    let triggers = match b.name() {
        "sqlite" => "DROP TRIGGER messages_counted; DROP TRIGGER messages_uncounted;",
        _ => {
            "DROP TRIGGER messages_counted ON messages;
              DROP TRIGGER messages_uncounted ON messages;
              DROP FUNCTION hooks_mcp_message_added();
              DROP FUNCTION hooks_mcp_messages_deleted();"
        }
    };
    location.execute(&format!("{triggers} {common}"));
    location.set_schema_version(2);
}

pub(crate) fn a_fresh_store_has_the_current_schema_and_reopening_keeps_it(b: &dyn Backend) {
    let location = b.location();
    let (store, opened) = location.open(true).unwrap();
    assert_eq!(opened, Opened::Created);
    let message = publish_kept(&*store);
    drop(store);
    assert_eq!(location.schema_version(), SCHEMA_VERSION);

    let (store, opened) = location.open(false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(location.schema_version(), SCHEMA_VERSION);
    let read = store
        .read_messages(&MessageQuery {
            channel: None,
            session_id: None,
            include_acknowledged: false,
            limit: 20,
            now: T0 + 10,
            before: None,
        })
        .unwrap();
    assert_eq!(read[0].message, message);
    let report = store.verify().unwrap();
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    assert_eq!(report.tables, TABLES);
    store.ping().unwrap();
}

/// A store of schema version 1 (before the audit trail and sessions) is migrated when opened,
/// keeping its data.
pub(crate) fn a_version_1_store_is_migrated_to_the_current_schema(b: &dyn Backend) {
    let store = fresh(b);
    let message = publish_kept(&*store);
    undo_version_3(b, &*store.location);
    store.location.drop_table("audit_log");
    store.location.drop_table("sessions");
    store.location.set_schema_version(1);
    let (reopened, opened) = store.location.open(false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(store.location.schema_version(), SCHEMA_VERSION);
    assert_eq!(reopened.verify().unwrap().tables, TABLES);
    assert_eq!(store.count("messages"), 1);
    assert_eq!(store.count("audit_log"), 0);
    reopened
        .acknowledge(
            message.id,
            "s1",
            T0 + 1,
            &store::Actor::Session("s1".into()),
        )
        .unwrap();
    assert_eq!(store.count("audit_log"), 1);
}

pub(crate) fn a_newer_schema_is_refused_unchanged(b: &dyn Backend) {
    let store = fresh(b);
    store.location.set_schema_version(99);
    match store.location.open(false) {
        Err(StoreError::NewerSchema {
            found: 99,
            supported: SCHEMA_VERSION,
            ..
        }) => {}
        other => panic!("expected NewerSchema, got {:?}", other.map(|(_, o)| o)),
    }
    // Creating refuses it too, and neither touched the recorded version.
    assert!(matches!(
        store.location.open(true),
        Err(StoreError::NewerSchema { found: 99, .. })
    ));
    assert_eq!(store.location.schema_version(), 99);
    // An already open handle's verification reports it as well.
    assert!(matches!(
        store.verify(),
        Err(StoreError::NewerSchema { found: 99, .. })
    ));
}

pub(crate) fn an_empty_store_is_missing_without_create(b: &dyn Backend) {
    let location = b.location();
    match location.open(false) {
        Err(e @ StoreError::Missing { .. }) => {
            assert!(e.to_string().contains("start the server once"), "{e}")
        }
        other => panic!("expected Missing, got {:?}", other.map(|(_, o)| o)),
    }
    // Nothing was written: creating now really creates.
    assert_eq!(location.open(true).unwrap().1, Opened::Created);
}

pub(crate) fn verify_reports_a_dropped_table(b: &dyn Backend) {
    let store = fresh(b);
    store.location.drop_table("message_acks");
    match store.verify() {
        Err(StoreError::MissingTable {
            table: "message_acks",
            version: SCHEMA_VERSION,
            ..
        }) => {}
        other => panic!("expected MissingTable, got {other:?}"),
    }
}

pub(crate) fn concurrent_first_opens_create_the_schema_once(b: &dyn Backend) {
    let location = b.location();
    let opened: Vec<Opened> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3)
            .map(|_| scope.spawn(|| location.open(true).map(|(_, o)| o).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // All succeed. (SQLite judges "created" by the file's absence, so several racing
    // openers may each say so; PostgreSQL migrates once under a lock.)
    assert!(opened.contains(&Opened::Created), "{opened:?}");
    assert_eq!(location.schema_version(), SCHEMA_VERSION);
}

/// Waits (at most 10 s) for the store's change version to satisfy `ok`.
fn version_when(store: &dyn store::Store, ok: impl Fn(u64) -> bool) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(v) = store.change_version().unwrap().filter(|v| ok(*v)) {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the change version did not move within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

pub(crate) fn the_change_version_moves_when_another_handle_publishes_or_clears(b: &dyn Backend) {
    let store = fresh(b);
    // PostgreSQL's version is known once its listening connection is up.
    let start = version_when(&*store, |_| true);
    let other = store.open_another();
    let message = other
        .publish(
            &NewMessage {
                channel: "a".into(),
                body: "news".into(),
                severity: Severity::Info,
                created_at: T0,
                expires_at: T0 + HOUR,
                target: None,
            },
            &store::Actor::Daemon,
        )
        .unwrap();
    let published = version_when(&*store, |v| v != start);
    // Nothing committed since: the version stays.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(store.change_version().unwrap(), Some(published));
    assert_eq!(
        other
            .clear_messages(
                &store::MessageScope::Id(message.id),
                &store::Actor::Daemon,
                T0,
            )
            .unwrap(),
        1
    );
    let cleared = version_when(&*store, |v| v != published);
    assert_ne!(cleared, start);
    assert_eq!(
        other
            .clear_messages(
                &store::MessageScope::Channel("a".into()),
                &store::Actor::Daemon,
                T0,
            )
            .unwrap(),
        0,
        "a clear of nothing counts nothing"
    );
}

/// A store of schema version 2 is migrated to version 3 keeping its data: the counters start
/// from the stored messages, and each session's marks from the info messages it was delivered,
/// so nothing it was shown is shown again and nothing it was not is skipped.
pub(crate) fn a_version_2_store_gets_its_counters_and_marks(b: &dyn Backend) {
    let store = fresh(b);
    let publish = |channel: &str, severity: Severity| {
        store
            .publish(
                &NewMessage {
                    channel: channel.into(),
                    body: format!("{severity} on {channel}"),
                    severity,
                    created_at: T0,
                    expires_at: T0 + HOUR,
                    target: None,
                },
                &store::Actor::Daemon,
            )
            .unwrap()
    };
    publish("a", Severity::Info);
    publish("a", Severity::Alert);
    publish("b", Severity::Info);
    store
        .deliver("s1", None, store::DeliveryPoint::Prompt, T0 + 1)
        .unwrap();
    let late = publish("a", Severity::Info);
    undo_version_3(b, &*store.location);
    let (reopened, _) = store.location.open(false).unwrap();
    assert_eq!(store.location.schema_version(), SCHEMA_VERSION);
    assert_eq!(
        store.location.scalar(&format!(
            "SELECT messages * 100 + info * 10 + CASE WHEN last_info_id = {} THEN 1 ELSE 0 END \
             FROM channel_stats WHERE channel = 'a'",
            late.id
        )),
        321,
        "3 messages on a, 2 of them info, the newest info the last one"
    );
    assert_eq!(store.count("delivery_marks"), 2, "s1 on a and on b");
    // s1 gets only what it was not delivered; s2 gets everything.
    let s1: Vec<i64> = reopened
        .deliver("s1", None, store::DeliveryPoint::Prompt, T0 + 2)
        .unwrap()
        .iter()
        .filter(|m| m.severity == Severity::Info)
        .map(|m| m.id)
        .collect();
    assert_eq!(s1, [late.id]);
    let s2 = reopened
        .deliver("s2", None, store::DeliveryPoint::Prompt, T0 + 2)
        .unwrap();
    assert_eq!(s2.len(), 4);
}

/// A store recorded at an older version whose first tables are gone was changed outside
/// hooks-mcp: opening it leaves it as found (no migration runs on the remains), and
/// verification names what is missing.
pub(crate) fn an_older_store_without_its_tables_is_left_for_verification(b: &dyn Backend) {
    let store = fresh(b);
    for table in ["message_acks", "message_deliveries", "messages"] {
        store.location.drop_table(table);
    }
    store.location.set_schema_version(1);
    let (reopened, _) = store.location.open(false).unwrap();
    assert_eq!(store.location.schema_version(), 1, "not migrated");
    match reopened.verify() {
        Err(StoreError::MissingTable {
            table: "messages",
            version: 1,
            ..
        }) => {}
        other => panic!("expected MissingTable, got {other:?}"),
    }
}

/// A store of schema version 3 gets the daemons' shared state (signing keys, resumable HTTP
/// sessions), keeping its data.
pub(crate) fn a_version_4_store_gets_the_sessions_lifecycle(b: &dyn Backend) {
    let store = fresh(b);
    publish_kept(&*store);
    store
        .record_sighting(&store::Sighting {
            session_id: "s1".into(),
            at: T0,
            event: "SessionStart".into(),
            transport: store::Transport::Hook,
            cwd: None,
            subscriptions: None,
        })
        .unwrap();
    undo_version_5(&*store.location);
    let (reopened, opened) = store.location.open(false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(store.location.schema_version(), SCHEMA_VERSION);
    assert_eq!(reopened.verify().unwrap().tables, TABLES);
    assert_eq!(reopened.count_sessions(T0).unwrap(), 1);
    assert!(reopened.end_session("s1", T0 + 1).unwrap());
    assert_eq!(reopened.count_sessions(T0).unwrap(), 0);
    // A message to one session is not an info message every session counts.
    reopened
        .publish(
            &NewMessage {
                channel: "a".into(),
                body: "yours".into(),
                severity: Severity::Info,
                created_at: T0 + 2,
                expires_at: T0 + HOUR,
                target: Some("s2".into()),
            },
            &store::Actor::Daemon,
        )
        .unwrap();
    assert_eq!(
        store
            .location
            .scalar("SELECT info FROM channel_stats WHERE channel = 'a'"),
        1
    );
    assert_eq!(
        store
            .location
            .scalar("SELECT messages FROM channel_stats WHERE channel = 'a'"),
        2
    );
}

pub(crate) fn a_version_5_store_migrates_and_only_postgres_gets_the_expiry_index(b: &dyn Backend) {
    let store = fresh(b);
    let postgres = store.location.spec().starts_with("postgres");
    assert_eq!(has_expiry_index(&*store.location), postgres);
    publish_kept(&*store);
    undo_version_6(&*store.location);
    assert!(!has_expiry_index(&*store.location));
    let (reopened, opened) = store.location.open(false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(store.location.schema_version(), SCHEMA_VERSION);
    assert_eq!(has_expiry_index(&*store.location), postgres);
    assert_eq!(reopened.counts(T0).unwrap().active_messages, 1);
}

/// A store of schema version 6 gets the counters' last call id, keeping its counts: a call
/// reported twice is counted once from then on.
pub(crate) fn a_version_6_store_counts_a_call_reported_twice_once(b: &dyn Backend) {
    let store = fresh(b);
    let sighting = store::Sighting {
        session_id: "s1".into(),
        at: T0,
        event: "PreToolUse".into(),
        transport: store::Transport::Hook,
        cwd: None,
        subscriptions: None,
    };
    assert_eq!(store.count_tool_call("s1", T0).unwrap(), 1);
    undo_version_7(&*store.location);
    let (reopened, opened) = store.location.open(false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(store.location.schema_version(), SCHEMA_VERSION);
    assert_eq!(reopened.verify().unwrap().tables, TABLES);
    for (call_id, calls, first_report) in [("t1", 2, true), ("t1", 2, false), ("t2", 3, true)] {
        let count = reopened
            .count_sighted_call(&sighting, Some(call_id))
            .unwrap();
        assert_eq!(
            (count.calls, count.first_report),
            (calls, first_report),
            "{call_id}"
        );
    }
}

pub(crate) fn a_version_3_store_gets_the_daemons_state(b: &dyn Backend) {
    let store = fresh(b);
    publish_kept(&*store);
    undo_version_4(&*store.location);
    let (reopened, opened) = store.location.open(false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(store.location.schema_version(), SCHEMA_VERSION);
    assert_eq!(reopened.verify().unwrap().tables, TABLES);
    assert_eq!(store.count("messages"), 1);
    reopened.save_http_session("s", "{}", T0).unwrap();
    assert_eq!(
        reopened.http_session("s", T0).unwrap().as_deref(),
        Some("{}")
    );
}
