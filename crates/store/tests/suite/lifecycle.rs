//! The sessions' lifecycle and messages to one session: an ended session stops counting as
//! live until it is seen again, a subagent is its own recipient tied to its parent, a start
//! delivers the unacknowledged alerts again, a `Stop` shows what its turn published once, and
//! a message to one session reaches that session alone, with its own delivery report.

use store::{
    Actor, DeliveryPoint, Message, NewMessage, ReportQuery, SessionQuery, Severity, Sighting,
    Subscribed, Transport, Unbounded,
};

use super::{Backend, Fixture, fresh};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

fn seen(store: &Fixture, session: &str, at: i64, event: &str) {
    store
        .record_sighting(&Sighting {
            session_id: session.into(),
            at,
            event: event.into(),
            transport: Transport::Hook,
            cwd: None,
            subscriptions: Some(Subscribed::All),
        })
        .unwrap();
}

fn publish(
    store: &Fixture,
    channel: &str,
    severity: Severity,
    at: i64,
    target: Option<&str>,
) -> Message {
    store
        .publish(
            &NewMessage {
                channel: channel.into(),
                body: format!("{severity} on {channel} at {at}"),
                severity,
                created_at: at,
                expires_at: at + HOUR,
                target: target.map(str::to_owned),
            },
            &Actor::Daemon,
        )
        .unwrap()
}

fn listed(store: &Fixture, include_ended: bool) -> Vec<(String, Option<i64>)> {
    store
        .sessions(&SessionQuery {
            seen_since: None,
            include_ended,
            offset: 0,
            limit: 50,
        })
        .unwrap()
        .into_iter()
        .map(|s| (s.session_id, s.ended_at))
        .collect()
}

fn ids(messages: &[Message]) -> Vec<i64> {
    let mut ids: Vec<i64> = messages.iter().map(|m| m.id).collect();
    ids.sort_unstable();
    ids
}

pub(crate) fn an_ended_session_is_not_live_until_it_is_seen_again(b: &dyn Backend) {
    let store = fresh(b);
    seen(&store, "s1", T0, "SessionStart");
    seen(&store, "s2", T0 + 1, "SessionStart");
    assert_eq!(store.count_sessions(T0).unwrap(), 2);
    assert!(store.end_session("s1", T0 + 10).unwrap(), "s1 was live");
    assert!(!store.end_session("s1", T0 + 11).unwrap(), "ending twice");
    assert_eq!(store.count_sessions(T0).unwrap(), 1);
    assert_eq!(listed(&store, false), [("s2".to_owned(), None)]);
    let all = listed(&store, true);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0], ("s1".to_owned(), Some(T0 + 11)));
    // A sighting from before the end, recorded late (a tool call's is written after its
    // answer): the session stays ended.
    seen(&store, "s1", T0 + 5, "tools/call");
    assert_eq!(store.count_sessions(T0).unwrap(), 1);
    assert_eq!(listed(&store, true)[0].1, Some(T0 + 11));
    // A session never seen is recorded as ended, and listed with the rest.
    assert!(!store.end_session("s3", T0 + 12).unwrap());
    assert_eq!(store.count_sessions(T0).unwrap(), 1);
    assert_eq!(listed(&store, true).len(), 3);
    // A resumed session is live again.
    seen(&store, "s1", T0 + 20, "SessionStart");
    assert_eq!(store.count_sessions(T0).unwrap(), 2);
    assert_eq!(listed(&store, false)[0], ("s1".to_owned(), None));
    // Reports expect only the live sessions.
    let m = publish(&store, "global", Severity::Alert, T0 + 21, None);
    store.end_session("s2", T0 + 22).unwrap();
    let report = store
        .delivery_report(&ReportQuery {
            message_id: m.id,
            live_since: T0,
            after_session: None,
            limit: 10,
        })
        .unwrap()
        .unwrap();
    assert_eq!(report.live_subscribed, 1, "{report:?}");
    assert_eq!(report.sessions[0].session_id, "s1");
}

