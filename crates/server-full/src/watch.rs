//! Resource subscriptions: `notifications/resources/updated` when a subscribed resource's
//! contents change, whoever changed them, and `notifications/resources/list_changed` when the
//! listed resources change. A legacy session subscribes with `resources/subscribe` and hears
//! of list changes too; a 2026-07-28 `subscriptions/listen` hears only what its accepted
//! filter names, through its own sink (which tags each notification with its id).
//!
//! One watcher task per process runs while any session has a subscription. It waits on the
//! process's feed of store changes ([`crate::StoreChanges`]); when a change arrives, or when
//! the next message expires (the one thing that changes what the resources show without a
//! write: [`store::ChannelStore::next_expiry`]), it reads the subscribed resources and the
//! list again and compares digests. While the feed cannot reach the store it reads them every
//! [`RECHECK_EVERY`] instead, and in any case at least every [`QUIET_RECHECK`]. So while the
//! store is quiet a session that holds a subscription reads nothing: the task only wakes every
//! [`CHECK_EVERY`] to see whether its sessions are still there. Subscriptions live in
//! their session's server and end with it (the watcher holds them weakly).

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use catalogue::{CallContext, Extensions, SessionPolicy};
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::lock;
use crate::resources_and_prompts;
use crate::settings::now_ms;
use crate::store_changes::{StoreChanges, Version};

/// How often the watcher checks whether its sessions are still there (and ends when none is).
const CHECK_EVERY: Duration = Duration::from_secs(5);
/// How often it re-reads while the feed of store changes cannot reach the store.
const RECHECK_EVERY: Duration = Duration::from_millis(900);
/// The longest it goes without re-reading while the feed is connected.
const QUIET_RECHECK: Duration = Duration::from_secs(60);
/// Read a little after the next expiry, so that the message has expired by then.
const EXPIRY_MARGIN: Duration = Duration::from_millis(20);

/// One session's subscriptions and the peer to notify.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    inner: Mutex<SessionSubs>,
}

#[derive(Debug, Default)]
struct SessionSubs {
    uris: Vec<String>,
    peer: Option<Peer<RoleServer>>,
    /// The session's open `subscriptions/listen` requests.
    listens: Vec<SubscriptionSink>,
}

/// Whom the watcher tells of a change.
#[derive(Debug, Clone)]
enum Target {
    /// A legacy session: its subscribed URIs, and list changes.
    Session(Vec<String>, Peer<RoleServer>),
    /// One `subscriptions/listen`: what its filter accepted.
    Listen(SubscriptionSink),
}

impl Target {
    fn uris(&self) -> Vec<String> {
        match self {
            Target::Session(uris, _) => uris.clone(),
            Target::Listen(sink) => sink
                .accepted()
                .resource_subscriptions
                .clone()
                .unwrap_or_default(),
        }
    }

    async fn notify(&self, updated: &[&String], list_changed: bool) {
        let result = match self {
            Target::Session(uris, peer) => {
                for uri in updated.iter().filter(|u| uris.contains(u)) {
                    let param = ResourceUpdatedNotificationParam::new(uri.as_str());
                    if let Err(e) = peer.notify_resource_updated(param).await {
                        tracing::debug!("cannot notify a subscriber: {e}");
                    }
                }
                if list_changed {
                    peer.notify_resource_list_changed()
                        .await
                        .map_err(|e| e.to_string())
                } else {
                    Ok(())
                }
            }
            Target::Listen(sink) => {
                let accepted = sink.accepted();
                let subscribed = accepted.resource_subscriptions.as_deref().unwrap_or(&[]);
                for uri in updated.iter().filter(|u| subscribed.contains(u)) {
                    if let Err(e) = sink.notify_resource_updated(uri.as_str()).await {
                        tracing::debug!("cannot notify a subscription: {e}");
                    }
                }
                if list_changed && accepted.resources_list_changed == Some(true) {
                    sink.notify_resource_list_changed()
                        .await
                        .map_err(|e| e.to_string())
                } else {
                    Ok(())
                }
            }
        };
        if let Err(e) = result {
            tracing::debug!("cannot notify a subscriber: {e}");
        }
    }
}

impl Subscriptions {
    /// The subscribed URIs, in subscription order.
    pub(crate) fn uris(&self) -> Vec<String> {
        lock(&self.inner).uris.clone()
    }

