//! Unit tests of the SQLite backend.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;
use tempfile::TempDir;

use super::{OpenOptions, Opened, SCHEMA_VERSION, SqliteStore, map_err};
use crate::{
    ChannelStore, DeliveryPoint, Message, MessageQuery, MessageScope, NewMessage, Severity,
    StoreAdmin, StoreError, StoreLocation,
};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn fresh() -> (TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::create(dir.path().join("state.db")).unwrap();
    (dir, store)
}

fn publish(store: &SqliteStore, channel: &str, severity: Severity, at: i64, ttl: i64) -> Message {
    store
        .publish(&NewMessage {
            channel: channel.into(),
            body: format!("{severity} on {channel} at {at}"),
            severity,
            created_at: at,
            expires_at: at + ttl,
        })
        .unwrap()
}

fn ids(messages: &[Message]) -> Vec<i64> {
    messages.iter().map(|m| m.id).collect()
}

fn count(store: &SqliteStore, table: &str) -> i64 {
    store
        .lock()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

fn query(channel: Option<&str>, session: Option<&str>, include_acked: bool) -> MessageQuery {
    MessageQuery {
        channel: channel.map(Into::into),
        session_id: session.map(Into::into),
        include_acknowledged: include_acked,
        limit: 20,
        now: T0 + 10,
    }
}

// --- Channels -------------------------------------------------------------------------------

#[test]
fn publish_returns_the_stored_message() {
    let (_dir, store) = fresh();
    let a = publish(&store, "deploys", Severity::Alert, T0, HOUR);
    let b = publish(&store, "deploys", Severity::Info, T0, HOUR);
    assert!(b.id > a.id);
    assert_eq!(a.channel, "deploys");
    assert_eq!(a.severity, Severity::Alert);
    assert_eq!(a.expires_at, T0 + HOUR);
    let read = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(read[1].message, a);
    assert!(!read[1].acknowledged);
}

#[test]
fn read_is_newest_first_filtered_limited_and_skips_expired() {
    let (_dir, store) = fresh();
    let old = publish(&store, "a", Severity::Info, T0, HOUR);
    let new = publish(&store, "a", Severity::Info, T0 + 5, HOUR);
    let other = publish(&store, "b", Severity::Info, T0 + 1, HOUR);
    publish(&store, "a", Severity::Info, T0 - HOUR, HOUR); // expired at T0
    let all = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(
        all.iter().map(|v| v.message.id).collect::<Vec<_>>(),
        [new.id, other.id, old.id]
    );
    let only_a = store.read_messages(&query(Some("a"), None, false)).unwrap();
    assert_eq!(
        only_a.iter().map(|v| v.message.id).collect::<Vec<_>>(),
        [new.id, old.id]
    );
    let one = store
        .read_messages(&MessageQuery {
            limit: 1,
            ..query(None, None, false)
        })
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].message.id, new.id);
}

#[test]
fn read_hides_or_marks_what_the_session_acknowledged() {
    let (_dir, store) = fresh();
    let acked = publish(&store, "a", Severity::Alert, T0, HOUR);
    let open = publish(&store, "a", Severity::Alert, T0 + 1, HOUR);
    store.acknowledge(acked.id, "s1", T0 + 2).unwrap();

    let hidden = store
        .read_messages(&query(None, Some("s1"), false))
        .unwrap();
    assert_eq!(
        hidden.iter().map(|v| v.message.id).collect::<Vec<_>>(),
        [open.id]
    );

    let marked = store.read_messages(&query(None, Some("s1"), true)).unwrap();
    assert_eq!(
        marked
            .iter()
            .map(|v| (v.message.id, v.acknowledged))
            .collect::<Vec<_>>(),
        [(open.id, false), (acked.id, true)]
    );
    // Another session and no session see both, unacknowledged.
    for session in [Some("s2"), None] {
        let seen = store.read_messages(&query(None, session, false)).unwrap();
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(|v| !v.acknowledged));
    }
}

#[test]
fn channels_count_active_messages_by_name() {
    let (_dir, store) = fresh();
    publish(&store, "b", Severity::Info, T0, HOUR);
    publish(&store, "a", Severity::Info, T0, HOUR);
    publish(&store, "a", Severity::Alert, T0 + 7, HOUR);
    publish(&store, "gone", Severity::Info, T0 - HOUR, HOUR);
    let summary = store.channels(T0 + 10).unwrap();
    let got: Vec<_> = summary
        .iter()
        .map(|c| (c.channel.as_str(), c.active, c.latest_at))
        .collect();
    assert_eq!(got, [("a", 2, T0 + 7), ("b", 1, T0)]);
}

