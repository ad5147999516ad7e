//! Channels: publication, reading, acknowledgement, clearing, pruning and delivery.

use store::{DeliveryPoint, Message, MessageQuery, MessageScope, NewMessage, Severity, StoreError};

use super::{Backend, Fixture, fresh};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn publish(store: &Fixture, channel: &str, severity: Severity, at: i64, ttl: i64) -> Message {
    store
        .publish(
            &NewMessage {
                channel: channel.into(),
                body: format!("{severity} on {channel} at {at}"),
                severity,
                created_at: at,
                expires_at: at + ttl,
            },
            &store::Actor::Daemon,
        )
        .unwrap()
}

fn ids(messages: &[Message]) -> Vec<i64> {
    messages.iter().map(|m| m.id).collect()
}

fn query(channel: Option<&str>, session: Option<&str>, include_acked: bool) -> MessageQuery {
    MessageQuery {
        channel: channel.map(Into::into),
        session_id: session.map(Into::into),
        include_acknowledged: include_acked,
        limit: 20,
        now: T0 + 10,
        before: None,
    }
}

pub(crate) fn publish_returns_the_stored_message(b: &dyn Backend) {
    let store = fresh(b);
    let a = publish(&store, "deploys", Severity::Alert, T0, HOUR);
    let b = publish(&store, "deploys", Severity::Info, T0, HOUR);
    assert!(b.id > a.id);
    assert_eq!(a.channel, "deploys");
    assert_eq!(a.severity, Severity::Alert);
    assert_eq!(a.expires_at, T0 + HOUR);
    let read = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(read[1].message, a);
    assert!(!read[1].acknowledged);
    // One message by id, while it lives.
    assert_eq!(store.message(a.id, T0 + 10).unwrap(), Some(a.clone()));
    assert_eq!(store.message(a.id, T0 + HOUR).unwrap(), None, "expired");
    assert_eq!(
        store.message(b.id + 100, T0).unwrap(),
        None,
        "never existed"
    );
}

