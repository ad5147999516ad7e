//! Persistence for hooks-mcp: the domain API the tools use, its embedded SQLite backend and a
//! PostgreSQL backend.
//!
//! # What this crate owns
//!
//! - The domain API ([`api`]): one trait per tool category ([`ChannelStore`],
//!   [`EnforcementStore`], [`ConditionStore`], [`ScheduleStore`]) plus [`StoreAdmin`] for opening
//!   checks and health. [`Store`] is all of them together; tools hold a [`StoreHandle`].
//!   The API speaks in domain types and Unix-millisecond timestamps, never in SQL, so another
//!   backend (PostgreSQL) can implement it without touching the tools.
//! - [`SqliteStore`], the embedded default: WAL, a busy timeout, versioned migrations and
//!   [`StoreAdmin::verify`]. Many processes (one stdio server per agent session, hooks, a daemon)
//!   share one database file; every multi-statement write is one immediate transaction, and a
//!   caller's run of calls can share one ([`StoreAdmin::in_one_transaction`], what a hook
//!   event does). The connection is reentrant for that unit of work (`parking_lot`).
//! - `PostgresStore` (feature `postgres`, on by default): one PostgreSQL database for a fleet of
//!   machines, selected at run time by `HOOKS_MCP_DATABASE_URL`. Same API and semantics; a
//!   bounded lazy pool, versioned migrations, `FOR UPDATE SKIP LOCKED` claims in `fire_due`,
//!   and a LISTEN/NOTIFY change feed ([`StoreAdmin::changes`]).
//! - [`open_from_env`]: the one place that picks the backend from the environment
//!   ([`open_sqlite_from_env`] for a program that links no PostgreSQL client).
//! - [`StoreLocation`] (the `store-files` crate's, which the stdio front end shares): where the
//!   database lives (`HOOKS_MCP_HOME`, else the XDG state directory).
//! - [`StoreError`]: typed failures that say what is wrong and how to repair it.
//! - [`PushStore`]: the urgent messages to push into one session (Claude Code's channels).
//! - [`no_wait`]: store calls that answer at once or refuse, for servers that run read-only
//!   tools on their async thread.
//!
//! # What it must not depend on
//!
//! No MCP SDK, no async runtime of its own (the PostgreSQL client drives each connection on a
//! private single-threaded one, inside its synchronous calls), no tools crate (it uses only the
//! catalogue's `ToolError`, to convert its errors for tool results): the store is a plain
//! library the hook path opens in a millisecond (SQLite) or one connection (PostgreSQL).

pub mod api;
mod audit;
mod delivery;
mod error;
mod file_size;
mod fleet;
pub mod no_wait;
#[cfg(feature = "postgres")]
mod postgres;
mod push;
mod retention;
pub mod rules;
mod sqlite;

pub use api::*;
pub use delivery::{Admission, AtMost, Backlog, Delivery, Unbounded, delivery_order};
pub use error::StoreError;
#[cfg(feature = "postgres")]
pub use postgres::{
    CONNECT_TIMEOUT_ENV, POOL_SIZE_ENV, PgOptions, PostgresStore, STATEMENT_TIMEOUT_ENV,
};
pub use push::{PushQuery, PushStore};
pub use retention::{
    AUDIT_RETENTION_ENV, Pruned, Retention, SESSION_LIVE_ENV, SESSION_RETENTION_ENV, housekeeping,
};
pub use rules::{from_rfc3339, to_rfc3339};
pub use sqlite::{OpenOptions, Opened, SCHEMA_VERSION, SqliteStore};
pub use store_files::{HOME_ENV, StoreLocation};

/// Environment variable holding a PostgreSQL URL; when set (and not blank) it selects the
/// PostgreSQL backend instead of SQLite.
pub const DATABASE_URL_ENV: &str = "HOOKS_MCP_DATABASE_URL";

