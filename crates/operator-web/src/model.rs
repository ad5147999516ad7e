//! The read model: what the API's overview and the console's overview page show, computed once.

use store::{Counts, StoreError, StoreHandle};

use crate::context::{OperatorWeb, ReadError};
use crate::view::DaemonState;

/// The daemon and the store at a glance.
#[derive(Debug, Clone)]
pub(crate) struct Overview {
    /// hooks-mcp's version.
    pub(crate) version: String,
    /// The daemon's state.
    pub(crate) daemon: DaemonState,
    /// Where the store is (a path or a URL without credentials).
    pub(crate) store: String,
    /// Live records.
    pub(crate) counts: Counts,
    /// Channels with unexpired broadcasts.
    pub(crate) channels: u64,
    /// The next time an active schedule is due (Unix ms).
    pub(crate) next_due: Option<i64>,
    /// Agent sessions seen within the live window.
    pub(crate) live_sessions: u64,
    /// The live window, in seconds.
    pub(crate) live_window_s: i64,
}

/// The store's part of the overview, read in one go.
struct StorePart {
    counts: Counts,
    channels: u64,
    next_due: Option<i64>,
    live_sessions: u64,
    describe: String,
}

fn read_store(store: &StoreHandle, now: i64, live_since: i64) -> Result<StorePart, StoreError> {
    Ok(StorePart {
        counts: store.counts(now)?,
        channels: u64::try_from(store.channels(now)?.len()).unwrap_or(u64::MAX),
        next_due: store.next_fire_after(now - 1)?,
        live_sessions: store.count_sessions(live_since)?,
        describe: store.describe(),
    })
}

/// The overview at `now`.
pub(crate) async fn overview(web: &OperatorWeb, now: i64) -> Result<Overview, ReadError> {
    let live_since = web.retention.live_since(now);
    let part = web
        .read(move |store| read_store(store, now, live_since))
        .await?;
    Ok(Overview {
        version: protocol_lite::handshake::SERVER_VERSION.to_owned(),
        daemon: web.view.state(now),
        store: part.describe,
        counts: part.counts,
        channels: part.channels,
        next_due: part.next_due,
        live_sessions: part.live_sessions,
        live_window_s: web.retention.live_ms / 1000,
    })
}