#[test]
fn acknowledge_refuses_unknown_and_expired_ids_and_accepts_repeats() {
    let (_dir, store) = fresh();
    let live = publish(&store, "a", Severity::Alert, T0, HOUR);
    let expired = publish(&store, "a", Severity::Alert, T0 - HOUR, HOUR);
    for id in [expired.id, live.id + 100] {
        match store.acknowledge(id, "s1", T0) {
            Err(StoreError::NotFound {
                what: "message",
                id: got,
            }) => {
                assert_eq!(got, id.to_string())
            }
            other => panic!("expected NotFound for {id}, got {other:?}"),
        }
    }
    assert_eq!(store.acknowledge(live.id, "s1", T0).unwrap(), live);
    assert_eq!(store.acknowledge(live.id, "s1", T0 + 1).unwrap(), live);
    assert_eq!(count(&store, "message_acks"), 1);
}

#[test]
fn clear_deletes_by_scope_with_acks_and_deliveries() {
    let (_dir, store) = fresh();
    let a1 = publish(&store, "a", Severity::Alert, T0, HOUR);
    let a2 = publish(&store, "a", Severity::Info, T0, HOUR);
    let b = publish(&store, "b", Severity::Info, T0, HOUR);
    store.acknowledge(a1.id, "s1", T0).unwrap();
    store
        .deliver("s1", None, DeliveryPoint::Prompt, T0)
        .unwrap();
    assert_eq!(count(&store, "message_deliveries"), 2); // a2 and b; a1 is acknowledged

    assert_eq!(
        store
            .clear_messages(&MessageScope::Id(a2.id + 100))
            .unwrap(),
        0
    );
    assert_eq!(store.clear_messages(&MessageScope::Id(a2.id)).unwrap(), 1);
    assert_eq!(
        store
            .clear_messages(&MessageScope::Channel("a".into()))
            .unwrap(),
        1
    );
    assert_eq!(count(&store, "message_acks"), 0);
    assert_eq!(count(&store, "message_deliveries"), 1);
    let left = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(
        left.iter().map(|v| v.message.id).collect::<Vec<_>>(),
        [b.id]
    );
    assert_eq!(store.clear_messages(&MessageScope::All).unwrap(), 1);
    assert_eq!(count(&store, "messages"), 0);
    assert_eq!(count(&store, "message_deliveries"), 0);
}

#[test]
fn prune_removes_only_expired_messages_and_their_records() {
    let (_dir, store) = fresh();
    let short = publish(&store, "a", Severity::Alert, T0, 1_000);
    let long = publish(&store, "a", Severity::Alert, T0, HOUR);
    store.acknowledge(short.id, "s1", T0).unwrap();
    store
        .deliver("s2", None, DeliveryPoint::Prompt, T0)
        .unwrap();
    assert_eq!(store.prune_expired(T0 + 999).unwrap(), 0);
    // `expires_at` is the first instant at which a message is expired.
    assert_eq!(store.prune_expired(T0 + 1_000).unwrap(), 1);
    assert_eq!(count(&store, "message_acks"), 0);
    assert_eq!(count(&store, "message_deliveries"), 1);
    let left = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(left[0].message.id, long.id);
    assert_eq!(left.len(), 1);
}

#[test]
fn info_is_delivered_once_per_session_and_recorded() {
    let (_dir, store) = fresh();
    let info = publish(&store, "a", Severity::Info, T0, HOUR);
    let tool_call = store
        .deliver("s1", None, DeliveryPoint::ToolCall, T0)
        .unwrap();
    assert!(tool_call.is_empty(), "info waits for a prompt");
    assert_eq!(
        ids(&store
            .deliver("s1", None, DeliveryPoint::Prompt, T0)
            .unwrap()),
        [info.id]
    );
    assert!(
        store
            .deliver("s1", None, DeliveryPoint::Prompt, T0 + 1)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        ids(&store
            .deliver("s2", None, DeliveryPoint::Prompt, T0)
            .unwrap()),
        [info.id]
    );
    let recorded: Vec<(i64, String, i64)> = store
        .lock()
        .prepare("SELECT message_id, session_id, delivered_at FROM message_deliveries ORDER BY 2")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        recorded,
        [(info.id, "s1".into(), T0), (info.id, "s2".into(), T0)]
    );
}