/// Environment variable: how long a store call waits for another's lock, in milliseconds
/// (default 5000). SQLite's busy timeout; PostgreSQL's `lock_timeout`.
pub const BUSY_TIMEOUT_ENV: &str = "HOOKS_MCP_BUSY_TIMEOUT_MS";

/// The settings this crate parses, for the generated configuration reference.
pub const SETTINGS: &[catalogue::Setting] = &[
    catalogue::Setting {
        env: HOME_ENV,
        flag: "",
        default: "unset",
        effect: "Directory holding `state.db` and, beside it, `state.db-wal` and \
                 `state.db-shm`: all three are the store (back it up with `sqlite3 state.db \
                 .backup`, never by copying `state.db` alone; docs/operations.md). Otherwise \
                 `$XDG_STATE_HOME/hooks-mcp/`, else `~/.local/state/hooks-mcp/`. The full \
                 server creates the store on first use and logs it; hooks never create it, and \
                 treat an empty `state.db` as no store yet.",
    },
    catalogue::Setting {
        env: DATABASE_URL_ENV,
        flag: "",
        default: "unset",
        effect: "`postgres://user:password@host:port/db?sslmode=...`: use PostgreSQL instead of \
                 SQLite (one store for a fleet; see docs/postgres.md). Never logged.",
    },
    catalogue::Setting {
        env: BUSY_TIMEOUT_ENV,
        flag: "",
        default: "5000",
        effect: "How long a store call waits for another process's lock, in milliseconds \
                 (SQLite's busy timeout; PostgreSQL's `lock_timeout`).",
    },
    catalogue::Setting {
        env: AUDIT_RETENTION_ENV,
        flag: "",
        default: "90",
        effect: "Days the audit trail keeps an entry (`hooks-mcp audit`); older ones are pruned \
                 by the daemon's tick and by `SessionStart` hooks.",
    },
    catalogue::Setting {
        env: SESSION_RETENTION_ENV,
        flag: "",
        default: "7",
        effect: "Days a session's record (`hooks-mcp sessions`) is kept after it was last seen; \
                 pruned like audit entries.",
    },
    catalogue::Setting {
        env: SESSION_LIVE_ENV,
        flag: "",
        default: "10",
        effect: "Minutes after its last hook event or tool call a session counts as live \
                 (`hooks-mcp sessions`, `hooks-mcp channel status`).",
    },
    #[cfg(feature = "postgres")]
    catalogue::Setting {
        env: POOL_SIZE_ENV,
        flag: "",
        default: "8",
        effect: "PostgreSQL: most connections one process keeps open (none before its first call).",
    },
    #[cfg(feature = "postgres")]
    catalogue::Setting {
        env: CONNECT_TIMEOUT_ENV,
        flag: "",
        default: "5000",
        effect: "PostgreSQL: limit on opening a connection, or waiting for a free one, in ms \
                 (servers retry a refused connection within it; hooks and operator commands \
                 report the first failure).",
    },
    #[cfg(feature = "postgres")]
    catalogue::Setting {
        env: STATEMENT_TIMEOUT_ENV,
        flag: "",
        default: "30000",
        effect: "PostgreSQL: limit on one statement, in milliseconds.",
    },
];

/// Opens the store the environment selects: PostgreSQL when [`DATABASE_URL_ENV`] is set (with
/// [`PgOptions::from_env`]), else the SQLite file at [`StoreLocation::from_env`] (waiting up to
/// [`BUSY_TIMEOUT_ENV`] for locks). With `create`, a missing store is created. Log
/// [`StoreAdmin::describe`] of the result, never the URL: it may hold a password.
///
/// # Errors
/// [`StoreError::NoLocation`], [`StoreError::InvalidSetting`] for a bad setting, and whatever
/// opening the backend reports.
pub fn open_from_env(create: bool) -> Result<(StoreHandle, Opened), StoreError> {
    match open_sqlite_from_env(create)? {
        Some(opened) => Ok(opened),
        None => open_postgres(&database_url_from_env().unwrap_or_default(), create, true),
    }
}

