//! The environment a server runs in.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use catalogue::{Extensions, Filter, FilterWarning, SessionPolicy, StartMode};
use store::{Opened, StoreError, StoreHandle};

/// Environment variables naming the agent session a stdio server acts for, in priority order.
pub use protocol_lite::setting::SESSION_ENV;

/// The settings this module parses, for the generated configuration reference.
pub const SESSION_SETTINGS: &[catalogue::Setting] = &[
    catalogue::Setting {
        env: "HOOKS_MCP_SESSION_ID",
        flag: "",
        default: "unset",
        effect: "stdio only: the agent session a server acts for when a tool call passes no \
                 `session_id`; falls back to `CLAUDE_CODE_SESSION_ID`. With neither, such calls \
                 must pass `session_id`. Network transports always require it.",
    },
    catalogue::Setting {
        env: "CLAUDE_CODE_SESSION_ID",
        flag: "",
        default: "set by Claude Code",
        effect: "The session id Claude Code gives the servers it starts (see above).",
    },
];

/// Why the server could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The store could not be located or opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The start mode settings are invalid.
    #[error(transparent)]
    Mode(#[from] catalogue::ModeError),
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
    /// Which tools a session advertises at start.
    pub mode: StartMode,
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
        Settings::stdio_with(true)
    }

    /// [`Settings::stdio_from_env`]; `push`: whether the push settings are read (a listing
    /// child pushes nothing, and would repeat their warnings at every run).
    pub(crate) fn stdio_with(
        push: bool,
    ) -> Result<(Settings, Vec<FilterWarning>, Opened), SettingsError> {
        let (filter, warnings) = Filter::from_env();
        let mode = mode_from_env()?;
        let session = SessionPolicy::Fallback(
            SESSION_ENV
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty())),
        );
        // PostgreSQL when HOOKS_MCP_DATABASE_URL is set, else SQLite at the usual location.
        let (store, opened) = store::open_from_env(true)?;
        let mut extensions = Settings::extensions(store);
        extensions.insert(store::Transport::Stdio);
        if let Some(channel_push) = push.then(crate::ChannelPush::from_env).flatten() {
            extensions.insert(channel_push);
        }
        let settings = Settings {
            filter,
            session,
            mode,
            extensions: Arc::new(extensions),
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

/// The start mode from [`catalogue::MODE_ENV`] and [`catalogue::MODULES_ENV`] (the front end
/// passes its flags on this way).
///
/// # Errors
/// [`SettingsError::Mode`] for an unknown mode or module.
pub fn mode_from_env() -> Result<StartMode, SettingsError> {
    let (mode, _) = StartMode::parse(
        &[],
        std::env::var(catalogue::MODE_ENV).ok().as_deref(),
        std::env::var(catalogue::MODULES_ENV).ok().as_deref(),
    )?;
    Ok(mode)
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Settings {
    /// Settings for the network daemon from the environment, around an opened `store`: the
    /// category filters and start mode (they apply to every client of the daemon) and no
    /// session fallback. One process serves many agent sessions, so tools that act for a
    /// session require an explicit `session_id` ([`SessionPolicy::ExplicitOnly`]).
    ///
    /// # Errors
    /// [`SettingsError::Mode`] for an unknown start mode or module.
    pub fn network_from_env(
        store: StoreHandle,
    ) -> Result<(Settings, Vec<FilterWarning>), SettingsError> {
        let (filter, warnings) = Filter::from_env();
        // Each transport's sessions record their tool calls as made over it
        // (`HooksServer::on_transport`).
        let settings = Settings {
            filter,
            session: SessionPolicy::ExplicitOnly,
            mode: mode_from_env()?,
            extensions: Arc::new(Settings::extensions(store)),
        };
        Ok((settings, warnings))
    }
}
