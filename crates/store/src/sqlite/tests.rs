//! Unit tests of what only the SQLite backend has: files, their permissions, corruption and
//! locks. Everything backend-independent is in the shared suite (`tests/suite/`).

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;
use tempfile::TempDir;

use super::{OpenOptions, Opened, SqliteStore, map_err};
use crate::{
    ChannelStore, EnforcementStore, Message, NewMessage, Severity, StoreAdmin, StoreError,
    StoreLocation,
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
        .publish(
            &NewMessage {
                channel: channel.into(),
                body: format!("{severity} on {channel} at {at}"),
                severity,
                created_at: at,
                expires_at: at + ttl,
                target: None,
            },
            &crate::Actor::Daemon,
        )
        .unwrap()
}

fn count(store: &SqliteStore, table: &str) -> i64 {
    store
        .lock()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

// --- Opening, migrations and verification ---------------------------------------------------

fn open(path: &Path, create: bool) -> Result<(SqliteStore, Opened), StoreError> {
    let options = OpenOptions {
        create,
        busy_timeout: Duration::from_millis(200),
    };
    SqliteStore::open(&StoreLocation::at(path), &options)
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
fn a_store_directory_that_is_a_file_is_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::write(&home, "").unwrap();
    let err = open(&home.join("state.db"), true).err().unwrap();
    let text = err.to_string();
    assert!(
        text.contains("is a file, not a directory") && text.contains("HOOKS_MCP_HOME"),
        "{text}"
    );
}

#[test]
fn a_full_disk_is_named_and_the_failed_write_leaves_nothing() {
    let (_dir, store) = fresh();
    publish(&store, "kept", Severity::Info, T0, HOUR);
    let pages: i64 = store
        .lock()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    // The file may not grow: the next page it needs is a full disk to SQLite.
    store
        .lock()
        .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
        .unwrap();
    let big = NewMessage {
        channel: "full".into(),
        body: "x".repeat(200_000),
        severity: Severity::Info,
        created_at: T0,
        expires_at: T0 + HOUR,
        target: None,
    };
    let err = store.publish(&big, &crate::Actor::Daemon).unwrap_err();
    assert!(matches!(err, StoreError::Disk { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("may be full") && text.contains("wrote nothing"),
        "{text}"
    );
    assert_eq!(count(&store, "messages"), 1, "nothing half-written");
    assert_eq!(count(&store, "audit_log"), 1, "nor its audit entry");
}

#[test]
fn a_file_of_garbage_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, [0xA5_u8; 8192]).unwrap();
    let verified = open(&path, false).and_then(|(store, _)| store.verify().map(|_| ()));
    match verified {
        Err(e @ StoreError::Corrupt { .. }) => {
            let StoreError::Corrupt { path: got, .. } = &e else {
                unreachable!()
            };
            assert_eq!(got, &path);
            // Moving the file aside without its WAL would leave the WAL to a new store.
            let text = e.to_string();
            assert!(text.contains("-wal") && text.contains("-shm"), "{text}");
        }
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
        store.publish(
            &NewMessage {
                channel: "a".into(),
                body: "b".into(),
                severity: Severity::Info,
                created_at: T0,
                expires_at: T0 + HOUR,
                target: None,
            },
            &crate::Actor::Daemon,
        )
    });
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    match outcome {
        Err(StoreError::ReadOnly { path: got, .. }) => assert_eq!(got, path),
        other => panic!("expected ReadOnly, got {other:?}"),
    }
}

fn a_message() -> NewMessage {
    NewMessage {
        channel: "a".into(),
        body: "b".into(),
        severity: Severity::Info,
        created_at: T0,
        expires_at: T0 + HOUR,
        target: None,
    }
}

