//! The process's one feed of store changes: every live consumer (resource subscriptions, the
//! daemon's scheduler, the console's event streams) subscribes to it instead of polling the
//! store on its own.
//!
//! One thread runs while anyone subscribes. Where the store can wake it
//! ([`store::StoreAdmin::changes`]: PostgreSQL's LISTEN/NOTIFY, SQLite's files watched on
//! Linux) it sleeps on that feed, logs what arrives (at debug) and reopens a lost feed
//! (counting the reopening as a change: changes may have been missed meanwhile); it wakes on
//! its own only every [`LISTENERS_CHECK`], to see whether anyone still listens. Otherwise
//! (SQLite where no watch can be had) it asks the store's change version
//! ([`store::StoreAdmin::change_version`]: `PRAGMA data_version`, no table read) every
//! [`POLL`]. Either way it publishes a [`Version`] on a `tokio::sync::watch` channel, so a burst
//! of changes wakes each consumer once, and losing the feed wakes them too
//! ([`StoreChanges::connected`] then says so). The feed is a hint: consumers read the store for
//! the truth, and keep a slow timer of their own for what changes with time alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::{Change, ChangeFeed, StoreError, StoreHandle};
use tokio::sync::watch;

/// How often the thread polls a store without a feed.
pub(crate) const POLL: Duration = Duration::from_millis(200);
/// The longest single wait on a feed: how soon the thread notices that nobody listens any
/// more (and ends).
const LISTENERS_CHECK: Duration = Duration::from_secs(5);
/// Pause before reopening a lost feed, doubled after each failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// Longest pause between attempts to reopen the feed.
const MAX_RETRY: Duration = Duration::from_secs(5);

/// What the feed has seen so far: counters that move when something changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Version {
    /// Moves on every change this process noticed (its own commits included).
    pub any: u64,
    /// Moves when a schedule may have changed (on a feed that cannot tell, or when polling: on
    /// any change).
    pub schedules: u64,
}

/// The feed: subscribe to hear of changes. Cheap to clone; one per process.
#[derive(Debug, Clone)]
pub struct StoreChanges {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: StoreHandle,
    sender: watch::Sender<Version>,
    /// Whether the thread runs.
    running: Mutex<bool>,
    /// Whether it is connected to the store (a push feed open, or the change version readable).
    connected: AtomicBool,
}

impl StoreChanges {
    /// A feed over `store`. Nothing runs until the first [`StoreChanges::subscribe`].
    pub fn new(store: StoreHandle) -> StoreChanges {
        let (sender, _) = watch::channel(Version::default());
        StoreChanges {
            inner: Arc::new(Inner {
                store,
                sender,
                running: Mutex::new(false),
                connected: AtomicBool::new(false),
            }),
        }
    }

    /// A receiver of every change from now on (`changed()` resolves when one happens). Starts
    /// the feed's thread if it is not running; it stops once every receiver is gone.
    pub fn subscribe(&self) -> watch::Receiver<Version> {
        let receiver = self.inner.sender.subscribe();
        let mut running = self.inner.running.lock().unwrap_or_else(|p| p.into_inner());
        if !*running {
            let inner = self.inner.clone();
            let spawned = std::thread::Builder::new()
                .name("hooks-mcp-changes".into())
                .spawn(move || inner.run());
            match spawned {
                Ok(_) => *running = true,
                Err(e) => tracing::warn!("cannot watch the store for changes ({e})"),
            }
        }
        receiver
    }

    /// Whether the feed is connected to the store: changes made elsewhere reach it.
    pub fn connected(&self) -> bool {
        self.inner.connected.load(Ordering::Acquire)
    }
}

