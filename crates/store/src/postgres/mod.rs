//! The PostgreSQL backend: one database server shared by many processes on many machines.
//!
//! Same API and semantics as the SQLite backend. Connections come from a bounded pool that opens
//! none before the first call needs one (a hook pays for exactly one connection). A long-lived
//! process retries a failed connection within the connect timeout and checks each pooled
//! connection before use, so a server restart costs the calls in flight an
//! [`StoreError::Unavailable`] and nothing else; a process that serves one event
//! ([`PgOptions::retry_connect`] off) reports the first failure at once. Statements are
//! prepared once per connection. Most operations are one statement (atomic on their own);
//! [`crate::ScheduleStore::fire_due`] is one transaction that claims due schedules with
//! `FOR UPDATE SKIP LOCKED`.

mod admin;
mod audit;
mod channels;
mod conditions;
mod config;
mod daemon_state;
mod enforcement;
mod push;
mod scheduler;
mod sessions;
mod tls;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Row, Statement};
use r2d2_postgres::PostgresConnectionManager;

pub(crate) use self::config::identity;
pub use self::config::{CONNECT_TIMEOUT_ENV, POOL_SIZE_ENV, PgOptions, STATEMENT_TIMEOUT_ENV};
use crate::DATABASE_URL_ENV;
use crate::{Opened, SCHEMA_VERSION, StoreError, StoreResult};

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

/// The table holding the schema version (one row).
const META_DDL: &str = "CREATE TABLE IF NOT EXISTS hooks_mcp_meta (
    id              BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    schema_version  INTEGER NOT NULL
)";

/// The notification channel of the current schema: one per store, whatever shares the database.
const CHANNEL_SQL: &str = "'hooks_mcp_' || left(md5(current_schema()), 16)";

type Manager = PostgresConnectionManager<tls::Connector>;

/// How often a store that connects once ([`PgOptions::retry_connect`] off) looks whether its
/// connection attempt failed.
const FAILURE_LOOK: Duration = Duration::from_millis(10);

/// Longest wait of [`crate::StoreAdmin::ping`] for a connection.
const PING_WAIT: Duration = Duration::from_secs(1);

/// The error for a connection whose `search_path` names no existing schema: the store has
/// nowhere to create its tables.
fn no_schema(search_path: &str, role: &str) -> StoreError {
    let first = search_path
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .find(|s| !s.is_empty())
        .map_or_else(|| "hooks".to_owned(), |s| s.replace("$user", role));
    StoreError::InvalidSetting {
        name: DATABASE_URL_ENV,
        problem: format!(
            "no schema of the connection's search_path ({search_path}) exists in the database, \
             so the store has nowhere to create its tables; create the schema first \
             (`CREATE SCHEMA \"{first}\" AUTHORIZATION \"{role}\"`), or name an existing one \
             in the URL's options (`options=-c%20search_path%3D<schema>`)"
        ),
    }
}

/// A store in one PostgreSQL database (in the first schema of its `search_path`).
pub struct PostgresStore {
    /// The connections; `None` only while the store drops (see its `Drop`).
    pool: Option<r2d2::Pool<Manager>>,
    config: postgres::Config,
    tls: tls::Connector,
    describe: String,
    options: PgOptions,
    /// The change version's listening thread, started by the first
    /// [`crate::StoreAdmin::change_version`].
    version: std::sync::OnceLock<Arc<changes::VersionFeed>>,
    /// The pool's last failed connection attempt.
    last_connect_error: Arc<std::sync::Mutex<Option<ConnectFailure>>>,
}

/// Keeps the pool's last failed connection attempt whole (the pool itself keeps only the
/// error's first line, "error connecting to server", without its cause or the server's
/// SQLSTATE), so that the error can say why: refused, unreachable, out of connection slots.
#[derive(Debug)]
struct ConnectErrors(Arc<std::sync::Mutex<Option<ConnectFailure>>>);

/// A failed connection attempt.
#[derive(Debug, Clone)]
struct ConnectFailure {
    /// When it failed.
    at: std::time::Instant,
    /// The server's SQLSTATE when the server refused (`53300`: no connection slot left).
    code: Option<String>,
    /// The server's message, or the client's error with its causes.
    message: String,
}