/// A `-wal` or `-shm` file this user cannot write is named, not the database (which is
/// writable). A directory in its place stands for it: no user can open that for writing, root
/// included; when permissions bind this process, a read-only file is tried too.
#[test]
fn an_unwritable_wal_or_shm_file_is_named() {
    use std::os::unix::fs::PermissionsExt;
    for suffix in ["-shm", "-wal"] {
        let (dir, store) = fresh();
        publish(&store, "a", Severity::Info, T0, HOUR);
        drop(store);
        let path = dir.path().join("state.db");
        let file = dir.path().join(format!("state.db{suffix}"));
        let mut cases = vec!["directory"];
        if permissions_bind(dir.path()) {
            cases.push("read-only file");
        }
        for case in cases {
            let _ = std::fs::remove_file(&file);
            let _ = std::fs::remove_dir(&file);
            if case == "directory" {
                std::fs::create_dir(&file).unwrap();
            } else {
                std::fs::write(&file, b"").unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
            }
            let outcome = open(&path, false)
                .and_then(|(store, _)| store.publish(&a_message(), &crate::Actor::Daemon));
            match outcome {
                Err(e @ StoreError::ReadOnly { .. }) => {
                    let StoreError::ReadOnly { file: got, .. } = &e else {
                        unreachable!()
                    };
                    assert_eq!(got, &file, "{case}: {e}");
                    assert!(e.to_string().contains(&file.display().to_string()), "{e}");
                }
                other => panic!(
                    "{suffix} {case}: expected ReadOnly, got {:?}",
                    other.map(|_| ())
                ),
            }
        }
    }
}

/// Set in the child process of [`a_relative_path_starting_with_file_is_a_path_not_a_uri`].
const RELATIVE_CHILD_ENV: &str = "STORE_TEST_RELATIVE_FILE_PATH_CHILD";

/// A relative store path starting with `file:` (a `HOOKS_MCP_HOME` of `file:st`) is a
/// directory of that name, not a SQLite URI. Run in a child process in a fresh working
/// directory, as the path is relative.
#[test]
fn a_relative_path_starting_with_file_is_a_path_not_a_uri() {
    let relative = Path::new("file:st/state.db");
    if std::env::var_os(RELATIVE_CHILD_ENV).is_some() {
        let (store, opened) = open(relative, true).unwrap();
        assert_eq!(opened, Opened::Created);
        publish(&store, "a", Severity::Info, T0, HOUR);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "sqlite::tests::a_relative_path_starting_with_file_is_a_path_not_a_uri",
            "--exact",
            "--test-threads=1",
        ])
        .env(RELATIVE_CHILD_ENV, "1")
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "the child failed: {status}");
    let (store, _) = open(&dir.path().join(relative), false).unwrap();
    assert_eq!(count(&store, "messages"), 1);
    assert!(!dir.path().join("st").exists(), "no URI was followed");
}

#[test]
fn a_long_foreign_write_lock_reports_locked() {
    let (dir, store) = fresh();
    drop(store);
    let path = dir.path().join("state.db");
    let (store, _) = open(&path, false).unwrap();
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let published = store.publish(
        &NewMessage {
            channel: "a".into(),
            body: "b".into(),
            severity: Severity::Info,
            created_at: T0,
            expires_at: T0 + HOUR,
            target: None,
        },
        &crate::Actor::Daemon,
    );
    match published {
        Err(StoreError::Locked { path: got, .. }) => assert_eq!(got, path),
        other => panic!("expected Locked, got {other:?}"),
    }
    holder.execute_batch("ROLLBACK").unwrap();
    publish(&store, "a", Severity::Info, T0, HOUR);
    assert_eq!(count(&store, "messages"), 1);
}

/// `state.db` copied alone (without its WAL), as a careless backup would.
fn main_file_alone(dir: &Path) -> (TempDir, Connection) {
    let copy = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join("state.db"), copy.path().join("state.db")).unwrap();
    let conn = Connection::open(copy.path().join("state.db")).unwrap();
    (copy, conn)
}

#[test]
fn a_new_store_holds_its_schema_in_the_database_file_not_only_in_the_wal() {
    let (dir, store) = fresh();
    drop(store);
    let (_copy, alone) = main_file_alone(dir.path());
    let version: u32 = alone
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, super::SCHEMA_VERSION, "the schema is checkpointed");
    for table in super::REQUIRED_TABLES {
        let found: i64 = alone
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, 1, "table {table} is in state.db itself");
    }
}

#[test]
fn an_empty_file_given_its_schema_counts_as_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, b"").unwrap();
    let (_store, opened) = open(&path, true).unwrap();
    assert_eq!(opened, Opened::Created);
}

