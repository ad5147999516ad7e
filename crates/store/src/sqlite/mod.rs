//! The embedded SQLite backend.

mod admin;
mod audit;
mod channels;
mod conditions;
mod daemon_state;
mod enforcement;
mod push;
mod scheduler;
mod sessions;
#[cfg(test)]
mod tests;
#[cfg(any(target_os = "linux", target_os = "android"))]
mod watch;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use parking_lot::{ReentrantMutex, ReentrantMutexGuard};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::{StoreError, StoreLocation, StoreResult, no_wait};

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = 7;

/// Migrations, in order: `MIGRATIONS[i]` takes a database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_initial.sql"),
    include_str!("migrations/0002_fleet.sql"),
    include_str!("migrations/0003_delivery.sql"),
    include_str!("migrations/0004_daemon_state.sql"),
    include_str!("migrations/0005_lifecycle.sql"),
    include_str!("migrations/0006_expiry_counts.sql"),
    include_str!("migrations/0007_call_ids.sql"),
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
    "channel_stats",
    "delivery_marks",
    "signing_keys",
    "http_sessions",
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
    /// The main connection. Reentrant: inside [`crate::StoreAdmin::in_one_transaction`] the
    /// scope holds it for the whole unit of work and the store calls it makes lock it again on
    /// the same thread; other threads wait for the unit to end.
    conn: ReentrantMutex<Conn>,
    /// Answers reads that must not wait ([`no_wait`]), opened on the first of them: in WAL
    /// mode a reader never waits for writers, and this connection never waits for the main
    /// one. `None` when it could not be opened (such reads then refuse).
    reader: OnceLock<Option<Mutex<Connection>>>,
    path: PathBuf,
    busy_timeout: Duration,
}

/// The main connection and the unit of work open on it.
#[derive(Debug)]
pub(crate) struct Conn {
    db: Connection,
    /// What [`crate::StoreAdmin::in_one_transaction`] has open on `db`.
    scope: Cell<Scope>,
}

impl std::ops::Deref for Conn {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.db
    }
}

/// The transaction a unit of work holds open on the main connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// None: every call runs its own transaction.
    None,
    /// One deferred (read) transaction that reads share; the first write ends it.
    Read,
    /// One immediate transaction: reads run in it, and each write in a savepoint of it.
    Write,
}