pub(crate) fn read_is_newest_first_filtered_limited_and_skips_expired(b: &dyn Backend) {
    let store = fresh(b);
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

pub(crate) fn read_hides_or_marks_what_the_session_acknowledged(b: &dyn Backend) {
    let store = fresh(b);
    let acked = publish(&store, "a", Severity::Alert, T0, HOUR);
    let open = publish(&store, "a", Severity::Alert, T0 + 1, HOUR);
    store
        .acknowledge(acked.id, "s1", T0 + 2, &store::Actor::Daemon)
        .unwrap();

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

pub(crate) fn channels_count_active_messages_by_name(b: &dyn Backend) {
    let store = fresh(b);
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

pub(crate) fn acknowledge_refuses_unknown_and_expired_ids_and_accepts_repeats(b: &dyn Backend) {
    let store = fresh(b);
    let live = publish(&store, "a", Severity::Alert, T0, HOUR);
    let expired = publish(&store, "a", Severity::Alert, T0 - HOUR, HOUR);
    for id in [expired.id, live.id + 100] {
        match store.acknowledge(id, "s1", T0, &store::Actor::Daemon) {
            Err(StoreError::NotFound {
                what: "message",
                id: got,
            }) => {
                assert_eq!(got, id.to_string())
            }
            other => panic!("expected NotFound for {id}, got {other:?}"),
        }
    }
    assert_eq!(
        store
            .acknowledge(live.id, "s1", T0, &store::Actor::Daemon)
            .unwrap(),
        live
    );
    assert_eq!(
        store
            .acknowledge(live.id, "s1", T0 + 1, &store::Actor::Daemon)
            .unwrap(),
        live
    );
    assert_eq!(store.count("message_acks"), 1);
}

pub(crate) fn clear_deletes_by_scope_with_acks_and_deliveries(b: &dyn Backend) {
    let store = fresh(b);
    let a1 = publish(&store, "a", Severity::Alert, T0, HOUR);
    let a2 = publish(&store, "a", Severity::Info, T0, HOUR);
    let b = publish(&store, "b", Severity::Info, T0, HOUR);
    store
        .acknowledge(a1.id, "s1", T0, &store::Actor::Daemon)
        .unwrap();
    store
        .deliver("s1", None, DeliveryPoint::Prompt, T0)
        .unwrap();
    assert_eq!(store.count("message_deliveries"), 2); // a2 and b; a1 is acknowledged

    assert_eq!(
        store
            .clear_messages(&MessageScope::Id(a2.id + 100), &store::Actor::Daemon, 0)
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .clear_messages(&MessageScope::Id(a2.id), &store::Actor::Daemon, 0)
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .clear_messages(&MessageScope::Channel("a".into()), &store::Actor::Daemon, 0)
            .unwrap(),
        1
    );
    assert_eq!(store.count("message_acks"), 0);
    assert_eq!(store.count("message_deliveries"), 1);
    let left = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(
        left.iter().map(|v| v.message.id).collect::<Vec<_>>(),
        [b.id]
    );
    assert_eq!(
        store
            .clear_messages(&MessageScope::All, &store::Actor::Daemon, 0)
            .unwrap(),
        1
    );
    assert_eq!(store.count("messages"), 0);
    assert_eq!(store.count("message_deliveries"), 0);
}

pub(crate) fn prune_removes_only_expired_messages_and_their_records(b: &dyn Backend) {
    let store = fresh(b);
    let short = publish(&store, "a", Severity::Alert, T0, 1_000);
    let long = publish(&store, "a", Severity::Alert, T0, HOUR);
    store
        .acknowledge(short.id, "s1", T0, &store::Actor::Daemon)
        .unwrap();
    store
        .deliver("s2", None, DeliveryPoint::Prompt, T0)
        .unwrap();
    assert_eq!(store.prune_expired(T0 + 999).unwrap(), 0);
    // `expires_at` is the first instant at which a message is expired.
    assert_eq!(store.prune_expired(T0 + 1_000).unwrap(), 1);
    assert_eq!(store.count("message_acks"), 0);
    assert_eq!(store.count("message_deliveries"), 1);
    let left = store.read_messages(&query(None, None, false)).unwrap();
    assert_eq!(left[0].message.id, long.id);
    assert_eq!(left.len(), 1);
}

pub(crate) fn info_is_delivered_once_per_session_and_recorded(b: &dyn Backend) {
    let store = fresh(b);
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
    // Exactly these two records: (info, s1, T0) and (info, s2, T0).
    assert_eq!(store.count("message_deliveries"), 2);
    for session in ["s1", "s2"] {
        assert_eq!(
            store.location.scalar(&format!(
                "SELECT count(*) FROM message_deliveries WHERE message_id = {} \
                 AND session_id = '{session}' AND delivered_at = {T0}",
                info.id
            )),
            1,
            "{session}"
        );
    }
}

pub(crate) fn alert_repeats_every_prompt_until_acknowledged(b: &dyn Backend) {
    let store = fresh(b);
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
    store
        .acknowledge(alert.id, "s1", T0 + 3, &store::Actor::Daemon)
        .unwrap();
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

pub(crate) fn critical_is_delivered_at_tool_calls_too_until_acknowledged(b: &dyn Backend) {
    let store = fresh(b);
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
    store
        .acknowledge(critical.id, "s1", T0 + 3, &store::Actor::Daemon)
        .unwrap();
    assert!(
        store
            .deliver("s1", None, DeliveryPoint::ToolCall, T0 + 4)
            .unwrap()
            .is_empty()
    );
}

pub(crate) fn expired_messages_are_never_delivered(b: &dyn Backend) {
    let store = fresh(b);
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
    assert_eq!(store.count("message_deliveries"), 0);
}

pub(crate) fn delivery_respects_the_channel_list(b: &dyn Backend) {
    let store = fresh(b);
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

/// One agent's calls landing on different processes (daemons) see one state: what one handle
/// acknowledged or delivered, another honours; a gate armed through one is open on the other.
pub(crate) fn session_state_holds_across_handles(b: &dyn Backend) {
    let store = fresh(b);
    let other = store.open_another();
    let alert = publish(&store, "a", Severity::Alert, T0, HOUR);
    let info = publish(&store, "a", Severity::Info, T0, HOUR);
    store
        .acknowledge(alert.id, "s1", T0 + 1, &store::Actor::Daemon)
        .unwrap();
    assert_eq!(
        ids(&other
            .deliver("s1", None, DeliveryPoint::Prompt, T0 + 2)
            .unwrap()),
        [info.id]
    );
    assert!(
        store
            .deliver("s1", None, DeliveryPoint::Prompt, T0 + 3)
            .unwrap()
            .is_empty(),
        "the info went out through the other handle"
    );
    other
        .arm_gate("s1", T0 + HOUR, &store::Actor::Daemon, 0)
        .unwrap();
    assert_eq!(store.gate_open_until("s1", T0).unwrap(), Some(T0 + HOUR));

    // Concurrent prompts of one session on two handles deliver a new info exactly once.
    for round in 0..10 {
        let fresh_info = publish(&store, "a", Severity::Info, T0 + 10 + round, HOUR);
        let (x, y) = std::thread::scope(|scope| {
            let x = scope.spawn(|| store.deliver("s2", None, DeliveryPoint::Prompt, T0 + 20));
            let y = scope.spawn(|| other.deliver("s2", None, DeliveryPoint::Prompt, T0 + 20));
            (x.join().unwrap().unwrap(), y.join().unwrap().unwrap())
        });
        let got = |v: &[Message]| v.iter().filter(|m| m.id == fresh_info.id).count();
        assert_eq!(got(&x) + got(&y), 1, "round {round}");
    }
}

pub(crate) fn pages_follow_the_cursor_without_gaps_or_repeats(b: &dyn Backend) {
    let store = fresh(b);
    // Seven messages, three of them published at the same instant (ties broken by id), and
    // one on another channel.
    let mut published: Vec<Message> = [0, 1, 1, 1, 2, 3, 4]
        .iter()
        .map(|&t| publish(&store, "paged", Severity::Info, T0 + t, HOUR))
        .collect();
    publish(&store, "elsewhere", Severity::Info, T0 + 2, HOUR);
    published.sort_by_key(|m| std::cmp::Reverse((m.created_at, m.id)));
    let mut pages = Vec::new();
    let mut q = query(Some("paged"), None, false);
    q.limit = 3;
    loop {
        let page: Vec<Message> = store
            .read_messages(&q)
            .unwrap()
            .into_iter()
            .map(|v| v.message)
            .collect();
        let Some(last) = page.last() else { break };
        q.before = Some(last.into());
        pages.push(ids(&page));
        assert!(pages.len() <= 4, "paging did not end: {pages:?}");
    }
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
    assert_eq!(pages.concat(), ids(&published));
}
