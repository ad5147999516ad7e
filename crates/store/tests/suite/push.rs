//! Pushing into a session: the urgent messages after a cursor (`PushStore::urgent_after`).

use store::{Message, NewMessage, PushQuery, Severity};

use super::{Backend, Fixture, fresh};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn publish(store: &Fixture, channel: &str, severity: Severity, at: i64, ttl: i64) -> Message {
    publish_to(store, channel, severity, at, ttl, None)
}

fn publish_to(
    store: &Fixture,
    channel: &str,
    severity: Severity,
    at: i64,
    ttl: i64,
    target: Option<&str>,
) -> Message {
    store
        .publish(
            &NewMessage {
                channel: channel.into(),
                body: format!("{severity} on {channel} at {at}"),
                severity,
                created_at: at,
                expires_at: at + ttl,
                target: target.map(str::to_owned),
            },
            &store::Actor::Daemon,
        )
        .unwrap()
}

fn query<'a>(channels: Option<&'a [String]>, since: i64, after_id: i64) -> PushQuery<'a> {
    PushQuery {
        session_id: "s1",
        channels,
        since,
        after_id,
        now: T0 + 10,
        limit: 20,
    }
}

fn ids(store: &Fixture, q: &PushQuery<'_>) -> Vec<i64> {
    store
        .urgent_after(q)
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect()
}

pub(crate) fn only_new_unacknowledged_urgent_messages_are_pushed_in_id_order(b: &dyn Backend) {
    let store = fresh(b);
    let before = publish(&store, "ops", Severity::Alert, T0 - 5, HOUR);
    let info = publish(&store, "ops", Severity::Info, T0, HOUR);
    let alert = publish(&store, "ops", Severity::Alert, T0, HOUR);
    let critical = publish(&store, "ci", Severity::Critical, T0 + 1, HOUR);
    let expired = publish(&store, "ops", Severity::Critical, T0, 5);
    let acked = publish(&store, "ops", Severity::Alert, T0 + 2, HOUR);
    store
        .acknowledge(acked.id, "s1", T0 + 3, &store::Actor::Session("s1".into()))
        .unwrap();
    let _ = (info, expired);
    // Published before `since`, info, expired or acknowledged: never.
    assert_eq!(ids(&store, &query(None, T0, 0)), [alert.id, critical.id]);
    assert_eq!(
        ids(&store, &query(None, T0 - 10, 0)),
        [before.id, alert.id, critical.id]
    );
    // After the cursor only.
    assert_eq!(ids(&store, &query(None, T0, alert.id)), [critical.id]);
    assert!(ids(&store, &query(None, T0, critical.id)).is_empty());
    // Another session acknowledged nothing.
    let mut other = query(None, T0, 0);
    other.session_id = "s2";
    assert_eq!(ids(&store, &other), [alert.id, critical.id, acked.id]);
    // The limit keeps the oldest.
    let mut one = query(None, T0, 0);
    one.limit = 1;
    assert_eq!(ids(&store, &one), [alert.id]);
    let read = store.urgent_after(&one).unwrap();
    assert_eq!(read[0], alert);
}

pub(crate) fn pushes_follow_the_channel_list(b: &dyn Backend) {
    let store = fresh(b);
    let ops = publish(&store, "ops", Severity::Alert, T0, HOUR);
    let ci = publish(&store, "ci", Severity::Critical, T0, HOUR);
    let global = publish(&store, "global", Severity::Alert, T0, HOUR);
    let listed = vec!["global".to_owned(), "ci".to_owned()];
    assert_eq!(
        ids(&store, &query(Some(&listed), T0, 0)),
        [ci.id, global.id]
    );
    assert!(ids(&store, &query(Some(&[]), T0, 0)).is_empty());
    // Another handle (another process) sees the same.
    let another = store.open_another();
    let seen: Vec<i64> = another
        .urgent_after(&query(None, T0, 0))
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(seen, [ops.id, ci.id, global.id]);
}

pub(crate) fn a_message_to_one_session_is_pushed_to_it_alone(b: &dyn Backend) {
    let store = fresh(b);
    let to_s1 = publish_to(&store, "ops", Severity::Alert, T0, HOUR, Some("s1"));
    let to_s2 = publish_to(&store, "ops", Severity::Critical, T0, HOUR, Some("s2"));
    let info_to_s1 = publish_to(&store, "ops", Severity::Info, T0, HOUR, Some("s1"));
    let broadcast = publish(&store, "ci", Severity::Alert, T0 + 1, HOUR);
    let _ = info_to_s1;
    assert_eq!(ids(&store, &query(None, T0, 0)), [to_s1.id, broadcast.id]);
    let mut other = query(None, T0, 0);
    other.session_id = "s2";
    assert_eq!(ids(&store, &other), [to_s2.id, broadcast.id]);
    // A message to the session reaches it whatever channels it listens to.
    let listed = vec!["global".to_owned()];
    assert_eq!(ids(&store, &query(Some(&listed), T0, 0)), [to_s1.id]);
}

/// Publishers on several handles at once while a reader moves a cursor as the push does: the
/// reader sees every urgent message once, none passed over by a cursor that moved beyond an
/// id whose publication had not committed yet (PostgreSQL allocates ids before commit).
pub(crate) fn a_cursor_never_passes_a_message_still_being_published(b: &dyn Backend) {
    const PUBLISHERS: usize = 4;
    const EACH: usize = 60;
    let store = fresh(b);
    let handles: Vec<_> = (0..PUBLISHERS).map(|_| store.open_another()).collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let mut seen: Vec<i64> = Vec::new();
    std::thread::scope(|scope| {
        for (p, handle) in handles.iter().enumerate() {
            let done = &done;
            scope.spawn(move || {
                for i in 0..EACH {
                    let channel = format!("c{}", (p + i) % 3);
                    handle
                        .publish(
                            &NewMessage {
                                channel,
                                body: format!("alert {p}/{i}"),
                                severity: Severity::Alert,
                                created_at: T0,
                                expires_at: T0 + HOUR,
                                target: None,
                            },
                            &store::Actor::Daemon,
                        )
                        .unwrap();
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        let mut after_id = 0;
        // Until the publishers finish, then one last read (bounded: a publisher that failed
        // never finishes, and its panic is reported when the scope ends).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::time::Instant::now() < deadline {
            let finished = done.load(std::sync::atomic::Ordering::SeqCst) == PUBLISHERS;
            let read = store
                .urgent_after(&PushQuery {
                    limit: 1000,
                    ..query(None, T0, after_id)
                })
                .unwrap();
            for m in &read {
                seen.push(m.id);
                after_id = after_id.max(m.id);
            }
            if finished {
                break;
            }
        }
    });
    let mut all: Vec<i64> = store
        .urgent_after(&PushQuery {
            limit: 10_000,
            ..query(None, T0, 0)
        })
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    all.sort_unstable();
    assert_eq!(all.len(), PUBLISHERS * EACH);
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "a message was read twice");
    let missed: Vec<i64> = all
        .iter()
        .filter(|id| !sorted.contains(id))
        .copied()
        .collect();
    assert!(
        missed.is_empty(),
        "the cursor passed over {} of {} messages: {missed:?}",
        missed.len(),
        all.len()
    );
}