impl Drop for SqliteStore {
    /// Folds a long WAL back into the database and truncates it (see [`WAL_TRUNCATE_BYTES`]).
    /// Best effort and never blocking: when another process is using the database, the next
    /// one to close does it.
    fn drop(&mut self) {
        self.truncate_long_wal();
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
        let path = plain_path(&location.path);
        let exists = path.exists();
        if !exists && !options.create {
            return Err(StoreError::Missing { path });
        }
        if !exists {
            let dir = location.dir();
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                // The commonest cause, said plainly ("File exists" names neither).
                action: if dir.is_file() {
                    "the store's directory (HOOKS_MCP_HOME) is a file, not a directory: move \
                     it aside or point HOOKS_MCP_HOME at a directory; cannot create"
                } else {
                    "cannot create the store directory"
                },
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if options.create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|e| map_err(&path, e, None))?;
        let store = SqliteStore {
            conn: ReentrantMutex::new(Conn {
                db: conn,
                scope: Cell::new(Scope::None),
            }),
            reader: OnceLock::new(),
            path,
            busy_timeout: options.busy_timeout,
        };
        // A file other processes are creating and switching to WAL at this very moment reports
        // their lock at once for some steps, without calling the busy handler: retry those
        // steps (all idempotent) within the busy timeout.
        let started = Instant::now();
        let migrated_from = loop {
            match store
                .configure(options.create)
                .and_then(|current| store.migrate(current))
            {
                Err(StoreError::Locked { .. }) if started.elapsed() < options.busy_timeout => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                // The steps above cannot tell how long they waited: the whole open did.
                Err(StoreError::Locked { path, .. }) => {
                    return Err(StoreError::Locked {
                        path,
                        waited: started.elapsed(),
                    });
                }
                other => break other?,
            }
        };
        if migrated_from.is_some() {
            // A migration's pages are in the WAL only: fold them into the database now, so
            // that state.db alone holds the schema (closing does not checkpoint a short WAL).
            store.checkpoint();
        }
        // An existing file without a schema (an empty file) is created now all the same.
        let created = !exists || migrated_from == Some(0);
        Ok((
            store,
            if created {
                Opened::Created
            } else {
                Opened::Existing
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

    /// Checkpoints and truncates the WAL when it is longer than [`WAL_TRUNCATE_BYTES`]. Best
    /// effort and never blocking: when another connection is using the database, the next one
    /// to close does it.
    pub(crate) fn truncate_long_wal(&self) {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        if std::fs::metadata(&wal).map_or(true, |m| m.len() < WAL_TRUNCATE_BYTES) {
            return;
        }
        let conn = self.lock();
        if conn.busy_timeout(Duration::ZERO).is_ok() {
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let _ = conn.busy_timeout(self.busy_timeout);
        }
    }

    /// Folds the WAL into the database file and truncates it, as far as that can be done
    /// without waiting: frames other connections still read stay in the WAL. Best effort.
    fn checkpoint(&self) {
        let conn = self.lock();
        if conn.busy_timeout(Duration::ZERO).is_ok() {
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let _ = conn.busy_timeout(self.busy_timeout);
        }
    }

    /// Sets up the connection and returns the file's schema version, refusing (with nothing
    /// changed) a file this build must not touch: a newer schema, another program's database,
    /// and, unless `create`, a file without a schema (an empty file is no store yet to a
    /// process that never creates one: a hook). `create`: the caller may create the store
    /// (servers, the operator's commands), so the file is switched to WAL when it is not yet;
    /// processes that never create it (hooks) skip the check, as the journal mode is a
    /// property of the file.
    fn configure(&self, create: bool) -> StoreResult<u32> {
        let conn = self.lock();
        conn.busy_timeout(self.busy_timeout)
            .map_err(|e| self.err(e, None))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| self.err(e, None))?;
        // Short-lived processes (a hook runs around every tool call) must not checkpoint and
        // fsync the database each time they close it (even a passive checkpoint at every
        // close makes a hook a third slower): the WAL stays, and `Drop` truncates it once it
        // grows past `WAL_TRUNCATE_BYTES`.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(|e| self.err(e, None))?;
        // Reads only, before anything is written to the file (its journal mode included), in
        // one read transaction: another process's first open may commit the schema between
        // reading the version and counting the objects, which would look like a foreign file.
        conn.execute_batch("BEGIN DEFERRED")
            .map_err(|e| self.err(e, None))?;
        let read = first_look(&conn);
        let ended = conn.execute_batch("COMMIT");
        let (current, objects) = read.map_err(|e| self.err(e, None))?;
        ended.map_err(|e| self.err(e, None))?;
        if current > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found: current,
                supported: SCHEMA_VERSION,
            });
        }
        if current == 0 {
            if objects > 0 {
                return Err(StoreError::NotAStore {
                    path: self.path.clone(),
                    objects,
                });
            }
            if !create {
                return Err(StoreError::Missing {
                    path: self.path.clone(),
                });
            }
        }
        // WAL lets readers run beside one writer across processes; NORMAL sync is durable
        // against process crashes, which is the failure this store must survive.
        // WAL is a property of the file: switch only when it is not WAL yet (a new store), so
        // opening an existing one stays a read.
        if create {
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
                    file: unwritable_file(&self.path),
                    detail: format!("cannot switch to WAL journal mode (got `{mode}`)"),
                });
            }
        }
        Ok(current)
    }

    /// Applies pending migrations to a store [`SqliteStore::configure`] found at version
    /// `current`: `Some(version)` found before migrating, `None` when there was nothing to do.
    fn migrate(&self, current: u32) -> StoreResult<Option<u32>> {
        // `current` was a plain read: an up-to-date store (the common case, on every hook)
        // must not queue for the write lock.
        if current == SCHEMA_VERSION {
            return Ok(None);
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
            // A store whose first version's tables are gone was changed outside hooks-mcp:
            // it is left as found, for verification to say what is missing.
            if version > 0 {
                let found: i64 = tx.query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'table'
                     AND name IN ('messages', 'message_acks', 'message_deliveries')",
                    [],
                    |r| r.get(0),
                )?;
                if found < 3 {
                    return Ok(None);
                }
            }
            if version == SCHEMA_VERSION {
                // Another process migrated it meanwhile.
                return Ok(None);
            }
            if version == 0 {
                // Checked again under the write lock: nothing but a schema of ours is added to.
                let objects = foreign_objects(tx)?;
                if objects > 0 {
                    return Err(Fail::Store(StoreError::NotAStore {
                        path: self.path.clone(),
                        objects,
                    }));
                }
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
                tx.execute_batch(sql)?;
                tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
            }
            Ok(Some(version))
        })
    }

    /// Locks the main connection (again, on the thread of an open unit of work).
    pub(crate) fn lock(&self) -> ReentrantMutexGuard<'_, Conn> {
        self.conn.lock()
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so
    /// concurrent writers queue instead of failing mid-way), committing on success and rolling
    /// back on failure. Inside a unit of work ([`SqliteStore::one_transaction`]) it runs in a
    /// savepoint of the unit's immediate transaction (still atomic on its own), or ends the
    /// unit's read transaction first. Refuses inside [`no_wait::try_without_waiting`].
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, Fail>,
    ) -> StoreResult<T> {
        if no_wait::active() {
            return Err(no_wait::refuse());
        }
        let started = Instant::now();
        let conn = self.lock();
        match conn.scope.get() {
            Scope::Write => {
                return in_statements(&conn, SAVEPOINT, f).map_err(|e| self.fail(e, started));
            }
            Scope::Read => {
                // A read transaction cannot be made a write one safely (another process may
                // have committed since it began): end it, and write as outside the unit.
                conn.scope.set(Scope::None);
                run_cached(&conn, "COMMIT").map_err(|e| self.err(e, Some(started)))?;
            }
            Scope::None => {}
        }
        in_statements(&conn, IMMEDIATE, f).map_err(|e| self.fail(e, started))
    }

    /// Runs `f` in one deferred (read) transaction, so it sees one consistent snapshot (inside
    /// a unit of work, in the unit's transaction). Inside [`no_wait::try_without_waiting`] it
    /// runs on the reader connection, or refuses when that is in use or SQLite reports a lock.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, Fail>) -> StoreResult<T> {
        let started = Instant::now();
        if no_wait::active() {
            let Some(reader) = self.reader.get_or_init(|| self.open_reader()) else {
                return Err(no_wait::refuse());
            };
            // In use: refuse. Poisoned: a panic cannot leave SQLite mid-transaction (see
            // `in_statements`), so the connection is reused.
            let conn = match reader.try_lock() {
                Ok(conn) => conn,
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => return Err(no_wait::refuse()),
            };
            return in_statements(&conn, DEFERRED, f).map_err(|e| match e {
                Fail::Sql(e) if is_busy(&e) => no_wait::refuse(),
                e => self.fail(e, started),
            });
        }
        let conn = self.lock();
        let outcome = match conn.scope.get() {
            Scope::None => in_statements(&conn, DEFERRED, f),
            Scope::Read | Scope::Write => f(&conn),
        };
        outcome.map_err(|e| self.fail(e, started))
    }

    /// Runs `work` as one unit: the store calls it makes on this thread share one transaction
    /// (see [`crate::StoreAdmin::in_one_transaction`]). When the unit cannot begin (another
    /// process holds the write lock past the busy timeout, or a unit is already open), the
    /// calls run one by one as outside a unit, each reporting its own failure.
    pub(crate) fn one_transaction(&self, writes: bool, work: &mut dyn FnMut()) -> StoreResult<()> {
        let started = Instant::now();
        let conn = self.lock();
        if no_wait::active() || conn.scope.get() != Scope::None || !conn.is_autocommit() {
            drop(conn);
            work();
            return Ok(());
        }
        let begin = if writes {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN DEFERRED"
        };
        if run_cached(&conn, begin).is_err() {
            drop(conn);
            work();
            return Ok(());
        }
        conn.scope
            .set(if writes { Scope::Write } else { Scope::Read });
        let open = OpenUnit(&conn);
        work();
        open.commit().map_err(|e| self.err(e, Some(started)))
    }

    /// `PRAGMA data_version` on the reader connection (which never writes, so every commit
    /// changes it), else on the main connection (where only other processes' commits do).
    pub(crate) fn data_version(&self) -> StoreResult<u64> {
        let query = |conn: &Connection| data_version_of(conn).map_err(|e| self.err(e, None));
        match self.reader.get_or_init(|| self.open_reader()) {
            Some(reader) => query(&reader.lock().unwrap_or_else(|p| p.into_inner())),
            None => query(&self.lock().db),
        }
    }

    /// The reader connection: read-only, never waiting (a lock is a refusal, not a wait).
    fn open_reader(&self) -> Option<Mutex<Connection>> {
        let opened = open_read_only(&self.path, Duration::ZERO)
            .inspect(|conn| conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE));
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