#[test]
fn alert_repeats_every_prompt_until_acknowledged() {
    let (_dir, store) = fresh();
    let alert = publish(&store, "a", Severity::Alert, T0, HOUR);
    for now in [T0, T0 + 1, T0 + 2] {
        assert_eq!(
            ids(&store
                .deliver("s1", None, DeliveryPoint::Prompt, now)
                .unwrap()),
            [alert.id]
        );
    }
    assert!(
        store
            .deliver("s1", None, DeliveryPoint::ToolCall, T0)
            .unwrap()
            .is_empty()
    );
    store.acknowledge(alert.id, "s1", T0 + 3).unwrap();
    assert!(
        store
            .deliver("s1", None, DeliveryPoint::Prompt, T0 + 4)
            .unwrap()
            .is_empty()
    );
    // Acknowledgement is per session.
    assert_eq!(
        ids(&store
            .deliver("s2", None, DeliveryPoint::Prompt, T0 + 4)
            .unwrap()),
        [alert.id]
    );
}

#[test]
fn critical_is_delivered_at_tool_calls_too_until_acknowledged() {
    let (_dir, store) = fresh();
    let critical = publish(&store, "a", Severity::Critical, T0, HOUR);
    let alert = publish(&store, "a", Severity::Alert, T0 + 1, HOUR);
    for _ in 0..2 {
        let due = store
            .deliver("s1", None, DeliveryPoint::ToolCall, T0 + 2)
            .unwrap();
        assert_eq!(ids(&due), [critical.id]);
    }
    // Oldest first.
    let due = store
        .deliver("s1", None, DeliveryPoint::Prompt, T0 + 2)
        .unwrap();
    assert_eq!(ids(&due), [critical.id, alert.id]);
    store.acknowledge(critical.id, "s1", T0 + 3).unwrap();
    assert!(
        store
            .deliver("s1", None, DeliveryPoint::ToolCall, T0 + 4)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn expired_messages_are_never_delivered() {
    let (_dir, store) = fresh();
    for severity in [Severity::Info, Severity::Alert, Severity::Critical] {
        publish(&store, "a", severity, T0, 1_000);
    }
    for point in [DeliveryPoint::Prompt, DeliveryPoint::ToolCall] {
        assert!(
            store
                .deliver("s1", None, point, T0 + 1_000)
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(count(&store, "message_deliveries"), 0);
}

#[test]
fn delivery_respects_the_channel_list() {
    let (_dir, store) = fresh();
    let a = publish(&store, "a", Severity::Alert, T0, HOUR);
    let b = publish(&store, "b", Severity::Alert, T0 + 1, HOUR);
    publish(&store, "c", Severity::Alert, T0 + 2, HOUR);
    let wanted = ["b".to_string(), "a".to_string()];
    let due = store
        .deliver("s1", Some(&wanted), DeliveryPoint::Prompt, T0 + 3)
        .unwrap();
    assert_eq!(ids(&due), [a.id, b.id]);
    assert!(
        store
            .deliver("s1", Some(&[]), DeliveryPoint::Prompt, T0 + 3)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .deliver("s1", None, DeliveryPoint::Prompt, T0 + 3)
            .unwrap()
            .len(),
        3
    );
}

// --- Opening, migrations and verification ---------------------------------------------------

fn user_version(path: &Path) -> u32 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

fn open(path: &Path, create: bool) -> Result<(SqliteStore, Opened), StoreError> {
    let options = OpenOptions {
        create,
        busy_timeout: Duration::from_millis(200),
    };
    SqliteStore::open(&StoreLocation::at(path), &options)
}

#[test]
fn a_fresh_store_has_the_current_schema_and_reopening_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/state.db");
    let (store, opened) = open(&path, true).unwrap();
    assert_eq!(opened, Opened::Created);
    let message = publish(&store, "a", Severity::Info, T0, HOUR);
    drop(store);
    assert_eq!(user_version(&path), SCHEMA_VERSION);

    let (store, opened) = open(&path, false).unwrap();
    assert_eq!(opened, Opened::Existing);
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(
        store.read_messages(&query(None, None, false)).unwrap()[0].message,
        message
    );
    let report = store.verify().unwrap();
    assert_eq!(report.schema_version, SCHEMA_VERSION);
    assert_eq!(report.tables, super::REQUIRED_TABLES);
}

#[test]
fn a_newer_schema_is_refused_unchanged() {
    let (dir, store) = fresh();
    drop(store);
    let path = dir.path().join("state.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    match open(&path, false) {
        Err(StoreError::NewerSchema {
            found: 99,
            supported: SCHEMA_VERSION,
            ..
        }) => {}
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    assert_eq!(user_version(&path), 99);
}

#[test]
fn opening_a_missing_store_without_create_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent/state.db");
    match open(&path, false) {
        Err(StoreError::Missing { path: got }) => assert_eq!(got, path),
        other => panic!("expected Missing, got {other:?}"),
    }
    assert!(!path.exists());
}

#[test]
fn verify_reports_a_dropped_table() {
    let (dir, store) = fresh();
    Connection::open(dir.path().join("state.db"))
        .unwrap()
        .execute_batch("DROP TABLE message_acks")
        .unwrap();
    match store.verify() {
        Err(StoreError::MissingTable {
            table: "message_acks",
            version: SCHEMA_VERSION,
            ..
        }) => {}
        other => panic!("expected MissingTable, got {other:?}"),
    }
}

#[test]
fn a_file_of_garbage_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, [0xA5_u8; 8192]).unwrap();
    let verified = open(&path, false).and_then(|(store, _)| store.verify().map(|_| ()));
    match verified {
        Err(StoreError::Corrupt { path: got, .. }) => assert_eq!(got, path),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// Whether file permissions bind this process: they do not for root (or with
/// `CAP_DAC_OVERRIDE`), so the probe writes into a read-only directory and looks.
fn permissions_bind(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("probe");
    std::fs::create_dir(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let bound = std::fs::write(probe.join("x"), b"x").is_err();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    bound
}

/// SQLite's read-only failures always map to `ReadOnly`. When file permissions bind this process
/// the real case is exercised too: a store whose file and directory are read-only fails with
/// `ReadOnly` on opening or on the first write. Under root, which bypasses permissions, only the
/// mapping can be observed honestly.
#[test]
fn a_read_only_store_reports_read_only() {
    use std::os::unix::fs::PermissionsExt;
    let path = Path::new("/nowhere/state.db");
    for code in [
        rusqlite::ffi::SQLITE_READONLY,
        rusqlite::ffi::SQLITE_CANTOPEN,
    ] {
        let e = rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
        assert!(
            matches!(map_err(path, e, None), StoreError::ReadOnly { .. }),
            "code {code}"
        );
    }

    let (dir, store) = fresh();
    drop(store);
    if !permissions_bind(dir.path()) {
        return;
    }
    let path = dir.path().join("state.db");
    let read_only = std::fs::Permissions::from_mode(0o444);
    std::fs::set_permissions(&path, read_only.clone()).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let outcome = open(&path, false).and_then(|(store, _)| {
        store.publish(&NewMessage {
            channel: "a".into(),
            body: "b".into(),
            severity: Severity::Info,
            created_at: T0,
            expires_at: T0 + HOUR,
        })
    });
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    match outcome {
        Err(StoreError::ReadOnly { path: got, .. }) => assert_eq!(got, path),
        other => panic!("expected ReadOnly, got {other:?}"),
    }
}

#[test]
fn a_long_foreign_write_lock_reports_locked() {
    let (dir, store) = fresh();
    drop(store);
    let path = dir.path().join("state.db");
    let (store, _) = open(&path, false).unwrap();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let published = store.publish(&NewMessage {
        channel: "a".into(),
        body: "b".into(),
        severity: Severity::Info,
        created_at: T0,
        expires_at: T0 + HOUR,
    });
    match published {
        Err(StoreError::Locked { path: got, .. }) => assert_eq!(got, path),
        other => panic!("expected Locked, got {other:?}"),
    }
    holder.execute_batch("ROLLBACK").unwrap();
    publish(&store, "a", Severity::Info, T0, HOUR);
    assert_eq!(count(&store, "messages"), 1);
}
