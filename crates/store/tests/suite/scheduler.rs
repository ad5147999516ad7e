//! The scheduler: creation, cancellation, and firing exactly once per occurrence, also when
//! several processes fire the same schedules at the same moment.
//!
//! The cross-process test re-runs the suite's executable as child processes (selecting
//! `child_fire_due` in `store_suite.rs`); children find the store and a start signal in the
//! environment.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use store::{
    Millis, NewSchedule, NextFire, Schedule, ScheduleStatus, Severity, Store, StoreError, Trigger,
};

use super::{Backend, fresh};

/// The store the children fire on (a [`super::Location::spec`]).
pub(crate) const STORE_ENV: &str = "HOOKS_MCP_TEST_SCHEDULER_STORE";
/// The file whose appearance starts the children.
pub(crate) const GO_ENV: &str = "HOOKS_MCP_TEST_SCHEDULER_GO";
const CHILDREN: usize = 4;
const SCHEDULES: usize = 200;
const ROUNDS: usize = 5;
const T0: Millis = 1_800_000_000_000;
const MINUTE: Millis = 60_000;

/// A minimal plan (the real one, with cron, lives in the scheduler tools): one-shots complete,
/// intervals move to the first grid point after `now` and count what they pass.
fn plan(schedule: &Schedule, now: Millis) -> NextFire {
    match schedule.trigger {
        Trigger::Every(s) => {
            let period = i64::from(s) * 1000;
            let fired = schedule.next_fire_at.unwrap();
            let late = (now - fired) / period;
            NextFire {
                next_fire_at: Some(fired + (late + 1) * period),
                skipped: late as u64,
            }
        }
        _ => NextFire {
            next_fire_at: None,
            skipped: 0,
        },
    }
}

fn new_schedule(body: &str, trigger: Trigger, next_fire_at: Millis) -> NewSchedule {
    NewSchedule {
        name: None,
        channel: "ops".into(),
        message: body.into(),
        severity: Severity::Alert,
        ttl_seconds: 600,
        trigger,
        next_fire_at,
        created_at: T0 - 10 * MINUTE,
    }
}

pub(crate) fn create_list_and_cancel(b: &dyn Backend) {
    let store = fresh(b);
    let mut named = new_schedule("standup", Trigger::Cron("0 9 * * 1-5".into()), T0);
    named.name = Some("standup".into());
    let a = store
        .create_schedule(&named, &store::Actor::Daemon)
        .unwrap();
    let b = store
        .create_schedule(
            &new_schedule("tick", Trigger::Every(60), T0),
            &store::Actor::Daemon,
        )
        .unwrap();
    assert_eq!(store.schedules().unwrap(), vec![a.clone(), b.clone()]);
    assert_eq!(a.trigger, Trigger::Cron("0 9 * * 1-5".into()));
    assert_eq!(a.status, ScheduleStatus::Active);

    let cancelled = store
        .cancel_schedule(a.id, T0, &store::Actor::Daemon)
        .unwrap();
    assert_eq!(cancelled.status, ScheduleStatus::Cancelled);
    assert_eq!(cancelled.next_fire_at, None);
    assert_eq!(store.schedules().unwrap()[0], cancelled);

    match store.cancel_schedule(a.id, T0, &store::Actor::Daemon) {
        Err(StoreError::Conflict(msg)) => assert!(msg.contains("already cancelled"), "{msg}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(matches!(
        store.cancel_schedule(9999, T0, &store::Actor::Daemon),
        Err(StoreError::NotFound { .. })
    ));
    // A cancelled schedule never fires; the other one does.
    let firings = store.fire_due(T0, &plan, &store::Actor::Daemon).unwrap();
    assert_eq!(
        firings.iter().map(|f| f.schedule_id).collect::<Vec<_>>(),
        vec![b.id]
    );
}