/// A SQLite file in rollback-journal mode, as another program would leave it.
fn foreign_file(dir: &Path, sql: &str) -> std::path::PathBuf {
    let path = dir.join("state.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&format!("PRAGMA journal_mode = DELETE; {sql}"))
        .unwrap();
    drop(conn);
    path
}

fn journal_mode(path: &Path) -> String {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn another_programs_database_is_refused_short_and_unchanged() {
    for sql in [
        "CREATE TABLE notes (x); INSERT INTO notes VALUES ('precious')",
        // One of the store's table names: migrating would fail half-way with its whole SQL.
        "CREATE TABLE messages (x); INSERT INTO messages VALUES ('precious')",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = foreign_file(dir.path(), sql);
        let before = std::fs::read(&path).unwrap();
        for create in [true, false] {
            let err = open(&path, create).err().unwrap();
            let text = err.to_string();
            assert!(matches!(err, StoreError::NotAStore { .. }), "{err:?}");
            assert!(
                text.contains("not a hooks-mcp store")
                    && text.contains(&path.display().to_string())
                    && text.contains("HOOKS_MCP_HOME")
                    && !text.contains("CREATE")
                    && text.len() < 400,
                "{text}"
            );
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was changed");
        assert_eq!(journal_mode(&path), "delete");
        assert!(!dir.path().join("state.db-wal").exists());
    }
}

#[test]
fn a_newer_store_is_refused_before_its_journal_mode_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let path = foreign_file(
        dir.path(),
        "CREATE TABLE future (x); PRAGMA user_version = 999",
    );
    let before = std::fs::read(&path).unwrap();
    for create in [true, false] {
        match open(&path, create) {
            Err(StoreError::NewerSchema { found: 999, .. }) => {}
            other => panic!("expected NewerSchema, got {:?}", other.map(|(_, o)| o)),
        }
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing was changed");
    assert_eq!(journal_mode(&path), "delete");
}

#[test]
fn a_process_that_never_creates_leaves_an_empty_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, b"").unwrap();
    match open(&path, false) {
        Err(StoreError::Missing { path: got }) => assert_eq!(got, path),
        other => panic!("expected Missing, got {:?}", other.map(|(_, o)| o)),
    }
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0, "still empty");
    // The server (which creates) fills it, in WAL mode.
    let (store, opened) = open(&path, true).unwrap();
    assert_eq!(opened, Opened::Created);
    drop(store);
    assert_eq!(journal_mode(&path), "wal");
}

#[test]
fn closing_keeps_a_short_wal_and_truncates_a_long_one() {
    let (dir, store) = fresh();
    let wal = dir.path().join("state.db-wal");
    publish(&store, "ops", Severity::Info, T0, HOUR);
    drop(store);
    let short = std::fs::metadata(&wal).unwrap().len();
    assert!(
        short > 0,
        "a short WAL is kept: closing does not checkpoint"
    );

    let (store, _) = open(&dir.path().join("state.db"), false).unwrap();
    let body = "x".repeat(3000);
    for i in 0..100 {
        store
            .publish(
                &NewMessage {
                    channel: "ops".into(),
                    body: body.clone(),
                    severity: Severity::Info,
                    created_at: T0 + i,
                    expires_at: T0 + HOUR,
                    target: None,
                },
                &crate::Actor::Daemon,
            )
            .unwrap();
    }
    assert!(std::fs::metadata(&wal).unwrap().len() >= super::WAL_TRUNCATE_BYTES);
    drop(store);
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        0,
        "a long WAL is folded back"
    );
    let (store, _) = open(&dir.path().join("state.db"), false).unwrap();
    assert_eq!(count(&store, "messages"), 101, "nothing was lost");
}

// --- Reads that must not wait ----------------------------------------------------------------

#[test]
fn a_no_wait_read_answers_beside_a_foreign_write_lock_and_a_write_refuses() {
    use crate::no_wait::try_without_waiting;
    let (dir, store) = fresh();
    publish(&store, "ops", Severity::Info, T0, HOUR);
    let expected = store.channels(T0).unwrap();
    // Another process holds the write lock with an uncommitted message.
    let foreign = Connection::open(dir.path().join("state.db")).unwrap();
    foreign.execute_batch("BEGIN IMMEDIATE").unwrap();
    foreign
        .execute(
            "INSERT INTO messages (channel, body, severity, created_at, expires_at)
             VALUES ('ops', 'uncommitted', 'info', ?1, ?2)",
            [T0, T0 + HOUR],
        )
        .unwrap();
    let read = try_without_waiting(|| store.channels(T0)).expect("a WAL read never waits");
    assert_eq!(
        read.unwrap(),
        expected,
        "it sees the committed snapshot only"
    );
    // A write would wait for that lock: it refuses (had it waited, it would have ended in
    // `Locked` after the busy timeout, a result, not a refusal).
    let write = try_without_waiting(|| {
        store.publish(
            &NewMessage {
                channel: "ops".into(),
                body: "refused".into(),
                severity: Severity::Info,
                created_at: T0,
                expires_at: T0 + HOUR,
                target: None,
            },
            &crate::Actor::Daemon,
        )
    });
    assert!(write.is_none());
    foreign.execute_batch("ROLLBACK").unwrap();
    assert_eq!(count(&store, "messages"), 1, "neither message was written");
    // Outside the mode, the same calls behave as ever.
    assert!(try_without_waiting(|| store.ping()).is_none());
    store.ping().unwrap();
}