pub(crate) fn a_subagent_is_its_own_recipient_and_ends_with_its_parent(b: &dyn Backend) {
    let store = fresh(b);
    seen(&store, "p", T0, "UserPromptSubmit");
    let critical = publish(&store, "global", Severity::Critical, T0 + 1, None);
    let parent_saw = store
        .deliver("p", None, DeliveryPoint::Prompt, T0 + 2)
        .unwrap();
    assert_eq!(ids(&parent_saw), [critical.id]);
    store
        .record_subagent(
            &Sighting {
                session_id: "p/a1".into(),
                at: T0 + 3,
                event: "SubagentStart".into(),
                transport: Transport::Hook,
                cwd: None,
                subscriptions: Some(Subscribed::All),
            },
            "p",
        )
        .unwrap();
    let sub = store
        .deliver("p/a1", None, DeliveryPoint::Start, T0 + 3)
        .unwrap();
    assert_eq!(ids(&sub), [critical.id], "the subagent gets it as its own");
    let all = store
        .sessions(&SessionQuery {
            seen_since: None,
            include_ended: true,
            offset: 0,
            limit: 10,
        })
        .unwrap();
    let child = all.iter().find(|s| s.session_id == "p/a1").unwrap();
    assert_eq!(child.parent_id.as_deref(), Some("p"));
    assert_eq!(store.count_sessions(T0).unwrap(), 2);
    store.end_session("p", T0 + 4).unwrap();
    assert_eq!(
        store.count_sessions(T0).unwrap(),
        0,
        "the subagent ends too"
    );
}

pub(crate) fn a_start_delivers_unacknowledged_alerts_again_and_no_info(b: &dyn Backend) {
    let store = fresh(b);
    seen(&store, "s", T0, "UserPromptSubmit");
    let info = publish(&store, "ci", Severity::Info, T0 + 1, None);
    let alert = publish(&store, "ci", Severity::Alert, T0 + 2, None);
    let acked = publish(&store, "ci", Severity::Critical, T0 + 3, None);
    let first = store
        .deliver("s", None, DeliveryPoint::Prompt, T0 + 4)
        .unwrap();
    assert_eq!(ids(&first), [info.id, alert.id, acked.id]);
    store
        .acknowledge(acked.id, "s", T0 + 5, &Actor::Session("s".into()))
        .unwrap();
    for at in [T0 + 6, T0 + 7] {
        let again = store.deliver("s", None, DeliveryPoint::Start, at).unwrap();
        assert_eq!(
            ids(&again),
            [alert.id],
            "each start, the unacknowledged alert"
        );
    }
}

pub(crate) fn a_stop_shows_what_the_turn_published_once(b: &dyn Backend) {
    let store = fresh(b);
    let before = publish(&store, "global", Severity::Alert, T0 - 5, None);
    seen(&store, "s", T0, "UserPromptSubmit");
    seen(&store, "other", T0, "UserPromptSubmit");
    let shown_at_prompt = store
        .deliver("s", None, DeliveryPoint::Prompt, T0 + 1)
        .unwrap();
    assert_eq!(ids(&shown_at_prompt), [before.id]);
    let stop = |session: &str, at| {
        store
            .deliver_at_stop(session, None, at, &mut Unbounded)
            .unwrap()
    };
    assert!(
        stop("s", T0 + 2).shown.is_empty(),
        "nothing new in the turn"
    );
    let info = publish(&store, "global", Severity::Info, T0 + 3, None);
    let mid_turn = publish(&store, "ops", Severity::Critical, T0 + 4, None);
    let elsewhere = publish(&store, "ops", Severity::Alert, T0 + 5, Some("other"));
    let first = stop("s", T0 + 6);
    assert_eq!(ids(&first.shown), [mid_turn.id], "no info, nobody else's");
    assert!(stop("s", T0 + 7).shown.is_empty(), "never twice");
    // Shown at the stop counts as delivered: the next prompt repeats it until acknowledged.
    let next = store
        .deliver("s", None, DeliveryPoint::Prompt, T0 + 8)
        .unwrap();
    assert_eq!(ids(&next), [before.id, info.id, mid_turn.id]);
    let other = stop("other", T0 + 9);
    assert_eq!(ids(&other.shown), [mid_turn.id, elsewhere.id]);
    // Subscriptions apply to broadcasts; a session never seen has no turn.
    let late = publish(&store, "ops", Severity::Alert, T0 + 10, None);
    let only_global = vec!["global".to_owned()];
    assert!(
        store
            .deliver_at_stop("s", Some(&only_global), T0 + 11, &mut Unbounded)
            .unwrap()
            .shown
            .is_empty()
    );
    assert_eq!(ids(&stop("s", T0 + 12).shown), [late.id]);
    assert!(stop("never-seen", T0 + 13).shown.is_empty());
    // A new prompt starts a new turn: what came before it is not the turn's.
    let old = publish(&store, "ops", Severity::Alert, T0 + 14, None);
    seen(&store, "other", T0 + 15, "UserPromptSubmit");
    let after = publish(&store, "ops", Severity::Alert, T0 + 16, None);
    let shown = stop("other", T0 + 17);
    assert_eq!(
        ids(&shown.shown),
        [after.id],
        "{old:?} came before the prompt"
    );
}

