//! Typed store failures.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong in the store, and how to repair it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file does not exist and creation was not requested.
    #[error(
        "no store at {path}: start the server once to create it, or set HOOKS_MCP_HOME to the \
         directory that holds state.db (HOOKS_MCP_DATABASE_URL for PostgreSQL)"
    )]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// No location could be derived from the environment.
    #[error("cannot locate the store: set HOOKS_MCP_HOME (or HOME / XDG_STATE_HOME)")]
    NoLocation,
    /// The file is not a usable database.
    #[error(
        "the store at {path} is corrupt ({detail}); move it aside together with its -wal and \
         -shm files beside it (keep all three for recovery) and restart to create a fresh one"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
    },
    /// The database, its `-wal` or `-shm` file, or their directory cannot be written.
    #[error(
        "the store at {path} is read-only ({detail}); give this user write access to {file} \
         and its directory (WAL mode writes state.db, state.db-wal and state.db-shm there)"
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// The file this user cannot write: the database, or its `-wal` or `-shm` file when
        /// that is the one (another user's, say).
        file: PathBuf,
        /// What SQLite reported.
        detail: String,
    },
    /// Another process held a lock for longer than the busy timeout.
    #[error(
        "the store at {path} stayed locked for {waited:?}; another process holds a long write. \
         Retry, or raise HOOKS_MCP_BUSY_TIMEOUT_MS"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// How long this call waited.
        waited: Duration,
    },
    /// The database was written by a newer hooks-mcp.
    #[error(
        "the store at {path} has schema version {found}, newer than the {supported} this \
         build supports; upgrade hooks-mcp (nothing was changed)"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Version found in the file.
        found: u32,
        /// Newest version this build knows.
        supported: u32,
    },
    /// The file is another program's SQLite database: it holds tables (or other schema
    /// objects) but no hooks-mcp schema version. Nothing was changed.
    #[error(
        "{path} is not a hooks-mcp store: it is a SQLite database with {objects} table(s) or \
         other objects of another program and no hooks-mcp schema version (nothing was \
         changed); point HOOKS_MCP_HOME at another directory, or move the file (with its -wal \
         and -shm files) aside"
    )]
    NotAStore {
        /// The database file.
        path: PathBuf,
        /// How many tables, indexes, views and triggers it holds.
        objects: u64,
    },
    /// Verification found the schema incomplete.
    #[error(
        "the store at {path} lacks table `{table}` although its schema version is {version}; \
         it was modified outside hooks-mcp: move it aside and restart to recreate it"
    )]
    MissingTable {
        /// The database file.
        path: PathBuf,
        /// The missing table.
        table: &'static str,
        /// The recorded schema version.
        version: u32,
    },
    /// A database server (PostgreSQL) cannot be reached or dropped the connection. The call did
    /// not take effect unless the server committed it before the connection was lost.
    #[error(
        "the store at {store} is unavailable ({detail}); check that the database server is \
         running and reachable, then retry (a running daemon or MCP server reconnects by \
         itself; each hook tries again on its next event)"
    )]
    Unavailable {
        /// The store's description (never credentials).
        store: String,
        /// What the client reported.
        detail: String,
    },
    /// The database server answered but refused this client: the role, its password or the
    /// database (SQLSTATE class 28, `3D000`), or the role may not connect (`42501`). Nothing
    /// is wrong with the server's reachability; the connection settings need fixing.
    #[error(
        "the database server of {store} refused the connection ({detail}); check the user, \
         password and database name in HOOKS_MCP_DATABASE_URL (the database must exist: \
         `createdb`; the role needs CONNECT and a pg_hba.conf entry), then retry (a running \
         daemon or MCP server tries again by itself)"
    )]
    Refused {
        /// The store's description (never credentials).
        store: String,
        /// What the server said, with its SQLSTATE.
        detail: String,
    },
    /// A setting (an environment variable) has a value the store cannot use.
    #[error("{name}: {problem}")]
    InvalidSetting {
        /// The setting, e.g. `HOOKS_MCP_DATABASE_URL`.
        name: &'static str,
        /// What is wrong with its value and how to fix it (never the value of a secret).
        problem: String,
    },
    /// A record the call refers to does not exist.
    #[error("{what} {id} does not exist")]
    NotFound {
        /// The kind of record.
        what: &'static str,
        /// Its identifier.
        id: String,
    },
    /// The write conflicts with existing data (a name already taken...).
    #[error("{0}")]
    Conflict(String),
    /// A stored value could not be decoded: the database holds something this build never wrote.
    #[error("the store holds an invalid value: {0}")]
    InvalidData(String),
    /// Any other database failure.
    #[error("database error: {0}")]
    Database(String),
    /// Inside [`crate::no_wait::try_without_waiting`], the call would have had to wait. Callers
    /// of that function never see it: they run the call again where waiting is fine.
    #[error("the store call would have to wait; run it where it may block")]
    WouldWait,
    /// The database's files cannot be watched for changes (no inotify instance or watch left,
    /// say): callers of [`crate::StoreAdmin::changes`] poll instead.
    #[error("cannot watch {path} for changes: {source}{hint}")]
    NoWatch {
        /// The database.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
        /// What to raise when a limit was reached (empty otherwise).
        hint: &'static str,
    },
    /// The disk under the database failed a write: it is full (`SQLITE_FULL`), or an I/O error
    /// (`SQLITE_IOERR`, which a full disk also causes while a file grows, and so does a write
    /// past the process's file-size limit). The failed call wrote nothing.
    #[error(
        "cannot write the store at {path} ({detail}); {advice}, then retry; the failed call wrote nothing"
    )]
    Disk {
        /// The database file.
        path: PathBuf,
        /// What SQLite reported.
        detail: String,
        /// The likely cause and its remedy: the process's file-size limit when one is set, else
        /// a full or failing disk.
        advice: String,
    },
    /// A file-system failure around the database (creating its directory...).
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl From<StoreError> for catalogue::ToolError {
    /// Missing records and conflicts are the caller's to fix; everything else is the server's.
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound { .. } => catalogue::ToolError::NotFound(e.to_string()),
            StoreError::Conflict(_) => catalogue::ToolError::Refused(e.to_string()),
            other => catalogue::ToolError::Internal(other.to_string()),
        }
    }
}
