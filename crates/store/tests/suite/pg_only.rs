//! What only the PostgreSQL backend has: credentials in a URL, the change feed, a server that
//! can go away and come back.

use std::time::Duration;

use store::{
    Change, ChannelStore, MessageQuery, NewMessage, NewSchedule, NextFire, PgOptions,
    PostgresStore, Severity, StoreAdmin, StoreError, Trigger,
};

use super::{Postgres, fresh};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn message(body: &str) -> NewMessage {
    NewMessage {
        channel: "ops".into(),
        body: body.into(),
        severity: Severity::Alert,
        created_at: T0,
        expires_at: T0 + HOUR,
        target: None,
    }
}

fn everything() -> MessageQuery {
    MessageQuery {
        channel: None,
        session_id: None,
        include_acknowledged: true,
        limit: 100,
        now: T0,
        before: None,
    }
}

pub(crate) fn describe_and_errors_never_show_the_password(_: &Postgres) {
    let secret = "pw-that-must-not-leak";
    let options = PgOptions {
        connect_timeout: Duration::from_millis(500),
        ..PgOptions::default()
    };
    // Port 1 on loopback refuses at once.
    let url = format!("postgres://hooks:{secret}@127.0.0.1:1/db");
    match PostgresStore::open(&url, &options) {
        Err(e @ StoreError::Unavailable { .. }) => {
            let text = format!("{e} {e:?}");
            assert!(text.contains("postgres://hooks@127.0.0.1:1/db"), "{text}");
            assert!(!text.contains(secret), "{text}");
        }
        other => panic!("expected Unavailable, got {:?}", other.map(|(_, o)| o)),
    }
}

/// A server that answers but refuses the client (a database that does not exist, a wrong
/// password) says so, and what to fix, instead of "check the server is running".
pub(crate) fn a_refused_client_is_told_to_fix_its_settings(b: &Postgres) {
    let options = PgOptions {
        connect_timeout: Duration::from_millis(800),
        ..PgOptions::default()
    };
    let url = b.url();
    let (base, _) = url.rsplit_once('/').unwrap();
    let no_database = format!("{base}/hooks_mcp_no_such_database");
    let (scheme, rest) = url.split_once("://").unwrap();
    let (_, host) = rest.split_once('@').unwrap();
    let bad_password = format!("{scheme}://nobody:wrong@{host}");
    for (url, says) in [
        (
            no_database,
            "hooks_mcp_no_such_database\" does not exist [3D000]",
        ),
        (bad_password, "[28"),
    ] {
        match PostgresStore::open(&url, &options) {
            Err(e @ StoreError::Refused { .. }) => {
                let text = e.to_string();
                assert!(text.contains(says), "{text}");
                assert!(text.contains("HOOKS_MCP_DATABASE_URL"), "{text}");
                assert!(!text.contains("wrong"), "no password shown: {text}");
            }
            other => panic!("expected Refused, got {:?}", other.map(|(_, o)| o)),
        }
    }
}

pub(crate) fn an_open_store_describes_itself_without_the_password(b: &Postgres) {
    let store = fresh(b);
    let described = store.describe();
    assert!(described.starts_with("postgres://"), "{described}");
    let url = b.url();
    // `postgres://user:password@host...`: whatever the password is, it is not shown.
    if let Some(password) = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(creds, _)| creds.split_once(':'))
        .map(|(_, password)| password)
    {
        assert!(!described.contains(password), "{described}");
    }
}

