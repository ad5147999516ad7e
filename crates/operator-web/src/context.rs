//! What the API and the console read: the store, its change feed, the retention settings and
//! the daemon's view; and the one way they run a store read off the async threads.

use std::sync::Arc;

use server_full::StoreChanges;
use store::{StoreError, StoreHandle};
use tokio_util::sync::CancellationToken;

use crate::view::DaemonView;

/// Everything the operator's pages read. Build one and take both routers from it.
#[derive(Debug, Clone)]
pub struct OperatorWeb {
    /// The store the daemon serves.
    pub store: StoreHandle,
    /// The process's feed of store changes (live pages wait on it).
    pub changes: StoreChanges,
    /// The live window and retention periods.
    pub retention: store::Retention,
    /// The daemon, as the pages see it.
    pub view: Arc<dyn DaemonView>,
    /// Cancelled when the daemon stops: open event streams end.
    pub stop: CancellationToken,
}

/// Why a store read on the blocking pool did not answer.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The store refused or failed.
    Store(StoreError),
    /// The blocking task itself failed (panicked or was cancelled).
    Task(String),
}

impl OperatorWeb {
    /// Runs `read` on the blocking pool.
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&StoreHandle) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, ReadError> {
        let store = self.store.clone();
        match tokio::task::spawn_blocking(move || read(&store)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(ReadError::Store(e)),
            Err(e) => Err(ReadError::Task(e.to_string())),
        }
    }
}
