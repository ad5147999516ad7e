//! The environment a server runs in.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use catalogue::{Extensions, Filter, FilterWarning, SessionPolicy};
use protocol_lite::handshake::ServerIdentity;
use store::{OpenOptions, Opened, SqliteStore, StoreError, StoreHandle, StoreLocation};

/// Environment variables naming the agent session a stdio server acts for, in priority order.
pub const SESSION_ENV: [&str; 2] = ["HOOKS_MCP_SESSION_ID", "CLAUDE_CODE_SESSION_ID"];

/// How long a store call waits for another process's lock, in milliseconds (default 5000).
pub const BUSY_TIMEOUT_ENV: &str = "HOOKS_MCP_BUSY_TIMEOUT_MS";

/// Why the server could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The store could not be located or opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The registered tools do not form a valid catalogue.
    #[error(transparent)]
    Catalogue(#[from] catalogue::CatalogueError),
}

/// Everything a [`crate::HooksServer`] is built from.
#[derive(Debug)]
pub struct Settings {
    /// Which tools are exposed.
    pub filter: Filter,
    /// Where a call's session id comes from when the caller passes none.
    pub session: SessionPolicy,
    /// What `initialize` announces.
    pub identity: ServerIdentity,
    /// Services for tool handlers (the store, settings of the tools crates).
    pub extensions: Arc<Extensions>,
}

impl Settings {
    /// Settings for a stdio session from the environment: the filters, the session fallback, and
    /// the store (created if missing; the returned [`Opened`] says so, for the log).
    ///
    /// # Errors
    /// [`SettingsError::Store`] when the store cannot be located, opened or migrated.
    pub fn stdio_from_env() -> Result<(Settings, Vec<FilterWarning>, Opened), SettingsError> {
        let (filter, warnings) = Filter::from_env();
        let session = SessionPolicy::Fallback(
            SESSION_ENV
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty())),
        );
        let location = StoreLocation::from_env().ok_or(StoreError::NoLocation)?;
        let mut options = OpenOptions {
            create: true,
            ..OpenOptions::default()
        };
        if let Some(ms) = std::env::var(BUSY_TIMEOUT_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
        {
            options.busy_timeout = std::time::Duration::from_millis(ms);
        }
        let (store, opened) = SqliteStore::open(&location, &options)?;
        let settings = Settings {
            filter,
            session,
            identity: ServerIdentity::default(),
            extensions: Arc::new(Settings::extensions(StoreHandle(Arc::new(store)))),
        };
        Ok((settings, warnings, opened))
    }

    /// The services every tool handler may look up, around `store`.
    pub fn extensions(store: StoreHandle) -> Extensions {
        let mut extensions = Extensions::new();
        extensions.insert(store);
        extensions.insert(tools_conditions::gate_setting_from_env());
        extensions
    }
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