pub(crate) fn the_change_feed_reports_publications_and_schedule_changes(b: &Postgres) {
    let store = fresh(b);
    let mut feed = store.changes().unwrap().expect("PostgreSQL pushes changes");
    assert_eq!(feed.wait(Duration::from_millis(50)).unwrap(), None);

    // Another handle (another daemon) makes the changes.
    let other = store.open_another();
    let published = other
        .publish(&message("hello"), &store::Actor::Daemon)
        .unwrap();
    let schedule = other
        .create_schedule(
            &NewSchedule {
                name: None,
                channel: "ops".into(),
                message: "tick".into(),
                severity: Severity::Info,
                ttl_seconds: 60,
                trigger: Trigger::At(T0),
                next_fire_at: T0,
                created_at: T0,
            },
            &store::Actor::Daemon,
        )
        .unwrap();
    let once = |_: &store::Schedule, _: i64| NextFire {
        next_fire_at: None,
        skipped: 0,
    };
    let fired = other.fire_due(T0, &once, &store::Actor::Daemon).unwrap();
    assert_eq!(fired.len(), 1);
    let wait = Duration::from_secs(10);
    assert_eq!(
        feed.wait(wait).unwrap(),
        Some(Change::Message(published.id))
    );
    assert_eq!(
        feed.wait(wait).unwrap(),
        Some(Change::Schedule(schedule.id))
    );
    assert_eq!(
        feed.wait(wait).unwrap(),
        Some(Change::Message(fired[0].message.id))
    );
    assert_eq!(feed.wait(Duration::from_millis(50)).unwrap(), None);

    // Clears and prunes say how many went; clearing nothing says nothing.
    other
        .clear_messages(
            &store::MessageScope::Id(published.id),
            &store::Actor::Daemon,
            T0,
        )
        .unwrap();
    assert_eq!(feed.wait(wait).unwrap(), Some(Change::Cleared(1)));
    assert_eq!(other.prune_expired(T0 + 2 * HOUR).unwrap(), 1);
    assert_eq!(feed.wait(wait).unwrap(), Some(Change::Cleared(1)));
    other
        .clear_messages(&store::MessageScope::All, &store::Actor::Daemon, T0)
        .unwrap();
    assert_eq!(feed.wait(Duration::from_millis(200)).unwrap(), None);

    // Another store (schema) in the same database does not wake this feed.
    let elsewhere = fresh(b);
    elsewhere
        .publish(&message("elsewhere"), &store::Actor::Daemon)
        .unwrap();
    assert_eq!(feed.wait(Duration::from_millis(200)).unwrap(), None);
}

use test_support::pg::{PrivateServer, server_bindir};

/// A restart of the database server: calls fail with [`StoreError::Unavailable`] while it is
/// gone, the same store works again when it is back (no reopening), and nothing acknowledged is
/// lost.
pub(crate) fn a_server_restart_fails_calls_clearly_and_loses_nothing(_: &Postgres) {
    let Some(bindir) = server_bindir() else {
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"note: no PostgreSQL server programs found (set PG_CI_BINDIR): restart test not run\n",
        );
        return;
    };
    let server = PrivateServer::start(bindir);
    let options = PgOptions {
        create: true,
        connect_timeout: Duration::from_secs(1),
        ..PgOptions::default()
    };
    let (store, _) = PostgresStore::open(&server.url(), &options).unwrap();
    let kept = store
        .publish(
            &message("acknowledged before the restart"),
            &store::Actor::Daemon,
        )
        .unwrap();
    // The server's Unix socket works as a host too (a percent-encoded directory).
    let socket_url = format!(
        "postgres://hooks@{}:{}/postgres",
        server.dir.path().display().to_string().replace('/', "%2F"),
        server.port
    );
    let (local, _) = PostgresStore::open(&socket_url, &options).unwrap();
    assert_eq!(local.read_messages(&everything()).unwrap().len(), 1);
    drop(local);

    server.down();
    for result in [
        store
            .publish(&message("while down"), &store::Actor::Daemon)
            .map(|_| ()),
        store.ping(),
    ] {
        match result {
            Err(e @ StoreError::Unavailable { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&store.describe()), "{text}");
                assert!(text.contains("unavailable"), "{text}");
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }

    server.up();
    store.ping().unwrap();
    let after = store
        .publish(&message("after the restart"), &store::Actor::Daemon)
        .unwrap();
    let bodies: Vec<String> = store
        .read_messages(&everything())
        .unwrap()
        .into_iter()
        .map(|v| v.message.body)
        .collect();
    assert_eq!(bodies, [after.body, kept.body]);
}

/// Opening takes one connection (kept for the next call) and the pool never holds more than
/// `pool_size`, however many threads call at once.
pub(crate) fn the_pool_is_bounded(b: &Postgres) {
    let store = fresh(b);
    let name = format!("pool_test_{}", std::process::id());
    let url = format!(
        "{}&application_name={name}",
        super::url_for(
            b.url(),
            store.location.spec()["postgres:".len()..]
                .split_once(' ')
                .unwrap()
                .0
        )
    );
    let connections = || {
        store.location.scalar(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{name}'"
        ))
    };
    let options = PgOptions {
        pool_size: 2,
        ..PgOptions::default()
    };
    let (bounded, _) = PostgresStore::open(&url, &options).unwrap();
    assert_eq!(connections(), 1);
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| {
                for _ in 0..20 {
                    bounded.channels(T0).unwrap();
                }
            });
        }
    });
    let held = connections();
    assert!((1..=2).contains(&held), "the pool holds {held}");
    drop(bounded);
}

