//! What the daemons of one store share: signing keys (made once whoever asks first, rotated,
//! retired) and resumable Streamable HTTP sessions (saved, resumed from another handle,
//! deleted, pruned).

use std::sync::Arc;

use store::{KeyRequest, Store};

use super::{Backend, fresh};

const T0: i64 = 1_800_000_000_000;
const DAY: i64 = 24 * 3_600_000;

fn keys(store: &dyn Store, candidate: &[u8], now: i64) -> Vec<(Vec<u8>, i64)> {
    store
        .signing_keys(&KeyRequest {
            purpose: "console-session",
            candidate,
            now,
            rotate_before: now - DAY,
            keep_since: now - DAY,
        })
        .unwrap()
        .into_iter()
        .map(|k| (k.secret, k.created_at))
        .collect()
}

pub(crate) fn signing_keys_are_made_once_shared_rotated_and_retired(backend: &dyn Backend) {
    let store = fresh(backend);
    let other = store.open_another();
    assert_eq!(keys(&*store, b"first", T0), [(b"first".to_vec(), T0)]);
    // Another process within the period gets the same key; its candidate is not stored.
    assert_eq!(
        keys(&*other, b"second", T0 + 1000),
        [(b"first".to_vec(), T0)]
    );
    // Other purposes keep keys of their own.
    let other_purpose = other
        .signing_keys(&KeyRequest {
            purpose: "other",
            candidate: b"x",
            now: T0,
            rotate_before: T0 - DAY,
            keep_since: T0 - DAY,
        })
        .unwrap();
    assert_eq!(other_purpose.len(), 1);
    assert_eq!(other_purpose[0].secret, b"x");
    // A day and a bit later a new key is made; the old one still verifies.
    let later = T0 + DAY + 1;
    assert_eq!(
        keys(&*other, b"second", later),
        [(b"second".to_vec(), later), (b"first".to_vec(), T0)]
    );
    assert_eq!(
        keys(&*store, b"third", later + 1),
        [(b"second".to_vec(), later), (b"first".to_vec(), T0)],
        "the first process sees the rotation"
    );
    // A day after it was superseded the first key goes; the newest is never deleted.
    let much_later = T0 + 3 * DAY + 10;
    assert_eq!(
        keys(&*store, b"third", much_later),
        [(b"third".to_vec(), much_later), (b"second".to_vec(), later)]
    );
    let far = T0 + 100 * DAY;
    let only = store
        .signing_keys(&KeyRequest {
            purpose: "console-session",
            candidate: b"fourth",
            now: far,
            rotate_before: T0,
            keep_since: far,
        })
        .unwrap();
    assert_eq!(only.len(), 1, "{only:?}");
    assert_eq!(only[0].secret, b"third", "not due: the newest stays, alone");
    assert!(
        !format!("{only:?}").contains("third"),
        "Debug shows no secret"
    );
}

pub(crate) fn concurrent_first_callers_agree_on_one_key(backend: &dyn Backend) {
    let store = fresh(backend);
    let handles: Vec<Arc<dyn Store>> = (0..4).map(|_| store.open_another()).collect();
    let seen: Vec<Vec<(Vec<u8>, i64)>> = std::thread::scope(|scope| {
        let running: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(i, h)| {
                scope.spawn(move || keys(&**h, format!("candidate-{i}").as_bytes(), T0 + i as i64))
            })
            .collect();
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert!(
        seen.iter().all(|k| k.len() == 1 && *k == seen[0]),
        "{seen:?}"
    );
    assert_eq!(store.count("signing_keys"), 1);
}

pub(crate) fn http_sessions_are_resumed_from_any_handle_deleted_and_pruned(backend: &dyn Backend) {
    let store = fresh(backend);
    let other = store.open_another();
    assert_eq!(store.http_session("s-1", T0).unwrap(), None);
    store.save_http_session("s-1", r#"{"v":1}"#, T0).unwrap();
    store.save_http_session("s-2", r#"{"v":2}"#, T0).unwrap();
    assert_eq!(
        other.http_session("s-1", T0 + 10).unwrap().as_deref(),
        Some(r#"{"v":1}"#)
    );
    // Saving again replaces the state.
    store
        .save_http_session("s-2", r#"{"v":3}"#, T0 + 5)
        .unwrap();
    assert_eq!(
        other.http_session("s-2", T0 + 6).unwrap().as_deref(),
        Some(r#"{"v":3}"#)
    );
    // A resumed session counts as seen: pruning keeps it, and drops the one not seen since.
    assert!(other.http_session("s-1", T0 + DAY).unwrap().is_some());
    assert_eq!(store.prune_http_sessions(T0 + 100).unwrap(), 1);
    assert_eq!(other.http_session("s-2", T0 + DAY).unwrap(), None);
    assert!(store.delete_http_session("s-1").unwrap());
    assert!(!store.delete_http_session("s-1").unwrap());
    assert_eq!(other.http_session("s-1", T0 + DAY).unwrap(), None);
    assert_eq!(store.count("http_sessions"), 0);
}

pub(crate) fn a_lease_has_one_holder_until_it_is_given_up(backend: &dyn Backend) {
    let store = fresh(backend);
    let other = store.open_another();
    let mut held = store
        .try_lease("metrics")
        .unwrap()
        .expect("a free lease is taken");
    assert!(held.still_held());
    // Another handle (as another process) does not get it, again and again.
    for _ in 0..3 {
        assert!(other.try_lease("metrics").unwrap().is_none());
    }
    // Another name is another lease.
    let mut another = other
        .try_lease("other")
        .unwrap()
        .expect("another name is free");
    assert!(another.still_held());
    assert!(store.try_lease("other").unwrap().is_none());
    // Given up, it goes to the next that asks.
    drop(held);
    let mut taken = other
        .try_lease("metrics")
        .unwrap()
        .expect("a lease given up is free");
    assert!(taken.still_held());
    assert!(store.try_lease("metrics").unwrap().is_none());
}
