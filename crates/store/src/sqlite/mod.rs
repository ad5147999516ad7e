//! The embedded SQLite backend.

mod admin;
mod audit;
mod channels;
mod conditions;
mod enforcement;
mod scheduler;
mod sessions;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, TransactionBehavior};

use crate::{StoreError, StoreLocation, StoreResult, no_wait};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = 2;

/// Migrations, in order: `MIGRATIONS[i]` takes a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_fleet.sql"),
];

/// Tables [`crate::StoreAdmin::verify`] requires.
pub(crate) const REQUIRED_TABLES: &[&str] = &[
    "messages",
    "message_acks",
    "message_deliveries",
    "reminders",
    "session_counters",
    "conditions",
    "condition_gates",
    "schedules",
    "schedule_firings",
    "audit_log",
    "sessions",
];

/// The WAL size past which closing a store checkpoints and truncates it: the first connection
/// of every process that finds no other one open re-reads the whole WAL (recovery), so a WAL
/// that only grows would make every short-lived process slower. About 64 pages.
const WAL_TRUNCATE_BYTES: u64 = 64 * 4120;

/// How to open a SQLite store.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// Create the file (and its directory) when it does not exist.
    pub create: bool,
    /// How long a call waits for another process's lock before [`StoreError::Locked`].
    pub busy_timeout: Duration,
}

impl Default for OpenOptions {
    /// Do not create; wait up to 5 s for locks.
    fn default() -> Self {
        OpenOptions {
            create: false,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// What [`SqliteStore::open`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// The file existed.
    Existing,
    /// The file was created now (callers log this).
    Created,
}

/// A store in one SQLite database file, shared safely by many processes.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// Answers reads that must not wait ([`no_wait`]), opened on the first of them: in WAL
    /// mode a reader never waits for writers, and this connection never waits for the main
    /// one. `None` when it could not be opened (such reads then refuse).
    reader: OnceLock<Option<Mutex<Connection>>>,
    path: PathBuf,
    busy_timeout: Duration,
}

impl Drop for SqliteStore {
    /// Folds a long WAL back into the database and truncates it (see [`WAL_TRUNCATE_BYTES`]).
    /// Best effort and never blocking: when another process is using the database, the next
    /// one to close does it.
    fn drop(&mut self) {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        if std::fs::metadata(&wal).map_or(true, |m| m.len() < WAL_TRUNCATE_BYTES) {
            return;
        }
        let conn = self.lock();
        if conn.busy_timeout(Duration::ZERO).is_ok() {
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }
}

impl SqliteStore {
    /// Opens (and with `options.create`, creates) the store at `location`, applying pending
    /// migrations.
    ///
    /// # Errors
    /// [`StoreError::Missing`] when absent and not creating; [`StoreError::NewerSchema`],
    /// [`StoreError::Corrupt`], [`StoreError::ReadOnly`], [`StoreError::Locked`] as found.
    pub fn open(location: &StoreLocation, options: &OpenOptions) -> StoreResult<(Self, Opened)> {
        let path = location.path.clone();
        let exists = path.exists();
        if !exists && !options.create {
            return Err(StoreError::Missing { path });
        }
        if !exists {
            let dir = location.dir();
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                action: "cannot create the store directory",
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        if options.create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|e| map_err(&path, e, None))?;
        let store = SqliteStore {
            conn: Mutex::new(conn),
            reader: OnceLock::new(),
            path,
            busy_timeout: options.busy_timeout,
        };
        // A file other processes are creating and switching to WAL at this very moment reports
        // their lock at once for some steps, without calling the busy handler: retry those
        // steps (all idempotent) within the busy timeout.
        let started = Instant::now();
        loop {
            match store.configure().and_then(|()| store.migrate()) {
                Err(StoreError::Locked { .. }) if started.elapsed() < options.busy_timeout => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => break other?,
            }
        }
        Ok((
            store,
            if exists {
                Opened::Existing
            } else {
                Opened::Created
            },
        ))
    }

    /// Opens the store at `path`, creating it if needed, with default options. Convenient for
    /// tests and tools that own their file.
    ///
    /// # Errors
    /// As [`SqliteStore::open`].
    pub fn create(path: impl Into<PathBuf>) -> StoreResult<Self> {
        let options = OpenOptions {
            create: true,
            ..OpenOptions::default()
        };
        SqliteStore::open(&StoreLocation::at(path), &options).map(|(store, _)| store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn configure(&self) -> StoreResult<()> {
        let conn = self.lock();
        conn.busy_timeout(self.busy_timeout)
            .map_err(|e| self.err(e, None))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // WAL lets readers run beside one writer across processes; NORMAL sync is durable
        // against process crashes, which is the failure this store must survive.
        // WAL is a property of the file: switch only when it is not WAL yet (a new store), so
        // opening an existing one stays a read.
        let mut mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(|e| self.err(e, None))?;
        if !mode.eq_ignore_ascii_case("wal") {
            mode = conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
                .map_err(|e| self.err(e, None))?;
        }
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
                detail: format!("cannot switch to WAL journal mode (got `{mode}`)"),
            });
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| self.err(e, None))?;
        // Short-lived processes (a hook runs around every tool call) must not checkpoint and
        // fsync the database each time they close it: the WAL stays, and `Drop` truncates it
        // once it grows past `WAL_TRUNCATE_BYTES`.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(|e| self.err(e, None))?;
        Ok(())
    }