/// How [`in_statements`] opens, closes and abandons its transaction or savepoint.
struct Bracket {
    begin: &'static str,
    commit: &'static str,
    rollback: &'static str,
}

/// A read transaction.
const DEFERRED: Bracket = Bracket {
    begin: "BEGIN DEFERRED",
    commit: "COMMIT",
    rollback: "ROLLBACK",
};

/// A write transaction, holding the write lock from its start.
const IMMEDIATE: Bracket = Bracket {
    begin: "BEGIN IMMEDIATE",
    commit: "COMMIT",
    rollback: "ROLLBACK",
};

/// One call's savepoint inside a unit of work's immediate transaction.
const SAVEPOINT: Bracket = Bracket {
    begin: "SAVEPOINT store_call",
    commit: "RELEASE store_call",
    rollback: "ROLLBACK TO store_call; RELEASE store_call",
};

/// Runs a cached statement that returns no rows (parsing `BEGIN` and `COMMIT` on every call
/// cost more than many of the reads themselves).
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs `f` between the bracket's cached statements, abandoning the transaction (or
/// savepoint) when `f` or the commit fails, or `f` panics, so a failed call leaves nothing
/// behind and the connection is never left mid-transaction.
/// A read-only connection to the database at `path` that waits at most `busy` for a lock
/// and never checkpoints when it closes.
pub(crate) fn open_read_only(path: &Path, busy: Duration) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(plain_path(path), flags)?;
    conn.busy_timeout(busy)?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    Ok(conn)
}

