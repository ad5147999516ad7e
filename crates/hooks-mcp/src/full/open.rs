//! Opening the store from the environment, for the hook command and the operator subcommands.

use std::sync::Arc;
use std::time::Duration;

use store::{OpenOptions, Opened, SqliteStore, StoreError, StoreLocation};

/// How long a store call waits for another process's lock, in milliseconds (default 5000).
const BUSY_TIMEOUT_ENV: &str = "HOOKS_MCP_BUSY_TIMEOUT_MS";

/// Opens the store the environment selects. Without `create`, a missing store is
/// [`StoreError::Missing`] (the hook treats that as "nothing to deliver").
pub(crate) fn store_from_env(create: bool) -> Result<(Arc<dyn store::Store>, Opened), StoreError> {
    let location = StoreLocation::from_env().ok_or(StoreError::NoLocation)?;
    let mut options = OpenOptions {
        create,
        ..OpenOptions::default()
    };
    if let Some(ms) = std::env::var(BUSY_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        options.busy_timeout = Duration::from_millis(ms);
    }
    let (store, opened) = SqliteStore::open(&location, &options)?;
    Ok((Arc::new(store), opened))
}

/// The current time in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