    /// Adds `uri`, remembering the peer to notify.
    pub(crate) fn add(&self, uri: String, peer: Peer<RoleServer>) {
        let mut subs = lock(&self.inner);
        if !subs.uris.contains(&uri) {
            subs.uris.push(uri);
        }
        subs.peer = Some(peer);
    }

    /// Removes `uri`.
    pub(crate) fn remove(&self, uri: &str) {
        lock(&self.inner).uris.retain(|u| u != uri);
    }

    /// Adds an open `subscriptions/listen`.
    pub(crate) fn listen(&self, sink: SubscriptionSink) {
        lock(&self.inner).listens.push(sink);
    }

    /// Removes the `subscriptions/listen` with this sink's id.
    pub(crate) fn end_listen(&self, sink: &SubscriptionSink) {
        lock(&self.inner).listens.retain(|s| s.id() != sink.id());
    }

    /// The open `subscriptions/listen` requests whose filter accepted tool list changes.
    pub(crate) fn tool_listeners(&self) -> Vec<SubscriptionSink> {
        lock(&self.inner)
            .listens
            .iter()
            .filter(|s| s.accepted().tools_list_changed == Some(true))
            .cloned()
            .collect()
    }

    fn snapshot(&self) -> Vec<Target> {
        let subs = lock(&self.inner);
        let session = subs
            .peer
            .clone()
            .map(|p| Target::Session(subs.uris.clone(), p));
        session
            .into_iter()
            .chain(subs.listens.iter().cloned().map(Target::Listen))
            .collect()
    }
}

/// The process's watcher: the sessions that subscribed, and whether its task runs.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    sessions: Mutex<Vec<Weak<Subscriptions>>>,
    running: Mutex<bool>,
    /// Digests taken when a URI was subscribed, for the task to compare its next read with.
    seeds: Mutex<BTreeMap<String, u64>>,
    /// The list's digest taken when a subscription asked for list changes, before the task's
    /// first pass: a change in between is told too (a session handed over moments after the
    /// light front end last looked).
    list_seed: Mutex<Option<u64>>,
}

impl Watch {
    /// Registers a session that subscribed and starts the watcher task if needed.
    pub(crate) fn register(
        self: &Arc<Self>,
        subs: &Arc<Subscriptions>,
        seeds: Vec<(String, u64)>,
        list_seed: Option<u64>,
        extensions: Arc<Extensions>,
        changes: Option<&StoreChanges>,
    ) {
        for (uri, digest) in seeds {
            lock(&self.seeds).entry(uri).or_insert(digest);
        }
        {
            let mut sessions = lock(&self.sessions);
            if !sessions.iter().any(|w| w.as_ptr() == Arc::as_ptr(subs)) {
                sessions.push(Arc::downgrade(subs));
            }
        }
        let mut running = lock(&self.running);
        if *running {
            return;
        }
        let Some(changes) = changes else {
            return;
        };
        *running = true;
        // A running task has its own baseline; a new one starts from this subscription's.
        *lock(&self.list_seed) = list_seed;
        tokio::spawn(self.clone().run(changes.clone(), extensions));
    }

    /// Whom live sessions ask to be told; forgets ended sessions.
    fn live(&self) -> Vec<Target> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|w| w.strong_count() > 0);
        sessions
            .iter()
            .filter_map(Weak::upgrade)
            .flat_map(|s| s.snapshot())
            .collect()
    }

    async fn run(self: Arc<Self>, feed: StoreChanges, extensions: Arc<Extensions>) {
        let mut changes: watch::Receiver<Version> = feed.subscribe();
        let mut digests: BTreeMap<String, u64> = BTreeMap::new();
        let mut listed: Option<u64> = None;
        // The first pass reads at once: it takes the baseline later changes are told against.
        let mut read_again = Instant::now();
        loop {
            // A feed that went down since the last read: read as often as without one.
            if !feed.connected() {
                read_again = read_again.min(Instant::now() + RECHECK_EVERY);
            }
            let changed = tokio::select! {
                r = changes.changed() => r.is_ok(),
                () = tokio::time::sleep(CHECK_EVERY) => false,
                () = tokio::time::sleep_until(read_again.into()) => false,
            };
            let sessions = self.live();
            if sessions.is_empty() {
                let mut running = lock(&self.running);
                if lock(&self.sessions).is_empty() {
                    *running = false;
                    return;
                }
                // Live sessions that ask for nothing now (a cancelled listen): nothing to read
                // until one asks again, and a read time already past must not fire again.
                read_again = Instant::now() + QUIET_RECHECK;
                continue;
            }
            // The first pass takes the baseline (the list's digest) to compare changes with,
            // unless a subscription took one already.
            if listed.is_none() {
                listed = lock(&self.list_seed).take();
            }
            // A subscription made since the last read (its seed waiting) is read at the next
            // wake, which also sets the read time by its resources' expiry.
            let seeded = !lock(&self.seeds).is_empty();
            if listed.is_some() && !changed && !seeded && Instant::now() < read_again {
                continue;
            }
            let uris: BTreeSet<String> = sessions.iter().flat_map(Target::uris).collect();
            let wanted = uris.clone();
            let ext = extensions.clone();
            let read = tokio::task::spawn_blocking(move || {
                let now = now_ms();
                (digest_all(&ext, &uris), next_expiry(&ext, now), now)
            })
            .await;
            let (read, expiry, read_at) = match read {
                Ok(read) => read,
                Err(e) => {
                    tracing::warn!("reading the subscribed resources failed ({e}); retrying");
                    read_again = Instant::now() + RECHECK_EVERY;
                    continue;
                }
            };
            read_again = next_read(Instant::now(), feed.connected(), expiry, read_at);
            for (uri, seed) in std::mem::take(&mut *lock(&self.seeds)) {
                digests.entry(uri).or_insert(seed);
            }
            let (updated, list_changed) = compare(&mut digests, &mut listed, read, &wanted);
            let updated: Vec<&String> = updated.iter().collect();
            for target in &sessions {
                target.notify(&updated, list_changed).await;
            }
        }
    }
}