/// The schema version and, at version 0, how many objects another program put there
/// ([`foreign_objects`]), read together by the caller's one read transaction.
fn first_look(conn: &Connection) -> rusqlite::Result<(u32, u64)> {
    let current: u32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let objects = if current == 0 {
        foreign_objects(conn)?
    } else {
        0
    };
    Ok((current, objects))
}

/// How many tables, indexes, views and triggers a database holds besides SQLite's own: at
/// schema version 0, any is another program's.
fn foreign_objects(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n.max(0) as u64)
}

/// `path` made absolute (against the working directory): SQLite (built to accept URIs)
/// reads a name starting with `file:` as a URI, so a relative `HOOKS_MCP_HOME` such as
/// `file:st` would name another file. An absolute path never starts with `file:`.
fn plain_path(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::path::absolute(path).unwrap_or_else(|_| Path::new(".").join(path))
}

/// `PRAGMA data_version` of `conn`: it moves when another connection commits.
pub(crate) fn data_version_of(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0))
        .map(|v| v.max(0) as u64)
}

fn in_statements<T>(
    conn: &Connection,
    bracket: Bracket,
    f: impl FnOnce(&Connection) -> Result<T, Fail>,
) -> Result<T, Fail> {
    run_cached(conn, bracket.begin)?;
    let abandon = Abandon {
        conn,
        rollback: bracket.rollback,
    };
    let value = f(conn)?;
    run_cached(conn, bracket.commit)?;
    std::mem::forget(abandon);
    Ok(value)
}

/// Rolls back what [`in_statements`] began unless it finished.
struct Abandon<'a> {
    conn: &'a Connection,
    rollback: &'static str,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch(self.rollback);
        }
    }
}

/// A unit of work's open transaction: committed by [`OpenUnit::commit`], rolled back when
/// dropped otherwise (a panic in the unit), so the connection is never left mid-transaction.
struct OpenUnit<'a>(&'a Conn);

impl OpenUnit<'_> {
    /// Commits what is still open (a read unit may have ended at its first write).
    fn commit(self) -> rusqlite::Result<()> {
        let conn = self.0;
        if conn.scope.get() == Scope::None {
            return Ok(());
        }
        conn.scope.set(Scope::None);
        run_cached(conn, "COMMIT")
    }
}

impl Drop for OpenUnit<'_> {
    fn drop(&mut self) {
        let conn = self.0;
        conn.scope.set(Scope::None);
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
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
        Some(ErrorCode::DiskFull | ErrorCode::SystemIoFailure) => StoreError::Disk {
            path,
            detail: e.to_string(),
            advice: crate::file_size::disk_advice(),
        },
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::ReadOnly {
                file: unwritable_file(&path),
                path,
                detail: e.to_string(),
            }
        }
        _ => StoreError::Database(e.to_string()),
    }
}

/// Which of the database's files this process cannot open for writing: its `-wal` or `-shm`
/// file when one exists and is the one (another user's, say), else the database itself.
/// Opening a file for writing changes nothing in it.
fn unwritable_file(path: &Path) -> PathBuf {
    ["-wal", "-shm"]
        .iter()
        .map(|suffix| {
            let mut name = path.as_os_str().to_os_string();
            name.push(suffix);
            PathBuf::from(name)
        })
        .find(|file| {
            std::fs::symlink_metadata(file).is_ok()
                && std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(file)
                    .is_err()
        })
        .unwrap_or_else(|| path.to_path_buf())
}

/// Reads a lower-case enum column.
pub(crate) fn parse_column<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T, Fail> {
    text.parse::<T>()
        .map_err(|e| Fail::Store(StoreError::InvalidData(e)))
}
