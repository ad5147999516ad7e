//! Waking the daemon's scheduler on changes other processes push (PostgreSQL LISTEN/NOTIFY).
//!
//! Where the store has a change feed ([`store::StoreAdmin::changes`]), a thread of its own waits
//! on it, logs what arrives (at debug), and wakes the scheduler when a schedule is created or
//! cancelled, so that a schedule another daemon created fires at its time rather than at the
//! next periodic tick. A lost feed is reopened (the scheduler is woken then too: changes may
//! have been missed meanwhile). The feed is a hint: the scheduler reads the store for the truth,
//! and its periodic tick stays as the fallback. SQLite has no feed: nothing runs then.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use store::{Change, ChangeFeed, StoreHandle};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Longest single wait on the feed: how soon the thread notices a stop.
const POLL: Duration = Duration::from_millis(250);
/// Pause before reopening a lost feed, doubled after each failure up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(250);
/// Longest pause between attempts to reopen the feed.
const MAX_RETRY: Duration = Duration::from_secs(5);

/// The scheduler's side of the change feed.
#[derive(Debug)]
pub(crate) struct Wakeups {
    notify: Arc<Notify>,
    active: Arc<AtomicBool>,
}

impl Wakeups {
    /// Starts a thread that listens on the store's change feed until `stop`. With a store that
    /// pushes no changes (SQLite) the thread ends at once and [`Wakeups::wait`] never returns.
    pub(crate) fn start(store: StoreHandle, stop: CancellationToken) -> Wakeups {
        let notify = Arc::new(Notify::new());
        let active = Arc::new(AtomicBool::new(false));
        let listener = Listener {
            store,
            stop,
            notify: notify.clone(),
            active: active.clone(),
        };
        let spawned = std::thread::Builder::new()
            .name("hooks-mcp-changes".into())
            .spawn(move || listener.run());
        if let Err(e) = spawned {
            tracing::warn!("cannot start the change listener ({e}); schedules fire on the tick");
        }
        Wakeups { notify, active }
    }

    /// Resolves when a schedule changed (or the feed was reopened) since the last call. Wakes
    /// coalesce: a burst of changes wakes the scheduler once.
    pub(crate) async fn wait(&self) {
        self.notify.notified().await;
    }

    /// Whether a feed was opened: then the scheduler also plans a timer for the next due
    /// schedule, since changes to schedules reach it.
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }
}

/// The listening thread's state.
struct Listener {
    store: StoreHandle,
    stop: CancellationToken,
    notify: Arc<Notify>,
    active: Arc<AtomicBool>,
}

impl Listener {
    fn run(self) {
        let mut retry = FIRST_RETRY;
        let mut lost = false;
        while !self.stop.is_cancelled() {
            let mut feed: Box<dyn ChangeFeed> = match self.store.changes() {
                Ok(Some(feed)) => feed,
                Ok(None) => {
                    tracing::debug!("the store pushes no changes; the scheduler ticks only");
                    return;
                }
                Err(e) => {
                    if !lost {
                        tracing::warn!(
                            "cannot listen for store changes ({e}); retrying, schedules fire \
                             on the tick meanwhile"
                        );
                        lost = true;
                    }
                    self.pause(retry);
                    retry = (retry * 2).min(MAX_RETRY);
                    continue;
                }
            };
            if lost {
                tracing::info!("change feed restored: listening for store changes again");
            } else {
                tracing::debug!("listening for store changes");
            }
            self.active.store(true, Ordering::Release);
            // Whatever changed while nobody listened is read now.
            self.notify.notify_one();
            retry = FIRST_RETRY;
            lost = false;
            while !self.stop.is_cancelled() {
                match feed.wait(POLL) {
                    Ok(None) => {}
                    Ok(Some(change)) => self.received(change),
                    Err(e) => {
                        tracing::warn!("lost the store's change feed ({e}); reopening it");
                        lost = true;
                        break;
                    }
                }
            }
        }
    }

    fn received(&self, change: Change) {
        match change {
            Change::Message(id) => tracing::debug!(message = id, "change received: broadcast"),
            Change::Cleared(count) => tracing::debug!(count, "change received: cleared"),
            Change::Schedule(id) => {
                tracing::debug!(schedule = id, "change received: schedule");
                self.notify.notify_one();
            }
        }
    }

    /// Sleeps `pause`, returning early on stop.
    fn pause(&self, pause: Duration) {
        let mut left = pause;
        while !left.is_zero() && !self.stop.is_cancelled() {
            let step = left.min(POLL);
            std::thread::sleep(step);
            left -= step;
        }
    }
}