/// What one read tells against the last digests (`digests` of the `wanted` resources,
/// `listed` of the list), which it then updates: the resources whose contents changed, and
/// whether the list did. A resource new to the watch takes its first digest (changes after it
/// are told). One the read could not get (the store unreachable for a moment) keeps its last
/// digest, and so does the list: the next read that gets it is compared with what was told,
/// so a change made meanwhile is still told, and a failed read is no change.
fn compare(
    digests: &mut BTreeMap<String, u64>,
    listed: &mut Option<u64>,
    (read, read_list): (BTreeMap<String, u64>, Option<u64>),
    wanted: &BTreeSet<String>,
) -> (Vec<String>, bool) {
    let updated = read
        .iter()
        .filter(|(uri, d)| digests.get(*uri).is_some_and(|old| old != *d))
        .map(|(uri, _)| uri.clone())
        .collect();
    let list_changed = matches!((&*listed, read_list), (Some(old), Some(new)) if *old != new);
    digests.retain(|uri, _| wanted.contains(uri));
    digests.extend(read);
    if read_list.is_some() {
        *listed = read_list;
    }
    (updated, list_changed)
}

/// When the watcher reads again without a change from the feed, at `now`: every
/// [`RECHECK_EVERY`] while the feed is not `connected`; otherwise just after the next message
/// expires (`expiry`, read at `read_at` in milliseconds), and at least every [`QUIET_RECHECK`].
fn next_read(now: Instant, connected: bool, expiry: Option<i64>, read_at: i64) -> Instant {
    if !connected {
        return now + RECHECK_EVERY;
    }
    let until_expiry = expiry
        .map(|at| Duration::from_millis(u64::try_from(at.saturating_sub(read_at)).unwrap_or(0)))
        .map_or(QUIET_RECHECK, |d| (d + EXPIRY_MARGIN).min(QUIET_RECHECK));
    now + until_expiry
}

/// When the next message of the store in `extensions` expires after `now` (`None` when none
/// does, or the store cannot say: the quiet re-read covers that).
pub(crate) fn next_expiry(extensions: &Extensions, now: i64) -> Option<i64> {
    let store = extensions.get::<store::StoreHandle>()?;
    store.next_expiry(now).ok().flatten()
}

/// Digests of each URI's contents (read with no session: nothing hidden) and of the list.
fn digest_all(
    extensions: &Extensions,
    uris: &BTreeSet<String>,
) -> (BTreeMap<String, u64>, Option<u64>) {
    let policy = SessionPolicy::ExplicitOnly;
    let ctx = CallContext::new(now_ms(), &policy, extensions);
    let mut digests = BTreeMap::new();
    for uri in uris {
        let Ok((registration, vars)) = resources_and_prompts::resource_for(uri) else {
            continue;
        };
        if let Ok(contents) = resources_and_prompts::read_resource(&ctx, registration, uri, &vars) {
            digests.insert(uri.clone(), digest(&contents.to_string()));
        }
    }
    let listed = resources_and_prompts::list_resources(&ctx)
        .ok()
        .map(|list| digest_of_list(&list));
    (digests, listed)
}

