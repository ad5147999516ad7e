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
                target: None,
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
    // A message to one session: that session acknowledges it; to any other it is not there.
    let to_bob = store
        .publish(
            &NewMessage {
                target: Some("bob".into()),
                ..NewMessage {
                    channel: "a".into(),
                    body: "for bob".into(),
                    severity: Severity::Critical,
                    created_at: T0,
                    expires_at: T0 + HOUR,
                    target: None,
                }
            },
            &store::Actor::Daemon,
        )
        .unwrap();
    match store.acknowledge(to_bob.id, "alice", T0, &store::Actor::Daemon) {
        Err(StoreError::NotFound {
            what: "message", ..
        }) => {}
        other => panic!("alice acknowledged bob's message: {other:?}"),
    }
    assert_eq!(store.count("message_acks"), 1, "nothing recorded for alice");
    assert_eq!(
        store
            .acknowledge(to_bob.id, "bob", T0, &store::Actor::Daemon)
            .unwrap(),
        to_bob
    );
    assert_eq!(store.count("message_acks"), 2);
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

pub(crate) fn clear_counts_only_unexpired_messages_and_deletes_expired_ones_too(b: &dyn Backend) {
    let store = fresh(b);
    let gone = publish(&store, "a", Severity::Alert, T0, 1_000);
    publish(&store, "a", Severity::Info, T0, HOUR);
    let alone = publish(&store, "b", Severity::Info, T0, 1_000);
    publish(&store, "c", Severity::Info, T0, 1_000);
    store
        .acknowledge(gone.id, "s1", T0, &store::Actor::Daemon)
        .unwrap();
    let clear = |scope: MessageScope| {
        store
            .clear_messages(&scope, &store::Actor::Daemon, T0 + 1_000)
            .unwrap()
    };
    let audited = store.count("audit_log");
    // At T0 + 1000 the short-lived ones have expired: no other call shows them.
    assert_eq!(clear(MessageScope::Id(alone.id)), 0);
    assert_eq!(clear(MessageScope::Channel("a".into())), 1);
    assert_eq!(store.count("message_acks"), 0);
    assert_eq!(
        store.count("audit_log"),
        audited + 1,
        "only the clear that removed an unexpired message is audited"
    );
    assert_eq!(clear(MessageScope::All), 0);
    assert_eq!(
        store.count("messages"),
        0,
        "expired messages are deleted all the same"
    );
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

    // Bounded: of two concurrent prompts of one session, one shows or counts a new info
    // message, never both, and neither loses it.
    for round in 0..10 {
        publish(&store, "a", Severity::Info, T0 + 40 + round, HOUR);
        let budget = usize::try_from(round % 2).unwrap();
        let deliver = |s: &dyn store::Store| {
            s.deliver_within(
                "s3",
                None,
                DeliveryPoint::Prompt,
                T0 + 60,
                &mut store::AtMost(budget),
            )
        };
        let (x, y) = std::thread::scope(|scope| {
            let x = scope.spawn(|| deliver(&*store.store));
            let y = scope.spawn(|| deliver(&*other));
            (x.join().unwrap().unwrap(), y.join().unwrap().unwrap())
        });
        let seen = |d: &store::Delivery| {
            d.shown
                .iter()
                .filter(|m| m.severity == Severity::Info)
                .count() as u64
                + d.unshown.iter().map(|b| b.info).sum::<u64>()
        };
        // The first round also finds the two info messages published above.
        let expected = if round == 0 { 1 + 11 } else { 1 };
        assert_eq!(seen(&x) + seen(&y), expected, "round {round}");
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

/// Admits messages while their bodies fit in `0` bytes (a stand-in for the hook's token
/// budget, which counts rendered lines).
struct Bytes(usize);

impl store::Admission for Bytes {
    fn admit(&mut self, m: &Message) -> bool {
        match self.0.checked_sub(m.body.len()) {
            Some(left) => {
                self.0 = left;
                true
            }
            None => false,
        }
    }
}

/// Publishes `n` messages on `channels` in one unit of work: every tenth an alert, one in a
/// hundred critical, the rest info; the bodies grow with their index.
fn fill(store: &Fixture, n: usize, channels: &[&str], at: i64) -> Vec<Message> {
    let mut out = Vec::with_capacity(n);
    let unit = store.in_one_transaction(true, &mut || {
        for i in 0..n {
            let severity = match i % 100 {
                37 => Severity::Critical,
                k if k % 10 == 3 => Severity::Alert,
                _ => Severity::Info,
            };
            let m = store
                .publish(
                    &NewMessage {
                        channel: channels[i % channels.len()].into(),
                        body: format!("broadcast {i}: {}", "·".repeat(i % 7)),
                        severity,
                        created_at: at + i as i64,
                        expires_at: at + HOUR,
                        target: None,
                    },
                    &store::Actor::Daemon,
                )
                .unwrap();
            out.push(m);
        }
    });
    unit.unwrap();
    out
}

/// The channels of `messages` with how many of each severity, as a delivery counts them.
fn backlog_of<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<store::Backlog> {
    let mut by_channel = std::collections::BTreeMap::<String, store::Backlog>::new();
    for m in messages {
        by_channel
            .entry(m.channel.clone())
            .or_insert_with(|| store::Backlog {
                channel: m.channel.clone(),
                ..store::Backlog::default()
            })
            .add(m.severity, 1);
    }
    by_channel.into_values().collect()
}

/// A new session in a store of 5,000 messages receives at most its budget, critical messages
/// first and newest first within each severity, and a count per channel of everything else
/// that was due; its next prompt repeats only the unacknowledged alert and critical messages,
/// and later ones bring only what is new. Acknowledged and expired messages are never counted.
pub(crate) fn a_new_session_receives_its_budget_and_a_count_of_the_rest(b: &dyn Backend) {
    let store = fresh(b);
    let channels = ["ci", "deploys", "global", "ops", "release"];
    let all = fill(&store, 5_000, &channels, T0);
    // Expired but not pruned, on a channel of its own and on a busy one.
    publish(&store, "ops", Severity::Info, T0 - HOUR, 10);
    publish(&store, "stale", Severity::Critical, T0 - HOUR, 10);
    let now = T0 + 10_000;
    // s1 acknowledged a few messages before its first prompt (one of each severity).
    for m in [&all[4], &all[13], &all[37]] {
        store
            .acknowledge(m.id, "s1", now, &store::Actor::Daemon)
            .unwrap();
    }
    let due: Vec<&Message> = all
        .iter()
        .filter(|m| ![all[4].id, all[13].id, all[37].id].contains(&m.id))
        .collect();

    let budget = 2_000;
    let first = store
        .deliver_within("s1", None, DeliveryPoint::Prompt, now, &mut Bytes(budget))
        .unwrap();
    let shown_bytes: usize = first.shown.iter().map(|m| m.body.len()).sum();
    assert!(shown_bytes <= budget, "{shown_bytes} bytes shown");
    assert!(!first.shown.is_empty());
    // Critical first, newest first; the 49 unacknowledged criticals fit the budget.
    let criticals: Vec<i64> = due
        .iter()
        .filter(|m| m.severity == Severity::Critical)
        .map(|m| m.id)
        .rev()
        .collect();
    assert_eq!(criticals.len(), 49);
    assert_eq!(ids(&first.shown[..criticals.len()]), criticals);
    assert!(
        first
            .shown
            .windows(2)
            .all(|w| store::delivery_order(&w[0], &w[1]).is_lt()),
        "delivery order"
    );
    // Everything due is either shown or counted, by channel and severity.
    let shown: Vec<i64> = ids(&first.shown);
    let expected = backlog_of(due.iter().copied().filter(|m| !shown.contains(&m.id)));
    assert_eq!(first.unshown, expected);
    assert_eq!(
        first.shown.len() as u64 + first.unshown_total(),
        due.len() as u64
    );

    // The next prompt: no info (it was shown or counted), the urgent messages again.
    let second = store
        .deliver_within(
            "s1",
            None,
            DeliveryPoint::Prompt,
            now + 1,
            &mut Bytes(budget),
        )
        .unwrap();
    assert!(
        second.shown.iter().all(|m| m.severity != Severity::Info),
        "info is not due again"
    );
    assert!(
        second.unshown.iter().all(|b| b.info == 0),
        "{:?}",
        second.unshown
    );
    let urgent = due.iter().filter(|m| m.severity != Severity::Info).count() as u64;
    assert_eq!(second.shown.len() as u64 + second.unshown_total(), urgent);

    // New messages: a known session gets exactly those (and the urgent ones still due).
    let news = [
        publish(&store, "ci", Severity::Info, now + 2, HOUR),
        publish(&store, "new-channel", Severity::Info, now + 3, HOUR),
    ];
    let third = store
        .deliver_within(
            "s1",
            None,
            DeliveryPoint::Prompt,
            now + 4,
            &mut store::Unbounded,
        )
        .unwrap();
    let info: Vec<i64> = third
        .shown
        .iter()
        .filter(|m| m.severity == Severity::Info)
        .map(|m| m.id)
        .collect();
    assert_eq!(info, [news[1].id, news[0].id]);
    assert!(third.unshown.is_empty());

    // A tool call: the criticals only, within the budget; nothing counted of the rest.
    let tool = store
        .deliver_within("s1", None, DeliveryPoint::ToolCall, now + 5, &mut Bytes(40))
        .unwrap();
    assert!(tool.shown.iter().all(|m| m.severity == Severity::Critical));
    assert!(tool.unshown.iter().all(|b| b.alert == 0 && b.info == 0));
    assert_eq!(tool.shown.len() as u64 + tool.unshown_total(), 49);

    // Another new session, on two channels, with a budget that refuses at once: everything
    // is counted, nothing shown, and its info is not due again.
    let two = ["deploys".to_string(), "release".to_string()];
    let counted = store
        .deliver_within("s2", Some(&two), DeliveryPoint::Prompt, now, &mut Bytes(0))
        .unwrap();
    assert!(counted.shown.is_empty());
    let on_two: Vec<&Message> = all.iter().filter(|m| two.contains(&m.channel)).collect();
    assert_eq!(counted.unshown, backlog_of(on_two.iter().copied()));
    let again = store
        .deliver_within("s2", Some(&two), DeliveryPoint::Prompt, now, &mut Bytes(0))
        .unwrap();
    assert_eq!(
        again.unshown_total(),
        on_two
            .iter()
            .filter(|m| m.severity != Severity::Info)
            .count() as u64
    );
    // Its other channels were never touched: a wider subscription still gets their info.
    let wider = store
        .deliver_within("s2", None, DeliveryPoint::Prompt, now, &mut Bytes(0))
        .unwrap();
    let info_elsewhere = all
        .iter()
        .filter(|m| !two.contains(&m.channel) && m.severity == Severity::Info)
        .count() as u64
        + 2;
    assert_eq!(
        wider.unshown.iter().map(|b| b.info).sum::<u64>(),
        info_elsewhere
    );

    // A busy channel read page after page: the newest run is shown, the rest counted, from the
    // counters for a new session and above its mark for a known one.
    let bulk = ["bulk".to_string()];
    let older = fill(&store, 100, &["bulk"], now);
    let older_info: Vec<&Message> = older
        .iter()
        .filter(|m| m.severity == Severity::Info)
        .collect();
    let page = store
        .deliver_within(
            "s3",
            Some(&bulk),
            DeliveryPoint::Prompt,
            now + 200,
            &mut store::AtMost(60),
        )
        .unwrap();
    assert_eq!(page.shown.len(), 60);
    let urgent_bulk = older.len() - older_info.len();
    let info_shown: Vec<i64> = page.shown[urgent_bulk..].iter().map(|m| m.id).collect();
    let newest: Vec<i64> = older_info
        .iter()
        .rev()
        .take(info_shown.len())
        .map(|m| m.id)
        .collect();
    assert_eq!(info_shown, newest, "the newest info, across several pages");
    assert_eq!(page.unshown_total(), (older.len() - 60) as u64);
    let newer = fill(&store, 50, &["bulk"], now + 300);
    let next = store
        .deliver_within(
            "s3",
            Some(&bulk),
            DeliveryPoint::Prompt,
            now + 400,
            &mut store::AtMost(urgent_bulk + 20),
        )
        .unwrap();
    let newer_info: Vec<&Message> = newer
        .iter()
        .filter(|m| m.severity == Severity::Info)
        .collect();
    let info_shown: Vec<i64> = next
        .shown
        .iter()
        .filter(|m| m.severity == Severity::Info)
        .map(|m| m.id)
        .collect();
    let urgent_now = urgent_bulk + (newer.len() - newer_info.len());
    let fit = (urgent_bulk + 20).saturating_sub(urgent_now);
    assert_eq!(
        info_shown,
        newer_info
            .iter()
            .rev()
            .take(fit)
            .map(|m| m.id)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        next.unshown.iter().map(|b| b.info).sum::<u64>(),
        (newer_info.len() - fit) as u64,
        "only the new info is counted"
    );
}

pub(crate) fn the_next_expiry_is_the_earliest_still_ahead(b: &dyn Backend) {
    let store = fresh(b);
    assert_eq!(store.next_expiry(T0).unwrap(), None, "an empty store");
    publish(&store, "a", Severity::Info, T0, 3 * HOUR);
    publish(&store, "b", Severity::Critical, T0, HOUR);
    publish(&store, "a", Severity::Alert, T0, 2 * HOUR);
    assert_eq!(store.next_expiry(T0).unwrap(), Some(T0 + HOUR));
    // At the instant a message expires it is gone: the next one is ahead.
    assert_eq!(store.next_expiry(T0 + HOUR).unwrap(), Some(T0 + 2 * HOUR));
    assert_eq!(store.next_expiry(T0 + 3 * HOUR).unwrap(), None);
}