    fn migrate(&self) -> StoreResult<()> {
        // A plain read first: an up-to-date store (the common case, on every hook) must not
        // queue for the write lock.
        let current: u32 = self
            .lock()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e, None))?;
        if current == SCHEMA_VERSION {
            return Ok(());
        }
        self.write(|tx| {
            let version: u32 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version > SCHEMA_VERSION {
                return Err(Fail::Store(StoreError::NewerSchema {
                    path: self.path.clone(),
                    found: version,
                    supported: SCHEMA_VERSION,
                }));
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.execute_batch(sql)?;
                tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
            }
            Ok(())
        })
    }

    /// Locks the connection. A panic while holding it cannot leave SQLite mid-transaction
    /// (rusqlite rolls back on drop), so a poisoned lock is safe to reuse.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so
    /// concurrent writers queue instead of failing mid-way), committing on success. Refuses
    /// inside [`no_wait::try_without_waiting`].
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> StoreResult<T> {
        if no_wait::active() {
            return Err(no_wait::refuse());
        }
        let started = Instant::now();
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e, Some(started)))?;
        let value = f(&tx).map_err(|e| self.fail(e, started))?;
        tx.commit().map_err(|e| self.err(e, Some(started)))?;
        Ok(value)
    }

    /// Runs `f` in one deferred (read) transaction, so it sees one consistent snapshot. Inside
    /// [`no_wait::try_without_waiting`] it runs on the reader connection, or refuses when that
    /// is in use or SQLite reports a lock.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, Fail>) -> StoreResult<T> {
        let started = Instant::now();
        if no_wait::active() {
            let Some(reader) = self.reader.get_or_init(|| self.open_reader()) else {
                return Err(no_wait::refuse());
            };
            // In use: refuse. Poisoned: a panic cannot leave SQLite mid-transaction (see
            // `lock`), so the connection is reused.
            let conn = match reader.try_lock() {
                Ok(conn) => conn,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return Err(no_wait::refuse()),
            };
            return in_read_transaction(&conn, f).map_err(|e| match e {
                Fail::Sql(e) if is_busy(&e) => no_wait::refuse(),
                e => self.fail(e, started),
            });
        }
        let conn = self.lock();
        in_read_transaction(&conn, f).map_err(|e| self.fail(e, started))
    }

    /// `PRAGMA data_version` on the reader connection (which never writes, so every commit
    /// changes it), else on the main connection (where only other processes' commits do).
    pub(crate) fn data_version(&self) -> StoreResult<u64> {
        let query = |conn: &Connection| {
            conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
                .map(|v| v.max(0) as u64)
                .map_err(|e| self.err(e, None))
        };
        match self.reader.get_or_init(|| self.open_reader()) {
            Some(reader) => query(&reader.lock().unwrap_or_else(|p| p.into_inner())),
            None => query(&self.lock()),
        }
    }

    /// The reader connection: read-only, never waiting (a lock is a refusal, not a wait).
    fn open_reader(&self) -> Option<Mutex<Connection>> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let opened = Connection::open_with_flags(&self.path, flags).and_then(|conn| {
            conn.busy_timeout(Duration::ZERO)?;
            conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            conn.set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )?;
            Ok(conn)
        });
        // Without it (a file this process may not open read-only), every such read refuses
        // and runs where it may wait: slower, never wrong.
        opened.ok().map(Mutex::new)
    }

    fn fail(&self, e: Fail, started: Instant) -> StoreError {
        match e {
            Fail::Store(e) => e,
            Fail::Sql(e) => self.err(e, Some(started)),
        }
    }

    pub(crate) fn err(&self, e: rusqlite::Error, started: Option<Instant>) -> StoreError {
        map_err(&self.path, e, started)
    }
}

/// Prepared statements each connection keeps (rusqlite's default is 16; the store has more).
const STATEMENT_CACHE: usize = 64;

/// Runs `f` between a cached `BEGIN DEFERRED` and `COMMIT` (parsing them on every call cost
/// more than many of the reads themselves), rolling back when `f` fails.
fn in_read_transaction<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, Fail>,
) -> Result<T, Fail> {
    conn.prepare_cached("BEGIN DEFERRED")?.execute([])?;
    let outcome = f(conn).and_then(|value| {
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok(value)
    });
    if outcome.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    outcome
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// An error inside a transaction: a domain error to return as is, or a SQLite error to map.
#[derive(Debug)]
pub(crate) enum Fail {
    Store(StoreError),
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Sql(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

fn map_err(path: &Path, e: rusqlite::Error, started: Option<Instant>) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Locked {
            path,
            waited: started.map(|s| s.elapsed()).unwrap_or_default(),
        },
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            path,
            detail: e.to_string(),
        },
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::ReadOnly {
                path,
                detail: e.to_string(),
            }
        }
        _ => StoreError::Database(e.to_string()),
    }
}

/// Reads a lower-case enum column.
pub(crate) fn parse_column<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T, Fail> {
    text.parse::<T>()
        .map_err(|e| Fail::Store(StoreError::InvalidData(e)))
}