/// A server with no connection slot left for the store's role: calls fail with an
/// [`StoreError::Unavailable`] that names the pool size and `max_connections`, and work again,
/// on the same store, as soon as a slot is free.
pub(crate) fn running_out_of_server_connections_is_clear_and_recovers(_: &Postgres) {
    let Some(bindir) = server_bindir() else {
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"note: no PostgreSQL server programs found (set PG_CI_BINDIR): connection limit \
              test not run\n",
        );
        return;
    };
    let server = PrivateServer::start(bindir);
    let admin_url = server.url();
    let mut admin = postgres::Client::connect(&admin_url, postgres::NoTls).unwrap();
    // A role limited to two connections (superusers ignore such limits), with a schema of its
    // own.
    admin
        .batch_execute(
            "CREATE ROLE limited LOGIN CONNECTION LIMIT 2; \
             CREATE SCHEMA limited AUTHORIZATION limited;",
        )
        .unwrap();
    let url = format!("postgres://limited@127.0.0.1:{}/postgres", server.port);
    let options = PgOptions {
        create: true,
        pool_size: 4,
        connect_timeout: Duration::from_millis(500),
        ..PgOptions::default()
    };
    let (store, _) = PostgresStore::open(&url, &options).unwrap();
    store
        .publish(&message("before"), &store::Actor::Daemon)
        .unwrap();
    // Both slots taken by others; the store's own connection goes.
    let others: Vec<postgres::Client> = (0..2)
        .map(|_| {
            let mut c = postgres::Client::connect(
                &format!("{url}?application_name=other"),
                postgres::NoTls,
            );
            if c.is_err() {
                // The store's connection still holds a slot: end it first.
                admin
                    .batch_execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE usename = 'limited' AND application_name = 'hooks-mcp'",
                    )
                    .unwrap();
                c = postgres::Client::connect(
                    &format!("{url}?application_name=other"),
                    postgres::NoTls,
                );
            }
            c.unwrap()
        })
        .collect();
    admin
        .batch_execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE usename = 'limited' AND application_name = 'hooks-mcp'",
        )
        .unwrap();
    match store.publish(&message("refused"), &store::Actor::Daemon) {
        Err(e @ StoreError::Unavailable { .. }) => {
            let text = e.to_string();
            for needle in [
                "no connection slot left",
                "HOOKS_MCP_DB_POOL_SIZE",
                "max_connections",
                "4 here",
            ] {
                assert!(text.contains(needle), "{needle}: {text}");
            }
        }
        other => panic!("expected Unavailable, got {:?}", other.map(|m| m.id)),
    }
    drop(others);
    // Slots are free again: the same store serves, nothing acknowledged was lost.
    let after = store
        .publish(&message("after"), &store::Actor::Daemon)
        .unwrap();
    let bodies: Vec<String> = store
        .read_messages(&everything())
        .unwrap()
        .into_iter()
        .map(|v| v.message.body)
        .collect();
    assert_eq!(bodies, [after.body, "before".to_owned()]);
}

/// A `search_path` that names no existing schema (`options=-c search_path=hooks` before
/// `CREATE SCHEMA hooks`) is refused with the schema to create, not a bare SQL error.
pub(crate) fn a_search_path_of_no_existing_schema_names_the_schema_to_create(b: &Postgres) {
    let schema = format!("absent_{}", std::process::id());
    let options = PgOptions {
        create: true,
        pool_size: 1,
        ..PgOptions::default()
    };
    match PostgresStore::open(&super::url_for(b.url(), &schema), &options) {
        Err(e @ StoreError::InvalidSetting { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("HOOKS_MCP_DATABASE_URL")
                    && text.contains(&format!("CREATE SCHEMA \"{schema}\"")),
                "{text}"
            );
        }
        other => panic!("expected InvalidSetting, got {:?}", other.map(|(_, o)| o)),
    }
}