#[test]
fn a_no_wait_read_refuses_when_the_reader_is_busy() {
    use crate::no_wait::try_without_waiting;
    let (_dir, store) = fresh();
    publish(&store, "ops", Severity::Info, T0, HOUR);
    // A read nested in a read finds the reader connection in use: it refuses rather than
    // waiting for it (on an async thread that wait would never end).
    let nested = try_without_waiting(|| {
        store.read(|_| {
            let inner = store.channels(T0);
            assert!(matches!(inner, Err(StoreError::WouldWait)), "{inner:?}");
            Ok(())
        })
    });
    assert!(nested.is_none());
    // The reader is free again afterwards.
    let again = try_without_waiting(|| store.channels(T0)).unwrap().unwrap();
    assert_eq!(again.len(), 1);
}

#[test]
fn the_change_version_moves_on_every_commit_and_only_then() {
    use crate::StoreAdmin;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let store = SqliteStore::create(&path).unwrap();
    let other = SqliteStore::create(&path).unwrap();
    let first = store.change_version().unwrap().unwrap();
    assert_eq!(
        store.change_version().unwrap(),
        Some(first),
        "no commit, no change"
    );
    let message = crate::NewMessage {
        channel: "c".into(),
        body: "b".into(),
        severity: crate::Severity::Info,
        created_at: 1,
        expires_at: i64::MAX,
        target: None,
    };
    crate::ChannelStore::publish(&store, &message, &crate::Actor::Daemon).unwrap();
    let second = store.change_version().unwrap().unwrap();
    assert_ne!(second, first, "this process's own commit");
    crate::ChannelStore::publish(&other, &message, &crate::Actor::Daemon).unwrap();
    assert_ne!(
        store.change_version().unwrap().unwrap(),
        second,
        "another connection's commit"
    );
}

// --- One transaction per unit of work ------------------------------------------------------

#[test]
fn a_write_unit_commits_once_and_a_failing_call_undoes_only_itself() {
    let (dir, store) = fresh();
    let message = publish(&store, "a", Severity::Info, T0, HOUR);
    let other = Connection::open(dir.path().join("state.db")).unwrap();
    let mut seen_outside = None;
    let mut missing = None;
    store
        .in_one_transaction(true, &mut || {
            assert_eq!(store.count_tool_call("s", T0).unwrap(), 1);
            // A failing write (an unknown message) inside the unit: its own error, nothing kept.
            missing = Some(store.acknowledge(message.id + 1, "s", T0, &crate::Actor::Daemon));
            assert_eq!(store.count_tool_call("s", T0).unwrap(), 2);
            store
                .acknowledge(message.id, "s", T0, &crate::Actor::Daemon)
                .unwrap();
            // Another connection sees none of it before the unit commits.
            seen_outside = Some(
                other
                    .query_row("SELECT count(*) FROM session_counters", [], |r| {
                        r.get::<_, i64>(0)
                    })
                    .unwrap(),
            );
        })
        .unwrap();
    assert!(
        matches!(missing, Some(Err(StoreError::NotFound { .. }))),
        "{missing:?}"
    );
    assert_eq!(seen_outside, Some(0));
    assert_eq!(store.tool_calls("s").unwrap(), 2);
    assert_eq!(count(&store, "message_acks"), 1);
    assert!(store.lock().is_autocommit());
}

#[test]
fn a_read_unit_ends_at_its_first_write_and_the_write_commits() {
    let (_dir, store) = fresh();
    let mut calls = Vec::new();
    store
        .in_one_transaction(false, &mut || {
            calls.push(store.tool_calls("s").unwrap());
            calls.push(store.count_tool_call("s", T0).unwrap());
            // After the write the calls run on their own again, and see it.
            calls.push(store.tool_calls("s").unwrap());
        })
        .unwrap();
    assert_eq!(calls, [0, 1, 1]);
    assert_eq!(store.tool_calls("s").unwrap(), 1);
    assert!(store.lock().is_autocommit());
}