/// The digest of the resource list now (taken when a subscription asks for its changes).
pub(crate) fn list_digest(extensions: &Extensions) -> Option<u64> {
    let policy = SessionPolicy::ExplicitOnly;
    let ctx = CallContext::new(now_ms(), &policy, extensions);
    resources_and_prompts::list_resources(&ctx)
        .ok()
        .map(|list| digest_of_list(&list))
}

fn digest_of_list(list: &serde_json::Value) -> u64 {
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["uri"].as_str()).collect())
        .unwrap_or_default();
    digest(&uris.join("\n"))
}

/// The digest of `uri`'s contents now (taken when a session subscribes).
pub(crate) fn digest_of(extensions: &Extensions, uri: &str) -> Option<u64> {
    let policy = SessionPolicy::ExplicitOnly;
    let ctx = CallContext::new(now_ms(), &policy, extensions);
    let (registration, vars) = resources_and_prompts::resource_for(uri).ok()?;
    let contents = resources_and_prompts::read_resource(&ctx, registration, uri, &vars).ok()?;
    Some(digest(&contents.to_string()))
}

fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_fails_keeps_the_last_digests_and_is_no_change() {
        let a = "hooks://channels/a".to_owned();
        let b = "hooks://channels/b".to_owned();
        let wanted: BTreeSet<String> = [a.clone(), b.clone()].into();
        let (mut digests, mut listed) = (BTreeMap::new(), None);
        let read = |pairs: &[(&String, u64)], list: Option<u64>| {
            let map = pairs.iter().map(|(u, d)| ((*u).clone(), *d)).collect();
            (map, list)
        };
        // The baseline: nothing told.
        let told = compare(
            &mut digests,
            &mut listed,
            read(&[(&a, 1), (&b, 1)], Some(7)),
            &wanted,
        );
        assert_eq!(told, (vec![], false));
        // The store cannot be read: `a` and the list are missing from the read. No change.
        let told = compare(&mut digests, &mut listed, read(&[(&b, 1)], None), &wanted);
        assert_eq!(told, (vec![], false));
        // `a` changed meanwhile: the next read that gets it tells it; the list is the same.
        let told = compare(
            &mut digests,
            &mut listed,
            read(&[(&a, 2), (&b, 1)], Some(7)),
            &wanted,
        );
        assert_eq!(told, (vec![a.clone()], false));
        // A list changed across a failed read is told too.
        compare(
            &mut digests,
            &mut listed,
            read(&[(&a, 2), (&b, 1)], None),
            &wanted,
        );
        let told = compare(
            &mut digests,
            &mut listed,
            read(&[(&a, 2), (&b, 1)], Some(8)),
            &wanted,
        );
        assert_eq!(told, (vec![], true));
        // A resource no longer wanted is forgotten: wanted again, it starts a new baseline.
        let only_b: BTreeSet<String> = [b.clone()].into();
        compare(
            &mut digests,
            &mut listed,
            read(&[(&b, 1)], Some(8)),
            &only_b,
        );
        assert!(!digests.contains_key(&a));
        let told = compare(
            &mut digests,
            &mut listed,
            read(&[(&a, 5), (&b, 1)], Some(8)),
            &wanted,
        );
        assert_eq!(told, (vec![], false));
    }

    #[test]
    fn the_next_read_follows_the_next_expiry_within_the_quiet_recheck() {
        let now = Instant::now();
        let read_at = 1_000_000;
        // The next message expires in 3 s: read just after it.
        let soon = next_read(now, true, Some(read_at + 3_000), read_at);
        assert_eq!(soon - now, Duration::from_secs(3) + EXPIRY_MARGIN);
        // Nothing expires, or only later than the quiet recheck: the quiet recheck.
        assert_eq!(next_read(now, true, None, read_at) - now, QUIET_RECHECK);
        let late = next_read(now, true, Some(read_at + 3_600_000), read_at);
        assert_eq!(late - now, QUIET_RECHECK);
        // Already expired when read (the clock moved on): at once, after the margin.
        let past = next_read(now, true, Some(read_at - 50), read_at);
        assert_eq!(past - now, EXPIRY_MARGIN);
        // Without a feed: the recheck pace, whatever expires.
        let unfed = next_read(now, false, Some(read_at + 3_000), read_at);
        assert_eq!(unfed - now, RECHECK_EVERY);
    }
}
