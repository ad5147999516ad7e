//! Three daemons sharing one PostgreSQL database: every schedule fires exactly once across the
//! fleet, a broadcast published through one daemon is read through the others, and a database
//! restart turns `/health?level=db` to 503 and back to 200 without restarting a daemon, losing
//! nothing that was acknowledged.
//!
//! With PostgreSQL's server programs at hand (`initdb`, `pg_ctl`), the test runs a server of
//! its own, so that it can restart it (whether `HOOKS_MCP_TEST_DATABASE_URL` is set or not);
//! otherwise it uses the server `HOOKS_MCP_TEST_DATABASE_URL` names (CI sets it) and leaves the
//! restart out; with neither it is skipped with a note. Either way the store lives in a fresh
//! schema.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use store::{
    NewSchedule, PgOptions, PostgresStore, ScheduleStatus, ScheduleStore, Severity, Trigger,
};

use test_support::pg::{self, Database};

use crate::support::{self, Daemon, call, http, mcp_request, mcp_session};

/// One-shot schedules the fleet fires.
const SCHEDULES: usize = 1000;
/// How long anything here is waited for.
const DEADLINE: Duration = Duration::from_secs(30);

fn note(text: &str) {
    // Straight to stderr: the test harness captures `eprintln!`.
    let _ = writeln!(std::io::stderr(), "note: {text}");
}

fn now_ms() -> i64 {
    server_full::now_ms()
}

