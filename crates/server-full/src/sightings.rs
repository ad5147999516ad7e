//! The sessions' tool calls recorded in the store after their answers, by one worker.
//!
//! A sighting is a write of its own: made before the answer, another process holding the
//! store's write lock would hold up every reply by its lock. So the answer goes first and the
//! sighting is queued: one blocking task at a time records what is queued, the newest sighting
//! of each session only (under contention they coalesce instead of each taking a thread of
//! the blocking pool), and a stdio session waits for the queue before it ends.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::lock;
use tokio::sync::Notify;

/// A tool call's session seen, to record in the store.
pub(crate) struct Sighted {
    /// Where to record it.
    pub(crate) store: store::StoreHandle,
    /// What to record.
    pub(crate) sighting: store::Sighting,
}

/// The queue of sightings and its worker.
#[derive(Default)]
pub(crate) struct Sightings {
    queue: Mutex<Queue>,
    /// Told each time the worker stops, the queue empty.
    idle: Notify,
}

#[derive(Default)]
struct Queue {
    /// The newest sighting of each session not recorded yet.
    pending: BTreeMap<String, Sighted>,
    /// Whether a worker is recording.
    working: bool,
}

impl Sightings {
    /// Queues `sighted` (replacing an older one of its session) and starts the worker unless
    /// it runs. Needs a tokio runtime.
    pub(crate) fn record(self: &Arc<Self>, sighted: Sighted) {
        let mut queue = lock(&self.queue);
        let newer = queue
            .pending
            .get(&sighted.sighting.session_id)
            .is_none_or(|queued| queued.sighting.at <= sighted.sighting.at);
        if newer {
            queue
                .pending
                .insert(sighted.sighting.session_id.clone(), sighted);
        }
        if !queue.working {
            queue.working = true;
            let this = self.clone();
            drop(tokio::task::spawn_blocking(move || this.work()));
        }
    }

    /// Records what is queued until nothing is; best effort (a failure is logged).
    fn work(&self) {
        loop {
            let batch = {
                let mut queue = lock(&self.queue);
                if queue.pending.is_empty() {
                    queue.working = false;
                    self.idle.notify_waiters();
                    return;
                }
                std::mem::take(&mut queue.pending)
            };
            for sighted in batch.into_values() {
                if let Err(e) = sighted.store.record_sighting(&sighted.sighting) {
                    tracing::debug!("could not record the session's tool call: {e}");
                }
            }
        }
    }

    /// Waits, at most `limit`, until every queued sighting is recorded.
    pub(crate) async fn flush(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let stopped = self.idle.notified();
            tokio::pin!(stopped);
            stopped.as_mut().enable();
            {
                let queue = lock(&self.queue);
                if queue.pending.is_empty() && !queue.working {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, stopped).await.is_err() {
                tracing::debug!("the session ends with its last tool calls not yet recorded");
                return;
            }
        }
    }
}

impl std::fmt::Debug for Sightings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let queue = lock(&self.queue);
        f.debug_struct("Sightings")
            .field("pending", &queue.pending.len())
            .field("working", &queue.working)
            .finish()
    }
}