#[test]
fn a_unit_that_cannot_take_the_write_lock_runs_its_calls_one_by_one() {
    let (dir, store) = fresh();
    drop(store);
    let path = dir.path().join("state.db");
    let options = OpenOptions {
        create: false,
        busy_timeout: Duration::from_millis(50),
    };
    let (store, _) = SqliteStore::open(&StoreLocation::at(&path), &options).unwrap();
    publish(&store, "a", Severity::Info, T0, HOUR);
    let holder = Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (mut read, mut write) = (None, None);
    store
        .in_one_transaction(true, &mut || {
            read = Some(store.channels(T0).map(|c| c.len()));
            write = Some(store.count_tool_call("s", T0));
        })
        .unwrap();
    // The read answers beside the foreign writer; the write reports the lock, as outside a unit.
    assert!(matches!(read, Some(Ok(1))), "{read:?}");
    assert!(
        matches!(write, Some(Err(StoreError::Locked { .. }))),
        "{write:?}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    assert_eq!(store.count_tool_call("s", T0).unwrap(), 1);
}

#[test]
fn a_panic_inside_a_unit_leaves_the_connection_usable() {
    let (_dir, store) = fresh();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = store.in_one_transaction(true, &mut || {
            store.count_tool_call("s", T0).unwrap();
            panic!("a caller's bug");
        });
    }));
    assert!(outcome.is_err());
    assert!(store.lock().is_autocommit());
    // The unit's write was rolled back, and the store works as before.
    assert_eq!(store.tool_calls("s").unwrap(), 0);
    assert_eq!(store.count_tool_call("s", T0).unwrap(), 1);
}

#[test]
fn another_thread_waits_for_a_unit_to_end() {
    let (_dir, store) = fresh();
    let store = std::sync::Arc::new(store);
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (finish_tx, finish_rx) = std::sync::mpsc::channel::<()>();
    let unit = {
        let store = store.clone();
        std::thread::spawn(move || {
            // The unit counts a call, then fails (a panic), so its transaction rolls back.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = store.in_one_transaction(true, &mut || {
                    store.count_tool_call("s", T0).unwrap();
                    started_tx.send(()).unwrap();
                    finish_rx.recv().unwrap();
                    panic!("the unit fails");
                });
            }))
            .is_err()
        })
    };
    started_rx.recv().unwrap();
    let other = {
        let store = store.clone();
        std::thread::spawn(move || store.count_tool_call("s", T0).unwrap())
    };
    // Give the other thread time to reach the store while the unit is open.
    std::thread::sleep(Duration::from_millis(100));
    finish_tx.send(()).unwrap();
    assert!(unit.join().unwrap());
    // Had the other thread's write joined the unit's transaction, it would have counted 2 and
    // been rolled back with it; it waited instead, and counted alone after the rollback.
    assert_eq!(other.join().unwrap(), 1);
    assert_eq!(store.tool_calls("s").unwrap(), 1);
}