/// [`open_from_env`] for a process that serves one event and exits (the command hook, which
/// the agent waits on): a PostgreSQL server that refuses or cannot be reached is reported at
/// the first failed attempt instead of retried for the connect timeout, and one connection
/// is kept (`PgOptions::retry_connect` off). SQLite opens as in [`open_from_env`].
///
/// # Errors
/// As [`open_from_env`].
pub fn open_from_env_once(create: bool) -> Result<(StoreHandle, Opened), StoreError> {
    match open_sqlite_from_env(create)? {
        Some(opened) => Ok(opened),
        None => open_postgres(&database_url_from_env().unwrap_or_default(), create, false),
    }
}

/// [`open_from_env`] for SQLite alone: `Ok(None)`, with nothing opened, when
/// [`DATABASE_URL_ENV`] selects PostgreSQL. A program that calls only this never references
/// the PostgreSQL backend, so an optimised build of it links neither the PostgreSQL client
/// nor TLS (the hook binary, which hands a PostgreSQL store over to the full binary).
///
/// # Errors
/// As [`open_from_env`] on SQLite.
pub fn open_sqlite_from_env(create: bool) -> Result<Option<(StoreHandle, Opened)>, StoreError> {
    if database_url_from_env().is_some() {
        return Ok(None);
    }
    let location = StoreLocation::from_env().ok_or(StoreError::NoLocation)?;
    let mut options = OpenOptions {
        create,
        ..OpenOptions::default()
    };
    if let Some(text) = std::env::var(BUSY_TIMEOUT_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        let ms: u64 = text
            .trim()
            .parse()
            .map_err(|_| StoreError::InvalidSetting {
                name: BUSY_TIMEOUT_ENV,
                problem: format!("must be a whole number of milliseconds, got `{text}`"),
            })?;
        options.busy_timeout = std::time::Duration::from_millis(ms);
    }
    let (store, opened) = SqliteStore::open(&location, &options)?;
    Ok(Some((StoreHandle(std::sync::Arc::new(store)), opened)))
}

/// [`DATABASE_URL_ENV`] when it is set and not blank.
fn database_url_from_env() -> Option<String> {
    std::env::var(DATABASE_URL_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// Which store the environment selects, without secrets, as far as two processes must agree
/// to share it: `None` for SQLite (the file is per machine); for PostgreSQL the database, role
/// and server options of [`DATABASE_URL_ENV`] (see `postgres::identity`). Nothing is opened.
///
/// # Errors
/// [`StoreError::InvalidSetting`] for a URL that cannot be parsed (or a build without
/// PostgreSQL support).
pub fn identity_from_env() -> Result<Option<String>, StoreError> {
    let Some(url) = database_url_from_env() else {
        return Ok(None);
    };
    postgres_identity(&url).map(Some)
}

#[cfg(feature = "postgres")]
fn postgres_identity(url: &str) -> Result<String, StoreError> {
    postgres::identity(url, |k| std::env::var(k).ok())
}

#[cfg(not(feature = "postgres"))]
fn postgres_identity(url: &str) -> Result<String, StoreError> {
    open_postgres(url, false, false).map(|_| String::new())
}

#[cfg(feature = "postgres")]
fn open_postgres(
    url: &str,
    create: bool,
    retry_connect: bool,
) -> Result<(StoreHandle, Opened), StoreError> {
    let options = PgOptions {
        retry_connect,
        ..PgOptions::from_env(create)?
    };
    let (store, opened) = PostgresStore::open(url, &options)?;
    Ok((StoreHandle::from(store), opened))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(
    _url: &str,
    _create: bool,
    _retry_connect: bool,
) -> Result<(StoreHandle, Opened), StoreError> {
    Err(StoreError::InvalidSetting {
        name: DATABASE_URL_ENV,
        problem: "this build has no PostgreSQL support (store feature `postgres`); unset it to \
                  use SQLite, or rebuild with the feature"
            .into(),
    })
}