impl r2d2::HandleError<postgres::Error> for ConnectErrors {
    fn handle_error(&self, error: postgres::Error) {
        let failure = match error.as_db_error() {
            Some(db) => ConnectFailure {
                at: std::time::Instant::now(),
                code: Some(db.code().code().to_owned()),
                message: db.message().to_owned(),
            },
            None => ConnectFailure {
                at: std::time::Instant::now(),
                code: None,
                message: with_causes(&error),
            },
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(failure);
    }
}

/// An error's text followed by each of its causes' (the client's own text alone is only
/// "error connecting to server").
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Whether a server's SQLSTATE refuses this client rather than the moment: a wrong role or
/// password (class 28), a database that does not exist (`3D000`), a role that may not connect
/// (`42501`).
fn refuses_this_client(code: &str) -> bool {
    code.starts_with("28") || code == "3D000" || code == "42501"
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        if let Some(feed) = self.version.get() {
            feed.stop();
        }
        // A `postgres::Client` closes by blocking on its own runtime, which panics inside
        // another's: the last handle of a store often drops inside tokio (a stdio session's
        // server, when its client leaves). The pool's connections close on a thread of their
        // own, joined so that they are closed before this returns.
        if let Some(pool) = self.pool.take() {
            let closing = std::thread::Builder::new()
                .name("hooks-mcp-pg-close".into())
                .spawn(move || drop(pool));
            if let Ok(thread) = closing {
                // A panic there is the driver's; the connections are gone either way.
                let _ = thread.join();
            }
        }
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client configuration holds the password: show the description only.
        f.debug_struct("PostgresStore")
            .field("store", &self.describe)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` and (with `options.create`) applies pending
    /// migrations.
    ///
    /// # Errors
    /// [`StoreError::InvalidSetting`] for a bad URL; [`StoreError::Unavailable`] when the server
    /// cannot be reached; [`StoreError::Missing`] for an empty database without `create`;
    /// [`StoreError::NewerSchema`] for a database written by a newer hooks-mcp.
    pub fn open(url: &str, options: &PgOptions) -> StoreResult<(Self, Opened)> {
        Self::open_with_env(url, options, |k| std::env::var(k).ok())
    }

    /// [`PostgresStore::open`] with the `PGUSER` / `PGPASSWORD` lookup given (for tests).
    ///
    /// # Errors
    /// As [`PostgresStore::open`].
    pub fn open_with_env(
        url: &str,
        options: &PgOptions,
        var: impl Fn(&str) -> Option<String>,
    ) -> StoreResult<(Self, Opened)> {
        let mut target = config::parse(url, options, var)?;
        if target.config.get_tcp_user_timeout().is_none() {
            // A server that stops acknowledging (a lost host) fails the call instead of
            // hanging it.
            target
                .config
                .tcp_user_timeout(options.statement_timeout + options.connect_timeout);
        }
        let tls = tls::connector(&target.tls).map_err(|problem| StoreError::InvalidSetting {
            name: DATABASE_URL_ENV,
            problem,
        })?;
        let manager = PostgresConnectionManager::new(target.config.clone(), tls.clone());
        let last_connect_error = Arc::new(std::sync::Mutex::new(None));
        // A process that connects once needs one connection, and must not start another
        // while it polls for the first (`connection`).
        let pool_size = if options.retry_connect {
            options.pool_size.max(1)
        } else {
            1
        };
        let pool = r2d2::Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(0))
            .connection_timeout(options.connect_timeout)
            .idle_timeout(Some(Duration::from_secs(600)))
            .max_lifetime(Some(Duration::from_secs(1800)))
            // A long-lived process checks a pooled connection before each use (the server
            // may have restarted since); one that connects once has just made its connection.
            .test_on_check_out(options.retry_connect)
            .error_handler(Box::new(ConnectErrors(last_connect_error.clone())))
            .build_unchecked(manager);
        let store = PostgresStore {
            pool: Some(pool),
            config: target.config,
            tls,
            describe: target.describe,
            options: options.clone(),
            version: std::sync::OnceLock::new(),
            last_connect_error,
        };
        let opened = store.migrate(options.create)?;
        Ok((store, opened))
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &PgOptions {
        &self.options
    }

    fn migrate(&self, create: bool) -> StoreResult<Opened> {
        // The common case, on every hook: one statement finds the schema current.
        let found =
            self.run(
                |db| match db.query_opt("SELECT schema_version FROM hooks_mcp_meta", &[]) {
                    Ok(row) => Ok(row.map(|r| r.get::<_, i32>(0))),
                    Err(e) if sqlstate(&e) == Some("42P01") => Ok(None),
                    Err(e) => Err(Fail::Pg(e)),
                },
            )?;
        match found {
            Some(v) if v == SCHEMA_VERSION as i32 => return Ok(Opened::Existing),
            Some(v) if v > SCHEMA_VERSION as i32 => return Err(self.newer(v)),
            None if !create => {
                return Err(StoreError::Missing { path: self.path() });
            }
            _ => {}
        }
        // Concurrent first starts queue on a lock for this schema; the first one migrates.
        self.transaction(|db| {
            // The tables go into the first schema of `search_path` that exists: none existing
            // would fail below with a bare "no schema has been selected to create in".
            let schema: Option<String> =
                db.query_one("SELECT current_schema()", &[])?.try_get(0)?;
            let Some(schema) = schema else {
                let row = db.query_one(
                    "SELECT current_setting('search_path'), current_user::text",
                    &[],
                )?;
                let (search_path, role): (String, String) = (row.try_get(0)?, row.try_get(1)?);
                return Err(Fail::Store(no_schema(&search_path, &role)));
            };
            db.query_one(
                "SELECT pg_advisory_xact_lock(hashtext('hooks_mcp:' || $1::text))",
                &[&schema],
            )?;
            db.batch(META_DDL)?;
            let version = db
                .query_opt("SELECT schema_version FROM hooks_mcp_meta", &[])?
                .map(|r| r.get::<_, i32>(0))
                .unwrap_or(0);
            if version > SCHEMA_VERSION as i32 {
                return Err(Fail::Store(self.newer(version)));
            }
            // A store whose first version's tables are gone was changed outside hooks-mcp:
            // it is left as found, for verification to say what is missing.
            if version > 0 {
                let found: i64 = db
                    .query_one(
                        "SELECT count(*) FROM unnest(ARRAY['messages', 'message_acks',
                                                            'message_deliveries']) AS t (name)
                         WHERE to_regclass(quote_ident(t.name)) IS NOT NULL",
                        &[],
                    )?
                    .try_get(0)?;
                if found < 3 {
                    return Ok(Opened::Existing);
                }
            }
            let start = usize::try_from(version).unwrap_or(0);
            for sql in MIGRATIONS.iter().skip(start) {
                db.batch(sql)?;
            }
            db.execute(
                "INSERT INTO hooks_mcp_meta (id, schema_version) VALUES (TRUE, $1) \
                 ON CONFLICT (id) DO UPDATE SET schema_version = excluded.schema_version",
                &[&(SCHEMA_VERSION as i32)],
            )?;
            Ok(if version == 0 {
                Opened::Created
            } else {
                Opened::Existing
            })
        })
    }

    fn newer(&self, found: i32) -> StoreError {
        StoreError::NewerSchema {
            path: self.path(),
            found: u32::try_from(found).unwrap_or(u32::MAX),
            supported: SCHEMA_VERSION,
        }
    }

    /// The description, where errors carry a path.
    pub(crate) fn path(&self) -> PathBuf {
        PathBuf::from(&self.describe)
    }

    fn connection(&self, wait: Duration) -> StoreResult<Db> {
        // Every call goes over the network: none is answered without waiting.
        if crate::no_wait::active() {
            return Err(crate::no_wait::refuse());
        }
        let Some(pool) = &self.pool else {
            return Err(StoreError::Unavailable {
                store: self.describe.clone(),
                detail: "the store is closing".into(),
            });
        };
        if self.options.retry_connect {
            return pool
                .get_timeout(wait)
                .map(|conn| Db { conn })
                .map_err(|e| self.no_connection(wait, &e));
        }
        // Connecting once: the pool retries a failed attempt in the background until `wait`
        // is over, so look in short slices for a failure since this call began and answer
        // with it at once (a refused connection costs a hook a millisecond, not `wait`).
        let began = std::time::Instant::now();
        loop {
            let left = wait.saturating_sub(began.elapsed());
            match pool.get_timeout(left.min(FAILURE_LOOK)) {
                Ok(conn) => return Ok(Db { conn }),
                Err(e) => {
                    let failed = self
                        .last_connect_error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clone()
                        .filter(|f| f.at >= began);
                    if failed.is_some() || began.elapsed() >= wait {
                        return Err(self.no_connection(wait, &e));
                    }
                }
            }
        }
    }

    /// Why no connection came within `wait`, and what to do: the server refused one for want
    /// of slots (`max_connections`, or a role's or database's connection limit), or every
    /// connection of this process's pool stayed busy. Either way the next call tries again:
    /// the store recovers as soon as a slot or a connection is free.
    fn no_connection(&self, wait: Duration, e: &r2d2::Error) -> StoreError {
        let failure = self
            .last_connect_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let (state, max_size) = match &self.pool {
            Some(pool) => (Some(pool.state()), pool.max_size()),
            None => (None, 0),
        };
        // Only a failure met while this call waited counts.
        let failure = failure.filter(|f| f.at.elapsed() <= wait + Duration::from_secs(1));
        if let Some(ConnectFailure {
            code: Some(code),
            message,
            ..
        }) = &failure
            && refuses_this_client(code)
        {
            return StoreError::Refused {
                store: self.describe.clone(),
                detail: format!("{message} [{code}]"),
            };
        }
        let detail = match failure {
            Some(ConnectFailure {
                code: Some(code),
                message,
                ..
            }) if code == "53300" => format!(
                "the server has no connection slot left ({message}): the processes on this \
                 database together want more connections than its max_connections (or the \
                 role's or the database's connection limit) allows; lower {POOL_SIZE_ENV} \
                 (each process keeps up to that many, {} here) or raise the server's \
                 max_connections (see docs/deployment.md on sizing); calls work again as soon \
                 as a slot is free",
                self.options.pool_size
            ),
            _ if state.is_some_and(|s| s.connections >= max_size && s.idle_connections == 0) => {
                format!(
                    "all {max_size} connections of this process ({POOL_SIZE_ENV}) stayed busy \
                     for {wait:?}; raise {POOL_SIZE_ENV} within the server's max_connections, \
                     or lower the load"
                )
            }
            Some(ConnectFailure {
                code: Some(code),
                message,
                ..
            }) => format!("the server refused the connection: {message} [{code}]"),
            Some(ConnectFailure { message, .. }) if self.options.retry_connect => {
                format!("no connection within {wait:?}: {message}")
            }
            Some(ConnectFailure { message, .. }) => message,
            None => format!("no connection within {wait:?}: {e}"),
        };
        StoreError::Unavailable {
            store: self.describe.clone(),
            detail,
        }
    }

    /// Runs `f` on one pooled connection, each statement committing on its own.
    pub(crate) fn run<T>(&self, f: impl FnOnce(&mut Db) -> Result<T, Fail>) -> StoreResult<T> {
        let mut db = self.connection(self.options.connect_timeout)?;
        f(&mut db).map_err(|e| self.fail(e))
    }

    /// [`PostgresStore::run`] waiting at most [`PING_WAIT`] for a connection, so that a health
    /// probe answers promptly while the server is down.
    pub(crate) fn run_quick<T>(
        &self,
        f: impl FnOnce(&mut Db) -> Result<T, Fail>,
    ) -> StoreResult<T> {
        let mut db = self.connection(self.options.connect_timeout.min(PING_WAIT))?;
        f(&mut db).map_err(|e| self.fail(e))
    }

    /// Runs `f` in one transaction, committing on success and rolling back otherwise.
    pub(crate) fn transaction<T>(
        &self,
        f: impl FnOnce(&mut Db) -> Result<T, Fail>,
    ) -> StoreResult<T> {
        let mut db = self.connection(self.options.connect_timeout)?;
        db.batch("BEGIN").map_err(|e| self.err(e))?;
        match f(&mut db) {
            Ok(value) => {
                db.batch("COMMIT").map_err(|e| self.err(e))?;
                Ok(value)
            }
            Err(e) => {
                // A lost connection cannot roll back, and needs not: the server does.
                let _ = db.batch("ROLLBACK");
                Err(self.fail(e))
            }
        }
    }

    pub(crate) fn fail(&self, e: Fail) -> StoreError {
        match e {
            Fail::Store(e) => e,
            Fail::Pg(e) => self.err(e),
        }
    }

    /// Maps a client error to a [`StoreError`] that says what to do.
    pub(crate) fn err(&self, e: postgres::Error) -> StoreError {
        let path = self.path();
        if let Some(db) = e.as_db_error() {
            let code = db.code().code();
            let detail = match db.detail() {
                Some(detail) => format!("{}: {} ({detail})", db.severity(), db.message()),
                None => format!("{}: {}", db.severity(), db.message()),
            };
            return match code {
                "55P03" => StoreError::Locked {
                    path,
                    waited: self.options.lock_timeout,
                },
                "57014" => StoreError::Database(format!(
                    "a statement ran longer than {STATEMENT_TIMEOUT_ENV} ({} ms) and was \
                     cancelled; retry, or raise it: {detail}",
                    self.options.statement_timeout.as_millis()
                )),
                "40001" | "40P01" => StoreError::Database(format!(
                    "the transaction collided with a concurrent one and was rolled back; \
                     retry: {detail}"
                )),
                "42501" => StoreError::Database(format!(
                    "the database role lacks a privilege; grant it all privileges on the \
                     store's schema: {detail}"
                )),
                "25006" => StoreError::Database(format!(
                    "the server is read-only (a standby?); point {DATABASE_URL_ENV} at the \
                     primary: {detail}"
                )),
                c if c.starts_with("08") || c.starts_with("57P") || c == "53300" => {
                    StoreError::Unavailable {
                        store: self.describe.clone(),
                        detail,
                    }
                }
                _ => StoreError::Database(format!("{detail} [{code}]")),
            };
        }
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            source = s.source();
        }
        if e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>())
        {
            StoreError::Unavailable {
                store: self.describe.clone(),
                detail,
            }
        } else {
            StoreError::Database(detail)
        }
    }

    /// A dedicated connection (outside the pool) listening on this store's channel.
    fn listen(&self) -> StoreResult<changes::PgChangeFeed> {
        self.listener().open()
    }

    /// What opening a listening connection takes, for a thread of its own.
    fn listener(&self) -> changes::Listener {
        changes::Listener {
            config: self.config.clone(),
            tls: self.tls.clone(),
            describe: self.describe.clone(),
        }
    }

    /// The change version ([`crate::StoreAdmin::change_version`]): its listening thread is
    /// started on the first call.
    pub(crate) fn version_feed(&self) -> &changes::VersionFeed {
        self.version
            .get_or_init(|| changes::VersionFeed::start(self.listener()))
    }
}

/// An error inside an operation: a domain error to return as is, or a client error to map.
#[derive(Debug)]
pub(crate) enum Fail {
    Store(StoreError),
    Pg(postgres::Error),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

/// The SQLSTATE of a server error.
fn sqlstate(e: &postgres::Error) -> Option<&str> {
    e.as_db_error().map(|db| db.code().code())
}

/// Statements prepared on one connection, by their text.
#[derive(Default)]
struct Prepared(HashMap<&'static str, Statement>);

/// One pooled connection, with its prepared statements.
pub(crate) struct Db {
    conn: r2d2::PooledConnection<Manager>,
}

impl Db {
    /// The statement for `sql`, prepared on first use on this connection.
    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        let cached = r2d2::PooledConnection::extensions(&self.conn)
            .get::<Prepared>()
            .and_then(|p| p.0.get(sql).cloned());
        if let Some(statement) = cached {
            return Ok(statement);
        }
        let statement = self.conn.prepare(sql)?;
        let extensions = r2d2::PooledConnection::extensions_mut(&mut self.conn);
        if extensions.get::<Prepared>().is_none() {
            extensions.insert(Prepared::default());
        }
        if let Some(prepared) = extensions.get_mut::<Prepared>() {
            prepared.0.insert(sql, statement.clone());
        }
        Ok(statement)
    }

    pub(crate) fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.conn.query(&statement, params)
    }

    pub(crate) fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.conn.query_opt(&statement, params)
    }

    pub(crate) fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.conn.query_one(&statement, params)
    }

    pub(crate) fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.conn.execute(&statement, params)
    }

    /// Runs statements without parameters or results (DDL, transaction control).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.conn.batch_execute(sql)
    }
}

/// Reads a lower-case enum column.
pub(crate) fn parse_column<T: std::str::FromStr<Err = String>>(text: &str) -> Result<T, Fail> {
    text.parse::<T>()
        .map_err(|e| Fail::Store(StoreError::InvalidData(e)))
}

/// A count or counter as stored (never negative when written by this build).
pub(crate) fn to_u64(n: i64, what: &str) -> Result<u64, Fail> {
    u64::try_from(n)
        .map_err(|_| Fail::Store(StoreError::InvalidData(format!("negative {what} {n}"))))
}

/// A `u64` as PostgreSQL stores it (a signed 64-bit integer).
pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

mod changes {
    //! The LISTEN/NOTIFY change feed, and the change version counted from it.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::Duration;

    use postgres::fallible_iterator::FallibleIterator;

    use super::CHANNEL_SQL;
    use crate::{Change, ChangeFeed, StoreError, StoreResult};

    /// Longest single wait on the feed: how soon the version's thread notices a stop.
    const POLL: Duration = Duration::from_millis(250);
    /// Pause before reopening a lost feed, doubled after each failure up to [`MAX_RETRY`].
    const FIRST_RETRY: Duration = Duration::from_millis(250);
    /// Longest pause between attempts to reopen the feed.
    const MAX_RETRY: Duration = Duration::from_secs(5);

    /// What opening a listening connection takes (no pool, no store).
    #[derive(Clone)]
    pub(crate) struct Listener {
        pub(super) config: postgres::Config,
        pub(super) tls: super::tls::Connector,
        pub(super) describe: String,
    }

    impl Listener {
        /// A new connection listening on the store's channel.
        pub(super) fn open(&self) -> StoreResult<PgChangeFeed> {
            let lost = |e: postgres::Error| StoreError::Unavailable {
                store: self.describe.clone(),
                detail: format!("cannot listen for changes: {e}"),
            };
            let mut client = self.config.connect(self.tls.clone()).map_err(lost)?;
            let channel: String = client
                .query_one(&format!("SELECT {CHANNEL_SQL}"), &[])
                .map_err(lost)?
                .try_get(0)
                .map_err(lost)?;
            client
                .batch_execute(&format!("LISTEN \"{channel}\""))
                .map_err(lost)?;
            Ok(PgChangeFeed {
                client,
                describe: self.describe.clone(),
            })
        }
    }

    /// A connection listening on a store's notification channel.
    pub(crate) struct PgChangeFeed {
        client: postgres::Client,
        describe: String,
    }

    impl PgChangeFeed {
        /// The next notification's payload, or `None` when none arrived within `timeout`.
        fn next_payload(&mut self, timeout: Duration) -> StoreResult<Option<String>> {
            let next = self
                .client
                .notifications()
                .timeout_iter(timeout)
                .next()
                .map_err(|e| StoreError::Unavailable {
                    store: self.describe.clone(),
                    detail: format!("the change feed's connection was lost: {e}"),
                })?;
            if next.is_none() && self.client.is_closed() {
                return Err(StoreError::Unavailable {
                    store: self.describe.clone(),
                    detail: "the change feed's connection was closed".into(),
                });
            }
            Ok(next.map(|n| n.payload().to_owned()))
        }
    }

    impl ChangeFeed for PgChangeFeed {
        fn wait(&mut self, timeout: Duration) -> StoreResult<Option<Change>> {
            Ok(self.next_payload(timeout)?.and_then(|p| parse(&p)))
        }
    }

    /// `message 12` / `schedule 3` / `cleared 40`.
    pub(super) fn parse(payload: &str) -> Option<Change> {
        let (kind, id) = payload.split_once(' ')?;
        let id = id.parse().ok()?;
        match kind {
            "message" => Some(Change::Message(id)),
            "schedule" => Some(Change::Schedule(id)),
            "cleared" => Some(Change::Cleared(id)),
            _ => None,
        }
    }

    /// The store's change version: a count of the notifications a thread of its own received
    /// (and of its reconnections, since changes may have been missed meanwhile).
    #[derive(Debug, Default)]
    pub(crate) struct VersionFeed {
        count: AtomicU64,
        live: AtomicBool,
        stop: AtomicBool,
    }

    impl VersionFeed {
        /// Starts the listening thread; a feed whose thread cannot start is never live.
        pub(super) fn start(listener: Listener) -> Arc<VersionFeed> {
            let feed = Arc::new(VersionFeed::default());
            let counting = feed.clone();
            // Without the thread the version stays unknown and watchers fall back to a timer.
            let _ = std::thread::Builder::new()
                .name("hooks-mcp-store-version".into())
                .spawn(move || counting.run(&listener));
            feed
        }

        /// The version now; `None` while no connection listens.
        pub(crate) fn current(&self) -> Option<u64> {
            self.live
                .load(Ordering::Acquire)
                .then(|| self.count.load(Ordering::Acquire))
        }

        /// Asks the thread to end (the store is dropped).
        pub(super) fn stop(&self) {
            self.stop.store(true, Ordering::Release);
        }

        fn stopped(&self) -> bool {
            self.stop.load(Ordering::Acquire)
        }

        fn run(&self, listener: &Listener) {
            let mut retry = FIRST_RETRY;
            while !self.stopped() {
                let Ok(mut feed) = listener.open() else {
                    self.pause(retry);
                    retry = (retry * 2).min(MAX_RETRY);
                    continue;
                };
                retry = FIRST_RETRY;
                self.count.fetch_add(1, Ordering::AcqRel);
                self.live.store(true, Ordering::Release);
                while !self.stopped() {
                    match feed.next_payload(POLL) {
                        Ok(None) => {}
                        Ok(Some(_)) => {
                            self.count.fetch_add(1, Ordering::AcqRel);
                        }
                        Err(_) => break,
                    }
                }
                self.live.store(false, Ordering::Release);
            }
        }

        /// Sleeps `pause`, returning early on stop.
        fn pause(&self, pause: Duration) {
            let mut left = pause;
            while !left.is_zero() && !self.stopped() {
                let step = left.min(POLL);
                std::thread::sleep(step);
                left -= step;
            }
        }
    }
}

/// The handle servers put in a tool call's extensions.
impl From<PostgresStore> for crate::StoreHandle {
    fn from(store: PostgresStore) -> Self {
        crate::StoreHandle(Arc::new(store))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback port nothing listens on (bound, then released).
    fn refusing_url() -> String {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("bind an ephemeral port");
        format!("postgres://hooks@127.0.0.1:{port}/db")
    }

    #[test]
    fn connecting_once_reports_a_refusal_at_the_first_attempt_with_its_cause() {
        // A connect timeout no test would outwait: the answer must come from the first
        // failed attempt, not from the timeout.
        let options = PgOptions {
            connect_timeout: Duration::from_secs(600),
            retry_connect: false,
            ..PgOptions::default()
        };
        let began = std::time::Instant::now();
        match PostgresStore::open(&refusing_url(), &options) {
            Err(StoreError::Unavailable { detail, .. }) => {
                assert!(detail.contains("refused"), "{detail}");
                assert!(!detail.contains("no connection within"), "{detail}");
            }
            other => panic!("expected Unavailable, got {:?}", other.map(|(_, o)| o)),
        }
        assert!(
            began.elapsed() < Duration::from_secs(300),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn retrying_names_the_last_attempts_cause_after_the_wait() {
        let options = PgOptions {
            connect_timeout: Duration::from_millis(300),
            ..PgOptions::default()
        };
        match PostgresStore::open(&refusing_url(), &options) {
            Err(StoreError::Unavailable { detail, .. }) => {
                assert!(detail.contains("no connection within 300ms"), "{detail}");
                // The client's own text alone is "error connecting to server".
                assert!(detail.contains("refused"), "{detail}");
            }
            other => panic!("expected Unavailable, got {:?}", other.map(|(_, o)| o)),
        }
    }

    #[test]
    fn causes_follow_the_error_once_each() {
        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        assert_eq!(with_causes(&Outer(inner)), "outer: refused");
        #[derive(Debug, thiserror::Error)]
        #[error("outer: refused")]
        struct Repeats(#[source] std::io::Error);
        let inner = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(with_causes(&Repeats(inner)), "outer: refused");
    }
}
