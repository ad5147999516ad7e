//! Several processes writing one store at once lose nothing and leave no torn state.
//!
//! The parent re-runs the suite's executable as child processes (selecting `child_writer` in
//! `store_suite.rs`); children find their store and worker number in the environment.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::Arc;

use store::{DeliveryPoint, MessageQuery, NewMessage, Severity, Store};

use super::{Backend, fresh};

/// The store the children write (a [`super::Location::spec`]).
pub(crate) const STORE_ENV: &str = "HOOKS_MCP_TEST_CHILD_STORE";
/// The child's worker number.
pub(crate) const WORKER_ENV: &str = "HOOKS_MCP_TEST_WORKER";
const WORKERS: usize = 4;
const PER_WORKER: usize = 200;
const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

/// Worker `w` publishes `PER_WORKER` messages on channel `w<w>` (every tenth an `info` on the
/// shared channel `all` instead), acknowledges every fourth of its own as session `s<w>`, and
/// takes its deliveries after each publication.
pub(crate) fn child_writer(store: Arc<dyn Store>, worker: &str) {
    let session = format!("s{worker}");
    for i in 0..PER_WORKER {
        let shared = i % 10 == 0;
        let message = store
            .publish(
                &NewMessage {
                    channel: if shared {
                        "all".into()
                    } else {
                        format!("w{worker}")
                    },
                    body: format!("w{worker}-{i}"),
                    severity: if shared {
                        Severity::Info
                    } else {
                        Severity::Alert
                    },
                    created_at: T0 + i as i64,
                    expires_at: T0 + HOUR,
                    target: None,
                },
                &store::Actor::Daemon,
            )
            .unwrap();
        if i % 4 == 0 {
            store
                .acknowledge(message.id, &session, T0 + i as i64, &store::Actor::Daemon)
                .unwrap();
        }
        store
            .deliver(&session, None, DeliveryPoint::Prompt, T0 + i as i64)
            .unwrap();
    }
}

pub(crate) fn concurrent_processes_lose_no_writes(b: &dyn Backend) {
    let fixture = fresh(b);

    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WORKERS)
        .map(|w| {
            Command::new(&exe)
                .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
                .env(STORE_ENV, fixture.location.spec())
                .env(WORKER_ENV, w.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (w, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "worker {w} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let store = &fixture;
    store.verify().unwrap();
    let everything = MessageQuery {
        channel: None,
        session_id: None,
        include_acknowledged: true,
        limit: u32::MAX,
        now: T0,
        before: None,
    };
    let all = store.read_messages(&everything).unwrap();
    assert_eq!(all.len(), WORKERS * PER_WORKER);
    let ids: BTreeSet<i64> = all.iter().map(|v| v.message.id).collect();
    assert_eq!(ids.len(), WORKERS * PER_WORKER, "ids are distinct");
    let bodies: BTreeSet<&str> = all.iter().map(|v| v.message.body.as_str()).collect();
    let expected: BTreeSet<String> = (0..WORKERS)
        .flat_map(|w| (0..PER_WORKER).map(move |i| format!("w{w}-{i}")))
        .collect();
    assert_eq!(bodies, expected.iter().map(String::as_str).collect());

    for w in 0..WORKERS {
        let session = format!("s{w}");
        let seen = store
            .read_messages(&MessageQuery {
                session_id: Some(session.clone()),
                ..everything.clone()
            })
            .unwrap();
        let mut acked: Vec<&str> = seen
            .iter()
            .filter(|v| v.acknowledged)
            .map(|v| v.message.body.as_str())
            .collect();
        acked.sort_unstable();
        let mut want: Vec<String> = (0..PER_WORKER)
            .step_by(4)
            .map(|i| format!("w{w}-{i}"))
            .collect();
        want.sort_unstable();
        assert_eq!(acked, want, "acknowledgements of {session}");
        // Alerts repeat until acknowledged; each shared info reaches the session exactly once,
        // whichever process published it and however the writes interleaved.
        let now = T0 + HOUR - 1;
        let late = store
            .deliver(&session, None, DeliveryPoint::Prompt, now)
            .unwrap();
        let alerts_due = seen
            .iter()
            .filter(|v| v.message.severity == Severity::Alert && !v.acknowledged)
            .count();
        assert_eq!(
            late.iter()
                .filter(|m| m.severity == Severity::Alert)
                .count(),
            alerts_due
        );
        let shared = vec!["all".to_string()];
        assert!(
            store
                .deliver(&session, Some(&shared), DeliveryPoint::Prompt, now)
                .unwrap()
                .is_empty()
        );
    }
    // Each session was delivered every message it did not acknowledge, recorded once.
    let count = |sql: &str| -> usize { store.location.scalar(sql) as usize };
    let acks_per_session = PER_WORKER.div_ceil(4);
    assert_eq!(
        count("SELECT count(*) FROM message_acks"),
        WORKERS * acks_per_session
    );
    assert_eq!(
        count("SELECT count(*) FROM message_deliveries"),
        WORKERS * (WORKERS * PER_WORKER - acks_per_session)
    );
    assert_eq!(
        count(
            "SELECT count(*) FROM message_deliveries d JOIN message_acks a \
             ON a.message_id = d.message_id AND a.session_id = d.session_id"
        ),
        0,
        "nothing acknowledged was delivered afterwards"
    );
}
