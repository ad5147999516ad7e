//! The PostgreSQL backend: one database server shared by many processes on many machines.
//!
//! Same API and semantics as the SQLite backend. Connections come from a bounded pool that opens
//! none before the first call needs one (a hook pays for exactly one connection); each is checked
//! before use, so a server restart costs the calls in flight an [`StoreError::Unavailable`] and
//! nothing else. Statements are prepared once per connection. Most operations are one statement
//! (atomic on their own); [`crate::ScheduleStore::fire_due`] is one transaction that claims due
//! schedules with `FOR UPDATE SKIP LOCKED`.

mod admin;
mod audit;
mod channels;
mod conditions;
mod config;
mod enforcement;
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
];

/// The table holding the schema version (one row).
const META_DDL: &str = "CREATE TABLE IF NOT EXISTS hooks_mcp_meta (
    id              BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    schema_version  INTEGER NOT NULL
)";

/// The notification channel of the current schema: one per store, whatever shares the database.
const CHANNEL_SQL: &str = "'hooks_mcp_' || left(md5(current_schema()), 16)";

type Manager = PostgresConnectionManager<tls::Connector>;

/// Longest wait of [`crate::StoreAdmin::ping`] for a connection.
const PING_WAIT: Duration = Duration::from_secs(1);

/// A store in one PostgreSQL database (in the first schema of its `search_path`).
pub struct PostgresStore {
    pool: r2d2::Pool<Manager>,
    config: postgres::Config,
    tls: tls::Connector,
    describe: String,
    options: PgOptions,
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
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(options.connect_timeout)
            .idle_timeout(Some(Duration::from_secs(600)))
            .max_lifetime(Some(Duration::from_secs(1800)))
            .test_on_check_out(true)
            .error_handler(Box::new(r2d2::NopErrorHandler))
            .build_unchecked(manager);
        let store = PostgresStore {
            pool,
            config: target.config,
            tls,
            describe: target.describe,
            options: options.clone(),
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
            db.batch(&format!(
                "SELECT pg_advisory_xact_lock(hashtext('hooks_mcp:' || current_schema())); \
                 {META_DDL}"
            ))?;
            let version = db
                .query_opt("SELECT schema_version FROM hooks_mcp_meta", &[])?
                .map(|r| r.get::<_, i32>(0))
                .unwrap_or(0);
            if version > SCHEMA_VERSION as i32 {
                return Err(Fail::Store(self.newer(version)));
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
        self.pool
            .get_timeout(wait)
            .map(|conn| Db { conn })
            .map_err(|e| StoreError::Unavailable {
                store: self.describe.clone(),
                detail: format!("no connection within {wait:?}: {e}"),
            })
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
        let mut client = self
            .config
            .connect(self.tls.clone())
            .map_err(|e| self.err(e))?;
        let channel: String = client
            .query_one(&format!("SELECT {CHANNEL_SQL}"), &[])
            .map_err(|e| self.err(e))?
            .get(0);
        client
            .batch_execute(&format!("LISTEN \"{channel}\""))
            .map_err(|e| self.err(e))?;
        Ok(changes::PgChangeFeed {
            client,
            describe: self.describe.clone(),
        })
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
    //! The LISTEN/NOTIFY change feed.

    use std::time::Duration;

    use postgres::fallible_iterator::FallibleIterator;

    use crate::{Change, ChangeFeed, StoreError, StoreResult};

    /// A connection listening on a store's notification channel.
    pub(crate) struct PgChangeFeed {
        pub(super) client: postgres::Client,
        pub(super) describe: String,
    }

    impl ChangeFeed for PgChangeFeed {
        fn wait(&mut self, timeout: Duration) -> StoreResult<Option<Change>> {
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
            Ok(next.and_then(|n| parse(n.payload())))
        }
    }

    /// `message 12` / `schedule 3`.
    pub(super) fn parse(payload: &str) -> Option<Change> {
        let (kind, id) = payload.split_once(' ')?;
        let id = id.parse().ok()?;
        match kind {
            "message" => Some(Change::Message(id)),
            "schedule" => Some(Change::Schedule(id)),
            _ => None,
        }
    }
}

/// The handle servers put in a tool call's extensions.
impl From<PostgresStore> for crate::StoreHandle {
    fn from(store: PostgresStore) -> Self {
        crate::StoreHandle(Arc::new(store))
    }
}