impl Inner {
    fn listening(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    /// Marks the feed lost; the first time, tells the subscribers too (as a change that may
    /// concern schedules): a consumer that relied on the feed, such as the daemon's scheduler,
    /// goes back to looking on its own at once.
    fn disconnected(&self) {
        if self.connected.swap(false, Ordering::AcqRel) {
            self.bump(true);
        }
    }

    fn bump(&self, schedules: bool) {
        self.sender.send_modify(|v| {
            v.any = v.any.wrapping_add(1);
            if schedules {
                v.schedules = v.schedules.wrapping_add(1);
            }
        });
    }

    fn run(self: Arc<Self>) {
        match self.store.changes() {
            Ok(Some(feed)) => {
                // A change committed after a subscriber's first read and before the feed took
                // its baseline would be heard by no one: one look now covers it.
                self.bump(true);
                self.push(Some(feed));
            }
            Ok(None) => self.poll(),
            Err(e @ StoreError::NoWatch { .. }) => self.poll_instead(&e),
            Err(e) => {
                tracing::warn!("cannot listen for store changes ({e}); retrying");
                self.push(None);
            }
        }
        self.connected.store(false, Ordering::Release);
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        *running = false;
        // A subscriber that arrived while the thread was ending would otherwise wait forever.
        if self.listening() {
            drop(running);
            let inner = self.clone();
            let restarted = std::thread::Builder::new()
                .name("hooks-mcp-changes".into())
                .spawn(move || inner.run());
            if restarted.is_ok() {
                *self.running.lock().unwrap_or_else(|p| p.into_inner()) = true;
            }
        }
    }

    /// A store whose files cannot be watched (no inotify descriptor left, say): polled.
    fn poll_instead(&self, why: &StoreError) {
        tracing::warn!("{why}; polling the store for changes every {POLL:?} instead");
        self.poll();
    }

    /// A store without a feed: its change version, every [`POLL`].
    fn poll(&self) {
        let mut seen: Option<u64> = None;
        while self.listening() {
            match self.store.change_version() {
                Ok(Some(v)) => {
                    self.connected.store(true, Ordering::Release);
                    // The first version is a baseline taken after subscribers may have read:
                    // one look covers what was committed in between.
                    if seen.is_none_or(|s| s != v) {
                        self.bump(true);
                    }
                    seen = Some(v);
                }
                Ok(None) | Err(_) => self.disconnected(),
            }
            std::thread::sleep(POLL);
        }
    }

    /// A store that pushes its changes: wait on the feed, reopen it when lost.
    fn push(&self, mut feed: Option<Box<dyn ChangeFeed>>) {
        let mut retry = FIRST_RETRY;
        let mut lost = feed.is_none();
        while self.listening() {
            let Some(open) = feed.as_mut() else {
                std::thread::sleep(retry.min(POLL));
                retry = (retry * 2).min(MAX_RETRY);
                match self.store.changes() {
                    Ok(Some(f)) => {
                        tracing::info!("change feed restored: listening for store changes again");
                        feed = Some(f);
                        retry = FIRST_RETRY;
                        lost = false;
                        // Whatever changed while nobody listened is read now.
                        self.bump(true);
                    }
                    Ok(None) => return,
                    Err(e @ StoreError::NoWatch { .. }) => return self.poll_instead(&e),
                    Err(e) => {
                        if !lost {
                            tracing::warn!("cannot listen for store changes ({e}); retrying");
                            lost = true;
                        }
                    }
                }
                continue;
            };
            self.connected.store(true, Ordering::Release);
            match open.wait(LISTENERS_CHECK) {
                Ok(None) => {}
                Ok(Some(change)) => self.received(change),
                Err(e) => {
                    tracing::warn!("lost the store's change feed ({e}); reopening it");
                    self.disconnected();
                    feed = None;
                    lost = true;
                }
            }
        }
    }

    fn received(&self, change: Change) {
        match change {
            Change::Message(id) => {
                tracing::debug!(message = id, "change received: broadcast");
                self.bump(false);
            }
            Change::Cleared(count) => {
                tracing::debug!(count, "change received: cleared");
                self.bump(false);
            }
            Change::Schedule(id) => {
                tracing::debug!(schedule = id, "change received: schedule");
                self.bump(true);
            }
            Change::Written => {
                tracing::debug!("change received: a commit");
                self.bump(true);
            }
        }
    }
}