pub(crate) fn a_message_to_one_session_reaches_it_alone(b: &dyn Backend) {
    let store = fresh(b);
    for s in ["a", "b"] {
        seen(&store, s, T0, "UserPromptSubmit");
    }
    let broadcast = publish(&store, "ci", Severity::Info, T0 + 1, None);
    let to_a = publish(&store, "ci", Severity::Info, T0 + 2, Some("a"));
    let urgent_to_a = publish(&store, "ci", Severity::Critical, T0 + 3, Some("a"));
    let only_global = vec!["global".to_owned()];
    // Whatever its subscriptions, the session gets its own; nobody else does.
    let a = store
        .deliver("a", Some(&only_global), DeliveryPoint::Prompt, T0 + 4)
        .unwrap();
    assert_eq!(ids(&a), [to_a.id, urgent_to_a.id]);
    assert_eq!(
        a.iter()
            .find(|m| m.id == to_a.id)
            .unwrap()
            .target
            .as_deref(),
        Some("a")
    );
    let b_got = store
        .deliver("b", None, DeliveryPoint::Prompt, T0 + 4)
        .unwrap();
    assert_eq!(ids(&b_got), [broadcast.id]);
    // An info one once; a critical one also at tool calls, until acknowledged.
    let again = store
        .deliver("a", Some(&only_global), DeliveryPoint::Prompt, T0 + 5)
        .unwrap();
    assert_eq!(ids(&again), [urgent_to_a.id]);
    let tool = store
        .deliver("a", None, DeliveryPoint::ToolCall, T0 + 5)
        .unwrap();
    assert_eq!(ids(&tool), [urgent_to_a.id]);
    assert!(
        store
            .deliver("b", None, DeliveryPoint::ToolCall, T0 + 5)
            .unwrap()
            .is_empty()
    );
    // The channel's counters hold the broadcast only: a new session counts one info message.
    let c = store
        .deliver_within(
            "c",
            None,
            DeliveryPoint::Prompt,
            T0 + 6,
            &mut store::AtMost(0),
        )
        .unwrap();
    assert_eq!(c.unshown_total(), 1, "{c:?}");
    // Reading the channel as another session does not show it either.
    let read = store
        .read_messages(&store::MessageQuery {
            channel: Some("ci".into()),
            session_id: Some("b".into()),
            include_acknowledged: true,
            limit: 10,
            now: T0 + 7,
            before: None,
        })
        .unwrap();
    let read: Vec<i64> = read.iter().map(|v| v.message.id).collect();
    assert_eq!(read, [broadcast.id]);
}

pub(crate) fn a_message_to_one_session_has_its_own_delivery_report(b: &dyn Backend) {
    let store = fresh(b);
    for s in ["a", "b", "c"] {
        seen(&store, s, T0, "UserPromptSubmit");
    }
    let m = publish(&store, "global", Severity::Alert, T0 + 1, Some("b"));
    for s in ["a", "b", "c"] {
        store
            .deliver(s, None, DeliveryPoint::Prompt, T0 + 2)
            .unwrap();
    }
    let report = store
        .delivery_report(&ReportQuery {
            message_id: m.id,
            live_since: T0,
            after_session: None,
            limit: 10,
        })
        .unwrap()
        .unwrap();
    assert_eq!(report.message.target.as_deref(), Some("b"));
    assert_eq!(
        (
            report.live_subscribed,
            report.delivered_live,
            report.delivered
        ),
        (1, 1, 1),
        "{report:?}"
    );
    let concerned: Vec<&str> = report
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(concerned, ["b"]);
}

pub(crate) fn concurrent_stops_show_a_message_once(b: &dyn Backend) {
    // Two hook processes answering the same session's Stop at once (a retried hook, an HTTP
    // hook beside a command hook): the message blocks one of them, never both.
    for round in 0..10 {
        let store = fresh(b);
        seen(&store, "s", T0, "UserPromptSubmit");
        let mid_turn = publish(&store, "ops", Severity::Critical, T0 + 1, None);
        let handles: Vec<_> = (0..4).map(|_| store.open_another()).collect();
        let barrier = std::sync::Barrier::new(handles.len());
        let shown: usize = std::thread::scope(|scope| {
            let runs: Vec<_> = handles
                .iter()
                .map(|h| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        barrier.wait();
                        h.deliver_at_stop("s", None, T0 + 2, &mut Unbounded)
                            .unwrap()
                            .shown
                            .iter()
                            .filter(|m| m.id == mid_turn.id)
                            .count()
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).sum()
        });
        assert_eq!(shown, 1, "round {round}: shown {shown} times");
    }
}