pub(crate) fn fire_due_publishes_and_advances_once(b: &dyn Backend) {
    let store = fresh(b);
    let once = store
        .create_schedule(
            &new_schedule("once", Trigger::At(T0), T0),
            &store::Actor::Daemon,
        )
        .unwrap();
    let every = store
        .create_schedule(
            &new_schedule("every", Trigger::Every(60), T0),
            &store::Actor::Daemon,
        )
        .unwrap();
    let later = store
        .create_schedule(
            &new_schedule("later", Trigger::At(T0 + 1), T0 + 1),
            &store::Actor::Daemon,
        )
        .unwrap();

    assert!(
        store
            .fire_due(T0 - 1, &plan, &store::Actor::Daemon)
            .unwrap()
            .is_empty(),
        "nothing is due yet"
    );
    let firings = store.fire_due(T0, &plan, &store::Actor::Daemon).unwrap();
    assert_eq!(firings.len(), 2);
    let first = &firings[0];
    assert_eq!(
        (first.schedule_id, first.scheduled_for, first.skipped),
        (once.id, T0, 0)
    );
    assert_eq!(first.message.body, "once");
    assert_eq!(first.message.channel, "ops");
    assert_eq!(first.message.severity, Severity::Alert);
    assert_eq!(
        (first.message.created_at, first.message.expires_at),
        (T0, T0 + 600_000)
    );
    assert!(
        store
            .fire_due(T0, &plan, &store::Actor::Daemon)
            .unwrap()
            .is_empty(),
        "the same instant fires nothing"
    );

    let all = store.schedules().unwrap();
    assert_eq!(all[0].status, ScheduleStatus::Completed);
    assert_eq!(
        (all[0].next_fire_at, all[0].last_fired_at, all[0].fire_count),
        (None, Some(T0), 1)
    );
    assert_eq!(all[1].status, ScheduleStatus::Active);
    assert_eq!(all[1].next_fire_at, Some(T0 + MINUTE));
    assert_eq!(all[2].id, later.id);
    assert_eq!(all[2].fire_count, 0);

    // Down for 3.5 periods: the interval fires once and records the three it skipped.
    let late = T0 + MINUTE + 7 * MINUTE / 2;
    let firings = store.fire_due(late, &plan, &store::Actor::Daemon).unwrap();
    let interval = firings.iter().find(|f| f.schedule_id == every.id).unwrap();
    assert_eq!((interval.scheduled_for, interval.skipped), (T0 + MINUTE, 3));
    let again = store
        .schedules()
        .unwrap()
        .into_iter()
        .find(|s| s.id == every.id)
        .unwrap();
    assert_eq!((again.fire_count, again.skipped_count), (2, 3));
    assert_eq!(again.next_fire_at, Some(T0 + 5 * MINUTE));

    let (messages, firings, linked) = (
        store.count("messages"),
        store.count("schedule_firings"),
        store.location.scalar(
            "SELECT count(*) FROM schedule_firings f JOIN messages m ON m.id = f.message_id",
        ),
    );
    assert_eq!((messages, firings, linked), (4, 4, 4));

    // The firings, newest first, of all schedules or of one.
    let recent = store.recent_firings(None, 10).unwrap();
    assert_eq!(recent.len(), 4);
    assert!(recent.windows(2).all(|w| w[0].fired_at >= w[1].fired_at));
    assert_eq!(recent[0].fired_at, late);
    let of_interval = store.recent_firings(Some(every.id), 10).unwrap();
    assert_eq!(
        of_interval
            .iter()
            .map(|f| (f.scheduled_for, f.skipped))
            .collect::<Vec<_>>(),
        [(T0 + MINUTE, 3), (T0, 0)]
    );
    assert!(of_interval.iter().all(|f| f.message_id.is_some()));
    assert_eq!(store.recent_firings(None, 1).unwrap().len(), 1);
}

pub(crate) fn a_recorded_occurrence_is_never_published_again(b: &dyn Backend) {
    let store = fresh(b);
    let s = store
        .create_schedule(
            &new_schedule("stuck", Trigger::Every(60), T0),
            &store::Actor::Daemon,
        )
        .unwrap();
    // A faulty plan that keeps the fired occurrence due: the firing row still refuses it.
    let stuck = |_: &Schedule, _: Millis| NextFire {
        next_fire_at: Some(T0),
        skipped: 0,
    };
    assert_eq!(
        store
            .fire_due(T0, &stuck, &store::Actor::Daemon)
            .unwrap()
            .len(),
        1
    );
    assert!(
        store
            .fire_due(T0, &stuck, &store::Actor::Daemon)
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .fire_due(T0 + MINUTE, &stuck, &store::Actor::Daemon)
            .unwrap()
            .is_empty()
    );
    let after = &store.schedules().unwrap()[0];
    assert_eq!((after.id, after.fire_count), (s.id, 1));
}

/// The child's part of [`fire_due_is_exactly_once_across_processes`]: waits for the start
/// signal, fires at `T0` a few times and prints how many firings it made.
#[allow(clippy::print_stdout)] // The parent reads the count from the child's stdout.
pub(crate) fn child_fire_due(store: Arc<dyn Store>, go: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !go.exists() {
        assert!(Instant::now() < deadline, "no start signal");
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut fired = 0;
    for _ in 0..ROUNDS {
        fired += store
            .fire_due(T0, &plan, &store::Actor::Daemon)
            .unwrap()
            .len();
    }
    println!("FIRED {fired}");
}

pub(crate) fn fire_due_is_exactly_once_across_processes(b: &dyn Backend) {
    let store = fresh(b);
    for i in 0..SCHEDULES {
        let due = T0 - 1000 - i as Millis;
        let trigger = if i % 2 == 0 {
            Trigger::At(due)
        } else {
            Trigger::Every(60)
        };
        store
            .create_schedule(
                &new_schedule(&format!("s{i}"), trigger, due),
                &store::Actor::Daemon,
            )
            .unwrap();
    }

    let signals = tempfile::tempdir().unwrap();
    let go = signals.path().join("go");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..CHILDREN)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "child_fire_due",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(STORE_ENV, store.location.spec())
                .env(GO_ENV, &go)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::fs::write(&go, b"go").unwrap();
    let mut total = 0;
    for (n, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child {n} failed: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The harness prints `test child_fire_due ... ` on the same line first.
        let count = stdout.split("FIRED ").nth(1).unwrap_or_else(|| {
            panic!("child {n} printed no count: {stdout}");
        });
        let digits: String = count.chars().take_while(char::is_ascii_digit).collect();
        total += digits.parse::<usize>().unwrap();
    }
    assert_eq!(total, SCHEDULES, "firings across all children");

    let schedules = store.schedules().unwrap();
    assert_eq!(schedules.len(), SCHEDULES);
    for (i, s) in schedules.iter().enumerate() {
        let body = format!("s{i}");
        assert_eq!(
            store.location.scalar(&format!(
                "SELECT count(*) FROM messages WHERE body = '{body}'"
            )),
            1,
            "{body}"
        );
        assert_eq!(
            store.location.scalar(&format!(
                "SELECT count(*) FROM schedule_firings WHERE schedule_id = {}",
                s.id
            )),
            1,
            "{body}"
        );
        assert_eq!(s.fire_count, 1, "{body}");
        match s.trigger {
            Trigger::At(_) => assert_eq!(s.status, ScheduleStatus::Completed),
            _ => assert!(s.next_fire_at.unwrap() > T0, "{body} advanced past now"),
        }
    }
}