#[test]
fn closing_at_exit_truncates_a_long_wal_as_closing_does() {
    let (dir, store) = fresh();
    let wal = dir.path().join("state.db-wal");
    let body = "x".repeat(3000);
    for i in 0..100 {
        store
            .publish(
                &NewMessage {
                    channel: "ops".into(),
                    body: body.clone(),
                    severity: Severity::Info,
                    created_at: T0 + i,
                    expires_at: T0 + HOUR,
                    target: None,
                },
                &crate::Actor::Daemon,
            )
            .unwrap();
    }
    assert!(std::fs::metadata(&wal).unwrap().len() >= super::WAL_TRUNCATE_BYTES);
    crate::StoreHandle(std::sync::Arc::new(store)).close_at_exit();
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        0,
        "a long WAL is folded back before the exit"
    );
    let (store, _) = open(&dir.path().join("state.db"), false).unwrap();
    assert_eq!(count(&store, "messages"), 100, "nothing was lost");
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn the_change_feed_wakes_on_another_handles_commit_and_not_on_a_checkpoint() {
    let (dir, store) = fresh();
    let mut feed = store
        .changes()
        .unwrap()
        .expect("SQLite on Linux watches its files");
    // Quiet: the wait runs out.
    assert_eq!(feed.wait(Duration::from_millis(50)).unwrap(), None);
    let (other, _) = open(&dir.path().join("state.db"), false).unwrap();
    let published = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        publish(&other, "ops", Severity::Alert, T0, HOUR)
    });
    let started = std::time::Instant::now();
    assert_eq!(
        feed.wait(Duration::from_secs(10)).unwrap(),
        Some(crate::Change::Written)
    );
    // Heard at the commit, not when the wait ran out.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    published.join().unwrap();
    // Whatever the commit's other writes queued, and a passive checkpoint (the kind SQLite
    // runs by itself as the WAL grows) writes the database file with no new data: neither is
    // reported as a change.
    while feed.wait(Duration::from_millis(50)).unwrap().is_some() {}
    let raw = Connection::open(dir.path().join("state.db")).unwrap();
    raw.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        .unwrap();
    assert_eq!(feed.wait(Duration::from_millis(200)).unwrap(), None);
    // The process's own handle commits too.
    publish(&store, "ops", Severity::Info, T0, HOUR);
    assert_eq!(
        feed.wait(Duration::from_secs(10)).unwrap(),
        Some(crate::Change::Written)
    );
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_feed_that_cannot_watch_says_where() {
    let (dir, store) = fresh();
    drop(store);
    let gone = dir.path().join("gone").join("state.db");
    let Err(e) = super::watch::FileFeed::open(&gone) else {
        panic!("a missing directory cannot be watched");
    };
    let text = e.to_string();
    assert!(text.contains("gone"), "{text}");
    assert!(matches!(e, StoreError::Io { .. }), "{e:?}");
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_feed_whose_database_is_replaced_says_so() {
    // A database replaced by a rename: the feed's connection reads the old file, so the
    // feed ends and its caller reopens it.
    let (dir, store) = fresh();
    let mut feed = store.changes().unwrap().expect("a watch");
    let replacement = dir.path().join("replacement.db");
    std::fs::copy(dir.path().join("state.db"), &replacement).unwrap();
    std::fs::rename(&replacement, dir.path().join("state.db")).unwrap();
    let e = feed.wait(Duration::from_secs(10)).unwrap_err();
    assert!(matches!(e, StoreError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("replaced"), "{e}");
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn a_feed_waits_without_a_deadline_when_the_timeout_is_endless() {
    let (dir, store) = fresh();
    let mut feed = store.changes().unwrap().expect("a watch");
    let (other, _) = open(&dir.path().join("state.db"), false).unwrap();
    let published = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        publish(&other, "ops", Severity::Alert, T0, HOUR)
    });
    // Past what an instant can hold: no panic, and the commit still wakes it.
    assert_eq!(
        feed.wait(Duration::MAX).unwrap(),
        Some(crate::Change::Written)
    );
    published.join().unwrap();
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[test]
fn the_change_feed_follows_a_symbolic_link_and_ignores_other_files() {
    let (dir, store) = fresh();
    drop(store);
    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("linked.db");
    std::os::unix::fs::symlink(dir.path().join("state.db"), &link).unwrap();
    let (through_link, _) = open(&link, false).unwrap();
    let mut feed = through_link.changes().unwrap().expect("a watch");
    // A commit, then a checkpoint: a write with no new commit, which the feed looks at again
    // for a while; meanwhile writes to another file of the directory, many and fast, do not
    // wake the caller.
    publish(&through_link, "ops", Severity::Info, T0, HOUR);
    assert_eq!(
        feed.wait(Duration::from_secs(10)).unwrap(),
        Some(crate::Change::Written)
    );
    let raw = Connection::open(dir.path().join("state.db")).unwrap();
    raw.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
        .unwrap();
    let noise = dir.path().join("noise.log");
    let writer = std::thread::spawn(move || {
        for i in 0..400 {
            std::fs::write(&noise, format!("{i}")).unwrap();
            std::thread::sleep(Duration::from_micros(200));
        }
    });
    assert_eq!(feed.wait(Duration::from_millis(150)).unwrap(), None);
    writer.join().unwrap();
    // A commit through the real path is heard through the link.
    let (direct, _) = open(&dir.path().join("state.db"), false).unwrap();
    publish(&direct, "ops", Severity::Alert, T0, HOUR);
    assert_eq!(
        feed.wait(Duration::from_secs(10)).unwrap(),
        Some(crate::Change::Written)
    );
}