/// Polls `check` every 50 ms until it returns `Some`, or panics with `what` at the deadline.
fn wait<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_daemons_share_one_postgres_database() {
    let test = "fleet::three_daemons_share_one_postgres_database";
    // In a daemon child this runs the daemon; nothing below may run there.
    support::child_entry();
    let Some(db) = Database::new("fleet") else {
        let _ = std::io::stderr().write_all(
            pg::no_server_note(
                "the PostgreSQL fleet test (fleet::three_daemons_share_one_postgres_database) was",
            )
            .as_bytes(),
        );
        return;
    };
    let url = db.url();
    let options = PgOptions {
        create: true,
        pool_size: 2,
        ..PgOptions::default()
    };
    let (store, _) = PostgresStore::open(&url, &options).unwrap();

    // The periodic tick is ten minutes (its first one runs at start): every firing below comes
    // from a change notification or the timer it set.
    let env = [
        ("HOOKS_MCP_DATABASE_URL", url.as_str()),
        ("HOOKS_MCP_SCHEDULER_TICK_MS", "600000"),
        ("HOOKS_MCP_DB_POOL_SIZE", "4"),
        ("HOOKS_MCP_DB_CONNECT_TIMEOUT_MS", "1000"),
        (
            "HOOKS_MCP_LOG",
            "info,rmcp=warn,server_full::store_changes=debug",
        ),
    ];
    let homes: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let daemons: Vec<Daemon> = homes
        .iter()
        .map(|home| Daemon::start(test, home.path(), &env))
        .collect();
    for daemon in &daemons {
        daemon.wait_ready();
    }

    // (a) 1,000 one-shot schedules due one to two seconds from now, created behind the daemons'
    // backs: each fires exactly once across the fleet.
    let created_at = now_ms();
    for i in 0..SCHEDULES {
        let at = created_at + 1_000 + i64::try_from(i).unwrap();
        store
            .create_schedule(
                &NewSchedule {
                    name: None,
                    channel: "fleet".into(),
                    message: format!("fleet-{i}"),
                    severity: Severity::Info,
                    ttl_seconds: 3600,
                    trigger: Trigger::At(at),
                    next_fire_at: at,
                    created_at,
                },
                &store::Actor::Daemon,
            )
            .unwrap();
    }
    let total = i64::try_from(SCHEDULES).unwrap();
    wait("every schedule fired", || {
        (db.scalar("SELECT count(*) FROM schedule_firings") >= total).then_some(())
    });
    assert_eq!(
        db.row(
            "SELECT count(*), count(DISTINCT schedule_id), count(DISTINCT message_id) \
             FROM schedule_firings"
        ),
        [total; 3],
        "one firing and one message per schedule"
    );
    assert_eq!(
        db.row("SELECT count(*), count(DISTINCT body) FROM messages WHERE channel = 'fleet'"),
        [total; 2],
        "each schedule's message published once"
    );
    let schedules = store.schedules().unwrap();
    assert_eq!(schedules.len(), SCHEDULES);
    for s in &schedules {
        assert_eq!(
            (s.status, s.fire_count),
            (ScheduleStatus::Completed, 1),
            "{s:?}"
        );
    }
    assert_eq!(schedules.iter().map(|s| s.fire_count).sum::<u64>(), 1000);
    // The daemons' own counters add up to the same (each counts what it fired, once its
    // transaction returned).
    let fired: Vec<u64> = wait("the daemons' firing counters", || {
        let fired: Vec<u64> = daemons
            .iter()
            .map(|d| {
                let health = http(d.addr, "GET", "/health?level=full", &[], "").json();
                health["scheduler"]["fired"].as_u64().unwrap()
            })
            .collect();
        (fired.iter().sum::<u64>() >= 1000).then_some(fired)
    });
    assert_eq!(fired.iter().sum::<u64>(), 1000, "{fired:?}");
    note(&format!("schedules fired per daemon: {fired:?}"));
    for daemon in &daemons {
        let log = daemon.log.text();
        assert!(log.contains("change received: schedule"), "{log}");
        assert!(log.contains("change received: broadcast"), "{log}");
    }

    // (b) A broadcast published through daemon 1 is read through daemons 2 and 3.
    let sessions: Vec<String> = daemons.iter().map(|d| mcp_session(d.addr, &[])).collect();
    let tool = |n: usize, name: &str, args: Value| -> Value {
        let reply = mcp_request(daemons[n].addr, &sessions[n], &[], &call(9, name, args));
        reply["result"].clone()
    };
    let publish = |n: usize, channel: &str, message: &str| -> i64 {
        let result = tool(
            n,
            "channel_publish",
            json!({ "channel": channel, "message": message, "severity": "alert" }),
        );
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"]["id"].as_i64().unwrap()
    };
    let read = |n: usize, channel: &str| -> Vec<(i64, String)> {
        let result = tool(n, "channel_read", json!({ "channel": channel }));
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["id"].as_i64().unwrap(),
                    m["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let kept = publish(0, "fleet-ops", "published before the restart");
    for n in [1, 2] {
        assert_eq!(
            read(n, "fleet-ops"),
            [(kept, "published before the restart".to_owned())],
            "daemon {}",
            n + 1
        );
    }

    // (c) The database restarts under the running daemons.
    let Some(server) = db.server() else {
        note(
            "no PostgreSQL server programs found (set PG_CI_BINDIR): the fleet test's \
             database restart was not run",
        );
        return;
    };
    let db_health = |n: usize| http(daemons[n].addr, "GET", "/health?level=db", &[], "");
    server.down();
    for n in 0..3 {
        let down = wait("db health 503 while the database is down", || {
            let reply = db_health(n);
            (reply.status == 503).then_some(reply)
        });
        let body = down.json();
        assert_eq!(body["db"]["reachable"], false, "{body}");
        assert!(
            body["db"]["error"]
                .as_str()
                .unwrap()
                .contains("unavailable"),
            "{body}"
        );
    }
    let refused = tool(
        1,
        "channel_publish",
        json!({ "channel": "x", "message": "y" }),
    );
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.to_string().contains("unavailable"), "{refused}");

    server.up();
    for n in 0..3 {
        wait("db health 200 once the database is back", || {
            (db_health(n).status == 200).then_some(())
        });
    }
    // Nothing acknowledged was lost, and new publications work, through every daemon.
    let after = publish(2, "fleet-ops", "published after the restart");
    for n in 0..3 {
        assert_eq!(
            read(n, "fleet-ops"),
            [
                (after, "published after the restart".to_owned()),
                (kept, "published before the restart".to_owned())
            ],
            "daemon {}",
            n + 1
        );
    }
    // Each daemon listens again, and a schedule created now still fires without the tick.
    for daemon in &daemons {
        assert!(
            daemon.log.wait_for("change feed restored").is_some(),
            "{}",
            daemon.log.text()
        );
    }
    let at = store::to_rfc3339(now_ms() + 500);
    let created = tool(
        1,
        "schedule_create",
        json!({ "channel": "fleet-after", "message": "after", "at": at }),
    );
    assert_eq!(created["isError"], false, "{created}");
    wait("the schedule created after the restart fired", || {
        (db.scalar("SELECT count(*) FROM messages WHERE channel = 'fleet-after'") == 1)
            .then_some(())
    });
}

/// Raw reads of the fleet's store (in its schema), for checks the tools do not offer.
trait Rows {
    /// The integers of the one row `sql` returns, in the store's schema.
    fn row(&self, sql: &str) -> Vec<i64>;
    /// The one integer `sql` returns, in the store's schema.
    fn scalar(&self, sql: &str) -> i64 {
        self.row(sql)[0]
    }
}

impl Rows for Database {
    fn row(&self, sql: &str) -> Vec<i64> {
        let row = self.schema_client().query_one(sql, &[]).unwrap();
        (0..row.len()).map(|i| row.get(i)).collect()
    }
}
